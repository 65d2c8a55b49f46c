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

/// A frame of 3 rows and 30 columns, as a real ipykernel prints it: 20 columns, wrapped at 80.
const WIDE_FRAME: &str = concat!(
    "   0     1     2     3     4     5     6     7     8     9   ...     20  \\\n",
    "0   0  1000  2000  3000  4000  5000  6000  7000  8000  9000  ...  20000   \n",
    "1   0  1000  2000  3000  4000  5000  6000  7000  8000  9000  ...  20000   \n",
    "2   0  1000  2000  3000  4000  5000  6000  7000  8000  9000  ...  20000   \n",
    "\n",
    "      21     22     23     24     25     26     27     28     29  \n",
    "0  21000  22000  23000  24000  25000  26000  27000  28000  29000  \n",
    "1  21000  22000  23000  24000  25000  26000  27000  28000  29000  \n",
    "2  21000  22000  23000  24000  25000  26000  27000  28000  29000  \n",
    "\n",
    "[3 rows x 30 columns]",
);

/// 12 columns with long names, as a real ipykernel prints them: all of them, two to a block.
const LONG_NAMES_FRAME: &str = concat!(
    "   a_rather_long_column_name_0  a_rather_long_column_name_1  \\\n",
    "0                            0                            1   \n",
    "1                          100                          101   \n",
    "2                          200                          201   \n",
    "\n",
    "   a_rather_long_column_name_2  a_rather_long_column_name_3  \\\n",
    "0                            2                            3   \n",
    "1                          102                          103   \n",
    "2                          202                          203   \n",
    "\n",
    "   a_rather_long_column_name_4  a_rather_long_column_name_5  \\\n",
    "0                            4                            5   \n",
    "1                          104                          105   \n",
    "2                          204                          205   \n",
    "\n",
    "   a_rather_long_column_name_6  a_rather_long_column_name_7  \\\n",
    "0                            6                            7   \n",
    "1                          106                          107   \n",
    "2                          206                          207   \n",
    "\n",
    "   a_rather_long_column_name_8  a_rather_long_column_name_9  \\\n",
    "0                            8                            9   \n",
    "1                          108                          109   \n",
    "2                          208                          209   \n",
    "\n",
    "   a_rather_long_column_name_10  a_rather_long_column_name_11  \n",
    "0                            10                            11  \n",
    "1                           110                           111  \n",
    "2                           210                           211  ",
);

/// pandas prints frames as under ipykernel (`display.max_columns` 20, `display.width` 80),
/// not as in a terminal (max_columns 0: the middle columns left out), whether the frame is the
/// result or printed, and with pandas preloaded by the fork server too. The expected texts are
/// what a real ipykernel 7.4.0 (IPython 9.18.1, pandas 3.1.1) printed for the same cells, run
/// through jupyter_client (see tests/runner/test_pandas_text.py).
#[tokio::test]
async fn pandas_frames_read_as_in_jupyter() {
    let setup = "import pandas as pd\n\
                 wide = pd.DataFrame([[i * 1000 for i in range(30)] for _ in range(3)])\n\
                 long_names = pd.DataFrame([[r * 100 + c for c in range(12)] for r in range(3)], \
                 columns=['a_rather_long_column_name_%d' % c for c in range(12)])";
    let mut preloaded = common::options(&std::env::temp_dir());
    preloaded.preload = vec!["pandas".into()];
    for (what, options) in [("spawned", common::options(&std::env::temp_dir())), ("pandas preloaded", preloaded)] {
        let forks = !options.preload.is_empty();
        let kernel = cellbox_kernels::kernel::Kernel::start(options).await.expect("kernel starts");
        assert_eq!(kernel.forked_from().is_some(), forks, "{what}");
        assert!(run(&kernel, setup).await.is_ok(), "{what}");
        assert_eq!(run(&kernel, "wide").await.results(), [WIDE_FRAME], "{what}");
        assert_eq!(run(&kernel, "print(wide)").await.stdout(), format!("{WIDE_FRAME}\n"), "{what}");
        assert_eq!(run(&kernel, "long_names").await.results(), [LONG_NAMES_FRAME], "{what}");
        assert_eq!(run(&kernel, "print(long_names)").await.stdout(), format!("{LONG_NAMES_FRAME}\n"), "{what}");
        kernel.shutdown().await;
    }
}

#[tokio::test]
async fn pil_image() {
    let kernel = start().await;
    let output = run(&kernel, "from PIL import Image\nImage.new('RGB', (32, 16), 'red')").await;
    let bundle = result_bundle(&output);
    assert!(is_png(bundle["image/png"].as_str().unwrap()), "{:?}", bundle.keys());
}

/// `Image.show()` shows the image in the cell, even where Pillow would hand
/// it to `xdg-open` first (a fake one on PATH here, which must not run).
#[cfg(unix)]
#[tokio::test]
async fn pil_show_displays_in_the_cell_not_through_xdg_open() {
    let bin = tempfile::tempdir().unwrap();
    let ran = bin.path().join("xdg-open-ran");
    let xdg_open = bin.path().join("xdg-open");
    std::fs::write(&xdg_open, format!("#!/bin/sh\ntouch '{}'\n", ran.display())).unwrap();
    std::fs::set_permissions(&xdg_open, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    let options = cellbox_kernels::kernel::KernelOptions::new(
        common::python(),
        std::env::temp_dir(),
        common::test_env(&[("PATH", &path)]),
    );
    let kernel = cellbox_kernels::kernel::Kernel::start(options).await.unwrap();
    let code = "from PIL import Image, ImageShow\nassert any(type(v).__name__ == 'XDGViewer' for v in ImageShow._viewers)\n\
                Image.new('RGB', (32, 16), 'red').show()\nprint('shown')";
    let output = run(&kernel, code).await;
    assert_eq!(output.stdout(), "shown\n", "{:?}", output.events);
    let png = output.events.iter().find_map(|event| match event {
        ExecEvent::Display { bundle, .. } => bundle.get("image/png").and_then(|data| data.as_str()).map(is_png),
        _ => None,
    });
    assert_eq!(png, Some(true), "{:?}", output.events);
    assert!(!ran.exists(), "xdg-open ran");
    kernel.shutdown().await;
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
