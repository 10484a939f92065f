// A Value in the shape of the course's TypeScript chapter, written for valuegraph's tests:
// each operation stores its inputs (children) and their local gradients; backward() sorts
// the graph with a visited set and adds each input's share with +=.
export class Value {
  data: number;
  grad: number;
  children: Value[];
  localGrads: number[];

  constructor(data: number, children: Value[] = [], localGrads: number[] = []) {
    this.data = data;
    this.grad = 0;
    this.children = children;
    this.localGrads = localGrads;
  }

  add(other: Value): Value {
    return new Value(this.data + other.data, [this, other], [1, 1]);
  }

  mul(other: Value): Value {
    return new Value(this.data * other.data, [this, other], [other.data, this.data]);
  }

  pow(n: number): Value {
    return new Value(this.data ** n, [this], [n * this.data ** (n - 1)]);
  }

  log(): Value {
    return new Value(Math.log(this.data), [this], [1 / this.data]);
  }

  backward(): void {
    const sorted: Value[] = [];
    const seen = new Set<Value>();
    const visit = (v: Value): void => {
      if (seen.has(v)) return;
      seen.add(v);
      v.children.forEach(visit);
      sorted.push(v);
    };
    visit(this);
    this.grad = 1;
    for (const v of sorted.reverse()) {
      v.children.forEach((input, i) => {
        input.grad += v.localGrads[i] * v.grad;
      });
    }
  }

  // valuegraph: the snippet goes here
}
