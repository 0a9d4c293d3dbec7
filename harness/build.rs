//! Records `git describe` of the vac source being built, when it is a git checkout, so a
//! campaign's first record can name the exact vac that wrote it (`VAC_GIT_DESCRIBE`, empty
//! outside a checkout).
//!
//! It reruns only when what it describes can have changed: the commit (HEAD, refs) or the
//! workspace's sources, each of which rebuilds this crate anyway. Never on `.git/index`:
//! `git describe --dirty` refreshes the index itself, so watching it made every build the
//! next one's reason to rebuild the harness.

fn main() {
    let describe = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty", "--tags"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    println!("cargo:rustc-env=VAC_GIT_DESCRIBE={describe}");
    let watched = [
        "../.git/HEAD",
        "../.git/refs",
        "../.git/packed-refs",
        "../Cargo.lock",
        "../Cargo.toml",
    ]
    .into_iter()
    .map(String::from)
    .chain(
        ["receipts", "sandbox", "contracts", "analysis", "harness"]
            .iter()
            .flat_map(|c| [format!("../{c}/src"), format!("../{c}/Cargo.toml")]),
    );
    for path in watched {
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
