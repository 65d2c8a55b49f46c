//! What an engine's kernels may reach, and what the engine does on their
//! files itself: the sandbox policy of its kernels, the paths tool calls
//! name (held to the workspace), the engine's confined file work, and the
//! notes that explain the sandbox's refusals.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::EvalEngine;
use crate::discovery::{self, env};
use crate::sandbox::host_files::HostFiles;
use crate::sandbox::{Confinement, SandboxPolicy};
use crate::session::{Backend, SlotGuard};
use crate::tool::call::EvalError;
use crate::tool::result::Collector;

impl EvalEngine {
    /// The sandbox policy of this engine's kernels: the configured one, whose
    /// workspace is the engine's default working folder.
    pub fn kernel_policy(&self) -> SandboxPolicy {
        let mut policy = self.config.sandbox.clone();
        policy.workspace.get_or_insert_with(|| self.config.default_cwd.clone());
        // Hibernated sessions' files, every engine's (this one's may hibernate nothing): each goes back to
        // its own session through an open file, never by path.
        policy.deny_read.push(crate::session::hibernate::temporary_root());
        if let Some(hibernation) = self.pool().hibernation().filter(|hibernation| hibernation.keeps()) {
            policy.deny_read.push(hibernation.denied().to_path_buf());
        }
        policy
    }

    /// A program started as this engine's kernels are: under their sandbox
    /// policy, with their environment plus `extra` (which wins), in a session
    /// of its own, in `cwd`. What an E2B sandbox's processes run as; the guard
    /// must outlive the program.
    pub fn command_like_a_kernel(
        &self,
        program: &Path,
        cwd: &Path,
        extra: &std::collections::BTreeMap<String, String>,
    ) -> Result<(std::process::Command, crate::sandbox::SandboxGuard), crate::sandbox::SandboxError> {
        let mut vars = self.config.extra_env.clone();
        vars.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        let env = env::kernel_env(std::env::vars_os(), &discovery::EnvActivation::None, &vars);
        crate::sandbox::command_like_a_kernel(program, &self.kernel_policy(), cwd, &env)
    }

    /// One note naming the hosts the kernels' network proxies refused during
    /// the call (each once, with why), and how to allow them; the counts go
    /// to [`EvalEngine::network_counts`].
    pub(super) fn report_network(
        &self,
        kernels: &[(crate::runtime::Interpreter, SlotGuard<'_>)],
        collector: &mut Collector,
    ) {
        let mut refused = Vec::new();
        for (_, guard) in kernels {
            let Some(kernel) = guard.kernel() else { continue };
            let (refusals, allowed_count, refused_count) = kernel.network_decisions();
            self.network.add(allowed_count, refused_count);
            refused.extend(refusals.into_iter().map(|refusal| refusal.to_string()));
        }
        if !refused.is_empty() {
            collector.note(format!(
                "Sandbox: the network policy ({}) refused {}. To let cells reach a host, start cellbox with it in \
                 --network allow:HOST,….",
                self.config.sandbox.hosts,
                refused.join("; ")
            ));
        }
    }

    /// Connections the kernels' network proxies allowed and refused, as
    /// counted at the end of each call.
    pub fn network_counts(&self) -> (u64, u64) {
        self.network.get()
    }

    /// A note for each refusal of the sandbox the call's cells ran into: which
    /// rule, and the flag that lifts it (see [`crate::tool::denials`]). Not for
    /// gateway kernels, which the sandbox does not reach.
    pub(super) fn explain_denials(&self, collector: &mut Collector, cwd: &Path) {
        // Gateway kernels are outside the sandbox; where it is not enforced, nothing is its doing.
        if collector.evidence().is_empty()
            || !matches!(self.config.backend, Backend::Process)
            || crate::sandbox::filesystem_unenforceable(&self.config.sandbox).is_some()
        {
            return;
        }
        let env = env::kernel_env(std::env::vars_os(), &discovery::EnvActivation::None, &self.config.extra_env);
        let home = crate::sandbox::kernel_home(&env);
        let policy = self.kernel_policy();
        let notes = crate::tool::denials::explain(collector.evidence(), &policy, &self.config.default_cwd, cwd, &home);
        for note in notes {
            collector.note(note);
        }
    }

    /// The engine's own work on its workspace's files (the SDK's files API,
    /// notebook exports): confined by its kernels' rules and done by file
    /// descriptor, rooted in its default working folder. Made once; `Err` says
    /// why it cannot be (this host enforces Landlock but the rules could not be built).
    pub fn host_files(&self) -> Result<Arc<HostFiles>, String> {
        self.host_files
            .get_or_init(|| {
                let env = env::kernel_env(std::env::vars_os(), &discovery::EnvActivation::None, &self.config.extra_env);
                let home = crate::sandbox::kernel_home(&env);
                let root = self.config.default_cwd.clone();
                Confinement::new(&self.kernel_policy(), &root, &home)
                    .map(|confinement| Arc::new(HostFiles::new(confinement, root)))
                    .map_err(|error| error.to_string())
            })
            .clone()
    }

    /// The working folder a call asks for (relative: from the default one),
    /// resolved once (see [`EvalEngine::tool_path`]).
    pub(in crate::tool) fn resolve_cwd(&self, requested: Option<&str>) -> Result<PathBuf, EvalError> {
        let real = match requested {
            Some(dir) => self.tool_path("cwd", dir)?,
            None => crate::sandbox::resolve(&self.config.default_cwd),
        };
        crate::kernel::validate_cwd(&real).map_err(EvalError::InvalidCwd)?;
        Ok(real)
    }

    /// A path a tool call names (`what`: a `cwd`, a notebook or a snapshot
    /// file), from the default working folder when relative (`~/` from the
    /// home folder), resolved once (symlinks followed as far as it exists) and
    /// checked before anything says whether a path outside exists. Under a
    /// sandbox (and always on a server that keeps calls in their workspace) it
    /// must lead inside the workspace or an `--allow-write` folder; the
    /// resolved path is what is used from then on.
    pub fn tool_path(&self, what: &'static str, requested: &str) -> Result<PathBuf, EvalError> {
        let path = match requested.strip_prefix("~/") {
            Some(rest) => dirs::home_dir().unwrap_or_default().join(rest),
            None if requested == "~" => dirs::home_dir().unwrap_or_default(),
            None => self.config.default_cwd.join(requested),
        };
        let real = crate::sandbox::resolve(&crate::sandbox::host_files::lexical(&path));
        let confined = self.config.cwd_inside_default || self.config.sandbox.mode != crate::sandbox::SandboxMode::Off;
        if confined {
            let policy = self.kernel_policy();
            let mut places = vec![self.config.default_cwd.clone()];
            if policy.mode == crate::sandbox::SandboxMode::WorkspaceWrite && !self.config.cwd_inside_default {
                places.extend(policy.allow_write.iter().cloned());
            }
            if !places.iter().any(|place| real.starts_with(crate::sandbox::resolve(place))) {
                return Err(EvalError::OutsideWorkspace {
                    what,
                    path: requested.to_string(),
                    workspace: self.config.default_cwd.clone(),
                });
            }
        }
        Ok(real)
    }
}
