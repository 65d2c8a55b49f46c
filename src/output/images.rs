//! Images for models: decoded only to learn their size and, when larger than
//! [`MAX_IMAGE_SIDE`], downscaled so a plot does not cost a model thousands
//! of tokens or get rejected by its API.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use image::{ImageFormat, imageops::FilterType};

/// Longest side, in pixels, of an image handed to a model.
pub const MAX_IMAGE_SIDE: u32 = 1568;

/// An image ready for a result.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PreparedImage {
    pub mime: String,
    /// Base64 data.
    pub data: String,
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// Size before downscaling, when it was downscaled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_size: Option<(u32, u32)>,
}

/// Decode, downscale if needed, re-encode. Undecodable data is passed on as it is.
pub fn prepare(mime: &str, data_base64: &str) -> PreparedImage {
    let as_is = PreparedImage {
        mime: mime.to_string(),
        data: data_base64.to_string(),
        width: None,
        height: None,
        original_size: None,
    };
    let Ok(bytes) = STANDARD.decode(data_base64.trim()) else { return as_is };
    let format = if mime == "image/jpeg" { ImageFormat::Jpeg } else { ImageFormat::Png };
    let Ok(decoded) = image::load_from_memory_with_format(&bytes, format) else { return as_is };
    let (width, height) = (decoded.width(), decoded.height());
    if width.max(height) <= MAX_IMAGE_SIDE {
        return PreparedImage { width: Some(width), height: Some(height), ..as_is };
    }
    let scaled = decoded.resize(MAX_IMAGE_SIDE, MAX_IMAGE_SIDE, FilterType::Triangle);
    let mut out = std::io::Cursor::new(Vec::new());
    let encoded = if format == ImageFormat::Jpeg {
        scaled.to_rgb8().write_to(&mut out, ImageFormat::Jpeg)
    } else {
        scaled.write_to(&mut out, ImageFormat::Png)
    };
    if encoded.is_err() {
        return PreparedImage { width: Some(width), height: Some(height), ..as_is };
    }
    PreparedImage {
        mime: mime.to_string(),
        data: STANDARD.encode(out.into_inner()),
        width: Some(scaled.width()),
        height: Some(scaled.height()),
        original_size: Some((width, height)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> String {
        let image = image::RgbImage::from_pixel(width, height, image::Rgb([200, 10, 10]));
        let mut out = std::io::Cursor::new(Vec::new());
        image.write_to(&mut out, ImageFormat::Png).unwrap();
        STANDARD.encode(out.into_inner())
    }

    #[test]
    fn small_images_pass_with_their_size() {
        let prepared = prepare("image/png", &png(640, 480));
        assert_eq!((prepared.width, prepared.height), (Some(640), Some(480)));
        assert_eq!(prepared.original_size, None);
    }

    #[test]
    fn large_images_are_downscaled_keeping_aspect() {
        let prepared = prepare("image/png", &png(4000, 1000));
        assert_eq!((prepared.width, prepared.height), (Some(1568), Some(392)));
        assert_eq!(prepared.original_size, Some((4000, 1000)));
        let decoded = image::load_from_memory(&STANDARD.decode(&prepared.data).unwrap()).unwrap();
        assert_eq!(decoded.width(), 1568);
    }

    #[test]
    fn garbage_is_passed_on() {
        let prepared = prepare("image/png", "not base64 at all");
        assert_eq!(prepared.data, "not base64 at all");
        assert_eq!(prepared.width, None);
    }
}
