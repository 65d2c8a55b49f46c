//! The flags that configure an SDK engine: those of `cellbox sdk-server`, which
//! the SDK's in-process engine parses too, so both engines of a `Sandbox` are
//! configured by the same words.

use std::time::Duration;

use crate::kernel_args::KernelArgs;
use crate::settings::Environment;
use crate::tool::EngineConfig;

/// `cellbox sdk-server`'s flags.
#[derive(Debug, clap::Args)]
pub struct EngineArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    /// Warm spare kernels kept ready per kernel configuration in use (0: none).
    #[arg(long, value_name = "N", default_value_t = 1)]
    spares: usize,
    /// Stop once idle this long, no call in progress and no command running
    /// (the SDK's `timeout=`; 0: never).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0, value_parser = idle_seconds)]
    idle_timeout: f64,
    /// A variable of this engine's environment that every kernel and command gets as it is,
    /// past the filter that keeps the host's other variables from them (the SDK's `envs=`, whose
    /// values stay off the command line); repeatable. One that is not set is an error.
    #[arg(long = "env", value_name = "NAME")]
    envs: Vec<String>,
}

/// [`EngineArgs`] alone, for parsing a flag list that did not come from a command line.
#[derive(Debug, clap::Parser)]
#[command(name = "cellbox sdk-server", no_binary_name = true)]
struct Flags {
    #[command(flatten)]
    args: EngineArgs,
}

impl EngineArgs {
    /// Parse `flags` (no program name first), as `cellbox sdk-server` would. A variable a flag
    /// reads that is set but blank counts as not set, as it does for the binary (which takes it out
    /// of its environment before parsing; the SDK's process cannot change its own environment).
    pub fn parse(flags: &[String]) -> Result<Self, String> {
        let command = <Flags as clap::CommandFactory>::command().mut_args(crate::kernel_args::without_blank_env);
        let matches = command.try_get_matches_from(flags).map_err(|e| e.to_string())?;
        <Flags as clap::FromArgMatches>::from_arg_matches(&matches).map(|flags| flags.args).map_err(|e| e.to_string())
    }

    /// The engine's configuration (its working folder checked first) and its idle limit, with
    /// the variables of `env` that no flag sets and the kernels' variables `--env` names.
    pub fn engine_config(&self, env: &Environment) -> Result<(EngineConfig, Option<Duration>), String> {
        let mut config = self.kernel.engine_config(env)?;
        config.spare.count = self.spares;
        for name in &self.envs {
            let value = std::env::var(name).map_err(|error| format!("--env {name}: {error}"))?;
            config.extra_env.insert(name.clone(), value);
        }
        // A timeout too long to count is no limit at all.
        let idle = (self.idle_timeout > 0.0).then(|| Duration::try_from_secs_f64(self.idle_timeout).ok()).flatten();
        Ok((config, idle))
    }
}

fn idle_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => Ok(seconds),
        _ => Err(format!("expected 0 (never) or more seconds, not {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(flags: &[&str]) -> Result<EngineConfig, String> {
        let flags: Vec<String> = flags.iter().map(|flag| flag.to_string()).collect();
        let env = Environment::from_pairs(std::iter::empty::<(&str, &str)>()).unwrap();
        EngineArgs::parse(&flags)?.engine_config(&env).map(|(config, _)| config)
    }

    #[test]
    fn env_passes_the_named_variables_of_the_engine_s_environment_to_kernels() {
        // HOME and PATH are set wherever the tests run.
        let chosen = config(&["--env", "PATH", "--env", "HOME"]).unwrap();
        assert_eq!(chosen.extra_env.get("PATH"), std::env::var("PATH").ok().as_ref());
        assert_eq!(chosen.extra_env.get("HOME"), std::env::var("HOME").ok().as_ref());
        assert_eq!(chosen.extra_env.len(), 2);
        let missing = config(&["--env", "SDK_TEST_NEVER_SET_VARIABLE"]).unwrap_err();
        assert!(missing.starts_with("--env SDK_TEST_NEVER_SET_VARIABLE: "), "{missing}");
    }
}
