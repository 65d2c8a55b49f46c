//! A real Jupyter Kernel Gateway (or Enterprise Gateway) for a test: started
//! on a free port with `--port_retries=0`, its runtime folder in a temp dir,
//! in its own process group, stopped with SIGTERM (then SIGKILL) on drop.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cellbox_kernels::gateway::{Endpoint, GatewayClient};
use cellbox_kernels::kernel::process::{Signal, signal_group};

/// Which gateway program to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `python -m kernel_gateway` (jupyter_kernel_gateway).
    KernelGateway,
    /// `python -m enterprise_gateway` (local process proxy).
    EnterpriseGateway,
}

pub struct TestGateway {
    child: Child,
    pub url: String,
    pub token: String,
    pub flavor: Flavor,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port()
}

impl TestGateway {
    /// A gateway on `python`; `rate_limit` keeps Jupyter's IOPub data rate limit on.
    pub async fn start(flavor: Flavor, python: &Path, rate_limit: bool) -> TestGateway {
        TestGateway::start_with_env(flavor, python, rate_limit, &[]).await
    }

    /// [`TestGateway::start`] with extra variables in the gateway's environment
    /// (`JUPYTER_PATH` to give it kernelspecs of the test's own, say).
    pub async fn start_with_env(
        flavor: Flavor,
        python: &Path,
        rate_limit: bool,
        env: &[(&str, String)],
    ) -> TestGateway {
        let dir = tempfile::tempdir().unwrap();
        let token = "test-token-1234".to_string();
        let bin = python.parent().unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let log = dir.path().join("gateway.log");
        for _ in 0..5 {
            let port = free_port();
            let mut command = Command::new(python);
            let (module, app) = match flavor {
                Flavor::KernelGateway => ("kernel_gateway", "KernelGatewayApp"),
                Flavor::EnterpriseGateway => ("enterprise_gateway", "EnterpriseGatewayApp"),
            };
            command
                .args(["-m", module])
                .arg(format!("--{app}.ip=127.0.0.1"))
                .arg(format!("--{app}.port={port}"))
                .arg(format!("--{app}.port_retries=0"))
                .arg(format!("--{app}.auth_token={token}"))
                .env("KG_LIST_KERNELS", "True")
                .env("EG_LIST_KERNELS", "True")
                .env("PATH", &path)
                .env("JUPYTER_RUNTIME_DIR", dir.path().join("runtime"))
                .envs(env.iter().map(|(key, value)| (key, value)))
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(std::fs::File::create(&log).unwrap())
                .stderr(std::fs::File::options().append(true).open(&log).unwrap());
            if !rate_limit && flavor == Flavor::KernelGateway {
                command
                    .arg("--ZMQChannelsWebsocketConnection.limit_rate=False")
                    .arg("--ZMQChannelsWebsocketConnection.iopub_data_rate_limit=0");
            }
            if flavor == Flavor::EnterpriseGateway {
                command.env("EG_CLIENT_ENVS", "CELLBOX_TEST_VALUE");
            }
            // Its own process group, so that stopping it stops its kernels too.
            #[cfg(unix)]
            std::os::unix::process::CommandExt::process_group(&mut command, 0);
            let mut child = command.spawn().expect("the gateway starts");
            let url = format!("http://127.0.0.1:{port}");
            let client = GatewayClient::new(Endpoint::new(&url, Some(token.clone()))).unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    if status.code() == Some(1) {
                        break; // port taken meanwhile: try another
                    }
                    panic!("the gateway exited ({status}): {}", std::fs::read_to_string(&log).unwrap_or_default());
                }
                if client.health().await.is_ok() {
                    return TestGateway { child, url, token, flavor, log, _dir: dir };
                }
                assert!(
                    Instant::now() < deadline,
                    "the gateway did not answer: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        panic!("no free port for the gateway after 5 attempts");
    }

    pub fn client(&self) -> GatewayClient {
        GatewayClient::new(Endpoint::new(&self.url, Some(self.token.clone()))).unwrap()
    }

    /// The kernels the gateway runs now.
    pub async fn kernels(&self) -> Vec<String> {
        self.client().list_kernels().await.expect("the gateway lists its kernels")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stop the gateway (SIGTERM: it shuts its kernels down) and return the
    /// pids of any process left that used its runtime folder or is the gateway
    /// (after waiting up to [`super::PATIENCE`] for them to leave).
    pub fn stop(mut self) -> Vec<u32> {
        self.terminate();
        let marker = self._dir.path().display().to_string();
        let deadline = Instant::now() + super::PATIENCE;
        loop {
            let left = processes_mentioning(&marker);
            if left.is_empty() || Instant::now() > deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn terminate(&mut self) {
        let group = self.child.id();
        let _ = signal_group(group, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = signal_group(group, Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Live processes whose command line mentions `marker`.
pub fn processes_mentioning(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
            .unwrap_or(true);
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// The interpreter of the Enterprise Gateway venv (`CELLBOX_TEST_EG_PYTHON`, else `.venv-eg`, which
/// scripts/test provisions from scripts/eg-requirements.txt: Enterprise Gateway cannot share
/// `.venv-test`'s jupyter_client and jupyter_server).
pub fn enterprise_python() -> std::path::PathBuf {
    let python = std::env::var_os("CELLBOX_TEST_EG_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-eg/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: run scripts/test once (it provisions .venv-eg) or set CELLBOX_TEST_EG_PYTHON",
        python.display()
    );
    python
}
