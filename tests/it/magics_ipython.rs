//! IPython's habitual magics through the real runner: %matplotlib and figure
//! formats, history variables, help, traceback styles, get_ipython() events,
//! autoreload, and the magics that cannot work here.

use crate::common;

use cellbox_kernels::kernel::{CellOutput, ExecEvent};
use common::{run, start};
use serde_json::Value;

fn error_of(output: &CellOutput) -> String {
    output.errors().first().map(|e| format!("{}: {}", e.ename, e.evalue)).unwrap_or_default()
}

fn traceback_of(output: &CellOutput) -> String {
    output.errors().first().map(|e| e.traceback.concat()).unwrap_or_default()
}

/// (bundle, metadata) of each image display.
fn images(output: &CellOutput) -> Vec<(Value, Value)> {
    output
        .events
        .iter()
        .filter_map(|event| match event {
            ExecEvent::Display { bundle, metadata } if bundle.keys().any(|k| k.starts_with("image/")) => {
                Some((serde_json::to_value(bundle).unwrap(), Value::Object(metadata.clone())))
            }
            _ => None,
        })
        .collect()
}

async fn has_matplotlib(kernel: &cellbox_kernels::kernel::Kernel) -> bool {
    run(kernel, "import importlib.util\nimportlib.util.find_spec('matplotlib') is not None").await.results() == ["True"]
}

#[tokio::test]
async fn matplotlib_inline_and_figure_formats() {
    let kernel = start().await;
    if !has_matplotlib(&kernel).await {
        eprintln!("skipped: matplotlib is not installed for the interpreter under test");
        return;
    }
    let setup = run(&kernel, "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2]);").await;
    assert!(setup.is_ok(), "{}", traceback_of(&setup));
    assert_eq!(setup.stdout(), "", "%matplotlib inline is silent, as in IPython");
    let shown = images(&setup);
    assert_eq!(shown.len(), 1);
    assert!(shown[0].0.get("image/png").is_some());

    let retina = run(&kernel, "%config InlineBackend.figure_format = 'retina'\nplt.plot([1, 2]);").await;
    let (bundle, metadata) = &images(&retina)[0];
    assert!(bundle.get("image/png").is_some());
    let width = metadata["image/png"]["width"].as_u64().unwrap();
    assert!(width > 100, "retina metadata gives the display size: {metadata}");

    let svg = run(&kernel, "%config InlineBackend.figure_format = 'svg'\nplt.plot([1, 2]);").await;
    assert!(images(&svg)[0].0["image/svg+xml"].as_str().unwrap().contains("<svg"));
    let listed = run(&kernel, "%matplotlib --list").await.stdout();
    assert!(listed.starts_with("Available matplotlib backends: [") && listed.contains("'inline'"), "{listed}");
    let qt = run(&kernel, "%matplotlib qt\nplt.plot([3]);").await;
    assert_eq!(images(&qt).len(), 1, "figures still come back as images with a GUI backend named");
}

#[tokio::test]
async fn history_variables_and_history_magic() {
    let kernel = start().await;
    run(&kernel, "a = 20").await;
    run(&kernel, "a + 1").await;
    run(&kernel, "a * 2").await;
    let probe = run(&kernel, "In[0], In[1], _i, _ii, _, __, _2, Out[3]").await;
    assert_eq!(probe.results(), ["('', 'a = 20', 'a * 2', 'a + 1', 40, 21, 21, 40)"]);
    let listing = run(&kernel, "%history -n 1-3").await;
    assert_eq!(listing.stdout(), "   1: a = 20\n   2: a + 1\n   3: a * 2\n");
    let who = run(&kernel, "%who").await;
    assert_eq!(who.stdout(), "a\n", "In and Out are not listed as your names");
}

#[tokio::test]
async fn help_forms_print_ipython_fields() {
    let kernel = start().await;
    let output = run(&kernel, "def area(w, h=2):\n    'Width times height.'\n    return w * h\narea?").await;
    assert_eq!(output.stdout(), "Signature: area(w, h=2)\nDocstring: Width times height.\nType:      function\n");
    let source = run(&kernel, "area??").await.stdout();
    assert!(source.contains("Source:") && source.contains("return w * h"), "{source}");
    assert_eq!(run(&kernel, "?missing_name").await.stdout(), "Object `missing_name` not found.\n");
}

#[tokio::test]
async fn traceback_styles_tb_and_debug() {
    let kernel = start().await;
    run(&kernel, "def f(x):\n    y = x + 1\n    return y / 0").await;
    assert_eq!(run(&kernel, "%xmode Context").await.stdout(), "Exception reporting mode: Context\n");
    let context = traceback_of(&run(&kernel, "f(1)").await);
    assert!(context.contains("Cell In[3], line 1\n----> 1 f(1)\n"), "{context}");
    assert!(context.contains("Cell In[1], line 3, in f(x)\n"), "{context}");
    run(&kernel, "%xmode Minimal").await;
    assert_eq!(traceback_of(&run(&kernel, "f(1)").await), "ZeroDivisionError: division by zero\n");
    let again = run(&kernel, "%tb Verbose").await.stdout();
    assert!(again.contains("in f(x=1)") && again.contains("        y = 2"), "{again}");
    let debug = run(&kernel, "%debug").await.stdout();
    assert!(debug.contains("-> return y / 0\n    x = 1\n    y = 2\n"), "{debug}");
    assert!(debug.contains("No interactive debugger is available"), "{debug}");
}

#[tokio::test]
async fn get_ipython_events_and_magics() {
    let kernel = start().await;
    let setup = run(
        &kernel,
        "ip = get_ipython()\nip.events.register('post_run_cell', lambda r: print('after', r.execution_count, r.success))\nip.register_magic_function(lambda line: line[::-1], 'line', 'rev')",
    )
    .await;
    assert!(setup.is_ok(), "{}", traceback_of(&setup));
    let output = run(&kernel, "x = %rev abc\nx").await;
    assert_eq!(output.results(), ["'cba'"]);
    assert_eq!(output.stdout(), "after 2 True\n", "post_run_cell runs after the cell");
    let line = run(&kernel, "get_ipython().run_line_magic('precision', '2')\n1/3").await;
    assert_eq!(line.results(), ["0.33"]);
}

#[tokio::test]
async fn autoreload_picks_up_an_edited_module() {
    let kernel = start().await;
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("ek_edited.py");
    std::fs::write(&module, "def answer():\n    return 1\n").unwrap();
    let setup = format!(
        "import sys\nsys.path.insert(0, {:?})\n%load_ext autoreload\n%autoreload 2\nfrom ek_edited import answer\nanswer()",
        dir.path().display().to_string()
    );
    assert_eq!(run(&kernel, &setup).await.results(), ["1"]);
    std::fs::write(&module, "def answer():\n    return 42 + 0\n").unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    std::fs::File::options().write(true).open(&module).unwrap().set_modified(later).unwrap();
    assert_eq!(run(&kernel, "answer()").await.results(), ["42"], "the old reference runs the new code");
}

#[tokio::test]
async fn front_end_magics_explain_themselves() {
    let kernel = start().await;
    let edit = run(&kernel, "%edit notes.py").await;
    assert!(error_of(&edit).starts_with("UsageError: %edit opens a text editor"), "{}", error_of(&edit));
    assert_eq!(traceback_of(&edit), format!("{}\n", error_of(&edit)), "a usage error shows no frames");
    let listing = run(&kernel, "%lsmagic").await.stdout();
    assert!(listing.contains("%xmode") && listing.contains("%%prun") && !listing.contains("%edit"), "{listing}");
}
