// The Files panel: the text a program reads as input.txt (the API's `files`), pasted, loaded from
// disk, or the bundled list of made-up names (static/data/names.txt). Empty: no file is
// sent, and os.path.exists('input.txt') is False.

export const INPUT_NAME = "input.txt";
const TYPING_PAUSE = 400; // ms after the last keystroke before the program runs again

export function createFilesPanel(root, { onChange = () => {} } = {}) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const text = el("files-text");
  if (!text) return { files: () => ({}) };
  const summary = el("files-summary");
  let timer = null;

  function changed() {
    clearTimeout(timer);
    const lines = text.value ? text.value.split("\n").filter((line) => line.trim()).length : 0;
    summary.textContent = text.value ? `(${INPUT_NAME}: ${lines} line${lines === 1 ? "" : "s"})` : "";
    onChange();
  }

  text.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(changed, TYPING_PAUSE);
  });
  el("files-file").addEventListener("change", async (event) => {
    const file = event.target.files[0];
    if (!file) return;
    text.value = await file.text();
    changed();
  });
  const namesButton = el("files-names");
  namesButton.addEventListener("click", async () => {
    const response = await fetch(namesButton.dataset.url);
    if (!response.ok) return;
    text.value = await response.text();
    changed();
  });

  return { files: () => (text.value ? { [INPUT_NAME]: text.value } : {}) };
}
