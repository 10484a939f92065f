// The "Share / embed" dialog: the page's link, an iframe snippet for the embed with the options
// chosen in the dialog, and a live preview of that embed. Both links are made from the page's view
// state (state.js). All text is set as text or as values.

import { embedSearch, stateSearch } from "./state.js";
import { stageBounds } from "./timeline.js";

// Each option's default, as app/export/options.py's EmbedOptions has it; defaults stay out of the URL.
const EMBED_DEFAULTS = { stage: "both", controls: "full", editor: "shown", theme: "auto", table: "hidden", autoplay: "false" };
const PREVIEW_DELAY_MS = 300;

/** The /embed URL for a view state and the dialog's options. */
export function embedUrl(origin, state, options) {
  return `${origin}/embed${embedSearch(state, options, EMBED_DEFAULTS)}`;
}

/**
 * The page's step as the embed counts it for the stage chosen (its `step` counts from the stage's first
 * step; timeline.js's stageBounds): a step outside that stage is the nearest of its own.
 */
export function stepInStage(step, stage, timeline) {
  if (!timeline || !step) return step;
  const [first, last] = stageBounds(timeline, stage);
  return Math.min(last, Math.max(first, step)) - first;
}

export function iframeSnippet(url, height = 640) {
  const escaped = url.replaceAll("&", "&amp;").replaceAll('"', "&quot;");
  return `<iframe src="${escaped}" title="valuegraph: reverse-mode autodiff, step by step" width="100%" height="${height}" style="border: 0" loading="lazy"></iframe>`;
}

export function wireShare(root) {
  const app = root.valuegraph;
  const el = (name) => root.ownerDocument.querySelector(`[data-vg="${name}"]`);
  const dialog = el("share-dialog");
  const link = el("share-link");
  const snippet = el("share-snippet");
  const preview = el("share-preview");
  const form = el("share-options");
  let previewTimer = null;

  function options() {
    const chosen = {};
    for (const name of Object.keys(EMBED_DEFAULTS)) {
      const field = form.elements.namedItem(name);
      chosen[name] = field.type === "checkbox" ? String(field.checked) : field.value;
    }
    return chosen;
  }

  function update({ reload = true } = {}) {
    const state = app.view();
    link.value = `${window.location.origin}${window.location.pathname}${stateSearch(state)}`;
    const chosen = options();
    const url = embedUrl(window.location.origin, { ...state, step: stepInStage(state.step, chosen.stage, app.timeline) }, chosen);
    snippet.value = iframeSnippet(url);
    snippet.dataset.url = url;
    if (!reload) return;
    clearTimeout(previewTimer);
    previewTimer = setTimeout(() => {
      preview.src = url;
    }, PREVIEW_DELAY_MS);
  }

  el("share-open").addEventListener("click", () => {
    app.controls.pause();
    update();
    dialog.showModal();
  });
  el("share-close").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => {
    clearTimeout(previewTimer);
    preview.src = "about:blank";
  });
  form.addEventListener("change", () => update());
  for (const [button, field] of [[el("share-copy-link"), link], [el("share-copy-snippet"), snippet]]) {
    button.addEventListener("click", async () => {
      field.select();
      try {
        await navigator.clipboard.writeText(field.value);
        button.textContent = "Copied";
      } catch {
        button.textContent = "Press Ctrl+C";
      }
      setTimeout(() => (button.textContent = "Copy"), 1500);
    });
  }
}

const root = document.querySelector("[data-valuegraph]");
if (root?.valuegraph && document.querySelector('[data-vg="share-dialog"]')) wireShare(root);
