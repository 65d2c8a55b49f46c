//! Extension modules (`~/.cellbox/modules/*.py`, `<cwd>/.cellbox/modules/*.py`)
//! run after the prelude in every new Python kernel.

use crate::common;

use std::path::Path;
use std::process::Output;

fn cellbox(cwd: &Path, user_modules: &Path, args: &[&str]) -> Output {
    common::binary::cellbox(args)
        .env("CELLBOX_MODULES_DIR", user_modules)
        .env_remove("CELLBOX_BACKEND")
        .env_remove("CELLBOX_GATEWAY_URL")
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn user_and_project_modules_load_and_the_project_wins() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let user = home.path().join("modules");
    write(&user.join("greet.py"), "def greet():\n    return 'user greet'\n");
    write(&user.join("only_user.py"), "USER_ONLY = 1\n");
    write(&project.path().join(".cellbox/modules/greet.py"), "def greet():\n    return 'project greet'\n");
    let output = cellbox(project.path(), &user, &["run", "-c", "print(greet(), USER_ONLY, 'read' in dir())"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout, "project greet 1 True\n");
}

#[test]
fn a_failing_module_is_named_in_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    write(&project.path().join(".cellbox/modules/broken.py"), "raise ValueError('bad setup')\n");
    let output = cellbox(project.path(), &home.path().join("none"), &["run", "-c", "1"]);
    let all = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!output.status.success());
    assert!(all.contains("an extension module failed: ValueError: bad setup"), "{all}");
    assert!(all.contains("broken.py"), "{all}");
}

/// A project's modules folder is the kernels' to write: what a cell plants
/// there is read with the kernel's rights, never the host's. Links to a
/// secret, to the host's own environment, to a device, a FIFO and a huge
/// file each stop the start with a clear error and never show their content;
/// a link to a file the kernel may read still works.
#[cfg(unix)]
#[test]
fn planted_modules_are_read_with_the_kernels_rights() {
    const SECRET: &str = "module-canary-5b1e";
    let home = tempfile::tempdir().unwrap();
    write(&home.path().join(".ssh/id_rsa"), SECRET);
    type Plant<'a> = Box<dyn Fn(&Path) + 'a>;
    let attempts: Vec<(&str, Plant, &str)> = vec![
        (
            "a link to a secret",
            Box::new(|m: &Path| symlink(&home.path().join(".ssh/id_rsa"), &m.join("k.py"))),
            "secret",
        ),
        (
            "the host's environment",
            Box::new(|m: &Path| symlink(Path::new("/proc/self/environ"), &m.join("e.py"))),
            "/proc",
        ),
        ("a device", Box::new(|m: &Path| symlink(Path::new("/dev/zero"), &m.join("z.py"))), "/dev"),
        (
            "a FIFO",
            Box::new(|m: &Path| {
                nix::unistd::mkfifo(&m.join("f.py"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap()
            }),
            "FIFO",
        ),
        (
            "a huge file",
            Box::new(|m: &Path| std::fs::File::create(m.join("big.py")).unwrap().set_len(64 << 20).unwrap()),
            "more than 1 MiB",
        ),
        (
            "a linked folder of secrets",
            Box::new(|m: &Path| symlink(&home.path().join(".ssh"), &m.join("sub.py"))),
            "secret",
        ),
        ("a folder named like a module", Box::new(|m: &Path| std::fs::create_dir(m.join("sub.py")).unwrap()), ""),
    ];
    for (what, plant, says) in attempts {
        let project = tempfile::tempdir().unwrap();
        let modules = project.path().join(".cellbox/modules");
        std::fs::create_dir_all(&modules).unwrap();
        plant(&modules);
        let output = common::binary::cellbox(["run", "-c", "print('started')"])
            .env("HOME", home.path())
            .env("CELLBOX_MODULES_DIR", home.path().join("none"))
            .env("MODULE_CANARY", SECRET)
            .env_remove("CELLBOX_BACKEND")
            .current_dir(project.path())
            .output()
            .unwrap();
        let all = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(!all.contains(SECRET), "{what}: the secret came back: {all}");
        if says.is_empty() {
            // A folder named like a module is no module: the kernel starts.
            assert!(output.status.success() && all.contains("started"), "{what}: {all}");
        } else {
            assert!(!output.status.success(), "{what}: started anyway: {all}");
            assert!(all.contains("could not read the extension module") && all.contains(says), "{what}: {all}");
        }
    }

    // A link to a module the kernel may read is a module.
    let project = tempfile::tempdir().unwrap();
    write(&project.path().join("lib/helpers.py"), "HELPER = 'linked'\n");
    std::fs::create_dir_all(project.path().join(".cellbox/modules")).unwrap();
    symlink(&project.path().join("lib/helpers.py"), &project.path().join(".cellbox/modules/helpers.py"));
    let output = cellbox(project.path(), &home.path().join("none"), &["run", "-c", "print(HELPER)"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "linked\n", "{}", String::from_utf8_lossy(&output.stderr));
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Every kernel's start reads all of its modules in the host: a cell's thousand links to one
/// file are held to the count and total a kernel may have, with the reason.
#[cfg(unix)]
#[test]
fn modules_are_bounded_in_number_and_in_all() {
    let home = tempfile::tempdir().unwrap();
    for (what, count, size, says) in
        [("many modules", 65, 10, "more than 64 modules"), ("many megabytes", 9, 1 << 20, "together pass 8 MiB")]
    {
        let project = tempfile::tempdir().unwrap();
        let modules = project.path().join(".cellbox/modules");
        std::fs::create_dir_all(&modules).unwrap();
        let one = project.path().join("one.py");
        std::fs::write(&one, format!("{}\n", "#".repeat(size - 1))).unwrap();
        for n in 0..count {
            symlink(&one, &modules.join(format!("m{n:03}.py")));
        }
        let output = cellbox(project.path(), &home.path().join("none"), &["run", "-c", "print('started')"]);
        let all = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(!output.status.success(), "{what}: started anyway: {all}");
        assert!(all.contains(says), "{what}: {all}");
    }
}
