// How numbers and nodes are written on screen. Pure functions, shared by every view.

const MINUS = "\u2212";

/** Is x one of NaN, Infinity, -Infinity? */
export function isNonFinite(x) {
  return typeof x === "number" && !Number.isFinite(x);
}

/**
 * A number as a learner reads it: 2 not 2.0, at most `digits` significant digits,
 * NaN / ∞ / −∞ for the non-finite ones.
 */
export function formatNumber(x, digits = 5) {
  if (x === null || x === undefined) return "";
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "∞";
  if (x === -Infinity) return MINUS + "∞";
  if (Object.is(x, -0)) return "0";
  if (Number.isInteger(x) && Math.abs(x) < 1e6) return String(x);
  const abs = Math.abs(x);
  if (abs >= 1e-4 && abs < 1e6) return String(Number(x.toPrecision(digits)));
  // Very large or small: exponent form with trimmed mantissa, e.g. 1.5e-7.
  const [mantissa, exponent] = x.toExponential(digits - 1).split("e");
  return `${String(Number(mantissa))}e${Number(exponent)}`;
}

/** A printed line as a terminal shows it: each carriage return ("\r", as print(..., end="\r") writes)
 * goes back to the start of the line and what follows overwrites it, so a progress line rewritten
 * every step shows its last state. The API's `printed` keeps the whole line, as the program wrote it. */
export function asTerminalShows(line) {
  if (!line.includes("\r")) return line;
  let shown = "";
  for (const part of line.split("\r")) shown = part + shown.slice(part.length);
  return shown;
}

/** A whole number with thousands separators, 12,345 (toLocaleString is slow on first use). */
export function grouped(n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Full precision, for the story panel and tooltips. */
export function formatExact(x) {
  if (typeof x !== "number" || !Number.isFinite(x)) return formatNumber(x);
  return String(x);
}

/** The name a node goes by everywhere: its label (made distinct by the server: x, x′, x″), else the
 * server's `expr` (the source that made it, e.g. "x1*w1"), else #id from a server without `expr`. */
export function nodeName(node) {
  return node.label ?? node.expr ?? `#${node.id}`;
}

/** `text` cut to at most `max` characters with "…", for a cell that cannot grow. */
export function shortened(text, max) {
  return text.length <= max ? text : `${text.slice(0, Math.max(1, max - 1))}…`;
}

/** The text in an op node's circle: "+", "*", "**2", "log", ... */
export function opText(node) {
  if (node.op === "**") return `**${formatNumber(node.exponent, 4)}`;
  return node.op ?? "";
}

/** "a * b", "log(d)", "c ** 2": how the node was made, in program syntax. */
export function formula(node, nodes) {
  const args = node.children.map((id) => nodeName(nodes[id]));
  switch (node.op) {
    case null:
    case undefined:
      return node.label === null ? "a constant" : "a leaf";
    case "+":
    case "*":
    case "-": // "-", "/" and "neg" come only in graphs posted whole, from a learner's own class
    case "/":
      return `${args[0]} ${node.op} ${args[1]}`;
    case "neg":
      return `-${args[0]}`;
    case "**":
      return `${args[0]} ** ${formatNumber(node.exponent)}`;
    default:
      return `${node.op}(${args[0]})`;
  }
}

/**
 * What the gradient check says about a node, or "" when nothing: "yours: 3, expected: 4" for a
 * grad that is wrong (`wrong` holds its id), "local gradient: yours: 18, expected: 6" for a stored
 * local gradient that breaks its op's rule (`problem`, an entry of gradient_check.local).
 */
export function checkNote(node, wrong, problem) {
  const notes = [];
  if (wrong) notes.push(`yours: ${formatNumber(node.grad)}, expected: ${formatNumber(node.expected_grad)}`);
  if (problem) notes.push(`local gradient: yours: ${formatNumber(problem.stored)}, expected: ${formatNumber(problem.expected)}`);
  return notes.join("; ");
}
