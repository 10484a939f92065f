// A job as the page knows it (the data; jobpanel.js draws it): what its server-sent events and
// status answers have told so far, folded into one record, and what follows from it (calls done
// of the expected total, time left). Pure functions: no requests, no DOM, no clock of their own
// (callers pass `now`, in ms).

import { number } from "./api.js";
import { asTerminalShows } from "./format.js";

export const FINISHED = ["done", "failed", "cancelled"];

/** A job just started: `program` is the request it runs, `expected` its expected backward() calls (or null). */
export function newJob(created, program, expected, now) {
  return {
    id: created.id,
    statusUrl: created.status_url,
    eventsUrl: created.events_url,
    program,
    expected,
    status: "queued",
    runs: [], // {line, data} per backward() call, data a number (NaN, ±Infinity revived)
    printed: [], // whole lines, from the stream
    unfinished: null, // the line being printed (no newline yet), from a status answer
    statements: 0,
    elapsed: 0, // the server's elapsed seconds, as of `heardAt`
    heardAt: now,
    error: null,
  };
}

/** The job after one server-sent event (`name`, `data` as api.js's followJob gives them). */
export function withEvent(job, name, data, now) {
  switch (name) {
    case "loss": {
      const runs = job.runs.slice();
      runs[data.run] = { line: data.line, data: number(data.data) };
      return { ...job, status: job.status === "queued" ? "running" : job.status, runs };
    }
    case "printed":
      return { ...job, printed: [...job.printed, data.line], unfinished: null };
    case "progress":
      return { ...job, status: data.status, statements: data.statements, elapsed: data.elapsed_seconds, heardAt: now };
    case "end":
      return withStatus(job, data, now);
    default:
      return job;
  }
}

/**
 * The job after a status answer (GET /runs/{id}, or an `end` event's data, which is the same).
 * A finished job's status is the whole story; a running one's `printed` also holds the line being
 * printed, which the stream sends only once it ends (a progress line printed with end='\r' never
 * does until the program ends): that line is kept as `unfinished` until the stream catches up.
 */
export function withStatus(job, status, now) {
  const base = { ...job, statements: status.progress.statements, elapsed: status.progress.elapsed_seconds, heardAt: now };
  if (FINISHED.includes(status.status)) {
    return {
      ...base,
      status: status.status,
      runs: status.runs.map((run) => ({ line: run.line, data: number(run.data) })),
      printed: status.printed,
      unfinished: null,
      error: status.error,
    };
  }
  const ahead = status.printed.length > job.printed.length;
  return { ...base, status: status.status, unfinished: ahead ? status.printed[status.printed.length - 1] : job.unfinished };
}

/** The printed lines as a terminal shows them: each carriage return rewrites its line. */
export function shownLines(job) {
  const lines = job.unfinished === null ? job.printed : [...job.printed, job.unfinished];
  return lines.map(asTerminalShows);
}

/**
 * How far the job has come: `done` backward() calls of `total` (the expected number while it
 * runs, when the program says it; the real number once it is done; else null), `fraction` of
 * the total (null: unknown), and `secondsLeft` (null: unknown), from the pace so far.
 */
export function progressOf(job, now) {
  const done = job.runs.length;
  const finished = FINISHED.includes(job.status);
  const total = job.status === "done" ? done : job.expected !== null && job.expected >= done ? job.expected : null;
  const elapsed = job.elapsed + (finished || job.status === "queued" ? 0 : Math.max(0, now - job.heardAt) / 1000);
  const secondsLeft = !finished && total !== null && done > 0 ? (elapsed / done) * (total - done) : null;
  return { done, total, fraction: total ? done / total : null, elapsed, secondsLeft };
}

const RANGE_LOOP = /^for\s+[A-Za-z_]\w*\s+in\s+range\(\s*([^,()]+?)\s*(?:,\s*([^,()]+?)\s*)?\)\s*:\s*(?:#.*)?$/;
const CONSTANT = /^([A-Za-z_]\w*)\s*=\s*(\d[\d_]*)\s*(?:#.*)?$/;
const BACKWARD = /\.backward\(\s*\)/;

/**
 * The number of backward() calls a program will make, when its text says so plainly: one
 * backward() call, in loops `for … in range(N)` (or range(A, B)) only, N a number or a name the
 * program sets once, at the top, to a number (`num_steps = 1000`). Anything else (a call inside a
 * function, an `if`, a `while`, a bound computed): null, unknown. Only an estimate for the
 * progress bar: the job's own count is the truth.
 */
export function expectedCalls(program) {
  const lines = program.split("\n").map((text) => ({ indent: text.length - text.trimStart().length, code: text.trim() }));
  const code = lines.filter((line) => line.code !== "" && !line.code.startsWith("#"));
  const calls = code.filter((line) => BACKWARD.test(line.code));
  if (calls.length !== 1) return null;
  const constants = new Map();
  for (const line of code) {
    const match = line.indent === 0 && line.code.match(CONSTANT);
    if (!match) continue;
    constants.set(match[1], constants.has(match[1]) ? null : Number(match[2].replaceAll("_", ""))); // set twice: unknown
  }
  const valueOf = (text) => (/^\d[\d_]*$/.test(text) ? Number(text.replaceAll("_", "")) : constants.get(text) ?? null);
  let total = 1;
  let indent = calls[0].indent;
  for (let i = code.indexOf(calls[0]) - 1; i >= 0 && indent > 0; i--) {
    const line = code[i];
    if (line.indent >= indent) continue;
    indent = line.indent;
    const loop = line.code.match(RANGE_LOOP);
    if (!loop) return null; // an if, a while, a def, or a bracket's continuation: unknown
    const [start, stop] = loop[2] === undefined ? [0, valueOf(loop[1])] : [valueOf(loop[1]), valueOf(loop[2])];
    if (start === null || stop === null) return null;
    total *= Math.max(0, stop - start);
  }
  return indent === 0 ? total : null; // else the call sits deeper than any line before it: unknown
}
