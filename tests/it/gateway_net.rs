//! The gateway backend's connection on a real Jupyter Kernel Gateway: what a
//! slow kernel start shows while it lasts, and a channels websocket that
//! drops while a cell runs.

use crate::common;

use std::sync::{Arc, Mutex};

use cellbox_engine::session::{Backend, KernelHandle};
use cellbox_engine::tool::{CallContext, EngineConfig, EvalEngine, EvalEvent, EvalParams, EvalResult};
use cellbox_kernels::gateway::{GatewayKernel, GatewaySetting};
use cellbox_kernels::kernel::{ExecEvent, KernelError};
use cellbox_protocol::DoneStatus;
use common::engine::GATEWAY_NOTE;
use common::gateway::{Flavor, TestGateway};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn engine_on(gateway: &TestGateway, dir: &std::path::Path) -> EvalEngine {
    let mut config = EngineConfig::new(dir);
    config.python = Some(common::python().display().to_string());
    config.artifacts_dir = dir.join("artifacts");
    config.backend =
        Backend::Gateway(GatewaySetting::External { url: gateway.url.clone(), token: Some(gateway.token.clone()) });
    EvalEngine::new(config)
}

/// Run `code`, keeping every event the call streams.
async fn eval_recorded(engine: &EvalEngine, code: &str) -> (EvalResult, Vec<EvalEvent>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let on_event = move |event: EvalEvent| sink.lock().unwrap().push(event);
    let params = EvalParams::from_json(json!({ "cells": [{ "code": code }] })).unwrap();
    let result = engine.eval(&params, &CallContext::new("s"), &CancellationToken::new(), &on_event).await.unwrap();
    let events = events.lock().unwrap().clone();
    (result, events)
}

/// A `python3` kernelspec that waits `seconds` before it starts ipykernel: a
/// gateway whose kernels are slow to come up (as on a cluster).
fn slow_kernelspec(root: &std::path::Path, seconds: u32) {
    let spec = root.join("kernels/python3");
    std::fs::create_dir_all(&spec).unwrap();
    let argv = json!([
        "sh",
        "-c",
        format!("sleep {seconds}; exec \"$1\" -m ipykernel_launcher -f \"$2\""),
        "sh",
        common::python().display().to_string(),
        "{connection_file}",
    ]);
    let kernel = json!({ "argv": argv, "display_name": "slow python", "language": "python" });
    std::fs::write(spec.join("kernel.json"), kernel.to_string()).unwrap();
}

#[tokio::test]
async fn a_slow_gateway_kernel_start_is_shown_while_it_lasts() {
    let jupyter = tempfile::tempdir().unwrap();
    slow_kernelspec(jupyter.path(), 3);
    let env = [("JUPYTER_PATH", jupyter.path().display().to_string())];
    let gateway = TestGateway::start_with_env(Flavor::KernelGateway, common::python(), false, &env).await;
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_on(&gateway, dir.path());

    let (result, events) = eval_recorded(&engine, "print('ready')").await;
    assert_eq!(result.text, format!("ready\n{GATEWAY_NOTE}"), "{events:?}");
    let starting: Vec<(Option<String>, u64)> = events
        .iter()
        .filter_map(|event| match event {
            EvalEvent::KernelStarting { cell: 0, waiting, elapsed_ms } => Some((waiting.clone(), *elapsed_ms)),
            _ => None,
        })
        .collect();
    assert!(
        starting.iter().any(|(waiting, _)| waiting.as_deref() == Some("starting kernel on gateway")),
        "{starting:?}"
    );
    // The wait is repeated while it lasts (every second), with the time waited so far.
    let longest = starting.iter().filter(|(waiting, _)| waiting.is_some()).map(|(_, ms)| *ms).max().unwrap();
    assert!(longest >= 2000, "{starting:?}");
    let ticks = starting.iter().filter(|(waiting, _)| waiting.is_some()).count();
    assert!(ticks >= 3, "{starting:?}");
    assert_eq!(starting.last().unwrap().0, None, "the wait ends once the kernel is ready: {starting:?}");
    // All of it before the cell's output; nothing of it kept in the result.
    let last_wait = events.iter().rposition(|e| matches!(e, EvalEvent::KernelStarting { .. })).unwrap();
    let first_output = events.iter().position(|e| matches!(e, EvalEvent::Stdout { .. })).unwrap();
    assert!(last_wait < first_output, "{events:?}");
    // The only note is the one a gateway session's first result carries: the sandbox does not reach it.
    assert_eq!(result.notes, vec![GATEWAY_NOTE.trim_end().to_string()]);
    let line =
        EvalEvent::KernelStarting { cell: 0, waiting: Some("starting kernel on gateway".into()), elapsed_ms: 12_400 };
    assert_eq!(line.waiting_line().as_deref(), Some("starting kernel on gateway… (12 s)"));

    // A warm kernel: no wait to show.
    let (again, events) = eval_recorded(&engine, "print('again')").await;
    assert_eq!(again.text, "again\n");
    assert!(!events.iter().any(|e| matches!(e, EvalEvent::KernelStarting { .. })), "{events:?}");

    engine.dispose_all().await;
    assert_eq!(gateway.stop(), Vec::<u32>::new(), "no gateway or kernel process is left");
}

#[tokio::test]
async fn an_mcp_client_gets_progress_while_a_gateway_kernel_starts() {
    let jupyter = tempfile::tempdir().unwrap();
    slow_kernelspec(jupyter.path(), 4);
    let env = [("JUPYTER_PATH", jupyter.path().display().to_string())];
    let gateway = TestGateway::start_with_env(Flavor::KernelGateway, common::python(), false, &env).await;
    let (url, token) = (gateway.url.clone(), gateway.token.clone());
    tokio::task::spawn_blocking(move || {
        common::mcp::mcp_scenario(
            "gateway_progress.py",
            "start_progress",
            &[("CELLBOX_GATEWAY_URL", &url), ("CELLBOX_GATEWAY_TOKEN", &token)],
        )
    })
    .await
    .unwrap();
    // The server deleted its kernels when its client went away.
    assert_eq!(gateway.kernels().await, Vec::<String>::new());
    assert_eq!(gateway.stop(), Vec::<u32>::new(), "no gateway or kernel process is left");
}

/// A kernel on `gateway`, driven directly (the test reaches its connection).
async fn gateway_kernel(gateway: &TestGateway, dir: &std::path::Path) -> KernelHandle {
    let options = common::options(dir);
    let setting = GatewaySetting::External { url: gateway.url.clone(), token: Some(gateway.token.clone()) };
    KernelHandle::start(options, &Backend::Gateway(setting)).await.unwrap()
}

fn connection(kernel: &KernelHandle) -> &GatewayKernel {
    match kernel {
        KernelHandle::Gateway(kernel) => kernel,
        KernelHandle::Process(_) | KernelHandle::Jupyter(_) => panic!("not a gateway kernel"),
    }
}

/// Prints `line 0` … `line 7`, and waits after `line 2` and `line 5` until
/// the test creates the files `held` names (so the test drops the connection
/// while the cell is mid-way, whatever the machine's speed).
fn held_lines(held: [&std::path::Path; 2]) -> String {
    let [first, second] = held.map(|path| path.display().to_string());
    format!(
        "import os, time\ndef wait(path):\n    while not os.path.exists(path):\n        time.sleep(0.02)\n\
         for i in range(8):\n    print('line', i, flush=True)\n    if i == 2: wait({first:?})\n\
         \x20   if i == 5: wait({second:?})\n'end'"
    )
}

/// How often the gateway took over a dropped connection's session: it started
/// buffering the kernel's messages for it (after it noticed the close), or a
/// new websocket replaced the stale one. Either way no later message is lost;
/// messages sent into the broken socket before that can be (docs/jupyter-gateway.md).
fn sessions_taken_over(gateway: &TestGateway) -> usize {
    let log = std::fs::read_to_string(&gateway.log).unwrap_or_default();
    log.matches("Starting buffering for").count() + log.matches("Replacing stale connection").count()
}

#[tokio::test]
async fn a_dropped_websocket_reconnects_and_the_running_cell_ends_normally() {
    let gateway = TestGateway::start(Flavor::KernelGateway, common::python(), false).await;
    let dir = tempfile::tempdir().unwrap();
    let kernel = gateway_kernel(&gateway, dir.path()).await;
    let first = kernel.execute("kept = 'yes'").await.unwrap().collect().await.unwrap();
    assert_eq!(first.done.status, DoneStatus::Ok);

    let gates = [dir.path().join("after-2"), dir.path().join("after-5")];
    let mut execution = kernel.execute(&held_lines([&gates[0], &gates[1]])).await.unwrap();
    let (mut stdout, mut dropped, mut done, mut results) = (String::new(), 0, None, Vec::new());
    while let Some(event) = execution.next().await {
        match event.unwrap() {
            ExecEvent::Stdout(text) => {
                stdout.push_str(&text);
                // Twice during the cell: after line 2 and after line 5, each
                // while the cell waits; the cell goes on printing once the
                // gateway has taken the session over, not into a socket it
                // has not yet noticed is gone.
                if (dropped == 0 && stdout.contains("line 2\n")) || (dropped == 1 && stdout.contains("line 5\n")) {
                    let before = sessions_taken_over(&gateway);
                    connection(&kernel).drop_connection_for_test();
                    let taken = common::eventually(common::PATIENCE, || sessions_taken_over(&gateway) > before).await;
                    assert!(
                        taken,
                        "the gateway never noticed the close: {}",
                        std::fs::read_to_string(&gateway.log).unwrap()
                    );
                    std::fs::write(&gates[dropped], "").unwrap();
                    dropped += 1;
                }
            }
            ExecEvent::Result { bundle, .. } => results.push(bundle["text/plain"].clone()),
            ExecEvent::Done(end) => done = Some(end),
            _ => {}
        }
    }
    assert_eq!(dropped, 2);
    let expected: String = (0..8).map(|i| format!("line {i}\n")).collect();
    assert_eq!(stdout, expected, "every line arrives once, in order");
    assert_eq!(results, [json!("'end'")]);
    assert_eq!(done.expect("the cell ends").status, DoneStatus::Ok);

    // The same kernel, state kept, on the new connection.
    assert!(kernel.is_alive());
    let after = kernel.execute("kept").await.unwrap().collect().await.unwrap();
    assert_eq!(after.results(), ["'yes'"]);
    kernel.shutdown().await;
    assert_eq!(gateway.kernels().await, Vec::<String>::new());
    assert_eq!(gateway.stop(), Vec::<u32>::new(), "no gateway or kernel process is left");
}

#[tokio::test]
async fn a_kernel_gone_while_disconnected_ends_the_cell_as_died() {
    let gateway = TestGateway::start(Flavor::KernelGateway, common::python(), false).await;
    let dir = tempfile::tempdir().unwrap();
    let kernel = gateway_kernel(&gateway, dir.path()).await;
    // The gates are never opened: the cell waits after line 2 until its kernel is deleted.
    let never = [dir.path().join("never"), dir.path().join("never")];
    let mut execution = kernel.execute(&held_lines([&never[0], &never[1]])).await.unwrap();
    let mut outcome = None;
    while let Some(event) = execution.next().await {
        match event {
            Ok(ExecEvent::Stdout(text)) if text.contains("line 1") => {
                // The socket drops, and meanwhile the kernel is deleted.
                connection(&kernel).drop_connection_for_test();
                gateway.client().delete_kernel(connection(&kernel).kernel_id()).await.unwrap();
            }
            Ok(ExecEvent::Done(done)) => panic!("the cell cannot end normally: {done:?}"),
            Err(error) => outcome = Some(error),
            _ => {}
        }
    }
    let error = outcome.expect("the cell fails");
    assert!(matches!(error, KernelError::Died { .. }), "{error}");
    assert!(error.to_string().contains("no longer has the kernel"), "{error}");
    assert!(!kernel.is_alive());
    kernel.shutdown().await;
    assert_eq!(gateway.stop(), Vec::<u32>::new(), "no gateway or kernel process is left");
}
