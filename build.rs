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
/// here: the engine is built for the same target, in release when the build's profile is a
/// release one, in a target folder of its own (the outer build holds the lock on this one's),
/// and copied to [`PLACED_ENGINE`]. A failed build fails the wheel: a wheel without its engine
/// would run the SDK's child engine instead, slower and without a word. Where no engine can be
/// built (Windows, a static C runtime such as musl's, a source without its crate) the build
/// says so in a warning and the wheel has none.
fn wheel_engine(manifest_dir: &Path) {
    println!("cargo:rerun-if-env-changed=CELLBOX_WHEEL_ENGINE");
    let asked = std::env::var("CELLBOX_WHEEL_ENGINE").unwrap_or_default();
    match asked.as_str() {
        "" | "0" => return,
        "1" | "placed" => {}
        other => panic!("CELLBOX_WHEEL_ENGINE={other:?}: expected 1 (build the engine) or placed"),
    }
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let target = var("TARGET");
    let without = |why: &str| {
        println!(
            "cargo:warning=no in-process engine in this wheel ({why}): the SDK runs its engine as a child process"
        );
    };
    // A packaged crate (crates.io) carries neither the engine's crate nor the Python package.
    if !manifest_dir.join("crates/sdk-engine/Cargo.toml").is_file() {
        return without("its crate, crates/sdk-engine, is not in this source");
    }
    // A static C runtime (musl's default, or `+crt-static`) cannot make a shared library.
    let static_crt = var("CARGO_CFG_TARGET_FEATURE").split(',').any(|feature| feature == "crt-static");
    let library = if target.contains("windows") {
        return without("Windows wheels carry none yet");
    } else if static_crt {
        return without("the target links the C runtime statically");
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
    // Built again when anything it is made of changes (the runners are linked into crates/kernels),
    // or when the placed copy is gone or was put there by another build (another profile or target).
    for input in ["crates", "Cargo.toml", "Cargo.lock", PLACED_ENGINE] {
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
    // A new file renamed over the old: a process that has the old one loaded keeps its pages.
    let fresh = placed.with_extension("so.new");
    if let Err(error) = std::fs::copy(&built, &fresh).and_then(|_| std::fs::rename(&fresh, &placed)) {
        panic!("the wheel's in-process engine: copying {} to {}: {error}", built.display(), placed.display());
    }
    // cargo reruns this script when a file it watches is not older than the script's last start
    // (`invoked.timestamp` beside OUT_DIR). The copy is dated just before this run's start: for
    // this build it is unchanged, for a build of another profile or target that placed its
    // own engine before, it is newer, so that build places its own again.
    let started = PathBuf::from(var("OUT_DIR")).with_file_name("invoked.timestamp");
    let dated = std::fs::metadata(&started)
        .or_else(|_| std::fs::metadata(manifest_dir.join("Cargo.lock")))
        .and_then(|stamp| stamp.modified())
        .map(|date| date - std::time::Duration::from_millis(1));
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
                // Only when it exists: a missing file counts as changed on every build. Packing
                // refs removes the loose file of the branch, which is watched below.
                if dir.join("packed-refs").exists() {
                    println!("cargo:rerun-if-changed={}", dir.join("packed-refs").display());
                }
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
