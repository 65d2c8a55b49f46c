//! The signals that ask a front end to stop: Ctrl-C and SIGTERM on Unix;
//! Ctrl-C and the console closing (or the session ending) on Windows.

use std::io;

/// What the user or the system asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// Ctrl-C (SIGINT): stop what runs now.
    Interrupt,
    /// SIGTERM, or the console or session closing: leave.
    Terminate,
}

/// Listens for [`StopSignal`]s from the moment it is made.
pub struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(windows)]
    interrupt: tokio::signal::windows::CtrlC,
    #[cfg(windows)]
    close: tokio::signal::windows::CtrlClose,
    #[cfg(windows)]
    shutdown: tokio::signal::windows::CtrlShutdown,
}

impl StopSignals {
    /// Start listening (inside a tokio runtime).
    #[cfg(unix)]
    pub fn listen() -> io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(StopSignals { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    /// Start listening (inside a tokio runtime).
    #[cfg(windows)]
    pub fn listen() -> io::Result<Self> {
        use tokio::signal::windows::{ctrl_c, ctrl_close, ctrl_shutdown};
        Ok(StopSignals { interrupt: ctrl_c()?, close: ctrl_close()?, shutdown: ctrl_shutdown()? })
    }

    /// The next signal.
    pub async fn next(&mut self) -> StopSignal {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => StopSignal::Interrupt,
            _ = self.terminate.recv() => StopSignal::Terminate,
        }
        #[cfg(windows)]
        tokio::select! {
            _ = self.interrupt.recv() => StopSignal::Interrupt,
            _ = self.close.recv() => StopSignal::Terminate,
            _ = self.shutdown.recv() => StopSignal::Terminate,
        }
    }
}
