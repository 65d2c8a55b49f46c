//! Drive the eval tool from Rust: two calls that share state, streamed output,
//! a timeout, and the full output read back from its artifact.
//!
//! Run with `cargo run --example eval_engine`.

use cellbox_engine::tool::{CallContext, EngineConfig, EvalEngine, EvalEvent, EvalParams};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = EvalEngine::new(EngineConfig::new(std::env::current_dir()?));
    let session = CallContext::new("example");
    let cancel = CancellationToken::new();
    let stream = |event: EvalEvent| {
        if let EvalEvent::Stdout { text, .. } = event {
            print!("  streamed: {text}");
        }
    };

    let first = EvalParams::code("numbers = [n * n for n in range(10)]\nprint(sum(numbers))");
    let result = engine.eval(&first, &session, &cancel, &stream).await?;
    println!("first call → {:?}", result.text);

    let second = EvalParams::from_json(serde_json::json!({
        "cells": [
            {"code": "max(numbers)", "title": "state is kept"},
            {"code": "import time\ntime.sleep(10)", "timeout": 1, "title": "too slow"}
        ]
    }))?;
    let result = engine.eval(&second, &session, &cancel, &stream).await?;
    println!("second call →\n{}", result.text);
    for cell in &result.cells {
        println!("  cell {} {:?}: {} in {} ms", cell.index + 1, cell.title, cell.status.as_str(), cell.duration_ms);
    }
    if let Some(uri) = &result.artifact {
        let (text, size) = engine.read_artifact(uri, 0, 200)?;
        println!("{uri} holds {size} bytes, starting with {:?}", text.lines().next());
    }
    engine.dispose_all().await;
    Ok(())
}
