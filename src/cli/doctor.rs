//! `cellbox doctor [--json]`: what cellbox will use here and what is wrong,
//! on one screen (or as JSON for a bug report).

use std::process::ExitCode;

use cellbox::doctor::{self, DoctorInput, Report, Severity};

use super::KernelArgs;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    kernel: KernelArgs,
}

/// Exit 0 when cells can run (warnings allowed), 1 when a problem stops them, 2 on bad options.
pub async fn doctor(args: DoctorArgs, env: &cellbox_settings::Environment) -> ExitCode {
    let cwd = match args.kernel.cwd() {
        Ok(cwd) => cwd,
        Err(message) => {
            eprintln!("cellbox: {message}");
            return ExitCode::from(2);
        }
    };
    let input =
        DoctorInput { cwd, python: args.kernel.explicit_python(), node: args.kernel.node.clone(), env: env.clone() };
    let report = tokio::task::spawn_blocking(move || doctor::examine(&input)).await.expect("the doctor does not panic");
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("the report serialises"));
    } else {
        print!("{}", render(&report));
    }
    if report.problems.iter().any(|p| p.severity == Severity::Error) { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

fn yes_no(flag: bool) -> &'static str {
    if flag { "yes" } else { "no" }
}

/// `1536` → `1.5 KiB`.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

fn tool_line(name: &str, tool: &doctor::ToolReport) -> String {
    match (&tool.path, tool.found) {
        (Some(path), true) => {
            format!("{name:<10}{} ({})\n", path.display(), tool.version.as_deref().unwrap_or("version unknown"))
        }
        _ => format!("{name:<10}not available: {}\n", tool.detail),
    }
}

/// The report as text, one section a few lines.
fn render(report: &Report) -> String {
    let mut out = format!("cellbox {} ({}) on {}\n", report.version, report.revision, report.os);
    if let Some(installed) = &report.installed {
        let launch: Vec<&str> =
            std::iter::once(installed.command.as_str()).chain(installed.args.iter().map(String::as_str)).collect();
        out.push_str(&format!(
            "installed {}: `cellbox install --client …` registers `{} mcp`\n",
            installed.channel.title(),
            launch.join(" ")
        ));
    }
    out.push_str(&format!("cwd       {}\n\nPython\n", report.cwd.display()));
    for candidate in &report.python.candidates {
        let mark = if candidate.state == "chosen" { "*" } else { " " };
        out.push_str(&format!(
            "  {mark} {:<42} {:<10} {}: {}\n",
            candidate.source,
            candidate.state,
            candidate.interpreter.display(),
            candidate.detail
        ));
    }
    match &report.python.chosen {
        Some(path) => out.push_str(&format!(
            "  chosen: {} (Python {}): {}\n",
            path.display(),
            report.python.version.as_deref().unwrap_or("?"),
            report.python.why
        )),
        None => out.push_str(&format!("  chosen: none: {}\n", report.python.why)),
    }
    if let Some(found) = &report.python.found {
        out.push_str(&format!("  found:  {found}\n"));
    }
    out.push_str("\nTools\n");
    for (name, tool) in [("node", &report.node), ("uv", &report.uv), ("pip", &report.pip)] {
        out.push_str("  ");
        out.push_str(&tool_line(name, tool));
        // Which stripper TypeScript cells get on that Node: the detail's part after `; `.
        if name == "node"
            && tool.found
            && let Some(typescript) = tool.detail.split("; ").nth(1)
        {
            out.push_str(&format!("  {:<10}{}\n", "", typescript.trim_end_matches(')')));
        }
    }
    let l = &report.languages;
    out.push_str(&format!(
        "\nLanguages  Python: enabled {}, available {}; JavaScript: enabled {}, available {}\n",
        yes_no(l.python_enabled),
        yes_no(l.python_available),
        yes_no(l.javascript_enabled),
        yes_no(l.javascript_available)
    ));
    out.push_str("\nJupyter kernels (cells pick one with \"kernel\": \"<name>\"; R cells get an R one)\n");
    if report.jupyter_kernels.is_empty() {
        out.push_str(
            "  none installed (`jupyter kernelspec list` shows what Jupyter finds; cellbox looks in the same places)\n",
        );
    }
    for kernel in &report.jupyter_kernels {
        out.push_str(&format!(
            "  {:<12} {:<10} {} ({})\n",
            kernel.name,
            kernel.language,
            kernel.display_name,
            kernel.path.display()
        ));
    }
    out.push_str("\nSandbox\n");
    for entry in &report.sandbox {
        out.push_str(&format!("  {:<10} {:<12} {}\n", entry.name, entry.status, entry.detail));
    }
    let gateway = &report.gateway;
    out.push_str(&match &gateway.url {
        Some(url) => format!("\nGateway   {url} (token {})\n", if gateway.token_set { "set" } else { "not set" }),
        None => "\nGateway   not configured (CELLBOX_GATEWAY_URL): kernels run on this machine\n".to_string(),
    });
    if report.settings.is_empty() {
        out.push_str("\nSettings  no CELLBOX_* variable is set (`cellbox docs env-vars` lists them)\n");
    } else {
        out.push_str("\nSettings\n");
        for setting in &report.settings {
            let value = setting.value.as_deref().unwrap_or("(set; not shown)");
            out.push_str(&format!("  {:<32} {value}\n", setting.name));
        }
    }
    out.push_str("\nFolders\n");
    for folder in &report.folders {
        let content = if folder.exists {
            format!("{} in {} files", size(folder.bytes), folder.files)
        } else {
            "not created yet".to_string()
        };
        let setting = folder.setting.as_deref().map(|s| format!(" [{s}]")).unwrap_or_default();
        out.push_str(&format!("  {:<28} {} ({content}){setting}\n", folder.name, folder.path.display()));
    }
    let limits = &report.limits;
    out.push_str(&format!(
        "\nLimits    cell timeout {}s (at most {}s); output {} / {} lines a call; {} kernels, idle stop {}; kernel \
         memory {}; artifacts up to {}, kept {} days\n",
        limits.cell_timeout_secs,
        limits.max_cell_timeout_secs,
        size(limits.max_output_bytes as u64),
        limits.max_output_lines,
        limits.max_kernels,
        limits.idle_minutes.map(|m| format!("{m} min")).unwrap_or_else(|| "never".into()),
        limits.kernel_memory_bytes.map(size).unwrap_or_else(|| "unlimited".into()),
        size(limits.max_artifact_bytes),
        limits.artifact_retention_days
    ));
    if report.problems.is_empty() {
        out.push_str("\nNo problems found.\n");
    } else {
        out.push_str("\nProblems\n");
        for problem in &report.problems {
            let label = match problem.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            out.push_str(&format!("  {label}: {}\n    fix: {}\n", problem.what, problem.fix));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(4 * 1024 * 1024 * 1024), "4.0 GiB");
    }
}
