//! `cellbox install --client …` and `cellbox uninstall --client …`.

use std::process::ExitCode;

use cellbox::install::{self, Change, Home, Server};

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The agents to configure: claude, claude-desktop, codex, cursor, vscode, gemini, windsurf
    /// (repeat or separate with commas).
    #[arg(long, required = true, value_delimiter = ',', value_name = "CLIENT")]
    client: Vec<String>,
    #[command(flatten)]
    entry: Entry,
    /// The program the client starts [default: as this binary was installed: `npx -y cellbox` from npx's
    /// cache, `uvx cellbox` from uv's, else this binary's path (pipx, uv tool, pip, npm, cargo)].
    #[arg(long, value_name = "PROGRAM")]
    command: Option<String>,
    /// Extra flags for `cellbox mcp`, e.g. `--args --cwd ~/project --no-js` (everything after --args).
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "FLAG")]
    args: Vec<String>,
}

/// Which entry of a client's list, and whether to write it: the same for install and uninstall.
#[derive(Debug, clap::Args)]
struct Entry {
    /// The server's name in the client's list.
    #[arg(long, default_value = "cellbox")]
    name: String,
    /// Show the change to each file as a diff, and write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    /// The agents to remove cellbox from (repeat or separate with commas).
    #[arg(long, required = true, value_delimiter = ',', value_name = "CLIENT")]
    client: Vec<String>,
    #[command(flatten)]
    entry: Entry,
}

/// Every client's change is planned before any is written, so a bad file or
/// an unknown client leaves every file untouched.
fn run(
    clients: &[String],
    dry_run: bool,
    plan: impl Fn(&'static install::Client, &Home) -> Result<Change, install::InstallError>,
) -> ExitCode {
    let home = match Home::from_env() {
        Ok(home) => home,
        Err(message) => {
            eprintln!("cellbox: {message}");
            return ExitCode::from(2);
        }
    };
    let mut changes = Vec::new();
    for name in clients {
        let planned = install::find(name).and_then(|client| plan(client, &home));
        match planned {
            Ok(change) => changes.push(change),
            Err(message) => {
                eprintln!("cellbox: {message}");
                return ExitCode::from(2);
            }
        }
    }
    let mut failed = false;
    for change in &changes {
        let (title, path) = (change.client.title, change.path.display());
        if !change.changes() {
            println!("{title}: {path} already as wanted, nothing to change");
        } else if dry_run {
            println!("{title}: would change {path}");
            print!("{}", change.diff());
        } else {
            match change.apply() {
                Ok(Some(backup)) => println!("{title}: updated {path} (previous file kept as {})", backup.display()),
                Ok(None) => println!("{title}: created {path}"),
                Err(message) => {
                    eprintln!("cellbox: {title}: {message}");
                    failed = true;
                }
            }
        }
    }
    if failed { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

pub fn install(args: InstallArgs) -> ExitCode {
    let (command, mut server_args) = match args.command {
        Some(command) => (command, Vec::new()),
        None => match install::channel::current() {
            Ok(installed) => (installed.command, installed.args),
            Err(e) => {
                eprintln!("cellbox: cannot tell where this binary is ({e}); pass --command /path/to/cellbox");
                return ExitCode::from(2);
            }
        },
    };
    server_args.push("mcp".into());
    server_args.extend(args.args);
    let server = Server { name: args.entry.name, command, args: server_args };
    run(&args.client, args.entry.dry_run, |client, home| install::plan_install(client, home, &server))
}

pub fn uninstall(args: UninstallArgs) -> ExitCode {
    run(&args.client, args.entry.dry_run, |client, home| install::plan_uninstall(client, home, &args.entry.name))
}
