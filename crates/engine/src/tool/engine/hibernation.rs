//! Making an engine with its hibernation ([`crate::session::hibernate`]),
//! resolved once from its configuration, and what front ends ask of it at a stop.

use std::sync::Arc;
use std::time::Duration;

use super::EvalEngine;
use crate::session::{Hibernation, KernelHandle, SlotGuard};
use crate::tool::config::{EngineConfig, KernelMode};

impl EvalEngine {
    /// Create an engine. Call from within a tokio runtime so idle kernels are
    /// reaped and old artifacts pruned in the background. A hibernation
    /// folder that cannot be used is logged and hibernation left off; see
    /// [`EvalEngine::try_new`] to be told instead.
    pub fn new(mut config: EngineConfig) -> Self {
        match Self::hibernation_for(&config) {
            Ok(hibernation) => Self::with_hibernation(config, hibernation),
            Err(error) => {
                tracing::warn!("sessions will not hibernate: {error}");
                config.hibernate = false;
                Self::with_hibernation(config, None)
            }
        }
    }

    /// [`EvalEngine::new`], refusing a state folder it cannot use (another
    /// process holds it, or it cannot be made).
    pub fn try_new(config: EngineConfig) -> std::io::Result<Self> {
        let hibernation = Self::hibernation_for(&config)?;
        Ok(Self::with_hibernation(config, hibernation))
    }

    pub(super) fn hibernation_for(config: &EngineConfig) -> std::io::Result<Option<Arc<Hibernation>>> {
        let on_gateway = matches!(config.backend, crate::session::Backend::Gateway(_));
        if !config.hibernate || config.mode == KernelMode::PerCall || on_gateway || !cfg!(target_os = "linux") {
            // Elsewhere kernels have no control socket to hand a file over.
            return Ok(None);
        }
        let hibernation = match &config.state_dir {
            Some(dir) => {
                config.check_state_dir().map_err(std::io::Error::other)?;
                Hibernation::keeping(dir)?
            }
            None => Hibernation::temporary(&crate::session::hibernate::temporary_root())?,
        };
        Ok(Some(Arc::new(hibernation)))
    }

    /// Hibernate every Python kernel no call is using (a call still running
    /// gets a few seconds to end), so that with a state folder the next engine
    /// on it finds these sessions again (a server's stop). Returns how many
    /// were hibernated; 0 when this engine does not hibernate.
    pub async fn hibernate_all(&self, why: &str) -> usize {
        self.pool.hibernate_all(why, Duration::from_secs(5)).await
    }

    /// Whether hibernated sessions outlive this engine (it has a state folder).
    pub fn keeps_sessions(&self) -> bool {
        self.pool.hibernation().is_some_and(|hibernation| hibernation.keeps())
    }

    /// Whether `session` is hibernated now (its next call wakes it).
    pub fn is_hibernated(&self, session: &str) -> bool {
        self.pool.is_sleeping(session)
    }

    /// When `guard`'s session sleeps in its folder, bring its variables back
    /// into `kernel` (just put in the slot) before any cell of the call runs;
    /// the call's result says so. On a task of its own: a call cancelled
    /// meanwhile does not leave the wake half done.
    pub(super) async fn wake_if_hibernated(&self, guard: &mut SlotGuard<'_>, kernel: &Arc<KernelHandle>) {
        let Some(hibernation) = self.pool.hibernation() else { return };
        let Some(record) = hibernation.take(&guard.key().session, &guard.key().cwd) else { return };
        let (hibernation, woken) = (hibernation.clone(), kernel.clone());
        let wake = tokio::spawn(async move { hibernation.wake(&woken, record).await });
        let note = wake.await.unwrap_or_else(|error| format!("This session's wake from hibernation failed: {error}."));
        guard.add_note(note);
    }
}
