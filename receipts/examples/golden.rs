//! Regenerates the golden receipt directories under `tests/data/`:
//! `cargo run -p vac-receipts --example golden -- receipts/tests/data`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;

fn main() {
    let root = std::env::args().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data"),
        PathBuf::from,
    );
    common::golden::write_all(&root);
    println!("golden receipt chains written under {}", root.display());
}
