//! Images in a terminal: drawn inline where the terminal has an image
//! protocol (kitty, iTerm2, sixel), otherwise saved to a file and named.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// An image protocol the terminal speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Kitty,
    Iterm,
    Sixel,
}

/// The terminal's image protocol, from `CELLBOX_IMAGES` (`kitty`, `iterm`,
/// `sixel`, `none`) or else from what the terminal says about itself in its
/// environment. The terminal is never queried: a terminal that does not
/// answer a query would hang the session.
pub fn terminal_protocol() -> Option<Protocol> {
    static CHOICE: std::sync::OnceLock<Option<Protocol>> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| {
        let var = |name: &str| std::env::var(name).unwrap_or_default();
        match crate::settings::IMAGES.get().unwrap_or_default().to_ascii_lowercase().as_str() {
            "kitty" => return Some(Protocol::Kitty),
            "iterm" | "iterm2" => return Some(Protocol::Iterm),
            "sixel" => return Some(Protocol::Sixel),
            "none" | "never" | "off" | "0" => return None,
            _ => {}
        }
        let term = var("TERM");
        let program = var("TERM_PROGRAM");
        if term == "xterm-kitty" || !var("KITTY_WINDOW_ID").is_empty() || program == "ghostty" {
            Some(Protocol::Kitty)
        } else if program == "iTerm.app" || program == "WezTerm" || var("LC_TERMINAL") == "iTerm2" {
            Some(Protocol::Iterm)
        } else {
            None
        }
    })
}

/// Draw inline (returns None), or save under `folder` and return the line to print.
pub fn place_image(mime: &str, data_base64: &str, inline: bool, folder: &Path) -> Option<String> {
    let bytes = STANDARD.decode(data_base64.trim()).ok();
    let decoded = bytes.as_deref().and_then(|b| image::load_from_memory(b).ok());
    let size = decoded.as_ref().map(|img| format!(" {}×{}", img.width(), img.height())).unwrap_or_default();
    if inline && let (Some(img), Some(protocol)) = (&decoded, terminal_protocol()) {
        let config = viuer::Config {
            absolute_offset: false,
            width: Some(80),
            use_kitty: protocol == Protocol::Kitty,
            use_iterm: protocol == Protocol::Iterm,
            use_sixel: protocol == Protocol::Sixel,
            ..Default::default()
        };
        if viuer::print(img, &config).is_ok() {
            return None;
        }
    }
    let Some(bytes) = bytes else { return Some(format!("[{mime}{size}: not valid base64]")) };
    match save(mime, &bytes, folder) {
        Ok(path) => Some(format!("[{mime}{size} → {}]", path.display())),
        Err(error) => Some(format!("[{mime}{size}: could not be saved: {error}]")),
    }
}

fn save(mime: &str, bytes: &[u8], folder: &Path) -> std::io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    std::fs::create_dir_all(folder)?;
    let extension = if mime == "image/jpeg" { "jpg" } else { "png" };
    let name = format!("image-{}-{}.{extension}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    let path = folder.join(name);
    std::fs::write(&path, bytes)?;
    Ok(path)
}
