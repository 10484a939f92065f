// The loss curve under the program: one point per backward() call of a Python program (the API's
// `runs`: the call's line and the output's data then), drawn with D3. The point whose graph is
// shown is marked; choosing another point asks for that call's graph and walk (onPick(index)).
// Keyboard: the points are one composite control (one Tab stop, the arrow keys move between
// points, Enter or Space opens one), each point a button named by its call, line and value.
// Also here: the lines the program printed, shown as text.

import d3 from "./d3.js";
import { asTerminalShows, formatNumber, grouped } from "./format.js";

const WIDTH = 320; // about the program column's width, so its 11 px labels stay near 11 px
const HEIGHT = 150;
const MARGIN = { top: 12, right: 14, bottom: 26, left: 48 };
const PRINTED_SHOWN = 2000; // lines of printed output put on the page

export function createLossCurve(root, { onPick = () => {} } = {}) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const box = el("runs");
  const chart = el("loss-curve");
  const summary = el("runs-summary");
  const printedBox = el("printed-box");
  const printed = el("printed");
  const hint = el("runs-hint");
  if (!box || !chart) return { show: () => {}, clear: () => {} };
  const curve = createCurveChart(chart, { onPick, label: "Loss curve: the output's data at each backward() call" });

  function show(response) {
    showPrinted(response.printed ?? []);
    const runs = response.runs ?? [];
    const current = response.run ?? null;
    box.hidden = runs.length === 0;
    if (box.hidden) return;
    const shown = runs[current];
    const plural = runs.length === 1 ? "" : "s";
    summary.textContent = `${grouped(runs.length)} backward() call${plural}; the graph is from call ${grouped(current + 1)} (line ${shown.line}), loss ${formatNumber(shown.data)}` + carriedNote(response.grads_carried);
    // One point is no curve: the sentence says it all.
    for (const part of [chart, hint]) if (part) part.hidden = runs.length < 2;
    if (runs.length >= 2) curve.draw(runs, current);
  }

  function clear() {
    box.hidden = true;
    showPrinted([]);
  }

  function showPrinted(lines) {
    if (!printedBox) return;
    printedBox.hidden = lines.length === 0;
    const more = lines.length - PRINTED_SHOWN;
    const shown = lines.slice(0, PRINTED_SHOWN).map(asTerminalShows);
    printed.textContent = shown.join("\n") + (more > 0 ? `\n… ${grouped(more)} more lines` : "");
  }

  return { show, clear };
}

/** What the summary adds when the call shown began with grads left by earlier calls (the API's grads_carried). */
function carriedNote(carried) {
  if (!carried) return "";
  const values = carried === 1 ? "1 of its values" : `${grouped(carried)} of its values`;
  return `. The walk shown starts every grad at 0, but ${values} held grads from earlier calls, which the program's own backward added to: the grads it prints differ from the ones shown.`;
}

/**
 * A loss curve drawn in `chart` (an element): draw(runs, current) draws the points {line, data}
 * and marks the one at index `current` (null: none); choosing a point calls onPick(index). The
 * page's curve and a job's live curve (jobpanel.js) are both this chart.
 */
export function createCurveChart(chart, { onPick, label }) {
  const svg = d3.select(chart).append("svg").attr("class", "vg-loss-svg").attr("viewBox", `0 0 ${WIDTH} ${HEIGHT}`)
    .attr("role", "group").attr("aria-label", label);
  const axes = svg.append("g").attr("class", "vg-loss-axes");
  const path = svg.append("path").attr("class", "vg-loss-line");
  // Under the points: a click between points (a long run's are closer than a finger) opens the nearest.
  const catcher = svg.append("rect").attr("class", "vg-loss-catcher").attr("x", MARGIN.left).attr("y", MARGIN.top)
    .attr("width", WIDTH - MARGIN.left - MARGIN.right).attr("height", HEIGHT - MARGIN.top - MARGIN.bottom);
  const points = svg.append("g").attr("class", "vg-loss-points");
  let runs = [];
  let xScale = null;

  function draw(shownRuns, current) {
    runs = shownRuns;
    const finite = runs.map((r) => r.data).filter(Number.isFinite);
    const [low, high] = finite.length ? d3.extent(finite) : [0, 1];
    const pad = high === low ? Math.max(1, Math.abs(high)) * 0.1 : 0;
    const x = (xScale = d3.scaleLinear().domain([0, Math.max(1, runs.length - 1)]).range([MARGIN.left, WIDTH - MARGIN.right]));
    // Each point's target reaches halfway to its neighbours, so none covers another.
    const reach = Math.max(1, Math.min(11, (x(1) - x(0)) / 2));
    const y = d3.scaleLinear().domain([low - pad, high + pad]).nice().range([HEIGHT - MARGIN.bottom, MARGIN.top]);
    // NaN and ±∞ sit on the chart's edge and break the line.
    const yOf = (v) => (Number.isFinite(v) ? y(v) : v === -Infinity ? HEIGHT - MARGIN.bottom : MARGIN.top);

    axes.selectAll("*").remove();
    const ticks = Math.min(runs.length, 8);
    axes.append("g").attr("transform", `translate(0,${HEIGHT - MARGIN.bottom})`)
      .call(d3.axisBottom(x).ticks(ticks).tickFormat((i) => (Number.isInteger(i) ? String(i + 1) : "")));
    axes.append("g").attr("transform", `translate(${MARGIN.left},0)`).call(d3.axisLeft(y).ticks(4).tickFormat((v) => formatNumber(v, 3)));
    axes.attr("aria-hidden", "true");
    path.attr("d", d3.line().defined((r) => Number.isFinite(r.data)).x((_, i) => x(i)).y((r) => y(r.data))(runs));

    // One Tab stop: the point shown, else the one that has the focus, else the first.
    const focused = indexOf({ target: document.activeElement });
    const tabStop = current ?? focused ?? 0;
    const point = points.selectAll("g.vg-loss-point").data(runs).join((enter) => {
      const g = enter.append("g").attr("class", "vg-loss-point").attr("role", "button");
      g.append("circle").attr("class", "vg-loss-hit");
      g.append("circle").attr("class", "vg-loss-dot");
      g.append("title");
      return g;
    });
    point
      .attr("transform", (r, i) => `translate(${x(i)},${yOf(r.data)})`)
      .attr("data-run", (_, i) => i)
      .attr("tabindex", (_, i) => (i === tabStop ? 0 : -1))
      .attr("aria-pressed", (_, i) => String(i === current))
      .attr("aria-label", (r, i) => `backward() call ${i + 1} of ${runs.length}, line ${r.line}: loss ${formatNumber(r.data)}${i === current ? " (shown)" : ""}`)
      .classed("is-current", (_, i) => i === current)
      .classed("vg-nonfinite", (r) => !Number.isFinite(r.data));
    point.select(".vg-loss-hit").attr("r", reach);
    point.select(".vg-loss-dot").attr("r", Math.min(4.5, Math.max(1.5, reach)));
    point.select("title").text((r, i) => `call ${i + 1} (line ${r.line}): ${formatNumber(r.data)}`);
  }

  function indexOf(event) {
    const g = event.target?.closest?.("[data-run]");
    return g && points.node().contains(g) ? Number(g.dataset.run) : null;
  }

  function focusPoint(i) {
    const target = points.node().querySelector(`[data-run="${i}"]`);
    if (!target) return;
    for (const g of points.node().querySelectorAll("[data-run]")) g.setAttribute("tabindex", g === target ? "0" : "-1");
    target.focus();
  }

  catcher.on("click", (event) => {
    if (!runs.length) return;
    const [at] = d3.pointer(event, svg.node());
    onPick(Math.max(0, Math.min(runs.length - 1, Math.round(xScale.invert(at)))));
  });
  points.on("click", (event) => {
    const i = indexOf(event);
    if (i !== null) onPick(i);
  });
  points.on("keydown", (event) => {
    const i = indexOf(event);
    if (i === null) return;
    const moves = { ArrowLeft: i - 1, ArrowDown: i - 1, ArrowRight: i + 1, ArrowUp: i + 1, Home: 0, End: runs.length - 1 };
    if (event.key in moves) {
      event.preventDefault();
      event.stopPropagation(); // the player's arrow keys step the walk; here they move between points
      focusPoint(Math.max(0, Math.min(runs.length - 1, moves[event.key])));
    } else if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      event.stopPropagation();
      onPick(i);
    }
  });

  return { draw };
}
