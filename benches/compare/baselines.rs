//! The two warm baselines of a run, measured once and shared by every row
//! that names them: the NDJSON echo floor (a Python process that answers a
//! request line with a result line, `bench/echo_floor.py`: the least any
//! kernel on pipes can take) and the cellbox library's warm `1+1`
//! (`EvalEngine::eval` on a kept session). The warm rows of the kernel, the
//! MCP servers and the SDK each compare with both, so a front end's cost is
//! read against the floor directly and against what the engine under it takes.
//!
//! The kernel alone (`Kernel::execute`) is measured here too, in the same
//! turns: a VM's idle vCPUs cost a good part of the floor to wake, so a kernel
//! measured between Jupyter's calls (whose threads keep a vCPU awake) read
//! below the floor it was compared with.

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use cellbox_engine::tool::{CallContext, EngineConfig, EvalEngine, EvalParams, ignore_events};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

use super::{Plan, Series, Setup};

/// The run's warm baselines (see the module's doc).
pub(super) struct WarmBaselines {
    pub floor: Series,
    pub library: Series,
    /// Not a baseline: the kernel alone's warm `1+1`, taken in the same turns.
    pub kernel: Series,
}

impl WarmBaselines {
    /// All three, measured call by call in turn (so a slow moment of the
    /// machine touches all alike), after a warm-up, `plan.warm_iterations` each.
    pub(super) async fn measure(plan: &Plan, setup: &Setup) -> WarmBaselines {
        let mut floor_process = EchoFloor::start(setup).await;
        let artifacts = tempfile::tempdir().unwrap();
        let mut config = EngineConfig::new(&setup.cwd);
        config.python = Some(setup.python.display().to_string());
        config.artifacts_dir = artifacts.path().to_path_buf();
        config.spare = cellbox_engine::session::SpareLimits::OFF;
        let engine = EvalEngine::new(config);
        let context = CallContext::new("bench-baseline");
        let one = EvalParams::code("1+1");
        let (kernel, _) = super::first_result(setup).await;
        let kernel_call = async || {
            let started = Instant::now();
            kernel.execute("1+1").await.unwrap().collect().await.unwrap();
            started.elapsed().as_secs_f64() * 1000.0
        };
        let library_call = async || {
            let started = Instant::now();
            let result = engine.eval(&one, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
            assert!(super::answered_two(&result.text), "{}", result.text);
            started.elapsed().as_secs_f64() * 1000.0
        };
        for _ in 0..50 {
            library_call().await;
            floor_process.call_ms().await;
            kernel_call().await;
        }
        let mut floor = Series::new("NDJSON echo floor");
        let mut library = Series::new("cellbox library");
        let mut kernel_alone = Series::new("cellbox");
        for _ in 0..plan.warm_iterations {
            library.values.push(library_call().await);
            floor.values.push(floor_process.call_ms().await);
            kernel_alone.values.push(kernel_call().await);
        }
        kernel.shutdown().await;
        engine.dispose_all().await;
        WarmBaselines { floor, library, kernel: kernel_alone }
    }
}

/// `bench/echo_floor.py` on the run's interpreter.
pub(super) struct EchoFloor {
    _child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    line: String,
    next: u64,
}

impl EchoFloor {
    pub(super) async fn start(setup: &Setup) -> EchoFloor {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/echo_floor.py");
        let mut child = Command::new(&setup.python)
            .arg("-u")
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        EchoFloor { _child: child, input, output, line: String::new(), next: 0 }
    }

    /// One request line out and its answer back, in ms.
    pub(super) async fn call_ms(&mut self) -> f64 {
        self.next += 1;
        let started = Instant::now();
        self.input.write_all(format!("{{\"id\":\"{}\",\"code\":\"1+1\"}}\n", self.next).as_bytes()).await.unwrap();
        self.line.clear();
        self.output.read_line(&mut self.line).await.unwrap();
        started.elapsed().as_secs_f64() * 1000.0
    }
}
