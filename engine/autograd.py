"""Chapter 2's backward pass, written once: the iterative sort and the reverse walk.

Both take an optional list that, when given, records every step for the trace; without
it they run the plain fast loop that Value.backward() uses. The flags that switch off the
visited check or the += exist only to show learners the walks the course warns against.
"""

DESCEND, SKIP, EMIT = "descend", "skip", "emit"
NO_UPDATES = ()  # a propagate step's updates where the node passes nothing on


def topological_order(root, steps=None, check_visited=True):
    """Children before parents, by the course's explicit (node, inputIndex) stack: no recursion.

    With steps, each pop of that stack is recorded: (node, index, DESCEND or SKIP, child) for
    a child looked at, (node, index, EMIT, None) when the node's children are all done. The
    walk keeps the node being scanned and its index in locals, as _postorder does, and a leaf
    is emitted where it is found: the stack the course pops is then the ancestors and their
    resume indices, and the steps come out the same, with no push or pop per child."""
    if steps is None:  # only the recording walk can turn the visited check off
        return _postorder(root)
    record = steps.append
    order = []
    visited = set()
    ancestors = []  # the nodes whose scan resumes after the current node, and where
    resume_at = []
    node, index = root, 0
    while True:
        children = node._children
        count = len(children)
        while index < count:
            child = children[index]
            if check_visited and child in visited:
                record((node, index, SKIP, child))
                index += 1
                continue
            visited.add(child)
            record((node, index, DESCEND, child))
            index += 1
            if child._children:
                ancestors.append(node)
                resume_at.append(index)
                node, index = child, 0
                break
            record((child, 0, EMIT, None))
            order.append(child)
        else:  # every child done
            record((node, count, EMIT, None))
            order.append(node)
            if not ancestors:
                return order
            node = ancestors.pop()
            index = resume_at.pop()


def _postorder(root, leaves=True):
    """The same order as the recording walk above, without the steps: the node being scanned and
    its next child's index live in locals, and only the ancestors waiting for it are on the stack,
    so a node is pushed and popped once, not once per child; a leaf is emitted where it is found,
    never pushed. `while True` (not `while stack`): CPython 3.11 specialises a loop's bytecode from
    inside the first call only on a plain backward jump, so the first backward() of a process runs
    as fast as the later ones."""
    order = []
    visited = set()
    ancestors = []  # the nodes whose scan resumes after the current node, and where
    resume_at = []
    node, index = root, 0
    while True:
        children = node._children
        count = len(children)
        while index < count:
            child = children[index]
            index += 1
            if child._children:
                if child not in visited:
                    visited.add(child)
                    ancestors.append(node)
                    resume_at.append(index)
                    node, index = child, 0
                    break
            elif leaves and child not in visited:
                visited.add(child)
                order.append(child)
        else:  # every child done
            order.append(node)
            if not ancestors:
                return order
            node = ancestors.pop()
            index = resume_at.pop()


def operation_order(root):
    """_postorder's order with the leaves left out (the root is always there), for
    Value.backward(): a leaf has nothing to pass on, so propagate() would only skip it. The
    operations keep their relative order, so every gradient is summed in the same order, bit for
    bit the trace's; and the visited set holds operations only."""
    return _postorder(root, leaves=False)


def propagate(order, steps=None, accumulate=True):
    """Seed the last node (the output) with 1, then child.grad += local * grad in reverse.

    A node whose grad is 0 has nothing to pass on and is skipped, as in the course; this
    also keeps 0 * Infinity from turning a dead branch into NaN.
    Each recorded step is (node, grad, [(child, local_grad, delta, child_grad_after)]), the
    updates NO_UPDATES for a leaf or a node whose grad is 0."""
    order[-1].grad = 1.0
    if steps is None and accumulate:  # the plain loop of Value.backward()
        for node in reversed(order):
            grad = node.grad
            if grad != 0.0:  # 0.0, not 0: a float compared with a float is one specialised instruction
                children = node._children
                if len(children) == 2:  # + and *, written out: a zip() per node cost twice the arithmetic
                    a, b = children
                    local_a, local_b = node._local_grads
                    a.grad += local_a * grad
                    b.grad += local_b * grad
                elif children:
                    for child, local in zip(children, node._local_grads):
                        child.grad += local * grad
        return
    for node in reversed(order):
        grad = node.grad
        if grad == 0 or not node._children:  # nothing to pass on: one shared empty tuple, not a list per step
            if steps is not None:
                steps.append((node, grad, NO_UPDATES))
            continue
        updates = []
        for child, local in zip(node._children, node._local_grads):
            delta = local * grad
            child.grad = child.grad + delta if accumulate else delta
            updates.append((child, local, delta, child.grad))
        if steps is not None:
            steps.append((node, grad, updates))


def recursive_propagate(root, steps):
    """The walk the course warns against, for the 'no-topological-order' variant: each node
    adds local * its current grad into a child and at once recurses into that child, so a
    node reached by two paths passes its gradient on before it has all of it.
    Run with an explicit stack. Every update is its own recorded step (node, grad, [update]),
    in the order it happens: entering a node, or coming back to it after a child's subtree,
    so each update's "before" is that child's previous "after". A leaf's visit is (leaf, grad, [])."""
    root.grad = 1.0
    stack_nodes = [root]
    stack_indices = [0]
    while stack_nodes:
        node = stack_nodes.pop()
        index = stack_indices.pop()
        if index < len(node._children):
            child = node._children[index]
            local = node._local_grads[index]
            delta = local * node.grad
            child.grad += delta
            steps.append((node, node.grad, [(child, local, delta, child.grad)]))
            stack_nodes += [node, child]
            stack_indices += [index + 1, 0]
        elif index == 0:
            steps.append((node, node.grad, []))
