# Written for valuegraph in the style of a one-file character model: read names from input.txt,
# build a tokenizer from the characters, train a tiny next-character model with an Adam-like
# update, print progress on one line, then sample a few names.
import os
import random

from micrograd.engine import Value

random.seed(7)

if not os.path.exists("input.txt"):
    import urllib.request  # only when the names are missing; valuegraph is given input.txt

    urllib.request.urlretrieve("https://example.org/names.txt", "input.txt")

with open("input.txt") as handle:
    names = [line.strip().lower() for line in handle if line.strip()]
random.shuffle(names)
print(f"names: {len(names)}, first: {names[0]!r}, longest: {max(len(n) for n in names)}")

alphabet = sorted(set("".join(names)))
END = len(alphabet)  # one extra token marks the start and the end of a name
vocab = len(alphabet) + 1
position_of = {ch: i for i, ch in enumerate(alphabet)}
print("alphabet:", "".join(alphabet), "| vocab", vocab)

width = 4
grid = lambda rows, cols, spread=0.3: [[Value(random.gauss(0, spread)) for _ in range(cols)] for _ in range(rows)]
weights = {"embed": grid(vocab, width), "mix": grid(width, width, 0.5), "head": grid(vocab, width)}
params = [p for table in weights.values() for row in table for p in row]
print(f"parameters: {len(params)}")


def matvec(rows, x):
    return [sum((w * xi for w, xi in zip(row, x)), Value(0.0)) for row in rows]


def softmax(scores):
    top = max(s.data for s in scores)
    lifted = [(s - top).exp() for s in scores]
    total = sum(lifted)
    return [e / total for e in lifted]


def name_loss(name):
    tokens = [END] + [position_of[ch] for ch in name] + [END]
    losses = []
    for here, after in zip(tokens, tokens[1:]):
        hidden = [h.relu() for h in matvec(weights["mix"], weights["embed"][here])]
        probs = softmax(matvec(weights["head"], hidden))
        losses.append(-probs[after].log())
    return sum(losses) * (1.0 / len(losses))


rate, beta1, beta2, eps = 0.05, 0.85, 0.99, 1e-8
first_moment = [0.0] * len(params)
second_moment = [0.0] * len(params)
steps = 3
for step in range(steps):
    name = names[step % len(names)]
    loss = name_loss(name)
    loss.backward()
    for i, p in enumerate(params):
        first_moment[i] = beta1 * first_moment[i] + (1 - beta1) * p.grad
        second_moment[i] = beta2 * second_moment[i] + (1 - beta2) * p.grad**2
        m_hat = first_moment[i] / (1 - beta1 ** (step + 1))
        v_hat = second_moment[i] / (1 - beta2 ** (step + 1))
        p.data -= rate * m_hat / (v_hat**0.5 + eps)
        p.grad = 0
    print(f"step {step + 1:4d} / {steps:4d} | {name:>8} | loss {loss.data:.4f}", end="\r")
print()

for sample in range(3):
    token, letters = END, []
    for _ in range(8):
        hidden = [h.relu() for h in matvec(weights["mix"], weights["embed"][token])]
        probs = softmax(matvec(weights["head"], hidden))
        token = random.choices(range(vocab), weights=[p.data for p in probs])[0]
        if token == END:
            break
        letters.append(alphabet[token])
    print(f"sample {sample + 1:2d}: {''.join(letters)}")
