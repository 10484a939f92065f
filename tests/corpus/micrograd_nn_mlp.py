# Source: karpathy/micrograd, README.md and demo.ipynb: MLP from micrograd.nn trained with the
# demo's SVM max-margin loss and L2 regularisation. The demo's data comes from sklearn's
# make_moons through numpy; here eight points written out stand in for it, and 10 steps for 100.
from micrograd.engine import Value
from micrograd.nn import MLP

X = [[1.0, 0.2], [0.5, 0.8], [-0.9, 0.4], [0.1, 0.9], [1.5, -0.4], [2.0, 0.3], [0.3, -0.2], [1.1, -0.6]]
y = [-1, -1, -1, -1, 1, 1, 1, 1]

model = MLP(2, [16, 16, 1])  # 2-layer neural network
print(model.parameters()[0])
print("number of parameters", len(model.parameters()))


# loss function
def loss(batch_size=None):

    Xb, yb = X, y

    inputs = [list(map(Value, xrow)) for xrow in Xb]

    # forward the model to get scores
    scores = list(map(model, inputs))

    # svm "max-margin" loss
    losses = [(1 + -yi * scorei).relu() for yi, scorei in zip(yb, scores)]
    data_loss = sum(losses) * (1.0 / len(losses))
    # L2 regularization
    alpha = 1e-4
    reg_loss = alpha * sum((p * p for p in model.parameters()))
    total_loss = data_loss + reg_loss

    # also get accuracy
    accuracy = [(yi > 0) == (scorei.data > 0) for yi, scorei in zip(yb, scores)]
    return total_loss, sum(accuracy) / len(accuracy)


total_loss, acc = loss()
print(total_loss, acc)

# optimization
for k in range(10):
    # forward
    total_loss, acc = loss()

    # backward
    model.zero_grad()
    total_loss.backward()

    # update (sgd)
    learning_rate = 1.0 - 0.9 * k / 100
    for p in model.parameters():
        p.data -= learning_rate * p.grad

    if k % 1 == 0:
        print(f"step {k} loss {total_loss.data}, accuracy {acc * 100}%")
