"""Statements: blocks (where the statement limit is counted), assignments and their targets,
`if`, the loops (`for` and `while` share one loop), classes and imports. Each statement is
compiled once into a function of the frame it runs in; a block's function returns None, or
the signal that ends it early (BREAK, CONTINUE, or a Return)."""

import ast
import itertools

from ..errors import ProgramError
from ..value import Value
from . import builtins as B
from . import model
from .calls import Return
from .idioms import accumulate_each_node, accumulate_in_one_step
from .objects import BasesError, Class, Frame, Instance, ProgramFile, show, type_name
from .parse import is_downloading

BREAK = object()
CONTINUE = object()


class StatementCompiler:
    """The Compiler's part for statements."""

    def block(self, statements, in_class=False):
        compiled = [self.statement(s, in_class) for s in statements]
        return self._counted(compiled, statements, self.span(statements[0]))

    def program(self, statements):
        """The program's top level: a block, run whole, or from statement `start` on by a replay
        resumed from a snapshot (whose statements the snapshotted run counted already)."""
        compiled = [self.statement(s) for s in statements]
        whole = self._counted(compiled, statements, self.span(statements[0]))
        failed = self.failure()

        def run(frame, start=0):
            if start == 0:
                return whole(frame)
            try:
                for statement in compiled[start:]:
                    statement(frame)
            except Exception as error:
                raise failed(error, statements[compiled.index(statement)]) from None
            return None

        return run

    def function_body(self, statements):
        """A function's block, run(frame) -> the value it returns: _counted's block, but a `return`
        at the end is the value of its expression, without a Return signal made and unpacked."""
        last = statements[-1]
        if type(last) is ast.Return:
            compiled = [self.statement(s) for s in statements[:-1]]
            result = self.expr(last.value) if last.value is not None else (lambda frame: None)
        else:
            compiled = [self.statement(s) for s in statements]
            result = None
        state = self.state
        count = len(statements)
        limit = state.limits.max_statements
        place = self.span(statements[0])
        failed = self.failure()

        def run_returning(frame):
            state.steps += count
            if state.steps > limit:
                state.count(0, place)
            statement = None  # the last statement, the `return`, while its value is computed
            try:
                for statement in compiled:
                    signal = statement(frame)
                    if signal is not None:
                        return signal.value if type(signal) is Return else None  # break, continue cannot leave it
                if result is None:
                    return None
                statement = None
                return result(frame)
            except Exception as error:
                raise failed(error, _failing(statement, compiled, statements)) from None

        return run_returning

    def _counted(self, compiled, nodes, place):
        """The block of the statements `compiled` from `nodes`: it counts them, runs them in turn and
        reports a failure at the place of the statement it ended (Compiler.failure)."""
        state = self.state
        count = len(compiled)
        limit = state.limits.max_statements
        failed = self.failure()
        # Blocks and loop passes are the hot path: they add to the count inline, and past the
        # limit let State.count (which holds the check's one message) raise it. One try around the
        # whole block, not a guard per statement: a try costs nothing until something fails.
        if count == 1:
            (only,) = compiled
            (node,) = nodes

            def run_one(frame):
                state.steps += 1
                if state.steps > limit:
                    state.count(0, place)
                try:
                    return only(frame)
                except Exception as error:
                    raise failed(error, node) from None

            return run_one

        def run_block(frame):
            state.steps += count
            if state.steps > limit:
                state.count(0, place)
            try:
                for statement in compiled:
                    signal = statement(frame)
                    if signal is not None:
                        return signal
            except Exception as error:
                raise failed(error, nodes[compiled.index(statement)]) from None
            return None

        return run_block

    def statement(self, node, in_class=False):
        """The statement's code, unguarded: the block around it reports its failures."""
        method = getattr(self, "stmt_" + type(node).__name__)
        if type(node) is ast.FunctionDef:
            return method(node, in_class)
        return method(node)

    def stmt_Expr(self, node):
        value = self.expr(node.value)
        state = self.state
        if self.prelude:

            def run_prelude(frame):
                value(frame)

            return run_prelude

        def run(frame):
            result = value(frame)
            if type(result) is Value:
                state.last_value = result
            elif type(result) is Instance and state.depth == 0:
                state.last_instance = result
            return None

        return run

    def stmt_Nonlocal(self, node):
        return lambda frame: None  # the function's stores of these names were compiled to reach out

    def stmt_Pass(self, node):
        return lambda frame: None

    def stmt_Break(self, node):
        return lambda frame: BREAK

    def stmt_Continue(self, node):
        return lambda frame: CONTINUE

    def stmt_Return(self, node):
        value = self.expr(node.value) if node.value is not None else (lambda frame: None)
        return lambda frame: Return(value(frame))

    def stmt_Assert(self, node):
        test = self.expr(node.test)
        message = self.expr(node.msg) if node.msg is not None else None

        def run(frame):
            if not test(frame):
                detail = f": {show(message(frame), 200)}" if message else ""
                raise B.RunError(f"assertion failed{detail}")
            return None

        return run

    # ---- assignments ----

    def stmt_Assign(self, node):
        value = self.expr(node.value)
        stores = [self.store(target, label=not self.prelude) for target in node.targets]
        state = self.state
        prelude = self.prelude
        if len(stores) == 1 and _local_name(node.targets[0], self.nonlocals):
            name = node.targets[0].id
            labels = state.name_labels

            def assign_name(frame):  # x = ...: run_one with store()'s store_labelled (store_name in the prelude) inline
                result = value(frame)
                frame.vars[name] = result
                kind = type(result)
                if kind is Value:
                    if not prelude:
                        if state.depth == 0:  # a function's locals would repeat in every call
                            labels.setdefault(result._serial, name)
                        state.last_value = result
                elif kind is Instance:
                    if state.depth == 0:  # the program's, not a method's
                        if not prelude and result.name is None:
                            result.name = name
                        state.last_instance = result
                return None

            return assign_name
        if len(stores) == 1:
            (store,) = stores

            def run_one(frame):
                result = value(frame)
                store(frame, result)
                if type(result) is Value and not prelude:
                    state.last_value = result
                elif type(result) is Instance and state.depth == 0:  # the program's, not a method's
                    state.last_instance = result
                return None

            return run_one

        def run(frame):
            result = value(frame)
            for store in stores:
                store(frame, result)
            return None

        return run

    def stmt_AugAssign(self, node):
        operation = self.binary_function(node.op)
        record = self.recorder(node)
        target = node.target
        state = self.state
        prelude = self.prelude
        value = self.expr(node.value)
        in_place = type(node.op) is ast.Add
        kind = type(node.op).__name__
        on_floats = B.FLOAT_OPERATIONS.get(kind)

        def combine(old, new):
            if type(old) is str:
                B.check_text_operation(state, old, new)
            if in_place and type(old) is list:
                more = B.collect(state, new, "+=")
                model.check_length(state, len(old) + len(more))
                state.count(len(more))
                old.extend(more)
                return old
            if type(old) is Instance or type(new) is Instance:
                return record(model.binary(state, kind, old, new))  # x += y is x = x + y: no class defines __iadd__
            result = operation(old, new)
            if not prelude and type(result) is Value:
                state.last_value = result
            return record(result)

        if type(target) is ast.Name:
            load = self.expr(ast.copy_location(ast.Name(target.id, ast.Load()), target))
            store = self.store(target, label=not prelude)
            return lambda frame: store(frame, combine(load(frame), value(frame)))
        if type(target) is ast.Attribute:
            owner = self.expr(target.value)
            name = target.attr
            value_field = name in ("data", "grad")
            is_grad = name == "grad"  # the program's own backward writing a gradient: a step of its walk

            def run_attribute(frame):
                obj = owner(frame)
                if type(obj) is Instance and name in obj.fields:  # child.grad += ...: numbers, combined inline
                    fields = obj.fields
                    old = fields[name]
                    new = value(frame)
                    if type(old) in NUMBERS and type(new) in NUMBERS:
                        if on_floats is not None and (type(old) is float or type(new) is float):
                            result = on_floats(old, new)  # a float: what operation() gives, without its checks
                        else:
                            result = operation(old, new)
                    else:
                        result = combine(old, new)
                    if obj.cls.slots is None or name in obj.cls.slots:
                        fields[name] = result
                    else:
                        model.set_attribute(obj, name, result)
                    if is_grad and state.walk is not None:
                        state.grad_written(obj, result, old, True)
                    return
                if value_field and type(obj) is Value:  # p.data += -lr * p.grad, the training loop's update
                    result = combine(getattr(obj, name), value(frame))
                    if type(result) is float:
                        setattr(obj, name, result)
                        return
                    model.set_attribute(obj, name, result)
                    return
                old = model.get_attribute(obj, name)
                result = combine(old, value(frame))
                model.set_attribute(obj, name, result)
                if is_grad and state.walk is not None:
                    state.grad_written(obj, result, old, True)

            return run_attribute
        container = self.expr(target.value)
        key = self.expr(target.slice)

        def run_item(frame):
            obj, index = container(frame), key(frame)
            model.set_item(state, obj, index, combine(model.get_item(state, obj, index), value(frame)))

        return run_item

    def store(self, target, label=False):
        """store(frame, value) for an assignment's target. `label`: a Value assigned to a name at
        the top level takes that name as its label, if it has none yet."""
        kind = type(target)
        state = self.state
        if kind is ast.Name:
            name = target.id
            if name in self.nonlocals:
                return _nonlocal_store(name)
            if not label:

                def store_name(frame, value):
                    frame.vars[name] = value

                return store_name
            labels = state.name_labels

            def store_labelled(frame, value):
                frame.vars[name] = value
                if state.depth == 0:  # a function's locals would repeat in every call
                    if type(value) is Value:
                        labels.setdefault(value._serial, name)
                    elif type(value) is Instance and value.name is None:
                        value.name = name

            return store_labelled
        if kind in (ast.Tuple, ast.List):
            stores = [self.store(element, label) for element in target.elts]
            count = len(stores)
            if count == 2 and not label and all(_local_name(element, self.nonlocals) for element in target.elts):
                first, second = (element.id for element in target.elts)

                def store_pair(frame, value):  # for a, b in zip(...): the two names set at once
                    if (type(value) is tuple or type(value) is list) and len(value) == 2:
                        variables = frame.vars
                        variables[first], variables[second] = value
                        return
                    store_unpacked(frame, value)

            else:
                store_pair = None

            def store_unpacked(frame, value):
                if (type(value) is tuple or type(value) is list) and len(value) == count:
                    for store, item in zip(stores, value):
                        store(frame, item)
                    return
                items = list(itertools.islice(B.iterate(value), count + 1))
                if len(items) != count:
                    raise B.RunError(
                        f"cannot unpack {'more' if len(items) > count else len(items)} values into {count} names"
                    )
                for store, item in zip(stores, items):
                    store(frame, item)

            return store_unpacked if store_pair is None else store_pair
        if kind is ast.Attribute:
            owner = self.expr(target.value)
            name = target.attr
            is_grad = name == "grad"  # the program's own backward writing a gradient: a step of its walk
            set_attribute = model.set_attribute
            owner_name = self.local_read(target.value)  # self.x = ...: `self` read inline

            def store_attribute(frame, value):
                if owner_name is None:
                    obj = owner(frame)
                else:
                    variables = frame.vars
                    obj = variables[owner_name] if owner_name in variables else owner(frame)
                recorded = is_grad and state.walk is not None
                if recorded:
                    old = obj.fields.get(name) if type(obj) is Instance else None
                if type(obj) is Instance and (obj.cls.slots is None or name in obj.cls.slots):
                    obj.fields[name] = value  # self.x = ...: what model.set_attribute does for an instance
                else:
                    set_attribute(obj, name, value)
                if recorded:
                    state.grad_written(obj, value, old, False)

            return store_attribute
        if kind is ast.Subscript:
            container = self.expr(target.value)
            key = self.expr(target.slice)
            return lambda frame, value: model.set_item(state, container(frame), key(frame), value)
        raise ProgramError(
            "this cannot be assigned to: assign to a name, a list item or an attribute", self.span(target)
        )

    # ---- control flow ----

    def stmt_If(self, node):
        test = self.expr(node.test)
        body = self.block(node.body)
        orelse = self.block(node.orelse) if node.orelse else None

        def run(frame):
            if test(frame):
                return body(frame)
            if orelse is not None:
                return orelse(frame)
            return None

        return run

    def stmt_For(self, node):
        iterable = self.expr(node.iter)
        target = node.target
        named = type(target) is ast.Name and target.id
        label = f"for {shorten(self.source.text_of(target), 20)}"
        walk = self.walking(target)
        passes = lambda frame: B.iterate(iterable(frame))  # noqa: E731
        position = self.top_level_loops.get(id(node))
        if position is not None:
            return self.resumable_loop(node, position, passes, self.store(target), named, label, walk)
        local = target.id if _local_name(target, self.nonlocals) else None
        loop = self.loop(node, iterable, self.store(target), named, label, walk, local)
        loop = accumulate_each_node(
            self, node, loop, iterable, lambda item, index: _pass_scope(named, label, item, index)
        )
        return accumulate_in_one_step(self, node, loop)

    def stmt_While(self, node):
        test = self.expr(node.test)
        state = self.state
        place = self.span(node)
        limit = state.limits.max_statements

        def passes(frame):
            while True:
                state.steps += 1  # the test counts, so `while True: pass`-like loops end too
                if state.steps > limit:
                    state.count(0, place)
                if not test(frame):
                    return
                yield None

        return self.loop(node, passes, None, None, "while")

    def loop(self, node, passes, store, named, label, walk=None, local=None):
        """The one loop: `passes(frame)` gives one item per pass (stored by `store` unless None); for a
        `for` loop, `passes` is its iterable's code, whose value B.iterate walks.
        A pass shows in nodes' scopes as `for i = 3` when the item is a number stored in the
        name `named`, else as `label [index]`; break, continue and return end the pass or the
        loop, and the `else` block runs when the passes run out. `walk`: the open Walk of a
        `for` loop's target, closed here once the body is compiled. `local`: the name `store` sets in
        the frame, when that is all it does (set inline)."""
        body = self.block(node.body)
        if walk is not None:
            self.walks.pop()
            walk = walk if walk.called else None  # only a loop whose body calls its items records its passes
        orelse = self.block(node.orelse) if node.orelse else None
        state = self.state
        scoped = not self.prelude
        iterate = B.iterate if store is not None else None  # `for`; `while` gives its passes itself
        # the first passes' scopes, made once: a loop's pass is the hot path (a backward's inner loop
        # runs one or two passes per node)
        by_index = tuple(f"{label} [{index}]" for index in range(FIRST_PASSES))
        by_number = tuple(f"for {named} = {number}" for number in range(FIRST_PASSES)) if named else None

        def run(frame):
            outer = state.scope
            if walk is not None:
                walked = frame.walks
                if walked is None:
                    walked = frame.walks = {}
            variables = frame.vars
            for index, item in enumerate(passes(frame) if iterate is None else iterate(passes(frame))):
                if local is not None:
                    variables[local] = item
                elif store is not None:
                    store(frame, item)
                if walk is not None:
                    walked[walk] = (index, outer)
                if scoped:  # _pass_scope, inline, its first passes' scopes made once
                    if named and type(item) in PASS_NUMBERS:
                        scope = (
                            by_number[item]
                            if type(item) is int and 0 <= item < FIRST_PASSES
                            else f"for {named} = {item}"
                        )
                    else:
                        scope = by_index[index] if index < FIRST_PASSES else f"{label} [{index}]"
                    state.scope = outer + (scope,)
                signal = body(frame)
                if signal is not None and signal is not CONTINUE:
                    state.scope = outer
                    return None if signal is BREAK else signal
            state.scope = outer
            if orelse is not None:
                return orelse(frame)
            return None

        return run

    def resumable_loop(self, node, position, passes, store, named, label, walk):
        """loop() for a `for` at the program's top level (statement `position`), where the whole
        state of the program at the start of a pass is its globals, this loop's iterator and the
        run's records: each pass starts with State.at_pass (a job's snapshots, a replay's end), and
        a replay resumed from a snapshot (State.resume) continues the snapshot's iterator."""
        body = self.block(node.body)
        self.walks.pop()
        walk = walk if walk.called else None
        orelse = self.block(node.orelse) if node.orelse else None
        state = self.state

        def run(frame):
            resume = state.resume
            if resume is not None and resume[0] == position:
                state.resume = None
                _, iterator, index = resume
            else:
                iterator, index = passes(frame), 0
            at_pass, outer = state.at_pass, state.scope
            if walk is not None:
                walked = frame.walks
                if walked is None:
                    walked = frame.walks = {}
            while True:
                at_pass(position, frame, iterator, index)
                try:
                    item = next(iterator)
                except StopIteration:
                    break
                store(frame, item)
                if walk is not None:
                    walked[walk] = (index, outer)
                state.scope = outer + (_pass_scope(named, label, item, index),)
                signal = body(frame)
                if signal is not None and signal is not CONTINUE:
                    state.scope = outer
                    return None if signal is BREAK else signal
                index += 1
            state.scope = outer
            if orelse is not None:
                return orelse(frame)
            return None

        return run

    def stmt_With(self, node):
        """`with open(name) as f:`: the one context manager, a file given with the program."""
        items = [
            (self.expr(item.context_expr), self.store(item.optional_vars) if item.optional_vars else None)
            for item in node.items
        ]
        body = self.block(node.body)

        def run(frame):
            for manager, store in items:
                opened = manager(frame)
                if type(opened) is not ProgramFile:
                    raise B.RunError(f"`with` works on open(...) here, not on {type_name(opened)}")
                if store is not None:
                    store(frame, opened)
            return body(frame)

        return run

    # ---- definitions ----

    def stmt_ClassDef(self, node):
        bases = [self.expr(base) for base in node.bases]
        outer_walks, self.walks = self.walks, []  # the class body runs in a frame of its own
        body = self.block(node.body, in_class=True)
        self.walks = outer_walks
        name = node.name
        state = self.state

        def run(frame):
            resolved = []
            for base in bases:
                cls = base(frame)
                if type(cls) is not Class:
                    raise B.RunError(f"a class can only build on another class of the program, not on {type_name(cls)}")
                resolved.append(cls)
            class_frame = Frame({"__class_name__": name}, frame)
            body(class_frame)
            del class_frame.vars["__class_name__"]
            try:
                cls = Class(name, tuple(resolved), class_frame.vars)
            except BasesError as error:
                raise B.RunError(str(error)) from None
            if not cls.equal_by_identity:
                state.own_equality = True
            frame.vars[name] = cls
            return None

        return run

    def stmt_Import(self, node):
        # `import os.path` binds `os`, as Python does; `import os.path as p` binds the inner module
        names = [
            (
                alias.asname or alias.name.split(".")[0],
                alias.name,
                alias.name if alias.asname else alias.name.split(".")[0],
            )
            for alias in node.names
        ]
        builtins = self.builtins

        def run(frame):
            for bound, imported, module in names:
                if is_downloading(imported):
                    raise B.RunError(DOWNLOAD_REFUSED.format(module=imported))
                frame.vars[bound] = builtins["module " + module]
            return None

        return run

    def stmt_ImportFrom(self, node):
        names = [(alias.asname or alias.name, alias.name) for alias in node.names]
        module = node.module
        builtins = self.builtins

        def run(frame):
            if is_downloading(module):
                raise B.RunError(DOWNLOAD_REFUSED.format(module=module))
            for bound, name in names:
                if module.startswith("micrograd"):
                    frame.vars[bound] = builtins["micrograd " + name]
                else:
                    frame.vars[bound] = builtins["module " + module].attributes[name]
            return None

        return run


DOWNLOAD_REFUSED = (
    "`{module}` is not available: valuegraph has no network and writes no files. Add the file the program "
    "would download in Files (for example input.txt), and the program reads it with open('input.txt')"
)


NUMBERS = (int, float, bool)


def _local_name(target, nonlocals):
    """Whether `target` is a name a store sets in the frame itself (not a nonlocal one)."""
    return type(target) is ast.Name and target.id not in nonlocals


def _nonlocal_store(name):
    def store_outside(frame, value):
        outer = frame.parent
        while outer is not None and outer.parent is not None:  # the program's top level is not a function's
            if name in outer.vars:
                outer.vars[name] = value
                return
            outer = outer.parent
        raise B.RunError(f"no binding for nonlocal {name[:40]!r}: no enclosing function assigns it")

    return store_outside


def _failing(statement, compiled, statements):
    """The statement whose code `statement` is (None: the last, a `return` compiled as its value)."""
    return statements[-1] if statement is None else statements[compiled.index(statement)]


def shorten(text: str, longest: int = 40) -> str:
    """Code as a node's place shows it: on one line (a line continuation's backslash gone), at most `longest`
    characters."""
    text = " ".join(text.replace("\\\n", " ").replace("\\\r\n", " ").split())
    return text if len(text) <= longest else text[: longest - 1] + "…"


def _pass_scope(named, label, item, index):
    """A loop pass's scope: `for i = 3` where the loop variable holds a number, else `label [index]`."""
    return f"for {named} = {item}" if named and type(item) in PASS_NUMBERS else f"{label} [{index}]"


PASS_NUMBERS = (int, float)
FIRST_PASSES = 32  # the passes of a loop whose scopes it makes once (loop())
