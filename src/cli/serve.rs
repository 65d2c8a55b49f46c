//! `cellbox serve`: the MCP server over streamable HTTP for many clients, and
//! `cellbox serve token add|list|revoke` to manage who may use it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use cellbox::serve::{Auth, ServeConfig, tokens};
use cellbox_settings as settings;

use super::mcp::EngineArgs;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ServeArgs {
    #[command(subcommand)]
    what: Option<ServeCommand>,
    /// Address and port to listen on; port 0 picks a free one (printed on stderr).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8740")]
    listen: SocketAddr,
    /// Serve without auth: every client is the one principal `local`. Only on a loopback address.
    #[arg(long)]
    no_auth: bool,
    /// The tokens file [default: $XDG_CONFIG_HOME/cellbox/serve-tokens.json].
    #[arg(long, value_name = "FILE", env = settings::SERVE_TOKENS.name, hide_env_values = true)]
    tokens: Option<PathBuf>,
    /// Folder holding each principal's working folder (`<DIR>/<principal>`) [default: the current directory].
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Another `Host` header value to accept, e.g. `cellbox.example.com` (repeatable); loopback names always pass.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// A browser origin allowed to call, e.g. `https://app.example.com:443` (repeatable); by default
    /// requests that carry an `Origin` are refused.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    /// Largest request body accepted.
    #[arg(long, value_name = "BYTES", default_value_t = 4 * 1024 * 1024)]
    max_body_bytes: usize,
    /// Seconds calls in progress may go on after SIGINT/SIGTERM before they are cancelled.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    shutdown_grace: u64,
    /// Also accept access tokens (JWTs) of this OAuth authorization server; its `sub` names the
    /// principal (as `jwt-<sub>`). Needs --jwt-audience.
    #[arg(long, value_name = "URL", requires = "jwt_audience")]
    jwt_issuer: Option<String>,
    /// The audience JWTs must name (usually this server's MCP URL).
    #[arg(long, value_name = "AUDIENCE", requires = "jwt_issuer")]
    jwt_audience: Option<String>,
    /// The issuer's signing keys: a JWKS URL or file [default: <issuer>/.well-known/jwks.json].
    #[arg(long, value_name = "URL|FILE", requires = "jwt_issuer")]
    jwks: Option<String>,
    /// Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// MCP requests in progress at most, over all principals; more are answered 429 (retry).
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_calls: usize,
    /// Open SDK sandboxes at most, over all principals; more are answered 429 (retry).
    #[arg(long, value_name = "N", default_value_t = 32)]
    max_sandboxes: usize,
    /// Open connections at most; one more is closed at once.
    #[arg(long, value_name = "N", default_value_t = 512)]
    max_connections: usize,
    /// Open connections from one IP address at most; one more is closed at once.
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_connections_per_ip: usize,
    /// Seconds a client may stall: a request's headers must arrive within them (an idle kept-alive
    /// connection is closed after them too), and a request's body may not go quiet for longer.
    #[arg(long, value_name = "SECONDS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
    client_timeout: u64,
    /// Live kernels at most over all principals and sandboxes (warm spares included; --max-kernels is
    /// per session engine); a start beyond it fails with a retry hint.
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_kernels_total: usize,
    /// The share, in percent, of --max-calls, --max-sandboxes and --max-kernels-total that one principal
    /// may take, unless its token sets its own limits; more are answered 429 (retry).
    #[arg(long, value_name = "PERCENT", default_value_t = 25, value_parser = clap::value_parser!(u8).range(1..=100))]
    principal_share: u8,
    /// Print the variables that point E2B's SDKs (`e2b`, `e2b_code_interpreter`, `@e2b/code-interpreter`)
    /// at this server once it listens (its E2B-compatible API is always served; docs/e2b.md).
    #[arg(long)]
    e2b: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Debug, clap::Subcommand)]
enum ServeCommand {
    /// Manage the bearer tokens clients sign in with.
    Token {
        #[command(subcommand)]
        what: TokenCommand,
        /// The tokens file [default: $XDG_CONFIG_HOME/cellbox/serve-tokens.json].
        #[arg(long, value_name = "FILE", global = true, env = settings::SERVE_TOKENS.name, hide_env_values = true)]
        tokens: Option<PathBuf>,
    },
}

#[derive(Debug, clap::Subcommand)]
enum TokenCommand {
    /// Make a token for a new principal and print it (only once: the file keeps its hash).
    Add {
        /// The principal's name: letters, digits, `-` and `_`.
        name: String,
        /// Live kernels of this principal at most (within the server's --max-kernels).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        max_kernels: Option<u64>,
        /// MCP requests of this principal in progress at most; more are answered 429 (retry).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        max_calls: Option<u64>,
        /// Open SDK sandboxes of this principal at most; more are answered 429 (retry).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        max_sandboxes: Option<u64>,
        /// Memory for each of its kernels and what it starts (within the server's --memory-limit).
        #[arg(long, value_name = "SIZE", value_parser = cellbox_kernels::sandbox::parse_size)]
        memory_limit: Option<u64>,
        /// Its kernels' network, in place of the server's --network: on, off, localhost, or
        /// allow:HOST,…;deny:HOST,… (e.g. allow:pypi,api.example.com).
        #[arg(long, value_name = "MODE")]
        network: Option<cellbox_kernels::sandbox::NetworkSetting>,
        /// A credential its kernels use without seeing it (repeatable): NAME@HOST (the server's own
        /// variable NAME, read when the principal's engine starts) or NAME=VALUE@HOST (the value is
        /// kept in the tokens file). Needs --network naming HOST.
        #[arg(long = "secret", value_name = "NAME@HOST")]
        secrets: Vec<String>,
        /// Spell the token as E2B's SDKs expect an `E2B_API_KEY` (`e2b_` and hex), for `serve --e2b`.
        #[arg(long)]
        e2b: bool,
        /// Let this principal see and act on every principal's sessions in the web view (/ui):
        /// watch, interrupt, reset, fork, undo, download. Its own calls stay its own.
        #[arg(long)]
        admin: bool,
    },
    /// List the principals (names and when their tokens were made; never the tokens).
    List,
    /// Revoke a principal's token; a running server refuses it from the next request on.
    Revoke { name: String },
}

/// `--tokens` (or `CELLBOX_SERVE_TOKENS`), else the default.
fn tokens_path(flag: Option<PathBuf>) -> PathBuf {
    flag.filter(|path| !path.as_os_str().is_empty())
        .unwrap_or_else(|| cellbox_kernels::paths::config_root().join("serve-tokens.json"))
}

pub async fn serve(args: ServeArgs, env: &settings::Environment) -> ExitCode {
    if let Some(ServeCommand::Token { what, tokens }) = args.what {
        return token(what, tokens_path(tokens));
    }
    let tokens_file = tokens_path(args.tokens);
    let auth = if args.no_auth {
        Auth::Off
    } else {
        match tokens::TokenStore::open(Some(tokens_file.clone()), env.get(&settings::SERVE_TOKEN).map(str::to_string)) {
            Ok(tokens) => {
                let jwt = args.jwt_issuer.zip(args.jwt_audience).map(|(issuer, audience)| {
                    let keys = args
                        .jwks
                        .clone()
                        .unwrap_or_else(|| format!("{}/.well-known/jwks.json", issuer.trim_end_matches('/')));
                    cellbox::serve::jwt::KeySource::parse(&keys)
                        .map(|source| Box::new(cellbox::serve::jwt::JwtVerifier::new(issuer, audience, source)))
                });
                match jwt.transpose() {
                    Ok(jwt) => Auth::Bearer { tokens, jwt },
                    Err(error) => {
                        eprintln!("cellbox serve: {error}");
                        return ExitCode::from(2);
                    }
                }
            }
            Err(error) => {
                eprintln!("cellbox serve: {error}");
                return ExitCode::from(2);
            }
        }
    };
    let mut engine = match args.engine.engine_config(env) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("cellbox: {message}");
            return ExitCode::from(2);
        }
    };
    // A server's kernels belong to remote principals: unless told otherwise they reach the
    // package registries and model hubs, not everything (nor the cloud's metadata, nor the LAN).
    if !args.engine.names_a_network() {
        if cellbox_kernels::sandbox::support().network {
            engine.sandbox.set_network(cellbox_kernels::sandbox::network::server_default());
        } else {
            eprintln!(
                "cellbox serve: kernels get the host's network: this host has no network namespaces for the default \
                 `--network {}` (pass --network on to say so, or off)",
                cellbox_kernels::sandbox::network::SERVER_DEFAULT
            );
        }
    }
    // Kernels may not read the server's tokens file (hashes or not), nor its TLS key.
    engine.sandbox.deny_read.push(tokens_file);
    engine.sandbox.deny_read.extend(args.tls_key.iter().map(|key| std::path::absolute(key).unwrap_or(key.clone())));
    engine.kernel_budget = Some(cellbox_engine::session::KernelBudget::new(args.max_kernels_total));
    // Each principal's sessions are kept under <state-dir>/principals/<name>; one server per folder.
    let _state = match args.engine.lock_state_dir(&engine) {
        Ok(lock) => lock,
        Err(message) => {
            eprintln!("cellbox serve: {message}");
            return ExitCode::from(2);
        }
    };
    let root = match args.root.map_or_else(std::env::current_dir, std::path::absolute) {
        Ok(root) => root,
        Err(error) => {
            eprintln!("cellbox serve: cannot resolve the root folder: {error}");
            return ExitCode::from(2);
        }
    };
    let config = ServeConfig {
        listen: args.listen,
        auth,
        engine,
        root,
        allowed_hosts: args.allowed_hosts,
        allowed_origins: args.allowed_origins,
        max_body_bytes: args.max_body_bytes,
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
        max_calls: args.max_calls,
        max_sandboxes: args.max_sandboxes,
        shares: cellbox::serve::principals::Shares::of(
            args.principal_share,
            args.max_calls,
            args.max_sandboxes,
            args.max_kernels_total,
        ),
        tls: args.tls_cert.zip(args.tls_key),
        print_e2b: args.e2b,
        connections: cellbox::serve::listen::ConnectionLimits {
            max_connections: args.max_connections,
            max_connections_per_ip: args.max_connections_per_ip,
            client_timeout: Duration::from_secs(args.client_timeout),
        },
    };
    if let Err(error) = config.check() {
        eprintln!("cellbox serve: {error}");
        return ExitCode::from(2);
    }
    match cellbox::serve::serve(config, tokio_util::sync::CancellationToken::new()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cellbox serve: {error}");
            ExitCode::from(1)
        }
    }
}

/// A token's secrets, checked when it is made: each one's form, and that its
/// network lets kernels reach each one's host. A `NAME@HOST` secret's value is
/// the server's variable, read when the principal's engine starts, not now.
fn check_token_secrets(
    network: Option<&cellbox_kernels::sandbox::NetworkSetting>,
    secrets: &[String],
) -> Result<(), cellbox_kernels::sandbox::PolicyError> {
    let mut policy = cellbox_kernels::sandbox::SandboxPolicy::default();
    if let Some(network) = network {
        policy.set_network(network.clone());
    }
    for secret in secrets {
        let checked = match secret.rsplit_once('@') {
            Some((name, host)) if !name.contains('=') => format!("{name}=value@{host}"),
            _ => secret.clone(),
        };
        policy.secrets.push(checked.parse()?);
    }
    policy.check_secrets()
}

fn token(what: TokenCommand, path: PathBuf) -> ExitCode {
    let result = match what {
        TokenCommand::Add {
            name,
            max_kernels,
            max_calls,
            max_sandboxes,
            memory_limit,
            network,
            secrets,
            e2b,
            admin,
        } => {
            if let Err(error) = check_token_secrets(network.as_ref(), &secrets) {
                eprintln!("cellbox serve token: {error}");
                return ExitCode::from(2);
            }
            let limits = tokens::PrincipalLimits {
                max_kernels: max_kernels.map(|n| n as usize),
                max_calls: max_calls.map(|n| n as usize),
                max_sandboxes: max_sandboxes.map(|n| n as usize),
                memory_limit,
                network: network.map(|setting| setting.to_string()),
                secrets,
                admin,
            };
            let shape = if e2b { tokens::TokenShape::E2b } else { tokens::TokenShape::Cellbox };
            tokens::add(&path, &name, limits, shape).map(|token| {
                println!("{token}");
                let how = if e2b {
                    "E2B's SDKs send it as E2B_API_KEY (`cellbox serve --e2b` prints the other variables)"
                } else {
                    "clients send it as `Authorization: Bearer <token>`"
                };
                eprintln!("Made a token for {name:?} in {}. It is shown only this once: {how}.", path.display());
            })
        }
        TokenCommand::List => tokens::list(&path).map(|entries| {
            if entries.is_empty() {
                eprintln!("No tokens in {}; make one with `cellbox serve token add NAME`.", path.display());
            }
            for entry in entries {
                let limits = &entry.limits;
                let mut line = format!("{}\tcreated {}", entry.name, entry.created);
                if let Some(n) = limits.max_kernels {
                    line.push_str(&format!("\tmax kernels {n}"));
                }
                if let Some(n) = limits.max_calls {
                    line.push_str(&format!("\tmax calls {n}"));
                }
                if let Some(n) = limits.max_sandboxes {
                    line.push_str(&format!("\tmax sandboxes {n}"));
                }
                if let Some(bytes) = limits.memory_limit {
                    line.push_str(&format!("\tmemory limit {}", cellbox_engine::output::limiter::human_bytes(bytes)));
                }
                if let Some(network) = &limits.network {
                    line.push_str(&format!("\tnetwork {network}"));
                }
                if limits.admin {
                    line.push_str("\tadmin of the web view");
                }
                for secret in &limits.secrets {
                    let (name, host) =
                        (secret.split(['=', '@']).next().unwrap_or(""), secret.rsplit('@').next().unwrap_or(""));
                    line.push_str(&format!("\tsecret {name} for {host}"));
                }
                println!("{line}");
            }
        }),
        TokenCommand::Revoke { name } => tokens::revoke(&path, &name).map(|()| {
            eprintln!("Revoked {name:?}: its requests are refused from now on.");
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cellbox serve token: {error}");
            ExitCode::from(2)
        }
    }
}
