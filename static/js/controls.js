// The player: the one timer, the buttons, the scrubber, the speed and the keyboard shortcuts.
// It knows step numbers only; what a step shows is the caller's business (onStep).
// It steps through the walk at the level shown (timeline.js's levelTimeline: with boxes folded, a
// box's run of node steps is one step), and counts those; the step it reports and is sent to
// (onStep, go, step) is the node step, the same whatever is folded: a level step's last.

export const STEP_MS = 1200; // one step at 1×: time to read a caption

/**
 * Wire the player inside `root` (elements found by their data-vg names).
 * onStep(step, how) is called on every move; how is "play", "step", "jump" or "scrub", so the
 * caller can decide, for instance, which moves deserve a browser history entry.
 */
export function createControls(root, { onStep = () => {}, onPlayingChange = () => {}, stage = "both" } = {}) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const playButton = el("play");
  const playText = el("play-text");
  const playIcon = playButton.querySelector(".vg-play-icon");
  const scrubber = el("scrubber");
  const stepLabel = el("step-label");
  const speedSelect = el("speed");
  const stageSort = el("stage-sort");
  const stagePropagate = el("stage-propagate");

  let levels = null; // the level steps (levelTimeline)
  let step = 0; // the level step shown
  let last = 0;
  let sortEnd = 0;
  let propagateStart = 0;
  const nodeStep = (j) => (levels ? levels.to[j] : 0);
  // The level steps the player keeps to: the walk's, or one stage's (an embed's `stage`), which it
  // plays, scrubs and counts from its own first step.
  const first = () => (stage === "propagate" ? propagateStart : 0);
  const end = () => (stage === "sort" ? sortEnd : last);
  let playing = false;
  let timer = null;
  let enabled = false;

  function show() {
    scrubber.min = String(first());
    scrubber.max = String(end());
    scrubber.value = String(step);
    scrubber.setAttribute("aria-valuetext", `step ${step - first()} of ${end() - first()}`);
    stepLabel.textContent = `${step - first()} / ${end() - first()}`;
    const inPropagate = step >= propagateStart;
    stageSort.classList.toggle("is-current", !inPropagate);
    stagePropagate.classList.toggle("is-current", inPropagate);
    stageSort.style.setProperty("--vg-stage-progress", String(Math.min(1, step / Math.max(1, sortEnd))));
    stagePropagate.style.setProperty("--vg-stage-progress", String(inPropagate ? (step - propagateStart) / Math.max(1, last - propagateStart) : 0));
    for (const name of ["back", "reset", "sort-start"]) el(name).disabled = !enabled || step === first();
    for (const name of ["forward", "end", "propagate-end"]) el(name).disabled = !enabled || step === end();
    el("sort-end").disabled = !enabled || step === sortEnd;
    el("propagate-start").disabled = !enabled || step === propagateStart;
    playButton.disabled = !enabled;
    scrubber.disabled = !enabled;
  }

  function setPlaying(value) {
    if (playing === value) return;
    playing = value;
    clearTimeout(timer);
    timer = null;
    const label = playing ? "Pause" : "Play";
    playButton.setAttribute("aria-label", label);
    playText.textContent = label;
    playIcon.textContent = playing ? "❚❚" : "▶";
    playButton.classList.toggle("is-playing", playing);
    if (playing) schedule();
    onPlayingChange(playing);
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(tick, STEP_MS / Number(speedSelect.value));
  }

  function tick() {
    if (!playing) return;
    if (step >= end()) {
      setPlaying(false);
      return;
    }
    goLevel(step + 1, "play");
    if (step >= end()) setPlaying(false);
    else schedule();
  }

  /** Move to a level step (clamped); `how` says what moved it ("quiet": tell no one). */
  function goLevel(target, how = "jump") {
    const next = Math.max(first(), Math.min(end(), Math.round(Number(target) || 0)));
    const moved = next !== step;
    step = next;
    show();
    if (how !== "quiet" && (moved || how === "load")) onStep(nodeStep(step), how);
  }

  /** Move to the level step holding node step `target` (clamped). */
  function go(target, how = "jump") {
    if (!levels) return;
    const k = Math.max(0, Math.min(levels.levelOf.length - 1, Math.round(Number(target) || 0)));
    goLevel(levels.levelOf[k], how);
  }

  function play() {
    if (!enabled) return;
    if (step >= end()) goLevel(first(), "jump");
    setPlaying(true);
  }

  function pause() {
    setPlaying(false);
  }

  const stopThen = (fn) => () => {
    pause();
    fn();
  };
  playButton.addEventListener("click", () => (playing ? pause() : play()));
  el("forward").addEventListener("click", stopThen(() => goLevel(step + 1, "step")));
  el("back").addEventListener("click", stopThen(() => goLevel(step - 1, "step")));
  el("reset").addEventListener("click", stopThen(() => goLevel(first(), "jump")));
  el("end").addEventListener("click", stopThen(() => goLevel(end(), "jump")));
  el("sort-start").addEventListener("click", stopThen(() => goLevel(0, "jump")));
  el("sort-end").addEventListener("click", stopThen(() => goLevel(sortEnd, "jump")));
  el("propagate-start").addEventListener("click", stopThen(() => goLevel(propagateStart, "jump")));
  el("propagate-end").addEventListener("click", stopThen(() => goLevel(last, "jump")));
  scrubber.addEventListener("input", () => {
    pause();
    goLevel(scrubber.value, "scrub");
  });
  scrubber.addEventListener("change", () => goLevel(scrubber.value, "scrub-end"));
  speedSelect.addEventListener("change", () => {
    if (playing) schedule();
    onStep(nodeStep(step), "speed");
  });

  // Shortcuts anywhere on the page, except while typing, and except keys a focused control
  // already handles itself (space on a button, arrows on the scrubber or a select).
  root.ownerDocument.addEventListener("keydown", (event) => {
    if (!enabled || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    const target = event.target;
    const tag = target?.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT" || target?.isContentEditable) return;
    if (tag === "INPUT" && target.type !== "range") return;
    if (target !== root.ownerDocument.body && !root.contains(target)) return;
    const onControl = tag === "BUTTON" || tag === "A" || (tag === "INPUT" && target.type === "range");
    switch (event.key) {
      case " ":
        if (tag === "BUTTON" || tag === "A") return;
        event.preventDefault();
        if (playing) pause();
        else play();
        break;
      case "ArrowRight":
        if (tag === "INPUT") return;
        event.preventDefault();
        pause();
        goLevel(step + 1, "step");
        break;
      case "ArrowLeft":
        if (tag === "INPUT") return;
        event.preventDefault();
        pause();
        goLevel(step - 1, "step");
        break;
      case "Home":
        if (onControl && tag === "INPUT") return;
        event.preventDefault();
        pause();
        goLevel(first(), "jump");
        break;
      case "End":
        if (onControl && tag === "INPUT") return;
        event.preventDefault();
        pause();
        goLevel(end(), "jump");
        break;
      default:
    }
  });

  /**
   * A new walk, or the same one at another level (levelTimeline's level steps: their last, where
   * the stages meet, the node steps each holds). Stays at the level step holding the node step shown.
   */
  function setTimeline(newLevels) {
    const shown = nodeStep(step);
    levels = newLevels;
    last = levels.last;
    sortEnd = levels.sortEnd;
    propagateStart = levels.propagateStart;
    enabled = true;
    step = Math.max(first(), Math.min(end(), levels.levelOf[Math.min(shown, levels.levelOf.length - 1)]));
    show();
  }

  function disable() {
    pause();
    enabled = false;
    show();
  }

  return {
    go,
    goLevel,
    play,
    pause,
    setTimeline,
    disable,
    /** The node step shown (the URL's, a room's). */
    get step() {
      return nodeStep(step);
    },
    get last() {
      return nodeStep(last);
    },
    /** The level step shown, as the counter and the scrubber count it, and the last. */
    get levelStep() {
      return step;
    },
    get levelLast() {
      return last;
    },
    get playing() {
      return playing;
    },
    get speed() {
      return Number(speedSelect.value);
    },
    set speed(value) {
      const option = [...speedSelect.options].find((o) => Number(o.value) === Number(value));
      if (option) speedSelect.value = option.value;
    },
  };
}
