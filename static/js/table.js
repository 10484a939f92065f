// The two step tables (stage 1's pops, stage 2's walk), kept in step with the player, one row
// per step at the level shown (a folded box's run is one row), numbered as the player counts.
// Long walks render a window of rows around the current step rather than thousands of rows.

import { grouped } from "./format.js";
import { levelTableRow } from "./timeline.js";

const WINDOW = 80; // rows drawn at most per table (a window of a long walk is re-drawn as the step moves)

export function createTables(root, { onJump = () => {} } = {}) {
  const parts = {
    sort: { wrap: root.querySelector('[data-vg="sort-wrap"]'), body: root.querySelector('[data-vg="sort-table"] tbody') },
    propagate: { wrap: root.querySelector('[data-vg="propagate-wrap"]'), body: root.querySelector('[data-vg="propagate-table"] tbody') },
  };
  let tl = null;
  let levels = null; // the level steps (timeline.js's levelTimeline): rows are level steps
  let current = null; // the highlighted <tr>
  const rowKeys = new WeakMap(); // a drawn <tr> -> what it shows (stepRow's and gapRow's key)
  const windows = { sort: null, propagate: null }; // [first, last] step drawn

  for (const part of Object.values(parts)) {
    part.body.addEventListener("click", (event) => {
      const row = event.target.closest("tr[data-step]");
      if (row && part.body.contains(row)) onJump(Number(row.dataset.step));
    });
  }

  function range(stage) {
    return stage === "sort" ? [0, levels.sortEnd] : [levels.propagateStart, levels.last];
  }

  function renderWindow(stage, around) {
    const [first, last] = range(stage);
    let from = first;
    let to = last;
    if (last - first + 1 > WINDOW) {
      from = Math.max(first, Math.min(around - WINDOW / 2, last - WINDOW + 1));
      to = from + WINDOW - 1;
    }
    const { body } = parts[stage];
    const doc = body.ownerDocument;
    const wanted = [];
    if (from > first) wanted.push(gapRow(doc, from - first, "earlier"));
    for (let k = from; k <= to; k++) wanted.push(stepRow(doc, stage, k, levelTableRow(tl, levels, k).cells));
    if (to < last) wanted.push(gapRow(doc, last - to, "later"));
    keepRows(body, wanted);
    windows[stage] = [from, to];
  }

  /** A row to draw: what it shows (its key) and how to make it. */
  function stepRow(doc, stage, k, cells) {
    const make = () => {
      const tr = doc.createElement("tr");
      tr.dataset.step = String(k);
      cells.forEach((text, i) => {
        const cell = doc.createElement(i === 0 ? "th" : "td");
        if (i === 0) {
          cell.scope = "row";
          const button = doc.createElement("button");
          button.type = "button";
          button.className = "vg-row-button";
          button.textContent = text;
          button.setAttribute("aria-label", `Go to stage ${stage === "sort" ? 1 : 2}, step ${text}`);
          cell.append(button);
        } else {
          cell.textContent = text;
        }
        tr.append(cell);
      });
      return tr;
    };
    return { key: `${k}\u0000${cells.join("\u0000")}`, make };
  }

  function gapRow(doc, count, where) {
    const make = () => {
      const tr = doc.createElement("tr");
      tr.className = "vg-gap-row";
      const td = doc.createElement("td");
      td.colSpan = 5;
      td.textContent = `… ${grouped(count)} ${where} steps (move the scrubber to see them)`;
      tr.append(td);
      return tr;
    };
    return { key: `gap\u0000${count}\u0000${where}`, make };
  }

  /**
   * Shows the wanted rows in the body, keeping each drawn row that already shows the same in its
   * place: opening a box redraws the tables, and new rows make the browser lay the whole table out
   * again (9–18 ms a table at 100,000 nodes) even where their text is what it was.
   */
  function keepRows(body, wanted) {
    const drawn = [...body.children];
    const same = wanted.map((row, i) => i < drawn.length && rowKeys.get(drawn[i]) === row.key);
    if (same.every(Boolean) && drawn.length === wanted.length) return;
    const made = (row) => {
      const tr = row.make();
      rowKeys.set(tr, row.key);
      return tr;
    };
    if (!same.some(Boolean)) {
      const fragment = body.ownerDocument.createDocumentFragment();
      for (const row of wanted) fragment.append(made(row));
      body.replaceChildren(fragment);
      return;
    }
    wanted.forEach((row, i) => {
      if (same[i]) return;
      if (i < drawn.length) drawn[i].replaceWith(made(row));
      else body.append(made(row));
    });
    for (let i = wanted.length; i < drawn.length; i++) drawn[i].remove();
  }

  /** A walk at a level (timeline and its levelTimeline). */
  function setTimeline(timeline, levelSteps) {
    tl = timeline;
    levels = levelSteps;
    unmark(); // the row may be kept, and the step it showed may be another row now
    renderWindow("sort", 0);
    renderWindow("propagate", levels.propagateStart);
  }

  /** Highlight level step k's row and scroll its table (not the page) to show it. */
  function show(k) {
    if (!tl) return;
    const stage = k >= levels.propagateStart ? "propagate" : "sort";
    const [from, to] = windows[stage];
    if (k < from || k > to) renderWindow(stage, k);
    unmark();
    current = parts[stage].body.querySelector(`tr[data-step="${k}"]`);
    if (!current) return;
    current.classList.add("is-current");
    current.setAttribute("aria-current", "step");
    // Measured just after the next paint, when the layout is already done (measuring now would
    // force a layout of the whole page in the middle of drawing a big graph); scrolled in the frame
    // after that: scrolling just after a paint waits for the compositor to take that frame.
    const row = current;
    const wrap = parts[stage].wrap;
    requestAnimationFrame(() =>
      setTimeout(() => {
        const top = scrollTarget(wrap, row);
        if (top !== null) requestAnimationFrame(() => {
            if (row === current) wrap.scrollTop = top;
          });
      }, 0),
    );
  }

  function unmark() {
    if (current) {
      current.classList.remove("is-current");
      current.removeAttribute("aria-current");
    }
    current = null;
  }

  /** Where the box should scroll to show the row, or null where it shows it already. */
  function scrollTarget(wrap, row) {
    if (!row.isConnected) return null;
    // Positions inside the scrolled box; the sticky header covers the top of it.
    const box = wrap.getBoundingClientRect();
    const rowBox = row.getBoundingClientRect();
    const header = row.closest("table").tHead?.getBoundingClientRect().height ?? 0;
    const top = rowBox.top - box.top + wrap.scrollTop;
    const bottom = top + rowBox.height;
    if (top - header < wrap.scrollTop) return top - header - 4;
    if (bottom > wrap.scrollTop + wrap.clientHeight) return bottom - wrap.clientHeight + 4;
    return null;
  }

  return { setTimeline, show };
}
