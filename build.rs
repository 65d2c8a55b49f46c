//! Bakes the git revision into the binary (`CELLBOX_GIT_REVISION`), so
//! `cellbox --version` and `cellbox doctor` say exactly what was built.
//!
//! From a checkout it asks git; from a packaged crate (no `.git`) it reads the
//! commit cargo recorded in `.cargo_vcs_info.json`; a build environment may
//! also set `CELLBOX_GIT_REVISION` itself. Otherwise the revision is `unknown`.
//!
//! When maturin builds the wheel it also builds the Python SDK's in-process
//! engine for it ([`wheel_engine`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// `{"git": {"sha1": "…"}}`, written by `cargo package`.
fn packaged_revision(manifest_dir: &Path) -> Option<String> {
    let info = std::fs::read_to_string(manifest_dir.join(".cargo_vcs_info.json")).ok()?;
    let start = info.find("\"sha1\"")? + "\"sha1\"".len();
    let rest = info[start..].trim_start().strip_prefix(':')?.trim_start().strip_prefix('"')?;
    let sha = &rest[..rest.find('"')?];
    Some(sha.chars().take(12).collect())
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    revision(&manifest_dir);
    wheel_engine(&manifest_dir);
}

/// Where pyproject.toml's `include` takes the engine from.
const PLACED_ENGINE: &str = "python/cellbox/_engine.abi3.so";

/// The wheel's in-process engine (`cellbox._engine`, the `cellbox-sdk-engine` crate).
///
/// maturin packs one kind of artifact per wheel, here the `cellbox` binary; a second, the PyO3
/// extension, has to be in the package folder before maturin writes the wheel. pyproject.toml
/// tells cargo `CELLBOX_WHEEL_ENGINE=1` (`[tool.maturin] config`), so every maturin build (a
/// plain `maturin build`, `pip install` from the sdist, `scripts/build-wheel`) comes through
/// here: the engine is built for the same target and profile in a target folder of its own
/// (the outer build holds the lock on this one's) and copied to [`PLACED_ENGINE`]. A failed
/// build fails the wheel: a wheel without its engine would run the SDK's child engine instead,
/// slower and without a word.
fn wheel_engine(manifest_dir: &Path) {
    println!("cargo:rerun-if-env-changed=CELLBOX_WHEEL_ENGINE");
    let asked = std::env::var("CELLBOX_WHEEL_ENGINE").unwrap_or_default();
    if asked != "1" && asked != "placed" {
        return;
    }
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let target = var("TARGET");
    let library = if target.contains("windows") {
        println!(
            "cargo:warning=no in-process engine for Windows wheels yet: the SDK runs its engine as a child process"
        );
        return;
    } else if target.contains("apple") {
        "lib_engine.dylib"
    } else {
        "lib_engine.so"
    };
    let placed = manifest_dir.join(PLACED_ENGINE);
    // scripts/build-wheel builds the engine beside the binary in the shared target folder and
    // places it itself (an environment variable outranks cargo's `[env]`).
    if asked == "placed" {
        assert!(placed.is_file(), "CELLBOX_WHEEL_ENGINE=placed, but there is no {PLACED_ENGINE}");
        return;
    }
    // Built again when anything it is made of changes, or when the placed copy is gone.
    for input in ["crates", "runner", "runner-js", "runner-bash", "Cargo.lock", PLACED_ENGINE] {
        println!("cargo:rerun-if-changed={}", manifest_dir.join(input).display());
    }
    let target_dir = PathBuf::from(var("OUT_DIR")).join("sdk-engine");
    let release = var("PROFILE") == "release";
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.current_dir(manifest_dir);
    cargo.args(["build", "--quiet", "-p", "cellbox-sdk-engine", "--target", &target, "--target-dir"]);
    cargo.arg(&target_dir);
    if release {
        cargo.arg("--release");
    }
    // This script's stdout is cargo's to read; the inner build's output goes to its log.
    cargo.stdout(Stdio::null());
    match cargo.status() {
        Ok(status) if status.success() => {}
        Ok(status) => panic!(
            "the wheel's in-process engine: `cargo build -p cellbox-sdk-engine` ended with {status} (its errors are above)"
        ),
        Err(error) => panic!("the wheel's in-process engine: could not run cargo: {error}"),
    }
    let built = target_dir.join(&target).join(if release { "release" } else { "debug" }).join(library);
    if let Err(error) = std::fs::copy(&built, &placed) {
        panic!("the wheel's in-process engine: copying {} to {}: {error}", built.display(), placed.display());
    }
    // cargo reruns this script when a file it watches is newer than the script's start; the
    // copy takes Cargo.lock's date so it counts as changed only when it is deleted or replaced.
    let dated = std::fs::metadata(manifest_dir.join("Cargo.lock")).and_then(|lock| lock.modified());
    if let Ok(date) = dated {
        let _ = std::fs::File::options().write(true).open(&placed).and_then(|file| file.set_modified(date));
    }
}

/// `CELLBOX_GIT_REVISION` for the binary.
fn revision(manifest_dir: &Path) {
    println!("cargo:rerun-if-env-changed=CELLBOX_GIT_REVISION");
    let from_env = std::env::var("CELLBOX_GIT_REVISION").ok().filter(|r| !r.trim().is_empty());
    let from_git = || {
        if !manifest_dir.join(".git").exists() {
            return None;
        }
        // A new commit or checkout rebuilds only this crate.
        for dir_arg in ["--git-dir", "--git-common-dir"] {
            if let Some(dir) = git(&["-C", manifest_dir.to_str()?, "rev-parse", dir_arg]) {
                let dir = manifest_dir.join(dir);
                println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
                println!("cargo:rerun-if-changed={}", dir.join("packed-refs").display());
                if let Some(reference) = git(&["-C", manifest_dir.to_str()?, "symbolic-ref", "-q", "HEAD"]) {
                    println!("cargo:rerun-if-changed={}", dir.join(reference).display());
                }
            }
        }
        git(&["-C", manifest_dir.to_str()?, "rev-parse", "--short=12", "HEAD"])
    };
    let revision = from_env.or_else(from_git).or_else(|| packaged_revision(manifest_dir));
    println!("cargo:rustc-env=CELLBOX_GIT_REVISION={}", revision.as_deref().unwrap_or("unknown"));
}
