// Export from the page: the graph as SVG or PNG (as it stands at the current step), the API's
// JSON, the two step tables as CSV, and the self-contained HTML file made by POST /export/html
// (for TypeScript/JavaScript, from the graph the code made: the file plays it and runs no code).
// The running page is found on its root element (main.js puts it there as root.valuegraph).

import { fetchStandalone } from "./api.js";
import { programRequest } from "./state.js";
import { levelFrameAt, tableRow } from "./timeline.js";

// The properties a drawn graph needs to look the same without the page's stylesheet.
const STYLE_PROPERTIES = [
  "fill", "fill-opacity", "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray", "stroke-linecap", "stroke-linejoin",
  "opacity", "display", "visibility", "font-family", "font-size", "font-weight", "font-style", "text-anchor",
  "dominant-baseline", "paint-order", "marker-end", "marker-start",
];
const SVG_NS = "http://www.w3.org/2000/svg";
const MARGIN = 32;
const PNG_SCALE = 2;
const TABLE_HEADERS = {
  sort: ["step", "pop", "what happens", "stack after", "sorted list"],
  propagate: ["step", "i", "node", ".grad", "what happens"],
};

const NOTE_FONT = 13; // px, the caption and legend under an exported graph
const NOTE_LINE = 18;

/**
 * What an exported picture says under the graph: the step, its caption and the legend
 * (`app` is the running page: main.js's startValuegraph).
 */
export function exportNotes(app) {
  const tl = app.timeline;
  if (!tl) return null;
  const k = app.controls.step;
  const legend = [
    ["vg-data", "data: the value"],
    ["vg-grad", "grad: d output / d value, as far as the walk has gone"],
    ["vg-edge-text", "number on an edge: its local gradient"],
    ["vg-update", "dashed edge and callout: the update this step makes, child.grad += local × grad"],
    ["vg-nonfinite", "NaN, ∞ or −∞"],
  ];
  if (app.svg.closest(".vg-grad-encoding")) legend.push(["vg-flow", "edge width: |local × grad| passed along it; green adds, red subtracts"]);
  // As the player shows it: the step at the level shown (a folded box's run is one step).
  const levels = app.levels;
  const j = levels.levelOf[k];
  return { title: `Step ${j} / ${levels.last}`, caption: levelFrameAt(tl, levels, j).caption, legend };
}

/** Lines of at most `width` px of text (estimated per character). */
function wrap(text, width) {
  const perLine = Math.max(20, Math.floor(width / (NOTE_FONT * 0.56)));
  const lines = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && (line + " " + word).length > perLine) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** The colour a class gives its text or line on the page (the legend's swatches). */
function swatchColour(svg, className) {
  const probe = document.createElementNS(SVG_NS, "text");
  probe.setAttribute("class", className === "vg-update" ? "vg-grad" : className === "vg-flow" ? "vg-edge-text" : className);
  svg.querySelector(".vg-viewport").append(probe);
  const colour = getComputedStyle(probe).fill;
  probe.remove();
  return colour;
}

/** The notes as SVG elements under the graph, from y down; returns the height they take. */
function appendNotes(svg, copy, notes, x, y, width) {
  const group = document.createElementNS(SVG_NS, "g");
  group.setAttribute("data-export", "notes");
  const ink = getComputedStyle(svg).color || "#1a2130";
  let dy = 0;
  const line = (text, { bold = false, colour = ink, indent = 0 } = {}) => {
    const t = document.createElementNS(SVG_NS, "text");
    t.setAttribute("x", String(x + indent));
    t.setAttribute("y", String(y + dy + NOTE_FONT));
    t.style.setProperty("font-family", "system-ui, sans-serif");
    t.style.setProperty("font-size", `${NOTE_FONT}px`);
    t.style.setProperty("fill", colour);
    if (bold) t.style.setProperty("font-weight", "700");
    t.textContent = text;
    group.append(t);
    dy += NOTE_LINE;
    return t;
  };
  line(notes.title, { bold: true });
  for (const text of wrap(notes.caption, width)) line(text);
  dy += 6;
  for (const [className, text] of notes.legend) {
    const swatch = document.createElementNS(SVG_NS, "rect");
    for (const [name, value] of [["x", x], ["y", y + dy + 2], ["width", 22], ["height", 10], ["rx", 3]]) swatch.setAttribute(name, String(value));
    swatch.style.setProperty("fill", swatchColour(svg, className));
    group.append(swatch);
    line(text, { indent: 30 }).setAttribute("data-legend", className);
  }
  copy.append(group);
  return dy;
}

/** A standalone copy of the graph's SVG: computed styles inlined, the whole graph in view, and
 * under it, when given (exportNotes), the step, its caption and a legend. */
export function standaloneSvg(svg, notes = null) {
  const viewport = svg.querySelector(".vg-viewport");
  const box = viewport.getBBox();
  const copy = svg.cloneNode(true);
  copy.querySelector(".vg-viewport").removeAttribute("transform"); // the whole graph, not the zoomed view
  const originals = [svg, ...svg.querySelectorAll("*")];
  const copies = [copy, ...copy.querySelectorAll("*")];
  originals.forEach((original, i) => {
    const computed = getComputedStyle(original);
    // Through the CSSOM: the page's policy blocks style attributes set as markup.
    for (const name of STYLE_PROPERTIES) copies[i].style.setProperty(name, computed.getPropertyValue(name));
    copies[i].removeAttribute("class");
    copies[i].removeAttribute("tabindex");
  });
  const width = Math.ceil(Math.max(box.width, notes ? 420 : 0) + 2 * MARGIN);
  const notesHeight = notes ? appendNotes(svg, copy, notes, box.x, box.y + box.height + MARGIN, width - 2 * MARGIN) + MARGIN / 2 : 0;
  const height = Math.ceil(box.height + 2 * MARGIN + notesHeight);
  copy.setAttribute("xmlns", SVG_NS);
  copy.setAttribute("width", String(width));
  copy.setAttribute("height", String(height));
  copy.setAttribute("viewBox", `${box.x - MARGIN} ${box.y - MARGIN} ${width} ${height}`);
  const background = document.createElementNS(SVG_NS, "rect");
  for (const [name, value] of [["x", box.x - MARGIN], ["y", box.y - MARGIN], ["width", width], ["height", height]]) background.setAttribute(name, String(value));
  background.setAttribute("fill", getComputedStyle(svg.parentElement).backgroundColor || "#ffffff");
  copy.insertBefore(background, copy.firstChild.nextSibling);
  return { text: new XMLSerializer().serializeToString(copy), width, height };
}

/** The graph as a PNG blob, drawn from the standalone SVG. */
export async function pngBlob(svg, notes = null) {
  const { text, width, height } = standaloneSvg(svg, notes);
  const url = URL.createObjectURL(new Blob([text], { type: "image/svg+xml" }));
  try {
    const image = new Image();
    image.src = url;
    await image.decode();
    const canvas = document.createElement("canvas");
    canvas.width = width * PNG_SCALE;
    canvas.height = height * PNG_SCALE;
    const context = canvas.getContext("2d");
    context.scale(PNG_SCALE, PNG_SCALE);
    context.drawImage(image, 0, 0, width, height);
    return await new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** The response in the wire format again: non-finite numbers as the strings "NaN", "Infinity", "-Infinity". */
export function responseJson(model) {
  return JSON.stringify(model, (key, value) => (typeof value === "number" && !Number.isFinite(value) ? String(value) : value), 2);
}

function csvCell(text) {
  const s = String(text);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** One stage's table ("sort" or "propagate") as CSV, the same rows as the page's table. */
export function tableCsv(tl, stage) {
  const lines = [TABLE_HEADERS[stage].map(csvCell).join(",")];
  for (let k = 0; k <= tl.last; k++) {
    const row = tableRow(tl, k);
    if (row.stage === stage) lines.push(row.cells.map(csvCell).join(","));
  }
  return lines.join("\r\n") + "\r\n";
}

export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} kB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * The request the file is made from: the program's (state.js), or for TypeScript/JavaScript run in
 * the page, the graph the code made with the code beside it (`source`, shown and never run).
 */
export function exportRequest(shown) {
  if (shown.graph) return { graph: shown.graph, source: shown.expression };
  return programRequest(shown).request;
}

export function wireExports(root) {
  const app = root.valuegraph;
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const htmlButton = el("export-html");
  const status = el("export-status");
  const say = (text) => {
    status.textContent = text;
  };
  let standalone = null; // {key, blob} for the program it was made from

  const menu = el("export-menu");
  const closeMenu = () => {
    menu.open = false;
  };
  // The menu closes as a menu does: once a file is on its way (a failure stays shown in it), on Escape
  // (without leaving presenter mode), and on a press anywhere else.
  const guarded = (fn) => async () => {
    if (!app.model || !app.timeline) return say("Nothing to export yet.");
    try {
      await fn();
      closeMenu();
    } catch (error) {
      say(`Export failed: ${error.message}`);
    }
  };
  menu.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || !menu.open) return;
    event.stopPropagation();
    closeMenu();
    menu.querySelector("summary").focus();
  });
  document.addEventListener("pointerdown", (event) => {
    if (menu.open && !menu.contains(event.target)) closeMenu();
  });
  el("export-svg").addEventListener("click", guarded(() => download(new Blob([standaloneSvg(app.svg, exportNotes(app)).text], { type: "image/svg+xml" }), `valuegraph-step-${app.controls.step}.svg`)));
  el("export-png").addEventListener("click", guarded(async () => download(await pngBlob(app.svg, exportNotes(app)), `valuegraph-step-${app.controls.step}.png`)));
  el("export-json").addEventListener("click", guarded(() => download(new Blob([responseJson(app.model)], { type: "application/json" }), "valuegraph.json")));
  el("export-csv-sort").addEventListener("click", guarded(() => download(new Blob([tableCsv(app.timeline, "sort")], { type: "text/csv" }), "valuegraph-sort.csv")));
  el("export-csv-propagate").addEventListener("click", guarded(() => download(new Blob([tableCsv(app.timeline, "propagate")], { type: "text/csv" }), "valuegraph-propagate.csv")));

  // The file is made when the menu opens, so the button can say its size before it is pressed. It
  // holds the graph on screen: the request made from the page's view state (state.js), every
  // program field included, at the step shown, with its boxes as on screen and as it opened.
  async function prepareStandalone() {
    const shown = app.shown();
    const request = exportRequest(shown);
    const files = shown.graph ? {} : (app.files?.() ?? {}); // what the program reads (the Files panel): the file holds its answer
    if (Object.keys(files).length) request.files = files;
    const views = app.scopes.exportViews(); // laid out into the file, which has no server to ask
    if (views.length) request.views = views;
    const key = JSON.stringify([request, shown.step]);
    if (standalone?.key === key) return standalone.blob;
    htmlButton.textContent = "Self-contained HTML (preparing…)";
    const blob = await fetchStandalone(request, shown.step);
    standalone = { key, blob };
    htmlButton.textContent = `Self-contained HTML (${formatSize(blob.size)})`;
    htmlButton.dataset.size = String(blob.size);
    return blob;
  }
  menu.addEventListener("toggle", (event) => {
    if (event.target.open) keepInView(event.target.querySelector(".vg-export-list"));
    if (event.target.open && app.model) prepareStandalone().catch((error) => say(`Export failed: ${error.message}`));
  });
  htmlButton.addEventListener("click", guarded(async () => download(await prepareStandalone(), "valuegraph.html")));
}

/**
 * The open menu kept inside the window: it hangs from its button's right edge, which on a phone is too near
 * the left for the list's width; there it starts a small gap from the window's left edge instead, and grows
 * rightwards as its file's size is written in.
 */
function keepInView(list) {
  const gap = 8;
  list.style.left = list.style.right = "";
  if (list.getBoundingClientRect().left >= gap) return;
  list.style.right = "auto";
  list.style.left = `${gap - list.parentElement.getBoundingClientRect().left}px`;
}

const root = document.querySelector("[data-valuegraph]");
if (root?.valuegraph && root.querySelector('[data-vg="export-menu"]')) wireExports(root);
