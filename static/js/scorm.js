// SCORM reporting for the lesson package (GET /export/scorm): the self-contained file, run by a
// learning platform, finds the platform's API object in a parent frame or the opener, where the
// run-time environment places it (window.API for SCORM 1.2, window.API_1484_11 for 2004), reports
// "incomplete" when the lesson opens and "completed" when the learner reaches the end of the walk,
// committing each, and ends the session when the page goes away.

const MAX_HOPS = 10;

// The two editions' names for the same calls and the completion status.
const EDITIONS = {
  "1.2": {
    object: "API",
    initialize: "LMSInitialize",
    getValue: "LMSGetValue",
    setValue: "LMSSetValue",
    commit: "LMSCommit",
    finish: "LMSFinish",
    status: "cmi.core.lesson_status",
    done: ["completed", "passed"],
  },
  2004: {
    object: "API_1484_11",
    initialize: "Initialize",
    getValue: "GetValue",
    setValue: "SetValue",
    commit: "Commit",
    finish: "Terminate",
    status: "cmi.completion_status",
    done: ["completed"],
  },
};

/** The API object of the edition's name in the nearest frame (or opener) that has one, or null. */
export function findScormApi(win, edition = "1.2") {
  const { object, initialize } = EDITIONS[edition] ?? EDITIONS["1.2"];
  for (const start of [win, win.opener]) {
    let frame = start;
    for (let hops = 0; frame && hops < MAX_HOPS; hops += 1) {
      try {
        if (frame[object] && typeof frame[object][initialize] === "function") return frame[object];
      } catch {
        // a frame of another origin: keep looking further up
      }
      if (frame.parent === frame) break;
      frame = frame.parent;
    }
  }
  return null;
}

/** Start the session; returns {complete()} (harmless when no platform is there). */
export function connectScorm(win = window, edition = "1.2") {
  const names = EDITIONS[edition] ?? EDITIONS["1.2"];
  const api = findScormApi(win, edition);
  if (!api) return { connected: false, complete() {} };
  api[names.initialize]("");
  let completed = names.done.includes(String(api[names.getValue](names.status)));
  if (!completed) {
    api[names.setValue](names.status, "incomplete");
    api[names.commit]("");
  }
  let finished = false;
  win.addEventListener("pagehide", () => {
    if (finished) return;
    finished = true;
    api[names.finish]("");
  });
  return {
    connected: true,
    complete() {
      if (completed) return;
      completed = true;
      api[names.setValue](names.status, "completed");
      api[names.commit]("");
    },
  };
}
