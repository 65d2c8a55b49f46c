//! Snapshot and restore on real Python kernels: a session's variables saved
//! to a file come back in another engine's fresh kernel (cell-defined
//! functions, classes, closures, lambdas, dataclasses, a DataFrame); what
//! cannot be saved is named with its reason; a damaged file gets a clear error.

use crate::common;

use std::path::Path;

use cellbox_engine::tool::{BranchError, CallContext};
use common::engine::{eval_json, fixture};
use serde_json::json;

const STATE: &str = r#"
import json as j, dataclasses, pandas as pd
from os import path as ospath

def scale(x, factor=2, *, offset=0):
    "Scale and shift."
    return x * factor + offset

def counter():
    seen = []
    def add(item):
        seen.append(item)
        return len(seen)
    return add

add = counter(); add('a'); add('b')
square = lambda v: v * v

class Shape:
    sides = 0
    def describe(self):
        return f"{type(self).__name__} with {self.sides} sides"

class Square(Shape):
    sides = 4
    @property
    def name(self):
        return "square"

@dataclasses.dataclass
class Point:
    x: int
    y: int = 0

sq = Square()
p = Point(1, 2)
df = pd.DataFrame({'a': [1, 2, 3]})
gen = (i for i in range(3))
handle = open(__import__('os').devnull)
"#;

const CHECK: &str = r#"(scale(3, offset=1), scale.__doc__, add('c'), square(5), sq.describe(), sq.name,
 type(sq) is Square, p == Point(1, 2), repr(p), int(df['a'].sum()), j.dumps([1]), ospath.join('a', 'b'))"#;

fn session() -> CallContext {
    CallContext::new("s")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_restores_in_another_engine_with_what_was_skipped_named() {
    let saving = fixture(|_| {});
    let file = saving.dir.path().join("state.cellbox");
    let setup = eval_json(&saving.engine, json!({"cells": [{"code": STATE, "timeout": 60}]})).await;
    assert!(!setup.is_error, "{}", setup.text);
    let saved = saving.engine.snapshot_session(&session(), Path::new("state.cellbox")).await.unwrap();
    assert_eq!(saved.path, file);
    assert!(saved.bytes > 0 && file.exists());
    for name in ["scale", "add", "square", "Shape", "Square", "Point", "sq", "p", "df", "j", "ospath"] {
        assert!(saved.saved.iter().any(|saved| saved == name), "{name} not in {:?}", saved.saved);
    }
    let skipped: Vec<&str> = saved.skipped.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(skipped, ["gen", "handle"], "{:?}", saved.skipped);
    assert!(saved.skipped[0].1.contains("generator"), "{:?}", saved.skipped);
    saving.engine.dispose_all().await;

    let restoring = fixture(|_| {});
    // Paths a tool call names stay in the workspace: the file is brought into the other one.
    let outside = restoring.engine.restore_session(&session(), &file).await.unwrap_err().to_string();
    assert!(outside.contains("leads outside the workspace"), "{outside}");
    let file = restoring.dir.path().join("state.cellbox");
    std::fs::copy(saving.dir.path().join("state.cellbox"), &file).unwrap();
    let restored = restoring.engine.restore_session(&session(), &file).await.unwrap();
    assert!(restored.failed.is_empty(), "{:?}", restored.failed);
    assert_eq!(restored.python.split('.').count(), 2, "{}", restored.python);
    let check = eval_json(&restoring.engine, json!({"cells": [{"code": CHECK}]})).await;
    // The tuple is long enough for the pretty printer to break it over lines.
    let flat = check.text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        flat,
        "(7, 'Scale and shift.', 3, 25, 'Square with 4 sides', 'square', True, True, 'Point(x=1, y=2)', 6, '[1]', 'a/b')",
        "{}",
        check.text
    );
    restoring.engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_truncated_or_foreign_file_is_refused_and_the_session_is_untouched() {
    let fx = fixture(|_| {});
    let engine = &fx.engine;
    eval_json(engine, json!({"cells": [{"code": "kept = 1"}]})).await;
    engine.snapshot_session(&session(), Path::new("good.cellbox")).await.unwrap();
    let good = std::fs::read(fx.dir.path().join("good.cellbox")).unwrap();
    std::fs::write(fx.dir.path().join("cut.cellbox"), &good[..good.len() - 3]).unwrap();
    std::fs::write(fx.dir.path().join("foreign.cellbox"), b"PK\x03\x04 not a snapshot").unwrap();
    for (file, expected) in [("cut.cellbox", "truncated"), ("foreign.cellbox", "not a cellbox snapshot")] {
        match engine.restore_session(&session(), Path::new(file)).await {
            Err(BranchError::Kernel(error)) => assert!(error.to_string().contains(expected), "{file}: {error}"),
            other => panic!("{file}: expected a refusal, got {other:?}"),
        }
    }
    let missing = engine.restore_session(&session(), Path::new("missing.cellbox")).await.unwrap_err();
    assert!(missing.to_string().contains("missing.cellbox"), "{missing}");
    let check = eval_json(engine, json!({"cells": [{"code": "kept"}]})).await;
    assert_eq!(check.text, "1\n");
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_without_a_kernel_has_nothing_to_save() {
    let fx = fixture(|_| {});
    let error = fx.engine.snapshot_session(&session(), Path::new("x.cellbox")).await.unwrap_err();
    assert!(matches!(error, BranchError::NoKernel(_)), "{error}");
}
