//! How a command-line run answers Ctrl-C and SIGTERM.

use std::io::Write as _;
use std::sync::Arc;

use cellbox_engine::tool::EvalEngine;
use cellbox_kernels::stop_signals::{StopSignal, StopSignals};
use tokio_util::sync::CancellationToken;

/// Ctrl-C cancels the running cell; a second Ctrl-C, or SIGTERM, stops the kernels and exits.
pub(super) async fn watch_signals(engine: Arc<EvalEngine>, cancel: CancellationToken, terminated: CancellationToken) {
    let Ok(mut signals) = StopSignals::listen() else { return };
    let mut interrupts = 0;
    loop {
        match signals.next().await {
            StopSignal::Interrupt => {
                interrupts += 1;
                if interrupts == 1 {
                    // Not eprintln!: with stderr gone it would panic, and the next signal go unheard.
                    let _ =
                        writeln!(std::io::stderr(), "\ncellbox: interrupting (press Ctrl-C again to stop the kernel)");
                    cancel.cancel();
                    continue;
                }
                engine.dispose_all().await;
                std::process::exit(130);
            }
            StopSignal::Terminate => {
                terminated.cancel();
                engine.dispose_all().await;
                std::process::exit(143);
            }
        }
    }
}
