//! Code contexts: each is one engine session with its own kernels and state.
//! A Python and a JavaScript context exist from the start (E2B's SDK lists
//! both); more are made on demand.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::wire::{ContextInfo, ErrorCode, Failure};
use crate::tool::{Language, is_session_name};

/// A context: its session in the engine, language and working folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    pub id: String,
    pub language: SdkLanguage,
    pub cwd: PathBuf,
}

impl Context {
    /// The engine session that holds this context's kernels.
    pub fn session(&self) -> String {
        format!("sdk-{}", self.id)
    }

    pub fn info(&self) -> ContextInfo {
        ContextInfo { id: self.id.clone(), language: self.language.name().into(), cwd: self.cwd.display().to_string() }
    }
}

/// The languages `run_code` takes. Bash runs in a shell of its own per context, which keeps
/// its cwd, variables and functions from run to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdkLanguage {
    Python,
    JavaScript,
    TypeScript,
    Bash,
    /// R, in an installed Jupyter kernel for R (IRkernel).
    R,
    /// Java, in an installed Jupyter kernel for Java (JJava).
    Java,
}

impl SdkLanguage {
    /// E2B's names and their short forms, case-insensitively.
    pub fn parse(name: &str) -> Result<SdkLanguage, Failure> {
        match name.trim().to_ascii_lowercase().as_str() {
            "python" | "py" | "python3" => Ok(SdkLanguage::Python),
            "javascript" | "js" => Ok(SdkLanguage::JavaScript),
            "typescript" | "ts" => Ok(SdkLanguage::TypeScript),
            "bash" | "sh" | "shell" => Ok(SdkLanguage::Bash),
            "r" => Ok(SdkLanguage::R),
            "java" => Ok(SdkLanguage::Java),
            other => Err(Failure::invalid_params(format!(
                "unknown language {other:?}: use python, javascript (js), typescript (ts), bash, r or java"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SdkLanguage::Python => "python",
            SdkLanguage::JavaScript => "javascript",
            SdkLanguage::TypeScript => "typescript",
            SdkLanguage::Bash => "bash",
            SdkLanguage::R => "r",
            SdkLanguage::Java => "java",
        }
    }

    /// The cell language the engine runs this as.
    pub fn cell_language(self) -> Language {
        match self {
            SdkLanguage::Python => Language::Py,
            SdkLanguage::JavaScript => Language::Js,
            SdkLanguage::TypeScript => Language::Ts,
            SdkLanguage::Bash => Language::Bash,
            SdkLanguage::R => Language::R,
            SdkLanguage::Java => Language::Java,
        }
    }

    /// `code` as a cell of [`SdkLanguage::cell_language`].
    pub fn cell_code(self, code: &str) -> String {
        code.to_string()
    }

    /// The language whose default context a run without one goes to
    /// (TypeScript shares JavaScript's kernel; bash, R and Java get kernels of their own in Python's).
    fn default_context(self) -> &'static str {
        match self {
            SdkLanguage::Python | SdkLanguage::Bash | SdkLanguage::R | SdkLanguage::Java => "python",
            SdkLanguage::JavaScript | SdkLanguage::TypeScript => "javascript",
        }
    }
}

/// Every context of one server, in the order they were made.
#[derive(Debug)]
pub struct Contexts {
    root: PathBuf,
    made: Mutex<(u64, BTreeMap<u64, Context>)>,
}

impl Contexts {
    /// The default contexts, working in `root`.
    pub fn new(root: PathBuf) -> Self {
        let mut made = BTreeMap::new();
        for (order, language) in [SdkLanguage::Python, SdkLanguage::JavaScript].into_iter().enumerate() {
            let id = language.default_context().to_string();
            made.insert(order as u64, Context { id, language, cwd: root.clone() });
        }
        Contexts { root, made: Mutex::new((2, made)) }
    }

    pub fn list(&self) -> Vec<Context> {
        self.made.lock().unwrap().1.values().cloned().collect()
    }

    pub fn get(&self, id: &str) -> Result<Context, Failure> {
        self.list()
            .into_iter()
            .find(|context| context.id == id)
            .ok_or_else(|| Failure::new(ErrorCode::NotFound, format!("no code context {id:?}")))
    }

    /// The context a run without a context id uses for `language`.
    pub fn default_for(&self, language: SdkLanguage) -> Context {
        let id = language.default_context();
        self.get(id).unwrap_or_else(|_| Context { id: id.to_string(), language, cwd: self.root.clone() })
    }

    /// A new context; `cwd` is relative to the server's folder and must exist.
    /// `name` (cellbox's named sessions) becomes its id, so a program can
    /// address it by name; asking again for a name in use returns that
    /// context when the language and folder match, and is refused otherwise.
    pub fn create(&self, language: SdkLanguage, cwd: Option<&str>, name: Option<&str>) -> Result<Context, Failure> {
        let cwd = match cwd {
            Some(dir) => self.root.join(dir),
            None => self.root.clone(),
        };
        if !Path::new(&cwd).is_dir() {
            return Err(Failure::invalid_params(format!("cwd {} is not a folder", cwd.display())));
        }
        if let Some(name) = name.filter(|name| !is_session_name(name)) {
            return Err(Failure::invalid_params(format!(
                "a context's name is 1 to 64 letters, digits, '-', '_' or '.' (such as \"data\"), not {name:?}"
            )));
        }
        if let Some(name) = name.filter(|name| is_made_id(name)) {
            return Err(Failure::invalid_params(format!(
                "{name:?} has the form of the ids the SDK gives unnamed contexts (ctx-N): choose another name"
            )));
        }
        let mut made = self.made.lock().unwrap();
        if let Some(existing) = name.and_then(|name| made.1.values().find(|context| context.id == name)) {
            // A kernel's language cannot change, and its folder is where the user expects files.
            if existing.language != language || existing.cwd != cwd {
                return Err(Failure::invalid_params(format!(
                    "a context named {:?} exists for {} in {}; remove it first, or choose another name",
                    existing.id,
                    existing.language.name(),
                    existing.cwd.display()
                )));
            }
            return Ok(existing.clone());
        }
        let order = made.0;
        made.0 += 1;
        let id = name.map_or_else(|| format!("ctx-{order}"), str::to_string);
        let context = Context { id, language, cwd };
        made.1.insert(order, context.clone());
        Ok(context)
    }

    /// A new Python context beside `source` (its folder and language), for a
    /// fork: unlike [`Contexts::create`], a name in use is refused.
    pub fn create_new(&self, source: &Context, name: Option<&str>) -> Result<Context, Failure> {
        if let Some(name) = name
            && self.get(name).is_ok()
        {
            return Err(Failure::invalid_params(format!("a context named {name:?} exists; choose another name")));
        }
        let cwd = source.cwd.strip_prefix(&self.root).unwrap_or(&source.cwd).to_string_lossy().into_owned();
        self.create(source.language, (!cwd.is_empty()).then_some(cwd.as_str()), name)
    }

    /// Forget a context (its kernels are the caller's to stop).
    pub fn remove(&self, id: &str) -> Result<Context, Failure> {
        let mut made = self.made.lock().unwrap();
        let order = made.1.iter().find(|(_, context)| context.id == id).map(|(order, _)| *order);
        match order {
            Some(order) => Ok(made.1.remove(&order).expect("just found")),
            None => Err(Failure::new(ErrorCode::NotFound, format!("no code context {id:?}"))),
        }
    }
}

/// Whether `id` has the form of an unnamed context's id, `ctx-` and a number.
fn is_made_id(id: &str) -> bool {
    id.strip_prefix("ctx-").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_context_is_found_again_by_its_name() {
        let root = tempfile::tempdir().unwrap();
        let contexts = Contexts::new(root.path().to_path_buf());
        let data = contexts.create(SdkLanguage::Python, None, Some("data")).unwrap();
        assert_eq!(data.id, "data");
        assert_eq!(contexts.create(SdkLanguage::Python, None, Some("data")).unwrap(), data, "the same context");
        assert_eq!(contexts.get("data").unwrap(), data);
        let unnamed = contexts.create(SdkLanguage::Python, None, None).unwrap();
        assert!(is_made_id(&unnamed.id), "{}", unnamed.id);
        let ids: Vec<String> = contexts.list().into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["python", "javascript", "data", &unnamed.id]);
    }

    #[test]
    fn a_name_in_use_elsewhere_or_malformed_is_refused() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        let contexts = Contexts::new(root.path().to_path_buf());
        contexts.create(SdkLanguage::Python, None, Some("data")).unwrap();
        for (language, cwd, name, words) in [
            (SdkLanguage::JavaScript, None, "data", "exists for python"),
            (SdkLanguage::Python, Some("sub"), "data", "exists for python"),
            (SdkLanguage::Python, None, "a/b", "letters, digits"),
            (SdkLanguage::Python, None, "", "letters, digits"),
            (SdkLanguage::Python, None, "ctx-3", "ctx-N"),
        ] {
            let failure = contexts.create(language, cwd, Some(name)).unwrap_err();
            assert_eq!(failure.code, ErrorCode::InvalidParams, "{name}");
            assert!(failure.message.contains(words), "{name}: {}", failure.message);
        }
        assert!(is_made_id("ctx-12") && !is_made_id("ctx-") && !is_made_id("ctx-a1") && !is_made_id("data"));
    }
}
