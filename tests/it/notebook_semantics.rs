//! Cells behave as in Jupyter: `__main__` is the user namespace (pickle, copy,
//! multiprocessing), tracebacks never show the runner, IPython's display and
//! script cell magics, package managers aimed at this interpreter, and
//! IPython's shell conveniences. All against a real interpreter (and real uv).

use crate::common;

use std::path::{Path, PathBuf};

use cellbox_kernels::kernel::{CellOutput, Kernel, KernelOptions};
use common::{BUILD_WHEEL, options, python, run, start, test_env};
use serde_json::{Value, json};

fn error_of(output: &CellOutput) -> String {
    output.errors().first().map(|e| format!("{}: {}", e.ename, e.evalue)).unwrap_or_default()
}

fn traceback_of(output: &CellOutput) -> String {
    output.errors().first().map(|e| e.traceback.concat()).unwrap_or_default()
}

/// Every traceback of the cell, checked for runner frames.
fn assert_no_runner_frames(output: &CellOutput, what: &str) {
    assert!(!output.errors().is_empty(), "{what}: expected an error");
    for error in output.errors() {
        let text = error.traceback.concat();
        assert!(!text.contains("cellbox_kernel"), "{what}: a runner frame is visible:\n{text}");
    }
}

fn user_displays(output: &CellOutput) -> Vec<Value> {
    output
        .displays()
        .iter()
        .filter(|bundle| !bundle.contains_key("application/x-cellbox-status"))
        .map(|bundle| serde_json::to_value(bundle).unwrap())
        .collect()
}

async fn kernel_in(cwd: &Path, python: &Path, extra: &[(&str, &str)]) -> Kernel {
    Kernel::start(KernelOptions::new(python, cwd, test_env(extra))).await.expect("kernel starts")
}

#[tokio::test]
async fn main_is_the_user_namespace() {
    let kernel = start().await;
    let output = run(
        &kernel,
        "import sys, pickle, copy\nclass P:\n    def __init__(self): self.v = 7\n\
         def twice(x): return 2 * x\n\
         (sys.modules['__main__'].__dict__ is globals(), __name__, pickle.loads(pickle.dumps(P())).v, \
         copy.deepcopy(P()).__class__ is P, pickle.loads(pickle.dumps(twice))(4))",
    )
    .await;
    assert_eq!(output.results(), ["(True, '__main__', 7, True, 8)"], "{}", error_of(&output));
}

#[tokio::test]
async fn fork_runs_cell_functions_and_spawn_needs_importable_ones() {
    let kernel = start().await;
    run(&kernel, "import multiprocessing as mp, operator\nfrom concurrent.futures import ProcessPoolExecutor\ndef square(x): return x * x").await;
    let fork = run(
        &kernel,
        "with mp.get_context('fork').Pool(2) as pool:\n    print(pool.map(square, range(5)))\n\
         with ProcessPoolExecutor(2, mp_context=mp.get_context('fork')) as ex:\n    print(list(ex.map(square, range(4))))",
    )
    .await;
    assert_eq!(fork.stdout(), "[0, 1, 4, 9, 16]\n[0, 1, 4, 9]\n", "{}", error_of(&fork));

    // As under ipykernel: __main__ has no file, so a spawn or forkserver child
    // cannot import cell-defined functions, while importable ones work.
    for method in ["spawn", "forkserver"] {
        let importable = run(
            &kernel,
            &format!("with ProcessPoolExecutor(1, mp_context=mp.get_context('{method}')) as ex:\n    print(list(ex.map(operator.neg, range(3))))"),
        )
        .await;
        assert_eq!(importable.stdout(), "[0, -1, -2]\n", "{method}: {}", error_of(&importable));
        let cell_defined = run(
            &kernel,
            &format!("with ProcessPoolExecutor(1, mp_context=mp.get_context('{method}')) as ex:\n    print(list(ex.map(square, range(3))))"),
        )
        .await;
        assert_eq!(cell_defined.errors()[0].ename, "BrokenProcessPool", "{method}");
        assert!(cell_defined.stderr().contains("Can't get attribute 'square'"), "{method}: {}", cell_defined.stderr());
    }
}

#[tokio::test]
async fn run_and_reset_keep_main_right() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("script.py"),
        "import sys\nclass Made:\n    pass\nmade = Made()\nprint(__name__, sys.argv[1:], __file__.endswith('script.py'))\n",
    )
    .unwrap();
    let kernel = Kernel::start(options(dir.path())).await.unwrap();
    let ran = run(&kernel, "%run script.py a b").await;
    assert_eq!(ran.stdout(), "__main__ ['a', 'b'] True\n", "{}", error_of(&ran));
    let after = run(
        &kernel,
        "import pickle, sys\n(pickle.loads(pickle.dumps(made)).__class__ is Made, __name__, sys.modules['__main__'].__dict__ is globals())",
    )
    .await;
    assert_eq!(after.results(), ["(True, '__main__', True)"], "{}", error_of(&after));

    let reset = run(&kernel, "%reset\nclass Q: pass\nimport pickle, sys\n('made' in globals(), __name__, pickle.loads(pickle.dumps(Q())).__class__ is Q, sys.modules['__main__'].__dict__ is globals())").await;
    assert_eq!(reset.results(), ["(False, '__main__', True, True)"], "{}", error_of(&reset));
}

#[tokio::test]
async fn tracebacks_never_show_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.py"), "x = (\n").unwrap();
    std::fs::write(dir.path().join("fails.py"), "def f():\n    1 / 0\nf()\n").unwrap();
    let kernel = Kernel::start(options(dir.path())).await.unwrap();

    let syntax = run(&kernel, "x = (").await;
    assert_no_runner_frames(&syntax, "syntax error");
    assert!(!traceback_of(&syntax).contains("Traceback"), "{}", traceback_of(&syntax));
    let indent = run(&kernel, "def f():\n    x = 1\n  y = 2").await;
    assert_eq!(indent.errors()[0].ename, "IndentationError");
    assert_no_runner_frames(&indent, "indentation error");

    for (code, ename) in [
        ("%time 1 / 0", "ZeroDivisionError"),
        ("%time 1 +", "SyntaxError"),
        ("%%time\nx = (", "SyntaxError"),
        ("%run broken.py", "SyntaxError"),
        ("%run fails.py", "ZeroDivisionError"),
        ("%load broken.py", "SyntaxError"),
        ("%%capture\nraise ValueError('inside')", "ValueError"),
        ("%%script bash\nexit 3", "CalledProcessError"),
        ("%load no_such_file.py", "FileNotFoundError"),
    ] {
        let output = run(&kernel, code).await;
        assert_eq!(output.errors().first().map(|e| e.ename.as_str()), Some(ename), "{code}: {}", error_of(&output));
        assert_no_runner_frames(&output, code);
    }
    let script_error = traceback_of(&run(&kernel, "%run fails.py").await);
    assert!(script_error.contains("fails.py\", line 2, in f"), "the script's own frames stay: {script_error}");

    // A magic's usage error is one line, as IPython shows it.
    let usage = run(&kernel, "%no_such_magic").await;
    assert_eq!(usage.errors()[0].ename, "UsageError");
    assert_eq!(usage.errors()[0].traceback, ["UsageError: Line magic function `%no_such_magic` not found.\n"]);
}

/// Code from a triple-quoted string comes indented as a whole; IPython takes
/// that indentation off before running it, and so does cellbox (tracebacks,
/// the completeness check and the pre-run check included).
#[tokio::test]
async fn an_indented_cell_runs_as_in_ipython() {
    use cellbox_protocol::CheckCell;
    let kernel = start().await;
    let cell =
        "\n    x = 20\n    %time y = x + 1\n    s = '''a\nb'''\n    if s:\n        print(s.split())\n    x + y\n";
    let output = run(&kernel, cell).await;
    assert_eq!(output.results(), ["41"], "{}", error_of(&output));
    let stdout = output.stdout();
    assert!(stdout.contains("Wall time") && stdout.ends_with("\n['a', 'b']\n"), "{stdout}");

    let failing = run(&kernel, "\n    x = 1\n\n    x / 0\n").await;
    assert_eq!(error_of(&failing), "ZeroDivisionError: division by zero");
    assert!(traceback_of(&failing).contains("line 4"), "{}", traceback_of(&failing));

    let answer = kernel.check_complete("    x = 1\n").await.unwrap();
    assert_eq!(answer.status, "complete");
    let cells = vec![CheckCell { number: 1, code: cell.into(), typescript: false }];
    let report = kernel.check(cells, false).await.unwrap();
    assert!(report.cells[0].error.is_none(), "{:?}", report.cells[0].error);
    kernel.shutdown().await;
}

#[tokio::test]
async fn display_cell_magics_send_ipythons_bundles() {
    let kernel = start().await;
    let cases = [
        ("%%html\n<b>bold</b>", "text/html", "HTML", "<b>bold</b>"),
        ("%%markdown\n# Title", "text/markdown", "Markdown", "# Title"),
        ("%%latex\n$x^2$", "text/latex", "Latex", "$x^2$"),
        (
            "%%svg\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"><rect/></svg>",
            "image/svg+xml",
            "SVG",
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"><rect/></svg>",
        ),
        ("%%javascript\nconsole.log(1)", "application/javascript", "Javascript", "console.log(1)"),
        ("%%js\nconsole.log(2)", "application/javascript", "Javascript", "console.log(2)"),
    ];
    let has_ipython = run(&kernel, "import IPython").await.is_ok();
    for (code, mime, class, body) in cases {
        let output = run(&kernel, code).await;
        let shown = user_displays(&output);
        assert_eq!(shown.len(), 1, "{code}: {shown:?} {}", error_of(&output));
        assert_eq!(shown[0]["text/plain"], format!("<IPython.core.display.{class} object>"), "{code}");
        assert_eq!(shown[0][mime].as_str().map(str::trim_end), Some(body), "{code}");
        if has_ipython {
            // IPython itself is the oracle for the whole bundle.
            let (_, cell_body) = code.split_once('\n').unwrap();
            let oracle = run(
                &kernel,
                &format!(
                    "import json, IPython.display as d\nfrom IPython.core.formatters import DisplayFormatter\n\
                     print(json.dumps(DisplayFormatter().format(d.{class}({cell_body:?} + '\\n'))[0]))"
                ),
            )
            .await;
            let expected: Value = serde_json::from_str(oracle.stdout().trim()).expect("IPython's bundle");
            assert_eq!(shown[0], expected, "{code}");
        }
    }
    let isolated = run(&kernel, "%%html --isolated\n<i>x</i>").await;
    let metadata = isolated.events.iter().find_map(|event| match event {
        cellbox_kernels::kernel::ExecEvent::Display { metadata, .. } => Some(serde_json::to_value(metadata).unwrap()),
        _ => None,
    });
    assert_eq!(metadata, Some(json!({"text/html": {"isolated": true}})));
}

#[tokio::test]
async fn script_cell_magics() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = Kernel::start(options(dir.path())).await.unwrap();
    let python3 = run(&kernel, "%%python3\nimport sys\nprint(6 * 7)\nprint('to err', file=sys.stderr)").await;
    assert_eq!((python3.stdout(), python3.stderr()), ("42\n".into(), "to err\n".into()), "{}", error_of(&python3));

    let kept =
        run(&kernel, "%%script --out out --err err python3\nimport sys; print('o'); print('e', file=sys.stderr)").await;
    assert_eq!(kept.stdout(), "", "kept output is not shown");
    assert_eq!(run(&kernel, "out, err").await.results(), ["('o\\n', 'e\\n')"]);

    let failing = run(&kernel, "%%script sh\necho before; exit 3").await;
    assert_eq!(failing.stdout(), "before\n");
    assert_eq!(failing.errors()[0].ename, "CalledProcessError");
    assert!(failing.errors()[0].evalue.contains("returned non-zero exit status 3"), "{}", error_of(&failing));
    assert!(run(&kernel, "%%script --no-raise-error sh\nexit 3").await.is_ok());

    let background = run(&kernel, "%%script --bg sh\necho hi").await;
    assert_eq!(background.errors()[0].ename, "UsageError");
    assert!(background.errors()[0].evalue.contains("--bg (and --proc) is not supported"), "{}", error_of(&background));
    let missing = run(&kernel, "%%script cellbox-no-such-interpreter\nx").await;
    assert_eq!(missing.errors()[0].ename, "UsageError");
    assert!(missing.errors()[0].evalue.contains("cannot run 'cellbox-no-such-interpreter'"), "{}", error_of(&missing));

    let file = run(&kernel, "%%file notes/a.txt\nhello").await;
    assert_eq!(file.stdout(), "Writing notes/a.txt\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("notes/a.txt")).unwrap(), "hello\n");
}

#[tokio::test]
async fn sx_alias_and_quoting() {
    let kernel = start().await;
    let sx =
        run(&kernel, "lines = %sx printf 'a\\nb\\n'\nsame = %system printf 'a\\nb\\n'\n(lines, same.s, _exit_code)")
            .await;
    assert_eq!(sx.results(), ["(['a', 'b'], 'a b', 0)"], "{}", error_of(&sx));

    let listed = run(&kernel, "%alias").await;
    assert!(listed.stdout().starts_with("Total number of aliases: "), "{}", listed.stdout());
    assert!(listed.results()[0].contains("('cat', 'cat')"), "{:?}", listed.results());
    run(&kernel, "%alias pair echo [%s] [%s]\n%alias line echo whole: %l").await;
    assert_eq!(run(&kernel, "%pair a b c").await.stdout(), "[a] [b] c\n");
    assert_eq!(run(&kernel, "%line x y").await.stdout(), "whole: x y\n");
    let short = run(&kernel, "%pair a").await;
    assert_eq!(short.errors()[0].traceback, ["UsageError: Alias <pair> requires 2 arguments, 1 given.\n"]);
    run(&kernel, "%unalias pair").await;
    assert_eq!(run(&kernel, "%pair a b").await.errors()[0].ename, "UsageError");

    // IPython leaves `$name` alone inside single quotes.
    let quoted = run(&kernel, "n = 5\n!echo \"$n\" '$n' {n}").await;
    assert_eq!(quoted.stdout(), "5 $n 5\n");
}

#[tokio::test]
async fn store_keeps_variables_per_project_across_kernels() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    // Sandboxed kernels keep `%store` in their kernels' own folder, apart from the user's data.
    let kernel = || {
        let mut options = KernelOptions::new(python(), project.path(), test_env(&[]));
        options.sandbox.kernel_files = Some(data.path().join("kernel-files"));
        Kernel::start(options)
    };
    let first = kernel().await.expect("kernel starts");
    let stored = run(&first, "numbers = [1, 2, 3]\nword = 'hi'\n%store numbers word").await;
    assert_eq!(stored.stdout(), "Stored 'numbers' (list)\nStored 'word' (str)\n", "{}", error_of(&stored));
    let interactive = run(&first, "class Local: pass\nthing = Local()\n%store thing").await;
    assert!(
        interactive.stdout().contains("Proper storage of interactively declared classes"),
        "{}",
        interactive.stdout()
    );
    drop(first);

    let second = kernel().await.expect("kernel starts");
    let listed = run(&second, "%store").await;
    assert_eq!(listed.stdout(), "Stored variables and their in-db values:\nnumbers -> [1, 2, 3]\nword    -> 'hi'\n");
    assert_eq!(run(&second, "%store -r numbers\nnumbers").await.results(), ["[1, 2, 3]"]);
    run(&second, "%store -d numbers").await;
    assert_eq!(run(&second, "%store -r numbers").await.stdout(), "no stored variable or alias numbers\n");
    assert_eq!(run(&second, "%store -r\nword").await.results(), ["'hi'"]);
    let folder = std::fs::read_dir(data.path().join("kernel-files/store")).unwrap().count();
    assert_eq!(folder, 1, "one folder for the project");
    run(&second, "%store -z").await;
    assert_eq!(run(&second, "%store").await.stdout(), "Stored variables and their in-db values:\n");
}

fn repo_uv() -> Option<PathBuf> {
    let uv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-test/bin/uv");
    if uv.exists() { Some(uv) } else { None }
}

#[tokio::test]
async fn pip_falls_back_to_uv_in_a_uv_venv() {
    let Some(uv) = repo_uv() else {
        panic!("this test needs uv in .venv-test (scripts/test installs it)");
    };
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("env");
    let made = std::process::Command::new(&uv)
        .arg("venv")
        .arg("--python")
        .arg(python())
        .arg(&venv)
        .env_remove("VIRTUAL_ENV")
        .output()
        .unwrap();
    assert!(made.status.success(), "uv venv: {}", String::from_utf8_lossy(&made.stderr));
    let venv_python = venv.join("bin/python");
    let wheels = start().await;
    run(&wheels, BUILD_WHEEL).await;
    let built = run(
        &wheels,
        &format!("print(build_wheel({0:?}, '1.0'), build_wheel({0:?}, '2.0'))", dir.path().display().to_string()),
    )
    .await;
    let paths: Vec<String> = built.stdout().split_whitespace().map(String::from).collect();
    assert_eq!(paths.len(), 2, "{}", error_of(&built));

    // No uv anywhere: the error says how to fix it.
    let bare = kernel_in(dir.path(), &venv_python, &[("PATH", "/usr/bin:/bin")]).await;
    let no_uv = run(&bare, &format!("%pip install --no-index {}", paths[0])).await;
    let message = error_of(&no_uv);
    assert!(message.contains("has no pip and uv was not found") && message.contains("ensurepip"), "{message}");
    assert_no_runner_frames(&no_uv, "%pip without pip or uv");

    let uv_dir = uv.parent().unwrap().display().to_string();
    let path = format!("{uv_dir}:/usr/bin:/bin");
    let kernel = kernel_in(dir.path(), &venv_python, &[("PATH", path.as_str())]).await;
    let install = run(
        &kernel,
        &format!("%pip install --no-index {}\nimport cellbox_probe_mod\ncellbox_probe_mod.VERSION", paths[0]),
    )
    .await;
    assert_eq!(install.results(), ["1"], "{}\n{}", error_of(&install), install.stderr());
    let upgrade = run(
        &kernel,
        &format!("%uv install --no-index {}\nimport cellbox_probe_mod\ncellbox_probe_mod.VERSION", paths[1]),
    )
    .await;
    assert_eq!(upgrade.results(), ["2"], "%uv evicts the old module: {}", error_of(&upgrade));
    let listed = run(&kernel, "%uv pip list").await;
    assert!(listed.stdout().contains("cellbox-probe-dist 2.0"), "{}", listed.stdout());
    let conda = run(&kernel, "%conda list").await;
    assert!(error_of(&conda).contains("is not in a conda environment"), "{}", error_of(&conda));

    // Made into a conda-like environment: the tool beside the interpreter runs
    // for this prefix, with IPython's --yes and --prefix; a missing tool is named.
    std::fs::create_dir_all(venv.join("conda-meta")).unwrap();
    std::fs::write(venv.join("conda-meta/history"), "").unwrap();
    let mamba = venv.join("bin/mamba");
    std::fs::write(&mamba, "#!/bin/sh\necho \"mamba $*\"\n").unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(&mamba, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let prefix = run(&kernel, "import sys; print(sys.prefix)").await.stdout();
    let installed = run(&kernel, "%mamba install somepkg").await;
    assert_eq!(
        installed.stdout(),
        format!("mamba install --yes --prefix {} somepkg\n", prefix.trim()),
        "{}",
        error_of(&installed)
    );
    let named = run(&kernel, "%mamba list -n other").await;
    assert_eq!(named.stdout(), "mamba list -n other\n", "an explicit environment is kept");
    let missing = run(&kernel, "%micromamba list").await;
    assert!(error_of(&missing).contains("micromamba was not found"), "{}", error_of(&missing));
}

#[tokio::test]
async fn figures_use_matplotlibs_repr() {
    let kernel = start().await;
    if !run(&kernel, "import matplotlib").await.is_ok() {
        eprintln!("matplotlib is not installed in the test interpreter; skipped");
        return;
    }
    let output = run(&kernel, "import matplotlib.pyplot as plt\nplt.plot([1, 2]);").await;
    let plain: Vec<Value> = user_displays(&output).iter().map(|bundle| bundle["text/plain"].clone()).collect();
    assert_eq!(plain, [json!("<Figure size 640x480 with 1 Axes>")]);
}

#[tokio::test]
async fn an_error_that_ends_its_sentence_gets_one_full_stop() {
    use cellbox_engine::tool::{CallContext, EngineConfig, EvalEngine, EvalParams, ignore_events};
    use tokio_util::sync::CancellationToken;

    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.python = Some(python().display().to_string());
    config.artifacts_dir = dir.path().join("artifacts");
    let engine = EvalEngine::new(config);
    let params = EvalParams::from_json(json!({"cells": [{"code": "input()"}, {"code": "1"}]})).unwrap();
    let result = engine.eval(&params, &CallContext::new("s"), &CancellationToken::new(), &ignore_events).await.unwrap();
    assert!(result.text.contains("an argument). Cell 2 was not run."), "{}", result.text);
    assert!(!result.text.contains(".."), "{}", result.text);
    engine.dispose_all().await;
}
