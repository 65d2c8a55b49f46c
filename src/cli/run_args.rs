//! The arguments of `cellbox run` (also what a notebook run takes) and their value parsers.

use std::path::PathBuf;

use cellbox_engine::tool::Language;

use super::KernelArgs;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Code to run.
    #[arg(short = 'c', value_name = "CODE", conflicts_with_all = ["file", "params"])]
    pub(super) code: Option<String>,
    /// File to run; `-` (or no file and no -c) reads standard input. A `.ipynb` notebook runs
    /// cell by cell in its own folder (unless --cwd), see -o, --inplace, --allow-errors, -p, -r.
    #[arg(value_name = "FILE", conflicts_with = "params")]
    pub(super) file: Option<PathBuf>,
    /// The eval tool's JSON parameters ({"cells": [...], ...}) from a file, or `-` for stdin.
    #[arg(long, value_name = "FILE|-")]
    pub(super) params: Option<PathBuf>,
    /// Timeout of each cell in seconds (1..3600) [default: 30].
    #[arg(long, value_name = "SECONDS")]
    pub(super) timeout: Option<f64>,
    /// Print the whole result as JSON at the end instead of streaming.
    #[arg(long)]
    pub(super) json: bool,
    /// Show every line of output, not the last 10 per cell (on a terminal).
    #[arg(long)]
    pub(super) expand: bool,
    /// Language of the code: py, js, ts or bash [default: from the file's extension, else py (js where
    /// Python is not available)].
    #[arg(long, value_name = "LANG", value_parser = parse_language)]
    pub(super) lang: Option<Language>,
    /// Extra environment variable for the kernel (repeatable); passes the filter.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(super) env: Vec<(String, String)>,
    /// Notebook runs: write the executed notebook to this file.
    #[arg(short = 'o', long = "output", value_name = "FILE", conflicts_with = "inplace")]
    pub(super) output: Option<PathBuf>,
    /// Notebook runs: write the executed notebook back over the input.
    #[arg(long)]
    pub(super) inplace: bool,
    /// Notebook runs: keep going after a cell raises (the error is recorded in its outputs).
    #[arg(long)]
    pub(super) allow_errors: bool,
    /// Notebook runs: a parameter, typed as papermill does (int, float, True/False, None, else a string); repeatable.
    #[arg(short = 'p', long = "parameter", num_args = 2, value_names = ["NAME", "VALUE"], action = clap::ArgAction::Append)]
    pub(super) parameters: Vec<String>,
    /// Notebook runs: a parameter kept as a string; repeatable.
    #[arg(short = 'r', long = "parameter-raw", num_args = 2, value_names = ["NAME", "VALUE"], action = clap::ArgAction::Append)]
    pub(super) raw_parameters: Vec<String>,
    /// Before the code runs, restore the variables saved in this snapshot file (see --snapshot).
    #[arg(long, value_name = "FILE")]
    pub(super) restore: Option<PathBuf>,
    /// After the code ran, save the kernel's variables to this snapshot file (functions and
    /// classes defined in cells included), for a later --restore.
    #[arg(long, value_name = "FILE")]
    pub(super) snapshot: Option<PathBuf>,
    /// Also save the cells that ran, with their outputs, as a notebook (.ipynb).
    #[arg(long, value_name = "FILE")]
    pub(super) save_notebook: Option<PathBuf>,
    /// Check cells before running them: `syntax` runs none if a cell does not parse (the error
    /// shows its caret); `lint` also adds `ruff check` findings on Python cells as notes [default: off].
    #[arg(long, value_name = "off|syntax|lint")]
    pub(super) check: Option<cellbox_engine::tool::CheckMode>,
    #[command(flatten)]
    pub(super) kernel: KernelArgs,
}

pub(super) fn parse_language(text: &str) -> Result<Language, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| format!("unknown language {text:?}; use py, js, ts or bash"))
}

fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}
