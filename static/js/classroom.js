// Teach live: the teacher's walk drives every student's copy (app/rooms.py is the server side).
//
// "Teach live" makes a room (POST /rooms) with the page's current state; the teacher token it
// answers with stays in this tab's sessionStorage, never in a link. Students join with the link
// (?room=CODE on the page or on /embed) or by typing the code. Everyone talks over one WebSocket,
// which reconnects by itself with backoff and resumes from the room's current state.
// While following, a student's own moves switch to "Explore on my own"; "Rejoin" jumps back to
// the teacher's current state. Every text is set as text.

import { createRoom } from "./api.js";
import { make } from "./courseapi.js";

const SOCKET_PATH = "/rooms/ws";
const SEND_EVERY_MS = 50; // the teacher's changes, coalesced: 50× playback is 42 steps a second
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 5000;
const TOKEN_KEY = "valuegraph:teacher:"; // + code, in sessionStorage
const ROOM_KEY = "valuegraph:room"; // the room this tab follows, so a reload rejoins
const STUDENT_WAIT_MS = 10 * 60 * 1000; // how long a student waits for a lost room to be made again

function storage() {
  try {
    return window.sessionStorage;
  } catch {
    return null; // storage blocked (a sandboxed frame): the room lasts as long as the tab
  }
}

/** The room code a URL asks to join (?room=K7MP-Q2XR), or null. */
export function roomFromUrl(search) {
  const code = new URLSearchParams(search).get("room");
  return code && /^[A-Za-z0-9 -]{8,12}$/.test(code) ? code.toUpperCase() : null;
}

/**
 * A WebSocket that joins `code` and keeps joining: after a drop it waits 250 ms, 500 ms, ...
 * up to 5 s (with jitter) and tries again, showing the server's reason (a Redis outage closes
 * with 1013 and says so). A close with a 44xx code (no such room, bad join) or 1008 (refused) is
 * final, except 4404 after a welcome: the room existed and the server's store lost it, so
 * onGone() decides (a message to show while it tries again, or false to stop).
 * onMessage(message), onStatus(text, final).
 */
export function roomSocket(code, token, { onMessage, onStatus, onGone = null, url = socketUrl() }) {
  let socket = null;
  let attempt = 0;
  let stopped = false;
  let welcomed = false;
  let timer = null;

  function retry(text) {
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** attempt) * (0.5 + Math.random() / 2);
    attempt += 1;
    onStatus(text, false);
    timer = setTimeout(connect, delay);
  }

  function finish(event) {
    stopped = true;
    onStatus(event.reason || `The room closed the connection (${event.code}).`, true);
  }

  function connect() {
    socket = new WebSocket(url);
    socket.addEventListener("open", () => socket.send(JSON.stringify({ type: "join", code, ...(token ? { token } : {}) })));
    socket.addEventListener("message", (event) => {
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      if (message.type === "welcome") {
        attempt = 0;
        welcomed = true;
      }
      onMessage(message);
    });
    socket.addEventListener("close", (event) => {
      if (stopped) return;
      if (event.code === 4404 && welcomed && onGone) {
        Promise.resolve(onGone()).then((text) => {
          if (stopped) return;
          if (text === false) finish(event);
          else retry(text);
        });
        return;
      }
      if (event.code === 1008 || (event.code >= 4400 && event.code < 4500)) {
        finish(event);
        return;
      }
      retry(event.code === 1013 && event.reason ? event.reason : "Connection lost: reconnecting…");
    });
  }

  connect();
  return {
    send(message) {
      if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
    },
    close() {
      stopped = true;
      clearTimeout(timer);
      socket?.close(1000, "left the room");
    },
  };
}

function socketUrl() {
  return `${window.location.protocol === "https:" ? "wss" : "ws"}://${window.location.host}${SOCKET_PATH}`;
}

const sameState = (a, b) => JSON.stringify(a) === JSON.stringify(b);

export function startClassroom(box, app, { location = window.location } = {}) {
  const store = storage();
  let connection = null;
  let role = null; // "teacher" | "student" | null
  let code = null;
  let roomState = null; // the room's latest state
  let roomVersion = 0; // the version of roomState
  let following = true;
  let applying = 0;
  let lastSent = null;
  let lastSentAt = 0;
  let sendTimer = null;
  let maxMessageBytes = Infinity; // the server's limit on one message, told in the teacher's welcome

  // ---- the panel ----
  const start = make("div", { className: "vg-classroom-start" });
  const teachButton = make("button", { className: "vg-button vg-small", text: "Teach live", attrs: { type: "button", "data-vg": "teach-live" } });
  const joinForm = make("form", { className: "vg-classroom-join" });
  const joinLabel = make("label", { text: "Room code " });
  const codeInput = make("input", { className: "vg-input", attrs: { type: "text", "data-vg": "room-code", autocomplete: "off", spellcheck: "false", placeholder: "K7MP-Q2XR", maxlength: "12", size: "10" } });
  joinLabel.append(codeInput);
  const joinButton = make("button", { className: "vg-button vg-small", text: "Join", attrs: { type: "submit", "data-vg": "room-join" } });
  joinForm.append(joinLabel, joinButton);
  const sizeLabel = make("label", { className: "vg-classroom-size", text: "Students at most " });
  const sizeInput = make("input", { className: "vg-input", attrs: { type: "number", min: "1", step: "1", "data-vg": "room-size", placeholder: "500", size: "5" } });
  sizeLabel.append(sizeInput);
  start.append(teachButton, sizeLabel, joinForm);

  const live = make("div", { className: "vg-classroom-live", attrs: { hidden: "" } });
  const codeText = make("p", { className: "vg-classroom-code", attrs: { "data-vg": "room-code-shown" } });
  const status = make("p", { className: "vg-classroom-status", attrs: { "data-vg": "room-status", "aria-live": "polite" } });
  const teacherTools = make("div", { className: "vg-classroom-teacher", attrs: { hidden: "" } });
  const linkLabel = make("label", { text: "Join link " });
  const linkInput = make("input", { className: "vg-input", attrs: { type: "text", readonly: "", "data-vg": "room-link", size: "34" } });
  linkLabel.append(linkInput);
  const copyButton = make("button", { className: "vg-button vg-small", text: "Copy", attrs: { type: "button" } });
  let qr = null; // the QR code's <img>, made only while teaching
  const followers = make("p", { className: "vg-classroom-followers", attrs: { "data-vg": "room-followers", "aria-live": "polite" } });
  const lockButton = make("button", { className: "vg-button vg-small", text: "Lock the room", attrs: { type: "button", "data-vg": "room-lock", "aria-pressed": "false" } });
  let locked = false;
  teacherTools.append(linkLabel, copyButton, followers, lockButton);
  const exploreButton = make("button", { className: "vg-button vg-small", text: "Explore on my own", attrs: { type: "button", "data-vg": "room-explore", hidden: "" } });
  const rejoinButton = make("button", { className: "vg-button vg-small vg-primary", text: "Rejoin", attrs: { type: "button", "data-vg": "room-rejoin", hidden: "" } });
  const leaveButton = make("button", { className: "vg-button vg-small", text: "Leave", attrs: { type: "button", "data-vg": "room-leave" } });
  live.append(codeText, status, exploreButton, rejoinButton, leaveButton, teacherTools);
  box.replaceChildren(start, live);

  function setStatus(text) {
    status.textContent = text;
  }

  function showMode() {
    const inRoom = role !== null;
    start.hidden = inRoom;
    live.hidden = !inRoom;
    teacherTools.hidden = role !== "teacher";
    exploreButton.hidden = role !== "student" || !following;
    rejoinButton.hidden = role !== "student" || following;
    box.dataset.role = role ?? "";
    box.dataset.following = String(role === "student" && following);
    if (role === "student") setStatus(following ? "Following the teacher." : "Exploring on your own: the teacher's moves are not shown.");
  }

  // ---- the teacher ----
  function sendState() {
    clearTimeout(sendTimer);
    sendTimer = null;
    const state = app.state();
    if (!state || sameState(state, lastSent)) return;
    // The graph a teacher's TypeScript/JavaScript made goes once per run: later moves leave it out
    // and the room keeps it (app/rooms.py), so a big graph does not pass the limit at every step.
    const graphSent = state.graph && lastSent?.graph === state.graph && lastSent.expression === state.expression && lastSent.language === state.language;
    const message = { type: "state", state: graphSent ? { ...state, graph: null } : state };
    const bytes = new TextEncoder().encode(JSON.stringify(message)).length;
    if (bytes > maxMessageBytes) {
      setStatus(`Not sent to the students: this graph takes ${bytes.toLocaleString("en")} bytes, over the room's limit of ${maxMessageBytes.toLocaleString("en")} (VALUEGRAPH_ROOM_MAX_MESSAGE_BYTES).`);
      return;
    }
    lastSent = state;
    lastSentAt = performance.now();
    connection?.send(message);
  }

  function scheduleSend() {
    if (sendTimer !== null) return;
    const wait = SEND_EVERY_MS - (performance.now() - lastSentAt);
    if (wait <= 0) sendState();
    else sendTimer = setTimeout(sendState, wait);
  }

  async function teach() {
    teachButton.disabled = true;
    setStatus("Starting a room…");
    try {
      const size = sizeInput.value.trim() === "" ? null : Number(sizeInput.value);
      const body = await createRoom(app.state(), { maxStudents: size });
      store?.setItem(TOKEN_KEY + body.code, body.token);
      enter(body.code, body.token);
    } catch (error) {
      start.hidden = false;
      live.hidden = false;
      setStatus(`Could not start a room: ${error.message}`);
    } finally {
      teachButton.disabled = false;
    }
  }

  // ---- joining, for both ----
  function enter(roomCode, token) {
    connection?.close();
    code = roomCode;
    role = token ? "teacher" : "student";
    following = true;
    lastSent = null;
    store?.setItem(ROOM_KEY, roomCode);
    codeText.textContent = `Room ${roomCode}`;
    const link = `${location.origin}/?room=${encodeURIComponent(roomCode)}`;
    linkInput.value = link;
    qr?.remove();
    qr = null;
    if (token) {
      qr = make("img", { className: "vg-classroom-qr", attrs: { alt: "QR code of the join link", "data-vg": "room-qr", width: "132", height: "132" } });
      qr.src = `/rooms/${encodeURIComponent(roomCode)}/qr.svg`;
      teacherTools.append(qr);
    }
    followers.textContent = "No students yet.";
    setStatus(role === "teacher" ? "Connecting…" : "Joining…");
    showMode();
    let goneSince = null;
    connection = roomSocket(roomCode, token, {
      onMessage,
      onStatus: (text, final) => {
        setStatus(text);
        if (final) leave({ keepStatus: true });
      },
      onGone: token ? () => remake(token) : () => {
        goneSince ??= performance.now();
        if (performance.now() - goneSince > STUDENT_WAIT_MS) return false;
        return "The room is gone for now: waiting for the teacher's page to bring it back…";
      },
    });
  }

  // The server's store lost the room (Redis restarted without its data): this page holds the
  // state, so it makes the room again under the same code and token; students rejoin by themselves.
  async function remake(token) {
    try {
      await createRoom(app.state(), { token });
      return "The server lost the room; made it again: reconnecting…";
    } catch (error) {
      if (error instanceof TypeError) return "The server lost the room; making it again when the server answers…";
      return `The server lost the room; making it again (${error.message})…`;
    }
  }

  function leave({ keepStatus = false } = {}) {
    connection?.close();
    connection = null;
    if (code) store?.removeItem(TOKEN_KEY + code);
    store?.removeItem(ROOM_KEY);
    qr?.remove();
    qr = null;
    role = null;
    code = null;
    const text = status.textContent;
    showMode();
    if (keepStatus) {
      live.hidden = false;
      for (const element of [codeText, exploreButton, rejoinButton, leaveButton, teacherTools]) element.hidden = true;
      status.textContent = text;
    }
  }

  function onMessage(message) {
    if (message.type === "welcome" || message.type === "state") {
      if (message.type === "state" && message.resync && role === "teacher") {
        // After an outage: the moves made meanwhile were not stored, so send the page's state.
        lastSent = message.state;
        scheduleSend();
        return;
      }
      // Versions only grow within a room; an older change that arrives late is already shown.
      if (message.type === "state" && message.version <= roomVersion) return;
      roomVersion = message.version;
      roomState = message.state;
      box.dataset.roomStep = String(roomState.step); // the room's step as last heard, shown or not (for tests)
      if (message.type === "welcome") {
        codeText.textContent = `Room ${message.code}`;
        if (role === "teacher") {
          if (Number.isInteger(message.max_message_bytes)) maxMessageBytes = message.max_message_bytes;
          setStatus("Teaching live: every student's copy follows yours.");
          if (typeof message.followers === "number") showFollowers(message.followers, message.max_students, message.locked);
          lastSent = message.state;
          scheduleSend(); // whatever changed while the connection was down
        } else {
          showMode();
        }
      }
      if (role === "student" && following) follow();
    } else if (message.type === "followers") {
      showFollowers(message.count, message.max_students, message.locked);
    } else if (message.type === "error" && role === "teacher") {
      setStatus(`Not sent to the students: ${message.message}`);
    }
  }

  function showFollowers(count, most, isLocked) {
    const of = typeof most === "number" ? ` of at most ${most}` : "";
    followers.textContent = `${count} student${count === 1 ? "" : "s"}${of} follow${count === 1 ? "s" : ""}.${isLocked ? " The room is locked: nobody new joins." : ""}`;
    locked = Boolean(isLocked);
    lockButton.textContent = locked ? "Unlock the room" : "Lock the room";
    lockButton.setAttribute("aria-pressed", String(locked));
  }

  // One apply at a time, ending on the newest state: an apply that reloads the graph awaits, and a
  // step heard meanwhile must not be overtaken by the older apply finishing after it.
  let applyAgain = false;
  async function follow() {
    if (applying > 0) {
      applyAgain = true;
      return;
    }
    applying += 1;
    try {
      do {
        applyAgain = false;
        await app.apply(roomState);
      } while (applyAgain && role === "student" && following);
    } finally {
      applying -= 1;
    }
  }

  // ---- wiring ----
  teachButton.addEventListener("click", teach);
  joinForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const typed = codeInput.value.trim().toUpperCase();
    if (!/^[A-Z0-9 -]{8,12}$/.test(typed)) {
      setStatus("A room code is 8 letters and digits, like K7MP-Q2XR.");
      live.hidden = false;
      return;
    }
    enter(typed, null);
  });
  copyButton.addEventListener("click", () => navigator.clipboard?.writeText(linkInput.value).catch(() => linkInput.select()));
  leaveButton.addEventListener("click", () => leave());
  lockButton.addEventListener("click", () => connection?.send({ type: "lock", locked: !locked }));
  exploreButton.addEventListener("click", () => {
    following = false;
    showMode();
  });
  rejoinButton.addEventListener("click", () => {
    following = true;
    showMode();
    if (roomState) follow();
  });
  app.onChange(() => {
    if (role === "teacher") scheduleSend();
    else if (role === "student" && following && applying === 0) {
      following = false; // the student moved on their own
      showMode();
    }
  });

  // A link (?room=...) or a reload of a tab already in a room.
  const asked = roomFromUrl(location.search) ?? store?.getItem(ROOM_KEY) ?? null;
  if (asked) app.ready.then(() => enter(asked, store?.getItem(TOKEN_KEY + asked) ?? null));

  return {
    get role() {
      return role;
    },
    get following() {
      return following;
    },
  };
}
