//! Snapshots of the terminal renderer (insta), from hand-made event streams:
//! every status, truncation, status events, JSON, images without an image
//! protocol, plain (pipe) output, and clamped lines.

use std::time::Duration;

use cellbox::render::{CardRenderer, RenderOptions, Style, redrawing};
use cellbox_engine::output::display::DisplayPart;
use cellbox_engine::tool::{CellReport, CellStatus, EvalEvent, EvalResult, Language};
use cellbox_kernels::kernel::CellError;
use serde_json::json;

fn options(tty: bool) -> RenderOptions {
    RenderOptions {
        style: Style::plain(),
        tty,
        expand: false,
        preview_lines: 10,
        max_line_chars: 4000,
        inline_images: false,
        image_dir: std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("render-images"),
        headers: true,
        redraw_interval: Duration::ZERO,
    }
}

fn report(index: usize, status: CellStatus) -> CellReport {
    CellReport {
        index,
        title: None,
        language: Language::Py,
        status,
        duration_ms: 12,
        execution_count: None,
        error: None,
    }
}

fn result(cells: Vec<CellReport>, notes: &[&str], artifact: Option<&str>, truncated: bool) -> EvalResult {
    EvalResult {
        text: String::new(),
        is_error: cells.iter().any(|c| c.status != CellStatus::Ok),
        cells,
        images: vec![],
        json: vec![],
        status_events: vec![],
        artifact: artifact.map(String::from),
        truncated,
        notes: notes.iter().map(|n| n.to_string()).collect(),
    }
}

/// Render and return (stdout, stderr), escapes made visible.
fn render(
    tty: bool,
    codes: &[&str],
    events: &[EvalEvent],
    end: &EvalResult,
    tweak: impl FnOnce(&mut RenderOptions),
) -> String {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut opts = options(tty);
    tweak(&mut opts);
    {
        let mut renderer = CardRenderer::new(&mut out, &mut err, opts, codes.iter().map(|c| c.to_string()).collect());
        for event in events {
            renderer.event(event);
        }
        renderer.finish(end);
    }
    let out = String::from_utf8(out).unwrap();
    if tty {
        assert!(!out.contains("\x1b[") || out.contains("F\x1b[J"), "only tail redraws use escapes");
        assert!(out.contains("⋯ running"), "a running cell says so");
        assert!(!screen(&out).contains("⋯ running"), "and stops saying so when it ends");
    } else {
        assert!(!out.contains('\x1b'), "no escape codes off a terminal");
    }
    format!("--- screen\n{}--- stderr\n{}", screen(&out), String::from_utf8(err).unwrap())
}

/// What a terminal shows after `raw`: `ESC[nF ESC[J` erases the last n lines.
fn screen(raw: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut rest = raw;
    while let Some(start) = rest.find("\x1b[") {
        lines.extend(rest[..start].split_inclusive('\n').map(String::from));
        let after = &rest[start + 2..];
        let end = after.find("F\x1b[J").expect("a redraw sequence");
        let count: usize = after[..end].parse().unwrap();
        lines.truncate(lines.len() - count);
        rest = &after[end + 4..];
    }
    lines.extend(rest.split_inclusive('\n').map(String::from));
    lines.concat()
}

fn started(index: usize, title: Option<&str>) -> EvalEvent {
    EvalEvent::CellStarted { index, title: title.map(String::from) }
}

fn finished(index: usize, status: CellStatus) -> EvalEvent {
    EvalEvent::CellFinished { index, status, duration_ms: 1234 }
}

fn out(text: &str) -> EvalEvent {
    EvalEvent::Stdout { cell: 0, text: text.into() }
}

#[test]
fn every_status_on_a_terminal() {
    let statuses = [CellStatus::Ok, CellStatus::Error, CellStatus::Cancelled, CellStatus::Timeout, CellStatus::Killed];
    let codes = ["print('a')", "1/0", "import time\ntime.sleep(9)", "while True: pass", "stuck()", "never()"];
    let mut events = Vec::new();
    for (index, status) in statuses.iter().enumerate() {
        events.push(started(index, if index == 0 { Some("first") } else { None }));
        if *status == CellStatus::Error {
            events.push(EvalEvent::Error {
                cell: index,
                error: CellError {
                    ename: "ZeroDivisionError".into(),
                    evalue: "division by zero".into(),
                    traceback: vec![
                        "Traceback (most recent call last):\n".into(),
                        "ZeroDivisionError: division by zero\n".into(),
                    ],
                },
            });
        } else {
            events.push(out("a\n"));
        }
        events.push(finished(index, *status));
    }
    let mut cells: Vec<CellReport> = statuses.iter().enumerate().map(|(i, s)| report(i, *s)).collect();
    cells.push(report(5, CellStatus::Skipped));
    let end = result(cells, &["eval cell timed out after 1s; kernel interrupted but remains running."], None, false);
    insta::assert_snapshot!(render(true, &codes, &events, &end, |_| {}));
}

#[test]
fn long_output_collapses_to_a_tail_with_the_artifact() {
    let mut events = vec![started(0, Some("count"))];
    for i in 0..30 {
        events.push(out(&format!("line {i}\n")));
    }
    events.push(finished(0, CellStatus::Ok));
    let end = result(vec![report(0, CellStatus::Ok)], &[], Some("artifact://0123abcd-1-1"), false);
    insta::assert_snapshot!("collapsed", render(true, &["for i in range(30): print(i)"], &events, &end, |_| {}));
    insta::assert_snapshot!(
        "expanded",
        render(true, &["for i in range(30): print(i)"], &events, &end, |o| o.expand = true)
    );
}

#[test]
fn status_events_are_one_liners() {
    let statuses = [
        json!({"op": "cd", "path": "/work"}),
        json!({"op": "pip", "args": "install x", "installed": ["x"], "evicted": ["x"], "exit_code": 0}),
        json!({"op": "read", "path": "notes.txt", "chars": 120, "lines": 3}),
        json!({"op": "write", "path": "out.txt", "chars": 5}),
        json!({"op": "time", "wall_ms": 1520.5, "cpu_ms": 3.25}),
        json!({"op": "timeit", "mean_ms": 0.000644, "std_ms": 0.0000155, "runs": 7, "loops": 100000}),
        json!({"op": "ls", "path": "/work", "count": 4}),
        json!({"op": "env", "action": "set", "key": "K"}),
        json!({"op": "writefile", "path": "/work/f.py", "chars": 10, "append": false}),
        json!({"op": "reset"}),
        json!({"op": "load", "path": "/work/a.py", "lines": 3}),
        json!({"op": "run", "path": "/work/s.py", "argv": []}),
        json!({"op": "shell", "shell": "bash", "exit_code": 1}),
        json!({"op": "log", "message": "halfway"}),
        json!({"op": "phase", "title": "Training"}),
        json!({"op": "custom", "n": 1}),
    ];
    let mut events = vec![started(0, Some("status"))];
    events.extend(statuses.into_iter().map(|event| EvalEvent::Status { cell: 0, event }));
    events.push(finished(0, CellStatus::Ok));
    let end = result(vec![report(0, CellStatus::Ok)], &[], None, false);
    insta::assert_snapshot!(render(true, &["%magics"], &events, &end, |o| o.preview_lines = 20));
}

#[test]
fn json_outputs_are_a_capped_tree() {
    let deep = json!({"name": "cellbox", "sizes": [1, 2, 3], "nested": {"a": {"b": {"c": {"d": {"e": 1}}}}}, "empty": {}, "list": []});
    let long: serde_json::Value = (0..60).collect::<Vec<i32>>().into();
    let events = vec![
        started(0, Some("json")),
        EvalEvent::Display {
            cell: 0,
            parts: vec![DisplayPart::Text("{'name': ...}".into()), DisplayPart::Json(deep)],
            is_result: false,
            bundle: Default::default(),
        },
        EvalEvent::Display {
            cell: 0,
            parts: vec![DisplayPart::Json(long)],
            is_result: false,
            bundle: Default::default(),
        },
        finished(0, CellStatus::Ok),
    ];
    let end = result(vec![report(0, CellStatus::Ok)], &[], None, false);
    insta::assert_snapshot!(render(true, &["display(data)"], &events, &end, |o| o.expand = true));
}

#[test]
fn images_without_a_protocol_are_saved_and_named() {
    let mut bytes = std::io::Cursor::new(Vec::new());
    image::RgbImage::from_pixel(2, 1, image::Rgb([0, 128, 255])).write_to(&mut bytes, image::ImageFormat::Png).unwrap();
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD.encode(bytes.into_inner());
    let events = vec![
        started(0, None),
        EvalEvent::Display {
            cell: 0,
            parts: vec![
                DisplayPart::Text("<Figure>".into()),
                DisplayPart::Image { mime: "image/png".into(), data: png },
            ],
            is_result: false,
            bundle: Default::default(),
        },
        finished(0, CellStatus::Ok),
    ];
    let end = result(vec![report(0, CellStatus::Ok)], &[], None, false);
    let rendered = render(true, &["plt.plot([1, 2])"], &events, &end, |_| {});
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("render-images");
    let path_start = rendered.find(&dir.display().to_string()).expect("the saved file is named");
    let path_end = rendered[path_start..].find(']').unwrap() + path_start;
    let saved = std::path::PathBuf::from(&rendered[path_start..path_end]);
    assert!(saved.is_file(), "{}", saved.display());
    let image = image::open(&saved).unwrap();
    assert_eq!((image.width(), image.height()), (2, 1));
    insta::assert_snapshot!(rendered.replace(&rendered[path_start..path_end], "<saved image>"));
}

#[test]
fn pipes_get_plain_text() {
    let events = vec![
        started(0, None),
        out("hello\n"),
        EvalEvent::Stderr { cell: 0, text: "warn\n".into() },
        EvalEvent::Status { cell: 0, event: json!({"op": "cd", "path": "/tmp"}) },
        finished(0, CellStatus::Ok),
    ];
    let end = result(vec![report(0, CellStatus::Ok)], &[], None, false);
    insta::assert_snapshot!("single_cell", render(false, &["print('hello')"], &events, &end, |_| {}));
    let mut two = events.clone();
    two.extend([started(1, Some("second")), out("again\n"), finished(1, CellStatus::Error)]);
    let end = result(
        vec![report(0, CellStatus::Ok), report(1, CellStatus::Error)],
        &["Cell 2 (second) failed: X."],
        None,
        true,
    );
    insta::assert_snapshot!("two_cells", render(false, &["print('hello')", "fail()"], &two, &end, |_| {}));
}

#[test]
fn absurd_lines_are_clamped() {
    let events = vec![started(0, None), out(&format!("{}\n", "x".repeat(10_000))), finished(0, CellStatus::Ok)];
    let end = result(vec![report(0, CellStatus::Ok)], &[], None, false);
    let rendered = render(true, &["print('x' * 10000)"], &events, &end, |o| o.max_line_chars = 40);
    assert!(rendered.contains("… [9960 chars omitted] …"), "{rendered}");
    insta::assert_snapshot!(rendered);
}

#[tokio::test]
async fn output_held_back_by_the_redraw_interval_is_drawn_while_the_call_runs() {
    let mut shown = Vec::new();
    {
        let mut opts = options(true);
        opts.redraw_interval = Duration::from_millis(20);
        let renderer = std::sync::Mutex::new(CardRenderer::new(&mut shown, Vec::new(), opts, vec!["print()".into()]));
        {
            let mut renderer = renderer.lock().unwrap();
            renderer.event(&started(0, None));
            // Both within the interval of the cell's first draw: held back.
            renderer.event(&out("first\n"));
            renderer.event(&out("second\n"));
        }
        // The call goes on printing nothing: what it printed last must show meanwhile.
        redrawing(&renderer, tokio::time::sleep(Duration::from_millis(200))).await;
    }
    let screen = screen(&String::from_utf8(shown).unwrap());
    assert!(screen.contains("  first\n  second\n"), "{screen}");
}
