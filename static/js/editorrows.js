// Where each program line sits in the editor now that long lines wrap (a one-line program stays
// whole in a narrow column). The gutter, the error band, the code-link bands and "keep this line
// in view" place a line by its first visual row and its number of rows. The textarea wraps its
// text exactly as a hidden copy with the same font, width and wrapping rules; the copy is only
// laid out when some line may be too long for one row, so a short program costs a string scan.

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/; // one monospace cell per character, no tabs

export function createRowMap(textarea) {
  const probe = document.createElement("div");
  probe.className = "vg-row-probe";
  probe.setAttribute("aria-hidden", "true");
  textarea.after(probe);
  const context = document.createElement("canvas").getContext("2d");
  let firsts = [0, 1]; // firsts[i]: the first visual row of line i + 1; the last entry: the row count
  let rowsOf = new Map(); // a line's text -> its rows, at rowsAt (the room, line height and font they were measured at)
  let rowsAt = "";
  const listeners = [];

  /** Recount the rows of the textarea's text at its current width; listeners hear of a change. */
  function measure() {
    const lines = textarea.value.split("\n");
    const style = getComputedStyle(textarea);
    const room = textarea.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    // The layers behind the text leave the same room on the right as the textarea's scrollbar takes.
    textarea.parentElement.style.setProperty("--vg-scrollbar", `${textarea.offsetWidth - textarea.clientWidth}px`);
    context.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const cell = context.measureText("0").width;
    const counts = room > 0 && lines.some((line) => !PRINTABLE_ASCII.test(line) || line.length * cell > room)
      ? rowsOfEachLine(lines, room, parseFloat(style.lineHeight), context.font)
      : null;
    const next = [0];
    for (let i = 0; i < lines.length; i++) next.push(next[i] + (counts ? counts[i] : 1));
    if (next.length === firsts.length && next.every((row, i) => row === firsts[i])) return;
    firsts = next;
    for (const listener of listeners) listener();
  }

  /**
   * Each line's rows: a line's copy is laid out only when its text is new at this width and font, so a
   * keystroke lays out the line it changed, not every line (4,000 lines: 47 ms of script a key).
   */
  function rowsOfEachLine(lines, room, lineHeight, font) {
    const at = `${room} ${lineHeight} ${font}`;
    if (at !== rowsAt || rowsOf.size > 2 * lines.length + 100) { // another wrapping, or texts long gone
      rowsOf = new Map();
      rowsAt = at;
    }
    const unknown = [...new Set(lines.filter((line) => !rowsOf.has(line)))];
    if (unknown.length > 0) {
      probe.style.width = `${room}px`;
      const copies = unknown.map((line) => {
        const div = document.createElement("div");
        div.textContent = line || " ";
        return div;
      });
      probe.replaceChildren(...copies);
      copies.forEach((div, i) => rowsOf.set(unknown[i], Math.max(1, Math.round(div.offsetHeight / lineHeight))));
      probe.replaceChildren();
    }
    return lines.map((line) => rowsOf.get(line));
  }

  // A wider or narrower editor wraps differently.
  new ResizeObserver(() => measure()).observe(textarea);

  return {
    measure,
    /** Call `listener` after the rows change. */
    onChange(listener) {
      listeners.push(listener);
    },
    /** The first visual row (0-based) of a line (1-based). */
    top: (line) => firsts[Math.min(Math.max(line, 1), firsts.length - 1) - 1],
    /** How many visual rows a line takes. */
    count: (line) => (line >= 1 && line < firsts.length ? firsts[line] - firsts[line - 1] : 1),
    /** The line (1-based) shown on a visual row, or null past the text. */
    lineAt(row) {
      if (row < 0 || row >= firsts[firsts.length - 1]) return null;
      let low = 0;
      let high = firsts.length - 2;
      while (low < high) {
        const middle = (low + high + 1) >> 1;
        if (firsts[middle] <= row) low = middle;
        else high = middle - 1;
      }
      return low + 1;
    },
  };
}
