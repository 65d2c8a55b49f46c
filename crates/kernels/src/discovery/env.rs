//! Which environment variables reach the kernel.
//!
//! User code must never see the host's secrets, so the kernel's environment
//! is built from an allowlist, not by removing known-bad names: a variable
//! passes only if it is named in [`ALLOWED_VARS`] or starts with one of
//! [`ALLOWED_PREFIXES`], and even then [`is_denied`] strips API keys and other
//! credentials. Callers add variables on purpose with `extra`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use crate::settings;

/// Variables passed through as they are.
pub const ALLOWED_VARS: &[&str] = &[
    // identity, shell and terminal
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    // locale
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    // temporary files
    "TMPDIR",
    "TMP",
    "TEMP",
    // Python and native libraries
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "CONDA_EXE",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "LD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH",
    "MPLBACKEND",
    "MPLCONFIGDIR",
    // numeric libraries' threading and CPU settings
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "CUDA_VISIBLE_DEVICES",
    // certificates and proxies, so `%pip` works behind corporate networks
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "PIP_CERT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

/// Name prefixes passed through (locale categories, XDG folders, cellbox's own settings).
pub const ALLOWED_PREFIXES: &[&str] = &["LC_", "XDG_", settings::PREFIX];

/// Credentials stripped even when an allow rule matches them.
pub const DENIED_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OPENROUTER_API_KEY",
    "MISTRAL_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "COHERE_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "PERPLEXITY_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "REPLICATE_API_TOKEN",
    // Ways into the user's session, which a sandbox does not close (UNIX sockets on disk): the
    // ssh and gpg agents, display servers, message buses, the session's runtime folder, Kerberos
    // tickets and a Docker daemon. A cell that needs one names it in its `env`.
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "KRB5CCNAME",
    "DOCKER_HOST",
    // The host bridge's own settings: the host answers bridge calls, the kernel never needs them.
    settings::LLM_BASE_URL.name,
    settings::LLM_API_KEY.name,
    settings::LLM_MODEL.name,
    settings::AGENT_COMMAND.name,
];

/// Name endings that mark a credential, whatever the prefix (`CELLBOX_FOO_API_KEY`).
pub const DENIED_SUFFIXES: &[&str] = &["_API_KEY", "_SECRET", "_SECRET_KEY", "_TOKEN", "_PASSWORD", "_ACCESS_KEY"];

/// True for names that must never reach the kernel unless passed explicitly.
pub fn is_denied(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    DENIED_VARS.contains(&upper.as_str()) || DENIED_SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
}

/// True for names the allow rules let through.
pub fn is_allowed(name: &str) -> bool {
    ALLOWED_VARS.contains(&name) || ALLOWED_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// Keep the allowed, non-denied variables of `vars` (non-UTF-8 ones are dropped).
pub fn filter_env<I>(vars: I) -> BTreeMap<String, String>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    vars.into_iter()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| is_allowed(name) && !is_denied(name))
        .collect()
}

/// How the chosen interpreter changes the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvActivation {
    /// A virtual environment: `VIRTUAL_ENV` is set and its `bin` leads `PATH`.
    Venv(std::path::PathBuf),
    /// A conda environment: `CONDA_PREFIX` is set and its `bin` leads `PATH`.
    Conda(std::path::PathBuf),
    /// A plain interpreter: a stale `VIRTUAL_ENV` is removed.
    None,
}

/// Build the kernel's whole environment: the filtered host variables, the
/// interpreter's activation, the caller's `extra` variables (which win), then
/// the settings the protocol relies on.
pub fn kernel_env<I>(host: I, activation: &EnvActivation, extra: &BTreeMap<String, String>) -> BTreeMap<String, String>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    let mut env = filter_env(host);
    match activation {
        EnvActivation::Venv(root) => {
            env.insert("VIRTUAL_ENV".into(), root.display().to_string());
            prepend_path(&mut env, &root.join("bin"));
        }
        EnvActivation::Conda(root) => {
            env.insert("CONDA_PREFIX".into(), root.display().to_string());
            prepend_path(&mut env, &root.join("bin"));
        }
        EnvActivation::None => {
            env.remove("VIRTUAL_ENV");
        }
    }
    env.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    env.insert("PYTHONUNBUFFERED".into(), "1".into());
    env.insert("PYTHONIOENCODING".into(), "utf-8".into());
    env.entry("MPLBACKEND".into()).or_insert_with(|| "Agg".into());
    env
}

fn prepend_path(env: &mut BTreeMap<String, String>, dir: &Path) {
    let dir = dir.display().to_string();
    let path = match env.get("PATH") {
        Some(existing) if !existing.is_empty() => format!("{dir}:{existing}"),
        _ => dir,
    };
    env.insert("PATH".into(), path);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect()
    }

    #[test]
    fn keeps_allowed_and_drops_the_rest() {
        let env = filter_env(vars(&[
            ("PATH", "/bin"),
            ("LC_TIME", "C"),
            ("CELLBOX_PYTHON_IPC_TRACE", "1"),
            ("DATABASE_URL", "postgres://u:p@h/db"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("GITHUB_TOKEN", "x"),
        ]));
        assert_eq!(env.keys().collect::<Vec<_>>(), ["CELLBOX_PYTHON_IPC_TRACE", "LC_TIME", "PATH"]);
    }

    #[test]
    fn the_users_session_does_not_reach_kernels() {
        let env = filter_env(vars(&[
            ("SSH_AUTH_SOCK", "/run/user/1000/ssh"),
            ("DISPLAY", ":0"),
            ("WAYLAND_DISPLAY", "wayland-0"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("XDG_CONFIG_HOME", "/home/u/.config"),
        ]));
        assert_eq!(env.keys().collect::<Vec<_>>(), ["XDG_CONFIG_HOME"]);
    }

    #[test]
    fn denylist_wins_over_prefixes() {
        let env = filter_env(vars(&[("CELLBOX_OPENAI_API_KEY", "sk"), ("XDG_SECRET", "x"), ("CELLBOX_MODE", "a")]));
        assert_eq!(env.keys().collect::<Vec<_>>(), ["CELLBOX_MODE"]);
        assert!(is_denied("anthropic_api_key"));
    }

    #[test]
    fn venv_activation_and_protocol_settings() {
        let extra = BTreeMap::from([("OPENAI_API_KEY".to_string(), "chosen".to_string())]);
        let env =
            kernel_env(vars(&[("PATH", "/usr/bin"), ("MPLBACKEND", "pdf")]), &EnvActivation::Venv("/v".into()), &extra);
        assert_eq!(env["PATH"], "/v/bin:/usr/bin");
        assert_eq!(env["VIRTUAL_ENV"], "/v");
        assert_eq!(env["OPENAI_API_KEY"], "chosen", "explicit extras are the caller's choice");
        assert_eq!(env["PYTHONUNBUFFERED"], "1");
        assert_eq!(env["PYTHONIOENCODING"], "utf-8");
        assert_eq!(env["MPLBACKEND"], "pdf", "Agg is only a default");
    }

    #[test]
    fn plain_interpreter_drops_stale_virtual_env() {
        let env = kernel_env(vars(&[("VIRTUAL_ENV", "/gone")]), &EnvActivation::None, &BTreeMap::new());
        assert!(!env.contains_key("VIRTUAL_ENV"));
        assert_eq!(env["MPLBACKEND"], "Agg");
    }
}
