// The script of GET /sandbox, the frame the page runs a learner's JavaScript in: sandboxed with an
// opaque origin (sandbox="allow-scripts"), under a CSP with no network. Each program the page
// sends becomes a Web Worker made from a blob (it inherits the frame's CSP); the worker is
// terminated at the time limit, or when the next program arrives.
(() => {
  const runtime = document.getElementById("vg-runtime").textContent;
  let worker = null;
  let timer = null;

  function stop() {
    clearTimeout(timer);
    if (worker) worker.terminate();
    worker = null;
  }

  addEventListener("message", (event) => {
    if (event.source !== parent || !event.data || typeof event.data.code !== "string") return;
    const { id, code, timeLimitMs, maxNodes, run } = event.data;
    const reply = (message) => parent.postMessage({ ...message, id }, "*");
    stop();
    const offset = runtime.split("\n").length; // lines before the learner's line 1: vgConfig's, then the runtime's
    const prelude = `const vgConfig = ${JSON.stringify({ maxNodes, run, offset })};\n${runtime}`;
    const userLines = code.split("\n").length;
    const source = `${prelude}${code}\n;vgRuntime.finish();\n} catch (error) {\n  vgRuntime.fail(error);\n}\n`;
    const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
    const running = new Worker(url);
    worker = running;
    URL.revokeObjectURL(url);
    running.onmessage = (message) => {
      if (worker !== running) return;
      const data = message.data ?? {};
      stop();
      if (data.type === "graph") reply({ type: "graph", graph: data.graph, runs: data.runs });
      else {
        const place = (data.places ?? []).map(([line, column]) => [line - offset, column]).find(([line]) => line >= 1 && line <= userLines);
        reply({ type: "error", message: String(data.message), line: place ? place[0] : null, column: place ? place[1] : null });
      }
    };
    // A syntax error the transpiler let through, or an error thrown where the catch cannot see it.
    running.onerror = (error) => {
      if (worker !== running) return;
      error.preventDefault();
      stop();
      const line = error.lineno - offset;
      const placed = line >= 1 && line <= userLines;
      reply({ type: "error", message: error.message || "The program failed", line: placed ? line : null, column: placed ? error.colno : null });
    };
    timer = setTimeout(() => {
      if (worker !== running) return;
      stop();
      reply({ type: "timeout" });
    }, timeLimitMs);
  });
  parent.postMessage({ type: "ready" }, "*");
})();
