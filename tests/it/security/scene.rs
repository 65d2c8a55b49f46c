//! What every attack is made in: a workspace, a folder outside it that must
//! stay empty, a home whose `.ssh/id_rsa` holds the canary, and servers.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::common::{self, binary};

/// A string that must never come back from an attack.
pub const CANARY: &str = "cellbox-canary-7f3a9c";

pub struct Scene {
    pub dir: tempfile::TempDir,
    pub work: PathBuf,
    pub outside: PathBuf,
    pub home: PathBuf,
}

impl Scene {
    pub fn new() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (work, outside, home) = (base.join("work"), base.join("outside"), base.join("home"));
        for folder in [&work, &outside, &home.join(".ssh")] {
            std::fs::create_dir_all(folder).unwrap();
        }
        std::fs::write(home.join(".ssh/id_rsa"), format!("-----BEGIN KEY----- {CANARY}\n")).unwrap();
        Scene { dir, work, outside, home }
    }

    /// Nothing appeared outside, the secret is as it was.
    pub fn assert_untouched(&self) {
        let left: Vec<_> = std::fs::read_dir(&self.outside).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(left.is_empty(), "written outside the workspace: {left:?}");
        let key = std::fs::read_to_string(self.home.join(".ssh/id_rsa")).unwrap();
        assert!(key.contains(CANARY), "the secret changed");
        assert!(!self.home.join(".ssh/authorized_keys").exists());
    }

    /// The environment of a cellbox process under attack: the canary home, the
    /// canary among variables the kernels must never see, no interpreter named
    /// (so discovery looks where a kernel can plant one), the test's Python
    /// first on PATH.
    pub fn hostile_env(&self, command: &mut Command) {
        let python_dir = common::python().parent().unwrap().to_path_buf();
        let binary_dir = Path::new(binary::BIN).parent().unwrap().to_path_buf();
        let path = std::env::join_paths([binary_dir, python_dir, "/usr/bin".into(), "/bin".into()]).unwrap();
        command
            .env("HOME", &self.home)
            .env("PATH", path)
            .env("DATABASE_URL", format!("postgres://admin:{CANARY}@db/prod"))
            .env("OPENAI_API_KEY", CANARY)
            .env("SSH_AUTH_SOCK", format!("/tmp/{CANARY}.sock"))
            .env("CELLBOX_ARTIFACTS_DIR", self.dir.path().join("artifacts"))
            .env_remove("CELLBOX_PYTHON")
            .env_remove("VIRTUAL_ENV")
            .env_remove("CONDA_PREFIX");
    }
}

/// A `cellbox serve` under attack: principals `names` (their tokens in order),
/// its root in the scene, the canary in its environment (its own token too).
pub struct Serve {
    pub child: Child,
    pub url: String,
    pub root: PathBuf,
    pub stderr: mpsc::Receiver<String>,
}

impl Serve {
    pub fn start(scene: &Scene, names: &[&str], extra: &[&str]) -> (Serve, Vec<String>) {
        let tokens_file = scene.dir.path().join("tokens.json");
        let tokens = names.iter().map(|name| common::serve::token_add(&tokens_file, name)).collect();
        let root = scene.dir.path().canonicalize().unwrap().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let mut command = binary::bare(["serve", "--listen", "127.0.0.1:0", "--spares", "0"]);
        command.arg("--tokens").arg(&tokens_file).arg("--root").arg(&root).args(extra);
        scene.hostile_env(&mut command);
        command.env("CELLBOX_SERVE_TOKEN", format!("cbx_{CANARY}"));
        let mut child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let (stderr, url) = common::serve::follow_stderr(&mut child);
        (Serve { child, url, root, stderr }, tokens)
    }

    pub fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    /// SIGTERM, then the exit status once the server is gone (within a deadline far above any need).
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let deadline = std::time::Instant::now() + common::PATIENCE;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lines a server printed on stderr since its address, up to now.
pub fn drain(lines: &mpsc::Receiver<String>) -> String {
    let mut out = String::new();
    while let Ok(line) = lines.try_recv() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}
