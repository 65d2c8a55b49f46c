//! Jupyter messages as ZeroMQ multipart messages: routing identities, the
//! `<IDS|MSG>` delimiter, the HMAC-SHA256 signature (hex) over the four JSON
//! parts, then header, parent header, metadata and content, then binary
//! buffers (which cellbox reads none of). Messages stay `serde_json` values in
//! the shape [`crate::jupyter::route`] reads (`channel` added), as the
//! gateway's websocket framings have them.

use bytes::Bytes;
use hmac::{KeyInit, Mac};
use serde_json::{Value, json};

const DELIMITER: &[u8] = b"<IDS|MSG>";
const PARTS: [&str; 4] = ["header", "parent_header", "metadata", "content"];

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The connection's signing key (an empty key means unsigned messages, as
/// Jupyter allows; cellbox always makes one).
#[derive(Clone)]
pub struct Signer {
    mac: Option<HmacSha256>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.mac.is_some() { "Signer(hmac-sha256)" } else { "Signer(none)" })
    }
}

/// A message that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("a message without the <IDS|MSG> delimiter")]
    NoDelimiter,
    #[error("a message with {0} parts after its delimiter (at least 5 are needed)")]
    TooFewParts(usize),
    #[error("a message whose signature does not match (signed with another key, or changed on the way)")]
    BadSignature,
    #[error("a message whose {part} is not JSON")]
    NotJson { part: &'static str },
}

impl Signer {
    pub fn new(key: &[u8]) -> Signer {
        let mac = (!key.is_empty()).then(|| HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length"));
        Signer { mac }
    }

    fn signature(&self, parts: &[&[u8]]) -> Vec<u8> {
        match &self.mac {
            None => Vec::new(),
            Some(mac) => {
                let mut mac = mac.clone();
                for part in parts {
                    mac.update(part);
                }
                hex(&mac.finalize().into_bytes())
            }
        }
    }

    fn verify(&self, parts: &[&[u8]], signature: &[u8]) -> bool {
        match &self.mac {
            None => true,
            Some(mac) => {
                let Some(expected) = unhex(signature) else { return false };
                let mut mac = mac.clone();
                for part in parts {
                    mac.update(part);
                }
                mac.verify_slice(&expected).is_ok()
            }
        }
    }

    /// The frames of `message` (its four parts; `channel` and `buffers` are not sent).
    pub fn encode(&self, message: &Value) -> Vec<Bytes> {
        let empty = json!({});
        let parts: Vec<Vec<u8>> = PARTS
            .iter()
            .map(|key| serde_json::to_vec(message.get(*key).unwrap_or(&empty)).unwrap_or_default())
            .collect();
        let borrowed: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let signature = self.signature(&borrowed);
        let mut frames = Vec::with_capacity(6);
        frames.push(Bytes::from_static(DELIMITER));
        frames.push(Bytes::from(signature));
        frames.extend(parts.into_iter().map(Bytes::from));
        frames
    }

    /// The message in `frames`, received on `channel`, once its signature checks.
    pub fn decode(&self, frames: &[Bytes], channel: &str) -> Result<Value, WireError> {
        let start = frames.iter().position(|frame| frame.as_ref() == DELIMITER).ok_or(WireError::NoDelimiter)?;
        let rest = &frames[start + 1..];
        if rest.len() < 5 {
            return Err(WireError::TooFewParts(rest.len()));
        }
        let parts: Vec<&[u8]> = rest[1..5].iter().map(Bytes::as_ref).collect();
        if !self.verify(&parts, &rest[0]) {
            return Err(WireError::BadSignature);
        }
        let mut message = json!({ "channel": channel, "buffers": [] });
        for (key, part) in PARTS.iter().zip(parts) {
            message[*key] = serde_json::from_slice(part).map_err(|_| WireError::NotJson { part: key })?;
        }
        Ok(message)
    }
}

fn hex(bytes: &[u8]) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes.iter().flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]]).collect()
}

fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    text.chunks(2).map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message() -> Value {
        json!({
            "header": {"msg_id": "1", "msg_type": "execute_request"}, "parent_header": {},
            "metadata": {}, "content": {"code": "1+1 # é"}, "channel": "shell", "buffers": [],
        })
    }

    #[test]
    fn a_signed_message_round_trips_and_a_changed_one_is_refused() {
        let signer = Signer::new(b"secret");
        let mut frames = signer.encode(&message());
        assert_eq!(frames[0].as_ref(), DELIMITER);
        assert_eq!(frames[1].len(), 64);
        frames.insert(0, Bytes::from_static(b"identity"));
        assert_eq!(signer.decode(&frames, "shell"), Ok(message()));
        assert_eq!(Signer::new(b"other").decode(&frames, "shell"), Err(WireError::BadSignature));
        let mut changed = frames.clone();
        changed[5] = Bytes::from_static(br#"{"code": "import os"}"#);
        assert_eq!(signer.decode(&changed, "shell"), Err(WireError::BadSignature));
        let mut garbled = frames.clone();
        garbled[2] = Bytes::from_static(b"zz");
        assert_eq!(signer.decode(&garbled, "shell"), Err(WireError::BadSignature));
    }

    #[test]
    fn malformed_messages_are_refused() {
        let signer = Signer::new(b"k");
        assert_eq!(signer.decode(&[], "iopub"), Err(WireError::NoDelimiter));
        let frames = signer.encode(&message());
        assert_eq!(signer.decode(&frames[..4], "iopub"), Err(WireError::TooFewParts(3)));
        let unsigned = Signer::new(b"");
        let mut frames = unsigned.encode(&message());
        assert!(frames[1].is_empty());
        assert_eq!(unsigned.decode(&frames, "shell"), Ok(message()));
        frames[3] = Bytes::from_static(b"not json");
        assert_eq!(unsigned.decode(&frames, "shell"), Err(WireError::NotJson { part: "parent_header" }));
    }
}
