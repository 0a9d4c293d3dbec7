//! `vac campaign deploy`: the manifests of `deploy/` rendered for one campaign — a
//! Kubernetes Indexed Job with its merge Job, and a Slurm job array with its merge step.

use std::path::Path;

use super::{Campaign, Shard};

const KUBERNETES: &str = include_str!("../../../deploy/kubernetes/campaign.yaml");
const SLURM: &str = include_str!("../../../deploy/slurm/campaign.sbatch");
const SLURM_MERGE: &str = include_str!("../../../deploy/slurm/merge.sbatch");

/// Where the rendered manifests run.
#[derive(Debug, Clone)]
pub struct Deploy {
    pub shards: u32,
    /// The container image with vac in it (Kubernetes).
    pub image: String,
    /// The PersistentVolumeClaim the shards write to and the merge reads (Kubernetes).
    pub claim: String,
    /// The shared directory the shards write under (Slurm): a path every node sees.
    pub out: String,
}

/// The files to write: (file name, text).
pub fn render(campaign: &Campaign, deploy: &Deploy) -> Vec<(&'static str, String)> {
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
    let indented: String = campaign
        .text
        .lines()
        .map(|l| format!("    {l}\n"))
        .collect();
    let k8s_dirs: String = shards
        .iter()
        .map(|s| format!(", \"/runs/{id}/{}\"", s.dir_name()))
        .collect();
    let slurm_dirs: String = shards
        .iter()
        .map(|s| format!(" {}/{}", deploy.out, s.dir_name()))
        .collect();
    let fill = |template: &str| {
        template
            .replace("{{NAME}}", &campaign.name)
            .replace("{{ID}}", &id)
            .replace("{{FILE}}", &campaign.file.display().to_string())
            .replace("{{SHARDS}}", &deploy.shards.to_string())
            .replace("{{LAST}}", &deploy.shards.saturating_sub(1).to_string())
            .replace("{{IMAGE}}", &deploy.image)
            .replace("{{CLAIM}}", &deploy.claim)
            .replace("{{OUT}}", &deploy.out)
            .replace(
                "{{CAMPAIGN_PATH}}",
                &std::path::absolute(&campaign.file)
                    .unwrap_or_else(|_| campaign.file.clone())
                    .display()
                    .to_string(),
            )
            .replace("{{CAMPAIGN_INDENTED}}\n", &indented)
            .replace("{{SHARD_DIRS_JSON}}", &k8s_dirs)
            .replace("{{SHARD_DIRS}}", &slurm_dirs)
    };
    vec![
        ("kubernetes.yaml", fill(KUBERNETES)),
        ("campaign.sbatch", fill(SLURM)),
        ("merge.sbatch", fill(SLURM_MERGE)),
    ]
}

/// Writes the rendered files into `dir` (created); refuses to overwrite one.
pub fn write(
    dir: &Path,
    files: &[(&'static str, String)],
) -> std::io::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        written.push(path);
    }
    Ok(written)
}
