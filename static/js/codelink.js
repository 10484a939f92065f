// The editor and the graph as one view. Every node carries the span of the code that made it
// (from the server); this module turns spans into highlights in the editor and editor lines back
// into node ids:
//   - pointing at (or focusing) a node marks its code and its lines;
//   - pointing at a line (or putting the caret on it) asks the graph to mark that line's nodes;
//   - the walk's current node has its line banded, and the editor scrolls to keep it in view.
// The highlights live in a layer of their own behind the textarea (the error marker has its own),
// built from text nodes and elements only, never from HTML.

const HOVER = "vg-link-hover";
const WALK = "vg-link-walk";

/** Line starts (UTF-16 offsets) of a text. */
function lineStarts(text) {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}

/**
 * The UTF-16 offset of (line, column), both 1-based, the column counted in characters (code
 * points) as the server counts them. Past the end of the line: the end of the line.
 */
export function offsetAt(text, starts, line, column) {
  if (line < 1) return 0;
  if (line > starts.length) return text.length;
  const start = starts[line - 1];
  const end = line < starts.length ? starts[line] - 1 : text.length;
  let offset = start;
  for (let c = 1; c < column && offset < end; c++) {
    const code = text.charCodeAt(offset);
    offset += code >= 0xd800 && code <= 0xdbff && offset + 1 < end ? 2 : 1;
  }
  return offset;
}

/** `rows` is the editor's row map (editorrows.js): where each line sits once long lines wrap. */
export function createCodeLink(root, { rows, onLine = () => {} } = {}) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const textarea = el("program");
  const editorBox = el("editor");
  const code = textarea.parentElement;
  const layer = document.createElement("pre");
  layer.className = "vg-code-links";
  layer.setAttribute("aria-hidden", "true");
  layer.dataset.vg = "code-links";
  code.insertBefore(layer, code.firstChild);

  let model = null;
  let text = null; // the program the model was made from
  let drawnText = null; // the program the layer last showed
  let drawnMarks = null; // the hoverIds its text marks
  let bands = []; // the layer's line bands: {line, kind, el}
  let starts = [0];
  let byLine = null; // line -> node ids whose span covers it: made when a line is first pointed at, not with each graph
  let hoverIds = [];
  let walkId = null;
  let pointedLine = null; // the line under the mouse, or the caret's line while the editor has focus
  let pointedBy = null; // "mouse" or "caret"
  // The textarea's geometry, kept rather than read at each step of the walk: reading it after the
  // step changed the page would force a style and layout of the whole page. Its size and line height
  // are read when it resizes (the layout is clean then), its scroll position when it scrolls.
  let scrollTop = textarea.scrollTop;
  let clientHeight = textarea.clientHeight;
  let lineHeightPx = readLineHeight();
  let scrollFrame = null; // keepInView's scroll, waiting for the next frame

  /** Is the editor showing the program the graph was made from? */
  const current = () => model !== null && textarea.value === text;
  const spanOf = (id) => model?.nodes[id]?.span ?? null;

  function setModel(newModel, program) {
    model = newModel;
    text = program;
    starts = lineStarts(program);
    byLine = null;
    // hoverIds and walkId stay: the page shows the new graph's step and story before it links.
    pointedLine = null;
    pointedBy = null;
    draw();
    const walkSpan = walkId === null ? null : spanOf(walkId);
    if (walkSpan && current()) keepInView(walkSpan.line);
    // The caret may already be on a line: its nodes are the new graph's.
    if (document.activeElement === textarea && current()) point(caretLine(), "caret");
    else onLine(null, []);
  }

  function clear() {
    model = null;
    text = null;
    hoverIds = [];
    walkId = null;
    pointedLine = null;
    layer.replaceChildren();
    drawnText = drawnMarks = null;
    bands = [];
    onLine(null, []);
  }

  /** Nodes made on a line (1-based), in id order. */
  function nodesOnLine(line) {
    if (!current()) return [];
    if (byLine === null) {
      byLine = new Map();
      for (const node of model.nodes) {
        const span = node.span;
        if (!span) continue;
        for (let line = span.line; line <= span.end_line; line++) {
          if (!byLine.has(line)) byLine.set(line, []);
          byLine.get(line).push(node.id);
        }
      }
    }
    return byLine.get(line) ?? [];
  }

  // ---- drawing the layer ----

  function band(line, className) {
    const div = document.createElement("div");
    div.className = `vg-link-band ${className}`;
    div.style.setProperty("--vg-line", String(rows.top(line)));
    div.style.setProperty("--vg-rows", String(rows.count(line)));
    div.dataset.line = String(line);
    return div;
  }

  /** Marked ranges (UTF-16 offsets) for the spans of some nodes, merged, in order. */
  function ranges(ids) {
    const list = [];
    for (const id of ids) {
      const span = spanOf(id);
      if (!span) continue;
      const from = offsetAt(text, starts, span.line, span.column);
      const to = offsetAt(text, starts, span.end_line, span.end_column);
      if (to > from) list.push([from, to]);
    }
    list.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const merged = [];
    for (const [from, to] of list) {
      const last = merged[merged.length - 1];
      if (last && from <= last[1]) last[1] = Math.max(last[1], to);
      else merged.push([from, to]);
    }
    return merged;
  }

  function draw() {
    if (!current()) {
      layer.replaceChildren();
      drawnText = drawnMarks = null;
      bands = [];
      return;
    }
    // The program's text is laid out again only when it or its marks change: rebuilt at every step
    // of the walk, a long program's text cost the page a relayout of all its lines per step.
    if (drawnText !== text || drawnMarks !== hoverIds) {
      layer.replaceChildren(...markedText());
      bands = [];
      drawnMarks = hoverIds;
    }
    const lines = new Set();
    for (const id of hoverIds) {
      const span = spanOf(id);
      if (span) for (let line = span.line; line <= span.end_line; line++) lines.add(line);
    }
    if (pointedLine !== null) lines.add(pointedLine);
    const wanted = [...lines].map((line) => [line, HOVER]);
    const walkSpan = walkId === null ? null : spanOf(walkId);
    if (walkSpan) for (let line = walkSpan.line; line <= walkSpan.end_line; line++) wanted.push([line, WALK]);
    if (wanted.length !== bands.length || wanted.some(([line, kind], i) => bands[i].line !== line || bands[i].kind !== kind)) {
      for (const b of bands) b.el.remove();
      bands = wanted.map(([line, kind]) => ({ line, kind, el: band(line, kind) }));
      layer.append(...bands.map((b) => b.el));
    }
    // The same text keeps the layer's scroll position (the textarea's scroll events move it), and
    // reading scrollTop would force a layout of the page at every step of the walk.
    if (drawnText !== text) syncScroll();
    drawnText = text;
  }

  /** The program's text as text nodes, the spans of the nodes pointed at in marks. */
  function markedText() {
    const parts = [];
    let at = 0;
    for (const [from, to] of ranges(hoverIds)) {
      parts.push(document.createTextNode(text.slice(at, from)));
      const mark = document.createElement("mark");
      mark.className = "vg-link-mark";
      mark.textContent = text.slice(from, to);
      parts.push(mark);
      at = to;
    }
    parts.push(document.createTextNode(text.slice(at) + "\n"));
    return parts;
  }

  function syncScroll() {
    scrollTop = textarea.scrollTop;
    layer.scrollTop = scrollTop;
  }

  function readLineHeight() {
    return parseFloat(getComputedStyle(textarea).lineHeight) || 24;
  }

  /** Scroll the editor so that a line is in view (only when it is not). */
  function keepInView(line) {
    const top = rows.top(line) * lineHeightPx;
    const bottom = top + rows.count(line) * lineHeightPx;
    if (top >= scrollTop && bottom <= scrollTop + clientHeight - 10) return;
    // Scrolled in an animation frame: setting scrollTop makes the browser lay out the page first,
    // which in the middle of a step would be done twice. The layer follows at once, not a frame
    // later; the scroll event then settles both on the textarea's own (clamped) position.
    const target = Math.max(0, top - clientHeight / 3);
    scrollTop = target;
    cancelAnimationFrame(scrollFrame);
    scrollFrame = requestAnimationFrame(() => {
      scrollFrame = null;
      textarea.scrollTop = target;
      layer.scrollTop = target;
    });
  }

  // ---- node -> code ----

  /** Mark the code of these nodes (the node pointed at or pinned, or a scope's members); [] clears. */
  function showNodes(ids) {
    const next = ids.filter((id) => id !== null && id !== undefined);
    if (next.length === hoverIds.length && next.every((id, i) => id === hoverIds[i])) return;
    hoverIds = next;
    draw();
  }

  /** Band the line of the walk's current node. */
  function showWalk(id) {
    if (id === walkId) return;
    walkId = id;
    const span = id === null ? null : spanOf(id);
    if (span && current()) keepInView(span.line);
    draw();
  }

  // ---- code -> nodes ----

  function point(line, by) {
    if (line === pointedLine && by === pointedBy) return;
    pointedLine = line;
    pointedBy = line === null ? null : by;
    draw();
    onLine(line, line === null ? [] : nodesOnLine(line));
  }

  function lineAtY(clientY) {
    const box = textarea.getBoundingClientRect();
    const padding = parseFloat(getComputedStyle(textarea).paddingTop) || 0;
    const y = clientY - box.top - padding + textarea.scrollTop;
    return y < 0 ? null : rows.lineAt(Math.floor(y / lineHeightPx));
  }

  function caretLine() {
    const at = textarea.selectionStart ?? 0;
    return textarea.value.slice(0, at).split("\n").length;
  }

  editorBox.addEventListener("mousemove", (event) => {
    if (!current()) return;
    point(lineAtY(event.clientY), "mouse");
  });
  editorBox.addEventListener("mouseleave", () => {
    if (pointedBy !== "mouse") return;
    point(document.activeElement === textarea && current() ? caretLine() : null, "caret");
  });
  for (const type of ["keyup", "click", "focus"]) {
    textarea.addEventListener(type, () => {
      if (pointedBy === "mouse" && type !== "click") return;
      if (current()) point(caretLine(), "caret");
    });
  }
  textarea.addEventListener("blur", () => {
    if (pointedBy === "caret") point(null, null);
  });
  textarea.addEventListener("input", () => {
    // The spans belong to the program as it was; they come back with the next graph.
    if (pointedLine !== null) point(null, null);
    draw();
  });
  textarea.addEventListener("scroll", syncScroll);
  new ResizeObserver(() => {
    clientHeight = textarea.clientHeight;
    lineHeightPx = readLineHeight();
  }).observe(textarea);
  rows.onChange(draw);

  return { setModel, clear, showNodes, showWalk, nodesOnLine, get line() { return pointedLine; } };
}
