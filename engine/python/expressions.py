"""Expressions: names, literals, operators, attributes and items, f-strings and comprehensions,
each compiled once into a function of the frame it runs in. Calls and lambdas are in calls.py."""

import ast
import itertools

from ..errors import ProgramError
from ..value import Value
from . import builtins as B
from . import model
from .calls import values_of
from .objects import Frame, Instance, ProgramSet, show, type_name


class ExpressionCompiler:
    """The Compiler's part for expressions."""

    def expr(self, node):
        return getattr(self, "expr_" + type(node).__name__)(node)

    def expr_Constant(self, node):
        value = B.whole_or_float(node.value)  # a whole number past 64 bits is a float, as arithmetic makes it
        return lambda frame: value

    def expr_Name(self, node):
        name = node.id
        builtins = self.builtins
        place = self.span
        # A function reading a global or a built-in (Value, isinstance) looks in its own frame with
        # `in`, not with a KeyError raised and caught: the same lookup, in the cheaper order for it
        likely_local = self.locals is None or name in self.locals

        def load(frame):
            if likely_local:
                try:
                    return frame.vars[name]
                except KeyError:
                    pass
            else:
                variables = frame.vars
                if name in variables:
                    return variables[name]
            outer = frame.parent
            while outer is not None:
                variables = outer.vars
                if name in variables:
                    return variables[name]
                outer = outer.parent
            if name in builtins:
                return builtins[name]
            raise ProgramError(_unknown_name(name), place(node))

        return load

    def local_read(self, node):
        """The name `node` reads, when it is a name its frame likely holds (its consumer then reads it
        inline, falling back to the name's own code when the frame does not have it); else None."""
        if type(node) is ast.Name and (self.locals is None or node.id in self.locals):
            return node.id
        return None

    def expr_Tuple(self, node):
        elements = [self.expr(e) for e in node.elts]
        if len(elements) == 1:
            (first,) = elements
            return lambda frame: (first(frame),)
        if len(elements) == 2:  # (self, other): one step, not a list made and copied; names read inline
            first, second = elements
            first_name, second_name = (self.local_read(e) for e in node.elts)  # None: not a name (calls.values_of)

            def pair(frame):
                variables = frame.vars
                return (
                    variables[first_name] if first_name in variables else first(frame),
                    variables[second_name] if second_name in variables else second(frame),
                )

            return pair
        return lambda frame: tuple([element(frame) for element in elements])

    def expr_List(self, node):
        return values_of([self.expr(e) for e in node.elts], [self.local_read(e) for e in node.elts])

    def expr_Set(self, node):
        elements = [self.expr(e) for e in node.elts]
        state = self.state
        return self.guard(node, lambda frame: B.make_set(state, [element(frame) for element in elements]))

    def expr_Dict(self, node):
        if any(key is None for key in node.keys):
            raise ProgramError("`**` unpacking in a dict is not available; write the keys out", self.span(node))
        pairs = [(self.expr(k), self.expr(v)) for k, v in zip(node.keys, node.values)]
        return self.guard(node, lambda frame: {B.dict_key(key(frame)): value(frame) for key, value in pairs})

    # ---- operators ----

    def binary_function(self, op):
        return B.BINARY[type(op).__name__]

    def expr_BinOp(self, node):
        # a + b + c + ... is a left-leaning chain: run it as a loop, not as nested calls
        chain = []
        while type(node) is ast.BinOp:
            chain.append(node)
            node = node.left
        chain.reverse()
        first = self.expr(node)
        steps = [
            (
                self.binary_function(n.op),
                type(n.op).__name__,
                self.expr(n.right),
                self.recorder(n),
                n,
                type(n.op) in (ast.Add, ast.Mult),
                B.FLOAT_OPERATIONS.get(type(n.op).__name__),  # the operation on floats, without checks
            )
            for n in chain
        ]
        failed = self.failure()
        state = self.state
        limit = state.limits.max_collection_length
        on_instances = model.binary

        def general(result, other, operation, kind, record, where, may_grow):
            try:
                if may_grow and (type(result) in (list, tuple) or type(other) in (list, tuple)):
                    state.count(_check_sequence(result, other, limit))
                elif may_grow and (type(result) is str or type(other) is str):
                    B.check_text_operation(state, result, other)
                if type(result) is Instance or type(other) is Instance:
                    return record(on_instances(state, kind, result, other))
                return record(operation(result, other))
            except Exception as error:
                raise failed(error, where) from None

        if len(steps) == 1:  # a * b: one operation, its operands' types checked inline
            ((operation, kind, right, record, where, may_grow, on_floats),) = steps

            placed = self.places_instances  # skip record() for what it leaves as it is
            left_name = self.local_read(node)  # `node` is the chain's first operand here

            def run_one(frame):
                if left_name is None:
                    a = first(frame)
                else:
                    variables = frame.vars
                    a = variables[left_name] if left_name in variables else first(frame)
                b = right(frame)
                ta, tb = type(a), type(b)
                if on_floats is not None and (ta is float or tb is float) and ta in NUMBERS and tb in NUMBERS:
                    return on_floats(a, b)  # a float result: what B.add, B.sub and B.mul give, without their checks
                if ta in PLAIN_OPERANDS and tb in PLAIN_OPERANDS:  # no sequence or string to bound
                    try:
                        if ta is Instance or tb is Instance:
                            result = on_instances(state, kind, a, b)
                        else:
                            result = operation(a, b)
                    except Exception as error:
                        raise failed(error, where) from None
                    kind_of_result = type(result)
                    if kind_of_result is Value or (kind_of_result is Instance and placed):
                        return record(result)
                    return result
                return general(a, b, operation, kind, record, where, may_grow)

            return run_one

        def run(frame):
            result = first(frame)
            for operation, kind, right, record, where, may_grow, on_floats in steps:
                other = right(frame)
                ta, tb = type(result), type(other)
                if on_floats is not None and (ta is float or tb is float) and ta in NUMBERS and tb in NUMBERS:
                    result = on_floats(result, other)  # a float: run_one's inline case
                    continue
                try:
                    if may_grow and (type(result) in (list, tuple) or type(other) in (list, tuple)):
                        state.count(_check_sequence(result, other, limit))
                    elif may_grow and (type(result) is str or type(other) is str):
                        B.check_text_operation(state, result, other)
                    if type(result) is Instance or type(other) is Instance:
                        result = record(on_instances(state, kind, result, other))
                    else:
                        result = record(operation(result, other))
                except Exception as error:
                    raise failed(error, where) from None
            return result

        return run

    def expr_UnaryOp(self, node):
        operand = self.expr(node.operand)
        kind = type(node.op)
        if kind is ast.Not:
            return lambda frame: not operand(frame)
        if kind is ast.USub and type(node.operand) is ast.Constant and type(node.operand.value) in (int, float):
            constant = B.whole_or_float(-node.operand.value)  # as expr_Constant reads the literal
            return lambda frame: constant
        record = self.recorder(node)
        if kind is ast.UAdd:
            return self.guard(node, lambda frame: B.positive(operand(frame)))
        state = self.state
        return self.guard(node, lambda frame: record(model.negate(state, operand(frame))))

    def expr_BoolOp(self, node):
        values = [self.expr(v) for v in node.values]
        if type(node.op) is ast.And:

            def run_and(frame):
                result = True
                for value in values:
                    result = value(frame)
                    if not result:
                        return result
                return result

            return run_and

        def run_or(frame):
            result = False
            for value in values:
                result = value(frame)
                if result:
                    return result
            return result

        return run_or

    def expr_Compare(self, node):
        left = self.expr(node.left)
        rest = [(type(op).__name__, self.expr(right)) for op, right in zip(node.ops, node.comparators)]
        state = self.state
        compare = model.compare
        if len(rest) == 1:  # a < b gives what the comparison gives (a class's __lt__ may return any object)
            ((kind, right),) = rest
            failed = self.failure()
            if kind in ("In", "NotIn"):
                wanted = kind == "In"

                left_name = self.local_read(node.left)

                def contains(frame):
                    try:
                        if left_name is None:
                            a = left(frame)
                        else:
                            variables = frame.vars
                            a = variables[left_name] if left_name in variables else left(frame)
                        b = right(frame)
                        if type(b) is ProgramSet and type(a) is Instance and a.cls.equal_by_identity:
                            return (a in b.items) is wanted  # `node not in seen`: what B.compare answers
                        return compare(state, kind, a, b)
                    except Exception as error:
                        raise failed(error, node) from None

                return contains

            def compare_two(frame):
                try:
                    return compare(state, kind, left(frame), right(frame))
                except Exception as error:
                    raise failed(error, node) from None

            return compare_two

        def run(frame):
            a = left(frame)
            for kind, right in rest:
                b = right(frame)
                if not compare(state, kind, a, b):
                    return False
                a = b
            return True

        return self.guard(node, run)

    def expr_IfExp(self, node):
        test, body, orelse = self.expr(node.test), self.expr(node.body), self.expr(node.orelse)
        return lambda frame: body(frame) if test(frame) else orelse(frame)

    # ---- attributes and items ----

    def expr_Attribute(self, node):
        owner = self.expr(node.value)
        owner_name = self.local_read(node.value)  # self.data: the name read inline
        name = node.attr
        get = model.get_attribute
        failed = self.failure()
        value_attribute = name in B.VALUE_ATTRIBUTES

        # One closure for the common `obj.field`: the guard inline, an instance's own field read at once
        def load_attribute(frame):
            try:
                if owner_name is None:
                    obj = owner(frame)
                else:
                    variables = frame.vars
                    obj = variables[owner_name] if owner_name in variables else owner(frame)
                kind = type(obj)
                if kind is Instance:
                    fields = obj.fields
                    if name in fields:
                        return fields[name]
                elif kind is Value and value_attribute:
                    return obj.data if name == "data" else obj.grad if name == "grad" else obj.label or ""
                return get(obj, name)
            except Exception as error:
                raise failed(error, node) from None

        return load_attribute

    def expr_Subscript(self, node):
        container = self.expr(node.value)
        key = self.expr(node.slice)
        get = model.get_item
        state = self.state
        failed = self.failure()

        def load_item(frame):
            try:
                obj, index = container(frame), key(frame)
                if type(obj) is list and type(index) is int and -len(obj) <= index < len(obj):  # xs[i]
                    return obj[index]
                return get(state, obj, index)
            except Exception as error:
                raise failed(error, node) from None

        return load_item

    def expr_Slice(self, node):
        parts = [self.expr(p) if p is not None else (lambda frame: None) for p in (node.lower, node.upper, node.step)]

        def run(frame):
            values = [part(frame) for part in parts]
            for value in values:
                if value is not None and type(value) not in (int, bool):
                    raise B.RunError(f"slice bounds must be whole numbers, not {type_name(value)}")
            if values[2] == 0:
                raise B.RunError("a slice step cannot be zero")
            return slice(*values)

        return self.guard(node, run)

    # ---- f-strings ----

    def expr_JoinedStr(self, node):
        parts = []
        for part in node.values:
            if type(part) is ast.Constant:
                text = part.value
                parts.append(lambda frame, text=text: text)
            else:
                parts.append(self.expr(part))
        longest = self.state.limits.max_text_length

        def run(frame):
            text = "".join([part(frame) for part in parts])
            if len(text) > longest:  # f'{s}{s}' in a loop would double without end
                raise B.RunError(f"a string would be {len(text):,} characters long; the limit is {longest:,}")
            return text

        return self.guard(node, run)

    def expr_FormattedValue(self, node):
        value = self.expr(node.value)
        spec = "".join(part.value for part in node.format_spec.values) if node.format_spec is not None else ""
        as_repr = node.conversion == ord("r")
        longest = self.state.limits.max_text_length

        state = self.state

        def run(frame):
            result = value(frame)
            if type(result) is Instance and not spec:
                return state.text_of(result)
            if as_repr:
                return show(result, longest + 1, True, state.describe)
            return B.format_value(result, spec, longest, state.describe)

        return self.guard(node, run)

    # ---- comprehensions ----

    def comprehension(self, node, element):
        """A generator of the comprehension's elements, computed by the code `element()` compiles,
        for each item that passes the conditions; every item counts as a statement. Like Python,
        the first iterable is evaluated when the comprehension is, the others as their loop is
        reached. A loop whose items the element calls records its passes (calls.Walk)."""
        loops = []
        outer_locals = self.locals
        self.locals = frozenset(  # the comprehension's own frame holds its targets
            name.id for generator in node.generators for name in ast.walk(generator.target) if type(name) is ast.Name
        )
        for generator in node.generators:
            iterable = self.expr(generator.iter)
            walk = self.walking(generator.target)
            loops.append((iterable, self.store(generator.target), [self.expr(c) for c in generator.ifs], walk))
        element = element()
        self.locals = outer_locals
        del self.walks[-len(loops) :]
        loops = [(iterable, store, ifs, walk if walk.called else None) for iterable, store, ifs, walk in loops]
        walked = any(loop[3] is not None for loop in loops)
        state = self.state
        place = self.span(node)

        def run(frame):
            inner = Frame({}, frame)
            if walked:
                inner.walks = {}
            items = B.iterate(loops[0][0](frame))
            return _comprehension_items(loops, element, state, place, inner, state.scope, 0, items)

        return run

    def expr_ListComp(self, node):
        items = self.comprehension(node, lambda: self.expr(node.elt))
        limit = self.state.limits.max_collection_length
        return self.guard(node, lambda frame: _bounded_list(items(frame), limit))

    def expr_DictComp(self, node):
        def element():
            key, value = self.expr(node.key), self.expr(node.value)
            return lambda frame: (B.dict_key(key(frame)), value(frame))

        pairs = self.comprehension(node, element)
        limit = self.state.limits.max_collection_length
        return self.guard(node, lambda frame: _bounded_dict(pairs(frame), limit))

    def expr_GeneratorExp(self, node):
        return self.guard(node, self.comprehension(node, lambda: self.expr(node.elt)))


PLAIN_OPERANDS = frozenset({int, float, bool, Value, Instance})  # operands whose result needs no size check
NUMBERS = frozenset({int, float, bool})


def _comprehension_items(loops, element, state, place, inner, scope, level, items):
    """The elements of a comprehension's loop `level` and those inside it. A module function, not
    a closure that calls itself: that is a reference cycle per comprehension run, garbage only the
    cyclic collector frees (it is paused while a request runs)."""
    _, store, conditions, walked_loop = loops[level]
    innermost = level == len(loops) - 1
    limit = state.limits.max_statements
    for index, item in enumerate(items):
        state.steps += 1  # State.count(1, place), inline: an item is the hot path
        if state.steps > limit:
            state.count(0, place)
        store(inner, item)
        if walked_loop is not None:
            inner.walks[walked_loop] = (index, scope)
        if not conditions or all(condition(inner) for condition in conditions):
            if innermost:
                yield element(inner)
            else:
                inner_items = B.iterate(loops[level + 1][0](inner))
                yield from _comprehension_items(loops, element, state, place, inner, scope, level + 1, inner_items)


def _bounded_list(items, limit, what="a list"):
    out = list(itertools.islice(items, limit + 1))
    if len(out) > limit:
        raise B.RunError(f"{what} would hold more than {limit:,} items; the limit is {limit:,}")
    return out


def _bounded_dict(pairs, limit):
    out = {}
    for key, value in pairs:
        out[key] = value
        if len(out) > limit:
            raise B.RunError(f"a dict would hold more than {limit:,} items; the limit is {limit:,}")
    return out


def _check_sequence(a, b, limit):
    if type(b) in (int, bool) and type(a) in (list, tuple):
        length = len(a) * max(b, 0)
    elif type(a) in (int, bool) and type(b) in (list, tuple):
        length = len(b) * max(a, 0)
    elif type(a) in (list, tuple) and type(b) in (list, tuple):
        length = len(a) + len(b)
    else:
        return 0
    if length > limit:
        raise B.RunError(f"a list would hold {length:,} items; the limit is {limit:,}")
    return length


def _unknown_name(name):
    shown = name if len(name) <= 40 else name[:39] + "…"
    known = {"tanh", "exp", "log", "relu"}
    if name in known:
        return (
            f"unknown name '{shown}': for a Value write x.{name}(); for a plain number write math.{name}(x)"
            if name != "relu"
            else "unknown name 'relu': write x.relu()"
        )
    return (
        f"unknown name '{shown}': assign it first, or import it "
        "(valuegraph offers Value, Neuron, Layer, MLP, math, random and os)"
    )
