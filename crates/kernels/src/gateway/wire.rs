//! How Jupyter messages travel on a kernel's channels websocket.
//!
//! The legacy framing is one JSON text per message, which the server decodes
//! from the kernel's ZeroMQ parts (checking dates and signature) and encodes
//! again for every message. Servers on jupyter_server 2 also speak
//! `v1.kernel.websocket.jupyter.org`: the kernel's parts are forwarded as
//! they are, in one binary frame, which takes that work off the server's
//! path on every message of a round trip. Servers without it (Enterprise
//! Gateway on jupyter_server 1) keep the JSON framing.
//!
//! A v1 frame: `n` (u64, little endian), then `n` offsets (u64 LE) — where
//! the channel name starts, where each part starts, and the end — then the
//! channel name and the parts (header, parent header, metadata, content,
//! buffers), each part JSON.

use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// The websocket subprotocol of the binary framing.
pub const V1_PROTOCOL: &str = "v1.kernel.websocket.jupyter.org";

/// Which framing a websocket speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One JSON text per message.
    Json,
    /// `v1.kernel.websocket.jupyter.org` binary frames.
    V1,
}

/// `message` framed for a socket speaking `framing`.
pub fn frame(framing: Framing, message: &Value) -> Message {
    match framing {
        Framing::V1 => Message::binary(encode_v1(message)),
        Framing::Json => Message::text(message.to_string()),
    }
}

/// The four JSON parts of a message, in wire order.
const PARTS: [&str; 4] = ["header", "parent_header", "metadata", "content"];

/// A message (as the JSON framing has it) as a v1 frame.
pub fn encode_v1(message: &Value) -> Vec<u8> {
    let channel = message.get("channel").and_then(Value::as_str).unwrap_or("shell").as_bytes();
    let parts: Vec<Vec<u8>> = PARTS
        .iter()
        .map(|key| serde_json::to_vec(message.get(*key).unwrap_or(&json!({}))).unwrap_or_default())
        .collect();
    let count = parts.len() + 2;
    let mut offsets = Vec::with_capacity(count);
    offsets.push(8 * (1 + count));
    offsets.push(offsets[0] + channel.len());
    for part in &parts {
        offsets.push(offsets.last().unwrap() + part.len());
    }
    let mut frame = Vec::with_capacity(*offsets.last().unwrap());
    frame.extend_from_slice(&(count as u64).to_le_bytes());
    for offset in &offsets {
        frame.extend_from_slice(&(*offset as u64).to_le_bytes());
    }
    frame.extend_from_slice(channel);
    for part in &parts {
        frame.extend_from_slice(part);
    }
    frame
}

/// A v1 frame as the message the JSON framing would carry (binary buffers
/// are left out: cellbox's cells send none it reads); `None` if malformed.
pub fn decode_v1(frame: &[u8]) -> Option<Value> {
    let word = |index: usize| -> Option<usize> {
        let bytes = frame.get(8 * index..8 * index + 8)?;
        usize::try_from(u64::from_le_bytes(bytes.try_into().ok()?)).ok()
    };
    let count = word(0)?;
    if count < 2 + PARTS.len() || count > frame.len() / 8 {
        return None;
    }
    let offsets: Vec<usize> = (1..=count).map(word).collect::<Option<_>>()?;
    let slice = |index: usize| frame.get(offsets[index]..offsets[index + 1]);
    let channel = std::str::from_utf8(slice(0)?).ok()?;
    let mut message = json!({ "channel": channel, "buffers": [] });
    for (position, key) in PARTS.iter().enumerate() {
        message[*key] = serde_json::from_slice(slice(position + 1)?).ok()?;
    }
    Some(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_survives_the_v1_framing() {
        let message = json!({
            "header": {"msg_id": "a_1", "msg_type": "execute_request"}, "parent_header": {},
            "metadata": {}, "content": {"code": "1+1 # é"}, "channel": "shell", "buffers": [],
        });
        let frame = encode_v1(&message);
        assert_eq!(u64::from_le_bytes(frame[..8].try_into().unwrap()), 6);
        assert_eq!(decode_v1(&frame), Some(message));
    }

    #[test]
    fn malformed_frames_are_refused() {
        assert_eq!(decode_v1(b""), None);
        assert_eq!(decode_v1(&[255; 64]), None);
        let mut frame = encode_v1(&json!({"header": {}, "channel": "iopub"}));
        frame.truncate(frame.len() - 1);
        assert_eq!(decode_v1(&frame), None);
    }
}
