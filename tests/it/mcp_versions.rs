//! Each protocol version the server speaks, over raw JSON-RPC: the version it
//! answers in, the exact capabilities it advertises there, whether tools
//! declare an `outputSchema` and results carry `structuredContent`, and one
//! `eval` through it.

use crate::common;

use common::mcp::{RawServer, text};
use serde_json::{Value, json};

/// Tools and resources, as every version has them.
fn base_capabilities() -> Value {
    json!({"tools": {}, "resources": {}})
}

/// tools/list, then `6 * 7`: the output schema and structured content exactly where the version has them.
fn list_and_eval(server: &mut RawServer, structured: bool, version: &str) {
    let tools = server.request("tools/list", json!({}))["result"]["tools"].clone();
    let tools = tools.as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().filter_map(|tool| tool["name"].as_str()).collect();
    names.sort();
    let expected = [
        "eval",
        "eval_cancel",
        "eval_export_notebook",
        "eval_fork",
        "eval_reset",
        "eval_restore",
        "eval_sessions",
        "eval_snapshot",
        "eval_undo",
        "eval_wait",
    ];
    assert_eq!(names, expected, "{version}");
    for tool in tools {
        assert_eq!(tool.get("outputSchema").is_some(), structured, "{version}: {}", tool["name"]);
    }
    let result = server.eval(json!({"cells": [{"code": "print('hi')\n6 * 7"}]}));
    assert_eq!(text(&result), "hi\n42\n", "{version}: {result}");
    assert_eq!(result["isError"], false, "{version}: {result}");
    match structured {
        true => assert_eq!(result["structuredContent"]["text"], "hi\n42\n", "{version}: {result}"),
        false => assert!(result.get("structuredContent").is_none(), "{version}: {result}"),
    }
}

#[test]
fn each_initialize_version_is_answered_in_kind_with_its_own_capabilities() {
    for (version, structured) in
        [("2024-11-05", false), ("2025-03-26", false), ("2025-06-18", true), ("2025-11-25", true)]
    {
        // A client that declares the tasks extension is still not offered it before 2026-07-28.
        let (mut server, answer) =
            RawServer::initialized(version, json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
        let result = &answer["result"];
        assert_eq!(result["protocolVersion"], version, "{answer}");
        assert_eq!(result["capabilities"], base_capabilities(), "{version}: {answer}");
        assert_eq!(result["serverInfo"]["name"], "cellbox", "{answer}");
        list_and_eval(&mut server, structured, version);
    }
}

#[test]
fn versions_without_initialize_or_unknown_ones_fall_back_to_the_newest_with_it() {
    for asked in ["2026-07-28", "2099-01-01", "1999-01-01"] {
        let (_server, answer) = RawServer::initialized(asked, json!({}));
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{asked}: {answer}");
        assert_eq!(answer["result"]["capabilities"], base_capabilities(), "{asked}: {answer}");
    }
}

#[test]
fn version_2026_07_28_discovers_the_tasks_extension_and_runs_cells_without_initialize() {
    let mut server = RawServer::stateless(json!({}));
    let discovered = server.request("server/discover", json!({}))["result"].clone();
    let versions = discovered["supportedVersions"].as_array().unwrap();
    for version in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        assert!(versions.contains(&json!(version)), "{discovered}");
    }
    let mut expected = base_capabilities();
    expected["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    assert_eq!(discovered["capabilities"], expected, "{discovered}");
    list_and_eval(&mut server, true, "2026-07-28");
    // A request without its per-request metadata is refused on this lifecycle, with a reason.
    server.request_meta = None;
    let refused =
        server.request("tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}));
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("clientCapabilities"), "{refused}");
}
