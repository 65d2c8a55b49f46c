//! The renderer while a cell's kernel is still starting (a gateway kernel
//! can take minutes): a live line on a terminal, an occasional line on a pipe.

use std::time::Duration;

use cellbox::render::{CardRenderer, RenderOptions, Style};
use cellbox_engine::tool::{CellReport, CellStatus, EvalEvent, EvalResult, Language};

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

fn finished() -> EvalResult {
    EvalResult {
        text: "hi\n".into(),
        is_error: false,
        cells: vec![CellReport {
            index: 0,
            title: None,
            language: Language::Py,
            status: CellStatus::Ok,
            duration_ms: 41_000,
            execution_count: Some(1),
            error: None,
        }],
        images: vec![],
        json: vec![],
        status_events: vec![],
        artifact: None,
        truncated: false,
        notes: vec![],
    }
}

fn waiting(seconds: f64) -> EvalEvent {
    let elapsed_ms = (seconds * 1000.0) as u64;
    EvalEvent::KernelStarting { cell: 0, waiting: Some("starting kernel on gateway".into()), elapsed_ms }
}

/// (stdout, stderr) of a cell whose kernel took 41 s to start.
fn render(tty: bool) -> (String, String) {
    let mut events = vec![EvalEvent::CellStarted { index: 0, title: None }];
    events.extend([0.0, 1.0, 2.0, 10.5, 11.5, 12.4, 30.0, 41.0].map(waiting));
    events.push(EvalEvent::KernelStarting { cell: 0, waiting: None, elapsed_ms: 41_200 });
    events.push(EvalEvent::Stdout { cell: 0, text: "hi\n".into() });
    events.push(EvalEvent::CellFinished { index: 0, status: CellStatus::Ok, duration_ms: 41_000 });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    {
        let mut renderer = CardRenderer::new(&mut out, &mut err, options(tty), vec!["print('hi')".into()]);
        for event in &events {
            renderer.event(event);
        }
        renderer.finish(&finished());
    }
    (String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

#[test]
fn a_terminal_shows_the_wait_in_place_of_running() {
    let (out, _) = render(true);
    assert!(out.contains("⋯ starting kernel on gateway… (12 s)"), "{out}");
    assert!(out.contains("⋯ starting kernel on gateway… (41 s)"), "{out}");
    // Once the kernel is ready the tail is redrawn without it.
    let last_wait = out.rfind("⋯ starting kernel on gateway").unwrap();
    let running_after = out[last_wait..].find("⋯ running").expect("the cell then shows as running");
    assert!(out[last_wait + running_after..].contains("hi"), "{out}");
    assert!(out.trim_end().ends_with("✓ ok · 41.00 s"), "{out}");
}

#[test]
fn a_pipe_reports_a_long_wait_now_and_then_on_stderr() {
    let (out, err) = render(false);
    assert_eq!(out, "hi\n", "stdout is only what Python printed");
    // Quiet for the first 10 s, then at most every 30 s.
    assert_eq!(err, "⋯ starting kernel on gateway… (10 s)\n⋯ starting kernel on gateway… (41 s)\n");
}
