//! What a confirmed cell touched: after "which promise broke", a reader's next question. A
//! read-only tool writing its own log and one writing into the user's files break the same
//! promise; only the second is news. Each effect of a cell's evidence falls in one
//! [`Touched`] class by what it is and where; the cell takes its most serious one.
//!
//! Places are the sandbox's, as the server saw them: the lab stands in for a home (`/root`
//! or `/home/<user>`), its working directory is the home's `work/`.

use serde::Serialize;

use crate::EffectClass;

/// What an effect reached, most serious first (the order a cell's headline takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Touched {
    /// A secret: a credential place of the home (`.ssh`, `.aws`, `.env`…), an account or
    /// key file of the system, or a planted secret shown to the model.
    Secrets,
    /// The user's files: the working directory and the home's ordinary files.
    UserFiles,
    /// System places, and what runs at login (`.bashrc`, `.profile`, `.local/bin`…).
    System,
    /// The network: a lookup, a connection, a datagram or a listener.
    Network,
    /// A program the tool ran.
    Programs,
    /// What the model is shown: instructions in a result, a tool set that changed.
    Model,
    /// The server's own state: the home's dot-directories (config, cache, logs, telemetry),
    /// temporary places, its own installation.
    OwnState,
}

impl Touched {
    /// Every class, most serious first.
    pub const ALL: [Touched; 7] = [
        Touched::Secrets,
        Touched::UserFiles,
        Touched::System,
        Touched::Network,
        Touched::Programs,
        Touched::Model,
        Touched::OwnState,
    ];

    /// The name reports use (as serialised).
    pub fn name(self) -> &'static str {
        match self {
            Touched::Secrets => "secrets",
            Touched::UserFiles => "user_files",
            Touched::System => "system",
            Touched::Network => "network",
            Touched::Programs => "programs",
            Touched::Model => "model",
            Touched::OwnState => "own_state",
        }
    }
}

/// Temporary places, wherever the server was.
const TEMPORARY: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// A file name that is a secret wherever it is.
const SECRET_NAMES: &[&str] = &[".env"];

/// Path components of an installation (a server's own packages).
const INSTALLED: &[&str] = &[
    "node_modules",
    "site-packages",
    "dist-packages",
    "__pycache__",
];

/// What one effect of class `class` at `path` (a file, `host:port`, a name, a program or a
/// tool, by class) touched.
pub fn of_effect(class: EffectClass, path: &str) -> Touched {
    match class {
        EffectClass::Exec => Touched::Programs,
        EffectClass::Connect | EffectClass::Dns | EffectClass::Udp | EffectClass::Listen => {
            Touched::Network
        }
        EffectClass::SecretInResult => Touched::Secrets,
        EffectClass::InstructionInResult | EffectClass::ManifestChanged => Touched::Model,
        EffectClass::Created
        | EffectClass::Modified
        | EffectClass::Deleted
        | EffectClass::Renamed
        | EffectClass::ModeChanged
        | EffectClass::Symlink
        | EffectClass::DirReplaced
        | EffectClass::Read => of_path(path),
    }
}

/// What a file at `path` is.
pub fn of_path(path: &str) -> Touched {
    let p = std::path::Path::new(path);
    let under = |base: &str| p.starts_with(base);
    if crate::places::never_read_place(path).is_some()
        || p.file_name()
            .is_some_and(|n| SECRET_NAMES.iter().any(|s| n == *s))
    {
        return Touched::Secrets;
    }
    if p.components()
        .any(|c| INSTALLED.iter().any(|i| c.as_os_str() == *i))
    {
        return Touched::OwnState;
    }
    if TEMPORARY.iter().any(|t| under(t)) {
        return Touched::OwnState;
    }
    let Some(home) = home_of(p) else {
        return Touched::System;
    };
    let Ok(rest) = p.strip_prefix(&home) else {
        return Touched::System;
    };
    let rest_under = |list: &[&str]| {
        list.iter()
            .any(|r| rest.starts_with(r.trim_end_matches('/')))
    };
    if rest_under(crate::places::HOME_CREDENTIALS) {
        Touched::Secrets
    } else if rest_under(crate::places::HOME_STARTUP) {
        Touched::System
    } else if rest.starts_with("work") {
        Touched::UserFiles
    } else if rest
        .components()
        .next()
        .is_some_and(|c| c.as_os_str().to_string_lossy().starts_with('.'))
    {
        Touched::OwnState
    } else {
        // The home itself, or an ordinary file of it.
        Touched::UserFiles
    }
}

/// The home `path` lies in: `/root`, or `/home/<user>`.
fn home_of(path: &std::path::Path) -> Option<std::path::PathBuf> {
    if path.starts_with("/root") {
        return Some("/root".into());
    }
    let mut parts = path.strip_prefix("/home").ok()?.components();
    Some(std::path::Path::new("/home").join(parts.next()?))
}

/// The most serious of what a cell's effects touched; `None` without effects.
pub fn of_effects<'a>(
    effects: impl IntoIterator<Item = (EffectClass, &'a str)>,
) -> Option<Touched> {
    effects
        .into_iter()
        .map(|(class, path)| of_effect(class, path))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_place_is_what_a_reader_would_call_it() {
        use EffectClass::*;
        for (class, path, want) in [
            (Read, "/root/.ssh/id_rsa", Touched::Secrets),
            (Read, "/root/.aws/credentials", Touched::Secrets),
            (Read, "/root/work/.env", Touched::Secrets),
            (Read, "/etc/shadow", Touched::Secrets),
            (
                Created,
                "/home/alice/.config/gcloud/credentials.db",
                Touched::Secrets,
            ),
            (Modified, "/root/work/notes/todo.md", Touched::UserFiles),
            (Deleted, "/home/alice/report.txt", Touched::UserFiles),
            (Created, "/root/.bashrc", Touched::System),
            (Created, "/root/.local/bin/helper", Touched::System),
            (Created, "/etc/cron.d/job", Touched::System),
            (Created, "/usr/local/lib/x.so", Touched::System),
            (
                Created,
                "/root/.cloudbase-mcp/logs/today.log",
                Touched::OwnState,
            ),
            (Created, "/root/.cache/huggingface/x", Touched::OwnState),
            (Created, "/tmp/notes-config.lock", Touched::OwnState),
            (
                Created,
                "/var/tmp/Microsoft/AzureMonitor/x",
                Touched::OwnState,
            ),
            (
                Created,
                "/opt/s/lib/python3.11/site-packages/x/__pycache__/a.pyc",
                Touched::OwnState,
            ),
            (
                Created,
                "/root/work/repo/node_modules/.cache/x",
                Touched::OwnState,
            ),
            (Exec, "/bin/sh", Touched::Programs),
            (Connect, "203.0.113.9:443", Touched::Network),
            (Dns, "api.example.net", Touched::Network),
            (Listen, "0.0.0.0:8080", Touched::Network),
            (SecretInResult, "ssh_key", Touched::Secrets),
            (InstructionInResult, "get_tips", Touched::Model),
            (ManifestChanged, "get_tips", Touched::Model),
        ] {
            assert_eq!(of_effect(class, path), want, "{class:?} {path}");
        }
    }

    #[test]
    fn a_cell_takes_its_most_serious_effect() {
        use EffectClass::*;
        let effects = [
            (Created, "/root/.notes-server/server.log"),
            (Modified, "/root/work/a.txt"),
            (Dns, "x.example.net"),
        ];
        assert_eq!(of_effects(effects), Some(Touched::UserFiles));
        assert_eq!(of_effects([(Created, "/tmp/x")]), Some(Touched::OwnState));
        assert_eq!(of_effects(std::iter::empty()), None);
    }
}
