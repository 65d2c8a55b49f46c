// The cells of the web view: a cell's view, its code highlighted, and its
// outputs (streams, rich bundles, errors, Markdown). app.js (loaded after this
// file) holds the page: signing in, the sessions and the events.
//
// Everything a cell produced is put into the page as text (textContent), as
// nodes this file builds, or as a data: image; HTML goes into an iframe whose
// sandbox attribute is empty (no scripts, an opaque origin). Nothing from a
// cell is ever parsed as this page's HTML.
"use strict";

// A page that kept every output of a flood would freeze when it is most needed: a view keeps
// its last MAX_CELLS cells and each cell its last MAX_OUTPUTS outputs (the notebook has all).
const MAX_CELLS = 200;
const MAX_OUTPUTS = 100;

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
