//! Records `git describe` of the vac source being built, when it is a git checkout, so a
//! campaign's first record can name the exact vac that wrote it (`VAC_GIT_DESCRIBE`, empty
//! outside a checkout).

fn main() {
    let describe = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty", "--tags"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    println!("cargo:rustc-env=VAC_GIT_DESCRIBE={describe}");
    for path in ["../.git/HEAD", "../.git/index", "../.git/refs"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
