//! A MIME bundle, as the model and the terminal see it.
//!
//! Text precedence is `text/markdown` > `text/plain` > `text/html` (turned
//! into Markdown). Images (`image/png`, `image/jpeg`), `application/json` and
//! status events are kept as structured parts beside the text.

use serde_json::Value;

use crate::protocol::MimeBundle;
/// The MIME type of status events emitted by the prelude and magics.
pub use crate::protocol::STATUS_MIME;

/// One piece of a display.
#[derive(Debug, Clone, PartialEq)]
pub enum DisplayPart {
    Text(String),
    /// Base64 data of `image/png` or `image/jpeg`.
    Image {
        mime: String,
        data: String,
    },
    Json(Value),
    Status(Value),
}

/// Split a bundle into the parts cellbox keeps. A status event is only a status event.
pub fn split_bundle(bundle: &MimeBundle) -> Vec<DisplayPart> {
    if let Some(status) = bundle.get(STATUS_MIME) {
        return vec![DisplayPart::Status(status.clone())];
    }
    let mut parts = Vec::new();
    if let Some(text) = bundle_text(bundle) {
        parts.push(DisplayPart::Text(text));
    }
    for mime in ["image/png", "image/jpeg"] {
        if let Some(Value::String(data)) = bundle.get(mime) {
            parts.push(DisplayPart::Image { mime: mime.to_string(), data: data.clone() });
            break;
        }
    }
    if let Some(json) = bundle.get("application/json") {
        parts.push(DisplayPart::Json(json.clone()));
    }
    parts
}

/// The text of a bundle by precedence, if it has any. A `text/plain` that
/// is only Python's default `<X object at 0x…>` repr gives way to HTML.
pub fn bundle_text(bundle: &MimeBundle) -> Option<String> {
    if let Some(text) = string_of(bundle.get("text/markdown")) {
        return Some(text);
    }
    let plain = string_of(bundle.get("text/plain"));
    let html = string_of(bundle.get("text/html"));
    match (plain, html) {
        (Some(plain), Some(html)) if is_default_repr(&plain) => Some(html_to_markdown(&html)),
        (Some(plain), _) => Some(plain),
        (None, html) => html.map(|html| html_to_markdown(&html)),
    }
}

/// `<module.Class object at 0x7f…>` or `<module.Class object>`: says nothing about the object.
fn is_default_repr(text: &str) -> bool {
    let Some(inner) = text.trim().strip_prefix('<').and_then(|t| t.strip_suffix('>')) else { return false };
    let words: Vec<&str> = inner.split(' ').collect();
    let dotted_name = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    match words.as_slice() {
        [name, "object"] => dotted_name(name),
        [name, "object", "at", address] => dotted_name(name) && address.starts_with("0x"),
        _ => false,
    }
}

fn string_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) => Some(text.clone()),
        Value::Array(lines) => Some(lines.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

/// HTML as Markdown; when conversion fails, the HTML itself.
pub fn html_to_markdown(html: &str) -> String {
    htmd::convert(html).unwrap_or_else(|_| html.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bundle(value: Value) -> MimeBundle {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn markdown_beats_plain_beats_html() {
        let all = bundle(json!({"text/markdown": "**m**", "text/plain": "p", "text/html": "<b>h</b>"}));
        assert_eq!(bundle_text(&all).unwrap(), "**m**");
        let plain = bundle(json!({"text/plain": "p", "text/html": "<b>h</b>"}));
        assert_eq!(bundle_text(&plain).unwrap(), "p");
        let html = bundle(json!({"text/html": "<p>Hello <b>world</b></p>"}));
        assert_eq!(bundle_text(&html).unwrap(), "Hello **world**");
        let default_repr = bundle(json!({"text/plain": "<m.H object at 0x7f01>", "text/html": "<i>h</i>"}));
        assert_eq!(bundle_text(&default_repr).unwrap(), "*h*");
        let ipython = bundle(json!({"text/plain": "<IPython.core.display.HTML object>", "text/html": "<i>h</i>"}));
        assert_eq!(bundle_text(&ipython).unwrap(), "*h*");
        let real = bundle(json!({"text/plain": "<Response [200]>", "text/html": "<i>h</i>"}));
        assert_eq!(bundle_text(&real).unwrap(), "<Response [200]>");
    }

    #[test]
    fn images_json_and_status_are_structured() {
        let parts =
            split_bundle(&bundle(json!({"text/plain": "<Figure>", "image/png": "iVBO", "application/json": {"a": 1}})));
        assert_eq!(parts.len(), 3);
        assert!(matches!(&parts[1], DisplayPart::Image { mime, .. } if mime == "image/png"));
        assert_eq!(parts[2], DisplayPart::Json(json!({"a": 1})));
        let status = split_bundle(&bundle(json!({STATUS_MIME: {"op": "cd"}, "text/plain": "[cd]"})));
        assert_eq!(status, vec![DisplayPart::Status(json!({"op": "cd"}))]);
    }
}
