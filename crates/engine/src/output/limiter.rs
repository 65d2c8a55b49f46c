//! Bounding what a model reads: keep the head and the tail of a text stream,
//! elide the middle, and say exactly what was elided.
//!
//! Memory stays bounded however much is pushed: the head is filled once, the
//! tail is a ring of recent lines, and the middle is only counted.

use std::collections::VecDeque;

/// Limits for the model-facing text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextLimits {
    /// Total bytes of kept text (head + tail).
    pub max_bytes: usize,
    /// Total kept lines (head + tail).
    pub max_lines: usize,
    /// A longer single line is clamped, with a note of how much was cut.
    pub max_line_chars: usize,
}

impl Default for TextLimits {
    /// 50 KiB, 3000 lines, 4000 characters a line.
    fn default() -> Self {
        TextLimits { max_bytes: 50 * 1024, max_lines: 3000, max_line_chars: 4000 }
    }
}

/// What [`TextLimiter::finish`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitedText {
    pub head: String,
    pub tail: String,
    pub elided_lines: u64,
    pub elided_bytes: u64,
    pub total_lines: u64,
    pub total_bytes: u64,
    /// Lines whose middle was cut by `max_line_chars`.
    pub clamped_lines: u64,
}

impl LimitedText {
    /// Whether the text leaves anything out: elided lines or clamped ones.
    pub fn is_truncated(&self) -> bool {
        self.is_elided() || self.clamped_lines > 0
    }

    fn is_elided(&self) -> bool {
        self.elided_lines > 0 || self.elided_bytes > 0
    }

    /// The text with a marker in the middle when something was elided, or a
    /// marker at the end when only long lines were clamped; either names the
    /// artifact that holds everything.
    pub fn render(&self, artifact: Option<&str>) -> String {
        if !self.is_elided() {
            let mut text = format!("{}{}", self.head, self.tail);
            if self.clamped_lines > 0 {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                let lines = if self.clamped_lines == 1 { "line was" } else { "lines were" };
                text.push_str(&format!("[{} long {lines} clamped", self.clamped_lines));
                match artifact {
                    Some(uri) => text.push_str(&format!("; full output: {uri}]\n")),
                    None => text.push_str("]\n"),
                }
            }
            return text;
        }
        let mut text = self.head.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[… {} lines ({}) elided", self.elided_lines, human_bytes(self.elided_bytes)));
        match artifact {
            Some(uri) => text.push_str(&format!("; full output: {uri}]\n")),
            None => text.push_str("]\n"),
        }
        text.push_str(&self.tail);
        text
    }
}

/// `12.3 MB`, `850 B`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for next in UNITS {
        if value < 1000.0 {
            break;
        }
        value /= 1000.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

/// Head + tail buffer over a stream of text chunks.
#[derive(Debug)]
pub struct TextLimiter {
    limits: TextLimits,
    head: String,
    head_lines: usize,
    head_closed: bool,
    tail: VecDeque<String>,
    tail_bytes: usize,
    partial: String,
    partial_dropped: usize,
    elided_lines: u64,
    elided_bytes: u64,
    total_lines: u64,
    total_bytes: u64,
    clamped_lines: u64,
}

impl TextLimiter {
    pub fn new(limits: TextLimits) -> Self {
        TextLimiter {
            limits,
            head: String::new(),
            head_lines: 0,
            head_closed: false,
            tail: VecDeque::new(),
            tail_bytes: 0,
            partial: String::new(),
            partial_dropped: 0,
            elided_lines: 0,
            elided_bytes: 0,
            total_lines: 0,
            total_bytes: 0,
            clamped_lines: 0,
        }
    }

    fn head_budget(&self) -> (usize, usize) {
        (self.limits.max_bytes / 2, (self.limits.max_lines / 2).max(1))
    }

    fn tail_budget(&self) -> (usize, usize) {
        let (bytes, lines) = self.head_budget();
        (self.limits.max_bytes - bytes, (self.limits.max_lines - lines).max(1))
    }

    /// Add text; lines are formed across calls.
    pub fn push(&mut self, mut text: &str) {
        self.total_bytes += text.len() as u64;
        // memchr's vectorised search: bulk output is scanned here once, at memory speed.
        while let Some(end) = memchr::memchr(b'\n', text.as_bytes()) {
            // The newline is kept apart from the body, so a line too long to
            // hold still ends where it ended.
            self.append_partial(&text[..end]);
            let mut line = std::mem::take(&mut self.partial);
            line.push('\n');
            let dropped = std::mem::take(&mut self.partial_dropped);
            self.push_line(line, dropped);
            text = &text[end + 1..];
        }
        self.append_partial(text);
    }

    /// Keep at most a little more than one clamped line of an unfinished line.
    fn append_partial(&mut self, text: &str) {
        let keep = self.limits.max_line_chars * 4 + 8;
        if self.partial.len() >= keep {
            self.partial_dropped += text.chars().count();
            return;
        }
        let room = keep - self.partial.len();
        if text.len() <= room {
            self.partial.push_str(text);
        } else {
            let mut cut = room;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            self.partial.push_str(&text[..cut]);
            self.partial_dropped += text[cut..].chars().count();
        }
    }

    fn push_line(&mut self, line: String, dropped_chars: usize) {
        self.total_lines += 1;
        let line = self.clamp(line, dropped_chars);
        let (head_bytes, head_lines) = self.head_budget();
        if !self.head_closed && self.head.len() + line.len() <= head_bytes && self.head_lines < head_lines {
            self.head.push_str(&line);
            self.head_lines += 1;
            return;
        }
        self.head_closed = true;
        self.tail_bytes += line.len();
        self.tail.push_back(line);
        let (tail_bytes, tail_lines) = self.tail_budget();
        while self.tail.len() > 1 && (self.tail_bytes > tail_bytes || self.tail.len() > tail_lines) {
            let old = self.tail.pop_front().expect("not empty");
            self.tail_bytes -= old.len();
            self.elided_lines += 1;
            self.elided_bytes += old.len() as u64;
        }
    }

    fn clamp(&mut self, line: String, dropped_chars: usize) -> String {
        let max = self.limits.max_line_chars;
        let chars = line.chars().count() + dropped_chars;
        if chars <= max {
            return line;
        }
        self.clamped_lines += 1;
        let newline = line.ends_with('\n');
        let keep_head = max * 3 / 4;
        let keep_tail = max - keep_head;
        let body: Vec<char> = line.trim_end_matches('\n').chars().collect();
        let head: String = body.iter().take(keep_head).collect();
        let tail: String = body[body.len().saturating_sub(keep_tail)..].iter().collect();
        let omitted = chars - head.chars().count() - tail.chars().count() - usize::from(newline);
        format!("{head}… [{omitted} chars omitted] …{tail}{}", if newline { "\n" } else { "" })
    }

    /// Close the stream: an unfinished last line counts as a line.
    pub fn finish(mut self) -> LimitedText {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            let dropped = self.partial_dropped;
            self.push_line(line, dropped);
        }
        LimitedText {
            head: self.head,
            tail: self.tail.into_iter().collect(),
            elided_lines: self.elided_lines,
            elided_bytes: self.elided_bytes,
            total_lines: self.total_lines,
            total_bytes: self.total_bytes,
            clamped_lines: self.clamped_lines,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(bytes: usize, lines: usize) -> TextLimits {
        TextLimits { max_bytes: bytes, max_lines: lines, max_line_chars: 100 }
    }

    #[test]
    fn small_output_passes_unchanged() {
        let mut limiter = TextLimiter::new(TextLimits::default());
        limiter.push("a\nb");
        limiter.push("c\n");
        let text = limiter.finish();
        assert!(!text.is_truncated());
        assert_eq!(text.render(None), "a\nbc\n");
    }

    #[test]
    fn keeps_head_and_tail_and_counts_the_middle() {
        let mut limiter = TextLimiter::new(limits(1_000_000, 10));
        for i in 0..100 {
            limiter.push(&format!("line {i}\n"));
        }
        let text = limiter.finish();
        assert_eq!(text.elided_lines, 90);
        let rendered = text.render(Some("artifact://x"));
        assert!(rendered.starts_with("line 0\nline 1\n"));
        assert!(rendered.contains("[… 90 lines ("));
        assert!(rendered.contains("full output: artifact://x]"));
        assert!(rendered.ends_with("line 98\nline 99\n"));
        assert!(!rendered.contains("line 50\n"));
    }

    #[test]
    fn byte_budget_applies_too() {
        let mut limiter = TextLimiter::new(limits(100, 1000));
        for _ in 0..100 {
            limiter.push("0123456789\n");
        }
        let text = limiter.finish();
        assert!(text.head.len() <= 50 && text.tail.len() <= 50);
        assert_eq!(text.total_lines, 100);
        assert_eq!(text.elided_bytes + text.head.len() as u64 + text.tail.len() as u64, 1100);
    }

    #[test]
    fn clamps_absurd_lines_without_holding_them() {
        let mut limiter = TextLimiter::new(limits(100_000, 100));
        for _ in 0..1000 {
            limiter.push(&"x".repeat(10_000));
        }
        limiter.push("\nshort\n");
        let text = limiter.finish();
        assert_eq!(text.clamped_lines, 1);
        let rendered = text.render(None);
        assert!(rendered.contains("chars omitted"), "{rendered}");
        assert!(rendered.len() < 400);
        assert!(rendered.ends_with("short\n[1 long line was clamped]\n"), "{rendered}");
    }

    #[test]
    fn a_line_too_long_to_hold_keeps_its_newline() {
        for chunk in [100_000, 1000, 7] {
            let mut limiter = TextLimiter::new(limits(100_000, 100));
            let line = format!("{}\nnext\n", "y".repeat(70 * 1024));
            for piece in line.as_bytes().chunks(chunk) {
                limiter.push(std::str::from_utf8(piece).unwrap());
            }
            let text = limiter.finish();
            assert_eq!(text.clamped_lines, 1);
            assert_eq!(text.total_lines, 2);
            let rendered = text.render(Some("artifact://a"));
            let lines: Vec<&str> = rendered.lines().collect();
            assert_eq!(lines.len(), 3, "chunks of {chunk}: {rendered}");
            assert!(lines[0].starts_with("yyy") && lines[0].ends_with("yyy"), "{}", lines[0]);
            assert!(lines[0].contains(&format!("… [{} chars omitted] …", 70 * 1024 - 100)), "{}", lines[0]);
            assert_eq!(lines[1], "next");
        }
    }

    #[test]
    fn clamping_alone_marks_the_text_truncated_and_names_the_artifact() {
        let mut limiter = TextLimiter::new(limits(100_000, 100));
        limiter.push(&format!("short\n{}\nend\n", "z".repeat(500)));
        let text = limiter.finish();
        assert!(text.is_truncated());
        assert_eq!(text.elided_lines, 0);
        let rendered = text.render(Some("artifact://abc"));
        assert!(rendered.starts_with("short\nzzz"), "{rendered}");
        assert!(rendered.ends_with("end\n[1 long line was clamped; full output: artifact://abc]\n"), "{rendered}");
        assert_eq!(text.render(None).lines().last(), Some("[1 long line was clamped]"));
    }

    #[test]
    fn an_unfinished_long_line_is_clamped_without_a_newline() {
        let mut limiter = TextLimiter::new(limits(100_000, 100));
        limiter.push(&"q".repeat(300));
        let text = limiter.finish();
        assert_eq!(text.clamped_lines, 1);
        assert!(!text.head.ends_with('\n'), "{}", text.head);
        assert!(text.render(None).ends_with("q\n[1 long line was clamped]\n"));
    }

    #[test]
    fn counts_characters_as_chars_does() {
        for text in ["", "ascii", "añ€😀", &"é€😀x".repeat(1000)] {
            assert_eq!(text.chars().count(), text.chars().count(), "{text}");
        }
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(850), "850 B");
        assert_eq!(human_bytes(12_300_000), "12.3 MB");
    }
}
