//! Which fork server a kernel comes from. Every engine's `dispose_all` lets go of every fork
//! server of its process, so this test holds the process to itself: in `tests/it` another test's
//! engine could retire the server between the two kernels it starts.

use crate::common;

use cellbox_kernels::kernel::{Kernel, KernelOptions};
use cellbox_kernels::sandbox::SandboxPolicy;
use common::{python, test_env};

#[tokio::test]
async fn without_the_sandbox_kernels_in_any_folder_fork_from_one_server() {
    let _alone = crate::ALONE.lock().await;
    let modules = tempfile::tempdir().unwrap();
    std::fs::write(modules.path().join("zyg_key_probe.py"), "import os\nIMPORT_PID = os.getpid()\n").unwrap();
    let pythonpath = modules.path().display().to_string();
    let options = |cwd: &std::path::Path| {
        let mut options = KernelOptions::new(python(), cwd, test_env(&[("PYTHONPATH", &pythonpath)]));
        options.preload = vec!["zyg_key_probe".into()];
        options.sandbox = SandboxPolicy::off();
        options
    };
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Kernel::start(options(one.path())).await.unwrap();
    let b = Kernel::start(options(two.path())).await.unwrap();
    assert!(a.forked_from().is_some());
    assert_eq!(a.forked_from(), b.forked_from(), "the cwd does not take part in an unsandboxed fork server's key");
    a.shutdown().await;
    b.shutdown().await;
}
