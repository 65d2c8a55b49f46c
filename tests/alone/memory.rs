//! The host's own memory while a cell floods it: bounded in memory, complete on disk.

use crate::common;

use common::engine::{eval_in, fixture, params};
use serde_json::json;

#[tokio::test]
async fn huge_output_is_bounded_in_memory_and_complete_on_disk() {
    let _alone = crate::ALONE.lock().await;
    let f = fixture(|_| {});
    let before = peak_rss_kib();
    // 200 MB: 2,000,000 lines of 99 characters plus a newline.
    let code = "line = 'x' * 91\nfor i in range(2_000_000):\n    print(f'{i:07d}', line)";
    let result = eval_in(&f.engine, "s", params(json!({"cells": [{"code": code, "timeout": 600}]}))).await;
    assert!(!result.is_error, "{}", &result.text[..result.text.len().min(2000)]);
    assert!(result.truncated);
    assert!(result.text.len() <= 52 * 1024, "model text is {} bytes", result.text.len());
    let uri = result.artifact.clone().unwrap();
    assert!(result.text.contains(&format!("elided; full output: {uri}]")), "marker names the artifact");
    assert!(result.text.starts_with("0000000 xxx"));
    assert!(result.text.trim_end().ends_with(&format!("1999999 {}", "x".repeat(91))));
    let (_, size) = f.engine.read_artifact(&uri, 0, 1).unwrap();
    assert_eq!(size, 200_000_000, "the artifact holds every byte");
    let (tail, _) = f.engine.read_artifact(&uri, size - 100, 100).unwrap();
    assert_eq!(tail, format!("1999999 {}\n", "x".repeat(91)));
    let grown_mib = (peak_rss_kib() - before) / 1024;
    assert!(grown_mib < 100, "host peak memory grew by {grown_mib} MiB");
    f.engine.dispose_all().await;
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}
