//! Write the wires' JSON Schemas to `schema/` at the repository's root.

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema");
    std::fs::create_dir_all(&root).expect("schema/ can be made");
    for (name, text) in cellbox_protocol::schema::files() {
        let path = root.join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        println!("wrote schema/{name}");
    }
}
