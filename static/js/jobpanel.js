// The job panel (the drawing; jobs.js holds the data): a job's status, a progress bar of
// backward() calls done (of the expected total when known) with the time left, Cancel, its live
// loss curve (losscurve.js's chart: a point opens that call's graph, onPick(index)), the lines it
// printed as a terminal shows them, and why it failed. Everything the program wrote is set as text.

import { grouped } from "./format.js";
import { progressOf, shownLines } from "./jobs.js";
import { createCurveChart } from "./losscurve.js";

const PRINTED_SHOWN = 200; // the last lines printed, as a terminal's scrollback keeps them

const STATUS_TEXT = {
  queued: "Queued: waiting for a worker…",
  running: "Running",
  done: "Done",
  failed: "Failed",
  cancelled: "Cancelled",
};

/** "1 min 5 s", "12 s", "under a second". */
export function duration(seconds) {
  if (seconds < 1) return "under a second";
  const whole = Math.round(seconds);
  if (whole < 60) return `${whole} s`;
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) return `${minutes} min ${whole % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function createJobPanel(root, { onPick = () => {}, onCancel = () => {}, onGoTo = () => {} } = {}) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const box = el("job");
  if (!box) return null; // a page without jobs (the embed, the exported file)
  const statusText = el("job-status");
  const bar = el("job-progress");
  const fill = el("job-progress-fill");
  const counts = el("job-counts");
  const cancel = el("job-cancel");
  const errorBox = el("job-error");
  const errorMessage = el("job-error-message");
  const errorGoto = el("job-error-goto");
  const curveBox = el("job-curve");
  const hint = el("job-hint");
  const printedBox = el("job-printed-box");
  const printed = el("job-printed");
  const curve = createCurveChart(curveBox, { onPick: (index) => onPick(index), label: "The job's loss curve: the output's data at each backward() call" });
  let shownStatus = null;

  cancel.addEventListener("click", () => onCancel());
  errorGoto.addEventListener("click", () => onGoTo());

  /** Draws `job` (jobs.js) as of `now` (ms); `open` is the index of the call whose graph is in the main view, or null. */
  function show(job, now, open = null) {
    box.hidden = false;
    const { done, total, fraction, secondsLeft, elapsed } = progressOf(job, now);
    if (job.status !== shownStatus) statusText.textContent = STATUS_TEXT[job.status] ?? job.status; // read out once per change
    shownStatus = job.status;

    bar.setAttribute("aria-valuemin", "0");
    if (total === null) {
      // Unknown total: an indeterminate bar, its text the count so far.
      bar.removeAttribute("aria-valuemax");
      bar.removeAttribute("aria-valuenow");
      bar.classList.add("is-indeterminate");
      fill.style.width = "";
    } else {
      bar.setAttribute("aria-valuemax", String(total));
      bar.setAttribute("aria-valuenow", String(done));
      bar.classList.remove("is-indeterminate");
      fill.style.width = `${(100 * (fraction ?? 1)).toFixed(2)}%`;
    }
    const calls = total === null ? `${grouped(done)} backward() call${done === 1 ? "" : "s"}` : `${grouped(done)} of ${grouped(total)} backward() calls`;
    bar.setAttribute("aria-valuetext", calls);
    const parts = [calls, `${grouped(job.statements)} statements`, `${duration(elapsed)} so far`];
    if (secondsLeft !== null) parts.push(`about ${duration(secondsLeft)} left`);
    else if (job.status === "running" && total === null) parts.push("time left unknown (the program does not say how many calls it makes)");
    counts.textContent = parts.join(" · ");

    cancel.hidden = !(job.status === "queued" || job.status === "running");

    errorBox.hidden = job.error === null;
    if (job.error) {
      errorMessage.textContent = job.error.message;
      errorGoto.textContent = `Go to line ${job.error.line}, column ${job.error.column}`;
    }

    curveBox.hidden = job.runs.length === 0;
    hint.hidden = job.runs.length === 0;
    if (job.runs.length) curve.draw(job.runs, open);

    const lines = shownLines(job);
    printedBox.hidden = lines.length === 0;
    const more = lines.length - PRINTED_SHOWN;
    const atBottom = printed.scrollTop + printed.clientHeight >= printed.scrollHeight - 4;
    printed.textContent = (more > 0 ? `… ${grouped(more)} earlier lines\n` : "") + lines.slice(-PRINTED_SHOWN).join("\n");
    if (atBottom) printed.scrollTop = printed.scrollHeight; // follows the output, as a terminal does, unless scrolled back
  }

  return { show };
}
