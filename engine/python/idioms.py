"""Code shapes the interpreter runs as one step: the two loops of a value class's backward() that
every course program writes the same way, the textbook topological sort

    def visit(node):
        if node not in seen:
            seen.add(node)
            for child in node._children:
                visit(child)
            order.append(node)

and the gradient's accumulation into a node's children

    for child, local in zip(node._children, node._local_grads):
        child.grad += local * node.grad

and, in the forward pass, the class's + and * (`other = other if isinstance(other, Value) else
Value(other)`, then `return Value(self.data * other.data, (self, other), (other.data, self.data))`).
Run a statement and a call at a time, they are most of a training step's time. Recognised by their
syntax trees, whatever their names, each runs in a loop of its own doing what each statement and
call would have done: the same nodes added and appended in the same order, the same gradients
written (and recorded for the check), the same statements counted. Where a statement could do
otherwise (a node of a class that defines __eq__, a child that is no instance, a field missing, a
gradient that is no number, a limit that a call or statement would pass), nothing is changed and
the code runs as written, so errors, limits and their places stay the interpreter's own."""

import ast

from . import builtins as B
from .objects import Class, Frame, Function, Instance, ProgramSet

# how a call of a sort's function runs: one step, or written out (a fallback runs the whole recursion
# below it as written, so its nested calls do not each walk their graph again)
ONE_STEP, AS_WRITTEN = "one step", "as written"


def sorting_visit(node):
    """For `def f(p)` whose body is the sort above, (p, seen, order, field, call node) by name;
    else None."""
    arguments = node.args
    if (
        len(arguments.args) != 1
        or arguments.defaults
        or arguments.vararg
        or arguments.kwarg
        or arguments.kwonlyargs
        or arguments.posonlyargs
        or len(node.body) != 1
        or node.decorator_list
    ):
        return None
    param = arguments.args[0].arg
    test = node.body[0]
    if type(test) is not ast.If or test.orelse or len(test.body) != 3 or type(test.test) is not ast.Compare:
        return None
    compare = test.test
    if (
        _name(compare.left) != param
        or len(compare.ops) != 1
        or type(compare.ops[0]) is not ast.NotIn
        or _name(compare.comparators[0]) is None
    ):
        return None
    seen = compare.comparators[0].id
    add, loop, append = test.body
    added = _method_call(add, "add")
    appended = _method_call(append, "append")
    if added is None or appended is None or added[1] != param or appended[1] != param:
        return None
    order = appended[0]
    if (
        type(loop) is not ast.For
        or loop.orelse
        or _name(loop.target) is None
        or type(loop.iter) is not ast.Attribute
        or _name(loop.iter.value) != param
        or len(loop.body) != 1
        or type(loop.body[0]) is not ast.Expr
    ):
        return None
    child = loop.target.id
    call = loop.body[0].value
    if (
        type(call) is not ast.Call
        or _name(call.func) != node.name
        or call.keywords
        or len(call.args) != 1
        or _name(call.args[0]) != child
    ):
        return None
    names = {param, added[0], order, child, node.name}
    if len(names) != 5 or added[0] != seen:
        return None
    return param, seen, order, loop.iter.attr, call


def _name(node):
    return node.id if type(node) is ast.Name else None


def _method_call(statement, method):
    """(owner name, argument name) of the statement `owner.method(argument)`, else None."""
    call = statement.value if type(statement) is ast.Expr else None
    if (
        type(call) is not ast.Call
        or type(call.func) is not ast.Attribute
        or call.func.attr != method
        or call.keywords
        or len(call.args) != 1
    ):
        return None
    owner, argument = _name(call.func.value), _name(call.args[0])
    return None if owner is None or argument is None else (owner, argument)


def walk_graph(state, root, seen, order, field, depth):
    """The sort from `root`, as one step: (nodes added to `seen` in order, nodes appended to
    `order` in order, statements run, nested calls made) when every statement would do what
    the loop here does and no limit would be passed; else None, with nothing changed. `depth`: the
    call depth the first call runs at."""
    limits = state.limits
    seen_items = seen.items
    if root in seen_items:
        return [], [], 1, 0  # the first call's `if`
    children = _children(root, field, seen, order)
    if children is None:
        return None
    added, appended, marked = [root], [], {root}
    edges = len(children)  # each a call, and a statement of the loop that makes it
    levels = 1 if children else 0  # the deepest chain of calls below the first
    stack = [(root, iter(children))]
    while stack:
        node, pending = stack[-1]
        child = next(pending, stack)  # the stack itself: no child left
        if child is stack:
            stack.pop()
            appended.append(node)
            continue
        if type(child) is not Instance or not child.cls.equal_by_identity:
            return None
        if child in marked or child in seen_items:
            continue
        grandchildren = _children(child, field, seen, order)
        if grandchildren is None:
            return None
        marked.add(child)
        added.append(child)
        stack.append((child, iter(grandchildren)))
        if grandchildren:
            edges += len(grandchildren)
            if len(stack) > levels:
                levels = len(stack)
    # each call's `if`, and for each node first seen the 3 statements under it and one per child
    statements = 1 + edges + 3 * len(added) + edges
    if (
        depth + levels > limits.max_call_depth  # a call from depth + k - 1 checks that depth is below it
        or state.steps + statements > limits.max_statements
        or len(seen_items) + len(added) > limits.max_collection_length
        or len(order) + len(appended) > limits.max_collection_length
    ):
        return None
    return added, appended, statements, edges


def _children(node, field, seen, order):
    """What a loop over node.field walks, when it is one of the node's own fields and a list, a tuple
    or a set, but not the set or list the sort adds to (a loop over them would see them change); else
    None."""
    value = node.fields.get(field)
    kind = type(value)
    if value is seen or value is order:
        return None
    if kind is ProgramSet:
        return value.items  # its items in the order they were added, as iterating the set gives them
    return value if kind is tuple or kind is list else None


def sort_in_one_step(compiler, node, body):
    """The function body of `def` node: `body` (as written), or, for the sort above, one that runs the
    sort in one step where it can."""
    shape = None if compiler.prelude else sorting_visit(node)
    if shape is None:
        return body
    param, seen_name, order_name, field, call = shape
    state = compiler.state
    extent = compiler.source.extent(call)

    def run(frame):
        if state.sorting is ONE_STEP:
            root = frame.vars[param]
            seen, order, itself = (_find(compiler, frame, name) for name in (seen_name, order_name, node.name))
            if (
                type(seen) is ProgramSet
                and type(order) is list
                and type(itself) is Function
                and itself.body is run
                and type(root) is Instance
                and root.cls.equal_by_identity
            ):
                walked = walk_graph(state, root, seen, order, field, state.depth)
                if walked is not None:
                    added, appended, statements, calls = walked
                    seen.items.update(dict.fromkeys(added))
                    order.extend(appended)
                    state.steps += statements
                    if calls:  # the last call a statement made: its place, as the call's code sets it
                        state.entry, state.entry_node = extent, call
                    return None
        outer, state.sorting = state.sorting, AS_WRITTEN
        try:
            return body(frame)
        finally:
            state.sorting = outer

    return run


def accumulating_loop(node):
    """For the `for` node of the accumulation above, (child, local, node, children field, locals
    field, gradient field, whether the product is written `local * node.grad`) by name; else None."""
    target, call = node.target, node.iter
    if (
        node.orelse
        or len(node.body) != 1
        or type(target) is not ast.Tuple
        or len(target.elts) != 2
        or type(call) is not ast.Call
        or _name(call.func) != "zip"
        or call.keywords
        or len(call.args) != 2
    ):
        return None
    child, local = (_name(element) for element in target.elts)
    fields = [_field_of(argument) for argument in call.args]
    if child is None or local is None or child == local or None in fields or fields[0][0] != fields[1][0]:
        return None
    owner = fields[0][0]
    update = node.body[0]
    if (
        type(update) is not ast.AugAssign
        or type(update.op) is not ast.Add
        or _field_of(update.target) is None
        or _field_of(update.target)[0] != child
        or type(update.value) is not ast.BinOp
        or type(update.value.op) is not ast.Mult
    ):
        return None
    gradient = update.target.attr
    product = update.value
    if _name(product.left) == local and _field_of(product.right) == (owner, gradient):
        local_first = True
    elif _name(product.right) == local and _field_of(product.left) == (owner, gradient):
        local_first = False
    else:
        return None
    if owner in (child, local, "zip"):
        return None
    return child, local, owner, fields[0][1], fields[1][1], gradient, local_first


def _field_of(node):
    """(name, field) of `name.field`, else None."""
    if type(node) is ast.Attribute and type(node.value) is ast.Name:
        return node.value.id, node.attr
    return None


NUMBERS = B.NUMBERS


def accumulate(state, owner, children_field, locals_field, gradient, local_first, before):
    """The accumulation's passes as one step, when every pass would do what the loop here does:
    the pairs it walks (zip's, up to the shorter), else None with nothing changed. `before`: the
    statements counted first (the pass of a loop around it)."""
    owner_fields = owner.fields
    children, locals_ = owner_fields[children_field], owner_fields[locals_field]
    if type(children) not in (list, tuple) or type(locals_) not in (list, tuple):
        return None
    pairs = list(zip(children, locals_))
    if state.steps + before + len(pairs) > state.limits.max_statements:
        return None
    if type(owner_fields.get(gradient)) not in NUMBERS:
        return None
    for child, local in pairs:
        if type(child) is not Instance or type(local) not in NUMBERS:
            return None
        slots = child.cls.slots
        if type(child.fields.get(gradient)) not in NUMBERS or (slots is not None and gradient not in slots):
            return None
    # numbers only from here: + and * give a number, never an error (an int past 64 bits made a float, as B.add does)
    walk = state.walk if gradient == "grad" else None  # the writes of a `.grad` are steps of the walk
    written, held = [], []  # each input's grad after the pass, and (for the walk) before it
    state.steps += before
    for child, local in pairs:
        state.steps += 1
        fields = child.fields
        product = local * owner_fields[gradient] if local_first else owner_fields[gradient] * local
        if type(product) is int:
            product = B.whole_or_float(product)
        old = fields[gradient]
        result = old + product
        if type(result) is int:
            result = B.whole_or_float(result)
        fields[gradient] = result
        written.append(result)
        if walk is not None:
            held.append(old)
    if walk is not None and pairs:
        # one event for the pass: the owner's step, known here, need not be found again from its writes
        walk.append(("pass", owner, children_field, locals_field, children, written, state.in_step, held))
    return pairs


def accumulation(compiler, node):
    """For the `for` node of the accumulation above, one_step(frame, before=0) -> whether it ran the
    loop as one step (False: nothing done, run it as written); else None."""
    shape = None if compiler.prelude else accumulating_loop(node)
    if shape is None or not compiler.nonlocals.isdisjoint(shape[:2]):  # a pass stores its pair in the frame
        return None
    child_name, local_name, owner_name, children_field, locals_field, gradient, local_first = shape
    state = compiler.state
    call = node.iter
    extent = compiler.source.extent(call)
    zip_builtin = compiler.builtins["zip"]

    def one_step(frame, before=0):
        owner = _find(compiler, frame, owner_name)
        if type(owner) is not Instance or _find(compiler, frame, "zip") is not zip_builtin:
            return False
        fields = owner.fields
        if children_field not in fields or locals_field not in fields:
            return False
        pairs = accumulate(state, owner, children_field, locals_field, gradient, local_first, before)
        if pairs is None:
            return False
        # the last call a statement made: its place, as the call's code sets it (the built-in's own
        # place, state.site, is set by the call of each built-in that reads it: sum and map)
        state.entry, state.entry_node, state.call_site = extent, call, extent
        if pairs:
            frame.vars[child_name], frame.vars[local_name] = pairs[-1]
        return True

    return one_step


def accumulate_in_one_step(compiler, node, loop):
    """The `for` statement `node`'s code: `loop` (as written), or, for the accumulation above, one
    that runs its passes in one step where it can."""
    one_step = accumulation(compiler, node)
    if one_step is None:
        return loop

    def run(frame):
        return None if one_step(frame) else loop(frame)

    return run


def accumulate_each_node(compiler, node, loop, iterable, pass_scope):
    """The `for` statement `node`'s code: `loop` (as written), or, for `for v in nodes:` whose body is
    only the accumulation into v's children (the walk back over the sorted nodes), a loop of its
    own that runs each pass's accumulation in one step where it can, and the pass as written (in
    the pass's scope, `pass_scope(item, index)`) where it cannot. `iterable`: the code of `nodes`."""
    target = node.target
    inner = node.body[0] if len(node.body) == 1 else None
    if node.orelse or type(target) is not ast.Name or target.id in compiler.nonlocals or type(inner) is not ast.For:
        return loop
    shape = accumulating_loop(inner)
    one_step = accumulation(compiler, inner) if shape is not None and shape[2] == target.id else None
    if one_step is None:
        return loop
    name = target.id
    state = compiler.state
    body = compiler.block(node.body)  # a pass as written: it counts its statement and places its errors

    def run(frame):
        outer = state.scope
        variables = frame.vars
        for index, item in enumerate(B.iterate(iterable(frame))):
            variables[name] = item
            if not one_step(frame, 1):  # 1: the pass's own statement, counted first
                state.scope = outer + (pass_scope(item, index),)
                body(frame)
                state.scope = outer
        return None

    return run


def _find(compiler, frame, name):
    """The name as the code would read it: the frame, those around it, the built-ins (None: none has it)."""
    while frame is not None:
        if name in frame.vars:
            return frame.vars[name]
        frame = frame.parent
    return compiler.builtins.get(name)


# ---- a value class's operators ----

NOT_DONE = object()  # what an operator's one step answers when the call must run as written
ARITHMETIC = {ast.Add: "Add", ast.Sub: "Sub", ast.Mult: "Mult", ast.Div: "Div", ast.Pow: "Pow"}


def operator_method(node):
    """For `def m(self, other)` whose body is

        other = other if isinstance(other, C) else C(other)
        return C(<number>, (self, other), (<number>, <number>))

    where each <number> is made of the two objects' fields, numbers, + - * / ** and unary minus:
    (self, other, C, the isinstance call, the C(other) call, the returned call, its three numbers
    compiled as functions of the two objects' fields); else None."""
    arguments = node.args
    if (
        arguments.vararg
        or arguments.kwarg
        or len(arguments.args) != 2
        or arguments.defaults
        or arguments.kwonlyargs
        or arguments.posonlyargs
        or node.decorator_list
        or len(node.body) != 2
    ):
        return None
    this, other = (arg.arg for arg in arguments.args)
    coerce, give = node.body
    if type(coerce) is not ast.Assign or len(coerce.targets) != 1 or _name(coerce.targets[0]) != other:
        return None
    choice = coerce.value
    if type(choice) is not ast.IfExp or _name(choice.body) != other:
        return None
    test, made = choice.test, choice.orelse
    if not (_plain_call(test, 2) and _name(test.func) == "isinstance" and _name(test.args[0]) == other):
        return None
    cls = _name(test.args[1])
    if not (_plain_call(made, 1) and _name(made.func) == cls and _name(made.args[0]) == other):
        return None
    if type(give) is not ast.Return or not _plain_call(give.value, 3) or _name(give.value.func) != cls:
        return None
    data, inputs, local_grads = give.value.args
    if (
        type(inputs) is not ast.Tuple
        or [_name(e) for e in inputs.elts] != [this, other]
        or type(local_grads) is not ast.Tuple
        or len(local_grads.elts) != 2
        or cls in (None, this, other, "isinstance")
        or this == other
    ):
        return None
    numbers = [_arithmetic(e, this, other) for e in (data, *local_grads.elts)]
    if None in numbers:
        return None
    return this, other, cls, test, made, give.value, numbers


def _plain_call(node, count):
    return (
        type(node) is ast.Call
        and not node.keywords
        and len(node.args) == count
        and not any(type(a) is ast.Starred for a in node.args)
    )


class _NotANumber(Exception):
    """A field an operator's arithmetic reads is missing or holds no int or float: run it as written."""


def _arithmetic(node, this, other):
    """`node` as a function of the two objects' fields (dicts), computing what the interpreter's
    operators compute on numbers (builtins' add, mul, ...; on a float, + - * as BinOp runs them inline);
    None for any other expression. It raises (_NotANumber, or the operator's own error) where the code
    as written would do something else."""
    kind = type(node)
    if kind is ast.Constant and type(node.value) in (int, float):
        value = node.value
        return lambda mine, theirs: value
    if kind is ast.Attribute and type(node.value) is ast.Name and node.value.id in (this, other):
        field = node.attr
        if node.value.id == this:

            def read(mine, theirs):
                value = mine.get(field)
                if type(value) is float or type(value) is int:
                    return value
                raise _NotANumber

        else:

            def read(mine, theirs):
                value = theirs.get(field)
                if type(value) is float or type(value) is int:
                    return value
                raise _NotANumber

        return read
    if kind is ast.UnaryOp and type(node.op) is ast.USub:
        operand = _arithmetic(node.operand, this, other)
        return None if operand is None else lambda mine, theirs: B.negate(operand(mine, theirs))
    if kind is ast.BinOp and type(node.op) in ARITHMETIC:
        left, right = _arithmetic(node.left, this, other), _arithmetic(node.right, this, other)
        if left is None or right is None:
            return None
        name = ARITHMETIC[type(node.op)]
        operation, on_floats = B.BINARY[name], B.FLOAT_OPERATIONS.get(name)

        def compute(mine, theirs):
            x, y = left(mine, theirs), right(mine, theirs)
            if on_floats is not None and (type(x) is float or type(y) is float):
                return on_floats(x, y)
            return operation(x, y)

        return compute
    return None


def operator_in_one_step(compiler, node):
    """For a method of the shape above, run(function, a, b): `a op b` as calling it would make it,
    for a an instance of the class C names and b one too or an int or a float, without a frame,
    statement or call of its own for each; NOT_DONE, with nothing changed, where the call could do
    otherwise (C or isinstance named something else, b of another class, a field that is no number,
    the call-depth limit near, the program's own backward() running), and the method is then called.
    Compiled in the method's own context (its locals), so that the parts it runs as written (the
    call C(other), the returned call when its numbers do not hold) are the method's own code."""
    shape = None if compiler.prelude else operator_method(node)
    if shape is None:
        return None
    this, other, cls_name, test, coerce_call, give_call, (data, first_local, second_local) = shape
    state = compiler.state
    limits = state.limits
    isinstance_builtin = compiler.builtins["isinstance"]
    failed = compiler.failure()
    place = compiler.span(node.body[0])  # where the body's count reports the statement limit
    coerce_statement, give_statement = node.body
    coerce, give = compiler.expr(coerce_call), compiler.expr(give_call)
    test_extent, give_extent = compiler.site(test)[0], compiler.site(give_call)[0]  # C(other) sets its own

    def run(function, a, b):
        depth = state.depth
        cls = a.cls
        closure = function.closure
        kind = type(b)
        if (
            depth + 1 >= limits.max_call_depth  # the method's call, and C()'s __init__ one deeper
            or state.walk is not None
            or (kind is not float and kind is not int and (kind is not Instance or b.cls is not cls))
            or type(cls) is not Class
        ):
            return NOT_DONE
        variables = closure.vars  # the module's, for a class defined at its top level
        if (variables[cls_name] if cls_name in variables else _find(compiler, closure.parent, cls_name)) is not cls or (
            variables["isinstance"] if "isinstance" in variables else _find(compiler, closure.parent, "isinstance")
        ) is not isinstance_builtin:
            return NOT_DONE
        # From here on, what Calls.call_function and the body would do, in their order.
        outer, site = state.scope, state.call_site
        state.depth = depth + 1
        state.scope = state.scope_of_call(outer, function.scope_name, site)
        state.steps += 2
        if state.steps > limits.max_statements:
            state.count(0, place)
        state.entry, state.entry_node, state.call_site = test_extent, test, test_extent
        frame = None
        if kind is not Instance:
            frame = Frame({this: a, other: b}, closure)
            try:
                b = coerce(frame)
            except Exception as error:
                raise failed(error, coerce_statement) from None
            frame.vars[other] = b
        mine, theirs = a.fields, b.fields
        try:
            numbers = (data(mine, theirs), (a, b), (first_local(mine, theirs), second_local(mine, theirs)))
        except Exception:
            numbers = None
        try:
            if numbers is None:  # the returned call as written: it fails, or does otherwise, as written
                result = give(frame or Frame({this: a, other: b}, closure))
            else:
                state.entry, state.entry_node, state.call_site = give_extent, give_call, give_extent
                try:
                    result = state.instance_of(cls, numbers)
                except Exception as error:
                    raise failed(error, give_call) from None
        except Exception as error:
            raise failed(error, give_statement) from None
        state.scope, state.call_site, state.depth = outer, site, depth
        return result

    return run
