//! Loading the JSON case files under `tests/data/<kind>/`.

use std::path::PathBuf;

use serde::de::DeserializeOwned;

/// Every case of every `*.json` file under `tests/data/<kind>/`, with `file:name` labels.
pub(crate) fn cases<T: DeserializeOwned + Named>(kind: &str) -> Vec<(String, T)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(kind);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let cases: Vec<T> = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("parsing {}: {e}", file.display()));
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        all.extend(
            cases
                .into_iter()
                .map(|c| (format!("{stem}:{}", c.name()), c)),
        );
    }
    assert!(!all.is_empty(), "no cases under {}", dir.display());
    all
}

pub(crate) trait Named {
    fn name(&self) -> &str;
}
