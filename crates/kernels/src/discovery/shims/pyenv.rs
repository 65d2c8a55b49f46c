//! pyenv: its shim script names its root; the version comes from `PYENV_VERSION`, `.python-version` files or the global `version` file.

use super::*;

/// The value of `export PYENV_ROOT="…"` in a pyenv shim.
pub(super) fn pyenv_root_in(head: &str) -> Option<PathBuf> {
    head.lines().find_map(|line| {
        let value = line.trim().strip_prefix("export PYENV_ROOT=")?;
        let value = value.trim().trim_matches('"');
        (!value.is_empty() && !value.contains('$')).then(|| PathBuf::from(value))
    })
}

/// Versions named in a pyenv version file: the first word of each line,
/// blank lines and `#` comments skipped.
pub fn read_pyenv_version_file(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|word| !word.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Hooks that can change pyenv's choice (`which`, `version-name`, and
/// `exec` hooks other than pyenv's own pip-rehash): with any, pyenv is not
/// followed.
fn pyenv_hooks(root: &Path, input: &DiscoveryInput, watched: &mut Vec<PathBuf>) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        var(input, "PYENV_HOOK_PATH").map(|p| std::env::split_paths(p).collect()).unwrap_or_default();
    dirs.push(root.join("pyenv.d"));
    for system in ["/usr/etc/pyenv.d", "/usr/local/etc/pyenv.d", "/etc/pyenv.d", "/usr/lib/pyenv/hooks"] {
        dirs.push(PathBuf::from(system));
    }
    let plugins = root.join("plugins");
    watched.push(plugins.clone());
    if let Ok(entries) = std::fs::read_dir(&plugins) {
        dirs.extend(entries.flatten().map(|e| e.path().join("etc/pyenv.d")));
    }
    for dir in dirs {
        for kind in ["which", "version-name", "exec"] {
            let hooks = dir.join(kind);
            watched.push(hooks.clone());
            let Ok(entries) = std::fs::read_dir(&hooks) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.ends_with(".bash")
                    && !(kind == "exec" && name == "pip-rehash.bash")
                    && !only_if_not_found(&entry.path())
                {
                    return Some(entry.path());
                }
            }
        }
    }
    None
}

/// A `which` hook that acts only when no version had the program (as
/// pyenv-virtualenv's do): it cannot change an answer that was found.
pub(super) fn only_if_not_found(hook: &Path) -> bool {
    let in_which = hook.parent().is_some_and(|dir| dir.ends_with("pyenv.d/which"));
    let Ok(text) = crate::discovery::input::read_small(hook, true) else { return false };
    let mut code = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
    let opens = code.next().is_some_and(|first| first.starts_with(r#"if [ ! -x "${PYENV_COMMAND_PATH}" ]"#));
    // Nothing after the `fi` that closes the first `if`.
    let mut depth = 1;
    let mut closed_at_end = false;
    for line in code {
        if closed_at_end {
            return false;
        }
        if line.starts_with("if ") {
            depth += 1;
        } else if line == "fi" {
            depth -= 1;
            closed_at_end = depth == 0;
        }
    }
    in_which && opens && closed_at_end
}

/// pyenv: `PYENV_VERSION`, else the first `.python-version` from `PYENV_DIR`
/// (or the cwd) upward, else `$PYENV_ROOT/version`, else `system`; each
/// version's `bin/<program>` in turn, then the next one on PATH.
pub fn pyenv(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Option<Result<Followed, ShimError>> {
    if !(shim.head.contains("pyenv\" exec") || shim.head.contains("pyenv exec")) {
        return None;
    }
    Some(pyenv_follow(shim, watched))
}

fn pyenv_follow(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Result<Followed, ShimError> {
    let input = shim.input;
    let root = pyenv_root_in(shim.head).ok_or(ShimError::NoPyenvRoot)?;
    let program = program_name(shim.path)?;
    if let Some(hook) = pyenv_hooks(&root, input, watched) {
        return Err(ShimError::PyenvHook { hook });
    }
    let (names, origin) = match var(input, "PYENV_VERSION") {
        Some(value) => (value.split(':').map(str::to_string).collect::<Vec<_>>(), "PYENV_VERSION".to_string()),
        None => {
            // pyenv looks from PYENV_DIR upward, then from the working folder upward.
            let cwd = physical(&input.cwd);
            let start = var(input, "PYENV_DIR").map(|d| physical(&absolute(&cwd, d))).unwrap_or_else(|| cwd.clone());
            let local = find_upward(&start, ".python-version", watched)
                .or_else(|| if start != cwd { find_upward(&cwd, ".python-version", watched) } else { None });
            let found_upward = local.is_some();
            let file = local.unwrap_or_else(|| {
                let global = root.join("version");
                watched.push(global.clone());
                global
            });
            let names =
                input.read_config(&file, !found_upward).map(|t| read_pyenv_version_file(&t)).unwrap_or_default();
            (names, file.display().to_string())
        }
    };
    let names: Vec<String> = if names.is_empty() { vec!["system".into()] } else { names };
    let versions = root.join("versions");
    watched.push(versions.clone());
    let mut chosen = Vec::new();
    for name in &names {
        if name == ".." || name.contains('/') {
            return Err(ShimError::VersionIsPath { name: name.clone() });
        }
        if name == "system" {
            chosen.push(name.clone());
            continue;
        }
        let stripped = name.strip_prefix("python-").unwrap_or(name);
        if versions.join(name).is_dir() {
            chosen.push(name.clone());
        } else if versions.join(stripped).is_dir() {
            chosen.push(stripped.to_string());
        } else {
            return Err(ShimError::NotInstalled { version: name.clone(), origin });
        }
    }
    chosen.push("system".into());
    let shims = root.join("shims");
    for version in &chosen {
        let found = if version == "system" {
            system_program(input, &shims, &program, watched)
        } else {
            let file = versions.join(version).join("bin").join(&program);
            watched.push(file.clone());
            is_executable(&file).then_some(file)
        };
        if let Some(interpreter) = found {
            let version = if version == "system" { "system".to_string() } else { version.clone() };
            return Ok(Followed {
                manager: Manager::Pyenv,
                shim: shim.path.to_path_buf(),
                interpreter,
                version,
                origin,
            });
        }
    }
    Err(ShimError::NoVersionHasProgram { versions: names.join(":"), program })
}
