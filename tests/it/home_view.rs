//! A kernel shown its workspace at another path (an E2B sandbox's
//! `/home/user`): the path is made in the kernel's own mount namespace, never
//! on the host, what lay beside it stays readable and unwritable, and every
//! way a kernel enters its folder (a spawned runner, a forked one, a program
//! started like a kernel, a call's cwd) gives it that path.
//!
//! The views here are made beside the test's own folders (`<tmp>/home/user`),
//! so that the host's `/home` is not what the test depends on; the cover of a
//! parent that lacks the path and the bind onto a path that exists are both
//! taken. Linux only: only there has a kernel a mount namespace of its own.
#![cfg(target_os = "linux")]

use crate::common;

use std::path::{Path, PathBuf};

use cellbox_engine::tool::{EngineConfig, EvalEngine};
use cellbox_kernels::sandbox::SandboxPolicy;
use common::engine::eval_timed;

struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// The kernel's workspace on the host.
    work: PathBuf,
    /// The parent of the view: `<root>/home`, with a user's folder, a file and a link in it.
    parent: PathBuf,
}

fn place() -> Place {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let work = root.join("server/alice/e2b/abc");
    let parent = root.join("home");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(parent.join("bob")).unwrap();
    std::fs::write(work.join("hello.txt"), "hello from the workspace\n").unwrap();
    std::fs::write(parent.join("bob/notes.txt"), "bob's notes\n").unwrap();
    std::fs::write(parent.join("motd"), "a file beside the homes\n").unwrap();
    std::os::unix::fs::symlink("bob", parent.join("robert")).unwrap();
    Place { _dir: dir, root, work, parent }
}

fn engine(place: &Place, seen: &Path, mut policy: SandboxPolicy, preload: &[&str]) -> EvalEngine {
    let mut config = EngineConfig::new(&place.work);
    config.python = Some(common::python().display().to_string());
    config.artifacts_dir = place.root.join("artifacts");
    config.artifact_retention = None;
    config.runner_cache_dir = Some(place.root.join("runner-cache"));
    config.preload = preload.iter().map(|m| m.to_string()).collect();
    policy.home_view = Some(seen.to_path_buf());
    policy.private_shm = true;
    config.sandbox = policy;
    EvalEngine::new(config)
}

/// What a kernel sees of its folder and of the view's neighbours, and what it may do there.
fn probe(place: &Place, seen: &Path) -> String {
    format!(
        r#"
import os, subprocess
seen, parent = {seen:?}, {parent:?}
print("cwd:", os.getcwd() == seen, "home:", os.environ.get("HOME") == seen)
print("shell:", subprocess.run(["pwd"], capture_output=True, text=True).stdout.strip() == seen)
print("read:", open("hello.txt").read().strip())
open("relative.txt", "w").write("r")
open(os.path.join(seen, "absolute.txt"), "w").write("a")
print("bob:", open(os.path.join(parent, "bob/notes.txt")).read().strip())
print("motd:", open(os.path.join(parent, "motd")).read().strip())
print("link:", os.readlink(os.path.join(parent, "robert")))
def refused(label, act):
    try:
        act()
        print(label, "DONE")
    except Exception:
        print(label, "refused")
refused("plant beside:", lambda: open(os.path.join(parent, "planted"), "w").write("x"))
refused("plant in bob:", lambda: open(os.path.join(parent, "bob/planted"), "w").write("x"))
refused("chmod bob:", lambda: os.chmod(os.path.join(parent, "bob/notes.txt"), 0o777))
refused("unmount:", lambda: subprocess.run(["umount", seen], check=True, capture_output=True))
os.symlink("../bob", "up")
refused("through a planted link:", lambda: open(os.path.join(seen, "up/planted"), "w").write("x"))
"#,
        seen = seen.display().to_string(),
        parent = place.parent.display().to_string(),
    )
}

/// The kernel's answers to [`probe`] when its view works, and the host after it.
fn check(place: &Place, seen: &Path, text: &str) {
    for line in [
        "cwd: True home: True",
        "shell: True",
        "read: hello from the workspace",
        "bob: bob's notes",
        "motd: a file beside the homes",
        "link: bob",
        "plant beside: refused",
        "plant in bob: refused",
        "chmod bob: refused",
        "unmount: refused",
        "through a planted link: refused",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert!(!text.contains("DONE"), "{text}");
    // The kernel's writes are in its workspace, and nothing was made on the host for the view.
    assert_eq!(std::fs::read_to_string(place.work.join("relative.txt")).unwrap(), "r");
    assert_eq!(std::fs::read_to_string(place.work.join("absolute.txt")).unwrap(), "a");
    for marker in [place.parent.join("planted"), place.parent.join("bob/planted")] {
        assert!(!marker.exists(), "{} appeared on the host", marker.display());
    }
    if seen.parent() == Some(place.parent.as_path()) && seen.file_name() == Some("user".as_ref()) {
        assert!(!seen.exists(), "the view's path was made on the host");
    }
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&place.parent.join("bob/notes.txt").metadata().unwrap().permissions());
    assert_ne!(mode & 0o777, 0o777);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kernel_sees_its_workspace_at_the_view_made_in_its_own_namespace_only() {
    let place = place();
    let seen = place.parent.join("user");
    let engine = engine(&place, &seen, SandboxPolicy::default(), &[]);
    let result = eval_timed(&engine, &probe(&place, &seen), 120.0).await;
    engine.dispose_all().await;
    assert!(!result.is_error, "{}", result.text);
    check(&place, &seen, &result.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forked_kernel_and_a_program_started_like_a_kernel_see_it_too() {
    let place = place();
    let seen = place.parent.join("user");
    let engine = engine(&place, &seen, SandboxPolicy::default(), &["json"]);
    let result = eval_timed(&engine, &probe(&place, &seen), 120.0).await;
    assert!(!result.is_error, "{}", result.text);
    check(&place, &seen, &result.text);
    let forked = eval_timed(&engine, "import sys; print('forked:', 'json' in sys.modules)", 120.0).await;
    assert!(forked.text.contains("forked: True"), "the kernel came from the fork server: {}", forked.text);
    // A program the host starts for the kernel's sake, in a folder of the workspace.
    std::fs::create_dir_all(place.work.join("sub")).unwrap();
    let (mut command, _guard) =
        engine.command_like_a_kernel(Path::new("/bin/pwd"), &place.work.join("sub"), &Default::default()).unwrap();
    let output = command.output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), seen.join("sub").display().to_string());
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_view_onto_a_folder_that_exists_hides_it_and_leaves_it_untouched() {
    let place = place();
    let seen = place.parent.join("bob");
    let engine = engine(&place, &seen, SandboxPolicy::default(), &[]);
    let code = format!(
        "import os\nprint(os.getcwd() == {seen:?}, sorted(os.listdir('.')))\nopen('new.txt', 'w').write('n')",
        seen = seen.display().to_string()
    );
    let result = eval_timed(&engine, &code, 120.0).await;
    engine.dispose_all().await;
    assert!(result.text.contains("True ['hello.txt']"), "{}", result.text);
    assert!(place.work.join("new.txt").exists());
    assert!(!seen.join("new.txt").exists(), "the folder under the view was written");
    assert_eq!(std::fs::read_to_string(seen.join("notes.txt")).unwrap(), "bob's notes\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_sandbox_the_kernel_sees_the_real_path() {
    let place = place();
    let seen = place.parent.join("user");
    let engine = engine(&place, &seen, SandboxPolicy::off(), &[]);
    let result = eval_timed(&engine, "import os; print(os.getcwd())", 120.0).await;
    engine.dispose_all().await;
    assert_eq!(result.text.trim(), place.work.display().to_string(), "{}", result.text);
    assert!(!seen.exists());
}
