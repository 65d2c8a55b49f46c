//! What the sandbox costs (`--only sandbox`): the cold start under the default
//! policy, under the full one and under a server principal's, and the warm
//! round trip under the default, each beside the same scenario with the
//! sandbox off.

use std::path::Path;
use std::time::Instant;

use cellbox_kernels::kernel::{Kernel, KernelOptions};
use cellbox_kernels::sandbox::{HostRules, NetworkMode, PrivateRoot, SandboxMode, SandboxPolicy};

use super::{Plan, Report, Series, Setup};

pub(super) async fn sandbox_costs(plan: &Plan, setup: &Setup, report: &mut Report) {
    let default = SandboxPolicy::default();
    cold_start(
        plan,
        setup,
        report,
        "default-sandbox cold start → first 1+1",
        default.clone(),
        "workspace-write, network on (the default)",
    )
    .await;
    let full = SandboxPolicy {
        mode: SandboxMode::WorkspaceWrite,
        network: NetworkMode::Off,
        memory_limit: Some(4 << 30),
        max_processes: Some(512),
        ..SandboxPolicy::default()
    };
    cold_start(
        plan,
        setup,
        report,
        "sandboxed cold start → first 1+1",
        full,
        "workspace-write, network off, 4G memory, 512 processes",
    )
    .await;
    // A principal's kernel on `cellbox serve`, laid out as the server lays it out: its workspace
    // beside another principal's, artifacts and kernel files behind private roots, a /dev/shm of
    // its own and read-only mounts but the writable places (a mount namespace).
    let server = tempfile::tempdir().expect("a temp dir");
    let (root, artifacts, files) =
        (server.path().join("principals"), server.path().join("artifacts"), server.path().join("kernel-files"));
    for folder in
        [root.join("alice"), root.join("bob"), artifacts.join("alice"), files.join("alice"), files.join("bob")]
    {
        std::fs::create_dir_all(folder).expect("the server's folders");
    }
    let workspace = root.join("alice");
    let principal = SandboxPolicy {
        workspace: Some(workspace.clone()),
        kernel_files: Some(files.join("alice")),
        private_roots: vec![
            PrivateRoot::new(&root, Some("alice")),
            PrivateRoot::new(&artifacts, None),
            PrivateRoot::new(&files, Some("alice")),
        ],
        private_shm: true,
        ..SandboxPolicy::default()
    };
    cold_start_in(
        plan,
        setup,
        report,
        &workspace,
        "a server principal's cold start → first 1+1",
        principal,
        "workspace-write, network on, other principals' folders closed, own /dev/shm and read-only mounts \
         (cellbox serve)",
    )
    .await;
    // Hosts by name: the kernel's own network namespace with its proxies, beside the default.
    let by_name = SandboxPolicy {
        network: NetworkMode::Filtered,
        hosts: HostRules::parse("allow:pypi,bench.test").expect("a list"),
        ..SandboxPolicy::default()
    };
    cold_start_against(
        plan,
        setup,
        report,
        &setup.cwd,
        ("network-by-name cold start → first 1+1", by_name.clone()),
        ("default sandbox", default.clone()),
        "--network allow:pypi,bench.test (its own network namespace and proxies) against the default's network on",
    )
    .await;
    download_through_the_proxy(plan, setup, report, by_name).await;
    warm_round_trip(plan, setup, report, default).await;
}

/// A download from a server on this machine's loopback: through the kernel's
/// proxy (its name given to the proxy by a hosts file), straight to it from a
/// kernel with the host's network, and through a bare relay, alternating.
///
/// The bare relay is the floor of any proxy: it forwards bytes blindly, with
/// two threads copying 1 MiB reads. On a machine with few cores the server,
/// the relay and the reading kernel share them, so even this floor falls well
/// short of the direct rate; the proxy is compared with both.
async fn download_through_the_proxy(plan: &Plan, setup: &Setup, report: &mut Report, policy: SandboxPolicy) {
    use std::io::{Read, Write};
    let megabytes: usize = if plan.quick { 20 } else { 100 };
    // The server is a program of its own, as a remote host would be: blocking
    // threads, not tasks of the runtime the kernels' proxies run on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        let chunk = vec![b'x'; 1 << 20];
        for mut stream in listener.incoming().map_while(Result::ok) {
            let chunk = chunk.clone();
            std::thread::spawn(move || {
                let mut head = [0u8; 4096];
                let _ = stream.read(&mut head);
                let answer =
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", megabytes << 20);
                let _ = stream.write_all(answer.as_bytes());
                for _ in 0..megabytes {
                    if stream.write_all(&chunk).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let relay = bare_relay(port);
    let folder = tempfile::tempdir().expect("a temp dir");
    let hosts = folder.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.1 bench.test\n").expect("the hosts file");
    let policy = SandboxPolicy { network_hosts: Some(hosts), ..policy };
    let proxied = Kernel::start(options(setup, &setup.cwd, policy)).await.expect("kernel starts");
    let direct = Kernel::start(options(setup, &setup.cwd, SandboxPolicy::default())).await.expect("kernel starts");
    let cell = |host: &str| {
        format!(
            "import time, urllib.request\nstarted = time.perf_counter()\nresponse = urllib.request.urlopen('http://{host}/')\n\
             while response.read(1 << 20):\n    pass\nprint({megabytes} / (time.perf_counter() - started))"
        )
    };
    let mut through = Series::new("cellbox");
    let mut straight = Series::new("direct");
    let mut relayed = Series::new("bare relay");
    let relay_host = format!("127.0.0.1:{relay}");
    let server_host = format!("127.0.0.1:{port}");
    let proxy_host = format!("bench.test:{port}");
    let runs = if plan.quick { 5 } else { 9 };
    for _ in 0..runs {
        for (series, kernel, host) in [
            (&mut through, &proxied, &proxy_host),
            (&mut straight, &direct, &server_host),
            (&mut relayed, &direct, &relay_host),
        ] {
            let output = kernel.execute(&cell(host)).await.unwrap().collect().await.unwrap();
            let rate: f64 = output.stdout().trim().parse().expect("MB/s");
            series.values.push(rate);
        }
    }
    proxied.shutdown().await;
    direct.shutdown().await;
    report.add(
        &format!("{megabytes} MB download through the network proxy"),
        "MB/s",
        true,
        &through,
        Some(&straight),
        "--network allow:bench.test (urllib through the kernel's HTTP proxy) against a kernel with the host's \
         network reaching the same loopback server",
    );
    report.add(
        &format!("{megabytes} MB download through the network proxy"),
        "MB/s",
        true,
        &through,
        Some(&relayed),
        "the same downloads against a bare relay (two threads copying 1 MiB reads between the kernel and the \
         server): the floor of any proxy on this machine",
    )
}

/// A relay on the loopback that forwards every connection to `port` as it
/// is, and its own port.
fn bare_relay(port: u16) -> u16 {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    fn copy(mut from: TcpStream, mut to: TcpStream) {
        let mut buffer = vec![0u8; 1 << 20];
        while let Ok(read @ 1..) = from.read(&mut buffer) {
            if to.write_all(&buffer[..read]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let relay = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let Ok(server) = TcpStream::connect(("127.0.0.1", port)) else { continue };
            let (Ok(client_too), Ok(server_too)) = (client.try_clone(), server.try_clone()) else { continue };
            std::thread::spawn(move || copy(client, server));
            std::thread::spawn(move || copy(server_too, client_too));
        }
    });
    relay
}

fn options(setup: &Setup, cwd: &Path, policy: SandboxPolicy) -> KernelOptions {
    let mut options = KernelOptions::new(&setup.python, cwd, setup.env.clone());
    options.sandbox = policy;
    options
}

/// The first `1+1` of a kernel under `policy` beside one with the sandbox off,
/// alternating so both see the same machine load.
async fn cold_start(
    plan: &Plan,
    setup: &Setup,
    report: &mut Report,
    scenario: &str,
    policy: SandboxPolicy,
    note: &str,
) {
    cold_start_in(plan, setup, report, &setup.cwd, scenario, policy, note).await;
}

/// [`cold_start`] with both kernels in `cwd`.
async fn cold_start_in(
    plan: &Plan,
    setup: &Setup,
    report: &mut Report,
    cwd: &Path,
    scenario: &str,
    policy: SandboxPolicy,
    note: &str,
) {
    let baseline = ("sandbox off", SandboxPolicy::off());
    cold_start_against(plan, setup, report, cwd, (scenario, policy), baseline, note).await;
}

/// The first `1+1` of a kernel under a policy beside one under `baseline`'s,
/// alternating, both in `cwd`.
async fn cold_start_against(
    plan: &Plan,
    setup: &Setup,
    report: &mut Report,
    cwd: &Path,
    (scenario, policy): (&str, SandboxPolicy),
    (baseline, baseline_policy): (&str, SandboxPolicy),
    note: &str,
) {
    let mut sandboxed = Series::new("cellbox");
    let mut plain = Series::new(baseline);
    for _ in 0..plan.cold_runs {
        for (series, policy) in [(&mut sandboxed, policy.clone()), (&mut plain, baseline_policy.clone())] {
            let started = Instant::now();
            let kernel = Kernel::start(options(setup, cwd, policy)).await.expect("kernel starts");
            let output = kernel.execute("1+1").await.unwrap().collect().await.unwrap();
            assert_eq!(output.results(), ["2"]);
            series.values.push(started.elapsed().as_secs_f64() * 1000.0);
            kernel.shutdown().await;
        }
    }
    report.add(scenario, "ms", false, &sandboxed, Some(&plain), note);
}

/// The warm `1+1` in a kernel under `policy` beside one with the sandbox off,
/// one call each in turn.
async fn warm_round_trip(plan: &Plan, setup: &Setup, report: &mut Report, policy: SandboxPolicy) {
    let sandboxed_kernel = Kernel::start(options(setup, &setup.cwd, policy)).await.expect("kernel starts");
    let plain_kernel = Kernel::start(options(setup, &setup.cwd, SandboxPolicy::off())).await.expect("kernel starts");
    for _ in 0..50 {
        for kernel in [&sandboxed_kernel, &plain_kernel] {
            kernel.execute("1+1").await.unwrap().collect().await.unwrap();
        }
    }
    let mut sandboxed = Series::new("cellbox");
    let mut plain = Series::new("sandbox off");
    for _ in 0..plan.warm_iterations {
        for (series, kernel) in [(&mut sandboxed, &sandboxed_kernel), (&mut plain, &plain_kernel)] {
            let started = Instant::now();
            kernel.execute("1+1").await.unwrap().collect().await.unwrap();
            series.values.push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    sandboxed_kernel.shutdown().await;
    plain_kernel.shutdown().await;
    report.add(
        "default-sandbox warm round trip of 1+1",
        "ms",
        false,
        &sandboxed,
        Some(&plain),
        "workspace-write, network on",
    );
}
