//! The environment: runner files, the cwd and the artifacts folder changing under a session.

use std::path::PathBuf;

use cellbox_engine::tool::{CallContext, EvalError, EvalParams};

use super::harness::{Harness, assert_has, harness, harness_with};
use crate::common::{PATIENCE, eventually};

fn runner_folder(h: &Harness) -> PathBuf {
    let cache = h.dir.path().join("runner-cache");
    std::fs::read_dir(&cache).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).expect("the runner folder")
}

#[tokio::test]
async fn environment_runner_file_deleted_between_calls() {
    let h = harness();
    h.start("s").await;
    let folder = runner_folder(&h);
    std::fs::remove_dir_all(&folder).unwrap();
    h.next_call_works("s").await;
    h.engine.reset_session("s").await;
    h.next_call_works("s").await;
    assert!(folder.join("runner.py").is_file(), "put back for the new kernel");
    h.finish().await;
}

#[tokio::test]
async fn environment_runner_file_modified_between_calls() {
    let h = harness();
    h.start("s").await;
    let main = runner_folder(&h).join("cellbox_kernel/main.py");
    let original = std::fs::read(&main).unwrap();
    // Same length, so only a content check can notice.
    let mut broken = b"raise SystemExit(9)\n".to_vec();
    broken.resize(original.len(), b'#');
    std::fs::write(&main, &broken).unwrap();
    h.next_call_works("s").await;
    h.engine.reset_session("s").await;
    h.next_call_works("s").await;
    // The call's kernel may be a spare started before the change; the next kernel to start
    // (the spare that replaces it, made in the background) puts the file back first.
    let restored = eventually(PATIENCE, || std::fs::read(&main).is_ok_and(|now| now == original)).await;
    assert!(restored, "the runner file was not put back");
    h.finish().await;
}

#[tokio::test]
async fn environment_cwd_deleted_during_a_session() {
    let h = harness();
    let pid = h.start("s").await;
    let work = h.dir.path().join("work");
    if h.engine.config().sandbox.mode == cellbox_kernels::sandbox::SandboxMode::Off {
        let result = h
            .run("s", "import os, shutil\nprint('before the delete')\nshutil.rmtree(os.getcwd())\nos.getcwd()", 10)
            .await;
        assert_has(&result, "before the delete");
        assert_has(&result, "FileNotFoundError");
    } else {
        // In the sandbox a cell cannot remove the workspace folder itself
        // (that is a write to its parent); the world around it still can.
        let code = "import os\nprint('before the delete')\ntry:\n    os.rmdir(os.getcwd())\nexcept OSError as e:\n    print(type(e).__name__)";
        let result = h.run("s", code, 10).await;
        assert_has(&result, "before the delete\nPermissionError");
        std::fs::remove_dir_all(&work).unwrap();
    }
    let error = h.call(&EvalParams::code("1"), &CallContext::new("s"), 10).await.unwrap_err();
    assert!(matches!(error, EvalError::InvalidCwd(_)), "{error}");
    assert!(error.to_string().contains(&work.display().to_string()), "{error}");
    std::fs::create_dir(&work).unwrap();
    h.next_call_works("s").await;
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.finish().await;
}

#[tokio::test]
async fn environment_artifacts_folder_not_writable() {
    // A path under a regular file cannot be created, even by root.
    let h = harness_with(|config, dir| {
        std::fs::write(dir.join("a-file"), "").unwrap();
        config.artifacts_dir = dir.join("a-file/artifacts");
    });
    h.start("s").await;
    let result = h.run("s", "print('before'); print('x' * 100)", 10).await;
    assert!(!result.is_error, "{}", result.text);
    assert_has(&result, "before\n");
    assert!(result.artifact.is_none());
    assert_has(&result, "The full output could not be saved");
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn environment_artifacts_on_a_full_tmpfs() {
    let mount_point = tempfile::tempdir().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(mount_point.path())
        .output();
    match mounted {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            eprintln!("skipped: cannot mount a tmpfs here ({})", String::from_utf8_lossy(&out.stderr).trim());
            return;
        }
        Err(e) => {
            eprintln!("skipped: cannot run mount ({e})");
            return;
        }
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount_point.path().to_path_buf());
    let artifacts = mount_point.path().to_path_buf();
    let h = harness_with(|config, _| config.artifacts_dir = artifacts);
    h.start("s").await;
    let code =
        "print('before the flood')\nfor i in range(30_000): print(f'{i:06d}', 'z' * 93)\nprint('after the flood')";
    let result = h.run("s", code, 60).await;
    assert!(!result.is_error, "{}", &result.text[..result.text.len().min(500)]);
    assert!(result.text.starts_with("before the flood\n"));
    assert!(result.text.contains("after the flood\n"), "the text is whole even when the disk is not");
    assert_has(&result, "The full output could not be saved");
    h.next_call_works("s").await;
    h.finish().await;
}
