//! asdf: python-plugin shims; the version comes from `ASDF_PYTHON_VERSION` or `.tool-versions`.

use super::*;

/// asdf: `ASDF_PYTHON_VERSION`, else the first `.tool-versions` naming
/// python from the cwd upward, else `~/.tool-versions`; installs under
/// `$ASDF_DATA_DIR/installs/python/<version>`.
pub fn asdf(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Option<Result<Followed, ShimError>> {
    if !shim.head.contains("asdf exec") && !shim.head.contains("# asdf-plugin:") {
        return None;
    }
    Some(asdf_follow(shim, watched))
}

fn asdf_follow(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Result<Followed, ShimError> {
    let input = shim.input;
    let plugins: Vec<&str> =
        shim.head.lines().filter_map(|l| l.trim().strip_prefix("# asdf-plugin:")?.split_whitespace().next()).collect();
    if plugins.is_empty() || plugins.iter().any(|p| *p != "python") {
        return Err(ShimError::NotPythonPlugin);
    }
    let home = input.home.clone().ok_or(ShimError::NoHome)?;
    let data = var(input, "ASDF_DATA_DIR").map(PathBuf::from).unwrap_or_else(|| home.join(".asdf"));
    let shims = data.join("shims");
    if shim.path.parent() != Some(shims.as_path()) {
        return Err(ShimError::NotInShims { dir: shims });
    }
    let config = var(input, "ASDF_CONFIG_FILE").map(PathBuf::from).unwrap_or_else(|| home.join(".asdfrc"));
    watched.push(config.clone());
    if input.read_config(&config, true).is_ok_and(|t| {
        t.lines().any(|l| l.split('#').next().unwrap_or("").replace(' ', "").starts_with("legacy_version_file=yes"))
    }) {
        return Err(ShimError::LegacyVersionFiles { config });
    }
    let plugin_bin = data.join("plugins/python/bin");
    for script in ["exec-path", "list-bin-paths", "exec-env"] {
        let file = plugin_bin.join(script);
        watched.push(file.clone());
        if file.exists() {
            return Err(ShimError::PluginScript { script });
        }
    }
    let name = var(input, "ASDF_DEFAULT_TOOL_VERSIONS_FILENAME").unwrap_or(".tool-versions");
    let (versions, origin) = match var(input, "ASDF_PYTHON_VERSION") {
        Some(value) => (value.split_whitespace().map(str::to_string).collect(), "ASDF_PYTHON_VERSION".to_string()),
        None => {
            let mut found = None;
            for dir in upward(&physical(&input.cwd)).map(Path::to_path_buf).chain([home.clone()]) {
                let file = dir.join(name);
                watched.push(file.clone());
                if let Some(versions) = input.read_config(&file, false).ok().and_then(|t| tool_versions_python(&t)) {
                    found = Some((versions, file.display().to_string()));
                    break;
                }
            }
            found.ok_or(ShimError::NoToolVersions)?
        }
    };
    pick_install(shim, Manager::Asdf, &data.join("installs/python"), &shims, &versions, origin, watched)
}
