// The Examples menu. Picking an example replaces the learner's program, so it happens only on a
// deliberate choice: a click on an option, or Enter. Arrow keys on the closed menu only move the
// choice (Chromium fires `change` for them at once), and the program that was replaced can be
// brought back with "Restore my program".

import { EXAMPLES } from "./examples.js";

/** Whether `text` is the example's program (after the text it starts with, for one that has `prepend`). */
function isExample(example, text) {
  return example.prepend ? text.endsWith(`\n${example.program}`) : example.program === text;
}

/** The text an example starts with, read from the server (micrograd's engine.py from the installed package). */
async function fetchPrepended(path) {
  try {
    const response = await fetch(new URL(path, document.baseURI));
    if (response.ok) return await response.text();
  } catch {
    // offline or refused: said in the program instead
  }
  return `# The server did not give ${path}, so this example runs on valuegraph's own Value.\n`;
}

const BROWSE_KEYS = new Set(["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "PageUp", "PageDown", "Home", "End"]);

/** `editor` has a `value`; `load(program)` runs a program the menu put in the editor. */
export function createExamplesMenu(select, { editor, load }) {
  let browsing = false; // the last change came from the keyboard: wait for Enter
  let shown = ""; // the example id whose program is in the editor ("" for the learner's own)
  let saved = null; // the program an example replaced

  select.append(new Option("Choose an example…", ""));
  let group = null;
  for (const example of EXAMPLES) {
    if (group?.label !== example.group) {
      group = select.appendChild(document.createElement("optgroup"));
      group.label = example.group;
    }
    group.append(new Option(example.title, example.id));
  }
  const restore = document.createElement("button");
  restore.type = "button";
  restore.className = "vg-link-button vg-examples-restore";
  restore.dataset.vg = "examples-restore";
  restore.textContent = "Restore my program";
  restore.hidden = true;
  select.after(restore);

  async function choose() {
    const example = EXAMPLES.find((e) => e.id === select.value);
    if (!example || example.id === shown) return;
    if (!EXAMPLES.some((e) => isExample(e, editor.value))) saved = editor.value;
    restore.hidden = saved === null;
    shown = example.id;
    const program = example.prepend ? `${await fetchPrepended(example.prepend)}\n${example.program}` : example.program;
    if (shown !== example.id) return; // another example was chosen meanwhile
    editor.value = program;
    load(program);
  }

  select.addEventListener("keydown", (event) => {
    if (BROWSE_KEYS.has(event.key)) browsing = true;
    else if (event.key === "Enter") {
      event.preventDefault();
      browsing = false;
      choose();
    }
  });
  select.addEventListener("change", () => {
    if (browsing) return; // moved with the arrows: Enter loads it
    choose();
  });
  select.addEventListener("blur", () => {
    if (browsing) select.value = shown; // a choice never loaded does not stay on show
    browsing = false;
  });
  restore.addEventListener("click", () => {
    if (saved === null) return;
    const program = saved;
    saved = null;
    restore.hidden = true;
    editor.value = program;
    sync(program);
    load(program);
  });

  /** The editor's text changed: show which example it is, if any. */
  function sync(text) {
    shown = EXAMPLES.find((e) => isExample(e, text))?.id ?? "";
    select.value = shown;
  }
  return { sync };
}
