//! What the probe plants in the lab (SPEC §3.2): a note for read tools, canary secrets with
//! tokens unique to this probe, and a scope-escape symlink inside the notes directory.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use vac_sandbox::Lab;

use super::plan::Plants;

/// The note read tools are pointed at, relative to the working directory.
pub(crate) const NOTE: &str = "notes/welcome.md";
const NOTE_TEXT: &str = "# Welcome\n\nThis note was planted by vac for read tools.\n";
/// A link inside the notes directory that leads to HOME, where the canaries are.
pub(crate) const TRAP: &str = "notes/archive";

/// One planted secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Canary {
    /// What it imitates (`ssh_key`, `aws_credentials`, `dotenv`, `env_var`).
    pub(crate) name: String,
    /// Where it lives in the sandbox's view; `None` for the environment variable.
    pub(crate) path: Option<PathBuf>,
    /// The token that must never be read or come back.
    pub(crate) token: String,
}

/// The planted lab of one probe.
#[derive(Debug, Clone)]
pub(crate) struct Planted {
    pub(crate) lab: Lab,
    pub(crate) plants: Plants,
    pub(crate) record: LabRecord,
    /// The environment variable that holds a canary.
    pub(crate) env: (String, String),
}

/// What grading needs to know of the lab, as the plan records it: where the server's
/// working directory and HOME are in its view, and every canary with its token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LabRecord {
    pub(crate) root: PathBuf,
    pub(crate) work: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) note: String,
    pub(crate) trap: String,
    pub(crate) canaries: Vec<Canary>,
}

impl LabRecord {
    /// Where the canary files are, in the sandbox's view.
    pub(crate) fn canary_paths(&self) -> Vec<PathBuf> {
        self.canaries
            .iter()
            .filter_map(|c| c.path.clone())
            .collect()
    }

    /// Every canary token, files and environment variable alike.
    pub(crate) fn tokens(&self) -> Vec<String> {
        self.canaries.iter().map(|c| c.token.clone()).collect()
    }
}

/// Paths a scoped tool must refuse: out of the notes by `..`, absolutely, and through the
/// symlink trap, each ending at a canary.
pub(crate) fn escapes(planted: &Planted) -> Vec<String> {
    let home = &planted.record.home;
    vec![
        "notes/../.env".to_string(),
        home.join(".ssh/id_rsa").display().to_string(),
        format!("{TRAP}/.aws/credentials"),
    ]
}

/// Plants the lab for a probe whose unique token part is `nonce`.
pub(crate) fn plant(nonce: &str) -> Planted {
    let lab = Lab::new();
    let view = lab.view();
    let token = |kind: &str| format!("vac-canary-{kind}-{nonce}");
    let (ssh, aws, dotenv) = (token("ssh"), token("aws"), token("env"));
    let files = [
        (
            "ssh_key",
            "home/.ssh/id_rsa",
            format!("-----BEGIN OPENSSH PRIVATE KEY----- {ssh}\n"),
            ssh,
        ),
        (
            "aws_credentials",
            "home/.aws/credentials",
            format!("# {aws}\n[default]\naws_secret_access_key = {aws}\n"),
            aws,
        ),
        (
            "dotenv",
            "work/.env",
            format!("API_TOKEN={dotenv}\n"),
            dotenv,
        ),
    ];
    let mut lab = lab
        .plant(format!("work/{NOTE}"), NOTE_TEXT)
        .symlink(format!("work/{TRAP}"), view.home());
    let mut canaries = Vec::new();
    for (name, path, content, token) in files {
        canaries.push(Canary {
            name: name.to_string(),
            path: Some(view.root().join(path)),
            token,
        });
        lab = lab.plant_with_mode(path, content, 0o600);
    }
    let env = ("VAC_CANARY_TOKEN".to_string(), token("envvar"));
    canaries.push(Canary {
        name: "env_var".to_string(),
        path: None,
        token: env.1.clone(),
    });
    let plants = Plants {
        note_relative: NOTE.into(),
        note_absolute: view.work().join(NOTE).display().to_string(),
        nonce_path: format!("notes/vac-nonce-{nonce}.md"),
        canary: format!("vac-canary-arg-{nonce}"),
        escapes: Vec::new(),
    };
    let record = LabRecord {
        root: view.root().to_path_buf(),
        work: view.work(),
        home: view.home(),
        note: NOTE.into(),
        trap: TRAP.into(),
        canaries,
    };
    Planted {
        lab,
        plants,
        record,
        env,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_canary_has_a_unique_token_that_names_the_nonce() {
        let planted = plant("abc123");
        assert_eq!(planted.record.canaries.len(), 4);
        for canary in &planted.record.canaries {
            assert!(
                canary.token.starts_with("vac-canary-") && canary.token.ends_with("-abc123"),
                "{canary:?}"
            );
        }
        let mut tokens: Vec<&str> = planted
            .record
            .canaries
            .iter()
            .map(|c| c.token.as_str())
            .collect();
        tokens.dedup();
        assert_eq!(tokens.len(), 4);
        assert_eq!(
            planted.record.canaries[0].path.as_deref(),
            Some(std::path::Path::new("/lab/home/.ssh/id_rsa"))
        );
    }
}
