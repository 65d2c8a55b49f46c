//! Images in a terminal: drawn inline where the terminal has an image
//! protocol (kitty, iTerm2, sixel), otherwise saved to a file and named.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Whether this terminal can draw images. Only asked on a TTY.
pub fn terminal_supports_images() -> bool {
    viuer::get_kitty_support() != viuer::KittySupport::None
        || viuer::is_iterm_supported()
        || viuer::is_sixel_supported()
}

/// Draw inline (returns None), or save under `folder` and return the line to print.
pub fn place_image(mime: &str, data_base64: &str, inline: bool, folder: &Path) -> Option<String> {
    let bytes = STANDARD.decode(data_base64.trim()).ok();
    let decoded = bytes.as_deref().and_then(|b| image::load_from_memory(b).ok());
    let size = decoded.as_ref().map(|img| format!(" {}×{}", img.width(), img.height())).unwrap_or_default();
    if inline && let Some(img) = &decoded {
        let config = viuer::Config { absolute_offset: false, width: Some(80), ..Default::default() };
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
