//! Rich display with the real libraries (installed into the test venv by
//! scripts/test): pandas, PIL, matplotlib, plotly, sympy and IPython.display.

use crate::common;

use cellbox_kernels::kernel::ExecEvent;
use common::{run, start};

fn result_bundle(output: &cellbox_kernels::kernel::CellOutput) -> cellbox_protocol::MimeBundle {
    output
        .events
        .iter()
        .find_map(|e| if let ExecEvent::Result { bundle, .. } = e { Some(bundle.clone()) } else { None })
        .unwrap_or_else(|| panic!("no result in {:?}", output.events))
}

fn is_png(base64_data: &str) -> bool {
    base64_data.starts_with("iVBORw0KGgo")
}

#[tokio::test]
async fn pandas_dataframe() {
    let kernel = start().await;
    let output = run(&kernel, "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})").await;
    let bundle = result_bundle(&output);
    let plain = bundle["text/plain"].as_str().unwrap();
    assert!(plain.contains("a  b") && plain.contains("0  1  x"), "{plain}");
    assert!(bundle["text/html"].as_str().unwrap().contains("<table"), "DataFrames also carry HTML");
}

#[tokio::test]
async fn pil_image() {
    let kernel = start().await;
    let output = run(&kernel, "from PIL import Image\nImage.new('RGB', (32, 16), 'red')").await;
    let bundle = result_bundle(&output);
    assert!(is_png(bundle["image/png"].as_str().unwrap()), "{:?}", bundle.keys());
}

#[tokio::test]
async fn matplotlib_figures_are_captured_after_the_cell() {
    let kernel = start().await;
    let output =
        run(&kernel, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nfig2 = plt.figure()\nplt.bar([1], [2]);")
            .await;
    let images: Vec<_> = output.displays().into_iter().filter(|b| b.contains_key("image/png")).collect();
    assert_eq!(images.len(), 2, "both open figures are emitted");
    assert!(images.iter().all(|b| is_png(b["image/png"].as_str().unwrap())));
    assert!(!output.stderr().contains("non-GUI"), "no backend warning: {}", output.stderr());
    let after = run(&kernel, "import matplotlib.pyplot as plt\nplt.get_fignums()").await;
    assert_eq!(after.results(), ["[]"], "emitted figures are closed");
    assert_eq!(run(&kernel, "import matplotlib\nmatplotlib.get_backend().lower()").await.results(), ["'agg'"]);
}

#[tokio::test]
async fn plt_show_emits_in_order_with_prints() {
    let kernel = start().await;
    let code = "import matplotlib.pyplot as plt\nprint('before')\nplt.plot([1, 2])\nplt.show()\nprint('after')";
    let output = run(&kernel, code).await;
    let order: Vec<&str> = output
        .events
        .iter()
        .filter_map(|e| match e {
            ExecEvent::Stdout(text) => Some(text.trim()),
            ExecEvent::Display { bundle, .. } if bundle.contains_key("image/png") => Some("image"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["before", "image", "after"]);
    assert!(!output.stderr().contains("non-interactive"), "{}", output.stderr());
}

#[tokio::test]
async fn a_figure_as_the_result_is_a_png() {
    let kernel = start().await;
    let output =
        run(&kernel, "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([3, 1])\nplt.close(fig)\nfig")
            .await;
    let bundle = result_bundle(&output);
    assert!(is_png(bundle["image/png"].as_str().unwrap()));
}

#[tokio::test]
async fn plotly_figure() {
    let kernel = start().await;
    let output = run(&kernel, "import plotly.graph_objects as go\ngo.Figure(data=[go.Bar(y=[1, 3, 2])])").await;
    let bundle = result_bundle(&output);
    assert!(bundle.len() > 1, "plotly offers more than text: {:?}", bundle.keys().collect::<Vec<_>>());
    assert!(bundle.contains_key("text/plain"));
}

#[tokio::test]
async fn sympy_expression() {
    let kernel = start().await;
    let output = run(&kernel, "import sympy\nx = sympy.Symbol('x')\nsympy.Integral(x**2, x)").await;
    let bundle = result_bundle(&output);
    assert_eq!(bundle["text/plain"], "Integral(x**2, x)");
    assert!(bundle["text/latex"].as_str().unwrap().contains("\\int"), "{:?}", bundle.get("text/latex"));
}

#[tokio::test]
async fn ipython_display_objects_work_without_an_ipython_shell() {
    let kernel = start().await;
    let code = "from IPython.display import display, HTML, Markdown, JSON\ndisplay(HTML('<b>x</b>'))\ndisplay(Markdown('# T'), JSON({'a': 1}))";
    let output = run(&kernel, code).await;
    let displays = output.displays();
    assert_eq!(displays.len(), 3, "{:?}", output.events);
    assert_eq!(displays[0]["text/html"], "<b>x</b>");
    assert_eq!(displays[1]["text/markdown"], "# T");
    assert_eq!(displays[2]["application/json"], serde_json::json!({"a": 1}));
    assert_eq!(output.stdout(), "", "IPython's fallback print is not used");
}
