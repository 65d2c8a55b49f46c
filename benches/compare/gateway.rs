//! The gateway rows of the benchmark (`--only gateway`).

use std::path::Path;
use std::time::{Duration, Instant};

use cellbox_kernels::kernel::{ExecEvent, KernelOptions};
use serde_json::json;

use super::{Jupyter, Plan, Report, Series, Setup, first_result, ms_list, number_list};

/// The gateway backend on the shared local gateway (in `CELLBOX_GATEWAY_DIR`; bench/run puts it in
/// bench/.gateway), beside local kernels and jupyter_client: cold start with no gateway running and
/// with the gateway up, warm round trip, interrupt, and large output. "jupyter_client" talks to its
/// own kernel over ZeroMQ; "jupyter_client, gateway" sends jupyter_client's messages over the same
/// gateway, to a kernel of its own there (bench/jupyter_helper.py, `GatewayKernel`).
pub(super) async fn gateway_backend(
    plan: &Plan,
    setup: &Setup,
    jupyter_python: &Path,
    jupyter: &mut Jupyter,
    report: &mut Report,
) {
    use cellbox_engine::session::{Backend, KernelHandle};
    use cellbox_kernels::gateway::{GatewaySetting, local};
    let backend = Backend::Gateway(GatewaySetting::SharedLocal);
    let options = KernelOptions::new(jupyter_python, &setup.cwd, setup.env.clone());
    let first = |options: KernelOptions| {
        let backend = backend.clone();
        async move {
            let started = Instant::now();
            let kernel = KernelHandle::start(options, &backend).await.unwrap_or_else(|e| panic!("{e}"));
            let output = kernel.execute("1+1").await.unwrap().collect().await.unwrap();
            assert_eq!(output.results(), ["2"]);
            (kernel, started.elapsed().as_secs_f64() * 1000.0)
        }
    };
    let (mut from_nothing, mut gateway_up, mut local_cold, mut jupyter_cold) = (
        Series::new("cellbox gateway"),
        Series::new("cellbox gateway"),
        Series::new("cellbox process"),
        Series::new("jupyter_client"),
    );
    for _ in 0..plan.cold_runs {
        let _ = local::stop().await;
        let (kernel, ms) = first(options.clone()).await;
        from_nothing.values.push(ms);
        kernel.shutdown().await;
        let (kernel, ms) = first(options.clone()).await;
        gateway_up.values.push(ms);
        kernel.shutdown().await;
        let (kernel, ms) = first_result(setup).await;
        local_cold.values.push(ms);
        kernel.shutdown().await;
        jupyter_cold.values.push(jupyter.call(json!({"op": "cold"})).await["ms"].as_f64().unwrap());
    }
    report.add("gateway cold start, no gateway", "ms", false, &from_nothing, Some(&jupyter_cold), "");
    report.add("gateway cold start, gateway up", "ms", false, &gateway_up, Some(&jupyter_cold), "");
    report.add("gateway cold start, gateway up", "ms", false, &gateway_up, Some(&local_cold), "");

    let (kernel, _) = first(options.clone()).await;
    let (local_kernel, _) = first_result(setup).await;
    jupyter.call(json!({"op": "start"})).await;
    // jupyter_client's messages over the same gateway, to a kernel of its own there.
    let info = local::read_info(&local::dir()).expect("the shared gateway is recorded");
    jupyter.call(json!({"op": "gateway_start", "url": info.url(), "token": info.token})).await;
    // Every series here sends what cellbox sends (store_history on: cells are numbered, `_` is kept)
    // and waits for what cellbox's result needs: the execute_reply and the idle status.
    let via_gateway = || json!({"via": "gateway", "reply": true, "store_history": true});
    let (mut warm, mut local_warm, mut jupyter_warm, mut jupyter_gateway_warm) = (
        Series::new("cellbox gateway"),
        Series::new("cellbox process"),
        Series::new("jupyter_client"),
        Series::new("jupyter_client, gateway"),
    );
    let (mut warm_cpu, mut jupyter_gateway_cpu) =
        (Series::new("cellbox gateway"), Series::new("jupyter_client, gateway"));
    for _ in 0..20 {
        kernel.execute("1+1").await.unwrap().collect().await.unwrap();
    }
    // Batches in turn, so drift of the machine's load reaches every series alike.
    let rounds = plan.warm_iterations.min(200);
    let batch = 20;
    for _ in 0..rounds.div_ceil(batch) {
        for _ in 0..batch {
            let (started, used) = (Instant::now(), cpu_micros());
            kernel.execute("1+1").await.unwrap().collect().await.unwrap();
            warm.values.push(started.elapsed().as_secs_f64() * 1000.0);
            warm_cpu.values.push(cpu_micros() - used);
            let started = Instant::now();
            local_kernel.execute("1+1").await.unwrap().collect().await.unwrap();
            local_warm.values.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let mut command = via_gateway();
        command["op"] = json!("roundtrip");
        command["n"] = json!(batch);
        let answer = jupyter.call(command).await;
        jupyter_gateway_warm.values.extend(ms_list(&answer));
        jupyter_gateway_cpu.values.extend(number_list(&answer, "cpu_ms").iter().map(|ms| ms * 1000.0));
        let command = json!({"op": "roundtrip", "n": batch / 4, "reply": true, "store_history": true});
        jupyter_warm.values.extend(ms_list(&jupyter.call(command).await));
    }
    report.add("gateway warm round trip of 1+1", "ms", false, &warm, Some(&local_warm), "");
    let note = "store_history on; to the execute_reply and the idle status";
    report.add("gateway warm round trip of 1+1", "ms", false, &warm, Some(&jupyter_warm), note);
    report.add("gateway warm round trip of 1+1", "ms", false, &warm, Some(&jupyter_gateway_warm), note);
    let note = "CPU time of the client's process, all threads";
    report.add("gateway 1+1: client CPU per round trip", "µs", false, &warm_cpu, Some(&jupyter_gateway_cpu), note);

    let (mut interrupt, mut jupyter_interrupt, mut jupyter_gateway_interrupt) =
        (Series::new("cellbox gateway"), Series::new("jupyter_client"), Series::new("jupyter_client, gateway"));
    for _ in 0..plan.interrupt_runs {
        let mut execution = kernel.execute("while True: pass").await.unwrap();
        assert!(matches!(execution.next().await, Some(Ok(ExecEvent::Started))));
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = Instant::now();
        kernel.interrupt().unwrap();
        let output = execution.collect().await.unwrap();
        interrupt.values.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(output.done.cancelled);
        jupyter_interrupt.values.push(jupyter.call(json!({"op": "interrupt"})).await["done_ms"].as_f64().unwrap());
        let mut command = via_gateway();
        command["op"] = json!("interrupt");
        jupyter_gateway_interrupt.values.push(jupyter.call(command).await["done_ms"].as_f64().unwrap());
    }
    let note = "to the execute_reply and the idle status (as JupyterLab and execute_interactive wait)";
    report.add("gateway interrupt → cancelled result", "ms", false, &interrupt, Some(&jupyter_interrupt), note);
    report.add("gateway interrupt → cancelled result", "ms", false, &interrupt, Some(&jupyter_gateway_interrupt), note);

    let megabytes = if plan.quick { plan.output_mb } else { 100 };
    let code = format!("line = 'x' * 99\nfor _ in range({}):\n    print(line)", megabytes * 10_000);
    let (mut output_gateway, mut output_local, mut output_jupyter) =
        (Series::new("cellbox gateway"), Series::new("cellbox process"), Series::new("jupyter_client, gateway"));
    // The kernel's own print loop sets the pace of both gateway series, and the machine's load moves
    // it by half from one run to the next: five runs each in turn (three at least in full mode), the
    // order reversed every other round.
    let runs = if plan.quick { 5 } else { plan.output_runs.max(3) };
    for round in 0..runs {
        let order = if round % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
        for contender in order {
            if contender == 2 {
                let mut command = via_gateway();
                command["op"] = json!("output");
                command["code"] = json!(code);
                let answer = jupyter.call(command).await;
                let expected = Some((megabytes * 1_000_000) as f64);
                assert_eq!(answer["bytes"].as_f64(), expected, "all of Jupyter's output arrives");
                output_jupyter.values.push(megabytes as f64 / answer["seconds"].as_f64().unwrap());
                continue;
            }
            let started = Instant::now();
            let (series, mut execution) = match contender {
                0 => (&mut output_gateway, kernel.execute(&code).await.unwrap()),
                _ => (&mut output_local, local_kernel.execute(&code).await.unwrap()),
            };
            let mut bytes = 0usize;
            while let Some(event) = execution.next().await {
                if let Ok(ExecEvent::Stdout(text)) = event {
                    bytes += text.len();
                }
            }
            assert_eq!(bytes, megabytes * 1_000_000, "all output arrives");
            series.values.push(megabytes as f64 / started.elapsed().as_secs_f64());
        }
    }
    let label = format!("gateway: {megabytes} MB of print()");
    report.add(&label, "MB/s", true, &output_gateway, Some(&output_local), "");
    report.add(&label, "MB/s", true, &output_gateway, Some(&output_jupyter), "");
    jupyter.call(json!({"op": "gateway_stop"})).await;
    kernel.shutdown().await;
    local_kernel.shutdown().await;
    let _ = local::stop().await;
}

/// CPU time this process (all its threads) has used so far, in µs.
#[cfg(unix)]
fn cpu_micros() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    micros(usage.ru_utime) + micros(usage.ru_stime)
}

/// The bench measures on Linux; elsewhere the CPU column reads 0.
#[cfg(not(unix))]
fn cpu_micros() -> f64 {
    0.0
}
