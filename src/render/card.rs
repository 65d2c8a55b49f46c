//! The cell renderer for terminals: a block per cell with its title, code,
//! output and status.
//!
//! On a TTY a running cell shows a live tail of its output (collapsed, by
//! default the last 10 lines, redrawn in place); `expand` streams everything.
//! Off a TTY (pipes, CI) it writes plain text with no escape codes: outputs
//! go to their own streams, and cell headers and statuses to stderr only when
//! a call has several cells, so a single cell prints exactly what Python would.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::json_tree::json_tree;
use super::status::{is_hidden, status_line};
use super::style::Style;
use crate::output::display::DisplayPart;
use crate::tool::{CellStatus, EvalEvent, EvalResult};

/// How cells are drawn.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    pub style: Style,
    /// A terminal: cards, live tail redraws.
    pub tty: bool,
    /// Show all output instead of the tail.
    pub expand: bool,
    /// Lines of the collapsed tail (10 for tool calls, 20 in the REPL).
    pub preview_lines: usize,
    /// Longer lines are clamped with `… [N chars omitted]`.
    pub max_line_chars: usize,
    /// Draw images inline (a terminal with an image protocol).
    pub inline_images: bool,
    /// Where images are saved when they cannot be drawn.
    pub image_dir: PathBuf,
    /// Print a header (title or first code line, and the code) per cell.
    pub headers: bool,
    /// The live tail is redrawn at most this often.
    pub redraw_interval: Duration,
}

impl RenderOptions {
    /// Options for this process's stdout.
    pub fn detect(expand: bool) -> Self {
        use std::io::IsTerminal;
        let tty = std::io::stdout().is_terminal();
        RenderOptions {
            style: Style::detect(),
            tty,
            expand,
            preview_lines: 10,
            max_line_chars: 4000,
            inline_images: tty && super::images::terminal_protocol().is_some(),
            image_dir: std::env::temp_dir().join("cellbox-images"),
            headers: true,
            redraw_interval: REDRAW_INTERVAL,
        }
    }
}

/// Where a piece of text goes off a TTY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    Out,
    Err,
}

struct LiveCell {
    /// What the cell waits for before it runs ("starting kernel on gateway… (12 s)"), shown instead of "running".
    waiting: Option<String>,
    /// Still running: the tail ends with a "running" line.
    running: bool,
    tail: VecDeque<(Channel, String)>,
    partial: [String; 2],
    total_lines: usize,
    drawn: usize,
    last_draw: Instant,
    /// Output arrived within the redraw interval and is not on screen yet
    /// ([`CardRenderer::tick`] draws it).
    undrawn: bool,
}

/// Renders a call's events, cell by cell.
pub struct CardRenderer<O: Write, E: Write> {
    out: O,
    err: E,
    options: RenderOptions,
    codes: Vec<String>,
    cell_count: usize,
    live: Option<LiveCell>,
    hidden_lines: usize,
    /// Off a TTY: when (ms into the wait) a slow kernel start was last reported.
    waiting_reported: Option<u64>,
}

/// Redraws of the live tail are at most this frequent by default.
pub const REDRAW_INTERVAL: Duration = Duration::from_millis(50);
/// Off a TTY, a kernel start is first reported once it has taken this long…
const QUIET_START_MS: u64 = 10_000;
/// …and again this often while it goes on.
const QUIET_START_REPEAT_MS: u64 = 30_000;
/// Lines of code shown in a collapsed header.
const CODE_PREVIEW_LINES: usize = 8;

impl<O: Write, E: Write> CardRenderer<O, E> {
    /// `codes` are the cells' sources (for headers).
    pub fn new(out: O, err: E, options: RenderOptions, codes: Vec<String>) -> Self {
        let cell_count = codes.len();
        CardRenderer { out, err, options, codes, cell_count, live: None, hidden_lines: 0, waiting_reported: None }
    }

    /// Draw output that a redraw held back (it came within the redraw
    /// interval of the last one). Called every interval while a call runs
    /// (see [`redrawing`]): without it, a line printed just after another
    /// would stay off screen until the cell printed again, however late.
    pub fn tick(&mut self) {
        if self.live.as_ref().is_some_and(|live| live.undrawn) {
            self.redraw_tail(false);
        }
    }

    /// Take one streamed event.
    pub fn event(&mut self, event: &EvalEvent) {
        match event {
            EvalEvent::CellStarted { index, title } => self.start_cell(*index, title.as_deref()),
            EvalEvent::Stdout { text, .. } => self.text(Channel::Out, text, None),
            EvalEvent::Stderr { text, .. } => self.text(Channel::Err, text, None),
            EvalEvent::Display { parts, .. } => {
                // JSON is shown as a tree; its text/plain would say the same again.
                let has_json = parts.iter().any(|p| matches!(p, DisplayPart::Json(_)));
                for part in parts {
                    if !(has_json && matches!(part, DisplayPart::Text(_))) {
                        self.part(part);
                    }
                }
            }
            EvalEvent::Status { event, .. } if is_hidden(event) => {}
            EvalEvent::Status { event, .. } => {
                let line = self.options.style.cyan(&format!("· {}", status_line(event)));
                self.text(Channel::Err, &format!("{line}\n"), Some(()));
            }
            EvalEvent::Error { error, .. } => {
                let traceback = error.traceback.concat();
                let body = if traceback.trim().is_empty() {
                    format!("{}: {}\n", error.ename, error.evalue)
                } else {
                    traceback
                };
                let painted: String = body.lines().map(|line| format!("{}\n", self.options.style.red(line))).collect();
                self.text(Channel::Err, &painted, None);
            }
            EvalEvent::CellFinished { status, duration_ms, .. } => self.finish_cell(*status, *duration_ms),
            EvalEvent::Note { text } => {
                let line = self.options.style.yellow(&format!("! {text}"));
                self.write_line(Channel::Err, &line);
            }
            EvalEvent::KernelStarting { elapsed_ms, .. } => self.kernel_starting(event.waiting_line(), *elapsed_ms),
        }
        let _ = self.out.flush();
        let _ = self.err.flush();
    }

    /// The end of the call: notes, skipped cells, and where the full output is.
    pub fn finish(&mut self, result: &EvalResult) {
        for cell in result.cells.iter().filter(|c| c.status == CellStatus::Skipped) {
            if self.decorated() {
                let title = self.title_of(cell.index, cell.title.as_deref());
                let line = self.options.style.dim(&format!("– {title} · skipped"));
                self.write_line(Channel::Err, &line);
            }
        }
        for note in &result.notes {
            let line = self.options.style.yellow(&format!("! {note}"));
            self.write_line(Channel::Err, &line);
        }
        if let Some(uri) = &result.artifact
            && (self.hidden_lines > 0 || result.truncated)
        {
            let line = self.options.style.dim(&format!("full output: {uri}  (cellbox artifact {uri})"));
            self.write_line(Channel::Err, &line);
        }
        let _ = self.out.flush();
        let _ = self.err.flush();
    }

    /// Headers, footers and notes are shown on a TTY, or off it for several cells.
    fn decorated(&self) -> bool {
        self.options.headers && (self.options.tty || self.cell_count > 1)
    }

    fn title_of(&self, index: usize, title: Option<&str>) -> String {
        match title {
            Some(title) => title.to_string(),
            None => {
                let first = self.codes.get(index).and_then(|c| c.lines().find(|l| !l.trim().is_empty())).unwrap_or("");
                clamp(first.trim(), 60)
            }
        }
    }

    fn start_cell(&mut self, index: usize, title: Option<&str>) {
        if self.decorated() {
            let name = self.title_of(index, title);
            let header = if self.cell_count > 1 { format!("[{}] {name}", index + 1) } else { name };
            if self.options.tty {
                let line = format!("{} {}", self.options.style.cyan("●"), self.options.style.bold(&header));
                self.write_line(Channel::Out, &line);
                let code = self.codes.get(index).cloned().unwrap_or_default();
                let lines: Vec<&str> = code.lines().collect();
                let shown = if self.options.expand { lines.len() } else { lines.len().min(CODE_PREVIEW_LINES) };
                for line in &lines[..shown] {
                    let text = self.options.style.dim(&format!("│ {line}"));
                    self.write_line(Channel::Out, &text);
                }
                if shown < lines.len() {
                    let more = self.options.style.dim(&format!("│ … {} more lines of code", lines.len() - shown));
                    self.write_line(Channel::Out, &more);
                }
            } else {
                self.write_line(Channel::Err, &format!("── cell {} · {} ──", index + 1, self.title_of(index, title)));
            }
        }
        self.live = Some(LiveCell {
            waiting: None,
            running: true,
            tail: VecDeque::new(),
            partial: [String::new(), String::new()],
            total_lines: 0,
            drawn: 0,
            last_draw: Instant::now() - REDRAW_INTERVAL,
            undrawn: false,
        });
        self.redraw_tail(true);
    }

    fn part(&mut self, part: &DisplayPart) {
        match part {
            DisplayPart::Text(text) => self.text(Channel::Out, &format!("{}\n", text.trim_end_matches('\n')), None),
            DisplayPart::Json(value) => {
                let tree: String = json_tree(value).into_iter().map(|l| format!("{l}\n")).collect();
                self.text(Channel::Out, &tree, None);
            }
            DisplayPart::Image { mime, data } => {
                self.redraw_tail(true);
                let placed =
                    super::images::place_image(mime, data, self.options.inline_images, &self.options.image_dir);
                if let Some(line) = placed {
                    let line = self.options.style.dim(&line);
                    self.text(Channel::Out, &format!("{line}\n"), Some(()));
                }
            }
            DisplayPart::Status(event) if is_hidden(event) => {}
            DisplayPart::Status(event) => {
                let line = self.options.style.cyan(&format!("· {}", status_line(event)));
                self.text(Channel::Err, &format!("{line}\n"), Some(()));
            }
        }
    }

    /// Output text. Off a TTY it is written as it comes (status lines only
    /// where decorated); on a TTY it joins the live tail.
    fn text(&mut self, channel: Channel, text: &str, decoration: Option<()>) {
        if !self.options.tty {
            if decoration.is_some() && !self.decorated() {
                return;
            }
            let clamped = clamp_lines(text, self.options.max_line_chars);
            let _ = match channel {
                Channel::Out => self.out.write_all(clamped.as_bytes()),
                Channel::Err => self.err.write_all(clamped.as_bytes()),
            };
            return;
        }
        let max = self.options.max_line_chars;
        let Some(live) = self.live.as_mut() else {
            let _ = self.out.write_all(clamp_lines(text, max).as_bytes());
            return;
        };
        let slot = usize::from(channel == Channel::Err);
        live.partial[slot].push_str(text);
        while let Some(end) = live.partial[slot].find('\n') {
            let line: String = live.partial[slot].drain(..=end).collect();
            live.total_lines += 1;
            live.tail.push_back((channel, clamp(line.trim_end_matches('\n'), max)));
            let keep = if self.options.expand { usize::MAX } else { self.options.preview_lines };
            while live.tail.len() > keep {
                live.tail.pop_front();
            }
        }
        self.redraw_tail(false);
    }

    /// On a TTY: erase the drawn tail and draw the current one.
    fn redraw_tail(&mut self, force: bool) {
        if !self.options.tty {
            return;
        }
        let Some(live) = self.live.as_mut() else { return };
        if !force && live.last_draw.elapsed() < self.options.redraw_interval {
            live.undrawn = true;
            return;
        }
        live.last_draw = Instant::now();
        live.undrawn = false;
        let mut frame = String::new();
        if live.drawn > 0 {
            frame.push_str(&format!("\x1b[{}F\x1b[J", live.drawn));
        }
        let hidden = live.total_lines.saturating_sub(live.tail.len());
        let mut drawn = 0;
        if hidden > 0 {
            frame.push_str(&self.options.style.dim(&format!("  … {hidden} more lines above")));
            frame.push('\n');
            drawn += 1;
        }
        for (_, line) in &live.tail {
            frame.push_str(&format!("  {line}\n"));
            drawn += 1;
        }
        if let Some(waiting) = &live.waiting {
            frame.push_str(&self.options.style.dim(&format!("  ⋯ {waiting}")));
            frame.push('\n');
            drawn += 1;
        } else if live.running && self.options.headers {
            frame.push_str(&self.options.style.dim("  ⋯ running"));
            frame.push('\n');
            drawn += 1;
        }
        live.drawn = drawn;
        let _ = self.out.write_all(frame.as_bytes());
    }

    /// The cell's kernel is still starting (`line`), or is ready (`None`). On
    /// a TTY the line replaces "running" in the live tail; off a TTY a start
    /// that takes long is reported on stderr now and then, so a pipe does not
    /// look stuck.
    fn kernel_starting(&mut self, line: Option<String>, elapsed_ms: u64) {
        if self.options.tty {
            if let Some(live) = self.live.as_mut() {
                live.waiting = line;
                self.redraw_tail(true);
            } else if let Some(line) = line {
                let line = self.options.style.dim(&format!("⋯ {line}"));
                self.write_line(Channel::Err, &line);
            }
            return;
        }
        let Some(line) = line else {
            self.waiting_reported = None;
            return;
        };
        let due = match self.waiting_reported {
            None => elapsed_ms >= QUIET_START_MS,
            Some(last) => elapsed_ms >= last + QUIET_START_REPEAT_MS,
        };
        if due {
            self.waiting_reported = Some(elapsed_ms);
            self.write_line(Channel::Err, &format!("⋯ {line}"));
        }
    }

    fn finish_cell(&mut self, status: CellStatus, duration_ms: u64) {
        if let Some(live) = self.live.as_mut() {
            live.running = false;
            for slot in 0..2 {
                if !live.partial[slot].is_empty() {
                    let rest = std::mem::take(&mut live.partial[slot]);
                    live.total_lines += 1;
                    live.tail.push_back((if slot == 0 { Channel::Out } else { Channel::Err }, clamp(&rest, 4000)));
                    if live.tail.len() > self.options.preview_lines && !self.options.expand {
                        live.tail.pop_front();
                    }
                }
            }
            self.hidden_lines += live.total_lines.saturating_sub(live.tail.len());
        }
        self.redraw_tail(true);
        self.live = None;
        if !self.decorated() {
            return;
        }
        let style = self.options.style;
        let (mark, word) = match status {
            CellStatus::Ok => (style.green("✓"), "ok".to_string()),
            CellStatus::Error => (style.red("✗"), style.red("error")),
            CellStatus::Cancelled => (style.yellow("⊘"), style.yellow("cancelled")),
            CellStatus::Timeout => (style.yellow("⏱"), style.yellow("timeout")),
            CellStatus::Killed => (style.red("☠"), style.red("killed")),
            CellStatus::Skipped => (style.dim("–"), style.dim("skipped")),
        };
        let line = format!("{mark} {word} · {}", format_duration(duration_ms));
        let channel = if self.options.tty { Channel::Out } else { Channel::Err };
        self.write_line(channel, &line);
    }

    fn write_line(&mut self, channel: Channel, line: &str) {
        let text = format!("{line}\n");
        let _ = match channel {
            Channel::Out => self.out.write_all(text.as_bytes()),
            Channel::Err => self.err.write_all(text.as_bytes()),
        };
    }
}

/// Await `call` (an eval whose events go to `renderer`), ticking the
/// renderer every redraw interval meanwhile so held-back output is drawn.
pub async fn redrawing<T, O: Write, E: Write>(
    renderer: &std::sync::Mutex<CardRenderer<O, E>>,
    call: impl std::future::Future<Output = T>,
) -> T {
    let period = renderer.lock().unwrap().options.redraw_interval.max(Duration::from_millis(1));
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(call);
    loop {
        tokio::select! {
            // Ticks first: after a stall, held-back output is drawn before the call's end is taken.
            biased;
            _ = ticks.tick() => renderer.lock().unwrap().tick(),
            outcome = &mut call => return outcome,
        }
    }
}

/// `850 ms`, `1.25 s`, `2 min 3 s`.
pub fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.2} s", ms as f64 / 1000.0)
    } else {
        format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// A line longer than `max` characters keeps its start and end.
pub fn clamp(line: &str, max: usize) -> String {
    let count = line.chars().count();
    if count <= max {
        return line.to_string();
    }
    let head: String = line.chars().take(max * 3 / 4).collect();
    let tail: String = line.chars().skip(count - max / 4).collect();
    format!("{head}… [{} chars omitted] …{tail}", count - max * 3 / 4 - max / 4)
}

fn clamp_lines(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    text.split_inclusive('\n')
        .map(|line| {
            let (body, newline) = match line.strip_suffix('\n') {
                Some(body) => (body, "\n"),
                None => (line, ""),
            };
            format!("{}{newline}", clamp(body, max))
        })
        .collect()
}
