//! Extension modules (`~/.cellbox/modules/*.py`, `<cwd>/.cellbox/modules/*.py`)
//! run after the prelude in every new Python kernel.

mod common;

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
