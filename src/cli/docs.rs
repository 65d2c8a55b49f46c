//! `cellbox completions bash|zsh|fish` and `cellbox man`: generated from the
//! command-line definition itself, so they never drift from it.

use std::process::ExitCode;

use clap::CommandFactory;

use super::Cli;

/// A shell to complete for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell, e.g. `cellbox completions bash > ~/.local/share/bash-completion/completions/cellbox`.
    shell: Shell,
}

pub fn completions(args: CompletionsArgs) -> ExitCode {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut Cli::command(), "cellbox", &mut std::io::stdout());
    ExitCode::SUCCESS
}

/// The man page (roff) for `cellbox` with every subcommand in it.
pub fn man() -> ExitCode {
    let command = Cli::command();
    let page = clap_mangen::Man::new(command.clone());
    let mut out = Vec::new();
    let rendered = page.render(&mut out).and_then(|()| {
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            let name = format!("cellbox-{}", sub.get_name());
            let sub = sub.clone().display_name(name).version(super::VERSION);
            clap_mangen::Man::new(sub).render(&mut out)?;
        }
        Ok(())
    });
    if let Err(error) = rendered.and_then(|()| std::io::Write::write_all(&mut std::io::stdout(), &out)) {
        eprintln!("cellbox: could not write the man page: {error}");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
