//! The shared local gateway out of file descriptors (EMFILE): a kernel start
//! it refuses restarts it, once, and the start succeeds on the new gateway.
//! It sets process-wide variables, so it runs alone (and takes them back at the end).

use crate::common;

use std::time::Duration;

use cellbox_engine::session::{Backend, KernelHandle};
use cellbox_kernels::gateway::{GatewaySetting, local};
use common::gateway::processes_mentioning;

#[tokio::test]
async fn a_gateway_out_of_file_descriptors_is_restarted_and_the_next_kernel_works() {
    let state = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let _alone = crate::ALONE.lock().await;
    // Test-only knob: a shared gateway with few descriptors runs out after a few kernels.
    let _environment = Environment::set(&[
        (cellbox_settings::GATEWAY_DIR.name, state.path().to_str().unwrap()),
        ("CELLBOX_GATEWAY_NOFILE_FOR_TEST", "100"),
    ]);
    let backend = Backend::Gateway(GatewaySetting::SharedLocal);
    let mut options = common::options(cwd.path());
    options.startup_timeout = common::PATIENCE;

    let mut kernels = Vec::new();
    let first = KernelHandle::start(options.clone(), &backend).await.unwrap();
    let first_gateway = local::read_info(state.path()).expect("gateway.json is written");
    kernels.push(first);
    let mut restarted = None;
    for _ in 0..20 {
        let kernel = KernelHandle::start(options.clone(), &backend)
            .await
            .unwrap_or_else(|error| panic!("a start fails instead of restarting the gateway: {error}"));
        let now = local::read_info(state.path()).unwrap();
        if now.pid != first_gateway.pid {
            restarted = Some((kernel, now));
            break;
        }
        kernels.push(kernel);
    }
    let (kernel, gateway) = restarted.expect("the gateway ran out of descriptors within 20 kernels");
    assert!(kernels.len() >= 2, "the limit allowed only {} kernels", kernels.len());
    // The kernel that met EMFILE got a fresh gateway and works.
    let output = kernel.execute("1 + 1").await.unwrap().collect().await.unwrap();
    assert_eq!(output.results(), ["2"]);
    assert!(local::healthy(&gateway).await);
    // The old gateway (and its kernels) are gone.
    assert!(!local::is_gateway_process(first_gateway.pid));
    for kernel in &kernels {
        kernel.shutdown().await;
    }
    kernel.shutdown().await;
    assert!(local::stop().await.unwrap());
    let marker = state.path().display().to_string();
    let deadline = std::time::Instant::now() + common::PATIENCE;
    while !processes_mentioning(&marker).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(processes_mentioning(&marker), Vec::<u32>::new(), "no gateway or kernel is left");
}

/// Process-wide variables for one test, removed again when it ends (passed or not).
struct Environment(Vec<&'static str>);

impl Environment {
    fn set(pairs: &[(&'static str, &str)]) -> Environment {
        for (name, value) in pairs {
            // SAFETY: this binary's tests run one at a time (`ALONE`), and nothing else reads the
            // environment while one of them starts.
            unsafe { std::env::set_var(name, value) };
        }
        Environment(pairs.iter().map(|(name, _)| *name).collect())
    }
}

impl Drop for Environment {
    fn drop(&mut self) {
        for name in &self.0 {
            // SAFETY: as in `set`.
            unsafe { std::env::remove_var(name) };
        }
    }
}
