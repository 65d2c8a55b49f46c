// The cellbox web view: the principal's sessions, one session's cells as a
// notebook, and what runs now, streamed from /ui/api/events.
//
// Everything a cell produced is put into the page as text (textContent) or as
// a data: image; HTML goes into an iframe whose sandbox attribute is empty
// (no scripts, an opaque origin). Nothing from a cell is ever parsed as this
// page's HTML.
//
// Every route, header and event type comes from wire.js (generated from the
// server's own declaration of this API, crates/protocol/src/ui.rs).
"use strict";

const $ = (id) => document.getElementById(id);
const R = WIRE.routes;
const E = WIRE.events;
const state = {
  me: null, selected: null, owner: null, watched: null, sessions: [], calls: new Map(), events: null, timer: null,
  listTimer: null, reading: 0, finished: new Set(),
};

// A page that kept every output of a flood would freeze when it is most needed: a view keeps
// its last MAX_CELLS cells and each cell its last MAX_OUTPUTS outputs (the notebook has all).
const MAX_CELLS = 200;
const MAX_OUTPUTS = 100;

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
    reading: state.reading + 1, finished: new Set(),
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
  cells.replaceChildren();
  if (!answer.ok) {
    $("notice").textContent = answer.status === 404 ? "This session is gone." : "The session could not be read.";
    return;
  }
  const view = await answer.json();
  if (reading !== state.reading) return;
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
    cells.append(kept.root);
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
    if (call.session === name && !shown.has(number)) for (const kept of call.views) cells.append(kept.root);
  }
  trimCells();
  window.scrollTo(0, document.body.scrollHeight);
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

// --- cells ------------------------------------------------------------------

// A notebook's string or list of strings; anything else (a malformed output) is no text.
function text(value) {
  if (typeof value === "string") return value;
  return Array.isArray(value) ? value.filter((part) => typeof part === "string").join("") : "";
}

const MAX_STREAM_CHARS = 200000;

function languageOf(cell, notebook) {
  const own = cell.metadata && cell.metadata.cellbox && cell.metadata.cellbox.language;
  return own || (notebook.metadata && notebook.metadata.language_info && notebook.metadata.language_info.name) || "python";
}

const LANGUAGES = { py: "python", js: "javascript", ts: "typescript" };

function cellView(code, language, count) {
  language = LANGUAGES[language] || language;
  const root = el("li", "cell");
  const header = el("header");
  const label = el("span", "", count ? "[" + count + "]" : "[ ]");
  const status = el("span", "status");
  const languageLabel = el("span", "", language);
  header.append(label, languageLabel, status);
  const source = el("pre", "source");
  highlight(source, code, language);
  const outputs = el("div", "outputs");
  root.append(header, source, outputs);
  return { root, status, outputs, label, source, language, languageLabel, started: null, stream: null };
}

function setStatus(view, status, seconds) {
  view.status.className = "status " + status;
  view.status.textContent = seconds === undefined ? status : status + " · " + seconds;
}

const PY_KEYWORDS = new Set(("False None True and as assert async await break class continue def del elif else except " +
  "finally for from global if import in is lambda nonlocal not or pass raise return try while with yield").split(" "));
const JS_KEYWORDS = new Set(("await break case catch class const continue default delete do else export extends false " +
  "finally for function if import in instanceof let new null return super switch this throw true try typeof undefined " +
  "var void while yield async of").split(" "));

// Comments, strings, numbers and keywords, each put in as text into a span.
function highlight(target, code, language) {
  const python = !/^(js|ts|javascript|typescript)$/i.test(language);
  const keywords = python ? PY_KEYWORDS : JS_KEYWORDS;
  const pattern = python
    ? /(#[^\n]*)|("""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|(\b\d[\d_]*(?:\.\d+)?\b)|([A-Za-z_]\w*)/g
    : /(\/\/[^\n]*|\/\*[\s\S]*?\*\/)|(`(?:\\.|[^`\\])*`|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|(\b\d[\d_]*(?:\.\d+)?\b)|([A-Za-z_$][\w$]*)/g;
  let last = 0;
  for (const match of code.matchAll(pattern)) {
    if (match.index > last) target.append(code.slice(last, match.index));
    const [whole, comment, string, number, word] = match;
    let kind = null;
    if (comment) kind = "tok-com";
    else if (string) kind = "tok-str";
    else if (number) kind = "tok-num";
    else if (word && keywords.has(word)) kind = "tok-kw";
    target.append(kind ? el("span", kind, whole) : whole);
    last = match.index + whole.length;
  }
  target.append(code.slice(last));
}

// A page that kept every line of a runaway cell would freeze when it is most needed:
// past MAX_STREAM_CHARS a stream keeps its last half (the notebook has the whole).
function addStream(view, name, value) {
  if (!(view.stream && view.stream.name === name)) {
    const node = el("pre", name);
    addOutput(view, node);
    view.stream = { name, node, size: 0 };
  }
  const stream = view.stream;
  stream.node.append(value);
  stream.size += value.length;
  if (stream.size > MAX_STREAM_CHARS) {
    const kept = stream.node.textContent.slice(-MAX_STREAM_CHARS / 2);
    stream.node.textContent = "[earlier output cut here: the session's notebook has it]\n" + kept;
    stream.size = stream.node.textContent.length;
  }
}

function addBundle(view, data) {
  view.stream = null;
  addOutput(view, renderBundle(data));
}

function addError(view, ename, evalue, traceback) {
  view.stream = null;
  const lines = traceback && traceback.length ? traceback.join("\n") : ename + ": " + evalue;
  addOutput(view, el("pre", "traceback", stripAnsi(lines)));
}

function addNote(view, value) {
  view.stream = null;
  addOutput(view, el("pre", "note", value));
}

// An output, and past MAX_OUTPUTS in the cell, its oldest ones go (a note says so).
function addOutput(view, node) {
  view.outputs.append(node);
  if (view.outputs.childElementCount <= MAX_OUTPUTS) return;
  let first = view.outputs.firstElementChild;
  if (!first.classList.contains("dropped")) {
    const note = el("pre", "note dropped", "[earlier outputs of this cell are not shown: the session's notebook has them]");
    view.outputs.prepend(note);
    first = note;
  }
  while (view.outputs.childElementCount > MAX_OUTPUTS) first.nextElementSibling.remove();
}

// Past MAX_CELLS cells in the view, the oldest go.
function trimCells() {
  const cells = $("cells");
  if (cells.childElementCount <= MAX_CELLS) return;
  let first = cells.firstElementChild;
  if (!first.classList.contains("dropped")) {
    first = el("li", "cell note dropped", "Earlier cells are not shown here: Download .ipynb has them all.");
    cells.prepend(first);
  }
  while (cells.childElementCount > MAX_CELLS + 1) first.nextElementSibling.remove();
}

function addNotebookOutput(view, output) {
  if (output.output_type === "stream") addStream(view, output.name, text(output.text));
  else if (output.output_type === "error") addError(view, output.ename, output.evalue, output.traceback);
  else if (output.data) addBundle(view, output.data);
}

function stripAnsi(value) { return value.replace(/\u001b\[[0-9;]*[A-Za-z]/g, ""); }

function base64Utf8(value) {
  const bytes = new TextEncoder().encode(value);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

// The richest form this page can show safely.
function renderBundle(data) {
  for (const type of ["image/png", "image/jpeg", "image/gif", "image/webp"]) {
    if (text(data[type])) {
      const image = el("img");
      image.alt = text(data["text/plain"]) || "image";
      image.src = "data:" + type + ";base64," + text(data[type]).replace(/\s/g, "");
      return image;
    }
  }
  if (text(data["image/svg+xml"])) {
    // As an image, an SVG's scripts never run.
    const image = el("img");
    image.alt = "SVG image";
    image.src = "data:image/svg+xml;base64," + base64Utf8(text(data["image/svg+xml"]));
    return image;
  }
  if (text(data["text/html"])) {
    const frame = el("iframe");
    frame.setAttribute("sandbox", "");
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.title = "HTML output";
    frame.srcdoc = text(data["text/html"]);
    return frame;
  }
  if (data["application/json"] !== undefined) return el("pre", "", JSON.stringify(data["application/json"], null, 2));
  if (text(data["text/markdown"])) return renderMarkdown(text(data["text/markdown"]));
  // LaTeX shows as its source: typesetting it offline would take a library many times this page's size.
  for (const type of ["text/latex", "text/plain"]) {
    if (text(data[type])) return el("pre", "", stripAnsi(text(data[type])));
  }
  const types = Object.keys(data);
  return el("pre", "note", "(an output in " + (types.join(", ") || "no format") + ")");
}

// --- Markdown ---------------------------------------------------------------

// Markdown past this size shows as its text: the renderer is linear, but a page kept usable
// while a cell floods should not lay out a book.
const MAX_MARKDOWN_CHARS = 32768;

// A small Markdown renderer that builds DOM nodes, never HTML: headings, paragraphs, lists,
// quotes, fenced code, rules, and inline code, bold, italics and links (a link shows its text
// and its address as text; nothing from a cell navigates the page). What it does not know
// stays as text. It reads each line once, with no pattern that can backtrack far.
function renderMarkdown(source) {
  if (source.length > MAX_MARKDOWN_CHARS) return el("pre", "", source);
  const root = el("div", "markdown");
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let paragraph = [];
  let list = null;
  const flush = () => {
    if (paragraph.length) root.append(inlineMarkdown(el("p"), paragraph.join(" ")));
    paragraph = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const trimmed = line.trim();
    // A fence opens a block only when nothing closes it on its own line (```x``` is inline code).
    if ((trimmed.startsWith("```") || trimmed.startsWith("~~~")) && !trimmed.slice(3).includes(trimmed.slice(0, 3))) {
      flush();
      list = null;
      const fence = trimmed.slice(0, 3);
      const code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) code.push(lines[i]);
      root.append(el("pre", "", code.join("\n")));
      continue;
    }
    const level = headingLevel(line);
    const item = listItem(trimmed);
    if (level) {
      flush();
      list = null;
      // A closing run of `#` goes when a space sets it apart (`# C#` keeps its `#`).
      const title = line.slice(level).trim();
      let end = title.length;
      while (end && title[end - 1] === "#") end--;
      const closed = end === 0 || title[end - 1] === " ";
      root.append(inlineMarkdown(el("h" + Math.min(6, level + 2)), (closed ? title.slice(0, end) : title).trim()));
    } else if (isRule(trimmed)) {
      flush();
      list = null;
      root.append(el("hr"));
    } else if (item) {
      flush();
      if (!list || list.ordered !== item.ordered) {
        list = { ordered: item.ordered, node: el(item.ordered ? "ol" : "ul") };
        root.append(list.node);
      }
      list.node.append(inlineMarkdown(el("li"), item.text));
    } else if (trimmed.startsWith(">")) {
      flush();
      list = null;
      root.append(inlineMarkdown(el("blockquote"), trimmed.slice(1).trim()));
    } else if (!trimmed) {
      flush();
      list = null;
    } else {
      paragraph.push(trimmed);
    }
  }
  flush();
  return root;
}

// `# title` to `###### title`: its level, else 0.
function headingLevel(line) {
  let level = 0;
  while (level < line.length && line[level] === "#") level++;
  return level >= 1 && level <= 6 && (line[level] === " " || line[level] === "\t") ? level : 0;
}

// `- text`, `* text`, `+ text`, `1. text` or `1) text`.
function listItem(trimmed) {
  if ((trimmed[0] === "-" || trimmed[0] === "*" || trimmed[0] === "+") && trimmed[1] === " ") {
    return { ordered: false, text: trimmed.slice(2).trim() };
  }
  let digits = 0;
  while (digits < trimmed.length && digits < 9 && trimmed[digits] >= "0" && trimmed[digits] <= "9") digits++;
  if (digits && (trimmed[digits] === "." || trimmed[digits] === ")") && trimmed[digits + 1] === " ") {
    return { ordered: true, text: trimmed.slice(digits + 2).trim() };
  }
  return null;
}

// `---`, `***` or `___` (spaces between allowed).
function isRule(trimmed) {
  const marks = trimmed.replace(/ /g, "");
  return marks.length >= 3 && "-*_".includes(marks[0]) && marks.split(marks[0]).join("") === "";
}

// Inline code, **bold**, *italics* / _italics_ and [text](address), appended to `target` as
// nodes. Every mark's closing one is looked for from left to right, and each search's answer
// is kept while the reading is still before it, so a line full of openers costs one scan per
// kind of mark. `_` marks only at a word's edge (`snake_case` stays as it is).
function inlineMarkdown(target, value) {
  const found = new Map();
  const find = (mark, from) => {
    const known = found.get(mark);
    if (known && from >= known.from && (known.at < 0 || from <= known.at)) return known.at;
    const at = value.indexOf(mark, from);
    found.set(mark, { from, at });
    return at;
  };
  const word = (ch) => ch !== undefined && /[A-Za-z0-9]/.test(ch);
  let plain = 0;
  let i = 0;
  const emit = (node, next) => {
    if (i > plain) target.append(value.slice(plain, i));
    target.append(node);
    i = plain = next;
  };
  while (i < value.length) {
    const c = value[i];
    if (c === "`") {
      let run = 1;
      while (value[i + run] === "`") run++;
      const close = find("`".repeat(run), i + run);
      if (close > 0) emit(el("code", "", value.slice(i + run, close)), close + run);
      else i += run;
    } else if ((c === "*" || c === "_") && value[i + 1] === c && !(c === "_" && word(value[i - 1]))) {
      const close = find(c + c, i + 2);
      if (close > i + 2 && !(c === "_" && word(value[close + 2]))) {
        emit(el("strong", "", value.slice(i + 2, close)), close + 2);
      } else {
        i += 2;
      }
    } else if ((c === "*" || c === "_") && value[i + 1] && value[i + 1] !== " " && !(c === "_" && word(value[i - 1]))) {
      const close = find(c, i + 1);
      if (close > i + 1 && !(c === "_" && word(value[close + 1]))) emit(el("em", "", value.slice(i + 1, close)), close + 1);
      else i += 1;
    } else if (c === "[") {
      // [label](address): the label's first `]` must open the address, which has no space.
      const close = find("]", i + 1);
      const end = close > i && value[close + 1] === "(" ? find(")", close + 2) : -1;
      if (end > close && !value.slice(close + 2, end).includes(" ")) {
        const label = value.slice(i + 1, close);
        const address = value.slice(close + 2, end);
        emit(el("span", "link", label), end + 1);
        target.append(el("span", "muted", " (" + address + ")"));
      } else {
        i += 1;
      }
    } else {
      i += 1;
    }
  }
  if (value.length > plain) target.append(value.slice(plain));
  return target;
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
