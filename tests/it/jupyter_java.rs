//! Java cells on a real JJava kernel (`jjava` from PyPI, in the test
//! environment; it needs `java` on PATH): skipped with the reason where
//! either is missing.
#![cfg(target_os = "linux")]

use cellbox_engine::tool::{CellStatus, EvalEngine, EvalResult};
use cellbox_kernels::jupyter::{KernelSpec, SearchPath};
use serde_json::json;

use crate::common;
use crate::common::engine::{Fixture, try_eval_json as eval_params};

fn jjava() -> Option<KernelSpec> {
    let required = std::env::var("CELLBOX_TEST_JJAVA").as_deref() == Ok("required");
    let on_path =
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|dir| dir.join("java").is_file());
    // Where the test environment's packages put their kernelspecs.
    let python = common::python();
    let prefix = python.parent().and_then(std::path::Path::parent);
    let problem = match SearchPath::from_env(prefix).find("java") {
        Ok(spec) if on_path => return Some(spec),
        Ok(_) => "`java` is not on PATH; scripts/test installs a JDK with apt-get".to_string(),
        Err(error) => format!("the java kernelspec is not installed ({error}); scripts/test installs jjava"),
    };
    assert!(!required, "JJava is required (CELLBOX_TEST_JJAVA=required): {problem}");
    eprintln!("skipped: {problem}");
    None
}

async fn java(engine: &EvalEngine, code: &str, timeout: u32) -> EvalResult {
    eval_params(engine, json!({"cells": [{"code": code, "language": "java", "timeout": timeout}]})).await.unwrap()
}

#[tokio::test]
async fn java_cells_keep_state_fail_and_survive_an_interrupt() {
    if jjava().is_none() {
        return;
    }
    let f = Fixture::new(|_| {});
    let first = java(&f.engine, "int x = 41;\nSystem.out.println(\"hi \" + (x + 1));", 120).await;
    assert_eq!(first.text, "hi 42\n", "{}", first.text);
    let value = java(&f.engine, "x + 1", 60).await;
    assert!(value.text.contains("42"), "{}", value.text);
    let failed = java(&f.engine, "throw new IllegalStateException(\"boom\");", 60).await;
    assert!(failed.is_error && failed.text.contains("boom"), "{}", failed.text);
    let slept = java(&f.engine, "Thread.sleep(600_000);", 2).await;
    assert_eq!(slept.cells[0].status, CellStatus::Timeout, "{:?}", slept);
    assert!(
        java(&f.engine, "System.out.println(x);", 60).await.text.contains("41"),
        "the state outlives the interrupt"
    );
    f.engine.dispose_all().await;
}

/// JShell stops even a loop that catches everything, so the ladder ends at
/// its interrupt (the kill rung is tested on IRkernel and ipykernel).
#[tokio::test]
async fn a_spinning_java_cell_is_stopped_and_a_crash_is_named() {
    if jjava().is_none() {
        return;
    }
    let f = Fixture::new(|_| {});
    assert!(!java(&f.engine, "int kept = 7;", 120).await.is_error);
    let spinning = "while (true) { try { Thread.sleep(50); } catch (Throwable ignored) { } }";
    let stopped = java(&f.engine, spinning, 2).await;
    assert_eq!(stopped.cells[0].status, CellStatus::Timeout, "{:?}", stopped);
    assert_eq!(java(&f.engine, "System.out.println(kept);", 60).await.text, "7\n", "the state is kept");
    let crashed = java(&f.engine, "Runtime.getRuntime().halt(9);", 60).await;
    assert!(crashed.is_error, "{}", crashed.text);
    assert!(crashed.text.contains("exit code 9"), "the crash is attributed to the cell: {}", crashed.text);
    f.engine.dispose_all().await;
}

/// With the network off the kernel has a namespace of its own, with its own
/// loopback up for the host to reach it on. The sandbox holds as for every kernel.
#[tokio::test]
async fn java_in_a_network_namespace_of_its_own_behind_the_sandbox() {
    if jjava().is_none() {
        return;
    }
    let secret = common::planted_key();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("marker");
    let denied = secret.path().to_path_buf();
    let f = Fixture::new(|config| {
        config.sandbox.network = cellbox_kernels::sandbox::NetworkMode::Off;
        config.sandbox.deny_read.push(denied);
    });
    let code = format!(
        "String read;\ntry {{ read = java.nio.file.Files.readString(java.nio.file.Path.of(\"{}/id_rsa\")); }} catch \
         (Exception e) {{ read = \"read-refused\"; }}\nString wrote;\ntry {{ \
         java.nio.file.Files.writeString(java.nio.file.Path.of(\"{}\"), \"x\"); wrote = \"wrote-outside\"; }} catch \
         (Exception e) {{ wrote = \"write-refused\"; }}\nString reached;\ntry (var s = new java.net.Socket()) {{ \
         s.connect(new java.net.InetSocketAddress(\"1.1.1.1\", 53), 2000); reached = \"net-open\"; }} catch (Exception \
         e) {{ reached = \"net-refused\"; }}\nSystem.out.println(read + \" \" + wrote + \" \" + reached);",
        secret.path().display(),
        marker.display()
    );
    let result = java(&f.engine, &code, 120).await;
    assert_eq!(result.text, "read-refused write-refused net-refused\n", "{}", result.text);
    assert!(!marker.exists(), "a marker outside the workspace appeared");
    f.engine.dispose_all().await;
}

/// Under the host's network a TCP kernel still gets a namespace of its own:
/// its ports are not on the host's loopback, nor does it reach the host's.
#[tokio::test]
async fn a_tcp_kernel_keeps_off_the_hosts_loopback_under_network_on() {
    if jjava().is_none() {
        return;
    }
    let f = Fixture::new(|config| config.sandbox.network = cellbox_kernels::sandbox::NetworkMode::On);
    let host_service = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = host_service.local_addr().unwrap().port();
    let code = format!(
        "String reached;\ntry (var s = new java.net.Socket()) {{ s.connect(new java.net.InetSocketAddress(\"127.0.0.1\", \
         {port}), 2000); reached = \"host-loopback-reached\"; }} catch (Exception e) {{ reached = \"refused\"; }}\n\
         System.out.println(reached);"
    );
    let result = java(&f.engine, &code, 120).await;
    assert_eq!(result.text, "refused\n", "{}", result.text);
    f.engine.dispose_all().await;
}
