//! The display protocol, reimplemented without IPython: MIME bundles for
//! display() and results, formatter by formatter.

use crate::common;

use cellbox_kernels::kernel::{ExecEvent, ExecuteOptions};
use common::{run, start};
use serde_json::json;

#[tokio::test]
async fn repr_methods_build_the_bundle() {
    let kernel = start().await;
    let code = r#"
class Rich:
    def _repr_markdown_(self): return "**md**"
    def _repr_html_(self): return "<b>html</b>", {"isolated": True}
    def _repr_svg_(self): return "<svg/>"
    def _repr_png_(self): return b"\x89PNG fake"
    def _repr_jpeg_(self): return None
    def _repr_json_(self): return {"k": [1, 2]}
    def _repr_latex_(self): return "$x^2$"
    def __repr__(self): return "Rich()"
Rich()
"#;
    let output = run(&kernel, code).await;
    let ExecEvent::Result { bundle, metadata } = &output.events[0] else { panic!("{:?}", output.events) };
    assert_eq!(bundle["text/markdown"], "**md**");
    assert_eq!(bundle["text/html"], "<b>html</b>");
    assert_eq!(bundle["image/svg+xml"], "<svg/>");
    assert_eq!(bundle["image/png"], "iVBORyBmYWtl", "bytes are base64-encoded");
    assert!(!bundle.contains_key("image/jpeg"), "None means no such representation");
    assert_eq!(bundle["application/json"], json!({"k": [1, 2]}));
    assert_eq!(bundle["text/latex"], "$x^2$");
    assert_eq!(bundle["text/plain"], "Rich()");
    assert_eq!(metadata["text/html"], json!({"isolated": true}));
}

#[tokio::test]
async fn mimebundle_with_include_exclude_and_tuples() {
    let kernel = start().await;
    let code = r#"
class Bundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        data = {"text/html": "<i>b</i>", "application/vnd.custom+json": {"a": 1}}
        return data, {"text/html": {"m": 1}}
    def _repr_html_(self): return "ignored: the mimebundle already has html"
display(Bundle())
display(Bundle(), include=["text/html"])
display(Bundle(), exclude=["text/html"])
display({"text/plain": "raw", "text/markdown": "*raw*"}, raw=True)
display([1, 2], {"x": None})
"#;
    let output = run(&kernel, code).await;
    let displays = output.displays();
    assert_eq!(displays[0]["text/html"], "<i>b</i>");
    assert_eq!(displays[0]["application/vnd.custom+json"], json!({"a": 1}));
    assert!(displays[0]["text/plain"].as_str().unwrap().contains("Bundle object"));
    assert_eq!(displays[1].keys().collect::<Vec<_>>(), ["text/html", "text/plain"]);
    assert!(!displays[2].contains_key("text/html"));
    assert_eq!(displays[3]["text/markdown"], "*raw*");
    assert_eq!(displays[4]["application/json"], json!([1, 2]));
    assert_eq!(displays[5]["application/json"], json!({"x": null}));
}

/// A list or dict value goes as `application/json` only when the request asks
/// (the Python SDK does; text front ends would show the value twice), and only
/// when JSON holds it exactly.
#[tokio::test]
async fn json_results_only_when_asked_and_only_exact() {
    let kernel = start().await;
    let value = |code: &'static str, json_results: bool| {
        let kernel = &kernel;
        async move {
            let options = ExecuteOptions { json_results, ..Default::default() };
            let output = kernel.execute_with(code, options).await.unwrap().collect().await.unwrap();
            let ExecEvent::Result { bundle, .. } = &output.events[0] else { panic!("{:?}", output.events) };
            bundle.get("application/json").cloned()
        }
    };
    assert_eq!(value("{'a': [1, 2.5, None]}", false).await, None);
    assert_eq!(value("{'a': [1, 2.5, None]}", true).await, Some(json!({"a": [1, 2.5, null]})));
    assert_eq!(value("[True, 'x']", true).await, Some(json!([true, "x"])));
    for inexact in ["(1, 2)", "{(1, 2): 3}", "{'n': float('nan')}", "[object()]", "d = {}; d['d'] = d; d"] {
        assert_eq!(value(inexact, true).await, None, "{inexact}");
    }
    // The flag holds for its request only.
    assert_eq!(value("[1]", false).await, None);
}

#[tokio::test]
async fn a_failing_formatter_loses_nothing_else() {
    let kernel = start().await;
    let code = r#"
class Flaky:
    def _repr_html_(self): raise RuntimeError("html broke")
    def _repr_markdown_(self): return "still *here*"
    def __repr__(self): raise ValueError("repr broke")
Flaky()
"#;
    let output = run(&kernel, code).await;
    assert!(output.is_ok(), "a broken formatter is not a failed cell");
    let ExecEvent::Result { bundle, .. } =
        output.events.iter().find(|e| matches!(e, ExecEvent::Result { .. })).unwrap()
    else {
        unreachable!()
    };
    assert_eq!(bundle["text/markdown"], "still *here*");
    assert!(!bundle.contains_key("text/html"));
    let plain = bundle["text/plain"].as_str().unwrap();
    assert!(plain.contains("Flaky object; repr() failed: ValueError: repr broke"), "{plain}");
    assert!(output.stderr().contains("Flaky._repr_html_ failed: RuntimeError: html broke"), "{}", output.stderr());
}

#[tokio::test]
async fn objects_claiming_every_attribute_are_not_fooled() {
    let kernel = start().await;
    let code = "class Anything:\n    def __getattr__(self, name):\n        return lambda *a, **k: 'x'\n    def __repr__(self): return 'Anything()'\nAnything()";
    let output = run(&kernel, code).await;
    let ExecEvent::Result { bundle, .. } = &output.events[0] else { panic!() };
    assert_eq!(bundle.keys().collect::<Vec<_>>(), ["text/plain"]);
    let class = run(&kernel, "class WithHtml:\n    def _repr_html_(self): return '<b>'\nWithHtml").await;
    let ExecEvent::Result { bundle, .. } = &class.events[0] else { panic!() };
    assert_eq!(bundle.keys().collect::<Vec<_>>(), ["text/plain"], "a class is shown as a class");
}

#[tokio::test]
async fn display_ids_return_a_handle_whose_updates_are_shown() {
    let kernel = start().await;
    let code = "h = display('first', display_id=True)\nh.update('second')\nnamed = display('x', display_id='mine', clear=True)\n\
                print(len(h.display_id), named.display_id)";
    let output = run(&kernel, code).await;
    assert!(output.is_ok(), "{:?}", output.events);
    let texts: Vec<&str> = output.displays().iter().filter_map(|b| b["text/plain"].as_str()).collect();
    assert_eq!(texts, ["'first'", "'second'", "'x'"]);
    assert_eq!(output.stdout(), "32 mine\n");
}
