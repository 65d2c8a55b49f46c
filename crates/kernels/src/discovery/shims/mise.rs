//! mise: shims are links to the `mise` binary; the version comes from `MISE_PYTHON_VERSION`, `mise.toml` or `.tool-versions`.

use super::*;

/// Config files mise reads that this resolver does not: with any of them in
/// a folder on the way up, mise is not followed.
const MISE_UNREAD: &[&str] = &[
    "mise.local.toml",
    ".mise.local.toml",
    ".config/mise.toml",
    ".config/mise/config.toml",
    ".config/mise/mise.toml",
    ".config/mise/conf.d",
    ".mise/config.toml",
    "mise/config.toml",
    ".rtx.toml",
    ".python-version",
];

/// `python` versions in a mise TOML file (`[tools] python = "…"` or a list of strings).
pub fn mise_toml_python(text: &str) -> Result<Option<Vec<String>>, ShimError> {
    let document: toml_edit::DocumentMut = text.parse().map_err(|source| ShimError::TomlSyntax { source })?;
    let Some(tools) = document.get("tools").and_then(|t| t.as_table_like()) else { return Ok(None) };
    if tools.iter().any(|(key, _)| key != "python" && key.ends_with("python")) {
        return Err(ShimError::ThroughBackend);
    }
    let Some(item) = tools.get("python") else { return Ok(None) };
    if let Some(version) = item.as_str() {
        return Ok(Some(vec![version.to_string()]));
    }
    match item.as_array() {
        Some(list) if list.iter().all(|v| v.as_str().is_some()) => {
            Ok(Some(list.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()))
        }
        _ => Err(ShimError::NotVersions),
    }
}

/// mise: `MISE_PYTHON_VERSION`, else the first of `mise.toml`, `.mise.toml`,
/// `.tool-versions` naming python from the cwd upward, else the global
/// config; installs under `<data>/installs/python/<version>`.
pub fn mise(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Option<Result<Followed, ShimError>> {
    if !shim.head.is_empty() {
        return None;
    }
    // The folder's name first: resolving every link of the path costs a system call per part.
    if shim.path.parent()?.file_name()? != "shims" || std::fs::canonicalize(shim.path).ok()?.file_name()? != "mise" {
        return None;
    }
    Some(mise_follow(shim, watched))
}

fn mise_follow(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Result<Followed, ShimError> {
    let input = shim.input;
    if let Some(other) = input
        .manager_vars
        .keys()
        .find(|k| k.starts_with("MISE_") && !matches!(k.as_str(), "MISE_PYTHON_VERSION" | "MISE_DATA_DIR"))
    {
        return Err(ShimError::VariableSet { name: other.clone() });
    }
    let home = input.home.clone().ok_or(ShimError::NoHome)?;
    let data = match (var(input, "MISE_DATA_DIR"), var(input, "XDG_DATA_HOME")) {
        (Some(dir), _) => PathBuf::from(dir),
        (None, Some(xdg)) => Path::new(xdg).join("mise"),
        (None, None) => home.join(".local/share/mise"),
    };
    let shims = data.join("shims");
    if shim.path.parent() != Some(shims.as_path()) {
        return Err(ShimError::NotInShims { dir: shims });
    }
    let (versions, origin) = match var(input, "MISE_PYTHON_VERSION") {
        Some(value) => (vec![value.to_string()], "MISE_PYTHON_VERSION".to_string()),
        None => mise_config_version(input, &home, watched)?,
    };
    pick_install(shim, Manager::Mise, &data.join("installs/python"), &shims, &versions, origin, watched)
}

fn mise_config_version(
    input: &DiscoveryInput,
    home: &Path,
    watched: &mut Vec<PathBuf>,
) -> Result<(Vec<String>, String), ShimError> {
    let config = var(input, "XDG_CONFIG_HOME").map(PathBuf::from).unwrap_or_else(|| home.join(".config"));
    let global = config.join("mise/config.toml");
    for system in [Path::new("/etc/mise/config.toml"), Path::new("/etc/mise/conf.d")] {
        watched.push(system.to_path_buf());
        if system.exists() {
            return Err(ShimError::SystemConfig { path: system.to_path_buf() });
        }
    }
    for dir in upward(&physical(&input.cwd)) {
        for name in MISE_UNREAD {
            let file = dir.join(name);
            watched.push(file.clone());
            if file.exists() && !(dir == home && *name == ".config/mise/config.toml") {
                return Err(ShimError::UnreadConfig { path: file });
            }
        }
        let tomls: Vec<PathBuf> = ["mise.toml", ".mise.toml"].iter().map(|n| dir.join(n)).collect();
        watched.extend(tomls.iter().cloned());
        let present: Vec<&PathBuf> = tomls.iter().filter(|f| f.is_file()).collect();
        if present.len() > 1 {
            return Err(ShimError::TwoMiseTomls { dir: dir.to_path_buf() });
        }
        if let Some(file) = present.first() {
            let text = input
                .read_config(file, false)
                .map_err(|source| ShimError::ReadConfig { path: file.to_path_buf(), source })?;
            if let Some(versions) = mise_toml_python(&text).map_err(|e| e.in_config(file))? {
                return Ok((versions, file.display().to_string()));
            }
        }
        let tool_versions = dir.join(".tool-versions");
        watched.push(tool_versions.clone());
        if let Some(versions) = input.read_config(&tool_versions, false).ok().and_then(|t| tool_versions_python(&t)) {
            return Ok((versions, tool_versions.display().to_string()));
        }
    }
    watched.push(global.clone());
    if let Ok(text) = input.read_config(&global, true)
        && let Some(versions) = mise_toml_python(&text).map_err(|e| e.in_config(&global))?
    {
        return Ok((versions, global.display().to_string()));
    }
    Err(ShimError::NoMiseConfig)
}
