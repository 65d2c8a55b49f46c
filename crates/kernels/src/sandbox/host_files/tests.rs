//! Attacks on the host's file work, each run twice: confined by Landlock as
//! on this host, and held by the descriptor checks alone (as where Landlock
//! is missing), so that neither wall hides a hole in the other.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use crate::sandbox::policy::{PrivateRoot, SandboxPolicy};

/// A workspace, a folder outside it, a home with a secret, and a private root of principals.
struct Scene {
    _dir: tempfile::TempDir,
    work: PathBuf,
    outside: PathBuf,
    home: PathBuf,
    principals: PathBuf,
}

const SECRET: &str = "the-secret-key";

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let principals = base.join("principals");
        let (work, outside, home) = (principals.join("alice"), base.join("outside"), base.join("home"));
        for folder in [&work, &outside, &home.join(".ssh"), &principals.join("bob")] {
            std::fs::create_dir_all(folder).unwrap();
        }
        std::fs::write(home.join(".ssh/id_rsa"), SECRET).unwrap();
        std::fs::write(principals.join("bob/notes.txt"), SECRET).unwrap();
        Scene { _dir: dir, work, outside, home, principals }
    }

    /// Both ways of holding the rules: with the OS's rules where this host has them, and without.
    fn files(&self) -> Vec<(&'static str, HostFiles)> {
        let policy = SandboxPolicy {
            kernel_files: Some(self.work.join("../../caches")),
            private_roots: vec![PrivateRoot::new(&self.principals, Some("alice"))],
            ..SandboxPolicy::default()
        };
        let make = || Confinement::new(&policy, &self.work, &self.home).unwrap();
        let mut all = vec![("descriptor checks", HostFiles::new(make().without_os_rules(), self.work.clone()))];
        if make().is_enforced() {
            all.push(("Landlock", HostFiles::new(make(), self.work.clone())));
        }
        all
    }

    /// Nothing appeared outside and the secrets are intact.
    fn assert_untouched(&self) {
        let outside: Vec<_> = std::fs::read_dir(&self.outside).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(outside.is_empty(), "written outside: {outside:?}");
        assert_eq!(std::fs::read_to_string(self.home.join(".ssh/id_rsa")).unwrap(), SECRET);
        assert!(!self.home.join(".ssh/authorized_keys").exists());
        let bob: Vec<_> = std::fs::read_dir(self.principals.join("bob")).unwrap().flatten().collect();
        assert_eq!(bob.len(), 1, "another principal's folder changed");
    }
}

fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

#[test]
fn system_files_devices_and_fifos_are_never_opened() {
    let scene = Scene::new();
    symlink("/proc/self/environ", scene.work.join("environ"));
    symlink("/dev/zero", scene.work.join("zero"));
    nix::unistd::mkfifo(&scene.work.join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    for (how, files) in scene.files() {
        for path in ["/proc/self/environ", "/proc/self/mem", "/dev/zero", "/sys/kernel/notes", "environ", "zero"] {
            let error = files.read(&files.absolute(path), 0, 1 << 20).unwrap_err();
            assert!(matches!(error, HostFileError::System { .. }), "{how}: {path}: {error}");
        }
        // A FIFO would block an open for reading until a writer came: it is refused at once.
        let error = files.read(&files.absolute("fifo"), 0, 10).unwrap_err();
        assert!(matches!(error, HostFileError::NotAFile { kind: "FIFO", .. }), "{how}: {error}");
        let error = files.write(&files.absolute("fifo"), b"x", false).unwrap_err();
        assert!(matches!(error, HostFileError::NotAFile { .. }), "{how}: {error}");
        for path in ["/proc", "/dev/shm", "/sys"] {
            assert!(matches!(files.list(Path::new(path), 1, 10), Err(HostFileError::System { .. })), "{how}: {path}");
        }
    }
}

#[test]
fn reads_are_bounded_and_secrets_never_come_back() {
    let scene = Scene::new();
    std::fs::write(scene.work.join("data.bin"), vec![7u8; 10_000]).unwrap();
    symlink(scene.home.join(".ssh/id_rsa"), scene.work.join("key"));
    symlink(scene.principals.join("bob"), scene.work.join("bob"));
    for (how, files) in scene.files() {
        let (data, eof) = files.read(&files.absolute("data.bin"), 100, 1000).unwrap();
        assert_eq!((data.len(), eof), (1000, false), "{how}");
        let (data, eof) = files.read(&files.absolute("data.bin"), 9_500, 1000).unwrap();
        assert_eq!((data.len(), eof), (500, true), "{how}");
        for path in ["key", "bob/notes.txt", "../bob/notes.txt"] {
            let path = files.absolute(path);
            match files.read(&path, 0, 1 << 20) {
                Ok((data, _)) => panic!("{how}: {} read: {:?}", path.display(), String::from_utf8_lossy(&data)),
                Err(error) => assert!(!error.to_string().contains(SECRET), "{how}: {error}"),
            }
        }
        let secret = scene.home.join(".ssh/id_rsa");
        assert!(matches!(files.read(&secret, 0, 100), Err(HostFileError::Refused { .. })), "{how}");
        assert!(matches!(files.list(&scene.principals, 1, 10), Err(HostFileError::Refused { .. })), "{how}");
        assert!(matches!(files.stat(&scene.principals.join("bob/notes.txt")), Err(HostFileError::Refused { .. })));
        // A principal's own folder is described though its parent is closed; another's is not.
        let own = files.stat(&scene.work).unwrap().expect("the workspace is there");
        assert_eq!(own.stat.kind, Kind::Dir, "{how}");
        assert!(matches!(files.stat(&scene.principals.join("bob")), Err(HostFileError::Refused { .. })), "{how}");
        assert!(matches!(files.stat(&scene.principals), Err(HostFileError::Refused { .. })), "{how}");
    }
}

#[test]
fn changes_never_go_through_a_symlink_a_kernel_planted() {
    let scene = Scene::new();
    symlink(scene.outside.join("x"), scene.work.join("dangling"));
    symlink(&scene.outside, scene.work.join("out"));
    symlink(scene.home.join(".ssh"), scene.work.join("ssh"));
    symlink(scene.principals.join("bob"), scene.work.join("bob"));
    std::fs::create_dir(scene.work.join("real")).unwrap();
    for (how, files) in scene.files() {
        let writes =
            ["dangling", "out/marker", "ssh/authorized_keys", "bob/planted", "../bob/planted", "../../outside/marker"];
        for path in writes {
            let path = files.absolute(path);
            assert!(files.write(&path, b"x", false).is_err(), "{how}: wrote {}", path.display());
            assert!(files.replace(&path, b"x").is_err(), "{how}: replaced {}", path.display());
            assert!(files.make_dir(&path).is_err(), "{how}: made {}", path.display());
        }
        let error = files.write(&files.absolute("dangling"), b"x", false).unwrap_err();
        assert!(matches!(error, HostFileError::Symlink { .. }), "{how}: {error}");
        assert!(files.write(&scene.outside.join("marker"), b"x", false).is_err(), "{how}");
        assert!(files.rename(&files.absolute("real"), &scene.outside.join("moved")).is_err(), "{how}");
        // Removing a link removes the link, never what it leads to.
        let link = files.absolute("out-again");
        symlink(&scene.outside, &link);
        assert!(files.remove(&link).unwrap(), "{how}");
        assert!(scene.outside.is_dir() && !link.exists(), "{how}");
        assert!(files.remove(&files.absolute("ssh/id_rsa")).is_err(), "{how}");
        scene.assert_untouched();
        // The workspace itself works as it should.
        files.write(&files.absolute("real/a.txt"), b"one", false).unwrap();
        files.write(&files.absolute("real/a.txt"), b"two", true).unwrap();
        files.replace(&files.absolute("real/b.ipynb"), b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(scene.work.join("real/a.txt")).unwrap(), "onetwo", "{how}");
        assert!(files.make_dir(&files.absolute("real/new/deeper")).unwrap(), "{how}");
        let moved = files.rename(&files.absolute("real/b.ipynb"), &files.absolute("real/new/c.ipynb")).unwrap();
        assert_eq!(moved.stat.kind, Kind::File, "{how}");
        assert!(files.remove(&files.absolute("real")).unwrap(), "{how}");
        assert!(!scene.work.join("real").exists(), "{how}");
        std::fs::create_dir(scene.work.join("real")).unwrap();
    }
}

#[test]
fn walks_stay_in_what_may_be_read_and_stop_at_their_limit() {
    let scene = Scene::new();
    for i in 0..30 {
        std::fs::write(scene.work.join(format!("f{i:02}")), "x").unwrap();
    }
    symlink(&scene.outside, scene.work.join("out"));
    symlink(scene.principals.join("bob"), scene.work.join("bob"));
    std::fs::write(scene.outside.join("hidden-from-walks"), "x").unwrap();
    for (how, files) in scene.files() {
        let listed = files.list(&scene.work, 5, 100).unwrap();
        let names: Vec<_> = listed.iter().map(|e| e.path.strip_prefix(&scene.work).unwrap().to_path_buf()).collect();
        let entered = |n: &PathBuf| n.components().count() > 1 && (n.starts_with("out") || n.starts_with("bob"));
        assert!(!names.iter().any(entered), "{how}: entered a link: {names:?}");
        assert_eq!(names.len(), 32, "{how}: {names:?}");
        let bob = listed.iter().find(|e| e.path.ends_with("bob")).unwrap();
        assert_eq!(bob.link.as_ref().map(|(_, readable)| *readable), Some(false), "{how}: {bob:?}");
        let error = files.scan(&scene.work, true, 10).unwrap_err();
        assert!(matches!(error, HostFileError::TooMany { limit: 10, .. }), "{how}: {error}");
        let scanned = files.scan(&scene.work, true, 1000).unwrap();
        assert_eq!(scanned.len(), 32, "{how}");
    }
    std::fs::remove_file(scene.outside.join("hidden-from-walks")).unwrap();
}

/// A kernel swaps a folder for a symlink out of the workspace as fast as it
/// can while the host writes, replaces, makes folders and renames through
/// that folder: nothing may ever land outside.
#[test]
fn a_kernel_swapping_a_link_in_a_loop_never_wins() {
    let scene = Scene::new();
    let swapped = scene.work.join("d");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (swapped, outside, stop) = (swapped.clone(), scene.outside.clone(), stop.clone());
        std::thread::spawn(move || {
            let (link, dir) = (swapped.with_extension("link"), swapped.with_extension("dir"));
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::remove_file(&link);
                symlink(&outside, &link);
                let _ = std::fs::create_dir(&dir);
                let _ = std::fs::rename(&link, &swapped);
                let _ = std::fs::rename(&swapped, &link);
                let _ = std::fs::rename(&dir, &swapped);
                let _ = std::fs::rename(&swapped, &dir);
                swaps += 1;
            }
            swaps
        })
    };
    let mut done = 0;
    for (how, files) in scene.files() {
        for round in 0..2000 {
            let target = files.absolute(format!("d/marker-{round}"));
            let _ = files.write(&target, b"x", false);
            let _ = files.replace(&files.absolute("d/marker"), b"x");
            let _ = files.make_dir(&files.absolute("d/sub"));
            let _ = files.rename(&files.absolute("d/sub"), &files.absolute("d/sub2"));
            let _ = files.remove(&files.absolute("d/sub2"));
            done += 1;
        }
        assert!(done > 0, "{how}");
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the kernel side swapped only {swaps} times");
    scene.assert_untouched();
}

mod resolver_model {
    //! The path resolver against a model of what may be reached: random
    //! trees of folders, files and symlinks (inside, outside, to secrets),
    //! and random paths (`..`, absolute, unicode, long names) written, read,
    //! listed, made, renamed and removed. Whatever the path, nothing lands
    //! outside the workspace and no secret comes back; and a plain path into
    //! the workspace (no symlink on the way) always works.

    use proptest::prelude::*;

    use super::*;

    const NAMES: &[&str] = &["a", "b", "é", "日本", "..", ".", "link", "out", "key", "x"];

    #[derive(Debug, Clone)]
    enum Node {
        Dir(String),
        File(String),
        Link(String, u8),
    }

    fn node() -> impl Strategy<Value = Node> {
        let name =
            prop::sample::select(&["a", "b", "é", "日本", "link", "out", "key", "x", "d"][..]).prop_map(String::from);
        prop_oneof![
            name.clone().prop_map(Node::Dir),
            name.clone().prop_map(Node::File),
            (name, 0u8..6).prop_map(|(n, t)| Node::Link(n, t)),
        ]
    }

    fn path() -> impl Strategy<Value = String> {
        let part = prop_oneof![
            prop::sample::select(NAMES).prop_map(String::from),
            Just("y".repeat(300)),
            Just("z".repeat(255)),
        ];
        (prop::bool::weighted(0.2), prop::collection::vec(part, 1..6)).prop_map(|(absolute, parts)| {
            let joined = parts.join("/");
            if absolute { format!("/{joined}") } else { joined }
        })
    }

    /// Where the link number `t` leads.
    fn target(scene: &Scene, t: u8) -> PathBuf {
        match t {
            0 => scene.outside.clone(),
            1 => scene.home.join(".ssh"),
            2 => scene.home.join(".ssh/id_rsa"),
            3 => scene.principals.join("bob"),
            4 => scene.work.join("a"),
            _ => PathBuf::from("/proc/self"),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

        #[test]
        fn nothing_escapes_whatever_the_tree_and_the_path(
            tree in prop::collection::vec((prop::sample::select(&["", "a", "b/c", "é"][..]), node()), 0..12),
            paths in prop::collection::vec(path(), 1..12),
        ) {
            let scene = Scene::new();
            for (folder, node) in &tree {
                let base = scene.work.join(folder);
                // The scene is built by the test itself: never through a link it planted.
                if !resolve(&base).starts_with(&scene.work) {
                    continue;
                }
                let _ = std::fs::create_dir_all(&base);
                match node {
                    Node::Dir(name) => { let _ = std::fs::create_dir(base.join(name)); }
                    // `create_new` never follows a link planted earlier in the same tree.
                    Node::File(name) => {
                        if let Ok(mut file) = std::fs::File::create_new(base.join(name)) {
                            let _ = std::io::Write::write_all(&mut file, b"inside");
                        }
                    }
                    Node::Link(name, t) => { let _ = std::os::unix::fs::symlink(target(&scene, *t), base.join(name)); }
                }
            }
            for (how, files) in scene.files() {
                for path in &paths {
                    let p = files.absolute(path);
                    if let Ok((data, _)) = files.read(&p, 0, 1 << 16) {
                        prop_assert!(!String::from_utf8_lossy(&data).contains(SECRET), "{how}: {path} read a secret");
                    }
                    if let Ok(entries) = files.list(&p, 3, 1000) {
                        for entry in entries {
                            prop_assert!(!entry.path.to_string_lossy().contains("id_rsa") || entry.link.is_some(),
                                "{how}: {path} listed {:?}", entry.path);
                        }
                    }
                    let _ = files.write(&p, b"w", false);
                    let _ = files.write(&p.join("child"), b"w", true);
                    let _ = files.replace(&p, b"r");
                    let _ = files.make_dir(&p.join("m"));
                    let _ = files.rename(&p, &files.absolute("renamed"));
                    let _ = files.rename(&files.absolute("renamed"), &p);
                    let _ = files.remove(&p.join("m"));
                }
                scene.assert_untouched();
                // A plain path into the workspace always works.
                let plain = files.absolute("plain/nested/file.txt");
                prop_assert!(files.write(&plain, b"ok", false).is_ok(), "{how}");
                prop_assert_eq!(files.read(&plain, 0, 10).unwrap().0, b"ok".to_vec());
                prop_assert!(files.remove(&files.absolute("plain")).unwrap());
            }
        }
    }
}
