//! The planted lab as the plan records it: where the server's places are in its view and
//! every canary with its token.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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

/// What grading needs to know of the lab, as the plan records it: where the server's
/// working directory and HOME are in its view, and every canary with its token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LabRecord {
    pub(crate) root: PathBuf,
    pub(crate) work: PathBuf,
    pub(crate) home: PathBuf,
    /// The temporary directory; absent in receipts from before the lab could be a home,
    /// where it was always `root/tmp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tmp: Option<PathBuf>,
    pub(crate) note: String,
    pub(crate) trap: String,
    pub(crate) canaries: Vec<Canary>,
    /// The token in vac's answer to `sampling/createMessage` ([`sampling_reply`]): not a
    /// secret (a server may show the model's answer), but what it sends elsewhere names
    /// the reply it came from. Absent in receipts from before vac answered sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sampling: Option<String>,
}

impl LabRecord {
    /// The lab's places for a contract's placeholders (`{lab}`, `{home}`, `{tmp}`, `{work}`).
    pub(crate) fn lab_paths(&self) -> vac_contracts::LabPaths {
        let text = |path: &Path| path.display().to_string();
        vac_contracts::LabPaths {
            lab: text(&self.root),
            home: text(&self.home),
            tmp: text(&self.tmp.clone().unwrap_or_else(|| self.root.join("tmp"))),
            work: text(&self.work),
        }
    }

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

    /// The tokens looked for in what the server sends out: the canaries and the sampling
    /// reply's.
    pub(crate) fn sent_tokens(&self) -> Vec<String> {
        let mut tokens = self.tokens();
        tokens.extend(self.sampling.clone());
        tokens
    }
}
