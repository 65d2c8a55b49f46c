//! The seccomp filter of a kernel in a network namespace of its own.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{SandboxError, Unenforceable, fail};

/// Kernels in a network namespace must not `setns` back into the host's
/// (root could, through `/proc/1/ns/net`): that call fails with EPERM.
pub(super) fn program() -> Result<seccompiler::BpfProgram, SandboxError> {
    use seccompiler::{SeccompAction, SeccompFilter, TargetArch};
    let arch = match std::env::consts::ARCH {
        "x86_64" => TargetArch::x86_64,
        "aarch64" => TargetArch::aarch64,
        "riscv64" => TargetArch::riscv64,
        other => return Err(fail(Unenforceable::SeccompArch { arch: other })),
    };
    let rules = BTreeMap::from([(libc::SYS_setns, vec![])]);
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
        .map_err(|e| fail(Unenforceable::SeccompBuild { source: Arc::new(e) }))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| fail(Unenforceable::SeccompCompile { source: Arc::new(e) }))
}
