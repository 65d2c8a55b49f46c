//! How one cell's run on its kernel ends: the kernel's side of a cell's timeout, cancellation,
//! kill and crash, as a [`CellOutcome`].
//!
//! [`drive_cell`] reads a cell's [`Execution`] to its end. The runner first acknowledges the cell
//! (its `started` frame); until then a death of the kernel cannot be the cell's doing
//! ([`CellOutcome::DiedBeforeStart`]: it never ran, and may run on another kernel). A spent time
//! budget or a cancellation interrupts the cell, once; a cell that then ends reports the
//! interruption ([`CellEnd::Interrupted`]) and its kernel lives on. A kernel that ignores the
//! interrupt for [`INTERRUPT_ESCALATION`] is stopped as stuck ([`CellOutcome::Killed`]). A kernel
//! that dies after the acknowledgement took the cell with it ([`CellOutcome::Died`], with the last
//! lines of the runner's own diagnostics).
//!
//! What the caller makes of an outcome (statuses, notes, which kernel runs next) is its own.

use std::future::Future;

use tokio::time::Instant;

use super::{CellDone, ExecEvent, Execution, KernelError};
use crate::protocol::DoneStatus;

/// After an interrupt, how long the kernel gets to finish the cell before it is killed.
pub const INTERRUPT_ESCALATION: std::time::Duration = std::time::Duration::from_secs(5);

/// What faulthandler writes first when the runner crashes in C code.
const FAULTHANDLER_HEADLINE: &str = "Fatal Python error";
/// How many lines of a dead runner's diagnostics an outcome quotes.
const DIED_QUOTE_LINES: usize = 12;

/// Why a running cell was interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interruption {
    /// Its time budget was spent.
    Timeout,
    /// Its caller cancelled it (or, for a cell that reports a cancellation nobody asked for, the
    /// kernel was interrupted from elsewhere).
    Cancelled,
}

/// How a cell the runner finished ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellEnd {
    Ok,
    /// It raised.
    Error,
    /// An interrupt stopped it.
    Interrupted(Interruption),
}

/// How a cell's run on its kernel ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellOutcome {
    /// The runner finished the cell (its `done` frame): the kernel lives on.
    Finished { end: CellEnd, execution_count: u64 },
    /// The kernel ignored the interrupt for [`INTERRUPT_ESCALATION`] and was stopped.
    Killed { reason: Interruption },
    /// The kernel died after it began the cell, which may have partly run.
    Died {
        /// How it ended.
        exit: String,
        /// The last lines of the runner's own diagnostics; empty when the cell's output already
        /// shows the crash (faulthandler's stacks).
        last_words: String,
    },
    /// The kernel died before it acknowledged the cell: the cell never ran, so it is not to
    /// blame and may run on another kernel.
    DiedBeforeStart { exit: String },
    /// The cell's events ended without an end or a death: the kernel was shut down meanwhile.
    Closed { interrupted: Option<Interruption> },
    /// The runner sent a frame for the cell that does not parse: the host and the runner disagree
    /// about the wire, so the kernel cannot be trusted with the next cell.
    Unreadable { message: String },
}

/// What a cell's kernel is asked to do while the cell runs.
pub trait Interruptible {
    /// Interrupt the running cell (best effort: an outcome follows either way).
    fn interrupt(&self);
    /// Stop a kernel that ignored an interrupt.
    fn terminate_stuck(&self) -> impl Future<Output = ()> + Send;
}

/// Read `execution`, the cell running on `kernel`, to its end. Every event but the end goes to
/// `on_event`. When `expired` (the cell's time budget) or `cancelled` completes, the kernel is
/// interrupted, once; [`INTERRUPT_ESCALATION`] later it is stopped as stuck.
pub async fn drive_cell(
    kernel: &impl Interruptible,
    execution: &mut Execution,
    expired: impl Future<Output = ()>,
    cancelled: impl Future<Output = ()>,
    mut on_event: impl FnMut(ExecEvent),
) -> CellOutcome {
    let mut cell = CellLifecycle::default();
    // Polled only once the cell is interrupted, after its deadline is set.
    let escalation = tokio::time::sleep_until(Instant::now());
    tokio::pin!(expired, cancelled, escalation);
    loop {
        let waiting = !cell.is_interrupted();
        let interruption = tokio::select! {
            biased;
            item = execution.next() => match cell.take(item) {
                Step::Event(event) => {
                    on_event(event);
                    continue;
                }
                Step::End(outcome) => return outcome,
            },
            _ = &mut expired, if waiting => Interruption::Timeout,
            _ = &mut cancelled, if waiting => Interruption::Cancelled,
            _ = &mut escalation, if !waiting => {
                // It ignored the interrupt: it cannot read an `exit` frame either.
                kernel.terminate_stuck().await;
                return cell.escalated();
            }
        };
        if let Some(deadline) = cell.interrupt(interruption, Instant::now()) {
            kernel.interrupt();
            escalation.as_mut().reset(deadline);
        }
    }
}

/// What one item of a cell's execution means.
#[derive(Debug)]
enum Step {
    /// An event of the running cell.
    Event(ExecEvent),
    /// The cell is over.
    End(CellOutcome),
}

/// The state of one running cell, as far as its end depends on it.
#[derive(Debug, Default)]
struct CellLifecycle {
    /// Whether the runner has said it began the cell: only then can the kernel's death be the
    /// cell's doing.
    acknowledged: bool,
    /// Why the cell was interrupted, if it was.
    interrupted: Option<Interruption>,
    /// Whether the cell's stderr already shows a crash of the runner (faulthandler's stacks).
    crash_reported: bool,
}

impl CellLifecycle {
    fn is_interrupted(&self) -> bool {
        self.interrupted.is_some()
    }

    /// The cell is interrupted for `why` at `now`: the deadline for it to end before its kernel
    /// is stopped, or `None` when it already was interrupted (the first reason stands).
    fn interrupt(&mut self, why: Interruption, now: Instant) -> Option<Instant> {
        if self.interrupted.is_some() {
            return None;
        }
        self.interrupted = Some(why);
        Some(now + INTERRUPT_ESCALATION)
    }

    /// Take the execution's next item (`None`: its events ended).
    fn take(&mut self, item: Option<Result<ExecEvent, KernelError>>) -> Step {
        match item {
            Some(Ok(ExecEvent::Done(done))) => Step::End(self.finished(done)),
            Some(Ok(event)) => {
                match &event {
                    ExecEvent::Started => self.acknowledged = true,
                    ExecEvent::Stderr(text) => self.crash_reported |= text.contains(FAULTHANDLER_HEADLINE),
                    _ => {}
                }
                Step::Event(event)
            }
            Some(Err(KernelError::Died { exit, .. })) if !self.acknowledged => {
                Step::End(CellOutcome::DiedBeforeStart { exit })
            }
            Some(Err(KernelError::Died { exit, stderr_tail, .. })) => {
                // A crash the cell's own stderr already explains (faulthandler's stacks) is not
                // quoted twice; the runner's own failures are.
                let last_words =
                    if self.crash_reported { String::new() } else { last_lines(&stderr_tail, DIED_QUOTE_LINES) };
                Step::End(CellOutcome::Died { exit, last_words })
            }
            Some(Err(KernelError::Protocol(message))) => Step::End(CellOutcome::Unreadable { message }),
            Some(Err(_)) | None => Step::End(CellOutcome::Closed { interrupted: self.interrupted }),
        }
    }

    fn finished(&self, done: CellDone) -> CellOutcome {
        let end = match (done.cancelled, self.interrupted) {
            (true, Some(why)) => CellEnd::Interrupted(why),
            (true, None) => CellEnd::Interrupted(Interruption::Cancelled),
            (false, _) if done.status == DoneStatus::Ok => CellEnd::Ok,
            (false, _) => CellEnd::Error,
        };
        CellOutcome::Finished { end, execution_count: done.execution_count }
    }

    /// The interrupted cell did not end in time: its kernel was stopped.
    fn escalated(&self) -> CellOutcome {
        CellOutcome::Killed { reason: self.interrupted.expect("only an interrupted cell escalates") }
    }
}

/// The last `count` non-empty lines of `text`, trimmed.
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use tokio::sync::mpsc;

    use super::*;
    use crate::runtime::Runtime;

    fn done(status: DoneStatus, cancelled: bool) -> Option<Result<ExecEvent, KernelError>> {
        Some(Ok(ExecEvent::Done(CellDone { status, execution_count: 7, cancelled })))
    }

    fn died(stderr_tail: &str) -> Option<Result<ExecEvent, KernelError>> {
        Some(Err(KernelError::Died {
            runtime: Runtime::Python,
            exit: "signal 9".into(),
            stderr_tail: stderr_tail.into(),
        }))
    }

    fn end(cell: &mut CellLifecycle, item: Option<Result<ExecEvent, KernelError>>) -> CellOutcome {
        match cell.take(item) {
            Step::End(outcome) => outcome,
            Step::Event(event) => panic!("{event:?} does not end the cell"),
        }
    }

    fn pass(cell: &mut CellLifecycle, event: ExecEvent) {
        assert!(matches!(cell.take(Some(Ok(event))), Step::Event(_)));
    }

    #[test]
    fn a_death_before_the_acknowledgement_is_not_the_cells() {
        let mut cell = CellLifecycle::default();
        pass(&mut cell, ExecEvent::Stdout("left over from before".into()));
        assert_eq!(end(&mut cell, died("boom")), CellOutcome::DiedBeforeStart { exit: "signal 9".into() });

        let mut cell = CellLifecycle::default();
        pass(&mut cell, ExecEvent::Started);
        let tail = (1..=20).map(|n| format!("line {n}")).collect::<Vec<_>>().join("\n");
        let CellOutcome::Died { exit, last_words } = end(&mut cell, died(&format!("\n{tail}\n\n"))) else {
            panic!("a death after the acknowledgement is the cell's")
        };
        assert_eq!(exit, "signal 9");
        assert_eq!(last_words.lines().count(), DIED_QUOTE_LINES);
        assert!(last_words.starts_with("line 9\n") && last_words.ends_with("line 20"), "{last_words}");
    }

    #[test]
    fn a_crash_the_cell_showed_is_not_quoted_again() {
        let mut cell = CellLifecycle::default();
        pass(&mut cell, ExecEvent::Started);
        pass(&mut cell, ExecEvent::Stderr("Fatal Python error: Segmentation fault\n".into()));
        assert_eq!(
            end(&mut cell, died("runner's words")),
            CellOutcome::Died { exit: "signal 9".into(), last_words: String::new() }
        );
    }

    #[test]
    fn the_first_interruption_stands() {
        let mut cell = CellLifecycle::default();
        let now = Instant::now();
        assert_eq!(cell.interrupt(Interruption::Timeout, now), Some(now + INTERRUPT_ESCALATION));
        assert_eq!(cell.interrupt(Interruption::Cancelled, now + Duration::from_secs(1)), None);
        assert_eq!(
            end(&mut cell, done(DoneStatus::Error, true)),
            CellOutcome::Finished { end: CellEnd::Interrupted(Interruption::Timeout), execution_count: 7 }
        );
        assert_eq!(cell.escalated(), CellOutcome::Killed { reason: Interruption::Timeout });
    }

    #[test]
    fn a_cell_ends_as_the_runner_says_unless_it_was_interrupted() {
        // It beat the interrupt: its own end stands.
        let mut cell = CellLifecycle::default();
        cell.interrupt(Interruption::Cancelled, Instant::now());
        let finished = |end| CellOutcome::Finished { end, execution_count: 7 };
        assert_eq!(end(&mut cell, done(DoneStatus::Ok, false)), finished(CellEnd::Ok));
        // An interrupt from elsewhere reads as a cancellation.
        let mut cell = CellLifecycle::default();
        assert_eq!(
            end(&mut cell, done(DoneStatus::Error, true)),
            finished(CellEnd::Interrupted(Interruption::Cancelled))
        );
        assert_eq!(end(&mut cell, done(DoneStatus::Error, false)), finished(CellEnd::Error));
    }

    #[test]
    fn a_frame_the_host_cannot_read_ends_the_cell_with_the_protocol_error() {
        let mut cell = CellLifecycle::default();
        pass(&mut cell, ExecEvent::Started);
        let message = "protocol error: the Python runner sent a `done` frame the host cannot read".to_string();
        assert_eq!(
            end(&mut cell, Some(Err(KernelError::Protocol(message.clone())))),
            CellOutcome::Unreadable { message }
        );
    }

    #[test]
    fn events_that_end_without_an_end_say_whether_the_cell_was_interrupted() {
        let mut cell = CellLifecycle::default();
        pass(&mut cell, ExecEvent::Started);
        assert_eq!(end(&mut cell, None), CellOutcome::Closed { interrupted: None });
        cell.interrupt(Interruption::Timeout, Instant::now());
        assert_eq!(
            end(&mut cell, Some(Err(KernelError::Closed))),
            CellOutcome::Closed { interrupted: Some(Interruption::Timeout) }
        );
    }

    /// A kernel that records what it was asked.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<&'static str>>);

    impl Interruptible for Recorder {
        fn interrupt(&self) {
            self.0.lock().unwrap().push("interrupt");
        }
        fn terminate_stuck(&self) -> impl Future<Output = ()> + Send {
            self.0.lock().unwrap().push("terminate");
            std::future::ready(())
        }
    }

    fn execution() -> (mpsc::Sender<Result<ExecEvent, KernelError>>, Execution) {
        let (sender, events) = mpsc::channel(8);
        (sender, super::super::execution_from("cell".into(), events))
    }

    #[tokio::test(start_paused = true)]
    async fn a_cell_that_ignores_its_interrupt_is_killed_after_the_grace() {
        let kernel = Recorder::default();
        let (sender, mut execution) = execution();
        sender.send(Ok(ExecEvent::Started)).await.unwrap();
        let began = Instant::now();
        let mut seen = Vec::new();
        let budget = tokio::time::sleep(Duration::from_secs(10));
        let cancelled = tokio::time::sleep(Duration::from_secs(12));
        let outcome = drive_cell(&kernel, &mut execution, budget, cancelled, |event| seen.push(event)).await;
        assert_eq!(outcome, CellOutcome::Killed { reason: Interruption::Timeout });
        assert_eq!(began.elapsed(), Duration::from_secs(10) + INTERRUPT_ESCALATION);
        assert_eq!(*kernel.0.lock().unwrap(), ["interrupt", "terminate"], "a later cancellation interrupts no more");
        assert_eq!(seen, [ExecEvent::Started]);
        drop(sender);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cell_that_answers_its_interrupt_keeps_its_kernel() {
        let kernel = Recorder::default();
        let (sender, mut execution) = execution();
        sender.send(Ok(ExecEvent::Started)).await.unwrap();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let done = CellDone { status: DoneStatus::Error, execution_count: 3, cancelled: true };
            sender.send(Ok(ExecEvent::Done(done))).await.unwrap();
        });
        let budget = std::future::pending();
        let cancelled = tokio::time::sleep(Duration::from_secs(1));
        let outcome = drive_cell(&kernel, &mut execution, budget, cancelled, |_| {}).await;
        assert_eq!(
            outcome,
            CellOutcome::Finished { end: CellEnd::Interrupted(Interruption::Cancelled), execution_count: 3 }
        );
        assert_eq!(*kernel.0.lock().unwrap(), ["interrupt"]);
    }
}
