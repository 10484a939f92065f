# Written for valuegraph: the Python a one-file character model leans on, each line compared with
# CPython: strings and their methods, files given with the program, random, and the built-ins.
import os
import random

from micrograd.engine import Value

random.seed(2026)
print(os.path.exists("input.txt"), os.path.exists("missing.txt"))
text = open("input.txt").read()
lines = text.strip().split("\n")
print(len(text), len(lines), lines[0], lines[-1][::-1], text[:3], text[2:9:2])
with open("input.txt") as handle:
    first = handle.readline()
    rest = handle.readlines()
print(repr(first), len(rest), repr(rest[-1]))
for number, line in enumerate(open("input.txt"), start=1):
    print(f"{number:02d} {line.strip():<8}|", end="\r" if number % 3 else "\n")
print()

word = "  Kestrel Wren  "
print(word.strip(), word.lstrip(), word.rstrip() + "!", word.lower(), word.upper().strip())
print(word.split(), "a,b,,c".split(","), "a b c".split(" ", 1), "x-y-z".rsplit("-", 1))
print(word.strip().index("W"), word.find("z"), "banana".count("an"), "banana".replace("an", "AN", 1))
print(word.startswith("  K"), word.strip().endswith(("n", "x")), "Ab".isalpha(), "12".isdigit())
print("ab" * 3, "-" * 10, "+".join(["a", "b", "c"]), "".join(reversed("stressed")), str(3.5) + "%")
print([ch for ch in "hello" if ch in "lo"], "ell" in "hello", "z" not in "hello", "b" < "c", "ab" < "a")
print(sorted(set("mississippi")), sorted(["wren", "amara", "Zev"]), max("abc"), min(["b", "a"]))
print(sorted([("b", 2), ("a", 3), ("a", 1)]), "q".join("xyz"), "a\tb\nc".splitlines())

counts = {}
for ch in "".join(lines).lower():
    counts[ch] = counts.get(ch, 0) + 1
common = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
print(common, counts["a"], list(counts)[:4])
letters = sorted(set("".join(lines).lower()))
index_of = {ch: i for i, ch in enumerate(letters)}
print(letters.index("e"), index_of["z"] if "z" in index_of else -1, len(letters))

shuffled = list(range(10))
random.shuffle(shuffled)
print(shuffled)
print(random.choices(["a", "b", "c"], k=5), random.choices(range(4), weights=[1, 0, 3, 2], k=6))
print(random.choices("xyz", cum_weights=[1, 1, 5]), random.choice(lines), random.choice("abc"))
print(random.gauss(0, 0.08), random.gauss(1.5, 2), random.uniform(-1, 1), random.random())
random.seed(42)
print(random.random(), random.gauss(0, 1))

scale = lambda x, by=2, shift=0: x * by + shift
print(scale(3), scale(3, 4), scale(3, shift=1), (lambda: 5)())
print(max(len(line) for line in lines), max((v for v in [3, 9, 2]), key=lambda v: -v), min(3, 1), min(2.5, 7, -1))
print(sum(x * x for x in range(5)), sum((0.1 for _ in range(3)), 1.0), float(True), float(False), int(True))
print(list(enumerate("ab")), list(zip("abc", [1, 2, 3], (True, False, None))), list(reversed([1, 2, 3])))
grid = [[r * 3 + c for c in range(3)] for r in range(3)]
print([cell for row in grid for cell in row if cell % 2], [[row[i] for row in grid] for i in range(3)])
groups = {"short": [], "long": []}
for line in lines:
    groups["short" if len(line) < 5 else "long"].append(line)
groups["short"].extend(["Al", "Bo"])
groups["long"] += ["Maximilian"]
print({k: len(v) for k, v in groups.items()}, groups["short"][-2:])
grid[1][1] += 100
grid[2][0] *= -1
tally = {"x": 1.5}
tally["x"] -= 0.25
tally["x"] /= 2
print(grid, tally)


class Counter:
    def __init__(self):
        self.seen = 0
        self.items = [0, 0]


c = Counter()
c.seen += 3
c.items[1] += 2
v = Value(2.0)
v.data *= 3
v.grad += 0.5
print(c.seen, c.items, v.data, v.grad)
print(f"{7:4d}|{3.14159:.4f}|{'ab':>5}|{'ab':<4}|{7:02d}|{-2.5:+.2f}|{1234567:,}|{0.25:.1%}|{v.data:8.3f}|{True}")
print("end", end="")
print(" same line", end="\n\n")
print(repr("it's"), repr(1.0), str([1, "a"]), f"{'x'!r}")

# Built-ins and forms no other test program reaches: sets printed and changed, a chained comparison,
# one value assigned to two names, a class's own attribute, != between instances, the conversions.
odd = {1, 3}
odd.update([5, 7])
odd.discard(3)
odd.discard(4)
odd.remove(7)
print(odd, set(), len(odd), 5 in odd, repr({2}))
order = [3, 1]
order.insert(1, 2)
order.insert(0, 9)
order.reverse()
first = second = -order[0]
print(order, first, second, +first, 1 < second < 0, -2 < second <= -1 < 0)
print(tuple(order), tuple(), dict(a=1, b=2.5), dict(), bool(0), bool([1]), bool())
print(int("42"), int(" -7 "), float("1.5"), float("-inf"), round(2.567, 2), round(2.5), round(-0.5))


class Shape:
    sides = 4

    def __init__(self, size):
        self.size = size


square, other = Shape(2), Shape(2)
print(Shape.sides, square.sides, square != other, square != square, square == square)
print(2**33, 2**40, 10**17, 7**22, 2**62, (-2) ** 63)  # whole powers that fit in 64 bits stay whole
