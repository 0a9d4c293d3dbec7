//! `vac campaign deploy`: one campaign made a bundle that runs on a cluster — the campaign
//! file and every file it references (contracts, plants' sources, exposed paths, CA files,
//! programs given by a relative path), the Slurm job array and its merge step, and the
//! Kubernetes manifests (a volume claim, a ConfigMap of the bundle, the shards' Indexed Job,
//! and the merge Job applied once they completed), all from the templates of `deploy/`.
//!
//! The Slurm scripts name every path relative to the directory they are submitted from (the
//! bundle, or a copy of it on storage every node sees). Both treat exit 1 (a violation
//! confirmed) and 5 (incomplete cells) as findings, not failed jobs, and a retried merge
//! verifies the merge already written instead of refusing to overwrite it.

use std::path::{Path, PathBuf};

use base64::Engine;

use super::{Campaign, Shard};

const KUBERNETES: &str = include_str!("../../../deploy/kubernetes/campaign.yaml");
const KUBERNETES_MERGE: &str = include_str!("../../../deploy/kubernetes/merge.yaml");
const SLURM: &str = include_str!("../../../deploy/slurm/campaign.sbatch");
const SLURM_MERGE: &str = include_str!("../../../deploy/slurm/merge.sbatch");

/// The bundle's directory for the campaign and its files.
pub const BUNDLE: &str = "campaign";

/// A ConfigMap holds at most 1 MiB; the bundle must leave room for the rest of it.
const CONFIG_MAP_BYTES: usize = 900 * 1024;

/// Where the rendered manifests run.
#[derive(Debug, Clone)]
pub struct Deploy {
    pub shards: u32,
    /// The container image with vac in it (Kubernetes; `deploy/Containerfile` builds it).
    pub image: String,
    /// The PersistentVolumeClaim the manifests create, the shards write to and the merge
    /// reads (Kubernetes).
    pub claim: String,
    /// Its size (Kubernetes quantity).
    pub storage: String,
    /// Where the Slurm shards write: relative to the directory the scripts are submitted
    /// from, unless absolute.
    pub out: String,
}

/// Why a campaign could not be made a bundle.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "the campaign's files come to {bytes} bytes, more than a ConfigMap holds ({CONFIG_MAP_BYTES}): put them in the image or on the claim"
    )]
    TooBig { bytes: usize },
}

/// What `render` makes: files to write, relative to the bundle's directory, and the
/// absolute paths the campaign names, which must exist on every node.
#[derive(Debug)]
pub struct Bundle {
    pub files: Vec<(PathBuf, Vec<u8>)>,
    pub absolute: Vec<String>,
}

/// The paths a campaign file references, as written: relative ones are bundled.
fn referenced(text: &str) -> Vec<String> {
    let Ok(document) = toml::from_str::<toml::Table>(text) else {
        return Vec::new();
    };
    let targets = document
        .get("target")
        .and_then(|t| t.as_array())
        .cloned()
        .unwrap_or_default();
    let mut paths = Vec::new();
    for target in &targets {
        let text = |key: &str| target.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let list = |key: &str| -> Vec<String> {
            target
                .get(key)
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        if let Some(program) = list("command").first().filter(|p| p.contains('/')) {
            paths.push(program.clone());
        }
        paths.extend(text("contract").filter(|c| c != "intent" && c != "annotations"));
        paths.extend(text("ca"));
        paths.extend(list("expose"));
        for plant in list("plant") {
            if let Ok(plant) = plant.parse::<crate::probe::inputs::Plant>() {
                paths.push(plant.source.to_string_lossy().into_owned());
            }
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// Every file under `path` (itself when a file), with its bytes.
fn files_under(path: &Path, into: &mut Vec<(PathBuf, Vec<u8>)>) -> Result<(), DeployError> {
    let read_error = |source| DeployError::Read {
        path: path.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read_error)?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(read_error)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            files_under(&entry, into)?;
        }
    } else {
        into.push((path.to_path_buf(), std::fs::read(path).map_err(read_error)?));
    }
    Ok(())
}

/// `path` with `.` and `..` taken lexically.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The campaign and the files it references, under [`BUNDLE`], at their places relative to
/// the deepest directory that holds them all: a reference that leaves the campaign's
/// directory (`../tls/ca.pem`) still resolves in the bundle, and the campaign's text is
/// carried unchanged.
pub fn bundle(campaign: &Campaign) -> Result<Bundle, DeployError> {
    let file =
        lexical(&std::path::absolute(&campaign.file).unwrap_or_else(|_| campaign.file.clone()));
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut absolute = Vec::new();
    let mut sources = Vec::new();
    for path in referenced(&campaign.text) {
        if Path::new(&path).is_absolute() {
            absolute.push(path);
        } else {
            sources.push(lexical(&base.join(&path)));
        }
    }
    let mut root = base.clone();
    for source in &sources {
        while !source.starts_with(&root) {
            if !root.pop() {
                break;
            }
        }
    }
    let within = |path: &Path| Path::new(BUNDLE).join(path.strip_prefix(&root).unwrap_or(path));
    let mut files = vec![(within(&file), campaign.text.clone().into_bytes())];
    for source in &sources {
        let mut found = Vec::new();
        files_under(source, &mut found)?;
        files.extend(
            found
                .into_iter()
                .map(|(path, bytes)| (within(&path), bytes)),
        );
    }
    // The campaign first: the scripts name it.
    files[1..].sort();
    files.dedup_by(|a, b| a.0 == b.0);
    Ok(Bundle { files, absolute })
}

/// The bundle, the Slurm scripts and the Kubernetes manifests: (path in the bundle, bytes).
pub fn render(campaign: &Campaign, deploy: &Deploy) -> Result<Bundle, DeployError> {
    let mut bundle = bundle(campaign)?;
    let id: String = campaign
        .name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .trim_matches('-')
        .chars()
        .take(40)
        .collect();
    let id = if id.is_empty() {
        "campaign".to_owned()
    } else {
        id
    };
    let shards: Vec<Shard> = (0..deploy.shards)
        .map(|index| Shard {
            index,
            count: deploy.shards,
        })
        .collect();
    let k8s_dirs: String = shards
        .iter()
        .map(|s| format!(" /runs/{id}/{}", s.dir_name()))
        .collect();
    let slurm_dirs: String = shards
        .iter()
        .map(|s| format!(" {}/{}", deploy.out, s.dir_name()))
        .collect();
    // The ConfigMap: every file of the bundle, base64 (bytes exact), projected back to its
    // path; the campaign's text also as a comment, for the reader.
    let mut data = String::new();
    let mut items = String::new();
    let mut bytes = 0;
    for (n, (path, content)) in bundle.files.iter().enumerate() {
        let within = path.strip_prefix(BUNDLE).unwrap_or(path);
        let key = format!("f{n}");
        bytes += content.len();
        data.push_str(&format!(
            "  {key}: {}\n",
            base64::engine::general_purpose::STANDARD.encode(content)
        ));
        items.push_str(&format!(
            "              - {{ key: {key}, path: {} }}\n",
            yaml_string(&within.to_string_lossy())
        ));
    }
    if bytes > CONFIG_MAP_BYTES {
        return Err(DeployError::TooBig { bytes });
    }
    let commented: String = campaign
        .text
        .lines()
        .map(|l| format!("#   {l}\n"))
        .collect();
    let campaign_file = bundle.files[0]
        .0
        .strip_prefix(BUNDLE)
        .unwrap_or(&bundle.files[0].0)
        .to_string_lossy()
        .into_owned();
    let fill = |template: &str| {
        template
            .replace("{{NAME}}", &campaign.name)
            .replace("{{ID}}", &id)
            .replace("{{FILE}}", &campaign.file.display().to_string())
            .replace("{{SHARDS}}", &deploy.shards.to_string())
            .replace("{{LAST}}", &deploy.shards.saturating_sub(1).to_string())
            .replace("{{IMAGE}}", &deploy.image)
            .replace("{{CLAIM}}", &deploy.claim)
            .replace("{{STORAGE}}", &deploy.storage)
            .replace("{{OUT}}", &deploy.out)
            .replace("{{BUNDLE}}", BUNDLE)
            .replace("{{CAMPAIGN_FILE}}", &campaign_file)
            .replace("{{CAMPAIGN_COMMENTED}}\n", &commented)
            .replace("{{CONFIG_DATA}}\n", &data)
            .replace("{{CONFIG_ITEMS}}\n", &items)
            .replace("{{K8S_SHARD_DIRS}}", &k8s_dirs)
            .replace("{{SHARD_DIRS}}", &slurm_dirs)
    };
    for (name, template) in [
        ("kubernetes.yaml", KUBERNETES),
        ("kubernetes-merge.yaml", KUBERNETES_MERGE),
        ("campaign.sbatch", SLURM),
        ("merge.sbatch", SLURM_MERGE),
    ] {
        bundle
            .files
            .push((name.into(), fill(template).into_bytes()));
    }
    Ok(bundle)
}

/// A YAML double-quoted string.
fn yaml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// Writes the bundle into `dir` (created); refuses to overwrite a file.
pub fn write(dir: &Path, bundle: &Bundle) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (name, bytes) in &bundle.files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        std::io::Write::write_all(&mut file, bytes)?;
        #[cfg(unix)]
        if name.extension().is_some_and(|e| e == "sbatch") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaign_names_its_files_by_these_keys() {
        let text = r#"
name = "x"
[[target]]
id = "a"
command = ["./bin/server.py", "--flag"]
contract = "contracts/a.toml"
plant = ["data/repo:work/repo"]
expose = ["/opt/tools"]
[[target]]
id = "b"
command = ["npx", "b"]
contract = "intent"
ca = "certs/ca.pem"
"#;
        assert_eq!(
            referenced(text),
            [
                "./bin/server.py",
                "/opt/tools",
                "certs/ca.pem",
                "contracts/a.toml",
                "data/repo"
            ]
        );
    }
}
