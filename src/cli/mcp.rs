//! `cellbox mcp`: serve the eval tool over MCP on stdin/stdout.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use cellbox_engine::tool::{EvalEngine, KernelMode};

use cellbox_settings::{self as settings, Environment};

use super::KernelArgs;

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    engine: EngineArgs,
    /// Also show the sessions in a browser: a web view on this loopback address (a free port when
    /// given no value), whose one-time link is printed on stderr.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    ui: Option<std::net::SocketAddr>,
}

/// How an MCP server's engine runs kernels (`cellbox mcp` and `cellbox serve`).
#[derive(Debug, clap::Args)]
pub struct EngineArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    /// Check cells before running them: `syntax` runs none if a cell does not parse (the error
    /// shows its caret); `lint` also adds `ruff check` findings on Python cells as notes [default: off].
    #[arg(long, value_name = "off|syntax|lint", env = settings::CHECK.name, hide_env_values = true)]
    check: Option<cellbox_engine::tool::CheckMode>,
    /// Keep kernels across calls (`session`) or start one per call (`per-call`).
    #[arg(long, value_enum, default_value = "session")]
    mode: Mode,
    /// Bytes of text a result shows before eliding the middle.
    #[arg(long, value_name = "BYTES", default_value_t = 50 * 1024)]
    max_output_bytes: usize,
    /// Lines of text a result shows before eliding the middle.
    #[arg(long, value_name = "LINES", default_value_t = 3000)]
    max_output_lines: usize,
    /// Live kernels at most (least recently used idle ones are stopped first).
    #[arg(long, value_name = "N", default_value_t = 8)]
    max_kernels: usize,
    /// Stop kernels unused for this many minutes (0: never).
    #[arg(long, value_name = "MINUTES", default_value_t = 30)]
    idle_minutes: u64,
    /// Warm spare kernels kept ready per kernel configuration in use, so a
    /// reset, a per-call call, a new session or a wake from hibernation
    /// starts at once (0: none).
    #[arg(long, value_name = "N", default_value_t = 1)]
    spares: usize,
    /// Checkpoints each session keeps for undo: its Python kernel is forked
    /// before every call (0: off; a call may still ask with `checkpoint`) [default: 0].
    #[arg(long, value_name = "N", env = settings::CHECKPOINTS.name, hide_env_values = true)]
    checkpoints: Option<usize>,
    /// Private memory a session's checkpoints may hold together; the oldest
    /// go first [default: 1G].
    #[arg(
        long,
        value_name = "SIZE",
        value_parser = cellbox_kernels::sandbox::parse_size,
        env = settings::CHECKPOINT_MEMORY.name,
        hide_env_values = true
    )]
    checkpoint_memory: Option<u64>,
    /// Hibernate an idle or evicted session's Python kernel (variables saved to disk, brought back
    /// at its next call) instead of losing its state [default: on].
    #[arg(long, value_name = "on|off", env = settings::HIBERNATE.name, hide_env_values = true,
          value_parser = clap::builder::BoolishValueParser::new())]
    hibernate: Option<bool>,
    /// Hibernate a session's Python kernel unused this many seconds [default: at --idle-minutes].
    #[arg(long, value_name = "SECONDS", env = settings::HIBERNATE_AFTER.name, hide_env_values = true,
          value_parser = parse_seconds)]
    hibernate_after: Option<Duration>,
    /// Keep hibernated sessions in this folder: every session is hibernated at exit and found again
    /// at the next start on the folder (one cellbox at a time per folder).
    #[arg(long, value_name = "DIR", env = settings::STATE_DIR.name, hide_env_values = true)]
    state_dir: Option<std::path::PathBuf>,
    /// Refuse Python cells (as CELLBOX_PY=off).
    #[arg(long)]
    no_py: bool,
    /// Refuse JavaScript cells (as CELLBOX_JS=off).
    #[arg(long)]
    no_js: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Mode {
    Session,
    PerCall,
}

impl EngineArgs {
    /// Whether `--network` (or `CELLBOX_NETWORK`) was given.
    pub fn names_a_network(&self) -> bool {
        self.kernel.network.is_some()
    }

    /// The engine configuration these options describe, with the variables of `env` no flag sets.
    pub fn engine_config(&self, env: &Environment) -> Result<cellbox_engine::tool::EngineConfig, String> {
        let mut config = self.kernel.engine_config(env)?;
        config.mode = match self.mode {
            Mode::Session => KernelMode::Session,
            Mode::PerCall => KernelMode::PerCall,
        };
        config.text_limits.max_bytes = self.max_output_bytes.max(1024);
        config.text_limits.max_lines = self.max_output_lines.max(10);
        config.pool.max_kernels = self.max_kernels.max(1);
        config.pool.idle_timeout = (self.idle_minutes > 0).then(|| Duration::from_secs(self.idle_minutes * 60));
        config.exposure.py &= !self.no_py;
        // `--no-py` alone means JavaScript only (as CELLBOX_PY=off).
        config.exposure.js &= !self.no_js;
        config.spare.count = self.spares;
        config.checkpoints.count = self.checkpoints.unwrap_or(config.checkpoints.count);
        config.checkpoints.memory_bytes = self.checkpoint_memory.unwrap_or(config.checkpoints.memory_bytes);
        config.check = self.check.unwrap_or(config.check);
        config.hibernate = self.hibernate.unwrap_or(config.hibernate);
        config.pool.hibernate_after = self.hibernate_after.or(config.pool.hibernate_after);
        if let Some(dir) = &self.state_dir {
            let dir = std::path::absolute(dir).map_err(|e| format!("--state-dir {}: {e}", dir.display()))?;
            if !config.hibernate {
                return Err("--state-dir keeps hibernated sessions, but hibernation is off (--hibernate off)".into());
            }
            config.state_dir = Some(dir);
            config.check_state_dir()?;
        }
        Ok(config)
    }

    /// Hold the state folder for this process, if one was given: a second cellbox on it is refused.
    pub fn lock_state_dir(&self, config: &cellbox_engine::tool::EngineConfig) -> Result<Option<std::fs::File>, String> {
        let Some(dir) = &config.state_dir else { return Ok(None) };
        cellbox_engine::session::hibernate::lock_state_dir(dir).map(Some).map_err(|e| e.to_string())
    }
}

/// Seconds above zero, a fraction allowed (`90`, `0.5`).
fn parse_seconds(value: &str) -> Result<Duration, String> {
    match value.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(Duration::from_secs_f64(seconds)),
        _ => Err(format!("{value:?} is not a number of seconds above zero")),
    }
}

pub async fn mcp(args: McpArgs, env: &Environment) -> ExitCode {
    let mut config = match args.engine.engine_config(env) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("cellbox: {message}");
            return ExitCode::from(2);
        }
    };
    // Cells' completion()/agent() are answered by the connected client (MCP sampling).
    let sampling = Arc::new(cellbox::mcp::sampling::SamplingBridge::default());
    config.bridge.bridge = Some(sampling.clone());
    let _state = match args.engine.lock_state_dir(&config) {
        Ok(lock) => lock,
        Err(message) => {
            eprintln!("cellbox mcp: {message}");
            return ExitCode::from(2);
        }
    };
    let engine = match EvalEngine::try_new(config) {
        Ok(engine) => Arc::new(engine),
        Err(error) => {
            eprintln!("cellbox mcp: cannot use the state folder: {error}");
            return ExitCode::from(2);
        }
    };
    let ui_stop = tokio_util::sync::CancellationToken::new();
    let _ui_stop = ui_stop.clone().drop_guard();
    if let Some(address) = args.ui
        && let Err(message) = start_ui(address, &engine, ui_stop).await
    {
        eprintln!("cellbox mcp: {message}");
        return ExitCode::from(2);
    }
    // The first kernel starts now, while the client is still connecting.
    let warm = engine.clone();
    tokio::spawn(async move { warm.prewarm().await });
    match cellbox::mcp::serve_stdio(engine, Some(sampling)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // The client may have taken stderr with it: eprintln! would panic.
            let _ = writeln!(std::io::stderr(), "cellbox mcp: {error}");
            ExitCode::from(1)
        }
    }
}

/// The web view on `address`, its one-time link printed on stderr.
async fn start_ui(
    address: std::net::SocketAddr,
    engine: &Arc<EvalEngine>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), String> {
    use cellbox::web::ui;
    let (link, code) = ui::OneTimeLink::new(cellbox::serve::LOCAL_PRINCIPAL, engine.clone())?;
    let bound = ui::listen(address, ui::Ui::new(Box::new(link), false, stop)).await?;
    eprintln!(
        "cellbox mcp: the web view is on http://{bound}/ui/#once={code} (a one-time link: it signs in one browser)"
    );
    Ok(())
}
