//! `airunway-sandbox`: placeholder until the sandbox lands.
fn main() {}
