//! Stdin: a kernel has none, and says so at once.

use super::harness::{assert_has, harness};

async fn stdin_case(code: &str, expect: &str) {
    let h = harness();
    let pid = h.start("s").await;
    let result = h.run("s", &format!("print('before reading')\n{code}"), 5).await;
    assert_has(&result, "before reading");
    assert_has(&result, expect);
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn stdin_input_fails_at_once() {
    stdin_case("input('name? ')", "StdinNotSupportedError").await;
}

#[tokio::test]
async fn stdin_sys_stdin_read_is_empty() {
    stdin_case("import sys\nrepr(sys.stdin.read())", "''").await;
}

#[tokio::test]
async fn stdin_os_read_0_is_empty() {
    stdin_case("import os\nos.read(0, 10)", "b''").await;
}
