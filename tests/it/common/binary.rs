//! The `cellbox` binary of this build, run as a person or a script runs it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The path of this build's `cellbox` binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_cellbox");

/// `cellbox ARGS`, with nothing set in its environment.
pub fn bare<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(BIN);
    command.args(args);
    command
}

/// `cellbox ARGS` on the interpreter under test (`CELLBOX_PYTHON`).
pub fn cellbox<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = bare(args);
    command.env("CELLBOX_PYTHON", super::python());
    command
}

/// Run `command` with `input` written to its stdin (then closed), keeping its output.
pub fn output_with_input(command: &mut Command, input: &str) -> Output {
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(input.as_bytes()).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// Bytes a process wrote, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
