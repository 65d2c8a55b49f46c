//! Which installed Jupyter kernel each `r` or `jupyter` cell runs on.

use super::*;
use crate::discovery::EnvActivation;
use crate::jupyter::{KernelSpec, SearchPath, SpecError};

/// The kernel R cells get when they name none and it is installed (IRkernel's).
const PREFERRED_R_KERNEL: &str = "ir";

impl EvalEngine {
    /// The kernelspec of every Jupyter cell in `plan` (the one it names, else
    /// the R kernel for an `r` cell), written into the cell; one interpreter
    /// per kernelspec, whose `executable` is the kernelspec's folder.
    pub(super) async fn resolve_jupyter(
        &self,
        plan: &mut [PlannedCell],
        cwd: &Path,
    ) -> Result<Vec<Interpreter>, EvalError> {
        let wanted: Vec<(usize, Option<String>)> = plan
            .iter()
            .enumerate()
            .filter(|(_, cell)| cell.language.runtime() == Runtime::Jupyter)
            .map(|(position, cell)| (position, cell.kernel.clone()))
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
                .map(|(position, name)| {
                    let spec = match name {
                        Some(name) => search.find(&name),
                        None => search.for_language("R", PREFERRED_R_KERNEL),
                    };
                    (position, spec)
                })
                .collect::<Vec<(usize, Result<KernelSpec, SpecError>)>>()
        })
        .await
        .map_err(|e| EvalError::Kernel(e.to_string()))?;
        let mut interpreters: Vec<Interpreter> = Vec::new();
        for (position, spec) in found {
            let spec = spec.map_err(|e| EvalError::Kernel(e.to_string()))?;
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
        Ok(interpreters)
    }
}
