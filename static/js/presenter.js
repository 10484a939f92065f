// Presenter mode, for projectors: the graph, the player and the walk fill the screen (fullscreen
// where the browser allows it), and a text-size control sets how large the camera keeps a
// record's numbers (and the caption) while it follows the walk.

import { make } from "./courseapi.js";

const TEXT_SIZES = [12, 16, 20, 24, 32]; // CSS px of a record's data and grad while following
const DEFAULT_SIZE = 20;

/** Put the Presenter button and its text-size control after `anchor`; `camera` follows the walk. */
export function addPresenter(app, anchor, camera) {
  const doc = anchor.ownerDocument;
  const button = make("button", {
    className: anchor.className.replace(/\bvg-touch-only\b/, "").trim(),
    text: "Presenter",
    attrs: { type: "button", "data-vg": "presenter", title: "Fill the screen with the graph and the player, with larger text (Esc leaves)", "aria-pressed": "false" },
  });

  const sizeBox = make("label", { className: "vg-text-size", text: "Text " });
  const size = make("select", { attrs: { "data-vg": "text-size" } });
  for (const px of TEXT_SIZES) size.append(new Option(`${px} px`, String(px), false, px === DEFAULT_SIZE));
  sizeBox.append(size);
  anchor.after(button, sizeBox);

  let normalSize = camera.textSize;
  // What the presenter's screen covers (the header, Teach live, the footer): inert meanwhile, so that Tab
  // does not move the focus behind it. Only what was not inert already is given back.
  let covered = [];
  const cover = (on) => {
    if (!on) {
      for (const element of covered) element.inert = false;
      covered = [];
      return;
    }
    for (let node = app; node !== doc.body && node.parentElement; node = node.parentElement) {
      for (const sibling of node.parentElement.children) {
        if (sibling !== node && !sibling.inert && sibling.tagName !== "SCRIPT") covered.push(sibling);
      }
    }
    for (const element of covered) element.inert = true;
  };
  const apply = () => {
    const px = Number(size.value);
    app.style.setProperty("--vg-presenter-scale", String(px / DEFAULT_SIZE * 1.25));
    camera.setTextSize(px);
  };

  function set(on) {
    if (on === app.classList.contains("vg-presenter")) return;
    app.classList.toggle("vg-presenter", on);
    button.setAttribute("aria-pressed", String(on));
    button.textContent = on ? "Leave presenter" : "Presenter";
    cover(on);
    if (on) {
      normalSize = camera.textSize;
      apply();
      if (doc.fullscreenEnabled && !doc.fullscreenElement) doc.documentElement.requestFullscreen().catch(() => {});
    } else {
      app.style.removeProperty("--vg-presenter-scale");
      camera.setTextSize(normalSize);
      if (doc.fullscreenElement) doc.exitFullscreen().catch(() => {});
    }
  }

  button.addEventListener("click", () => {
    const on = !app.classList.contains("vg-presenter");
    set(on);
    // Space then plays, as it does everywhere but on a button: on this one it would leave presenter mode.
    const play = app.querySelector('[data-vg="play"]');
    if (on) (play && !play.disabled ? play : app.querySelector('[data-vg="caption"]'))?.focus();
  });
  size.addEventListener("change", apply);
  doc.addEventListener("fullscreenchange", () => {
    if (!doc.fullscreenElement) set(false); // Esc left fullscreen: leave presenter mode too
  });
  doc.addEventListener("keydown", (event) => {
    // Not when the Escape closed something first (a node's story card: main.js).
    if (event.key === "Escape" && !event.defaultPrevented && app.classList.contains("vg-presenter")) set(false);
  });
  return { set };
}
