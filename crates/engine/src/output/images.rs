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

/// Most pixels an image may have for the host to decode and downscale it
/// (a 5000×5000 plot). A cell can make a far larger one in a few kilobytes
/// (a PNG of zeros compresses a thousandfold); decoding it would cost the
/// host, not the kernel's cgroup, hundreds of megabytes and seconds.
pub const MAX_DECODED_PIXELS: u64 = 25_000_000;

/// Most bytes reading an image's size may allocate.
const HEADER_ALLOC: u64 = 4 << 20;

/// Most bytes decoding an image may allocate (a 25-megapixel image in 8-bit RGBA).
const DECODE_ALLOC: u64 = MAX_DECODED_PIXELS * 4;

/// An image with more than [`MAX_DECODED_PIXELS`], or that would take more
/// than [`DECODE_ALLOC`] bytes to decode: not decoded, not shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    pub width: u32,
    pub height: u32,
}

/// Read the size from the header; downscale (decode, resize, re-encode) only
/// what is larger than [`MAX_IMAGE_SIDE`]. Undecodable data is passed on as it is.
pub fn prepare(mime: &str, data_base64: &str) -> Result<PreparedImage, TooLarge> {
    let as_is = PreparedImage {
        mime: mime.to_string(),
        data: data_base64.to_string(),
        width: None,
        height: None,
        original_size: None,
    };
    let Ok(bytes) = STANDARD.decode(data_base64.trim()) else { return Ok(as_is) };
    let format = if mime == "image/jpeg" { ImageFormat::Jpeg } else { ImageFormat::Png };
    // Each read may allocate at most `max_alloc`: reading the size alone can inflate a PNG's
    // colour profile, and a 16-bit image takes 8 bytes a pixel.
    let reader = |max_alloc: u64| {
        let mut reader = image::ImageReader::with_format(std::io::Cursor::new(&bytes), format);
        let mut limits = image::Limits::default();
        limits.max_alloc = Some(max_alloc);
        reader.limits(limits);
        reader
    };
    let Ok((width, height)) = reader(HEADER_ALLOC).into_dimensions() else { return Ok(as_is) };
    if width.max(height) <= MAX_IMAGE_SIDE {
        return Ok(PreparedImage { width: Some(width), height: Some(height), ..as_is });
    }
    if u64::from(width) * u64::from(height) > MAX_DECODED_PIXELS {
        return Err(TooLarge { width, height });
    }
    let decoded = match reader(DECODE_ALLOC).decode() {
        Ok(decoded) => decoded,
        Err(image::ImageError::Limits(_)) => return Err(TooLarge { width, height }),
        Err(_) => return Ok(as_is),
    };
    let scaled = decoded.resize(MAX_IMAGE_SIDE, MAX_IMAGE_SIDE, FilterType::Triangle);
    let mut out = std::io::Cursor::new(Vec::new());
    let encoded = if format == ImageFormat::Jpeg {
        scaled.to_rgb8().write_to(&mut out, ImageFormat::Jpeg)
    } else {
        scaled.write_to(&mut out, ImageFormat::Png)
    };
    if encoded.is_err() {
        return Ok(PreparedImage { width: Some(width), height: Some(height), ..as_is });
    }
    Ok(PreparedImage {
        mime: mime.to_string(),
        data: STANDARD.encode(out.into_inner()),
        width: Some(scaled.width()),
        height: Some(scaled.height()),
        original_size: Some((width, height)),
    })
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
        let prepared = prepare("image/png", &png(640, 480)).unwrap();
        assert_eq!((prepared.width, prepared.height), (Some(640), Some(480)));
        assert_eq!(prepared.original_size, None);
    }

    #[test]
    fn large_images_are_downscaled_keeping_aspect() {
        let prepared = prepare("image/png", &png(4000, 1000)).unwrap();
        assert_eq!((prepared.width, prepared.height), (Some(1568), Some(392)));
        assert_eq!(prepared.original_size, Some((4000, 1000)));
        let decoded = image::load_from_memory(&STANDARD.decode(&prepared.data).unwrap()).unwrap();
        assert_eq!(decoded.width(), 1568);
    }

    #[test]
    fn garbage_is_passed_on() {
        let prepared = prepare("image/png", "not base64 at all").unwrap();
        assert_eq!(prepared.data, "not base64 at all");
        assert_eq!(prepared.width, None);
    }

    /// The header of a 20000×20000 PNG (a cell can make the whole of one, all
    /// zeros, in a few hundred kilobytes; decoding it would take 1.2 GB): its
    /// size is read from the header, and it stops there.
    #[test]
    fn an_image_bomb_is_measured_never_decoded() {
        fn crc32(bytes: &[u8]) -> u32 {
            let mut crc = !0u32;
            for &byte in bytes {
                crc ^= u32::from(byte);
                for _ in 0..8 {
                    crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
                }
            }
            !crc
        }
        let mut header = b"IHDR".to_vec();
        header.extend(20_000u32.to_be_bytes());
        header.extend(20_000u32.to_be_bytes());
        header.extend([8, 2, 0, 0, 0]); // 8 bits, RGB, deflate, no filter, no interlace
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend(13u32.to_be_bytes());
        png.extend(&header);
        png.extend(crc32(&header).to_be_bytes());
        // The decoder knows the header once it meets the first data chunk.
        let data = [b"IDAT".as_slice(), &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]].concat();
        png.extend(8u32.to_be_bytes());
        png.extend(&data);
        png.extend(crc32(&data).to_be_bytes());
        assert_eq!(prepare("image/png", &STANDARD.encode(&png)), Err(TooLarge { width: 20_000, height: 20_000 }));
    }
}
