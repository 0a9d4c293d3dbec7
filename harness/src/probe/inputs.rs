//! What a user gives one target beyond its command: environment variables, files planted
//! in the lab, argument hints for the planner, and the lab placeholders `{work}`, `{home}`
//! and `{tmp}` in all of them (servers take their allowed directory or database path on
//! the command line: `-- mcp-server-git --repository {work}/repo`).
//!
//! Inputs are recorded in the receipts' configuration and plan before the first call, and
//! the planted files go into the lab of every run, control and subject alike.

use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;
use vac_sandbox::LabView;

/// Files one `--plant` may bring into the lab at most, and their bytes.
pub const MAX_PLANT_FILES: usize = 4096;
pub const MAX_PLANT_BYTES: u64 = 64 << 20;

/// Everything a user gives one target.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Inputs {
    /// `--env K=V`: set in the server's environment (after placeholders).
    pub env: Vec<EnvVar>,
    /// `--plant SRC:LABPATH`.
    pub plants: Vec<Plant>,
    /// `--arg TOOL.FIELD=VALUE`.
    pub args: Vec<ArgHint>,
    /// `--expose PATH`: host paths left visible to the server inside the hidden ones
    /// (its installation's own directories are found from the command without this).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expose: Vec<std::path::PathBuf>,
    /// Host paths the command's start needs beside its installation (a Python module named
    /// by `-m` or `module:object` where vac was started: [`super::start::as_installed`]),
    /// kept visible with the reason the visibility record gives.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub start: Vec<vac_sandbox::Exposure>,
}

impl Inputs {
    /// The `--env` variables as (name, value) pairs, as the receipts' configuration
    /// records them (placeholders unexpanded).
    pub fn env_pairs(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect()
    }
}

/// One `--env K=V`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

/// One `--plant SRC:LABPATH`: a host file or directory copied into the lab's working
/// directory at `lab_path` (relative, without `..`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plant {
    pub source: PathBuf,
    pub lab_path: PathBuf,
}

/// One `--arg TOOL.FIELD=VALUE`: the value the planner gives `field` in every call of
/// `tool` (JSON if it parses as JSON, else the text as a string).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArgHint {
    pub tool: String,
    pub field: String,
    pub value: Value,
}

/// Why an input is refused; each names the input as given.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InputError {
    #[error("--env {given:?}: expected NAME=VALUE with a NAME of letters, digits and _")]
    Env { given: String },
    #[error(
        "--plant {given:?}: expected SRC:LABPATH, LABPATH relative to the lab's work directory"
    )]
    PlantForm { given: String },
    #[error(
        "--plant {given:?}: LABPATH {lab_path:?} must be relative and stay inside the lab's work directory"
    )]
    PlantPath { given: String, lab_path: String },
    #[error("--plant {path}: {problem}")]
    PlantSource { path: String, problem: String },
    #[error("--arg {given:?}: expected TOOL.FIELD=VALUE")]
    Arg { given: String },
}

impl FromStr for EnvVar {
    type Err = InputError;

    fn from_str(given: &str) -> Result<EnvVar, InputError> {
        let refused = || InputError::Env {
            given: given.to_string(),
        };
        let (name, value) = given.split_once('=').ok_or_else(refused)?;
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid || value.contains('\0') {
            return Err(refused());
        }
        Ok(EnvVar {
            name: name.to_string(),
            value: value.to_string(),
        })
    }
}

impl FromStr for Plant {
    type Err = InputError;

    fn from_str(given: &str) -> Result<Plant, InputError> {
        let (source, lab_path) = given
            .rsplit_once(':')
            .filter(|(s, l)| !s.is_empty() && !l.is_empty())
            .ok_or_else(|| InputError::PlantForm {
                given: given.to_string(),
            })?;
        let relative = Path::new(lab_path);
        let inside = relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
            && relative
                .components()
                .any(|c| matches!(c, Component::Normal(_)));
        if !inside {
            return Err(InputError::PlantPath {
                given: given.to_string(),
                lab_path: lab_path.to_string(),
            });
        }
        Ok(Plant {
            source: PathBuf::from(source),
            lab_path: relative.components().collect(),
        })
    }
}

impl FromStr for ArgHint {
    type Err = InputError;

    fn from_str(given: &str) -> Result<ArgHint, InputError> {
        let refused = || InputError::Arg {
            given: given.to_string(),
        };
        let (name, value) = given.split_once('=').ok_or_else(refused)?;
        let (tool, field) = name.rsplit_once('.').ok_or_else(refused)?;
        if tool.is_empty() || field.is_empty() {
            return Err(refused());
        }
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        Ok(ArgHint {
            tool: tool.to_string(),
            field: field.to_string(),
            value,
        })
    }
}

/// `text` with `{work}`, `{home}` and `{tmp}` replaced by the lab's paths as the server
/// sees them. Other braces are left as they are (JSON in a hint has its own).
pub fn expand(text: &str, lab: &LabView) -> String {
    let places = [
        ("{work}", lab.work()),
        ("{home}", lab.home()),
        ("{tmp}", lab.tmp()),
    ];
    places.iter().fold(text.to_string(), |text, (token, path)| {
        text.replace(token, &path.display().to_string())
    })
}

/// A JSON value with the placeholders expanded in every string of it.
pub fn expand_value(value: &Value, lab: &LabView) -> Value {
    match value {
        Value::String(text) => Value::String(expand(text, lab)),
        Value::Array(items) => Value::Array(items.iter().map(|v| expand_value(v, lab)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), expand_value(v, lab)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// One file a plant brings into the lab: its path relative to the lab root, its bytes and
/// its permission bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlantedFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub mode: u32,
}

/// The files of every plant, read from the host: a file, or every regular file under a
/// directory (symbolic links are refused, not followed), at most [`MAX_PLANT_FILES`]
/// files and [`MAX_PLANT_BYTES`] bytes in all.
pub fn read_plants(plants: &[Plant]) -> Result<Vec<PlantedFile>, InputError> {
    let mut files = Vec::new();
    let mut bytes = 0u64;
    for plant in plants {
        let target = Path::new("work").join(&plant.lab_path);
        let mut pending = vec![(plant.source.clone(), target)];
        while let Some((source, target)) = pending.pop() {
            let problem = |problem: String| InputError::PlantSource {
                path: source.display().to_string(),
                problem,
            };
            let meta = std::fs::symlink_metadata(&source).map_err(|e| problem(e.to_string()))?;
            if meta.is_dir() {
                let mut entries: Vec<_> = std::fs::read_dir(&source)
                    .map_err(|e| problem(e.to_string()))?
                    .map(|e| e.map(|e| e.file_name()))
                    .collect::<Result<_, _>>()
                    .map_err(|e| problem(e.to_string()))?;
                entries.sort();
                for name in entries.into_iter().rev() {
                    pending.push((source.join(&name), target.join(&name)));
                }
                continue;
            }
            if !meta.is_file() {
                return Err(problem(
                    "not a regular file or directory (symbolic links are not followed)".into(),
                ));
            }
            bytes += meta.len();
            if files.len() >= MAX_PLANT_FILES || bytes > MAX_PLANT_BYTES {
                return Err(problem(format!(
                    "the plants exceed {MAX_PLANT_FILES} files or {} MiB",
                    MAX_PLANT_BYTES >> 20
                )));
            }
            let content = std::fs::read(&source).map_err(|e| problem(e.to_string()))?;
            use std::os::unix::fs::PermissionsExt;
            files.push(PlantedFile {
                path: target,
                bytes: content,
                mode: meta.permissions().mode() & 0o777,
            });
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inputs_parse_and_bad_ones_are_named() {
        let env: EnvVar = "REPO={work}/repo".parse().unwrap();
        assert_eq!(
            (env.name.as_str(), env.value.as_str()),
            ("REPO", "{work}/repo")
        );
        assert!("=x".parse::<EnvVar>().is_err());
        assert!("1X=y".parse::<EnvVar>().is_err());
        let error = "NOEQUALS".parse::<EnvVar>().unwrap_err().to_string();
        assert!(error.contains("\"NOEQUALS\""), "{error}");

        let plant: Plant = "/srv/data:db/app.sqlite".parse().unwrap();
        assert_eq!(plant.source, PathBuf::from("/srv/data"));
        assert_eq!(plant.lab_path, PathBuf::from("db/app.sqlite"));
        for bad in [
            "/srv/x:/etc/passwd",
            "/srv/x:../up",
            "/srv/x:a/../../b",
            "/srv/x",
            ":a",
            "/srv/x:.",
        ] {
            let error = bad.parse::<Plant>().unwrap_err().to_string();
            assert!(error.contains(bad), "{bad}: {error}");
        }

        let hint: ArgHint = "git_log.max_count=3".parse().unwrap();
        assert_eq!(
            (hint.tool.as_str(), hint.field.as_str()),
            ("git_log", "max_count")
        );
        assert_eq!(hint.value, json!(3));
        let hint: ArgHint = "ns.tool.path={work}/repo".parse().unwrap();
        assert_eq!(
            (hint.tool.as_str(), hint.field.as_str()),
            ("ns.tool", "path")
        );
        assert_eq!(hint.value, json!("{work}/repo"));
        assert!("tool=3".parse::<ArgHint>().is_err());
        assert!(".f=3".parse::<ArgHint>().is_err());
    }

    #[test]
    fn placeholders_become_the_lab_paths_the_server_sees() {
        let lab = vac_sandbox::Lab::new().view();
        let work = lab.work().display().to_string();
        assert_eq!(
            expand("--repository {work}/repo", &lab),
            format!("--repository {work}/repo")
        );
        assert_eq!(
            expand("{home}:{tmp}", &lab),
            format!("{}:{}", lab.home().display(), lab.tmp().display())
        );
        assert_eq!(expand("{other} {\"a\":1}", &lab), "{other} {\"a\":1}");
        let value = expand_value(&json!({"paths": ["{work}/a"], "n": 1}), &lab);
        assert_eq!(value, json!({"paths": [format!("{work}/a")], "n": 1}));
    }

    #[test]
    fn plants_copy_files_and_trees_and_refuse_links() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("repo");
        std::fs::create_dir_all(tree.join("sub")).unwrap();
        std::fs::write(tree.join("a.txt"), b"a").unwrap();
        std::fs::write(tree.join("sub/b.txt"), b"bb").unwrap();
        let plant = |spec: String| spec.parse::<Plant>().unwrap();
        let files = read_plants(&[plant(format!("{}:repo", tree.display()))]).unwrap();
        let paths: Vec<_> = files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(
            paths,
            [
                PathBuf::from("work/repo/a.txt"),
                PathBuf::from("work/repo/sub/b.txt")
            ]
        );
        assert_eq!(files[1].bytes, b"bb");

        std::os::unix::fs::symlink("/etc/passwd", tree.join("link")).unwrap();
        let error = read_plants(&[plant(format!("{}:repo", tree.display()))])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("link") && error.contains("symbolic"),
            "{error}"
        );
        let error = read_plants(&[plant("/nonexistent/x:y".into())])
            .unwrap_err()
            .to_string();
        assert!(error.contains("/nonexistent/x"), "{error}");
    }
}
