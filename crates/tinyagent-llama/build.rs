//! Empty: the build-dependencies in Cargo.toml only align the features of crates llama.cpp's
//! build script shares with other build scripts of the workspace.

fn main() {}
