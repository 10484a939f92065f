// Chapter 2's graph (a = 2, b = 3, c = a * b, L = c + a), written out as valuegraph's JSON;
// and a log of 0 on the way, to carry -Infinity and Infinity as JSON strings.
import { Value } from "./value";

const a = new Value(2);
const b = new Value(3);
const c = a.mul(b);
const L = c.add(a);
L.backward();
console.log(L.toGraphJson(new Map([[a, "a"], [b, "b"], [c, "c"], [L, "L"]])));

const zero = new Value(0);
const logged = zero.log();
logged.backward();
console.log(logged.toGraphJson(new Map([[zero, "zero"]])));
