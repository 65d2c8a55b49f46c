//! Which installed Jupyter kernel each `r`, `java` or `jupyter` cell runs on.

use super::*;
use crate::discovery::EnvActivation;
use crate::jupyter::{KernelSpec, SearchPath, SpecError};

impl EvalEngine {
    /// The kernelspec of every Jupyter cell in `plan` (the one it names, else
    /// a kernel for the language of an `r` or `java` cell), written into the cell; one interpreter
    /// per kernelspec, whose `executable` is the kernelspec's folder.
    pub(super) async fn resolve_jupyter(
        &self,
        plan: &mut [PlannedCell],
        cwd: &Path,
    ) -> Result<Vec<Interpreter>, EvalError> {
        let wanted: Vec<(usize, Option<String>, Language)> = plan
            .iter()
            .enumerate()
            .filter(|(_, cell)| cell.language.runtime() == Runtime::Jupyter)
            .map(|(position, cell)| (position, cell.kernel.clone(), cell.language))
            .collect();
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        // The environment of the Python that runs Python cells is searched too
        // (where `pip install ipykernel` or `bash_kernel` put their kernelspecs).
        let python_prefix = match self.resolve_python(cwd).await {
            Ok(python) => match python.activation {
                EnvActivation::Venv(prefix) | EnvActivation::Conda(prefix) => Some(prefix),
                EnvActivation::None => python.executable.parent().and_then(Path::parent).map(Path::to_path_buf),
            },
            Err(_) => None,
        };
        let found = tokio::task::spawn_blocking(move || {
            let search = SearchPath::from_env(python_prefix.as_deref());
            wanted
                .into_iter()
                .map(|(position, name, language)| {
                    let spec = match (name, language.kernelspec_language()) {
                        (Some(name), _) => search.find(&name),
                        (None, Some((wanted, preferred))) => search.for_language(wanted, preferred),
                        (None, None) => Err(SpecError::NotFound { name: String::new(), installed: Vec::new() }),
                    };
                    (position, language, spec)
                })
                .collect::<Vec<(usize, Language, Result<KernelSpec, SpecError>)>>()
        })
        .await
        .map_err(|e| EvalError::Kernel(e.to_string()))?;
        let mut interpreters: Vec<Interpreter> = Vec::new();
        for (position, language, spec) in found {
            let spec = spec.map_err(|e| match e {
                SpecError::NotFound { name, .. } if name.is_empty() => {
                    EvalError::Kernel("a \"jupyter\" cell names its kernel: add \"kernel\": \"<name>\"".into())
                }
                e => EvalError::Kernel(e.to_string()),
            })?;
            // Refused before any kernel starts: a kernel that refused them would be replaced, its state lost.
            let has_env = plan[position].env.as_ref().is_some_and(|env| !env.is_empty());
            if has_env && !spec.language.eq_ignore_ascii_case("R") {
                return Err(EvalError::Kernel(format!(
                    "cell {}: {} kernels take no per-cell environment variables (R kernels do); set them in the \
                     cell's own code, or in the session's environment",
                    position + 1,
                    spec.display_name
                )));
            }
            if let Some((wanted, _)) = language.kernelspec_language()
                && !spec.language.eq_ignore_ascii_case(wanted)
            {
                return Err(EvalError::Kernel(format!(
                    "cell {}: \"language\": \"{}\" names {wanted} kernels, and {} is a {} kernel: drop \"language\", \
                     or name a {wanted} kernel",
                    position + 1,
                    language.as_str(),
                    spec.name,
                    spec.language
                )));
            }
            plan[position].kernel = Some(spec.name.clone());
            if !interpreters.iter().any(|known| known.executable == spec.dir) {
                interpreters.push(Interpreter {
                    runtime: Runtime::Jupyter,
                    executable: spec.dir,
                    version: None,
                    activation: EnvActivation::None,
                });
            }
        }
        // Kernels are taken in one order by every call (so two never wait for each other).
        interpreters.sort_by(|a, b| a.executable.cmp(&b.executable));
        Ok(interpreters)
    }
}

impl EvalEngine {
    /// Told once to a session whose Python kernel runs on a Jupyter gateway under a sandbox it cannot have.
    pub(super) fn outside_the_sandbox_note(&self) -> String {
        format!(
            "This session's Python kernel runs on a Jupyter gateway, outside cellbox's sandbox (sandbox {}, network \
             {}): only its environment was filtered.",
            self.config.sandbox.mode,
            self.config.sandbox.network_setting()
        )
    }
}
