//! Every magic, shell form and SList through the real runner.

use crate::common;

use cellbox_kernels::kernel::{CellOutput, ExecEvent};
use common::{run, start};
use serde_json::Value;

fn statuses(output: &CellOutput) -> Vec<Value> {
    output.displays().iter().filter_map(|bundle| bundle.get("application/x-cellbox-status").cloned()).collect()
}

fn error_of(output: &CellOutput) -> String {
    output.errors().first().map(|e| format!("{}: {}", e.ename, e.evalue)).unwrap_or_default()
}

#[tokio::test]
async fn cd_persists_and_reports() {
    let kernel = start().await;
    let dir = tempfile::tempdir().unwrap();
    let real = std::fs::canonicalize(dir.path()).unwrap().display().to_string();
    let output = run(&kernel, &format!("%cd {real}")).await;
    assert_eq!(output.stdout(), format!("{real}\n"));
    assert_eq!(statuses(&output)[0]["op"], "cd");
    assert_eq!(statuses(&output)[0]["path"], real.as_str());
    assert_eq!(run(&kernel, "%pwd").await.results(), [format!("'{real}'")], "cd persists across cells");
    let home = run(&kernel, "%cd ~\nimport os\nos.getcwd() == os.path.expanduser('~')").await;
    assert_eq!(home.results(), ["True"]);
    let back = run(&kernel, "%cd -\n%pwd").await;
    assert_eq!(back.results(), [format!("'{real}'")]);
}

#[tokio::test]
async fn ls_env_and_set_env() {
    let kernel = start().await;
    let dir = tempfile::tempdir().unwrap();
    for name in ["b.txt", "a.txt"] {
        std::fs::write(dir.path().join(name), "").unwrap();
    }
    let output = run(&kernel, &format!("%ls {}", dir.path().display())).await;
    assert_eq!(output.results(), ["['a.txt', 'b.txt']"]);
    assert_eq!(statuses(&output)[0]["count"], 2);
    assert_eq!(run(&kernel, "%env EK_A=1\n%env EK_A").await.results(), ["'1'"]);
    assert_eq!(run(&kernel, "%env EK_B two words\nimport os\nos.environ['EK_B']").await.results(), ["'two words'"]);
    let set = run(&kernel, "%set_env EK_C 3\nimport os\nos.environ['EK_C']").await;
    assert_eq!(set.stdout(), "env: EK_C=3\n");
    assert_eq!(set.results(), ["'3'"]);
    assert_eq!(run(&kernel, "everything = %env\ntype(everything)").await.results(), ["dict"]);
    let missing = run(&kernel, "%env EK_NOT_SET_ANYWHERE").await;
    assert!(error_of(&missing).contains("UsageError: Environment does not have key"), "{}", error_of(&missing));
}

#[tokio::test]
async fn time_and_timeit_print_ipython_style() {
    let kernel = start().await;
    let output = run(&kernel, "%time sum(range(1000))").await;
    let text = output.stdout();
    assert!(text.starts_with("CPU times: user ") && text.contains(", sys: ") && text.contains(", total: "), "{text}");
    assert!(text.contains("\nWall time: "), "{text}");
    assert_eq!(output.results(), ["499500"], "%time returns the value");
    assert_eq!(statuses(&output)[0]["op"], "time");
    run(&kernel, "%time assigned = 5").await;
    assert_eq!(run(&kernel, "assigned").await.results(), ["5"], "a timed statement runs in the user namespace");

    let timeit = run(&kernel, "%timeit -n 50 -r 3 sum(range(10))").await;
    let text = timeit.stdout();
    // As in IPython, a run much slower than the fastest (a loaded machine) adds a warning line first.
    let line = match text.split_once('\n') {
        Some((first, rest)) if first.starts_with("The slowest run took ") => rest.to_string(),
        _ => text.clone(),
    };
    let pattern = regex_like(&line);
    assert!(pattern, "unexpected %timeit line: {line:?}");
    assert!(line.contains("(mean ± std. dev. of 3 runs, 50 loops each)"), "{line}");
    let event = &statuses(&timeit)[0];
    assert_eq!(
        (event["op"].as_str(), event["runs"].as_i64(), event["loops"].as_i64()),
        (Some("timeit"), Some(3), Some(50))
    );

    let cell = run(&kernel, "%%timeit -n 5 -r 2 base = 3\ntotal = base * 2").await;
    assert!(cell.stdout().contains("(mean ± std. dev. of 2 runs, 5 loops each)"), "{}", cell.stdout());
    let auto = run(&kernel, "result = %timeit -o -q pass\n(result.loops >= 1000, len(result.timings))").await;
    assert_eq!(auto.results(), ["(True, 7)"], "-o returns the result; default 7 runs, loops chosen automatically");
    assert_eq!(auto.stdout(), "", "-q prints nothing");
    let timed_cell = run(&kernel, "%%time\nx = 2\nx * 21").await;
    assert_eq!(timed_cell.results(), ["42"]);
}

/// `644 ns ± 15.5 ns per loop (...)`
fn regex_like(line: &str) -> bool {
    let Some((mean, rest)) = line.split_once(" ± ") else { return false };
    let unit = |s: &str| s.ends_with(" ns") || s.ends_with(" µs") || s.ends_with(" ms") || s.ends_with(" s");
    let Some((std, _)) = rest.split_once(" per loop (") else { return false };
    unit(mean) && unit(std) && mean.split(' ').next().unwrap().parse::<f64>().is_ok()
}

#[tokio::test]
async fn who_whos_and_reset() {
    let kernel = start().await;
    assert_eq!(run(&kernel, "%who").await.stdout(), "Interactive namespace is empty.\n", "prelude helpers are hidden");
    run(&kernel, "alpha = 1\nbeta = 'text'\n_hidden = 3").await;
    assert_eq!(run(&kernel, "%who").await.stdout(), "alpha\tbeta\n");
    assert_eq!(run(&kernel, "%who str").await.stdout(), "beta\n");
    let table = run(&kernel, "%whos").await.stdout();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "Variable   Type    Data/Info");
    assert_eq!(lines[1], "-".repeat(28));
    assert_eq!(lines[2], "alpha      int     1");
    assert_eq!(lines[3], "beta       str     text");
    let reset = run(&kernel, "%reset\n'alpha' in dir(), callable(display)").await;
    assert_eq!(reset.results(), ["(False, True)"], "names are gone, the prelude is back");
    assert_eq!(statuses(&reset)[0]["op"], "reset");
}

#[tokio::test]
async fn load_and_run_files() {
    let kernel = start().await;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.py");
    std::fs::write(&script, "import sys\nARGS = sys.argv[1:]\nNAME = __name__\nprint('ran', ARGS)\n").unwrap();
    let output = run(&kernel, &format!("%run {} one 'two words'", script.display())).await;
    assert_eq!(output.stdout(), "ran ['one', 'two words']\n");
    assert_eq!(
        run(&kernel, "ARGS, NAME").await.results(),
        ["(['one', 'two words'], '__main__')"],
        "globals merged back"
    );
    assert_eq!(run(&kernel, "import sys; sys.argv[1:]").await.results(), ["[]"], "sys.argv is restored");

    let loaded = dir.path().join("loaded.py");
    std::fs::write(&loaded, "LOADED = 40\n!echo from-load\nLOADED + 2\n").unwrap();
    let output = run(&kernel, &format!("%load {}", loaded.display())).await;
    assert_eq!(output.stdout(), "from-load\n", "magics inside loaded code work");
    assert_eq!(output.results(), ["42"]);
    assert_eq!(run(&kernel, "LOADED").await.results(), ["40"]);

    let failing = dir.path().join("fails.py");
    std::fs::write(&failing, "def broken():\n    raise ValueError('inside script')\nbroken()\n").unwrap();
    let output = run(&kernel, &format!("%run {}", failing.display())).await;
    let traceback = output.errors()[0].traceback.concat();
    assert!(traceback.contains("fails.py\", line 2, in broken"), "{traceback}");
    assert!(!traceback.contains("cellbox_kernel"), "{traceback}");
}

#[tokio::test]
async fn shell_lines_stream_capture_and_expand() {
    let kernel = start().await;
    let output =
        run(&kernel, "name = 'world'\n!echo hello {name} $name '$$HOME'\n!echo oops >&2; exit 3\n_exit_code").await;
    assert_eq!(output.stdout(), "hello world world $$HOME\n", "as in IPython, single quotes keep `$` as written");
    assert_eq!(output.stderr(), "oops\n");
    assert_eq!(output.results(), ["3"]);
    let captured = run(&kernel, "lines = !printf 'b 2\\na 1\\n'; echo err >&2\n(type(lines).__name__, lines)").await;
    assert_eq!(captured.stdout(), "", "var = !cmd does not echo");
    assert_eq!(captured.results(), ["('SList', ['b 2', 'a 1', 'err'])"], "stderr is merged");
    let helpers =
        run(&kernel, "(lines.s, lines.n, lines.grep('A').l, lines.fields(1), lines.sort(1, nums=True))").await;
    assert_eq!(helpers.results(), ["('b 2 a 1 err', 'b 2\\na 1\\nerr', ['a 1'], ['2', '1'], ['err', 'a 1', 'b 2'])"]);
    let double = run(&kernel, "!!echo double").await;
    assert_eq!(double.results(), ["['double']"]);
    let a = run(&kernel, "first, *rest = !printf 'x\\ny\\nz\\n'\nfirst, rest").await;
    assert_eq!(a.results(), ["('x', ['y', 'z'])"]);
    let binary = run(&kernel, "out = !printf '\\377\\376ok'\nout").await;
    assert_eq!(binary.results(), ["['\u{fffd}\u{fffd}ok']"], "undecodable bytes are replaced, never raised");
    let stdin = run(&kernel, "!cat\nprint('after')").await;
    assert_eq!(stdin.stdout(), "after\n", "children get no stdin");
    let indented = run(&kernel, "for i in range(2):\n    !echo loop $i\n    got = !echo $i\n    print(got)").await;
    assert_eq!(indented.stdout(), "loop 0\n['0']\nloop 1\n['1']\n");
}

#[tokio::test]
async fn shell_output_streams_live() {
    let kernel = start().await;
    // The command prints its first line, then waits until the test has seen
    // that line: output held back until the command ends would never arrive.
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let command = format!("!echo tick 1; while [ ! -e '{0}' ]; do sleep 0.02; done; echo tick 2", go.display());
    let mut execution = kernel.execute(&command).await.unwrap();
    let mut stdout = String::new();
    while !stdout.contains("tick 1\n") {
        match tokio::time::timeout(common::PATIENCE, execution.next()).await.expect("the first line arrives live") {
            Some(Ok(ExecEvent::Stdout(text))) => stdout.push_str(&text),
            Some(Ok(_)) => {}
            other => panic!("the command ended before its first line arrived: {other:?} (stdout {stdout:?})"),
        }
    }
    assert_eq!(stdout, "tick 1\n");
    std::fs::write(&go, "").unwrap();
    let rest = execution.collect().await.unwrap();
    assert_eq!(rest.stdout(), "tick 2\n");
}

#[tokio::test]
async fn cell_magics_bash_sh_writefile() {
    let kernel = start().await;
    let output = run(&kernel, "%%bash\necho from bash $((1 + 2))\necho to-err >&2").await;
    assert_eq!(output.stdout(), "from bash 3\n");
    assert_eq!(output.stderr(), "to-err\n");
    assert_eq!(run(&kernel, "%%sh\necho from sh").await.stdout(), "from sh\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/sub/file.txt");
    let output = run(&kernel, &format!("%%writefile {}\nline one\n", path.display())).await;
    assert_eq!(output.stdout(), format!("Writing {}\n", path.display()));
    assert_eq!(statuses(&output)[0]["op"], "writefile");
    let output = run(&kernel, &format!("%%writefile -a {}\nline two\n", path.display())).await;
    assert_eq!(output.stdout(), format!("Appending to {}\n", path.display()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "line one\nline two\n");
    let output = run(&kernel, &format!("%%writefile {}\nreplaced\n", path.display())).await;
    assert_eq!(output.stdout(), format!("Overwriting {}\n", path.display()));
}

#[tokio::test]
async fn capture_keeps_stdout_stderr_and_displays() {
    let kernel = start().await;
    let output = run(&kernel, "%%capture cap\nimport os, sys\nprint('out')\nprint('err', file=sys.stderr)\nos.write(1, b'fd\\n')\ndisplay({'k': 1})\n").await;
    assert_eq!(output.stdout(), "", "nothing leaks: {:?}", output.events);
    assert!(output.displays().is_empty());
    let seen = run(&kernel, "cap.stdout, cap.stderr, len(cap.outputs), cap.outputs[0][0]['application/json']").await;
    assert_eq!(seen.results(), ["('out\\nfd\\n', 'err\\n', 1, {'k': 1})"]);
    let shown = run(&kernel, "cap.show()").await;
    assert_eq!(shown.stdout(), "out\nfd\n");
    assert_eq!(shown.stderr(), "err\n");
    assert_eq!(shown.displays().len(), 1);
    let partial =
        run(&kernel, "%%capture c2 --no-stderr\nimport sys\nprint('kept')\nprint('shown', file=sys.stderr)").await;
    assert_eq!(partial.stderr(), "shown\n");
    assert_eq!(run(&kernel, "c2.stdout").await.results(), ["'kept\\n'"]);
    let anonymous = run(&kernel, "%%capture\nprint('discarded')").await;
    assert_eq!(anonymous.stdout(), "");
}

#[tokio::test]
async fn unknown_magics_raise_usage_errors() {
    let kernel = start().await;
    let line = run(&kernel, "%nosuchmagic arg").await;
    assert_eq!(error_of(&line), "UsageError: Line magic function `%nosuchmagic` not found.");
    let traceback = line.errors()[0].traceback.concat();
    assert_eq!(
        traceback, "UsageError: Line magic function `%nosuchmagic` not found.\n",
        "just the message, as IPython"
    );
    let cell = run(&kernel, "%%nosuchcell\nbody").await;
    assert_eq!(error_of(&cell), "UsageError: Cell magic `%%nosuchcell` not found.");
}

#[tokio::test]
async fn strings_and_line_numbers_survive_transformation() {
    let kernel = start().await;
    let output = run(&kernel, "text = '''\n%not a magic\n!not a command\n'''\nf = f\"{1!r}\"\n(text, f)").await;
    assert_eq!(output.results(), ["('\\n%not a magic\\n!not a command\\n', '1')"]);
    let error = run(&kernel, "!true\nx = 1\n1/0").await;
    assert!(error.errors()[0].traceback.concat().contains("line 3"), "line numbers stay right");
    let crlf = run(&kernel, "%pwd\r\nvalue = 7\r\nvalue").await;
    assert_eq!(crlf.results(), ["7"]);
}

#[tokio::test]
async fn prelude_helpers_emit_status_events() {
    let kernel = start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/notes.txt");
    let code = format!(
        "write({p:?}, 'one\\ntwo\\nthree\\n')\nprint(read({p:?}, offset=2, limit=1), end='')\nlog('working')\nphase('Setup')\nenv('EK_PRELUDE', 'on')\nenv('EK_PRELUDE')",
        p = path.display().to_string()
    );
    let output = run(&kernel, &code).await;
    assert_eq!(output.stdout(), "two\n");
    assert_eq!(output.results(), ["'on'"]);
    let ops: Vec<String> = statuses(&output).iter().map(|e| e["op"].as_str().unwrap().to_string()).collect();
    assert_eq!(ops, ["write", "read", "log", "phase", "env"]);
    assert_eq!(statuses(&output)[1]["lines"], 1);
    let docs = run(&kernel, "all(f.__doc__ for f in (display, env, read, write, log, phase, emit_status))").await;
    assert_eq!(docs.results(), ["True"], "every helper has a docstring the model can read");
}

#[tokio::test]
async fn out_lets_its_oldest_values_go_at_its_size_and_says_so() {
    let kernel = start().await;
    run(&kernel, "%config InteractiveShell.cache_size = 3").await;
    for n in 2..5 {
        let output = run(&kernel, &format!("{n} * 10")).await;
        assert_eq!(output.stderr(), "", "cell {n}: Out is not full yet");
    }
    let full = run(&kernel, "50").await;
    assert_eq!(full.results(), ["50"]);
    assert_eq!(
        full.stderr(),
        "[cellbox: Out held 3 values (InteractiveShell.cache_size is 3); the oldest 2, Out[2] to Out[3], were let go]\n"
    );
    let kept = run(&kernel, "sorted(Out), '_2' in dir(), _4").await;
    assert_eq!(kept.results(), ["([4, 5], False, 40)"]);
}

#[tokio::test]
async fn a_full_out_with_a_key_of_the_users_and_no_stderr_keeps_its_kernel() {
    let kernel = start().await;
    run(&kernel, "%config InteractiveShell.cache_size = 3\nOut['mine'] = 1").await;
    run(&kernel, "1").await;
    run(&kernel, "2").await;
    let culled = run(&kernel, "import sys\nsys.stderr = None\n3").await;
    assert_eq!((culled.results(), error_of(&culled)), (vec!["3".to_string()], String::new()));
    let kept = run(&kernel, "sorted(Out, key=str)").await;
    assert_eq!(kept.results(), ["[4, 'mine']"], "the kernel lives on; the user's key stays, the oldest values go");
}
