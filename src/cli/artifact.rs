//! `cellbox artifact <id>`: print the full output saved by an earlier call.

use std::io::Write;
use std::process::ExitCode;

use cellbox_engine::output::artifacts::{ArtifactStore, DEFAULT_MAX_ARTIFACT_BYTES};

#[derive(Debug, clap::Args)]
pub struct ArtifactArgs {
    /// The id, or the whole `artifact://<id>` link.
    id: String,
    /// Start at this byte.
    #[arg(long, default_value_t = 0)]
    offset: u64,
    /// Print at most this many bytes [default: all].
    #[arg(long)]
    limit: Option<usize>,
}

pub fn artifact(args: ArtifactArgs) -> ExitCode {
    let store = ArtifactStore::new(ArtifactStore::default_root(), DEFAULT_MAX_ARTIFACT_BYTES);
    let mut offset = args.offset;
    let mut left = args.limit.unwrap_or(usize::MAX);
    let mut stdout = std::io::stdout().lock();
    // Page through the file so a large artifact never sits in memory whole.
    while left > 0 {
        let page = left.min(1 << 20);
        match store.read(&args.id, offset, page) {
            Ok((text, size)) => {
                if text.is_empty() {
                    break;
                }
                if stdout.write_all(text.as_bytes()).is_err() {
                    return ExitCode::SUCCESS; // the reader went away (e.g. `| head`)
                }
                offset += text.len() as u64;
                left = left.saturating_sub(text.len());
                if offset >= size {
                    break;
                }
            }
            Err(error) => {
                eprintln!("cellbox: {error}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
