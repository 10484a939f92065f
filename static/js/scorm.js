// SCORM 1.2 reporting for the lesson package (GET /export/scorm): the self-contained file, run
// by a learning platform, finds the platform's API object (window.API in a parent frame or the
// opener, as the SCORM 1.2 run-time environment places it) and reports "incomplete" when the
// lesson opens and "completed" when the learner reaches the end of the walk.

const MAX_HOPS = 10;

/** The SCORM 1.2 API object of the nearest frame (or opener) that has one, or null. */
export function findScormApi(win) {
  for (const start of [win, win.opener]) {
    let frame = start;
    for (let hops = 0; frame && hops < MAX_HOPS; hops += 1) {
      try {
        if (frame.API && typeof frame.API.LMSInitialize === "function") return frame.API;
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
export function connectScorm(win = window) {
  const api = findScormApi(win);
  if (!api) return { connected: false, complete() {} };
  api.LMSInitialize("");
  const status = String(api.LMSGetValue("cmi.core.lesson_status"));
  let completed = status === "completed" || status === "passed";
  if (!completed) {
    api.LMSSetValue("cmi.core.lesson_status", "incomplete");
    api.LMSCommit("");
  }
  let finished = false;
  win.addEventListener("pagehide", () => {
    if (finished) return;
    finished = true;
    api.LMSFinish("");
  });
  return {
    connected: true,
    complete() {
      if (completed) return;
      completed = true;
      api.LMSSetValue("cmi.core.lesson_status", "completed");
      api.LMSCommit("");
    },
  };
}
