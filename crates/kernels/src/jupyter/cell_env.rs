//! Per-cell environment variables for Jupyter kernels whose language cellbox
//! can speak (R): the variables are set by a silent request before the cell,
//! and put back as they were by another once the cell is done, so the next
//! cell sees the kernel's own again. Other kernels refuse them (a cell sets
//! its own in its code).

use std::collections::BTreeMap;

use serde_json::Value;

/// The setup and restore code for `env` (`None` as a value unsets a
/// variable) in a kernel of `language`, or `None` when cellbox cannot say it there.
pub(super) fn code_for(language: &str, env: &BTreeMap<String, Option<String>>) -> Option<(String, String)> {
    if !language.eq_ignore_ascii_case("R") {
        return None;
    }
    // A JSON string is an R string literal (R reads `\"`, `\\`, `\n`, `\uXXXX` and UTF-8 alike).
    let literal = |text: &str| Value::String(text.to_string()).to_string();
    let names: Vec<String> = env.keys().map(|name| literal(name)).collect();
    let mut setup = format!(".cellbox_env <- Sys.getenv(c({}), unset = NA, names = TRUE)\n", names.join(", "));
    for (name, value) in env {
        match value {
            Some(value) => setup.push_str(&format!(
                "do.call(Sys.setenv, stats::setNames(list({}), {}))\n",
                literal(value),
                literal(name)
            )),
            None => setup.push_str(&format!("Sys.unsetenv({})\n", literal(name))),
        }
    }
    setup.push_str("invisible(NULL)\n");
    let restore = "local(for (name in names(.cellbox_env)) {\n  value <- .cellbox_env[[name]]\n  \
                   if (is.na(value)) Sys.unsetenv(name) else do.call(Sys.setenv, stats::setNames(list(value), \
                   name))\n})\nrm(.cellbox_env)\ninvisible(NULL)\n"
        .to_string();
    Some((setup, restore))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_gets_quoted_names_and_values_and_other_languages_none() {
        let env = BTreeMap::from([("A\"B".to_string(), Some("x\ny \\ é".to_string())), ("GONE".to_string(), None)]);
        let (setup, restore) = code_for("R", &env).unwrap();
        assert!(setup.starts_with(".cellbox_env <- Sys.getenv(c(\"A\\\"B\", \"GONE\"), unset = NA, names = TRUE)\n"));
        assert!(setup.contains("do.call(Sys.setenv, stats::setNames(list(\"x\\ny \\\\ é\"), \"A\\\"B\"))"));
        assert!(setup.contains("Sys.unsetenv(\"GONE\")"));
        assert!(restore.contains("rm(.cellbox_env)"));
        assert_eq!(code_for("python", &env), None);
    }
}
