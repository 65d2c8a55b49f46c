//! `evalkit run`: run code in one fresh kernel and stream what it prints.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use evalkit::kernel::{ExecEvent, Kernel, KernelOptions};
use evalkit::protocol::DoneStatus;
use evalkit::runtime::{self, DiscoveryInput, env};

use super::KernelArgs;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Code to run.
    #[arg(short = 'c', value_name = "CODE", conflicts_with = "file")]
    code: Option<String>,
    /// File to run; `-` (or no file and no -c) reads standard input.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// Extra environment variable for the kernel (repeatable); passes the filter.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    env: Vec<(String, String)>,
    #[command(flatten)]
    kernel: KernelArgs,
}

fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}

/// Exit codes: 0 ok, 1 the code failed, 2 evalkit could not run it, 130 interrupted.
pub async fn run(args: RunArgs) -> ExitCode {
    match run_inner(args).await {
        Ok(code) => code,
        Err(message) => {
            eprintln!("evalkit: {message}");
            ExitCode::from(2)
        }
    }
}

fn read_code(args: &RunArgs) -> Result<String, String> {
    if let Some(code) = &args.code {
        return Ok(code.clone());
    }
    match &args.file {
        Some(path) if path.as_os_str() != "-" => {
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        }
        _ => {
            let mut code = String::new();
            std::io::stdin().read_to_string(&mut code).map_err(|e| format!("cannot read standard input: {e}"))?;
            Ok(code)
        }
    }
}

async fn run_inner(args: RunArgs) -> Result<ExitCode, String> {
    let code = read_code(&args)?;
    let cwd = args.kernel.cwd()?;
    let input = DiscoveryInput::from_env(cwd.clone(), args.kernel.explicit_python());
    let skip = runtime::skip_check_from_env();
    let python = tokio::task::spawn_blocking(move || runtime::resolve(&input, skip))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let extra: BTreeMap<String, String> = args.env.into_iter().collect();
    let env = env::kernel_env(std::env::vars_os(), &python.activation, &extra);
    let kernel = Kernel::start(KernelOptions::new(&python.executable, &cwd, env)).await.map_err(|e| e.to_string())?;
    let outcome = stream_cell(&kernel, &code).await;
    kernel.shutdown().await;
    outcome
}

async fn stream_cell(kernel: &Kernel, code: &str) -> Result<ExitCode, String> {
    let mut execution = kernel.execute(code).await.map_err(|e| e.to_string())?;
    let mut interrupts = 0;
    loop {
        let item = tokio::select! {
            item = execution.next() => item,
            _ = tokio::signal::ctrl_c() => {
                interrupts += 1;
                if interrupts == 1 {
                    eprintln!("\nevalkit: interrupting (press Ctrl-C again to kill the kernel)");
                    let _ = kernel.interrupt();
                } else {
                    eprintln!("\nevalkit: killing the kernel");
                    kernel.kill().await;
                }
                continue;
            }
        };
        let Some(item) = item else {
            return Err("the kernel stopped answering".into());
        };
        match item {
            Ok(ExecEvent::Started) => {}
            Ok(ExecEvent::Stdout(text)) => write_out(&mut std::io::stdout(), &text),
            Ok(ExecEvent::Stderr(text)) => write_out(&mut std::io::stderr(), &text),
            Ok(ExecEvent::Result { bundle, .. }) | Ok(ExecEvent::Display { bundle, .. }) => {
                write_out(&mut std::io::stdout(), &format!("{}\n", plain_text(&bundle)));
            }
            Ok(ExecEvent::Error(error)) => {
                let text: String = error.traceback.concat();
                let text = if text.is_empty() { format!("{}: {}\n", error.ename, error.evalue) } else { text };
                write_out(&mut std::io::stderr(), &text);
            }
            Ok(ExecEvent::Done(done)) => {
                return Ok(match (done.status, done.cancelled) {
                    (_, true) => ExitCode::from(130),
                    (DoneStatus::Ok, _) => ExitCode::SUCCESS,
                    (DoneStatus::Error, _) => ExitCode::from(1),
                });
            }
            Err(error) => {
                eprintln!("evalkit: {error}");
                return Ok(ExitCode::from(if interrupts > 0 { 130 } else { 1 }));
            }
        }
    }
}

/// The text to show for a bundle: `text/plain`, or a note naming what is there.
fn plain_text(bundle: &evalkit::protocol::MimeBundle) -> String {
    match bundle.get("text/plain").and_then(|v| v.as_str()) {
        Some(text) => text.to_string(),
        None => format!("[{}]", bundle.keys().cloned().collect::<Vec<_>>().join(", ")),
    }
}

fn write_out(stream: &mut dyn Write, text: &str) {
    let _ = stream.write_all(text.as_bytes());
    let _ = stream.flush();
}
