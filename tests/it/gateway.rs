//! The eval tool on a real Jupyter Kernel Gateway (the gateway backend with an
//! external URL): the same calls as on local kernels, over REST + websocket.

use crate::common;

use cellbox_engine::tool::{CallContext, CellStatus, EngineConfig};
use common::engine::{Fixture, GATEWAY_NOTE, eval, eval_json as eval_params};
use common::gateway::{Flavor, TestGateway};
use serde_json::json;

fn engine_on(url: &str, token: &str, tweak: impl FnOnce(&mut EngineConfig)) -> Fixture {
    Fixture::new(|config| {
        common::engine::on_gateway(config, url, token);
        tweak(config);
    })
}

#[tokio::test]
async fn cells_run_on_a_kernel_gateway_as_on_local_kernels() {
    let gateway = TestGateway::start(Flavor::KernelGateway, common::python(), false).await;
    let f = engine_on(&gateway.url, &gateway.token, |config| {
        config.extra_env.insert("CELLBOX_TEST_VALUE".into(), "from-the-host".into());
    });
    check_cells(&f).await;
    f.engine.dispose_all().await;
    assert_eq!(gateway.kernels().await, Vec::<String>::new(), "disposing deletes the gateway's kernels");
    assert_eq!(gateway.stop(), Vec::<u32>::new(), "no gateway or kernel process is left");
}

/// What every gateway must do like a local kernel.
async fn check_cells(f: &Fixture) {
    let engine = &f.engine;
    // A project extension module runs after the prelude.
    let modules = f.dir.path().join(".cellbox/modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("extra.py"), "def extra():\n    return 'extra ok'\n").unwrap();
    // The session's first result says the sandbox does not reach a gateway kernel; later ones do not repeat it.
    assert_eq!(eval(engine, "extra()").await.text, format!("'extra ok'\n{GATEWAY_NOTE}"));
    // State across calls, cwd, environment and sys.path set by the setup code.
    let first = eval(
        engine,
        "import os, sys\nx = 41\nprint(os.getcwd())\nprint(os.environ.get('CELLBOX_TEST_VALUE'))\nprint(os.getcwd() in sys.path)",
    )
    .await;
    assert!(!first.is_error, "{}", first.text);
    let cwd = std::fs::canonicalize(f.dir.path()).unwrap();
    assert_eq!(first.text, format!("{}\nfrom-the-host\nTrue\n", cwd.display()));
    let second = eval(engine, "x + 1").await;
    assert_eq!(second.text, "42\n");
    assert_eq!(second.cells[0].execution_count, Some(3));

    // Streams in order, a display, a status event from the prelude, an image.
    let rich = eval(
        engine,
        "import sys\nprint('out')\nprint('err', file=sys.stderr)\ndisplay({'a': 1})\nlog('hello')\n\
         from PIL import Image\ndisplay(Image.new('RGB', (8, 4), 'red'))",
    )
    .await;
    assert!(!rich.is_error, "{}", rich.text);
    assert!(rich.text.starts_with("out\nerr\n"), "{}", rich.text);
    // The streams keep the order the cell wrote them in, though the kernel buffers each apart.
    let alternating =
        eval(engine, "import sys\nfor i in range(20):\n    print('o%d' % i)\n    print('e%d' % i, file=sys.stderr)")
            .await;
    let expected: String = (0..20).map(|i| format!("o{i}\ne{i}\n")).collect();
    assert_eq!(alternating.text, expected);
    assert!(rich.text.contains("{'a': 1}"), "{}", rich.text);
    assert_eq!(rich.status_events.len(), 1, "{:?}", rich.status_events);
    assert_eq!(rich.status_events[0].event["op"], "log");
    assert_eq!(rich.images.len(), 1, "{}", rich.text);

    // An error fails the cell with its name and a readable traceback.
    let error = eval(engine, "1/0").await;
    assert!(error.is_error);
    assert_eq!(error.cells[0].status, CellStatus::Error);
    assert_eq!(error.cells[0].error.as_ref().unwrap().ename, "ZeroDivisionError");
    assert!(error.text.contains("ZeroDivisionError: division by zero"), "{}", error.text);
    assert!(!error.text.contains('\u{1b}'), "no colour codes: {:?}", error.text);

    // input() gets an empty answer and the cell fails as on local kernels.
    let input = eval(engine, "input('name? ')").await;
    assert!(input.is_error);
    assert_eq!(input.cells[0].error.as_ref().unwrap().ename, "StdinNotSupportedError");
    assert!(input.text.contains("no interactive stdin"), "{}", input.text);

    // Large output arrives whole (the test gateway runs without the rate limit).
    let large = eval(engine, "for i in range(200000): print('line', i)").await;
    assert!(!large.is_error, "{}", &large.text[..large.text.len().min(500)]);
    assert!(large.text.contains("line 199999"));
    let artifact = large.artifact.clone().expect("large output is saved");
    let (text, total) = engine.read_artifact(&artifact, 0, 64).unwrap();
    assert!(text.starts_with("line 0\n"));
    let expected: u64 = (0..200000).map(|i| format!("line {i}\n").len() as u64).sum();
    assert!(total >= expected, "{total} < {expected}");

    // The REPL question, answered by the gateway kernel.
    let ctx = CallContext::new("s");
    assert_eq!(engine.check_complete(&ctx, "for x in y:").await.unwrap().status, "incomplete");

    // reset: a fresh kernel.
    let reset = eval_params(engine, json!({ "cells": [{ "code": "'x' in dir()", "reset": true }] })).await;
    assert_eq!(reset.text, "False\n");
}

#[tokio::test]
async fn interrupts_and_crashes_on_a_kernel_gateway() {
    let gateway = TestGateway::start(Flavor::KernelGateway, common::python(), false).await;
    let f = engine_on(&gateway.url, &gateway.token, |_| {});
    check_interrupts_and_crashes(&f).await;
    f.engine.dispose_all().await;
    assert_eq!(gateway.kernels().await, Vec::<String>::new());
    assert_eq!(gateway.stop(), Vec::<u32>::new(), "no gateway or kernel process is left");
}

async fn check_interrupts_and_crashes(f: &Fixture) {
    let engine = &f.engine;
    eval(engine, "kept = 'yes'").await;
    // A timeout right after submit: the interrupt waits for the cell to start.
    let timed =
        eval_params(engine, json!({ "cells": [{ "code": "import time\ntime.sleep(60)", "timeout": 1 }] })).await;
    assert_eq!(timed.cells[0].status, CellStatus::Timeout, "{}", timed.text);
    assert!(timed.text.contains("KeyboardInterrupt"), "{}", timed.text);
    assert_eq!(eval(engine, "kept").await.text, "'yes'\n", "the kernel keeps its state after an interrupt");

    // A cell that ignores interrupts: interrupt, then the kernel is replaced.
    let stuck = eval_params(
        engine,
        json!({ "cells": [{ "code": "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)", "timeout": 1 }] }),
    )
    .await;
    assert_eq!(stuck.cells[0].status, CellStatus::Killed, "{}", stuck.text);
    let after = eval(engine, "'kept' in dir()").await;
    assert_eq!(after.text, "False\n", "a fresh kernel replaced the stuck one");

    // A crash never gets an execute_reply: the cell ends as "kernel died", no hang.
    eval(engine, "kept = 'again'").await;
    // (ipykernel sends output from a thread: what was printed just before
    // os._exit may never leave the kernel, so it is not asserted.)
    let crashed = eval(engine, "import os\nos._exit(1)").await;
    assert!(crashed.is_error);
    assert!(crashed.text.contains("kernel died"), "{}", crashed.text);
    let fresh = eval(engine, "'kept' in dir()").await;
    assert_eq!(fresh.text, "False\n", "{}", fresh.text);
}

#[tokio::test]
async fn a_bad_token_and_an_unreachable_gateway_give_clear_errors() {
    let gateway = TestGateway::start(Flavor::KernelGateway, common::python(), false).await;
    let f = engine_on(&gateway.url, "wrong-token", |_| {});
    let refused = eval(&f.engine, "1").await;
    assert!(refused.is_error);
    assert!(refused.text.contains("403") || refused.text.contains("401"), "{}", refused.text);
    assert!(refused.text.contains("CELLBOX_GATEWAY_TOKEN"), "{}", refused.text);
    f.engine.dispose_all().await;
    assert_eq!(gateway.stop(), Vec::<u32>::new());

    // Nothing listens there: a socket bound to the port (so nobody else can
    // take it meanwhile) that never listens refuses every connection.
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = held.local_addr().unwrap().port();
    let f = engine_on(&format!("http://127.0.0.1:{port}"), "t", |_| {});
    let unreachable = tokio::time::timeout(common::PATIENCE, eval(&f.engine, "1")).await.expect("no hang");
    assert!(unreachable.is_error);
    assert!(unreachable.text.contains("could not reach the Jupyter gateway"), "{}", unreachable.text);
}

#[tokio::test]
async fn a_rate_limited_gateway_says_it_dropped_output() {
    let gateway = TestGateway::start(Flavor::KernelGateway, common::python(), true).await;
    let f = engine_on(&gateway.url, &gateway.token, |_| {});
    let result = eval(&f.engine, "import sys\nfor _ in range(40):\n    sys.stdout.write('x' * 100000 + '\\n')").await;
    assert!(result.text.contains("IOPub data rate exceeded"), "{}", &result.text[..result.text.len().min(2000)]);
    assert!(result.text.contains("the gateway dropped part of this cell's output"), "{}", result.text.len());
    f.engine.dispose_all().await;
    assert_eq!(gateway.stop(), Vec::<u32>::new());
}

#[tokio::test]
async fn cells_run_on_an_enterprise_gateway() {
    let gateway = TestGateway::start(Flavor::EnterpriseGateway, &common::gateway::enterprise_python(), false).await;
    let f = engine_on(&gateway.url, &gateway.token, |config| {
        config.extra_env.insert("CELLBOX_TEST_VALUE".into(), "from-the-host".into());
    });
    check_cells(&f).await;
    f.engine.dispose_all().await;
    assert_eq!(gateway.kernels().await, Vec::<String>::new(), "disposing deletes the gateway's kernels");
    assert_eq!(gateway.stop(), Vec::<u32>::new(), "no gateway or kernel process is left");
}

#[tokio::test]
async fn interrupts_and_crashes_on_an_enterprise_gateway() {
    let gateway = TestGateway::start(Flavor::EnterpriseGateway, &common::gateway::enterprise_python(), false).await;
    let f = engine_on(&gateway.url, &gateway.token, |_| {});
    check_interrupts_and_crashes(&f).await;
    f.engine.dispose_all().await;
    assert_eq!(gateway.kernels().await, Vec::<String>::new());
    assert_eq!(gateway.stop(), Vec::<u32>::new(), "no gateway or kernel process is left");
}

#[tokio::test]
async fn a_gateway_session_says_it_cannot_be_forked_checkpointed_or_saved() {
    let gateway = TestGateway::start(Flavor::KernelGateway, common::python(), false).await;
    let f = engine_on(&gateway.url, &gateway.token, |_| {});
    let source = CallContext::new("s");
    let first = eval(&f.engine, "x = 1").await;
    assert!(!first.is_error, "{}", first.text);
    let fork = f.engine.fork_session(&source, &CallContext::new("copy"), "copy", Default::default()).await;
    let error = fork.expect_err("a gateway kernel is not forked").to_string();
    assert!(error.contains("Jupyter gateway cannot be forked"), "{error}");
    let saved = f.engine.snapshot_session(&source, std::path::Path::new("s.cellbox")).await;
    let error = saved.expect_err("a gateway kernel is not saved").to_string();
    assert!(error.contains("gateway are not supported"), "{error}");
    // A call asking for a checkpoint runs, and says why none was taken.
    let call = eval_params(&f.engine, json!({"checkpoint": true, "cells": [{"code": "x + 1"}]})).await;
    assert!(!call.is_error && call.text.contains('2'), "{}", call.text);
    assert!(call.text.contains("cannot be checkpointed"), "{}", call.text);
    f.engine.dispose_all().await;
    assert_eq!(gateway.stop(), Vec::<u32>::new());
}
