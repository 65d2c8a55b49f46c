//! What the host keeps while a kernel lives.

use std::path::Path;
use std::sync::Arc;

use super::limits::{Cgroup, Controller};
use super::{format_size, network, temp};

/// What the host keeps while the kernel lives: its private temp dir and its
/// cgroups (removed when the kernel is gone), and what explains its death.
/// Both are shared with the kernel's forks that need them (see
/// [`SandboxGuard::shared`]): they go when the last of those kernels goes.
#[derive(Debug, Default)]
pub struct SandboxGuard {
    pub(super) tmp: Option<Arc<temp::KernelTemp>>,
    pub(super) cgroups: Vec<Arc<Cgroup>>,
    pub(super) memory_limit: Option<u64>,
    /// The proxies of a kernel whose network is filtered by name.
    pub(super) proxy: Option<Arc<network::Proxy>>,
}

impl SandboxGuard {
    /// `memory limit exceeded (4 GiB)` when the kernel's memory cgroup hit its
    /// limit (the kernel's OOM killer then ended the process).
    pub fn memory_exceeded(&self) -> Option<String> {
        let limit = self.memory_limit?;
        self.cgroups
            .iter()
            .find(|g| g.controller == Controller::Memory)
            .filter(|g| g.oom_killed())
            .map(|_| format!("memory limit exceeded ({})", format_size(limit)))
    }

    /// The same temp dir, cgroups and limit, held also by a fork that stays
    /// in the kernel's cgroups (a checkpoint).
    pub fn shared(&self) -> SandboxGuard {
        SandboxGuard {
            tmp: self.tmp.clone(),
            cgroups: self.cgroups.clone(),
            memory_limit: self.memory_limit,
            proxy: self.proxy.clone(),
        }
    }

    /// This guard with `other`'s temp dir and proxies: a fork's own cgroups,
    /// the temp dir its sandbox was made for (a fork keeps the source's
    /// filesystem rules) and the proxies of the network namespace it stays in.
    pub fn with_temp_dir_of(mut self, other: &SandboxGuard) -> SandboxGuard {
        self.tmp = other.tmp.clone();
        self.proxy = other.proxy.clone();
        self
    }

    /// This guard with `other`'s network proxies: a kernel forked in the
    /// network namespace `other`'s process made.
    pub fn with_network_of(mut self, other: &SandboxGuard) -> SandboxGuard {
        self.proxy = other.proxy.clone();
        self
    }

    /// What the kernel's network proxies decided, when its network is filtered by name.
    pub fn network_log(&self) -> Option<&network::NetworkLog> {
        self.proxy.as_ref().map(|proxy| &*proxy.log)
    }

    /// The kernel's private temp dir, when it has one.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.tmp.as_ref().map(|t| t.path())
    }
}
