//! Running a call's cells: the precheck, a kernel for each cell, one cell under its watchdog, and
//! what its end is reported as.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{EvalEngine, INTERRUPT_ESCALATION};
use crate::kernel::bridge_relay::BudgetControl;
use crate::kernel::lifecycle::{CellEnd, CellOutcome, Interruption, drive_cell};
use crate::kernel::{ExecEvent, ExecuteOptions, Execution, KernelError, StartStage};
use crate::runtime::{Interpreter, Runtime};
use crate::session::{Backend, KernelHandle, SlotGuard};
use crate::tool::call::EventSink;
use crate::tool::config::KernelMode;
use crate::tool::params::{CheckMode, Language, PlannedCell};
use crate::tool::result::{CellReport, CellStatus, Collector, ErrorSummary, EvalEvent, EvalResult};
use crate::tool::watchdog::{PauseGuard, Watchdog};

/// Lint findings shown as notes per call; more are counted.
const MAX_LINT_NOTES: usize = 30;

impl EvalEngine {
    /// Check the call's cells before any runs (`check` is not off): one
    /// `check` request to each kernel the call uses, which parses every cell
    /// of its language without running it (Python: compiled after the magic
    /// transform; JavaScript/TypeScript: parsed as the Node runner would) and,
    /// for `lint`, runs `ruff check` on the Python cells. Returns whether the
    /// cells may run; when one does not parse, its error (with the caret) is
    /// the result, every other cell is skipped and nothing ran. Lint findings
    /// become notes. A check that cannot be made (a gateway kernel, a kernel
    /// that fails) says so in a note and lets the cells run.
    pub(super) async fn precheck(
        &self,
        plan: &mut [PlannedCell],
        cwd: &Path,
        kernels: &mut [(Interpreter, SlotGuard<'_>)],
        check: CheckMode,
        collector: &mut Collector,
        on_event: EventSink<'_>,
    ) -> bool {
        let lint = check == CheckMode::Lint;
        // (cell index, what the check found), in runtime order.
        let mut found: Vec<(usize, crate::protocol::CheckedCell)> = Vec::new();
        // Cells whose `reset` the check's fresh kernel already satisfies.
        let mut fresh: Vec<usize> = Vec::new();
        for (interpreter, guard) in kernels.iter_mut() {
            let cells: Vec<&PlannedCell> = plan.iter().filter(|cell| cell.runs_on(interpreter)).collect();
            let Some(first) = cells.first() else { continue };
            // The kernel the first such cell would use (started now if needed;
            // a start failure is left for that cell to report). A kernel the
            // first cell resets is asked as it is (the check reads no state
            // but the linter's names) and reset only if the cells run.
            let had_kernel = guard.kernel().is_some_and(|kernel| kernel.is_alive());
            // A woken kernel holds the session's old variables: not the fresh one a reset asks for.
            let (session, key_cwd) = (&guard.key().session, &guard.key().cwd);
            let sleeping = self.pool.hibernation().is_some_and(|h| h.is_sleeping_in(session, key_cwd));
            let started = self.kernel_for(interpreter, cwd, guard, first.index, on_event).await;
            if started.is_ok() && !had_kernel && !sleeping && first.reset {
                fresh.push(first.index);
            }
            for note in guard.take_notes() {
                collector.note(note);
            }
            let Ok(kernel) = started else { continue };
            let request = cells
                .iter()
                .map(|cell| crate::protocol::CheckCell {
                    number: cell.index + 1,
                    code: cell.code.clone(),
                    typescript: cell.language == Language::Ts,
                })
                .collect();
            match kernel.check(request, lint).await {
                Ok(Some(answer)) => {
                    for note in answer.notes {
                        collector.note(note);
                    }
                    found.extend(cells.iter().map(|cell| cell.index).zip(answer.cells));
                }
                Ok(None) => {
                    collector.note("Pre-run check: not on gateway or Jupyter kernels; these cells ran unchecked.")
                }
                Err(error) => {
                    collector.note(format!("Pre-run check could not be made ({error}); the cells ran unchecked."))
                }
            }
        }
        for index in fresh {
            plan[index].reset = false;
        }
        let plan: &[PlannedCell] = plan;
        found.sort_by_key(|(index, _)| *index);
        let errors: Vec<(usize, &crate::protocol::SyntaxProblem)> =
            found.iter().filter_map(|(index, checked)| checked.error.as_ref().map(|error| (*index, error))).collect();
        if errors.is_empty() {
            let findings: Vec<_> = found
                .iter()
                .flat_map(|(index, checked)| checked.findings.iter().map(move |finding| (*index, finding)))
                .collect();
            for (index, finding) in findings.iter().take(MAX_LINT_NOTES) {
                let place = if plan.len() > 1 { format!("cell {}, ", index + 1) } else { String::new() };
                let rule = if finding.code.is_empty() { String::new() } else { format!("{} ", finding.code) };
                collector
                    .note(format!("Lint ({place}line {}:{}): {rule}{}", finding.line, finding.column, finding.message));
            }
            if findings.len() > MAX_LINT_NOTES {
                collector.note(format!("Lint: {} more finding(s) not shown.", findings.len() - MAX_LINT_NOTES));
            }
            return true;
        }
        for cell in plan {
            let Some((_, error)) = errors.iter().find(|(index, _)| *index == cell.index) else {
                collector.finish_cell(report(cell, CellStatus::Skipped, 0, None, None));
                continue;
            };
            on_event(EvalEvent::CellStarted { index: cell.index, title: cell.title.clone() });
            collector.begin_cell(cell.index, cell.title.as_deref());
            let shown = crate::kernel::CellError {
                ename: error.ename.clone(),
                evalue: error.evalue.clone(),
                traceback: error.traceback.clone(),
            };
            if let Some(streamed) = collector.event(cell.index, ExecEvent::Error(shown)) {
                on_event(streamed);
            }
            on_event(EvalEvent::CellFinished { index: cell.index, status: CellStatus::Error, duration_ms: 0 });
            let summary = ErrorSummary { ename: error.ename.clone(), evalue: error.evalue.clone() };
            collector.finish_cell(report(cell, CellStatus::Error, 0, None, Some(summary)));
        }
        let places: Vec<String> = errors
            .iter()
            .map(|(index, error)| match error.line {
                Some(line) => format!("cell {} (line {line})", index + 1),
                None => format!("cell {}", index + 1),
            })
            .collect();
        let what = if places.len() == 1 { "has a syntax error" } else { "have syntax errors" };
        let none = if plan.len() == 1 { "it was not run" } else { "no cell was run" };
        collector
            .note(format!("Syntax check: {} {what}; {none} and the kernel's state is unchanged.", places.join(", ")));
        false
    }

    /// A call that never reached its kernel: every cell gets `status`.
    pub(super) fn unstarted(
        &self,
        plan: &[PlannedCell],
        mut collector: Collector,
        status: CellStatus,
        note: String,
        on_event: EventSink<'_>,
    ) -> EvalResult {
        for (position, cell) in plan.iter().enumerate() {
            let status = if position == 0 { status } else { CellStatus::Skipped };
            collector.finish_cell(report(cell, status, 0, None, None));
        }
        on_event(EvalEvent::Note { text: note.clone() });
        collector.note(note);
        collector.finish()
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_cells(
        &self,
        plan: &[PlannedCell],
        cwd: &Path,
        kernels: &mut [(Interpreter, SlotGuard<'_>)],
        collector: &mut Collector,
        cancel: &CancellationToken,
        on_event: EventSink<'_>,
    ) {
        let mut failed: Option<usize> = None;
        for cell in plan {
            if failed.is_some() {
                collector.finish_cell(report(cell, CellStatus::Skipped, 0, None, None));
                continue;
            }
            on_event(EvalEvent::CellStarted { index: cell.index, title: cell.title.clone() });
            collector.begin_cell(cell.index, cell.title.as_deref());
            let started = Instant::now();
            let (interpreter, guard) = kernels
                .iter_mut()
                .find(|(interpreter, _)| cell.runs_on(interpreter))
                .expect("an interpreter was chosen for every cell's runtime");
            let (status, count, error) =
                self.run_cell(cell, interpreter, cwd, guard, collector, cancel, on_event).await;
            let duration_ms = started.elapsed().as_millis() as u64;
            on_event(EvalEvent::CellFinished { index: cell.index, status, duration_ms });
            collector.finish_cell(report(cell, status, duration_ms, count, error));
            if status != CellStatus::Ok {
                failed = Some(cell.index);
            }
        }
        if let Some(index) = failed {
            let cell = &plan[index];
            let report = &collector.cells()[index];
            let what = match (report.status, &report.error) {
                (CellStatus::Timeout, _) => "timed out".to_string(),
                (CellStatus::Cancelled, _) => "was cancelled".to_string(),
                (CellStatus::Killed, _) => "was killed".to_string(),
                (_, Some(error)) if error.evalue.is_empty() => format!("failed: {}", error.ename),
                (_, Some(error)) => format!("failed: {}: {}", error.ename, error.evalue),
                (status, None) => format!("failed ({})", status.as_str()),
            };
            let name = match &cell.title {
                Some(title) => format!("Cell {} ({title})", index + 1),
                None => format!("Cell {}", index + 1),
            };
            let skipped = plan.len() - index - 1;
            // An error message that ends its own sentence gets no second full stop.
            let stop = if what.ends_with(['.', '!', '?']) { "" } else { "." };
            let mut note = format!("{name} {what}{stop}");
            if skipped == 1 {
                note.push_str(&format!(" Cell {} was not run.", index + 2));
            } else if skipped > 1 {
                note.push_str(&format!(" Cells {}–{} were not run.", index + 2, plan.len()));
            }
            if plan.len() > 1 {
                collector.note(note);
            }
        }
    }

    /// A live kernel for this cell: the slot's, or a new one (replacing a dead one).
    /// While a new kernel starts, `on_event` hears what cell `cell` waits for.
    pub(super) async fn kernel_for(
        &self,
        interpreter: &Interpreter,
        cwd: &Path,
        guard: &mut SlotGuard<'_>,
        cell: usize,
        on_event: EventSink<'_>,
    ) -> Result<Arc<KernelHandle>, KernelError> {
        let first_of_session = !guard.had_kernel();
        if let Some(kernel) = guard.kernel() {
            if kernel.is_alive() {
                return Ok(kernel);
            }
            guard.replace_kernel(None);
            // After the shutdown its exit status is known, not only that it ended.
            kernel.shutdown().await;
            let exit = kernel.exit_description().unwrap_or_else(|| "it stopped".into());
            guard.add_note(format!(
                "The previous kernel had died ({exit}); a new one was started and earlier state is lost."
            ));
        }
        let options = self.kernel_options(interpreter, cwd);
        // A spare may still be starting: on a gateway that wait is a kernel start too.
        let on_gateway = matches!(self.config.backend, Backend::Gateway(_)) && interpreter.runtime == Runtime::Python;
        let report = StartReport::new(cell, on_event, on_gateway.then_some(StartStage::Kernel));
        let spare = report.run(self.spares.take(&options)).await;
        let session_mode = self.config.mode == KernelMode::Session;
        if session_mode {
            // Spares hold no state: they give way before any kernel in use.
            let live = self.pool.live_count(Some(guard.key()));
            let allowed = self.pool.limits().max_kernels.saturating_sub(live + 1);
            self.spares.shed(allowed, Some(&options)).await;
        }
        // The oldest kernel is put away while this one starts; first under a shared budget, which counts.
        let key = guard.key().clone();
        let budgeted = self.config.kernel_budget.is_some();
        if session_mode && budgeted {
            self.pool.make_room(&key).await;
        }
        let room = async {
            if session_mode && !budgeted {
                self.pool.make_room(&key).await;
            }
        };
        let start = async {
            match spare {
                Some(kernel) => Ok::<_, KernelError>((Arc::new(kernel), None)),
                None => {
                    // Held until the kernel is in its slot, where the budget counts it.
                    let reservation = self.reserve_kernel().await?;
                    let observer = |stage: StartStage| report.enter(stage);
                    let starting = KernelHandle::start_observed(options.clone(), &self.config.backend, &observer);
                    let started = report.run(starting).await;
                    report.finish();
                    Ok((Arc::new(started?), reservation))
                }
            }
        };
        let (started, ()) = tokio::join!(start, room);
        let (kernel, _room) = started?;
        report.finish();
        if on_gateway && first_of_session && !self.config.sandbox.is_off() {
            guard.add_note(self.outside_the_sandbox_note());
        }
        // Bound to the session when handed out: a spare serves whichever session takes it.
        kernel.set_bridge(self.bridge_hook(&guard.key().session));
        guard.replace_kernel(Some(kernel.clone()));
        if interpreter.runtime == Runtime::Python {
            self.wake_if_hibernated(guard, &kernel).await;
        }
        self.fill_spare(&options);
        Ok(kernel)
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_cell(
        &self,
        cell: &PlannedCell,
        interpreter: &Interpreter,
        cwd: &Path,
        guard: &mut SlotGuard<'_>,
        collector: &mut Collector,
        cancel: &CancellationToken,
        on_event: EventSink<'_>,
    ) -> (CellStatus, Option<u64>, Option<ErrorSummary>) {
        if cell.reset {
            if let Some(old) = guard.replace_kernel(None) {
                self.pool.retire(old);
            }
            // A hibernated session is reset too: its saved variables are not woken.
            if let Some(hibernation) = self.pool.hibernation() {
                hibernation.forget_in(&guard.key().session, &guard.key().cwd);
            }
        }
        // A kernel that died before the runner acknowledged the cell never ran
        // it: the cell runs on a fresh kernel, once.
        let mut fresh_start_left = true;
        loop {
            let (kernel, mut execution) =
                match self.start_cell(cell, interpreter, cwd, guard, collector, on_event).await {
                    Ok(started) => started,
                    Err(error) => return kernel_failure(collector, error),
                };
            let watchdog = Watchdog::new(cell.timeout);
            let session = guard.key().session.clone();
            self.budgets.lock().unwrap().insert(session.clone(), watchdog.clone());
            let _budget = BudgetEntry { budgets: &self.budgets, session };
            // Bridge calls in flight: the budget waits until each has resumed.
            let mut paused_calls: HashMap<String, PauseGuard> = HashMap::new();
            let mut error_summary = None;
            let on_cell_event = |event: ExecEvent| {
                match &event {
                    ExecEvent::Budget(BudgetControl::Pause { call }) => {
                        paused_calls.insert(call.clone(), watchdog.pause());
                    }
                    ExecEvent::Budget(BudgetControl::Resume { call }) => {
                        paused_calls.remove(call);
                    }
                    ExecEvent::Error(error) => {
                        error_summary = Some(ErrorSummary { ename: error.ename.clone(), evalue: error.evalue.clone() });
                    }
                    _ => {}
                }
                if let Some(streamed) = collector.event(cell.index, event) {
                    on_event(streamed);
                }
            };
            let expired = watchdog.expired();
            let outcome = drive_cell(&*kernel, &mut execution, expired, cancel.cancelled(), on_cell_event).await;
            let status = status_of(&outcome);
            let count = match outcome {
                CellOutcome::Finished { execution_count, .. } => Some(execution_count),
                _ => None,
            };
            match outcome {
                CellOutcome::Finished { end: CellEnd::Interrupted(why), .. } => collector.note(format!(
                    "{}; kernel interrupted but remains running. Reset the kernel via {{ reset: true }} if state \
                     appears corrupted.",
                    interruption_reason(why, cell.timeout)
                )),
                CellOutcome::Finished { .. } => {}
                CellOutcome::Killed { reason } => {
                    guard.replace_kernel(None);
                    collector.note(format!(
                        "{}; the kernel did not respond to the interrupt within {}s, so the kernel has been killed \
                         and will be recreated on the next call.",
                        interruption_reason(reason, cell.timeout),
                        INTERRUPT_ESCALATION.as_secs()
                    ));
                }
                CellOutcome::Died { exit, last_words } => {
                    guard.replace_kernel(None);
                    kernel.shutdown().await;
                    died_during(collector, interpreter.runtime, &exit, &last_words);
                    error_summary.get_or_insert(ErrorSummary { ename: "KernelDied".into(), evalue: exit });
                }
                CellOutcome::Unreadable { message } => {
                    guard.replace_kernel(None);
                    kernel.shutdown().await;
                    collector.note(format!(
                        "{message}. The kernel was stopped (its next frames could not be trusted); the next call \
                         starts a fresh one and earlier state is lost. This is a bug in cellbox: please report it."
                    ));
                    error_summary.get_or_insert(ErrorSummary { ename: "ProtocolError".into(), evalue: message });
                }
                CellOutcome::Closed { .. } => {
                    guard.replace_kernel(None);
                    kernel.shutdown().await;
                    let exit = "it was shut down";
                    died_during(collector, interpreter.runtime, exit, "");
                    error_summary.get_or_insert(ErrorSummary { ename: "KernelDied".into(), evalue: exit.into() });
                }
                CellOutcome::DiedBeforeStart { exit } => {
                    guard.replace_kernel(None);
                    kernel.shutdown().await;
                    if std::mem::take(&mut fresh_start_left) {
                        guard.add_note(format!(
                            "The previous kernel had died ({exit}); a new one was started and earlier state is lost."
                        ));
                        continue;
                    }
                    collector.note(format!(
                        "The {} kernel died again before it could begin this cell ({exit}); the cell did not run. \
                         Earlier state is lost; check the kernel's environment with `cellbox doctor`.",
                        interpreter.runtime
                    ));
                    error_summary = Some(ErrorSummary { ename: "KernelDied".into(), evalue: exit });
                }
            }
            return (status, count, error_summary.filter(|_| status != CellStatus::Ok));
        }
    }

    /// The cell's request sent to a live kernel (a kernel found dead when it is sent is
    /// replaced, once).
    async fn start_cell(
        &self,
        cell: &PlannedCell,
        interpreter: &Interpreter,
        cwd: &Path,
        guard: &mut SlotGuard<'_>,
        collector: &mut Collector,
        on_event: EventSink<'_>,
    ) -> Result<(Arc<KernelHandle>, Execution), KernelError> {
        let mut replaced = false;
        loop {
            let started = self.kernel_for(interpreter, cwd, guard, cell.index, on_event).await;
            for note in guard.take_notes() {
                collector.note(note);
            }
            let kernel = started?;
            if let Some((kernelspec, language_info)) = kernel.jupyter_metadata() {
                collector.ran_on(kernelspec, language_info);
            }
            let options = ExecuteOptions {
                typescript: cell.language == Language::Ts,
                env: cell.env.clone(),
                restore_env: cell.env.is_some(),
                json_results: cell.json_results,
                ..Default::default()
            };
            match kernel.execute_with(&cell.code, options).await {
                Ok(execution) => return Ok((kernel, execution)),
                Err(_) if !replaced => replaced = true,
                Err(error) => return Err(error),
            }
        }
    }
}

/// A cell whose kernel could not be had: the error is its result.
fn kernel_failure(collector: &mut Collector, error: KernelError) -> (CellStatus, Option<u64>, Option<ErrorSummary>) {
    let message = error.to_string();
    collector.note(message.clone());
    (CellStatus::Error, None, Some(ErrorSummary { ename: "KernelError".into(), evalue: message }))
}

/// A cell's status after `outcome`.
fn status_of(outcome: &CellOutcome) -> CellStatus {
    let interrupted = |why: &Interruption| match why {
        Interruption::Timeout => CellStatus::Timeout,
        Interruption::Cancelled => CellStatus::Cancelled,
    };
    match outcome {
        CellOutcome::Finished { end: CellEnd::Ok, .. } => CellStatus::Ok,
        CellOutcome::Finished { end: CellEnd::Error, .. } => CellStatus::Error,
        CellOutcome::Finished { end: CellEnd::Interrupted(why), .. } => interrupted(why),
        CellOutcome::Killed { .. } => CellStatus::Killed,
        CellOutcome::Closed { interrupted: Some(why) } => interrupted(why),
        CellOutcome::Died { .. }
        | CellOutcome::DiedBeforeStart { .. }
        | CellOutcome::Closed { interrupted: None }
        | CellOutcome::Unreadable { .. } => CellStatus::Error,
    }
}

/// What interrupted a cell, as a note begins.
fn interruption_reason(why: Interruption, timeout: Duration) -> String {
    match why {
        Interruption::Timeout => format!("eval cell timed out after {}s", timeout.as_secs()),
        Interruption::Cancelled => "eval cell was cancelled".to_string(),
    }
}

/// The note for a kernel that died while it ran a cell.
fn died_during(collector: &mut Collector, runtime: Runtime, exit: &str, last_words: &str) {
    let quoted = if last_words.is_empty() { String::new() } else { format!(" Its last diagnostics:\n{last_words}\n") };
    collector.note(format!(
        "The {runtime} kernel died during this cell ({exit}).{quoted} The cell was not retried: it may have \
         partly run, so check for side effects. The next call starts a fresh kernel; earlier state is lost."
    ));
}

/// Tells a cell's caller what its kernel start waits for: each stage as it
/// begins, then every second with the time waited, and once when it is over.
struct StartReport<'a> {
    cell: usize,
    on_event: EventSink<'a>,
    began: Instant,
    stage: std::sync::Mutex<Option<StartStage>>,
    shown: std::sync::atomic::AtomicBool,
}

/// How often a waiting cell hears that its kernel is still starting.
const START_REPORT_INTERVAL: Duration = Duration::from_secs(1);

impl<'a> StartReport<'a> {
    /// `first`: the stage assumed until the start reports one (`None`: silent until then).
    fn new(cell: usize, on_event: EventSink<'a>, first: Option<StartStage>) -> Self {
        StartReport {
            cell,
            on_event,
            began: Instant::now(),
            stage: std::sync::Mutex::new(first),
            shown: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn enter(&self, stage: StartStage) {
        *self.stage.lock().unwrap() = Some(stage);
        self.show(stage);
    }

    fn show(&self, stage: StartStage) {
        self.shown.store(true, Ordering::SeqCst);
        (self.on_event)(EvalEvent::KernelStarting {
            cell: self.cell,
            waiting: Some(stage.describe().to_string()),
            elapsed_ms: self.began.elapsed().as_millis() as u64,
        });
    }

    /// Await `work`, repeating the current stage every second meanwhile.
    async fn run<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(work);
        let mut tick = Instant::now() + START_REPORT_INTERVAL;
        loop {
            match tokio::time::timeout_at(tick, &mut work).await {
                Ok(output) => return output,
                Err(_) => tick += START_REPORT_INTERVAL,
            }
            let stage = *self.stage.lock().unwrap();
            if let Some(stage) = stage {
                self.show(stage);
            }
        }
    }

    /// The wait is over (told only if anything was shown, and only once).
    fn finish(&self) {
        if self.shown.swap(false, Ordering::SeqCst) {
            (self.on_event)(EvalEvent::KernelStarting {
                cell: self.cell,
                waiting: None,
                elapsed_ms: self.began.elapsed().as_millis() as u64,
            });
        }
    }
}

/// Forgets a running cell's watchdog when the cell ends, however it ends.
struct BudgetEntry<'a> {
    budgets: &'a std::sync::Mutex<std::collections::HashMap<String, Arc<Watchdog>>>,
    session: String,
}

impl Drop for BudgetEntry<'_> {
    fn drop(&mut self) {
        self.budgets.lock().unwrap().remove(&self.session);
    }
}

fn report(
    cell: &PlannedCell,
    status: CellStatus,
    duration_ms: u64,
    execution_count: Option<u64>,
    error: Option<ErrorSummary>,
) -> CellReport {
    CellReport {
        index: cell.index,
        title: cell.title.clone(),
        language: cell.language,
        status,
        duration_ms,
        execution_count,
        error,
    }
}
