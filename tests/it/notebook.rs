//! Notebooks in and out: `cellbox run NOTEBOOK.ipynb`, `--save-notebook` and
//! `EvalEngine::export_notebook`, checked with the real nbformat validator
//! and rendered with the real `jupyter nbconvert`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cellbox_engine::tool::{CallContext, EngineConfig, EvalEngine, EvalParams, ignore_events};
use common::binary::text;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The test environment's interpreter, which has nbformat and nbconvert.
fn venv_bin(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-test/bin").join(name);
    assert!(path.exists(), "{} is missing: run scripts/test once to create .venv-test", path.display());
    path
}

fn cellbox(args: &[&str], cwd: &Path) -> Output {
    common::binary::cellbox(args)
        .current_dir(cwd)
        .env("CELLBOX_ARTIFACTS_DIR", cwd.join("artifacts"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// nbformat's own validator accepts the file.
fn assert_valid(path: &Path) {
    let out = Command::new(venv_bin("python"))
        .args([
            "-c",
            "import sys, nbformat; nbformat.validate(nbformat.read(sys.argv[1], as_version=4)); print('valid')",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout).trim(), "valid", "nbformat rejects {}:\n{}", path.display(), text(&out.stderr));
}

/// `jupyter nbconvert --to html` renders the file without complaining about it.
fn assert_converts(path: &Path) -> String {
    let out = Command::new(venv_bin("jupyter"))
        .args(["nbconvert", "--to", "html", "--output-dir"])
        .arg(path.parent().unwrap().join("html"))
        .arg(path)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "nbconvert failed:\n{stderr}");
    for complaint in ["invalid", "Traceback", "MissingIDField", "nbformat", "Error"] {
        assert!(!stderr.contains(complaint), "nbconvert complained ({complaint}):\n{stderr}");
    }
    let html = path.parent().unwrap().join("html").join(path.with_extension("html").file_name().unwrap());
    std::fs::read_to_string(html).unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn code(source: &str) -> Value {
    json!({"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": null})
}

fn tagged(source: &str, tag: &str) -> Value {
    json!({"cell_type": "code", "metadata": {"tags": [tag]}, "source": source, "outputs": [], "execution_count": null})
}

/// A 4.4 notebook (no cell ids) with these cells.
fn write_notebook(dir: &Path, name: &str, cells: Vec<Value>) -> PathBuf {
    let notebook = json!({
        "nbformat": 4, "nbformat_minor": 4,
        "metadata": {"authors": [{"name": "kept"}]},
        "cells": cells,
    });
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&notebook).unwrap()).unwrap();
    path
}

fn outputs(notebook: &Value, cell: usize) -> &Vec<Value> {
    notebook["cells"][cell]["outputs"].as_array().unwrap()
}

#[test]
fn a_notebook_runs_and_its_outputs_are_recorded_as_jupyter_does() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_notebook(
        dir.path(),
        "analysis.ipynb",
        vec![
            json!({"cell_type": "markdown", "metadata": {}, "source": ["# Analysis\n", "Some *text*."]}),
            code("import sys\nprint('one')\nprint('two')\nprint('careful', file=sys.stderr)\nprint('three')\n6 * 7"),
            code("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})\ndisplay(df)"),
            code("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]);"),
            code(""),
            code("%cd .\nraise ValueError('bad value')"),
            code("%%bash\necho from-bash-$((40 + 2))"),
            json!({"cell_type": "raw", "metadata": {}, "source": "raw text"}),
            code("print('after the error')"),
        ],
    );
    let out = cellbox(&["run", "analysis.ipynb", "-o", "out.ipynb", "--allow-errors"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = dir.path().join("out.ipynb");
    assert_valid(&written);
    let html = assert_converts(&written);
    assert!(html.contains("<table") && html.contains("bad value"), "the HTML shows the table and the error");
    let nb = read_json(&written);
    assert_eq!((nb["nbformat"].as_u64(), nb["nbformat_minor"].as_u64()), (Some(4), Some(5)));
    assert_eq!(nb["metadata"]["authors"][0]["name"], "kept");
    assert_eq!(nb["metadata"]["kernelspec"]["name"], "python3");
    assert_eq!(nb["cells"][0]["source"], json!(["# Analysis\n", "Some *text*."]));
    assert_eq!(nb["cells"][7]["source"], json!(["raw text"]));
    assert!(nb["cells"][7].get("outputs").is_none());

    assert_eq!(nb["cells"][1]["execution_count"], 1);
    // Consecutive writes to one stream are one output; how stdout and stderr interleave is the kernel's
    // (each is buffered), so only the streams' contents are fixed here.
    let first = outputs(&nb, 1);
    let stream_text = |name: &str| -> String {
        first
            .iter()
            .filter(|o| o["output_type"] == "stream" && o["name"] == name)
            .flat_map(|o| o["text"].as_array().unwrap())
            .map(|l| l.as_str().unwrap())
            .collect()
    };
    assert_eq!(first[0]["text"].as_array().unwrap()[..2], [json!("one\n"), json!("two\n")], "{first:?}");
    assert_eq!(stream_text("stdout"), "one\ntwo\nthree\n");
    assert_eq!(stream_text("stderr"), "careful\n");
    assert_eq!(first.iter().filter(|o| o["name"] == "stderr").count(), 1);
    assert_eq!(
        first.last().unwrap(),
        &json!({"output_type": "execute_result", "execution_count": 1, "data": {"text/plain": ["42"]}, "metadata": {}})
    );

    let table = &outputs(&nb, 2)[0];
    assert_eq!(table["output_type"], "display_data");
    let html_lines = table["data"]["text/html"].as_array().unwrap();
    assert!(html_lines.len() > 3 && html_lines.iter().any(|l| l.as_str().unwrap().contains("<table")), "{table}");
    assert!(table["data"]["text/plain"].is_array());

    let image = outputs(&nb, 3).iter().find(|o| o["data"].get("image/png").is_some()).expect("a PNG display");
    assert_eq!(image["output_type"], "display_data");
    let png = image["data"]["image/png"].as_str().expect("images are one base64 string");
    assert!(png.starts_with("iVBORw0KGgo"), "{}", &png[..20]);

    assert_eq!(nb["cells"][4]["execution_count"], Value::Null, "empty cells are not run");
    let failed = outputs(&nb, 5);
    assert_eq!(failed[0]["output_type"], "stream", "the %cd line prints the folder");
    let error = &failed[1];
    assert_eq!((error["output_type"].as_str(), error["ename"].as_str()), (Some("error"), Some("ValueError")));
    assert_eq!(error["evalue"], "bad value");
    let traceback: Vec<&str> = error["traceback"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert_eq!(traceback.last(), Some(&"ValueError: bad value"));
    assert!(traceback.iter().all(|line| !line.ends_with('\n')), "{traceback:?}");
    assert_eq!(outputs(&nb, 6)[0]["text"], json!(["from-bash-42\n"]), "cell magics work in notebooks");
    assert_eq!(nb["cells"][8]["execution_count"], 6);
    assert_eq!(outputs(&nb, 8)[0]["text"], json!(["after the error\n"]));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&written).unwrap().permissions().mode() & 0o777, 0o644, "a readable file");
    }
    // The input is untouched.
    assert_eq!(read_json(&input)["cells"][1]["outputs"], json!([]));
}

#[test]
fn the_first_error_stops_the_run_and_the_notebook_is_still_written() {
    let dir = tempfile::tempdir().unwrap();
    write_notebook(
        dir.path(),
        "nb.ipynb",
        vec![
            code("x = 1\nprint('first')"),
            code("1/0"),
            json!({"cell_type": "code", "metadata": {}, "source": "print('never')", "execution_count": 9,
                   "outputs": [{"output_type": "stream", "name": "stdout", "text": ["stale\n"]}]}),
        ],
    );
    let out = cellbox(&["run", "nb.ipynb", "-o", "out.ipynb"], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("ZeroDivisionError"), "{stderr}");
    assert!(stderr.contains("stopped at code cell 2 of 3"), "{stderr}");
    assert!(!text(&out.stdout).contains("never"));
    let written = dir.path().join("out.ipynb");
    assert_valid(&written);
    let nb = read_json(&written);
    assert_eq!(outputs(&nb, 1)[0]["ename"], "ZeroDivisionError");
    assert_eq!(nb["cells"][2]["execution_count"], Value::Null, "a cell after the error is left unexecuted");
    assert_eq!(outputs(&nb, 2), &Vec::<Value>::new(), "stale outputs are cleared");

    // A cell tagged raises-exception may fail without stopping the run.
    write_notebook(dir.path(), "tagged.ipynb", vec![tagged("1/0", "raises-exception"), code("print('went on')")]);
    let out = cellbox(&["run", "tagged.ipynb", "--inplace"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(outputs(&read_json(&dir.path().join("tagged.ipynb")), 1)[0]["text"], json!(["went on\n"]));
}

#[test]
fn parameters_are_typed_and_injected_after_the_parameters_cell() {
    let dir = tempfile::tempdir().unwrap();
    let report = "for name in ['count', 'ratio', 'label', 'flag', 'nothing', 'raw']:\n    \
                  print(name, type(globals()[name]).__name__, repr(globals()[name]))";
    write_notebook(
        dir.path(),
        "params.ipynb",
        vec![
            code("import math"),
            tagged("count = 1\nratio = 0.0\nlabel = 'default'\nflag = False\nnothing = 1\nraw = 'r'", "parameters"),
            code(report),
        ],
    );
    let args = [
        "run",
        "params.ipynb",
        "--inplace",
        "-p",
        "count",
        "12",
        "-p",
        "ratio",
        "0.25",
        "-p",
        "label",
        "two words",
        "-p",
        "flag",
        "True",
        "-p",
        "nothing",
        "None",
        "-r",
        "raw",
        "42",
    ];
    let out = cellbox(&args, dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = dir.path().join("params.ipynb");
    assert_valid(&path);
    let nb = read_json(&path);
    assert_eq!(nb["cells"].as_array().unwrap().len(), 4);
    let injected = &nb["cells"][2];
    assert_eq!(injected["metadata"]["tags"], json!(["injected-parameters"]));
    assert_eq!(
        injected["source"],
        json!([
            "# Parameters\n",
            "count = 12\n",
            "ratio = 0.25\n",
            "label = \"two words\"\n",
            "flag = True\n",
            "nothing = None\n",
            "raw = \"42\"\n"
        ])
    );
    assert_eq!(
        outputs(&nb, 3)[0]["text"],
        json!([
            "count int 12\n",
            "ratio float 0.25\n",
            "label str 'two words'\n",
            "flag bool True\n",
            "nothing NoneType None\n",
            "raw str '42'\n"
        ])
    );

    // Run again in place: the old injected cell is replaced, not stacked.
    let out = cellbox(&["run", "params.ipynb", "--inplace", "-p", "count", "3"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let nb = read_json(&path);
    assert_eq!(nb["cells"].as_array().unwrap().len(), 4);
    assert_eq!(outputs(&nb, 3)[0]["text"][0], "count int 3\n");

    // Without a parameters cell, the parameters come first.
    write_notebook(dir.path(), "plain.ipynb", vec![code("print(size * 2)")]);
    let out = cellbox(&["run", "plain.ipynb", "--inplace", "-p", "size", "21"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let nb = read_json(&dir.path().join("plain.ipynb"));
    assert_eq!(nb["cells"][0]["metadata"]["tags"], json!(["injected-parameters"]));
    assert_eq!(outputs(&nb, 1)[0]["text"], json!(["42\n"]));
}

#[test]
fn bad_inputs_are_explained_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let out = cellbox(&["run", "missing.ipynb", "-o", "out.ipynb"], cwd);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot read missing.ipynb"), "{}", text(&out.stderr));

    std::fs::write(cwd.join("broken.ipynb"), "{\"cells\": [").unwrap();
    let out = cellbox(&["run", "broken.ipynb", "-o", "out.ipynb"], cwd);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("broken.ipynb is not valid JSON"), "{}", text(&out.stderr));

    std::fs::write(cwd.join("old.ipynb"), r#"{"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": []}"#)
        .unwrap();
    let out = cellbox(&["run", "old.ipynb", "-o", "out.ipynb"], cwd);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("nbformat 3") && stderr.contains("--nbformat 4"), "{stderr}");

    std::fs::write(cwd.join("package.ipynb"), r#"{"name": "not a notebook"}"#).unwrap();
    let out = cellbox(&["run", "package.ipynb", "-o", "out.ipynb"], cwd);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a Jupyter notebook"), "{}", text(&out.stderr));

    write_notebook(cwd, "ok.ipynb", vec![code("print('ran')")]);
    let out = cellbox(&["run", "ok.ipynb", "-o", "out.ipynb", "--inplace"], cwd);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--inplace"), "{}", text(&out.stderr));
    let out = cellbox(&["run", "-c", "1", "-p", "a", "1"], cwd);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("applies to notebooks only"), "{}", text(&out.stderr));
    let out = cellbox(&["run", "ok.ipynb", "-p", "not-a-name", "1"], cwd);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a Python identifier"), "{}", text(&out.stderr));
    let out = cellbox(&["run", "ok.ipynb", "--json"], cwd);
    assert_eq!(out.status.code(), Some(2));
    assert!(!cwd.join("out.ipynb").exists(), "no failed run wrote anything");

    // Neither -o nor --inplace: the notebook runs, nothing is written, and the user is told.
    let before = std::fs::read_to_string(cwd.join("ok.ipynb")).unwrap();
    let out = cellbox(&["run", "ok.ipynb"], cwd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "ran\n");
    assert!(text(&out.stderr).contains("not saved (pass -o FILE or --inplace)"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(cwd.join("ok.ipynb")).unwrap(), before);
}

#[test]
fn save_notebook_records_code_runs_and_params_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = cellbox(&["run", "-c", "print('hi')\n6 * 7", "--save-notebook", "c.ipynb"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = dir.path().join("c.ipynb");
    assert_valid(&path);
    let nb = read_json(&path);
    assert_eq!(nb["cells"][0]["source"], json!(["print('hi')\n", "6 * 7"]));
    assert_eq!(nb["cells"][0]["outputs"][1]["data"]["text/plain"], json!(["42"]));

    let params = json!({"cells": [{"code": "a = 1"}, {"code": "a / 0"}, {"code": "print('skipped')"}]});
    std::fs::write(dir.path().join("params.json"), params.to_string()).unwrap();
    let out = cellbox(&["run", "--params", "params.json", "--save-notebook", "p.ipynb"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let path = dir.path().join("p.ipynb");
    assert_valid(&path);
    assert_converts(&path);
    let nb = read_json(&path);
    assert_eq!(nb["cells"].as_array().unwrap().len(), 2, "skipped cells did not run, so they are not recorded");
    assert_eq!(nb["cells"][1]["outputs"][0]["ename"], "ZeroDivisionError");
    assert_eq!(nb["cells"][1]["execution_count"], 2);
}

#[tokio::test]
async fn a_session_exports_as_a_notebook_and_its_history_survives_reset() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.python = Some(common::python().display().to_string());
    config.artifacts_dir = dir.path().join("artifacts");
    config.history.cell_output_bytes = 1000;
    let engine = EvalEngine::new(config);
    let context = CallContext::new("export");
    let cancel = CancellationToken::new();
    assert!(engine.export_notebook("export").unwrap_err().to_string().contains("has not run any cell"));
    let run = |code: &str| EvalParams::code(code);
    engine.eval(&run("x = 20"), &context, &cancel, &ignore_events).await.unwrap();
    engine.eval(&run("display({'k': [1, 2]})\nx + 22"), &context, &cancel, &ignore_events).await.unwrap();
    engine.eval(&run("%cd .\nfor i in range(500): print(i)"), &context, &cancel, &ignore_events).await.unwrap();
    engine.reset_session("export").await;
    engine.eval(&run("'after reset'"), &context, &cancel, &ignore_events).await.unwrap();

    let notebook = engine.export_notebook("export").unwrap();
    let path = dir.path().join("session.ipynb");
    notebook.write(&path).unwrap();
    assert_valid(&path);
    assert_converts(&path);
    let nb = read_json(&path);
    let counts: Vec<Value> = nb["cells"].as_array().unwrap().iter().map(|c| c["execution_count"].clone()).collect();
    assert_eq!(counts, vec![json!(1), json!(2), json!(3), json!(1)], "a reset restarts the count, keeps the cells");
    let display = &nb["cells"][1]["outputs"][0];
    assert_eq!(display["output_type"], "display_data");
    assert_eq!(display["data"]["application/json"], json!({"k": [1, 2]}), "JSON stays an object");
    assert_eq!(nb["cells"][1]["outputs"][1]["data"]["text/plain"], json!(["42"]));
    // The status event of %cd is not an output; the long output is cut with a note naming the artifact.
    let long = nb["cells"][2]["outputs"].as_array().unwrap();
    assert!(long.iter().all(|o| o["output_type"] == "stream"), "{long:?}");
    let all: String = long.iter().flat_map(|o| o["text"].as_array().unwrap()).map(|l| l.as_str().unwrap()).collect();
    assert!(all.len() < 1300, "{} bytes kept", all.len());
    assert!(all.contains("was not kept here; the full text is in artifact://"), "{all}");
    assert!(engine.export_notebook("another-session").is_err());
    engine.dispose_all().await;
}

#[test]
fn a_timed_out_cell_stops_even_with_allow_errors_and_exits_124() {
    let dir = tempfile::tempdir().unwrap();
    write_notebook(dir.path(), "slow.ipynb", vec![code("while True: pass"), code("print('never')")]);
    let out = cellbox(&["run", "slow.ipynb", "--timeout", "1", "--allow-errors", "-o", "out.ipynb"], dir.path());
    assert_eq!(out.status.code(), Some(124), "{}", text(&out.stderr));
    let written = dir.path().join("out.ipynb");
    assert_valid(&written);
    let nb = read_json(&written);
    assert_eq!(outputs(&nb, 0).last().unwrap()["ename"], "KeyboardInterrupt");
    assert_eq!(nb["cells"][1]["execution_count"], Value::Null);
}
