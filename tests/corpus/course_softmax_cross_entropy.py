# Logits from a linear layer, softmax with the largest logit subtracted, and the negative
# log-likelihood of the target averaged over two examples.


def softmax(logits):
    biggest = max(l.data for l in logits)
    exps = [(l - biggest).exp() for l in logits]
    total = sum(exps)
    return [e / total for e in exps]


def cross_entropy(logits, target):
    return -softmax(logits)[target].log()


W = [[Value(0.1), Value(-0.2)], [Value(0.4), Value(0.3)], [Value(-0.5), Value(0.2)]]
b = [Value(0.0), Value(0.1), Value(-0.1)]
examples = [([1.0, 2.0], 0), ([-1.0, 0.5], 2)]

losses = []
for x, target in examples:
    logits = [sum((wij * xj for wij, xj in zip(wi, x)), bi) for wi, bi in zip(W, b)]
    losses.append(cross_entropy(logits, target))
loss = sum(losses) / len(losses)
loss.backward()
print(loss.data, [[w.grad for w in row] for row in W])
