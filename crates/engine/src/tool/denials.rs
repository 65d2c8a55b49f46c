//! Denials that explain themselves. A cell refused by the sandbox sees a
//! bare errno (`PermissionError: [Errno 13]`, `EACCES`, `Network is
//! unreachable`), which tells a model nothing it can act on. The engine keeps
//! the lines of a call's errors and stderr that carry such an errno
//! ([`Evidence`]); when the call ends, each path they name is held against
//! the sandbox's rules, and a refusal the sandbox made gets one note naming
//! the rule and the flag that lifts it. A refusal the OS would have made
//! anyway (a file the user cannot write either) gets none.

use std::path::{Path, PathBuf};

use crate::sandbox::{Denial, FileAccess, NetworkMode, SandboxMode, SandboxPolicy, file_access, resolve};

/// Lines kept per call, at most.
const MAX_LINES: usize = 16;
/// The longest line kept (a line may be anything a cell printed).
const MAX_LINE_BYTES: usize = 1024;
/// Paths looked at per line, at most.
const MAX_PATHS_PER_LINE: usize = 4;
/// Notes given per call, at most.
const MAX_NOTES: usize = 3;

/// The words an errno of a refusal is shown with, in Python, Node and the shell's tools.
const REFUSED: &[&str] = &["ermission denied", "peration not permitted", "EACCES", "EPERM"];
/// The words of a network the kernel does not have.
const UNREACHABLE: &[&str] = &[
    "etwork is unreachable",
    "ENETUNREACH",
    "emporary failure in name resolution",
    "ame or service not known",
    "EAI_AGAIN",
    "ENOTFOUND",
];

/// What a call's cells said that may be the sandbox's doing.
#[derive(Debug, Default)]
pub struct Evidence {
    lines: Vec<String>,
    /// The start of a stream's line whose end has not come yet (at most
    /// [`MAX_LINE_BYTES`]): a tool writes its message in pieces (`cat: `,
    /// the path, `: Permission denied`), which the host may read apart.
    partial: String,
}

impl Evidence {
    /// Take in a piece of a stream (stderr): its lines, joined across pieces,
    /// are looked at once whole.
    pub fn look_at_stream(&mut self, text: &str) {
        if self.lines.len() >= MAX_LINES {
            return;
        }
        let mut rest = text;
        while let Some(end) = rest.find('\n') {
            self.extend_partial(&rest[..end]);
            let line = std::mem::take(&mut self.partial);
            self.keep_if_refusal(&line);
            rest = &rest[end + 1..];
        }
        self.extend_partial(rest);
    }

    /// Take in whole text (an error's `name: value`): every line of it is looked at.
    pub fn look_at(&mut self, text: &str) {
        for line in text.lines() {
            self.keep_if_refusal(line);
        }
    }

    /// Whether nothing seen so far reads as a refusal (most calls): there is
    /// then nothing to explain, and nothing of the policy to work out.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.finish().is_none()
    }

    /// The stream's last line, had it no end of line.
    fn finish(&self) -> Option<&str> {
        (!self.partial.is_empty() && self.lines.len() < MAX_LINES && carries_refusal(&self.partial))
            .then_some(self.partial.as_str())
    }

    fn extend_partial(&mut self, piece: &str) {
        let room = MAX_LINE_BYTES.saturating_sub(self.partial.len());
        self.partial.push_str(prefix(piece, room));
    }

    fn keep_if_refusal(&mut self, line: &str) {
        if self.lines.len() < MAX_LINES && carries_refusal(line) {
            self.lines.push(prefix(line, MAX_LINE_BYTES).to_string());
        }
    }
}

fn carries_refusal(line: &str) -> bool {
    REFUSED.iter().chain(UNREACHABLE).any(|words| line.contains(words))
}

/// The longest start of `text` of at most `bytes` bytes that ends on a character.
fn prefix(text: &str, bytes: usize) -> &str {
    let mut end = text.len().min(bytes);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One note per refusal the sandbox made (at most [`MAX_NOTES`]): which rule,
/// and how to lift it. `cwd` is where the cells ran, `home` the kernels' home.
pub fn explain(evidence: &Evidence, policy: &SandboxPolicy, workspace: &Path, cwd: &Path, home: &Path) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    let lines = evidence.lines.iter().map(String::as_str).chain(evidence.finish());
    let mut access = None;
    for line in lines {
        if notes.len() >= MAX_NOTES {
            break;
        }
        let note = if UNREACHABLE.iter().any(|words| line.contains(words)) {
            network_note(policy.network).into_iter().collect::<Vec<_>>()
        } else if policy.mode == SandboxMode::Off {
            Vec::new()
        } else {
            let access = access.get_or_insert_with(|| file_access(policy, policy.mode, workspace, home, None));
            paths_in(line)
                .into_iter()
                .take(MAX_PATHS_PER_LINE)
                .filter_map(|path| {
                    let path = if path.is_absolute() { path } else { cwd.join(path) };
                    file_note(&path, policy, access)
                })
                .collect()
        };
        for note in note {
            if notes.len() < MAX_NOTES && !notes.contains(&note) {
                notes.push(note);
            }
        }
    }
    notes
}

fn network_note(network: NetworkMode) -> Option<String> {
    match network {
        NetworkMode::On => None,
        NetworkMode::Off => Some(
            "Sandbox: cells have no network here (--network off, CELLBOX_NETWORK=off); start cellbox with --network on \
             to give them the host's network."
                .to_string(),
        ),
        NetworkMode::Localhost => Some(
            "Sandbox: cells reach only their own loopback here (--network localhost), not the internet nor the host's \
             services; start cellbox with --network on to give them the host's network."
                .to_string(),
        ),
        // The proxy names each host it refused (see `EvalEngine::report_network`).
        NetworkMode::Filtered => None,
    }
}

/// The note for a refused `path`, when the sandbox's rules refuse it (and the OS alone would not).
fn file_note(path: &Path, policy: &SandboxPolicy, access: &FileAccess) -> Option<String> {
    let real = resolve(path);
    let shown = path.display();
    match access.denial(&real) {
        Some(Denial::Secret(secret)) => {
            let by_flag = policy.deny_read.iter().any(|denied| resolve(denied) == secret);
            return Some(if by_flag {
                format!(
                    "Sandbox: {shown} is unreadable to cells: it is under {}, given to --deny-read \
                     (CELLBOX_DENY_READ).",
                    secret.display()
                )
            } else {
                format!(
                    "Sandbox: {shown} is unreadable to cells: {} is a secret location (keys, credentials); only \
                     --sandbox off lifts that.",
                    secret.display()
                )
            });
        }
        Some(Denial::Private(_)) => {
            return Some(format!(
                "Sandbox: {shown} belongs to another principal (or kernel) of this server; cells cannot reach it."
            ));
        }
        None => {}
    }
    if access.writable_place(&real).is_some() || !os_lets_user_write(&real) {
        return None;
    }
    Some(match policy.mode {
        SandboxMode::ReadOnly => format!(
            "Sandbox: writing {shown} was refused: the read-only sandbox lets cells write only in their $TMPDIR; \
             start cellbox with --sandbox workspace-write to let them write in the workspace."
        ),
        _ => {
            let places: Vec<String> = access
                .writable
                .iter()
                .filter(|place| !place.starts_with("/dev"))
                .map(|place| place.display().to_string())
                .collect();
            let folder =
                if real.is_dir() { real.clone() } else { real.parent().map_or(real.clone(), Path::to_path_buf) };
            format!(
                "Sandbox: writing {shown} was refused: cells may write only in {} and their $TMPDIR. Start cellbox \
                 with --allow-write {} (CELLBOX_ALLOW_WRITE) to let them write there, or --sandbox off.",
                places.join(", "),
                folder.display()
            )
        }
    })
}

/// Whether this user could write `real` (or make it in its folder) without the sandbox.
#[cfg(unix)]
fn os_lets_user_write(real: &Path) -> bool {
    let mut place = real.to_path_buf();
    loop {
        if place.exists() {
            return nix::unistd::access(&place, nix::unistd::AccessFlags::W_OK).is_ok();
        }
        if !place.pop() {
            return false;
        }
    }
}

#[cfg(not(unix))]
fn os_lets_user_write(_real: &Path) -> bool {
    true
}

/// The paths a refusal's line names: quoted ones (`'/etc/x'`, `"/etc/x"`,
/// Python's `-> 'b'` too) and the shell's `cat: /etc/x: Permission denied`.
fn paths_in(line: &str) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for quote in ['\'', '"'] {
        let mut parts = line.split(quote);
        parts.next();
        while let (Some(inside), _) = (parts.next(), parts.next()) {
            if looks_like_a_path(inside) {
                paths.push(PathBuf::from(inside));
            }
        }
    }
    if paths.is_empty() {
        for field in line.split(": ") {
            let field = field.trim();
            if field.starts_with('/') && !field.contains(' ') {
                paths.push(PathBuf::from(field));
            }
        }
    }
    paths
}

fn looks_like_a_path(text: &str) -> bool {
    !text.is_empty()
        && !text.contains('\n')
        && (text.starts_with('/') || text.starts_with("./") || text.starts_with("../"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_found_in_every_language_s_wording() {
        let cases = [
            ("PermissionError: [Errno 13] Permission denied: '/etc/cellbox'", vec!["/etc/cellbox"]),
            ("PermissionError: [Errno 1] Operation not permitted: '/a' -> '/b'", vec!["/a", "/b"]),
            ("Error: EACCES: permission denied, open '/etc/x'", vec!["/etc/x"]),
            ("touch: cannot touch '/etc/x': Permission denied", vec!["/etc/x"]),
            ("cat: /root/.ssh/id_rsa: Permission denied", vec!["/root/.ssh/id_rsa"]),
            ("bash: line 1: /etc/x: Permission denied", vec!["/etc/x"]),
        ];
        for (line, expected) in cases {
            let found: Vec<PathBuf> = paths_in(line);
            assert_eq!(found, expected.iter().map(PathBuf::from).collect::<Vec<_>>(), "{line}");
        }
    }

    #[test]
    fn each_rule_explains_itself_and_the_os_s_own_refusals_get_no_note() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (work, home, outside) = (base.join("work"), base.join("home"), base.join("outside"));
        for folder in [&work, &home.join(".ssh"), &outside] {
            std::fs::create_dir_all(folder).unwrap();
        }
        let policy = SandboxPolicy {
            workspace: Some(work.clone()),
            kernel_files: Some(base.join("kernel-files")),
            network: NetworkMode::Off,
            ..SandboxPolicy::default()
        };
        let mut evidence = Evidence::default();
        evidence.look_at(&format!("PermissionError: [Errno 13] Permission denied: '{}'", outside.join("x").display()));
        evidence.look_at(&format!("cat: {}: Permission denied", home.join(".ssh/id_rsa").display()));
        evidence.look_at("OSError: [Errno 101] Network is unreachable");
        evidence.look_at("PermissionError: [Errno 13] Permission denied: 'inside.txt'");
        let notes = explain(&evidence, &policy, &work, &work, &home);
        assert_eq!(notes.len(), 3, "{notes:#?}");
        assert!(notes[0].contains("--allow-write") && notes[0].contains(&outside.display().to_string()), "{notes:#?}");
        assert!(notes[1].contains("secret location") && notes[1].contains("--sandbox off"), "{notes:#?}");
        assert!(notes[2].contains("--network on"), "{notes:#?}");
        // Inside the workspace the sandbox refuses nothing: that refusal was the OS's.
        let mut inside = Evidence::default();
        inside.look_at("PermissionError: [Errno 13] Permission denied: 'inside.txt'");
        assert!(explain(&inside, &policy, &work, &work, &home).is_empty());
        assert!(explain(&evidence, &SandboxPolicy::off(), &work, &work, &home).is_empty(), "off: no sandbox to blame");

        // A tool's message read in pieces is one line; so is the last one, without its end of line.
        let secret = home.join(".ssh/id_rsa").display().to_string();
        for ending in ["\n", ""] {
            let mut pieces = Evidence::default();
            for piece in ["cat: ", secret.as_str(), ": Permiss", &format!("ion denied{ending}")] {
                pieces.look_at_stream(piece);
            }
            let notes = explain(&pieces, &policy, &work, &work, &home);
            assert!(notes.len() == 1 && notes[0].contains("secret location"), "{ending:?}: {notes:#?}");
        }
        // An endless line is kept only so far.
        let mut endless = Evidence::default();
        for _ in 0..1000 {
            endless.look_at_stream("Permission denied ");
        }
        assert!(endless.partial.len() <= MAX_LINE_BYTES && endless.finish().is_some());
    }
}
