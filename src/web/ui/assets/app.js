// The cellbox web view: the principal's sessions, one session's cells as a
// notebook, and what runs now, streamed from /ui/api/events.
//
// How a cell and its outputs are shown, safely, is cells.js's; following the page's end is follow.js's.
//
// Every route, header and event type comes from wire.js (generated from the
// server's own declaration of this API, crates/protocol/src/ui.rs).
"use strict";

const $ = (id) => document.getElementById(id);
const R = WIRE.routes;
const E = WIRE.events;
const state = {
  me: null, selected: null, owner: null, watched: null, sessions: [], calls: new Map(), events: null, timer: null,
  listTimer: null, reading: 0, finished: new Set(), showing: null, built: null, ended: new Map(),
};

function api(path, options = {}) {
  const headers = Object.assign({ [WIRE.header]: "1" }, options.body ? { "Content-Type": "application/json" } : {});
  return fetch(path, Object.assign({}, options, { headers, credentials: "same-origin" }));
}

// `?principal=` for a session of another principal (an admin's view), else nothing.
function whose(owner) {
  return owner && state.me && owner !== state.me.principal ? "&principal=" + encodeURIComponent(owner) : "";
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// --- signing in -------------------------------------------------------------

async function start() {
  // `cellbox mcp --ui` prints a one-time link: its code leaves the address bar at once, and signs in
  // only where no one is signed in yet and the server signs in by such links (not a token's server).
  const once = new URLSearchParams(location.hash.slice(1)).get("once");
  if (once) history.replaceState(null, "", location.pathname);
  let me = await api(R.ME);
  if (me.status === 401 && once) {
    const why = await me.json().catch(() => ({}));
    if (!why.one_time) return showSignIn(why.error);
    const answer = await api(R.LOGIN, { method: "POST", body: JSON.stringify({ token: once }) });
    if (!answer.ok) {
      const body = await answer.json().catch(() => ({}));
      return showSignIn(body.error || "The link was not accepted.");
    }
    me = await api(R.ME);
  }
  if (me.status === 401) {
    const why = await me.json().catch(() => ({}));
    return showSignIn(why.one_time ? why.error : "");
  }
  if (!me.ok) return showSignIn("The server answered " + me.status + ".");
  const who = await me.json();
  state.me = who;
  $("who").textContent = who.principal + (who.admin ? " (admin: every principal's sessions)" : "");
  $("signout").hidden = !who.auth;
  $("signin").hidden = true;
  $("app").hidden = false;
  connect(who.principal);
  await refreshSessions();
  const hash = new URLSearchParams(location.hash.slice(1));
  const wanted = hash.get("session");
  if (wanted) select(wanted, false, hash.get("principal") || who.principal);
}

function showSignIn(message) {
  // Nothing of the last principal stays in the page.
  if (state.events) state.events.close();
  clearInterval(state.timer);
  clearTimeout(state.listTimer);
  clearTimeout(state.retry);
  Object.assign(state, {
    me: null, selected: null, owner: null, watched: null, sessions: [], calls: new Map(), events: null, listTimer: null,
    reading: state.reading + 1, finished: new Set(), showing: null, built: null, ended: new Map(),
  });
  $("cells").replaceChildren();
  $("sessions").replaceChildren();
  $("session-name").textContent = "Choose a session";
  history.replaceState(null, "", location.pathname);
  $("app").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = message || "";
  $("token").focus();
}

$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const answer = await api(R.LOGIN, { method: "POST", body: JSON.stringify({ token: $("token").value }) });
  $("token").value = "";
  if (!answer.ok) {
    const body = await answer.json().catch(() => ({}));
    return showSignIn(body.error || "The token was not accepted.");
  }
  start();
});

$("signout").addEventListener("click", async () => {
  await api(R.LOGOUT, { method: "POST" });
  showSignIn("Signed out.");
});

// --- the sessions list ------------------------------------------------------

async function refreshSessions() {
  const answer = await api(R.SESSIONS);
  if (answer.status === 401) return showSignIn("The sign-in has ended.");
  if (!answer.ok) return;
  state.sessions = (await answer.json()).sessions;
  const list = $("sessions");
  list.replaceChildren();
  for (const session of state.sessions) {
    const item = el("li");
    const button = el("button");
    button.type = "button";
    button.dataset.session = session.name;
    button.dataset.principal = session.principal;
    button.setAttribute("aria-current", String(isSelected(session)));
    const name = el("div", "name");
    name.append(el("span", "dot " + (session.busy ? "busy" : session.kernel === "live" ? "live" : "")));
    if (session.principal !== state.me.principal) name.append(el("span", "owner", session.principal + ": "));
    name.append(session.name);
    const parts = [session.busy ? "running" : session.kernel === "live" ? "idle" : "no kernel"];
    if (session.languages.length) parts.push(session.languages.join(" + "));
    if (session.resident_bytes) parts.push(bytes(session.resident_bytes));
    parts.push(session.cells + (session.cells === 1 ? " cell" : " cells"));
    if (session.last_active_ms) parts.push(ago(session.last_active_ms));
    button.append(name, el("div", "meta", parts.join(" · ")));
    button.addEventListener("click", () => select(session.name, false, session.principal));
    item.append(button);
    list.append(item);
  }
  $("no-sessions").hidden = state.sessions.length > 0;
  list.dataset.loaded = "1";
  updateToolbar();
}

// At most one refresh each 200 ms, however many events arrive.
function refreshSoon() {
  if (state.listTimer) return;
  state.listTimer = setTimeout(() => { state.listTimer = null; refreshSessions(); }, 200);
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + " " + units[i];
}

function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  return Math.round(s / 3600) + " h ago";
}

// --- one session ------------------------------------------------------------

function isSelected(session) {
  return session.name === state.selected && session.principal === state.owner;
}

async function select(name, keepNotice, owner) {
  owner = owner || state.owner || state.me.principal;
  state.selected = name;
  state.owner = owner;
  // Only the newest reading of a session is shown (another may be under way).
  const reading = ++state.reading;
  const mine = owner === state.me.principal;
  history.replaceState(null, "", "#session=" + encodeURIComponent(name) + (mine ? "" : "&principal=" + encodeURIComponent(owner)));
  $("session-name").textContent = mine ? name : owner + ": " + name;
  if (!keepNotice) $("notice").textContent = "";
  for (const button of document.querySelectorAll("#sessions button")) {
    button.setAttribute("aria-current", String(button.dataset.session === name && button.dataset.principal === owner));
  }
  updateToolbar();
  // The events of another principal's engine come from a stream of their own.
  if (state.watched !== owner) connect(owner);
  const answer = await api(R.SESSION + "?session=" + encodeURIComponent(name) + whose(owner));
  if (reading !== state.reading) return;
  const cells = $("cells");
  // Another session's cells go at once; the same session's stay until its new reading is built.
  const showing = owner + "\n" + name;
  if (state.showing !== showing) {
    cells.replaceChildren();
    state.built = null;
  }
  state.showing = showing;
  if (!answer.ok) {
    cells.replaceChildren();
    state.built = null;
    $("notice").textContent = answer.status === 404 ? "This session is gone." : "The session could not be read.";
    return;
  }
  const view = await answer.json();
  if (reading !== state.reading) return;
  // A session whose reading is on the page already keeps its reader's place (the end, if they
  // follow it); one shown anew opens at its end.
  const another = state.built !== showing;
  // Built aside and put in at once: while a session is read again, the page keeps showing what
  // it showed, never an empty session.
  const built = document.createDocumentFragment();
  const notebook = view.notebook || {};
  const marks = view.cells || [];
  const shown = new Set();
  let index = 0;
  let last = null;
  for (const cell of notebook.cells || []) {
    if (cell.cell_type !== "code") continue;
    const mark = marks[index++] || {};
    const kept = cellView(text(cell.source), languageOf(cell, notebook), cell.execution_count);
    try {
      for (const output of cell.outputs || []) addNotebookOutput(kept, output);
      setStatus(kept, (cell.outputs || []).some((o) => o.output_type === "error") ? "error" : "ok");
    } catch (error) {
      addNote(kept, "(an output this page cannot read)");
    }
    // A call's full output is one artifact: offered once, on its last cell.
    if (last && last.mark.call !== mark.call && last.mark.artifact) offerArtifact(last.view, last.mark.artifact);
    if (mark.call !== undefined && mark.call !== null) shown.add(mark.call);
    last = { view: kept, mark };
    built.append(kept.root);
  }
  if (last && last.mark.artifact) offerArtifact(last.view, last.mark.artifact);
  // Calls running when the session was read, with their code (one begun before the page
  // opened included), then those this page saw start since; a call in the notebook already
  // (it ended meanwhile) is not shown twice.
  let ended = false;
  for (const running of view.running || []) {
    if (shown.has(running.call)) continue;
    // It ended while the session was read (its end arrived first): read the session again.
    if (state.finished.has(running.call)) {
      ended = true;
      continue;
    }
    const call = callOf({ call: running.call, session: name });
    if (!call.started) {
      // Begun before this page saw it start: its code comes from here (views its events made
      // meanwhile show a placeholder), and its earlier output is read again once it ends.
      call.cells = running.cells;
      call.views.forEach((made, index) => {
        const cell = running.cells[index];
        if (!cell) return;
        made.language = LANGUAGES[cell.language] || cell.language;
        made.languageLabel.textContent = made.language;
        made.source.replaceChildren();
        highlight(made.source, cell.code, made.language);
      });
      call.partial = true;
    }
    if (!call.views.length && running.cells.length) {
      const first = viewOf(call, 0, true);
      first.started = running.started_ms;
      setStatus(first, "running");
    }
  }
  // Read again, a moment later and a few times at most (the stream's reopening reads anew anyway).
  state.rereads = ended ? (state.rereads || 0) + 1 : 0;
  if (ended && state.rereads <= 3) setTimeout(() => reading === state.reading && select(name, true, owner), 250);
  for (const [number, call] of state.calls) {
    if (call.session === name && !shown.has(number)) for (const kept of call.views) built.append(kept.root);
  }
  // Calls that ended while the session was read, not in what was read: kept until the next reading.
  for (const [number, call] of state.ended) {
    if (call.session === name && !shown.has(number)) for (const kept of call.views) built.append(kept.root);
  }
  state.ended.clear();
  cells.replaceChildren(built);
  state.built = showing;
  trimCells();
  followEnd(another);
}

function selectedSession() {
  return state.sessions.find(isSelected);
}

function updateToolbar() {
  const session = selectedSession();
  $("interrupt").disabled = !session || !session.busy;
  $("reset").disabled = !session;
  $("fork").disabled = !session || session.kernel !== "live" || !session.languages.includes("python");
  $("undo").disabled = !session || !session.checkpoints || session.busy;
  $("download").disabled = !session || !session.cells;
}

const ROUTE_OF = { interrupt: R.INTERRUPT, reset: R.RESET, fork: R.FORK, undo: R.UNDO };

async function act(action) {
  const name = state.selected;
  if (!name) return;
  if (action === "reset" && !confirm("Restart the kernel of " + name + "? Its variables will be lost.")) return;
  if (action === "undo" && !confirm("Put " + name + " back as it was before its last call?")) return;
  const body = { session: name };
  if (state.owner !== state.me.principal) body.principal = state.owner;
  const answer = await api(ROUTE_OF[action], { method: "POST", body: JSON.stringify(body) });
  const result = await answer.json().catch(() => ({}));
  const done = {
    interrupt: "Interrupt sent.",
    reset: "The kernel was restarted; its variables are gone.",
    fork: "Forked into " + result.session + ".",
    undo: "Undone: the kernel is as it was before the last call (" + result.left + " more undo(s) possible).",
  };
  $("notice").textContent = answer.ok ? done[action] : result.error || action + " failed";
  if (answer.ok && action === "undo") select(name, true, state.owner);
  refreshSoon();
}

$("link").addEventListener("click", () => {
  if (state.events && state.events.readyState === EventSource.CLOSED) connect(state.watched);
});
$("interrupt").addEventListener("click", () => act("interrupt"));
$("reset").addEventListener("click", () => act("reset"));
$("fork").addEventListener("click", () => act("fork"));
$("undo").addEventListener("click", () => act("undo"));
$("download").addEventListener("click", () => {
  if (!state.selected) return;
  api(R.NOTEBOOK + "?download=1&session=" + encodeURIComponent(state.selected) + whose(state.owner)).then(async (answer) => {
    if (!answer.ok) { $("notice").textContent = "The notebook could not be read."; return; }
    const named = /filename="([^"]+)"/.exec(answer.headers.get("Content-Disposition") || "");
    save(await answer.blob(), named ? named[1] : "session.ipynb");
  });
});

// A file handed to the browser to save: the API header cannot ride on a navigation, so the
// bytes are fetched first and given as a blob.
function save(blob, name) {
  const link = el("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

// A call's full output (its artifact://), copied to the clipboard, or saved where the
// page may not write the clipboard (plain HTTP on another host than this one).
function offerArtifact(view, uri) {
  if (view.artifact) return;
  view.artifact = uri;
  const owner = state.owner;
  const footer = el("footer");
  const copy = el("button", "", "Copy full output");
  copy.type = "button";
  copy.dataset.artifact = uri;
  copy.title = "Copy everything this call printed (" + uri + ")";
  copy.addEventListener("click", () => copyArtifact(uri, owner));
  footer.append(copy);
  view.root.append(footer);
}

async function copyArtifact(uri, owner) {
  const answer = await api(R.ARTIFACT + "?uri=" + encodeURIComponent(uri) + whose(owner));
  const body = await answer.json().catch(() => ({}));
  if (!answer.ok) { $("notice").textContent = body.error || "The output could not be read."; return; }
  const cut = body.truncated ? " (its first part: it is " + bytes(body.total_bytes) + " in all)" : "";
  try {
    await navigator.clipboard.writeText(body.text);
    $("notice").textContent = "Copied the full output of " + uri + cut + ".";
  } catch (error) {
    save(new Blob([body.text], { type: "text/plain" }), uri.replace(/[^A-Za-z0-9-]/g, "_") + ".txt");
    $("notice").textContent = "The clipboard is not open to this page: saved the output as a file instead" + cut + ".";
  }
}

// --- live events ------------------------------------------------------------

// Follow the events of `owner`'s engine (the signed-in principal's own, or for an admin another's).
function connect(owner) {
  if (state.events) state.events.close();
  clearTimeout(state.retry);
  // Calls are numbered per engine: another principal's would be taken for these.
  if (state.watched !== owner) {
    state.calls.clear();
    state.finished.clear();
    state.ended.clear();
  }
  state.watched = owner;
  const events = new EventSource(R.EVENTS + "?session=" + whose(owner));
  state.events = events;
  $("link").className = "pill";
  $("link").textContent = "connecting…";
  delete $("link").dataset.watched;
  events.onopen = () => {
    if (state.events !== events) return;
    $("link").hidden = false;
    $("link").className = "pill on";
    $("link").textContent = "live";
    // What happened before this stream opened (the first time, or while it was down, or in
    // an engine made anew) is read again; what happens from now on arrives as events.
    resync().then(() => {
      if (state.events === events) $("link").dataset.watched = owner;
    });
  };
  events.onerror = async () => {
    if (state.events !== events) return;
    $("link").className = "pill";
    $("link").textContent = "reconnecting…";
    // The browser retries a dropped stream by itself, but not one the server refused: the
    // sign-in may have ended (revoked, expired, the server restarted), else try again soon.
    if (events.readyState !== EventSource.CLOSED) return;
    const me = await api(R.ME).catch(() => null);
    if (state.events !== events) return;
    if (me && me.status === 401) return showSignIn("The sign-in has ended.");
    state.retry = setTimeout(() => { if (state.events === events) connect(owner); }, 3000);
  };
  events.onmessage = (message) => {
    try {
      apply(JSON.parse(message.data));
    } catch (error) {
      $("notice").textContent = "An event could not be shown.";
    }
  };
  clearInterval(state.timer);
  state.timer = setInterval(tick, 250);
}

function callOf(event) {
  let call = state.calls.get(event.call);
  if (!call) {
    call = { session: event.session, views: [], cells: [] };
    state.calls.set(event.call, call);
  }
  return call;
}

// The view of a call's cell `index` (made, with those before it, as its events arrive);
// `quiet`: not put into the page (the caller does).
function viewOf(call, index, quiet) {
  while (call.views.length <= index) {
    const cell = call.cells[call.views.length] || { code: "(this cell began before the page was opened)", language: "" };
    const view = cellView(cell.code, cell.language, null);
    setStatus(view, "queued");
    call.views.push(view);
    if (!quiet && shows(call)) {
      $("cells").append(view.root);
      trimCells();
    }
  }
  return call.views[index];
}

// Whether a call's session is the one shown (events come from the shown principal's engine).
function shows(call) {
  return call.session === state.selected;
}

function apply(event) {
  if (event.type === E.ENDED) {
    // A newer page of this sign-in took this one's place: no reconnecting by itself.
    state.events.close();
    $("link").className = "pill";
    $("link").textContent = "paused: resume";
    $("notice").textContent = event.reason;
    return;
  }
  if (event.type === E.LAGGED) {
    $("notice").textContent = event.lost + " events were missed; reloading the session.";
    resync();
    return;
  }
  if (event.type === E.CALL_STARTED) {
    const call = callOf(event);
    call.cells = event.cells;
    call.started = true;
    refreshSoon();
    return;
  }
  if (event.type === E.RESET) {
    if (event.session === state.selected) $("notice").textContent = "The kernel was restarted; its variables are gone.";
    refreshSoon();
    return;
  }
  if (event.type === E.ACTION) {
    if (event.session === state.selected && event.by !== state.me.principal) {
      $("notice").textContent = event.by + " did " + event.action + (event.detail ? " (" + event.detail + ")" : "") + ".";
    }
    refreshSoon();
    return;
  }
  if (event.type === E.CALL_FINISHED) {
    const call = state.calls.get(event.call);
    state.calls.delete(event.call);
    // Kept for a session read under way, which may still name it running (a few hundred at most).
    state.finished.add(event.call);
    if (state.finished.size > 512) state.finished.delete(state.finished.values().next().value);
    // Its views, for a reading of its session under way (which may not hold it yet): until one is built.
    if (call) state.ended.set(event.call, call);
    if (state.ended.size > 64) state.ended.delete(state.ended.keys().next().value);
    if (call) {
      for (const view of call.views) {
        if (view.started) finish(view, event.status || "cancelled");
        else if (view.status.textContent === "queued") setStatus(view, "skipped");
      }
      if (event.artifact && call.views.length) offerArtifact(call.views[call.views.length - 1], event.artifact);
      if (call.partial && call.session === state.selected) select(state.selected, true, state.owner);
    }
    refreshSoon();
    return;
  }
  const call = callOf(event);
  if (event.type === E.NOTE) {
    if (call.views.length) addNote(call.views[call.views.length - 1], event.text);
    return;
  }
  if (event.cell === undefined) return;
  const view = viewOf(call, event.cell);
  if (event.type === E.CELL_STARTED) {
    view.started = Date.now();
    setStatus(view, "running", "0.0 s");
  } else if (event.type === E.STREAM) {
    if (!view.started) view.started = Date.now();
    addStream(view, event.name, event.text);
  } else if (event.type === E.DISPLAY) {
    addBundle(view, event.bundle || {});
  } else if (event.type === E.ERROR) {
    addError(view, event.ename, event.evalue, event.traceback);
  } else if (event.type === E.CELL_FINISHED) {
    finish(view, event.status, event.duration_ms);
  } else if (event.type === E.WAITING && event.text) {
    setStatus(view, "running", event.text);
  }
}

// Forget the calls seen so far and read the sessions again.
function resync() {
  state.calls.clear();
  state.finished.clear();
  state.ended.clear();
  refreshSessions();
  return state.selected ? select(state.selected, true, state.owner) : Promise.resolve();
}

function finish(view, status, durationMs) {
  const ms = durationMs !== undefined ? durationMs : Date.now() - (view.started || Date.now());
  view.started = null;
  setStatus(view, status, (ms / 1000).toFixed(1) + " s");
}

function tick() {
  for (const call of state.calls.values()) {
    for (const view of call.views) {
      if (view.started) setStatus(view, "running", ((Date.now() - view.started) / 1000).toFixed(1) + " s");
    }
  }
}

start();
