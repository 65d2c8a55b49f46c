//! The house's shape, checked from its manifests and sources:
//! - the crates point one way: each crate depends only on crates of lower layers (`CRATES`, read from
//!   each `Cargo.toml`), and the Python SDK's in-process engine links no front end;
//! - inside the crates, the modules of `src/` keep their layers too (`LAYERS`): a module imports its
//!   own layer and the ones below it, and the top-level modules (and the submodules of the modules
//!   named in `SUBMODULES_ACYCLIC`) import each other without cycles;
//! - no Rust file grows past `MAX_LINES` without saying why in its first lines.
//!
//! Only code counts for imports: `crate::…` paths (and `super::…`, `self::…`) outside comments and
//! string literals. Doc links may point anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's crates, lowest layer first: (package, its folder, the module its root stands
/// for in `LAYERS` when the whole crate is one module). A crate's `[dependencies]` may name only
/// crates of lower layers.
const CRATES: &[(usize, &str, &str, Option<&str>)] = &[
    (0, "cellbox-settings", "crates/settings", Some("settings")),
    (0, "cellbox-protocol", "crates/protocol", Some("protocol")),
    (1, "cellbox-kernels", "crates/kernels", None),
    (2, "cellbox-engine", "crates/engine", None),
    (3, "cellbox-sdk", "crates/sdk", Some("sdk")),
    (4, "cellbox", ".", None),
    (4, "cellbox-sdk-engine", "crates/sdk-engine", Some("sdk_engine")),
];

/// What the PyO3 engine must not link: the front ends' own crates.
const FRONT_END_ONLY: &[&str] = &["cellbox", "rmcp", "axum", "rustyline", "viuer", "jsonwebtoken"];

const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation",
        &["protocol", "settings", "sandbox", "discovery", "paths", "platform", "notice", "tls", "stop_signals"],
    ),
    ("runtimes", &["runtime"]),
    ("kernels", &["kernel"]),
    ("Jupyter kernels", &["jupyter"]),
    ("gateway kernels", &["gateway"]),
    ("sessions", &["output", "notebook", "bridge", "session"]),
    ("engine", &["tool"]),
    ("engine settings", &["kernel_args"]),
    ("front ends", &["render", "mcp", "sdk", "serve", "web", "doctor", "install", "cli", "main", "sdk_engine"]),
];

/// Modules whose direct submodules must not import each other in a cycle either.
const SUBMODULES_ACYCLIC: &[&str] = &["tool", "kernel", "session", "cli", "runtime", "discovery", "gateway", "jupyter"];

const MAX_LINES: usize = 600;

/// What a file over `MAX_LINES` says in its first lines to be allowed: `// Over 600 lines because …`.
const LONG_FILE_MARKER: &str = "Over 600 lines because";

/// Long files kept as they are, each with its reason (`("tests/x.rs", "why")`). Remove an entry once its
/// file is split.
const KNOWN_LONG: &[(&str, &str)] = &[];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, modules)| modules.contains(&module))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source with comments and the insides of string and char literals blanked out (newlines
/// kept, so byte offsets still give line numbers).
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < bytes.len() && depth > 0 {
                if bytes[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if bytes[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if (rest.starts_with(b"r\"") || rest.starts_with(b"r#") || rest.starts_with(b"br"))
            && (i == 0 || !is_ident(bytes[i - 1]))
        {
            let start = if rest[0] == b'b' { i + 2 } else { i + 1 };
            let hashes = bytes[start..].iter().take_while(|&&b| b == b'#').count();
            if bytes.get(start + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = start + hashes + 1;
            let end = find(bytes, body, &close).map_or(bytes.len(), |n| n + close.len());
            blank(&mut out, body, end);
            i = end;
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j.min(bytes.len()));
            i = j + 1;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), or else a lifetime.
            if rest.get(1) == Some(&b'\\') {
                let end = bytes[i + 2..].iter().position(|&b| b == b'\'').map_or(bytes.len(), |n| i + 2 + n + 1);
                blank(&mut out, i, end);
                i = end;
            } else {
                let len = std::str::from_utf8(&rest[1..]).ok().and_then(|s| s.chars().next()).map_or(1, char::len_utf8);
                if rest.get(1 + len) == Some(&b'\'') {
                    blank(&mut out, i, i + len + 2);
                    i += len + 2;
                } else {
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn find(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    haystack[from..].windows(needle.len()).position(|w| w == needle).map(|n| from + n)
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The code as tokens: identifiers, `::`, and single punctuation characters, with byte offsets.
fn tokens(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if is_ident(b) {
            let start = i;
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
            out.push((start, code[start..i].to_string()));
        } else if bytes[i..].starts_with(b"::") {
            out.push((i, "::".into()));
            i += 2;
        } else if b.is_ascii_whitespace() || !b.is_ascii() {
            i += 1;
        } else {
            out.push((i, (b as char).to_string()));
            i += 1;
        }
    }
    out
}

/// Every path a `crate::`/`super::`/`self::` (or, in the binary, `cellbox::`) path or `use` tree
/// starting at `tokens[at]` names, as its leading segments; and the index after it.
fn paths_from(tokens: &[(usize, String)], mut at: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix;
    while let Some((_, token)) = tokens.get(at) {
        if token == "{" {
            at += 1;
            loop {
                match tokens.get(at).map(|(_, t)| t.as_str()) {
                    None => return at,
                    Some("}") => return at + 1,
                    Some(",") => at += 1,
                    Some("self") => {
                        out.push(path.clone());
                        at += 1;
                    }
                    Some(_) => at = paths_from(tokens, at, path.clone(), out),
                }
            }
        }
        if token.as_bytes()[0].is_ascii_alphabetic() || token.starts_with('_') {
            path.push(token.clone());
            at += 1;
            if tokens.get(at).map(|(_, t)| t.as_str()) == Some("::") {
                at += 1;
                continue;
            }
        }
        break;
    }
    out.push(path);
    at
}

struct Import {
    line: usize,
    /// The absolute module path named, crate root first (`["tool", "engine", "EvalEngine"]`).
    target: Vec<String>,
}

/// The module path of a file, relative to its crate's `src/`: `tool/engine.rs` is `["tool", "engine"]`,
/// `main.rs` is `["main"]`; in a one-module crate, its root's name comes first.
fn module_of(relative: &Path, crate_module: Option<&str>) -> Vec<String> {
    let mut parts: Vec<String> = crate_module.map(String::from).into_iter().collect();
    parts.extend(relative.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()));
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

fn imports(source: &str, module: &[String], in_binary: bool, crate_module: Option<&str>) -> Vec<Import> {
    let code = code_only(source);
    let line_of = |offset: usize| code[..offset].bytes().filter(|&b| b == b'\n').count() + 1;
    let tokens = tokens(&code);
    let mut found = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let (offset, token) = &tokens[i];
        let preceded_by_path = i > 0 && tokens[i - 1].1 == "::";
        let followed_by_path = tokens.get(i + 1).is_some_and(|(_, t)| t == "::");
        if preceded_by_path || !followed_by_path {
            i += 1;
            continue;
        }
        let base: Option<Vec<String>> = match token.as_str() {
            "crate" if in_binary => Some(vec!["main".into()]),
            "crate" => Some(crate_module.map(String::from).into_iter().collect()),
            "cellbox" if in_binary => Some(vec![]),
            "self" => Some(module.to_vec()),
            "super" => {
                let mut base = module.to_vec();
                let mut j = i;
                while tokens.get(j).is_some_and(|(_, t)| t == "super") {
                    base.pop();
                    j += 2;
                }
                i = j - 2;
                Some(base)
            }
            _ => None,
        };
        let Some(base) = base else {
            i += 1;
            continue;
        };
        let mut paths = Vec::new();
        let next = paths_from(&tokens, i + 2, vec![], &mut paths);
        for path in paths {
            let mut target = base.clone();
            // In the binary, `crate::cli::…` lives under main.
            target.extend(path);
            if in_binary && target.first().is_some_and(|m| m == "main") && target.len() > 1 {
                target.remove(0);
            }
            found.push(Import { line: line_of(*offset), target });
        }
        i = next.max(i + 1);
    }
    found
}

struct Edge {
    from: String,
    to: String,
    at: String,
}

/// The cycles among `edges`: each strongly connected group of more than one node, with the
/// edges inside it.
fn cycles(edges: &[Edge]) -> Vec<(BTreeSet<String>, Vec<&Edge>)> {
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for edge in edges {
        graph.entry(&edge.from).or_default().insert(&edge.to);
        graph.entry(&edge.to).or_default();
    }
    let reach = |start: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(node) = stack.pop() {
            for &next in &graph[node] {
                if seen.insert(next) {
                    stack.push(next);
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&str, BTreeSet<&str>> = graph.keys().map(|&n| (n, reach(n))).collect();
    let mut groups: Vec<(BTreeSet<String>, Vec<&Edge>)> = Vec::new();
    let mut done = BTreeSet::new();
    for &node in graph.keys() {
        if done.contains(node) || !reachable[node].contains(node) {
            continue;
        }
        let group: BTreeSet<&str> =
            reachable[node].iter().copied().filter(|other| reachable[other].contains(node)).collect();
        done.extend(group.iter().copied());
        let inside =
            edges.iter().filter(|e| group.contains(e.from.as_str()) && group.contains(e.to.as_str())).collect();
        groups.push((group.into_iter().map(String::from).collect(), inside));
    }
    groups
}

/// The workspace crates a manifest's `[dependencies]` (any target's) name.
fn workspace_dependencies(manifest: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_dependencies = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies =
                line == "[dependencies]" || (line.starts_with("[target.") && line.ends_with(".dependencies]"));
            continue;
        }
        let name = line.split(['.', '=', ' ']).next().unwrap_or_default();
        if in_dependencies && CRATES.iter().any(|(_, package, _, _)| *package == name) {
            found.push(name.to_string());
        }
    }
    found
}

/// `cargo test` and `cargo build` at the root (scripts/test) reach the default members only:
/// every crate but the PyO3 engine, which needs an interpreter to link and is built on its own.
#[test]
fn every_crate_but_the_engine_extension_is_a_default_member() {
    let manifest = fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = manifest.lines().find(|l| l.starts_with("default-members")).expect("Cargo.toml names default-members");
    let listed: BTreeSet<String> = line.split('"').skip(1).step_by(2).map(str::to_string).collect();
    let expected: BTreeSet<String> = fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| format!("crates/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|dir| dir != "crates/sdk-engine")
        .chain([".".to_string()])
        .collect();
    assert_eq!(listed, expected, "Cargo.toml's default-members");
}

#[test]
fn crates_point_down() {
    let root = root();
    let mut problems = Vec::new();
    let members: BTreeSet<String> = fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| format!("crates/{}", e.unwrap().file_name().to_string_lossy()))
        .chain([".".to_string()])
        .collect();
    let listed: BTreeSet<String> = CRATES.iter().map(|(_, _, dir, _)| dir.to_string()).collect();
    for missing in members.difference(&listed) {
        problems
            .push(format!("{missing} is a crate that CRATES in tests/it/architecture.rs does not place in a layer"));
    }
    for (layer, package, dir, _) in CRATES {
        let manifest = fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
        assert!(manifest.contains(&format!("name = \"{package}\"")), "{dir}/Cargo.toml is not {package}");
        for dependency in workspace_dependencies(&manifest) {
            let (to_layer, ..) = CRATES.iter().find(|(_, p, _, _)| *p == dependency).unwrap();
            if to_layer >= layer {
                problems.push(format!(
                    "{dir}/Cargo.toml: {package} (layer {layer}) depends on {dependency} (layer {to_layer})"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "the crates (tests/it/architecture.rs):\n{}\n", problems.join("\n"));
}

/// The wheel's engine links the engine, never the front ends: checked on the resolved graph.
#[test]
fn the_sdk_engine_links_no_front_end() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--locked", "--offline", "-p", "cellbox-sdk-engine", "-e", "normal", "--prefix", "none"])
        .args(["--format", "{p}"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8(out.stdout).unwrap();
    let linked: BTreeSet<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(linked.contains("cellbox-engine"), "the tree does not look like the engine's:\n{tree}");
    let front: Vec<&&str> = FRONT_END_ONLY.iter().filter(|c| linked.contains(**c)).collect();
    assert!(front.is_empty(), "cellbox-sdk-engine links {front:?}: keep front-end crates out of cellbox-sdk and below");
}

#[test]
fn layers_point_down_and_modules_have_no_cycles() {
    let root = root();
    let mut files = Vec::new();
    for (_, _, dir, crate_module) in CRATES {
        let src = root.join(dir).join("src");
        let mut in_crate = Vec::new();
        rust_files(&src, &mut in_crate);
        files.extend(in_crate.into_iter().map(|file| (src.clone(), *crate_module, file)));
    }
    let mut problems = Vec::new();
    let mut top_edges = Vec::new();
    let mut sub_edges: BTreeMap<String, Vec<Edge>> = BTreeMap::new();
    let mut seen_modules = BTreeSet::new();
    let mut reported = BTreeSet::new();
    for (src, crate_module, file) in &files {
        let crate_module = *crate_module;
        let relative = file.strip_prefix(src).unwrap();
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        let module = module_of(relative, crate_module);
        if module.is_empty() {
            continue; // a lib.rs of several modules: declares them
        }
        let in_binary = module[0] == "main" || module[0] == "cli";
        let top = module[0].clone();
        seen_modules.insert(top.clone());
        let Some(from_layer) = layer_of(&top) else {
            problems.push(format!("{shown}: module `{top}` is in no layer of tests/it/architecture.rs"));
            continue;
        };
        let source = fs::read_to_string(file).unwrap();
        for import in imports(&source, &module, in_binary, crate_module) {
            let Some(to) = import.target.first() else { continue };
            let at = format!("{shown}:{}", import.line);
            if *to != top {
                let Some(to_layer) = layer_of(to) else { continue }; // an external crate or a std path
                if to_layer > from_layer && reported.insert((at.clone(), to.clone())) {
                    problems.push(format!(
                        "{at}: `{top}` ({}) imports `{}` from a higher layer ({})",
                        LAYERS[from_layer].0,
                        import.target.iter().take(2).cloned().collect::<Vec<_>>().join("::"),
                        LAYERS[to_layer].0
                    ));
                }
                top_edges.push(Edge { from: top.clone(), to: to.clone(), at });
            } else if let (Some(from_sub), Some(to_sub)) = (module.get(1), import.target.get(1)) {
                let child = if crate_module.is_some() { src.join(to_sub) } else { src.join(&top).join(to_sub) };
                let is_module = child.is_dir() || child.with_extension("rs").is_file();
                if from_sub != to_sub && is_module && SUBMODULES_ACYCLIC.contains(&top.as_str()) {
                    sub_edges.entry(top.clone()).or_default().push(Edge {
                        from: format!("{top}::{from_sub}"),
                        to: format!("{top}::{to_sub}"),
                        at,
                    });
                }
            }
        }
    }
    for (_, modules) in LAYERS {
        for module in modules.iter().filter(|m| !seen_modules.contains(**m)) {
            problems.push(format!("the layer table names `{module}`, which no crate has"));
        }
    }
    let mut report_cycles = |edges: &[Edge]| {
        for (group, inside) in cycles(edges) {
            let names: Vec<&str> = group.iter().map(String::as_str).collect();
            let mut lines = vec![format!("a cycle between {}:", names.join(", "))];
            let mut shown = BTreeSet::new();
            for edge in inside {
                if shown.insert((&edge.from, &edge.to)) {
                    lines.push(format!("    {}: {} imports {}", edge.at, edge.from, edge.to));
                }
            }
            problems.push(lines.join("\n"));
        }
    };
    report_cycles(&top_edges);
    for edges in sub_edges.values() {
        report_cycles(edges);
    }
    assert!(problems.is_empty(), "the layers of the modules (tests/it/architecture.rs):\n{}\n", problems.join("\n"));
}

#[test]
fn long_files_say_why() {
    let root = root();
    let mut files = Vec::new();
    for dir in ["src", "crates", "tests", "benches"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut problems = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap().display().to_string();
        let source = fs::read_to_string(file).unwrap();
        let lines = source.lines().count();
        if lines <= MAX_LINES {
            continue;
        }
        let says_why = source.lines().take(5).any(|line| line.contains(LONG_FILE_MARKER));
        let known = KNOWN_LONG.iter().any(|(path, _)| *path == relative);
        if !says_why && !known {
            problems.push(format!(
                "{relative}:1: {lines} lines, over {MAX_LINES}: split it along its seams, or say why in its first \
                 lines (`// {LONG_FILE_MARKER} …`)"
            ));
        }
    }
    assert!(problems.is_empty(), "files over {MAX_LINES} lines (tests/it/architecture.rs):\n{}\n", problems.join("\n"));
}
