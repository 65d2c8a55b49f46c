//! Papermill-style parameters: values typed from the command line the way
//! papermill types them, written as a code cell tagged `injected-parameters`
//! right after the cell tagged `parameters` (or first, when there is none).

use serde_json::json;

use super::format::{Cell, CodeCell};

/// The tag of the cell that holds a notebook's default parameters.
pub const PARAMETERS_TAG: &str = "parameters";
/// The tag of the cell cellbox (like papermill) writes with the given values.
pub const INJECTED_TAG: &str = "injected-parameters";

/// A parameter's value, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    None,
    Bool(bool),
    /// Decimal digits with an optional `-`, as Python would print the int.
    Int(String),
    Float(f64),
    Str(String),
}

impl ParamValue {
    /// Type a value as papermill's `-p` does: `True`/`False`, `None`, an int,
    /// a float (`nan`, `inf` and `1e3` included), else the string itself.
    pub fn infer(text: &str) -> Self {
        match text {
            "True" => return ParamValue::Bool(true),
            "False" => return ParamValue::Bool(false),
            "None" => return ParamValue::None,
            _ => {}
        }
        if let Some(int) = python_int(text) {
            return ParamValue::Int(int);
        }
        if let Some(float) = python_float(text) {
            return ParamValue::Float(float);
        }
        ParamValue::Str(text.to_string())
    }

    /// The value as Python source.
    pub fn to_python(&self) -> String {
        match self {
            ParamValue::None => "None".into(),
            ParamValue::Bool(true) => "True".into(),
            ParamValue::Bool(false) => "False".into(),
            ParamValue::Int(digits) => digits.clone(),
            ParamValue::Float(value) if value.is_nan() => "float('nan')".into(),
            ParamValue::Float(value) if value.is_infinite() => {
                if *value > 0.0 {
                    "float('inf')".into()
                } else {
                    "float('-inf')".into()
                }
            }
            // Rust's `{:?}` always keeps a `.0` or an exponent: a valid Python float literal.
            ParamValue::Float(value) => format!("{value:?}"),
            ParamValue::Str(text) => python_string(text),
        }
    }
}

/// Digits without `_` and leading zeros when `text` is what Python's `int()` accepts.
fn python_int(text: &str) -> Option<String> {
    let trimmed = text.trim();
    let (negative, digits) = match trimmed.as_bytes().first()? {
        b'-' => (true, &trimmed[1..]),
        b'+' => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let cleaned = without_digit_underscores(digits)?;
    if cleaned.is_empty() || !cleaned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let significant = cleaned.trim_start_matches('0');
    let significant = if significant.is_empty() { "0" } else { significant };
    Some(if negative && significant != "0" { format!("-{significant}") } else { significant.to_string() })
}

/// The value when `text` is what Python's `float()` accepts.
fn python_float(text: &str) -> Option<f64> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if ["nan", "inf", "infinity"].contains(&unsigned) {
        return lower.parse().ok();
    }
    if !unsigned.bytes().next().is_some_and(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    without_digit_underscores(trimmed)?.parse().ok()
}

/// `1_000` → `1000`; `None` when an underscore is not between two digits.
fn without_digit_underscores(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    for (i, byte) in bytes.iter().enumerate() {
        if *byte == b'_' {
            let before = i > 0 && bytes[i - 1].is_ascii_digit();
            let after = bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
            if !before || !after {
                return None;
            }
        }
    }
    Some(text.replace('_', ""))
}

/// A double-quoted Python string literal.
fn python_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ch if (ch as u32) < 0x20 || ch == '\u{7f}' => out.push_str(&format!("\\x{:02x}", ch as u32)),
            ch => out.push(ch),
        }
    }
    out.push('"');
    out
}

/// The source of the injected cell, as papermill writes it.
pub fn parameters_source(parameters: &[(String, ParamValue)]) -> String {
    let mut source = String::from("# Parameters\n");
    for (name, value) in parameters {
        source.push_str(&format!("{name} = {}\n", value.to_python()));
    }
    source
}

/// Whether `name` can be assigned to in Python (an identifier, not a keyword).
pub fn valid_name(name: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
        "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
        "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
    ];
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
        && !KEYWORDS.contains(&name)
}

/// Replace any earlier injected cell with one holding `parameters`, placed
/// after the `parameters` cell or at the top. Returns the new cell's index.
pub fn inject(cells: &mut Vec<Cell>, parameters: &[(String, ParamValue)]) -> usize {
    cells.retain(|cell| !cell.has_tag(INJECTED_TAG));
    let mut cell = CodeCell::new(&parameters_source(parameters));
    cell.metadata.insert("tags".into(), json!([INJECTED_TAG]));
    let at = cells.iter().position(|cell| cell.has_tag(PARAMETERS_TAG)).map_or(0, |i| i + 1);
    cells.insert(at, Cell::Code(cell));
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_typed_like_papermill() {
        let typed = |text: &str| ParamValue::infer(text).to_python();
        assert_eq!(typed("3"), "3");
        assert_eq!(typed("-007"), "-7");
        assert_eq!(typed("1_000"), "1000");
        assert_eq!(typed("0.5"), "0.5");
        assert_eq!(typed("1e3"), "1000.0");
        assert_eq!(typed("2."), "2.0");
        assert_eq!(typed("nan"), "float('nan')");
        assert_eq!(typed("-inf"), "float('-inf')");
        assert_eq!(typed("True"), "True");
        assert_eq!(typed("true"), "\"true\"");
        assert_eq!(typed("None"), "None");
        assert_eq!(typed("hello \"world\"\n\\"), r#""hello \"world\"\n\\""#);
        assert_eq!(typed("1_"), "\"1_\"");
        assert_eq!(typed("e5"), "\"e5\"");
        assert_eq!(typed(""), "\"\"");
    }

    #[test]
    fn injected_after_the_parameters_cell_replacing_an_old_one() {
        let tagged = |source: &str, tag: &str| {
            let mut cell = CodeCell::new(source);
            cell.metadata.insert("tags".into(), json!([tag]));
            Cell::Code(cell)
        };
        let mut cells =
            vec![Cell::Code(CodeCell::new("import x")), tagged("a = 1", PARAMETERS_TAG), tagged("a = 5", INJECTED_TAG)];
        let at = inject(&mut cells, &[("a".into(), ParamValue::Int("2".into()))]);
        assert_eq!(at, 2);
        assert_eq!(cells.len(), 3);
        assert_eq!(cells[2].source(), "# Parameters\na = 2\n");
        let mut plain = vec![Cell::Code(CodeCell::new("print(a)"))];
        assert_eq!(inject(&mut plain, &[("a".into(), ParamValue::Str("x".into()))]), 0);
        assert!(plain[0].has_tag(INJECTED_TAG));
        assert!(valid_name("alpha_1") && !valid_name("1a") && !valid_name("class") && !valid_name("a-b"));
    }
}
