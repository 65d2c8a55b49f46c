//! Bakes the git revision into the binary (`CELLBOX_GIT_REVISION`), so
//! `cellbox --version` and `cellbox doctor` say exactly what was built.
//!
//! From a checkout it asks git; from a packaged crate (no `.git`) it reads the
//! commit cargo recorded in `.cargo_vcs_info.json`; a build environment may
//! also set `CELLBOX_GIT_REVISION` itself. Otherwise the revision is `unknown`.

use std::path::Path;
use std::process::Command;

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
    println!("cargo:rerun-if-env-changed=CELLBOX_GIT_REVISION");
    let manifest_dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
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
    let revision = from_env.or_else(from_git).or_else(|| packaged_revision(&manifest_dir));
    println!("cargo:rustc-env=CELLBOX_GIT_REVISION={}", revision.as_deref().unwrap_or("unknown"));
}
