//! Where an E2B sandbox's home is: E2B code names `/home/user` (and paths
//! relative to it); a cellbox sandbox's home is a folder of its own in its
//! principal's workspace. Paths in requests are translated to that folder, and
//! paths in answers back, so the SDKs see the paths they expect. Other
//! absolute paths are left as they are: they reach what the kernel may reach.

use std::path::{Path, PathBuf};

/// The home E2B's SDKs and code expect.
pub const VIRTUAL_HOME: &str = "/home/user";

#[derive(Debug, Clone)]
pub(crate) struct Home {
    real: PathBuf,
}

impl Home {
    pub fn new(real: PathBuf) -> Home {
        Home { real }
    }

    /// The folder on this machine.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// The path on this machine that a request's `path` names.
    pub fn to_real(&self, path: &str) -> String {
        let real = if path.is_empty() || path == "~" {
            self.real.clone()
        } else if let Some(rest) = path.strip_prefix("~/") {
            self.real.join(rest)
        } else if let Some(rest) = strip_home(path) {
            if rest.is_empty() { self.real.clone() } else { self.real.join(rest) }
        } else if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            self.real.join(path)
        };
        real.display().to_string()
    }

    /// `message` with the folder's real path shown as the sandbox sees it.
    pub fn scrub(&self, message: &str) -> String {
        let real = self.real.display().to_string();
        if real.is_empty() { message.to_string() } else { message.replace(&real, VIRTUAL_HOME) }
    }

    /// The path an answer shows for `real`.
    pub fn to_virtual(&self, real: &str) -> String {
        match Path::new(real).strip_prefix(&self.real) {
            Ok(rest) if rest.as_os_str().is_empty() => VIRTUAL_HOME.to_string(),
            Ok(rest) => format!("{VIRTUAL_HOME}/{}", rest.display()),
            Err(_) => real.to_string(),
        }
    }
}

/// What follows `/home/user` in `path` (empty for the home itself), if it is there.
fn strip_home(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(VIRTUAL_HOME)?;
    if rest.is_empty() {
        return Some("");
    }
    rest.strip_prefix('/').map(|rest| rest.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_virtual_home_maps_to_the_sandbox_folder_and_back() {
        let home = Home::new(PathBuf::from("/srv/alice/e2b/abc"));
        assert_eq!(home.to_real("/home/user"), "/srv/alice/e2b/abc");
        assert_eq!(home.to_real("/home/user/"), "/srv/alice/e2b/abc");
        assert_eq!(home.to_real("/home/user/a/b.txt"), "/srv/alice/e2b/abc/a/b.txt");
        assert_eq!(home.to_real("a.txt"), "/srv/alice/e2b/abc/a.txt");
        assert_eq!(home.to_real("~/a.txt"), "/srv/alice/e2b/abc/a.txt");
        assert_eq!(home.to_real(""), "/srv/alice/e2b/abc");
        // Not the home: a sibling whose name starts the same, and other absolute paths.
        assert_eq!(home.to_real("/home/username/x"), "/home/username/x");
        assert_eq!(home.to_real("/etc/passwd"), "/etc/passwd");
        // `..` is not resolved here: the files API judges the real path with the kernel's rights.
        assert_eq!(home.to_real("/home/user/../../etc"), "/srv/alice/e2b/abc/../../etc");
        assert_eq!(home.to_virtual("/srv/alice/e2b/abc/a/b.txt"), "/home/user/a/b.txt");
        assert_eq!(home.to_virtual("/srv/alice/e2b/abc"), "/home/user");
        assert_eq!(home.to_virtual("/srv/alice/e2b/abcd"), "/srv/alice/e2b/abcd");
        assert_eq!(home.to_virtual("/tmp/x"), "/tmp/x");
    }
}
