//! Sets the `cfg`s of `PyO3` for the Python being built for (`Py_3_12`, `Py_3_14`,
//! `Py_LIMITED_API`, ...), so that the code reading the interpreter's structs
//! directly (`src/ffi/`) is compiled only for the versions whose layout it knows.

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
