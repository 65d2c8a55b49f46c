//! Forking a live kernel, on real Python: the copy starts with the source's
//! state at a cell boundary, then both live on independently (own pid,
//! process group, pipes, counters); threads cells started are listed as lost;
//! the source's death does not take the copy along; kernels that cannot be
//! forked say so.

#![cfg(target_os = "linux")]

use crate::common;

use std::time::Duration;

use cellbox_kernels::kernel::{Kernel, KernelError, KernelOptions};
use cellbox_kernels::runtime::Runtime;
use common::{python, run, test_env};

const WAIT: Duration = Duration::from_secs(60);

async fn value(kernel: &Kernel, code: &str) -> String {
    let output = run(kernel, code).await;
    assert!(output.is_ok(), "{code}: {:?} {}", output.errors(), output.stderr());
    output.results().join("")
}

async fn start() -> (tempfile::TempDir, Kernel) {
    let dir = tempfile::tempdir().unwrap();
    let kernel = Kernel::start(KernelOptions::new(python(), dir.path(), test_env(&[]))).await.unwrap();
    (dir, kernel)
}

#[tokio::test]
async fn a_fork_starts_with_the_state_and_then_diverges() {
    let (_dir, source) = start().await;
    value(&source, "data = {'a': [1, 2]}\nimport json\ncounter = 10").await;
    let copy = source.fork(WAIT).await.unwrap();
    assert_ne!(copy.pid(), source.pid());
    assert_eq!(copy.forked_from(), Some(source.pid()));
    assert_eq!(value(&copy, "json.dumps(data), counter").await, "('{\"a\": [1, 2]}', 10)");
    value(&copy, "data['a'].append(3); counter += 1").await;
    value(&source, "data['b'] = 0").await;
    assert_eq!(value(&copy, "data, counter").await, "({'a': [1, 2, 3]}, 11)");
    assert_eq!(value(&source, "data, counter").await, "({'a': [1, 2], 'b': 0}, 10)");
    // Own process group and session; the pid the cells see is the copy's.
    assert_eq!(value(&copy, "import os; os.getpid() == os.getpgrp() == os.getsid(0)").await, "True");
    assert_eq!(value(&copy, "os.getpid()").await, copy.pid().to_string());
    // The statm the runner keeps open between cells (for its memory trim) is the copy's own.
    let statm = "import os, sys\nos.readlink('/proc/self/fd/%d' % sys.modules['cellbox_kernel.memory']._statm[0])";
    assert_eq!(value(&copy, statm).await, format!("'/proc/{}/statm'", copy.pid()));
    assert_eq!(value(&source, statm).await, format!("'/proc/{}/statm'", source.pid()));
    // Output streams reach the right kernel.
    let out = run(&copy, "print('from the copy')").await;
    assert_eq!(out.stdout(), "from the copy\n");
    let out = run(&source, "print('from the source')").await;
    assert_eq!(out.stdout(), "from the source\n");
}

#[tokio::test]
async fn the_execution_count_continues_in_the_fork() {
    let (_dir, source) = start().await;
    for _ in 0..3 {
        value(&source, "1").await;
    }
    let before = run(&source, "2").await.done.execution_count;
    let copy = source.fork(WAIT).await.unwrap();
    assert_eq!(run(&copy, "3").await.done.execution_count, before + 1);
    assert_eq!(run(&source, "3").await.done.execution_count, before + 1);
}

#[tokio::test]
async fn threads_started_by_cells_are_listed_as_lost() {
    let (_dir, source) = start().await;
    value(&source, "import threading, time\nt = threading.Thread(target=time.sleep, args=(3600,), name='worker-1', daemon=True)\nt.start()").await;
    let copy = source.fork(WAIT).await.unwrap();
    assert_eq!(copy.ready_info().lost_threads, vec!["worker-1".to_string()]);
    assert_eq!(value(&copy, "t.is_alive()").await, "False");
    assert_eq!(value(&source, "t.is_alive()").await, "True");
}

#[tokio::test]
async fn the_fork_outlives_its_source_and_its_death_is_reported() {
    let (_dir, source) = start().await;
    value(&source, "x = 41").await;
    let copy = source.fork(WAIT).await.unwrap();
    let second = source.fork(WAIT).await.unwrap();
    // A copy killed while its source lives: the source reaps it and reports the signal.
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(second.pid() as i32), nix::sys::signal::SIGKILL);
    let died = match second.execute("1").await {
        Err(error) => error,
        Ok(execution) => execution.collect().await.expect_err("the copy was killed"),
    };
    assert!(died.to_string().contains("killed by signal 9"), "{died}");
    assert_eq!(value(&copy, "x + 2").await, "43");
    source.shutdown().await;
    assert_eq!(value(&copy, "x + 1").await, "42");
    // And its fork of its own works too.
    let grandchild = copy.fork(WAIT).await.unwrap();
    assert_eq!(value(&grandchild, "x").await, "41");
}

#[tokio::test]
async fn a_fork_waits_for_the_running_cell() {
    let (_dir, source) = start().await;
    let running = source.execute("import time; time.sleep(0.3); done_before_fork = True").await.unwrap();
    let copy = source.fork(WAIT).await.unwrap();
    running.collect().await.unwrap();
    assert_eq!(value(&copy, "done_before_fork").await, "True");
}

#[tokio::test]
async fn many_forks_of_one_kernel_at_once() {
    let (_dir, source) = start().await;
    value(&source, "base = 100").await;
    let source = std::sync::Arc::new(source);
    let asks: Vec<_> = (0..8)
        .map(|_| {
            let source = source.clone();
            tokio::spawn(async move { source.fork(WAIT).await })
        })
        .collect();
    let mut forks = Vec::new();
    for ask in asks {
        forks.push(ask.await.unwrap().unwrap());
    }
    let mut pids: Vec<u32> = forks.iter().map(Kernel::pid).collect();
    pids.sort();
    pids.dedup();
    assert_eq!(pids.len(), 8);
    for (index, fork) in forks.iter().enumerate() {
        value(fork, &format!("base += {index}")).await;
    }
    for (index, fork) in forks.iter().enumerate() {
        assert_eq!(value(fork, "base").await, (100 + index).to_string());
    }
    assert_eq!(value(&source, "base").await, "100");
}

#[tokio::test]
async fn a_node_kernel_says_it_cannot_be_forked() {
    let node = match std::env::var_os("CELLBOX_TEST_NODE") {
        Some(explicit) => std::path::PathBuf::from(explicit),
        None => {
            cellbox_kernels::runtime::node::resolve_from_env(None, &std::env::temp_dir(), &Default::default())
                .expect("tests need Node 18+ on PATH")
                .executable
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let mut options = KernelOptions::new(node, dir.path(), test_env(&[]));
    options.runtime = Runtime::Node;
    let kernel = Kernel::start(options).await.unwrap();
    match kernel.fork(WAIT).await {
        Err(KernelError::ForkUnsupported(why)) => assert!(why.contains("only Python kernels"), "{why}"),
        other => panic!("expected ForkUnsupported, got {:?}", other.map(|k| k.pid())),
    }
}

#[tokio::test]
async fn pandas_state_forks_and_the_branches_diverge() {
    let (_dir, source) = start().await;
    value(&source, "import pandas as pd, numpy as np\ndf = pd.DataFrame({'a': range(5), 'b': np.arange(5) * 2.0})")
        .await;
    let copy = source.fork(WAIT).await.unwrap();
    value(&copy, "df.drop(columns='a', inplace=True); df['b'] *= 10").await;
    assert_eq!(value(&copy, "list(df.columns), float(df['b'].sum())").await, "(['b'], 200.0)");
    assert_eq!(value(&source, "list(df.columns), float(df['b'].sum())").await, "(['a', 'b'], 20.0)");
}

#[tokio::test]
async fn a_sandboxed_kernel_forks_into_the_same_sandbox_with_its_own_memory_limit() {
    use cellbox_kernels::sandbox::{NetworkMode, SandboxMode, SandboxPolicy};
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let mut options = KernelOptions::new(python(), dir.path(), test_env(&[]));
    options.sandbox = SandboxPolicy {
        mode: SandboxMode::WorkspaceWrite,
        network: NetworkMode::Off,
        memory_limit: Some(256 << 20),
        ..SandboxPolicy::off()
    }
    .resolved(dir.path());
    let source = Kernel::start(options).await.unwrap();
    value(&source, "state = 'kept'").await;
    let copy = source.fork(WAIT).await.unwrap();
    let target = outside.path().join("escape.txt");
    let write = format!("open({:?}, 'w').write('x')", target.display().to_string());
    let denied = run(&copy, &write).await;
    assert!(!denied.is_ok(), "the copy wrote outside its workspace");
    assert!(!target.exists());
    assert_eq!(value(&copy, "open('inside.txt', 'w').write('ok')").await, "2");
    // Past the memory limit only the copy dies: it has a cgroup of its own.
    let hog = "x = bytearray(512 << 20)\nfor i in range(0, len(x), 4096):\n    x[i] = 1";
    let outcome = match copy.execute(hog).await {
        Err(error) => Err(error),
        Ok(execution) => execution.collect().await,
    };
    match outcome {
        Err(error) => assert!(error.to_string().contains("memory limit"), "{error}"),
        Ok(output) => assert!(!output.is_ok(), "the copy allocated past its limit"),
    }
    assert_eq!(value(&source, "state").await, "'kept'");
}

#[tokio::test]
async fn a_kernel_forked_from_the_preloading_server_can_be_forked_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = KernelOptions::new(python(), dir.path(), test_env(&[]));
    options.preload = vec!["json".into()];
    let source = Kernel::start(options).await.unwrap();
    assert!(source.forked_from().is_some(), "the kernel came from the fork server");
    value(&source, "import json\ny = json.dumps([1])").await;
    let copy = source.fork(WAIT).await.unwrap();
    assert_eq!(value(&copy, "y").await, "'[1]'");
}

#[tokio::test]
async fn a_cell_cannot_make_the_host_adopt_a_process_that_is_not_its_copy() {
    let (_dir, source) = start().await;
    // The cell finds the control socket among its fds and answers the next
    // fork itself, naming pid 1.
    let spoof = r#"
import json, os, socket, stat
for name in os.listdir('/proc/self/fd'):
    fd = int(name)
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            continue
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        continue
    if sock.type == socket.SOCK_SEQPACKET:
        sock.send(json.dumps({"type": "forked", "id": 1, "pid": 1}).encode())
    sock.detach()
"#;
    value(&source, spoof).await;
    match source.fork(WAIT).await {
        Err(KernelError::ForkFailed(why)) => assert!(why.contains("not its child"), "{why}"),
        other => panic!("expected the spoofed answer to be refused, got {:?}", other.map(|k| k.pid())),
    }
    // The kernel goes on, and the next fork is a real one.
    let copy = source.fork(WAIT).await.unwrap();
    assert_eq!(value(&copy, "1 + 1").await, "2");
}

#[tokio::test]
async fn the_copy_keeps_its_temp_dir_after_the_source_is_gone() {
    let (_dir, source) = start().await;
    value(&source, "import tempfile, os").await;
    let copy = source.fork(WAIT).await.unwrap();
    assert_eq!(value(&copy, "os.path.basename(os.environ['TMPDIR']).startswith('cellbox-kernel-')").await, "True");
    source.shutdown().await;
    // The sandbox's temp dir is the source's (the copy's rules name it): it stays while the copy lives.
    assert_eq!(
        value(&copy, "fd, path = tempfile.mkstemp(); os.write(fd, b'ok'); os.close(fd); os.path.getsize(path)").await,
        "2"
    );
}
