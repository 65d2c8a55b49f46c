//! A crashed Python runner's faulthandler dump, as the cell's author reads it.
//!
//! When C code crashes the runner, faulthandler writes every thread's stack
//! to the runner's diagnostics pipe (`channel.py`): the runner's own threads
//! (output capture, parent watch, request reader) and, under the cell's
//! frames, the runner's own (`execute`, `handle`, `main`, ...). [`cell_view`]
//! keeps what the user's code did, in the shape of a cell's traceback:
//! faulthandler's headline, then the crashing thread from its first cell
//! frame on, most recent call last, with the cells' source lines, then the
//! threads the user's code started. Frames of the runner (any file in its
//! folder) and the runner's threads are left out; the whole dump goes to the
//! call's full output ([`super::ExecEvent::CrashDump`]).
//!
//! Text in, text out; [`CellSources`] remembers the cells' code so that the
//! view can quote their lines.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::ExecEvent;

/// How faulthandler's dump (and any fatal error of the interpreter) begins.
const HEADLINE: &str = "Fatal Python error";
/// Cell code kept for quoting, past which the oldest cells are forgotten.
const KEPT_SOURCE_BYTES: usize = 4 << 20;
/// Identical frames in a row shown before the rest are counted (as a traceback does).
const REPEATS_SHOWN: usize = 3;

/// Split the runner's diagnostics into its own messages and faulthandler's
/// dump (from the headline's line on), if there is one.
pub(super) fn split(diagnostics: &str) -> (&str, Option<&str>) {
    let mut offset = 0;
    for line in diagnostics.split_inclusive('\n') {
        if line.starts_with(HEADLINE) {
            return (&diagnostics[..offset], Some(&diagnostics[offset..]));
        }
        offset += line.len();
    }
    (diagnostics, None)
}

/// What a dead runner's last words become.
#[derive(Debug, PartialEq)]
pub(super) struct LastWords {
    /// For the running request, in order.
    pub events: Vec<ExecEvent>,
    /// What the `Died` error quotes.
    pub quoted: String,
}

/// What the runner left when it died: its `diagnostics` (its own failure
/// messages, faulthandler's dump) and the end of its stderr. The `Died` error
/// quotes its messages, else that stderr's crash report. A dump goes to the
/// running request (`running`: its id and the kernel's cells) first: to a
/// cell as the cell's part of it ([`cell_view`]) on stderr, then whole as
/// [`ExecEvent::CrashDump`]; to the host's own requests whole on stderr.
pub(super) fn last_words(
    diagnostics: &str,
    recent_stderr: &str,
    running: Option<(&str, &CellSources)>,
    runner_roots: &[String],
) -> LastWords {
    let (messages, dump) = split(diagnostics);
    let Some(dump) = dump else {
        let quoted = if messages.trim().is_empty() { crash_report(recent_stderr) } else { messages.to_string() };
        return LastWords { events: Vec::new(), quoted };
    };
    let cell = running.filter(|(id, cells)| cells.is_cell(id));
    let Some((id, cells)) = cell else {
        let quoted = format!("{messages}{}", crash_report(dump));
        let events = running.map(|_| ExecEvent::Stderr(dump.to_string())).into_iter().collect();
        return LastWords { events, quoted };
    };
    let view = cell_view(dump, runner_roots, &|file, line| cells.line(id, file, line));
    LastWords {
        quoted: format!("{messages}{view}"),
        events: vec![ExecEvent::Stderr(view), ExecEvent::CrashDump(dump.to_string())],
    }
}

/// What to quote of the cell's stderr when the runner died without a word of
/// its own: an interpreter's fatal error report (its first line and the
/// crashing thread's stack), else all of it.
pub(super) fn crash_report(stderr: &str) -> String {
    let Some(start) = stderr.rfind(HEADLINE) else {
        return stderr.to_string();
    };
    let report = &stderr[start..];
    let headline = report.lines().next().unwrap_or_default();
    match report.find("Current thread 0x") {
        Some(current) => format!("{headline}\n{}", &report[current..]),
        None => report.to_string(),
    }
}

/// The runner's folder as its frames may name it, from its entry file: as
/// the host wrote it, and with links resolved.
pub(super) fn runner_roots(entry: &Path) -> Vec<String> {
    let Some(folder) = entry.parent() else { return Vec::new() };
    let mut roots = vec![folder.to_string_lossy().into_owned()];
    if let Ok(resolved) = folder.canonicalize() {
        let resolved = resolved.to_string_lossy().into_owned();
        if resolved != roots[0] {
            roots.push(resolved);
        }
    }
    roots
}

/// One `  File "…", line N in f` line of the dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Frame<'a> {
    file: &'a str,
    /// As written: digits, or `???` when unknown.
    line: &'a str,
    function: &'a str,
}

impl<'a> Frame<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let rest = line.strip_prefix("  File \"")?;
        let (file, rest) = rest.rsplit_once("\", line ")?;
        let (line, function) = rest.split_once(" in ")?;
        Some(Frame { file, line, function })
    }

    fn in_cell(&self) -> bool {
        cell_number(self.file).is_some()
    }

    /// `threading.py`'s frames under every thread's target.
    fn is_bootstrap(&self) -> bool {
        self.file.ends_with("/threading.py") && matches!(self.function, "_bootstrap" | "_bootstrap_inner" | "run")
    }
}

/// A line of a thread's stack: a frame, or a marker such as `  ...` (more
/// than 100 frames) or `  <no Python frame>`.
#[derive(Debug, Clone, Copy)]
enum Entry<'a> {
    Frame(Frame<'a>),
    Marker(&'a str),
}

/// One thread's stack, most recent call first as faulthandler writes it.
#[derive(Debug)]
struct Stack<'a> {
    /// The thread that crashed.
    current: bool,
    /// `Thread 0x00007f… [name]` (the name from Python 3.14 on).
    label: &'a str,
    entries: Vec<Entry<'a>>,
}

/// A dump, parsed.
#[derive(Debug)]
struct Dump<'a> {
    headline: &'a str,
    stacks: Vec<Stack<'a>>,
    /// Other lines kept as they are (`Extension modules: …`).
    rest: Vec<&'a str>,
}

/// `Current thread 0x… (most recent call first):` and the like: (current, label).
fn thread_header(line: &str) -> Option<(bool, &str)> {
    let label = line.strip_suffix(" (most recent call first):")?;
    if label == "Stack" {
        return Some((true, "Thread"));
    }
    if let Some(thread) = label.strip_prefix("Current ").filter(|rest| rest.starts_with("thread 0x")) {
        return Some((true, thread));
    }
    label.starts_with("Thread 0x").then_some((false, label))
}

fn parse(dump: &str) -> Dump<'_> {
    let mut lines = dump.lines();
    let headline = lines.next().unwrap_or_default().trim_end();
    let mut parsed = Dump { headline, stacks: Vec::new(), rest: Vec::new() };
    // Where indented lines go: the last stack (true), or nowhere (a C stack).
    let mut block: Option<bool> = None;
    for line in lines {
        let line = line.trim_end();
        if line.is_empty() {
            block = None;
        } else if let Some((current, label)) = thread_header(line) {
            parsed.stacks.push(Stack { current, label, entries: Vec::new() });
            block = Some(true);
        } else if line.ends_with("(most recent call first):") {
            // `Current thread's C stack trace` (3.14): the interpreter's own C frames.
            block = Some(false);
        } else if line.starts_with("  ") && block.is_some() {
            if block == Some(true)
                && let Some(stack) = parsed.stacks.last_mut()
            {
                stack.entries.push(Frame::parse(line).map_or(Entry::Marker(line), Entry::Frame));
            }
        } else {
            parsed.rest.push(line);
            block = None;
        }
    }
    parsed
}

/// The stack of `stack` the cell's author cares about, oldest call first:
/// from the first cell frame on (the runner's calls into it and asyncio's
/// are not theirs), without the runner's frames; markers (`...`) stay. `None` for a thread of the
/// runner's own: no cell frame, and started in the runner's code.
fn user_entries<'a>(stack: &Stack<'a>, runner_roots: &[String]) -> Option<Vec<Entry<'a>>> {
    let in_runner = |frame: &Frame| {
        runner_roots.iter().any(|root| frame.file.strip_prefix(root.as_str()).is_some_and(|rest| rest.starts_with('/')))
    };
    let oldest_first: Vec<Entry<'a>> = stack.entries.iter().rev().copied().collect();
    let frames =
        || oldest_first.iter().filter_map(|entry| if let Entry::Frame(frame) = entry { Some(frame) } else { None });
    let first_cell = oldest_first.iter().position(|entry| matches!(entry, Entry::Frame(frame) if frame.in_cell()));
    let started_in_runner = frames().find(|frame| !frame.is_bootstrap()).is_some_and(in_runner);
    if first_cell.is_none() && started_in_runner {
        return None;
    }
    // Without a cell frame: from the thread's target on (not `threading.py`'s calls into it).
    let start = first_cell
        .or_else(|| oldest_first.iter().position(|entry| matches!(entry, Entry::Frame(frame) if !frame.is_bootstrap())))
        .unwrap_or(0);
    let kept = oldest_first
        .iter()
        .enumerate()
        .filter(|(index, entry)| match entry {
            Entry::Frame(frame) => *index >= start && !in_runner(frame),
            Entry::Marker(_) => true,
        })
        .map(|(_, entry)| *entry)
        .collect();
    Some(kept)
}

/// `dump` as the cell's author reads it (see the module's documentation).
/// `runner_roots`: the runner's folder, as the runner may name it (no
/// trailing `/`); `source_line(file, n)`: line `n` of a cell, when known.
pub(super) fn cell_view(
    dump: &str,
    runner_roots: &[String],
    source_line: &dyn Fn(&str, usize) -> Option<String>,
) -> String {
    let dump = parse(dump);
    let mut out = format!("{}\n", dump.headline);
    let mut shown: Vec<(&Stack, Vec<Entry>)> = Vec::new();
    // The crashing thread first, then the others in the dump's order.
    for stack in dump.stacks.iter().filter(|stack| stack.current).chain(dump.stacks.iter().filter(|s| !s.current)) {
        match user_entries(stack, runner_roots) {
            Some(entries) if stack.current || entries.iter().any(|entry| matches!(entry, Entry::Frame(_))) => {
                shown.push((stack, entries))
            }
            None if stack.current => shown.push((stack, Vec::new())),
            _ => {}
        }
    }
    for (stack, entries) in shown {
        out.push('\n');
        if stack.current {
            out.push_str("Traceback (most recent call last):\n");
        } else {
            out.push_str(&format!("{} (most recent call last):\n", stack.label));
        }
        if stack.current && !entries.iter().any(|entry| matches!(entry, Entry::Frame(_))) {
            out.push_str(
                "  (no frame of the cell's code: the crash happened in cellbox's own code; the call's full output \
                 has the whole dump)\n",
            );
        }
        write_entries(&mut out, &entries, source_line);
    }
    if !dump.rest.is_empty() {
        out.push('\n');
        for line in dump.rest {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Frames as a traceback writes them, with the cells' lines; a frame
/// repeated in a row (recursion) is shown [`REPEATS_SHOWN`] times, then counted.
fn write_entries(out: &mut String, entries: &[Entry], source_line: &dyn Fn(&str, usize) -> Option<String>) {
    let mut index = 0;
    while index < entries.len() {
        let frame = match entries[index] {
            Entry::Marker(marker) => {
                out.push_str(marker);
                out.push('\n');
                index += 1;
                continue;
            }
            Entry::Frame(frame) => frame,
        };
        let run = entries[index..].iter().take_while(|entry| matches!(entry, Entry::Frame(f) if *f == frame)).count();
        for _ in 0..run.min(REPEATS_SHOWN) {
            out.push_str(&format!("  File \"{}\", line {}, in {}\n", frame.file, frame.line, frame.function));
            let line = frame.line.parse().ok().filter(|_| frame.in_cell()).and_then(|n| source_line(frame.file, n));
            if let Some(line) = line {
                out.push_str(&format!("    {line}\n"));
            }
        }
        if run > REPEATS_SHOWN {
            let more = run - REPEATS_SHOWN;
            out.push_str(&format!("  [Previous line repeated {more} more time{}]\n", if more == 1 { "" } else { "s" }));
        }
        index += run;
    }
}

/// `N` of a cell's file name, `<cell-N>`.
fn cell_number(file: &str) -> Option<u64> {
    file.strip_prefix("<cell-")?.strip_suffix('>')?.parse().ok()
}

/// The code of a kernel's cells by their file name, `<cell-N>` (N: the
/// execution count the runner gives a request that counts), so that a crash
/// dump can quote their lines.
#[derive(Debug, Default, Clone)]
pub(super) struct CellSources {
    /// Cells sent and not done yet, by request id.
    waiting: HashMap<String, String>,
    /// Done cells by execution count; the oldest go past [`KEPT_SOURCE_BYTES`].
    done: BTreeMap<u64, String>,
    done_bytes: usize,
    /// The execution count the runner reported last.
    count: u64,
}

impl CellSources {
    /// Request `id`, which counts as a cell (not silent, not internal), runs `code`.
    pub(super) fn sent(&mut self, id: &str, code: &str) {
        self.waiting.insert(id.to_string(), code.to_string());
    }

    /// Request `id` is done; the runner's execution count is now `count`.
    pub(super) fn done(&mut self, id: &str, count: u64) {
        if let Some(code) = self.waiting.remove(id)
            && count > self.count
        {
            self.done_bytes += code.len();
            if let Some(replaced) = self.done.insert(count, code) {
                self.done_bytes -= replaced.len();
            }
            while self.done_bytes > KEPT_SOURCE_BYTES
                && let Some((_, oldest)) = self.done.pop_first()
            {
                self.done_bytes -= oldest.len();
            }
        }
        self.count = self.count.max(count);
    }

    /// Whether request `id` is a cell not done yet.
    pub(super) fn is_cell(&self, id: &str) -> bool {
        self.waiting.contains_key(id)
    }

    /// Line `line` (from 1) of cell `file`, trimmed, while request `running`
    /// runs (it is the next count's cell); `None` when unknown or blank.
    pub(super) fn line(&self, running: &str, file: &str, line: usize) -> Option<String> {
        let number = cell_number(file)?;
        let code = if number == self.count + 1 { self.waiting.get(running) } else { self.done.get(&number) }?;
        let text = code.lines().nth(line.checked_sub(1)?)?.trim();
        (!text.is_empty()).then(|| text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/home/u/.cache/cellbox/runner-17b632b3897b07d7";

    /// A real dump (Python 3.11, `ctypes.string_at(0)` in cell 1) with the runner's folder as [`ROOT`].
    const SEGFAULT: &str = r#"Fatal Python error: Segmentation fault

Thread 0x00007ff8dd5986c0 (most recent call first):
  File "/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/protocol.py", line 280 in read_line
  File "/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/main.py", line 143 in _read_requests
  File "/usr/lib/python3.11/threading.py", line 982 in run
  File "/usr/lib/python3.11/threading.py", line 1045 in _bootstrap_inner
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Thread 0x00007ff8ddd9d6c0 (most recent call first):
  File "/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/main.py", line 130 in _watch_parent
  File "/usr/lib/python3.11/threading.py", line 982 in run
  File "/usr/lib/python3.11/threading.py", line 1045 in _bootstrap_inner
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Thread 0x00007ff8de5a26c0 (most recent call first):
  File "/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/capture.py", line 97 in _tick
  File "/usr/lib/python3.11/threading.py", line 982 in run
  File "/usr/lib/python3.11/threading.py", line 1045 in _bootstrap_inner
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Current thread 0x00007ff8df1bab80 (most recent call first):
  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
  File "<cell-1>", line 3 in <module>
  File "/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/execute.py", line 168 in _run_code
  File "/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/execute.py", line 116 in _run_cell
  File "/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/main.py", line 203 in handle
  File "/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/main.py", line 277 in main
  File "/home/u/.cache/cellbox/runner-17b632b3897b07d7/runner.py", line 27 in <module>
"#;

    fn roots() -> Vec<String> {
        vec![ROOT.to_string()]
    }

    fn no_source(_: &str, _: usize) -> Option<String> {
        None
    }

    #[test]
    fn the_view_is_the_cells_traceback_under_the_headline() {
        let source = |file: &str, line: usize| (file == "<cell-1>" && line == 3).then(|| "ctypes.string_at(0)".into());
        assert_eq!(
            cell_view(SEGFAULT, &roots(), &source),
            "Fatal Python error: Segmentation fault\n\
             \n\
             Traceback (most recent call last):\n  \
             File \"<cell-1>\", line 3, in <module>\n    \
             ctypes.string_at(0)\n  \
             File \"/usr/lib/python3.11/ctypes/__init__.py\", line 519, in string_at\n"
        );
    }

    #[test]
    fn threads_the_user_started_are_kept_and_the_runners_are_not() {
        let dump = "Fatal Python error: Aborted\n\n\
            Thread 0x0000000000000002 [worker] (most recent call first):\n  \
            File \"/usr/lib/python3.14/threading.py\", line 359 in wait\n  \
            File \"<cell-2>\", line 4 in work\n  \
            File \"/usr/lib/python3.14/threading.py\", line 1012 in run\n  \
            File \"/usr/lib/python3.14/threading.py\", line 1041 in _bootstrap_inner\n\n\
            Thread 0x0000000000000003 [pool_0] (most recent call first):\n  \
            File \"/usr/lib/python3.14/concurrent/futures/thread.py\", line 90 in _worker\n  \
            File \"/usr/lib/python3.14/threading.py\", line 1012 in run\n\n\
            Thread 0x0000000000000004 [cellbox-parent-watch] (most recent call first):\n  \
            File \"/usr/lib/python3.14/threading.py\", line 359 in wait\n  \
            File \"/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/main.py\", line 130 in _watch_parent\n  \
            File \"/usr/lib/python3.14/threading.py\", line 1012 in run\n\n\
            Current thread 0x0000000000000001 [MainThread] (most recent call first):\n  \
            File \"<cell-3>\", line 1 in <module>\n  \
            File \"/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/execute.py\", line 168 in _run_code\n\n\
            Current thread's C stack trace (most recent call first):\n  \
            Binary file \"/usr/lib/libc.so.6\", at abort+0x20 [0x7f0000000000]\n\n\
            Extension modules: numpy._core._multiarray_umath (total: 1)\n";
        let view = cell_view(dump, &roots(), &no_source);
        assert_eq!(
            view,
            "Fatal Python error: Aborted\n\
             \n\
             Traceback (most recent call last):\n  \
             File \"<cell-3>\", line 1, in <module>\n\
             \n\
             Thread 0x0000000000000002 [worker] (most recent call last):\n  \
             File \"<cell-2>\", line 4, in work\n  \
             File \"/usr/lib/python3.14/threading.py\", line 359, in wait\n\
             \n\
             Thread 0x0000000000000003 [pool_0] (most recent call last):\n  \
             File \"/usr/lib/python3.14/concurrent/futures/thread.py\", line 90, in _worker\n\
             \n\
             Extension modules: numpy._core._multiarray_umath (total: 1)\n"
        );
    }

    #[test]
    fn a_crash_in_the_runners_own_code_says_so() {
        let dump = "Fatal Python error: Segmentation fault\n\n\
            Current thread 0x0000000000000001 (most recent call first):\n  \
            File \"/home/u/.cache/cellbox/runner-17b632b3897b07d7/cellbox_kernel/capture.py\", line 97 in _tick\n  \
            File \"/usr/lib/python3.11/threading.py\", line 982 in run\n";
        let view = cell_view(dump, &roots(), &no_source);
        assert!(view.starts_with("Fatal Python error: Segmentation fault\n\nTraceback (most recent call last):\n"));
        assert!(view.contains("no frame of the cell's code"), "{view}");
        assert!(!view.contains("_tick"), "{view}");
    }

    #[test]
    fn recursion_is_counted_and_the_truncation_marker_kept() {
        let mut dump =
            String::from("Fatal Python error: Segmentation fault\n\nCurrent thread 0x01 (most recent call first):\n");
        for _ in 0..100 {
            dump.push_str("  File \"<cell-1>\", line 2 in f\n");
        }
        dump.push_str("  ...\n");
        let view = cell_view(&dump, &roots(), &|_, n| (n == 2).then(|| "return f()".into()));
        assert_eq!(
            view,
            "Fatal Python error: Segmentation fault\n\nTraceback (most recent call last):\n  ...\n".to_string()
                + &"  File \"<cell-1>\", line 2, in f\n    return f()\n".repeat(3)
                + "  [Previous line repeated 97 more times]\n"
        );
    }

    #[test]
    fn a_dump_without_stacks_is_its_headline() {
        assert_eq!(cell_view("Fatal Python error: Aborted\n\n", &roots(), &no_source), "Fatal Python error: Aborted\n");
    }

    #[test]
    fn last_words_give_a_cell_its_view_then_the_whole_dump() {
        let mut cells = CellSources::default();
        cells.sent("r1", "x = 1\nimport ctypes\nctypes.string_at(0)\n");
        let words = last_words(SEGFAULT, "", Some(("r1", &cells)), &roots());
        let view = cell_view(SEGFAULT, &roots(), &|file, line| cells.line("r1", file, line));
        assert!(view.contains("    ctypes.string_at(0)\n"), "{view}");
        assert_eq!(words.events, [ExecEvent::Stderr(view.clone()), ExecEvent::CrashDump(SEGFAULT.to_string())]);
        assert_eq!(words.quoted, view);
    }

    #[test]
    fn last_words_of_the_hosts_own_request_or_of_none_are_the_whole_dump() {
        let cells = CellSources::default();
        let words = last_words(SEGFAULT, "", Some(("init", &cells)), &roots());
        assert_eq!(words.events, [ExecEvent::Stderr(SEGFAULT.to_string())]);
        assert_eq!(words.quoted, crash_report(SEGFAULT));
        let words = last_words(&format!("runner note\n{SEGFAULT}"), "", None, &roots());
        assert_eq!(words.events, []);
        assert_eq!(words.quoted, format!("runner note\n{}", crash_report(SEGFAULT)));
    }

    #[test]
    fn last_words_without_a_dump_quote_the_messages_else_the_stderr() {
        let words = last_words("cellbox runner failed: x\n", "ignored\n", None, &roots());
        assert_eq!(words, LastWords { events: Vec::new(), quoted: "cellbox runner failed: x\n".into() });
        assert_eq!(last_words(" \n", "the end\n", None, &roots()).quoted, "the end\n");
    }

    #[test]
    fn split_finds_the_dump_after_the_runners_own_messages() {
        assert_eq!(split("note\nFatal Python error: Aborted\n\n"), ("note\n", Some("Fatal Python error: Aborted\n\n")));
        assert_eq!(split("cellbox runner failed: x\n"), ("cellbox runner failed: x\n", None));
        assert_eq!(split("say Fatal Python error: no\n"), ("say Fatal Python error: no\n", None));
    }

    #[test]
    fn crash_report_keeps_the_headline_and_the_crashing_thread() {
        assert_eq!(
            crash_report(SEGFAULT).lines().take(3).collect::<Vec<_>>(),
            [
                "Fatal Python error: Segmentation fault",
                "Current thread 0x00007ff8df1bab80 (most recent call first):",
                "  File \"/usr/lib/python3.11/ctypes/__init__.py\", line 519 in string_at",
            ]
        );
        assert_eq!(crash_report("plain\n"), "plain\n");
    }

    #[test]
    fn cell_sources_follow_the_execution_count() {
        let mut cells = CellSources::default();
        cells.done("init", 0);
        cells.sent("r2", "a = 1\n\nimport ctypes\n");
        cells.done("r2", 1);
        cells.sent("r3", "x = 1\nctypes.string_at(0)\n");
        assert!(cells.is_cell("r3"));
        assert_eq!(cells.line("r3", "<cell-2>", 2).as_deref(), Some("ctypes.string_at(0)"));
        assert_eq!(cells.line("r3", "<cell-1>", 3).as_deref(), Some("import ctypes"));
        assert_eq!(cells.line("r3", "<cell-1>", 2), None, "blank");
        assert_eq!(cells.line("r3", "<cell-1>", 9), None);
        assert_eq!(cells.line("r3", "<cell-3>", 1), None);
        assert_eq!(cells.line("r3", "<string>", 1), None);
        // A cell that did not count (its context failed) is forgotten.
        cells.done("r3", 1);
        assert_eq!(cells.line("r4", "<cell-2>", 2), None);
        assert!(!cells.is_cell("r3"));
    }

    #[test]
    fn cell_sources_stay_bounded() {
        let mut cells = CellSources::default();
        let big = "x = 1\n".repeat(KEPT_SOURCE_BYTES / 6 / 2 + 1);
        for count in 1..=3 {
            cells.sent("r", &big);
            cells.done("r", count);
        }
        assert!(cells.done_bytes <= KEPT_SOURCE_BYTES);
        assert_eq!(cells.line("r9", "<cell-1>", 1), None, "the oldest went first");
        assert_eq!(cells.line("r9", "<cell-3>", 1).as_deref(), Some("x = 1"));
    }
}
