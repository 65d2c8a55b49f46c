//! An extension module leaves Python's symbols to the interpreter that loads
//! it; on macOS the linker must be told so.

fn main() {
    pyo3_build_config::add_extension_module_link_args();
}
