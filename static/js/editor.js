// The program editor: a plain textarea with a line-number gutter, the caret's line and column,
// and an error marker drawn in a layer behind the text (the error's line in the gutter, its
// column underlined). Long lines wrap; `rows` knows where each line sits. All text is set as
// text, never parsed as HTML.

import { createRowMap } from "./editorrows.js";

const DEBOUNCE_MS = 350;
const INDENT = 4; // spaces per level of Python indentation

export function createEditor(root, { onChange = () => {}, onRun = () => {} } = {}) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const textarea = el("program");
  const gutter = el("gutter");
  const gutterLines = gutter.appendChild(document.createElement("div"));
  const gutterError = gutter.appendChild(document.createElement("div"));
  gutterError.className = "vg-gutter-error";
  gutterError.hidden = true;
  const marks = el("marks");
  const caret = el("caret");
  const editor = el("editor");
  const rows = createRowMap(textarea);
  let errorLine = null;
  let timer = null;
  // Tab moves on (instead of indenting) until the learner does something in the editor, when it
  // came by keyboard: tabbing through the page passes the editor; Escape gives the way out later.
  let tabMovesFocus = false;
  let pointerFocus = false;

  function lineStarts(text) {
    const starts = [0];
    for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
    return starts;
  }

  // The gutter is one text node of line numbers, a blank row under a number for each row its line
  // wraps onto (thousands of lines stay cheap to lay out); the error's line is a band placed by a
  // CSS variable.
  function drawGutter() {
    const count = lineStarts(textarea.value).length;
    let numbers = "";
    for (let i = 1; i <= count; i++) numbers += String(i) + "\n".repeat(rows.count(i));
    gutterLines.textContent = numbers;
    gutterError.hidden = errorLine === null;
    if (errorLine !== null) {
      gutterError.textContent = String(errorLine);
      gutterError.style.setProperty("--vg-error-line", String(rows.top(errorLine)));
    }
    // After the next paint: reading scrollTop now would force a layout in the middle of a task.
    requestAnimationFrame(() => setTimeout(syncScroll, 0));
  }

  function syncScroll() {
    gutter.scrollTop = textarea.scrollTop;
    marks.scrollTop = textarea.scrollTop;
  }

  function showCaret() {
    const text = textarea.value;
    const at = textarea.selectionStart ?? 0;
    const before = text.slice(0, at);
    const line = before.split("\n").length;
    const column = at - before.lastIndexOf("\n");
    caret.textContent = `Ln ${line}, Col ${column}`;
  }

  /** Underline the character at `offset` and mark its line (1-based) in the gutter. */
  function markError({ line, offset }) {
    const text = textarea.value;
    errorLine = line ?? null;
    editor.classList.toggle("has-error", true);
    if (offset === null || offset === undefined || offset > text.length) {
      marks.replaceChildren(document.createTextNode(text + "\n"));
    } else {
      // A zero-width or end-of-text error still gets a visible box one character wide.
      const end = offset < text.length && text[offset] !== "\n" ? offset + 1 : offset;
      const mark = document.createElement("mark");
      mark.className = "vg-error-mark";
      mark.textContent = end > offset ? text.slice(offset, end) : " ";
      marks.replaceChildren(document.createTextNode(text.slice(0, offset)), mark, document.createTextNode(text.slice(end) + "\n"));
    }
    drawGutter();
  }

  function clearError() {
    if (errorLine === null && !editor.classList.contains("has-error")) return;
    errorLine = null;
    editor.classList.remove("has-error");
    marks.replaceChildren();
    drawGutter();
  }

  // ---- Python indentation: Tab, Shift+Tab, Enter ----

  /** Replace text[from, to) as typing would: the browser's undo history keeps the edit. */
  function replaceRange(from, to, text, selectFrom = null, selectTo = null) {
    textarea.focus();
    textarea.setSelectionRange(from, to);
    // execCommand keeps Ctrl+Z working; where it is missing, setRangeText does the edit.
    if (!document.execCommand?.("insertText", false, text)) {
      textarea.setRangeText(text, from, to, "end");
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
    }
    if (selectFrom !== null) textarea.setSelectionRange(selectFrom, selectTo ?? selectFrom);
  }

  /** The offsets of the whole lines the selection touches: [start of first, end of last). */
  function selectedLines() {
    const text = textarea.value;
    const { selectionStart: start, selectionEnd: end } = textarea;
    const from = text.lastIndexOf("\n", start - 1) + 1;
    // A selection ending at the start of a line does not take that line.
    const last = end > start && text[end - 1] === "\n" ? end - 1 : end;
    const newline = text.indexOf("\n", last);
    return [from, newline < 0 ? text.length : newline];
  }

  function indent() {
    const { selectionStart: start, selectionEnd: end } = textarea;
    const text = textarea.value;
    if (start === end || !text.slice(start, end).includes("\n")) {
      // At the caret: spaces up to the next multiple of INDENT.
      const column = start - (text.lastIndexOf("\n", start - 1) + 1);
      const spaces = " ".repeat(INDENT - (column % INDENT));
      replaceRange(start, end, spaces);
      return;
    }
    const [from, to] = selectedLines();
    const lines = text.slice(from, to).split("\n");
    const shifted = lines.map((line) => (line.trim() === "" ? line : " ".repeat(INDENT) + line)).join("\n");
    replaceRange(from, to, shifted, from, from + shifted.length);
  }

  function dedent() {
    const [from, to] = selectedLines();
    const text = textarea.value;
    const lines = text.slice(from, to).split("\n");
    const removed = lines.map((line) => (line.startsWith("\t") ? 1 : Math.min(INDENT, line.search(/[^ ]|$/))));
    if (removed.every((r) => r === 0)) return;
    const shifted = lines.map((line, i) => line.slice(removed[i])).join("\n");
    const { selectionStart: start, selectionEnd: end } = textarea;
    const single = lines.length === 1;
    replaceRange(from, to, shifted, single ? Math.max(from, start - removed[0]) : from, single ? Math.max(from, end - removed[0]) : from + shifted.length);
  }

  /** Enter: a new line at the same indentation, one level deeper after a line ending with ':'. */
  function newLine() {
    const { selectionStart: start, selectionEnd: end } = textarea;
    const text = textarea.value;
    const lineStart = text.lastIndexOf("\n", start - 1) + 1;
    const before = text.slice(lineStart, start);
    let indentation = before.match(/^[ \t]*/)[0];
    const code = before.replace(/#.*$/, "").trim(); // a rough cut: a '#' inside a string is rare here
    if (code.endsWith(":")) indentation += " ".repeat(INDENT);
    else if (/^(return|pass|break|continue|raise)\b/.test(code)) indentation = indentation.slice(0, Math.max(0, indentation.length - INDENT));
    replaceRange(start, end, "\n" + indentation);
  }

  /** Put the caret at a 0-based offset and show it. */
  function goTo(offset) {
    textarea.focus();
    const at = Math.max(0, Math.min(textarea.value.length, offset ?? 0));
    textarea.setSelectionRange(at, at);
    // Scroll the caret's line into view: the textarea does not always do it after a programmatic move.
    const line = textarea.value.slice(0, at).split("\n").length;
    const lineHeight = parseFloat(getComputedStyle(textarea).lineHeight) || 20;
    const top = rows.top(line) * lineHeight;
    if (top < textarea.scrollTop || top > textarea.scrollTop + textarea.clientHeight - lineHeight) {
      textarea.scrollTop = Math.max(0, top - textarea.clientHeight / 2);
    }
    showCaret();
    syncScroll();
  }

  rows.onChange(drawGutter); // a line added, removed, or wrapped onto more or fewer rows
  textarea.addEventListener("input", () => {
    clearError();
    rows.measure();
    showCaret();
    clearTimeout(timer);
    timer = setTimeout(() => onChange(textarea.value), DEBOUNCE_MS);
  });
  textarea.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      clearTimeout(timer);
      onRun(textarea.value);
      return;
    }
    if (event.key === "Escape") {
      tabMovesFocus = true; // the way out for keyboard users: Escape, then Tab leaves the editor
      return;
    }
    if (event.key === "Tab" && !event.ctrlKey && !event.altKey && !event.metaKey && !tabMovesFocus && !textarea.readOnly) {
      event.preventDefault();
      if (event.shiftKey) dedent();
      else indent();
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.altKey && !event.isComposing && !textarea.readOnly) {
      event.preventDefault();
      newLine();
    }
    if (event.key !== "Shift") tabMovesFocus = false;
  });
  textarea.addEventListener("pointerdown", () => {
    pointerFocus = true;
    tabMovesFocus = false;
  });
  textarea.addEventListener("focus", () => {
    tabMovesFocus = !pointerFocus;
    pointerFocus = false;
  });
  textarea.addEventListener("scroll", syncScroll);
  for (const type of ["keyup", "click", "select", "focus"]) textarea.addEventListener(type, showCaret);

  return {
    get value() {
      return textarea.value;
    },
    /** Replace the text (an example, a URL, Back/Forward) without firing onChange. */
    set value(text) {
      clearTimeout(timer);
      textarea.value = text;
      clearError();
      rows.measure();
      drawGutter();
      showCaret();
    },
    markError,
    clearError,
    goTo,
    rows,
  };
}
