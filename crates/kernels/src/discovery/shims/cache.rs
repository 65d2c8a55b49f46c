//! Resolutions kept on disk, valid while the shim, every path the resolver looked at and the variables that matter are unchanged.

use super::*;

/// What identifies one state of a file or folder; `None` when it is absent.
fn stamp(path: &Path) -> Option<[i64; 5]> {
    std::fs::metadata(path).ok().map(|meta| crate::discovery::stamp::file_stamp(&meta))
}

#[derive(Serialize, Deserialize)]
struct Entry {
    shim: PathBuf,
    cwd: PathBuf,
    home: Option<PathBuf>,
    path: Option<String>,
    vars: BTreeMap<String, String>,
    watched: Vec<(PathBuf, Option<[i64; 5]>)>,
    followed: Followed,
}

impl Entry {
    fn same_question(&self, shim: &Path, input: &DiscoveryInput) -> bool {
        self.shim == shim
            && self.cwd == input.cwd
            && self.home == input.home
            && self.path.as_deref() == input.path.as_ref().and_then(|p| p.to_str())
            && self.vars == input.manager_vars
    }

    fn still_valid(&self) -> bool {
        self.watched.iter().all(|(path, was)| stamp(path) == *was)
    }
}

fn entry_path(root: &Path, shim: &Path, input: &DiscoveryInput) -> PathBuf {
    let mut hasher = Sha256::new();
    for part in [shim.as_os_str(), input.cwd.as_os_str()] {
        hasher.update(part.as_encoded_bytes());
        hasher.update([0]);
    }
    let name: String = hasher.finalize().iter().take(10).map(|b| format!("{b:02x}")).collect();
    root.join("shims").join(format!("{name}.json"))
}

/// [`follow`], answered from `root` when the same shim was followed from the
/// same folder with the same variables and nothing it read has changed
/// since; a new answer is written atomically (best effort).
pub fn follow_cached_in(root: &Path, candidate: &Path, input: &DiscoveryInput) -> Outcome {
    // Most interpreters are no shim, and that answer depends on the file alone.
    let now = stamp(candidate);
    if now.is_some() && not_shims().lock().unwrap().get(candidate) == now.as_ref() {
        return Outcome::NotAShim;
    }
    let file = entry_path(root, candidate, input);
    if let Ok(text) = std::fs::read(&file)
        && let Ok(entry) = serde_json::from_slice::<Entry>(&text)
        && entry.same_question(candidate, input)
        && entry.still_valid()
    {
        let watched = entry.watched.into_iter().map(|(path, _)| path).collect();
        return Outcome::Followed(entry.followed, watched);
    }
    let outcome = follow(candidate, input);
    if let (Outcome::NotAShim, Some(now)) = (&outcome, now) {
        let mut known = not_shims().lock().unwrap();
        if known.len() >= MAX_NOT_SHIMS {
            known.clear();
        }
        known.insert(candidate.to_path_buf(), now);
    }
    if let Outcome::Followed(followed, watched) = &outcome {
        let mut seen = std::collections::HashSet::new();
        let entry = Entry {
            shim: candidate.to_path_buf(),
            cwd: input.cwd.clone(),
            home: input.home.clone(),
            path: input.path.as_ref().and_then(|p| p.to_str()).map(str::to_string),
            vars: input.manager_vars.clone(),
            watched: watched.iter().filter(|p| seen.insert(p.as_path())).map(|p| (p.clone(), stamp(p))).collect(),
            followed: followed.clone(),
        };
        if let (Some(dir), Ok(text)) = (file.parent(), serde_json::to_vec(&entry))
            && std::fs::create_dir_all(dir).is_ok()
            && let Ok(mut temp) = tempfile::NamedTempFile::new_in(dir)
            && std::io::Write::write_all(&mut temp, &text).is_ok()
        {
            let _ = temp.persist(&file);
            forget_gone(dir);
        }
    }
    outcome
}

/// Candidates found to be no shim in this process, with the stamp their file
/// had then: asked again once it changes. A shim's answer also depends on the
/// folder and the variables, so it is kept on disk instead.
fn not_shims() -> &'static std::sync::Mutex<std::collections::HashMap<PathBuf, [i64; 5]>> {
    static KNOWN: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<PathBuf, [i64; 5]>>> =
        std::sync::OnceLock::new();
    KNOWN.get_or_init(Default::default)
}

/// Candidates remembered by [`not_shims`] at most.
const MAX_NOT_SHIMS: usize = 1024;

/// Drop resolutions for folders or shims that are gone, so the folder does
/// not grow with every temporary cwd. Run only after a fresh resolution.
fn forget_gone(dir: &Path) {
    #[derive(Deserialize)]
    struct Question {
        shim: PathBuf,
        cwd: PathBuf,
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for file in entries.flatten().map(|e| e.path()) {
        let gone = match std::fs::read(&file).map(|text| serde_json::from_slice::<Question>(&text)) {
            Ok(Ok(q)) => !q.cwd.exists() || !q.shim.exists(),
            _ => file.extension().is_some_and(|ext| ext == "json"),
        };
        if gone {
            let _ = std::fs::remove_file(&file);
        }
    }
}

/// [`follow_cached_in`] the default cache root.
pub fn follow_cached(candidate: &Path, input: &DiscoveryInput) -> Outcome {
    follow_cached_in(&crate::paths::cache_root(), candidate, input)
}
