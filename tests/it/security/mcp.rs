//! Attacks through MCP tool calls, over stdio (`cellbox mcp`, where a model
//! is the attacker) and over HTTP (`cellbox serve`, where a principal is):
//! a planted interpreter in a folder a call names, notebook exports and
//! snapshots to paths outside the workspace or through planted links, and
//! working folders outside it.

use serde_json::{Value, json};

use super::common::mcp::{RawServer, text};
use super::common::{binary, serve};
use super::scene::{CANARY, Scene, Serve};

/// The cells a model sends to plant an interpreter where discovery looks
/// (`sub/.venv/bin/python`): a script that writes a marker outside, dumps its
/// environment, then runs the real interpreter.
fn plant_interpreter(outside: &std::path::Path) -> String {
    format!(
        "import os, sys\nos.makedirs('sub/.venv/bin', exist_ok=True)\n\
         script = '#!/bin/sh\\necho pwned > {marker}\\nenv > \"$(dirname \"$0\")/../../probe-env.txt\"\\nexec ' + sys.executable + ' \"$@\"\\n'\n\
         open('sub/.venv/bin/python', 'w').write(script)\nos.chmod('sub/.venv/bin/python', 0o755)\n\
         open('sub/.venv/pyvenv.cfg', 'w').write('home = /usr/bin\\n')\nprint('planted')",
        marker = outside.join("probe-marker").display()
    )
}

/// The planted interpreter ran (discovery probed it, inside the sandbox: it could write its
/// environment into the workspace, not its marker outside) and saw none of the host's secrets.
fn assert_probe_saw_no_secret(work: &std::path::Path) {
    let dumped = std::fs::read_to_string(work.join("sub/probe-env.txt")).expect("discovery probed the planted file");
    assert!(!dumped.contains(CANARY), "the planted interpreter saw the host's environment:\n{dumped}");
}

/// `cellbox mcp` in the scene's workspace, under its hostile environment, initialised.
fn stdio(scene: &Scene) -> RawServer {
    let mut command = binary::bare(["mcp", "--cwd"]);
    command.arg(&scene.work);
    scene.hostile_env(&mut command);
    RawServer::started(command)
}

/// The paths a hostile export or snapshot names, and the links a cell plants for them.
fn hostile_paths(scene: &Scene, outside_root: &std::path::Path) -> (String, Vec<String>) {
    let plant = format!(
        "import os\nos.symlink({:?}, 'nb.ipynb')\nos.symlink({:?}, 'outdir')\nos.symlink({:?}, 'keys')\nprint('planted')",
        scene.outside.join("linked.ipynb").display().to_string(),
        scene.outside.display().to_string(),
        scene.home.join(".ssh").display().to_string()
    );
    let paths = vec![
        scene.outside.join("abs.ipynb").display().to_string(),
        "../outside/up.ipynb".to_string(),
        format!("../../{}/x.ipynb", outside_root.file_name().unwrap().to_string_lossy()),
        "nb.ipynb".to_string(),
        "outdir/through.ipynb".to_string(),
        "keys/authorized_keys".to_string(),
        "~/.ssh/authorized_keys".to_string(),
        "/proc/self/mem".to_string(),
        "/dev/full".to_string(),
    ];
    (plant, paths)
}

#[test]
fn over_stdio_a_planted_interpreter_never_runs_outside_the_sandbox() {
    let scene = Scene::new();
    let mut server = stdio(&scene);
    let planted = server.tool("eval", json!({"cells": [{"code": plant_interpreter(&scene.outside)}]}));
    assert!(text(&planted).contains("planted"), "{planted}");
    let ran = server.tool("eval", json!({"cells": [{"code": "import os; os.getcwd()"}], "cwd": "sub"}));
    assert!(text(&ran).contains("/sub'"), "the call ran in sub: {ran}");
    scene.assert_untouched();
    assert_probe_saw_no_secret(&scene.work);
}

#[test]
fn over_stdio_exports_snapshots_and_working_folders_stay_in_the_workspace() {
    let scene = Scene::new();
    let mut server = stdio(&scene);
    let (plant, paths) = hostile_paths(&scene, &scene.outside);
    assert!(text(&server.tool("eval", json!({"cells": [{"code": plant}]}))).contains("planted"));
    for path in &paths {
        let export = server.tool("eval_export_notebook", json!({"path": path}));
        assert_eq!(export["isError"], true, "{path}: {export}");
        assert!(!text(&export).contains(CANARY), "{export}");
        // Snapshots are written and read by the kernel itself, inside its sandbox: a link it
        // planted in the workspace is its own to replace; anything that resolves outside is refused.
        let snapshot = server.tool("eval_snapshot", json!({"path": path}));
        let restore = server.tool("eval_restore", json!({"path": path}));
        if path != "nb.ipynb" {
            assert_eq!(snapshot["isError"], true, "{path}: {snapshot}");
            assert_eq!(restore["isError"], true, "{path}: {restore}");
        }
        assert!(!text(&restore).contains(CANARY), "{restore}");
    }
    let outside = server.tool("eval_export_notebook", json!({"path": paths[0]}));
    assert!(text(&outside).contains("outside the workspace"), "the refusal names the rule: {outside}");
    for cwd in ["..", "/", "/proc/self", "outdir", "keys", "~"] {
        let call = server.tool("eval", json!({"cells": [{"code": "1"}], "cwd": cwd}));
        assert_eq!(call["isError"], true, "{cwd}: {call}");
    }
    // Inside the workspace all three work.
    let saved = server.tool("eval_export_notebook", json!({"path": "saved.ipynb"}));
    assert_eq!(saved["isError"], false, "{saved}");
    assert!(scene.work.join("saved.ipynb").is_file());
    scene.assert_untouched();
}

/// Extension modules in `.cellbox/modules` are read by the host for every new kernel: a cell
/// plants links there to the host's secrets and environment and a hook that would write down
/// whatever source the next kernel compiles; each reset starts a kernel that must refuse them.
#[test]
fn over_stdio_planted_extension_modules_never_carry_a_secret_in() {
    let scene = Scene::new();
    let mut server = stdio(&scene);
    let hook = "import builtins\n_compile = builtins.compile\n\
                def compile(source, name, mode, *rest, **options):\n\
                \x20   open('leaked.txt', 'a').write(str(source))\n\
                \x20   return _compile('pass', name, mode)\n\
                globals()['compile'] = compile\n";
    let plant = format!(
        "import os\nos.makedirs('.cellbox/modules', exist_ok=True)\n\
         open('.cellbox/modules/0hook.py', 'w').write({hook:?})\n\
         for name, target in [('1env.py', '/proc/self/environ'), ('2key.py', {key:?}), ('3keys.py', {keys:?})]:\n\
         \x20   os.symlink(target, '.cellbox/modules/' + name)\nprint('planted')",
        key = scene.home.join(".ssh/id_rsa").display().to_string(),
        keys = scene.home.join(".ssh").display().to_string(),
    );
    assert!(text(&server.tool("eval", json!({"cells": [{"code": plant}]}))).contains("planted"));
    for _ in 0..2 {
        let reset = server.tool("eval", json!({"cells": [{"code": "print('ran')"}], "reset": true}));
        assert!(!text(&reset).contains(CANARY), "{reset}");
    }
    let leaked = std::fs::read_to_string(scene.work.join("leaked.txt")).unwrap_or_default();
    assert!(!leaked.contains(CANARY), "a module carried a secret into the kernel: {leaked}");
    let refused = server.tool("eval", json!({"cells": [{"code": "print('ran')"}], "reset": true}));
    assert!(text(&refused).contains("could not read the extension module"), "{refused}");
    scene.assert_untouched();
}

/// `tools/call` over HTTP with a session's headers; the result of the call.
async fn http_tool(url: &str, headers: &[(String, String)], id: u64, name: &str, arguments: Value) -> Value {
    let body =
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (status, _, text) = serve::post(url, &body.to_string(), &headers).await;
    assert_eq!(status, 200, "{text}");
    let message = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message["id"] == id)
        .or_else(|| serde_json::from_str::<Value>(&text).ok())
        .unwrap_or_else(|| panic!("no answer: {text}"));
    message["result"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn over_http_a_principal_stays_in_its_folder() {
    let scene = Scene::new();
    let (server, tokens) = Serve::start(&scene, &["alice", "bob"], &[]);
    let alice = serve::raw_session(&server.url, &tokens[0]).await;
    let bob = serve::raw_session(&server.url, &tokens[1]).await;
    let bobs =
        http_tool(&server.url, &bob, 2, "eval", json!({"cells": [{"code": "open('diary.txt', 'w').write('bob'); 1"}]}))
            .await;
    assert_eq!(bobs["isError"], false, "{bobs}");
    // A planted interpreter in alice's folder.
    let plant = plant_interpreter(&scene.outside);
    let planted = http_tool(&server.url, &alice, 3, "eval", json!({"cells": [{"code": plant}]})).await;
    assert!(text(&planted).contains("planted"), "{planted}");
    let ran = http_tool(&server.url, &alice, 4, "eval", json!({"cells": [{"code": "1"}], "cwd": "sub"})).await;
    assert_eq!(ran["isError"], false, "{ran}");
    assert_probe_saw_no_secret(&server.root.join("alice"));
    // Exports, snapshots and folders outside alice's folder: bob's among them.
    let (plant, mut paths) = hostile_paths(&scene, &server.root);
    paths.extend(["../bob/planted.ipynb".to_string(), "../bob/diary.txt".to_string()]);
    assert!(
        text(&http_tool(&server.url, &alice, 5, "eval", json!({"cells": [{"code": plant}]})).await).contains("planted")
    );
    for (n, path) in paths.iter().enumerate() {
        let id = 10 + 3 * n as u64;
        let export = http_tool(&server.url, &alice, id, "eval_export_notebook", json!({"path": path})).await;
        assert_eq!(export["isError"], true, "{path}: {export}");
        let restore = http_tool(&server.url, &alice, id + 1, "eval_restore", json!({"path": path})).await;
        assert_eq!(restore["isError"], true, "{path}: {restore}");
        let cwd = http_tool(&server.url, &alice, id + 2, "eval", json!({"cells": [{"code": "1"}], "cwd": path})).await;
        assert_eq!(cwd["isError"], true, "{path}: {cwd}");
    }
    assert_eq!(std::fs::read_to_string(server.root.join("bob/diary.txt")).unwrap(), "bob");
    assert!(!server.root.join("bob/planted.ipynb").exists());
    scene.assert_untouched();
}
