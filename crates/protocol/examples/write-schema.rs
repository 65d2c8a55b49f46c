//! Write the files generated from the wires (the JSON Schemas under `schema/`, the Python SDK's
//! `_wire.py`) at the repository's root.

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (name, text) in cellbox_protocol::schema::files() {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).expect("its folder can be made");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        println!("wrote {name}");
    }
}
