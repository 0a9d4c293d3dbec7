//! Campaign files (`harness/CAMPAIGNS.md`, schema `harness/campaign.schema.json`): TOML
//! text → [`Campaign`]. Every key is checked and every error names `file:line:col`; the
//! whole file, its contracts and its plants' sources are checked before anything runs.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;
use vac_contracts::{ContractDocument, Location};

use crate::probe::Derivation;

use crate::probe::inputs::{ArgHint, EnvVar, Inputs, Plant};

/// A campaign, checked: what `vac campaign run` runs.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// The file as named.
    pub file: PathBuf,
    /// The file's bytes, recorded whole in the campaign's first record.
    pub text: String,
    pub name: String,
    pub seed: u64,
    pub repetitions: u32,
    pub jobs: usize,
    /// How each probe keeps its tools apart.
    pub isolation: crate::probe::Isolation,
    /// Launches of each server after its control run, on the lab it left (`vac probe
    /// --relaunch`).
    pub relaunch: u32,
    /// The receipt directory, resolved against the file's directory.
    pub out: PathBuf,
    pub budgets: Budgets,
    /// In file order.
    pub targets: Vec<CampaignTarget>,
}

/// What one probe may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// Calls per tool at most (`vac probe --max-calls`).
    pub calls_per_tool: usize,
    /// Tools given a subject run per server at most (`--max-tools`).
    pub tools_per_server: usize,
    /// Calls per server at most, over all its tools.
    pub calls_per_server: usize,
    /// Seconds to wait for initialize and for each call (`--timeout`).
    pub timeout_seconds: u64,
    /// Seconds one target × repetition may take in all; past it the probe is stopped and
    /// recorded `timed_out`.
    pub wall_seconds_per_server: u64,
}

impl Default for Budgets {
    fn default() -> Budgets {
        Budgets {
            calls_per_tool: 6,
            tools_per_server: 128,
            calls_per_server: 10_000,
            timeout_seconds: 20,
            wall_seconds_per_server: 1800,
        }
    }
}

/// One `[[target]]`.
#[derive(Debug, Clone)]
pub struct CampaignTarget {
    pub id: String,
    pub kind: TargetKind,
    pub inputs: Inputs,
    /// `uid`: the user the server runs as, instead of the invoking one.
    pub uid: Option<u32>,
    /// `protocol`: the lifecycle vac speaks with it (`vac probe --protocol`).
    pub protocol: Option<crate::client::Protocol>,
    /// `bearer_env` and `header_env`: HTTP headers whose values are read from the
    /// environment when the target runs; the file (which the receipts record) names only
    /// the variables.
    pub credentials: Vec<Credential>,
    /// A contract document, read and parsed while checking the file.
    pub contract: Option<(String, String)>,
    /// How the contract is derived when there is no document: `contract = "intent"` (the
    /// default) or `contract = "annotations"`.
    pub derivation: Derivation,
    pub tags: Vec<String>,
}

/// A header a target sends, its value in an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// `bearer_env = "VAR"`: `Authorization: Bearer` and the token, as `--bearer-env`.
    Bearer { var: String },
    /// `header_env = { NAME = "VAR" }`: `NAME:` the variable's value.
    Header { name: String, var: String },
}

impl Credential {
    /// The header, read from the environment now; an error names the key and the
    /// variable, never a value.
    pub fn header(&self) -> Result<crate::client::Header, TargetError> {
        match self {
            Credential::Bearer { var } => {
                crate::client::Header::bearer_from_env(var).map_err(|source| {
                    TargetError::BearerEnv {
                        var: var.clone(),
                        source,
                    }
                })
            }
            Credential::Header { name, var } => {
                crate::client::Header::from_env(name, var).map_err(|source| {
                    TargetError::HeaderEnv {
                        name: name.clone(),
                        source,
                    }
                })
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetKind {
    /// `command`: stdio.
    Stdio(Vec<OsString>),
    /// `command` and `http = "PORT[/PATH]"`: Streamable HTTP served in the sandbox.
    Http {
        command: Vec<OsString>,
        port: u16,
        path: String,
    },
    /// `url`: a running remote server (protocol only); `ca`: a PEM file of certificates
    /// trusted beside the system's store for an https URL, as `--ca`.
    Url { url: String, ca: Option<PathBuf> },
}

impl TargetKind {
    /// The probe target: a command on stdio or serving HTTP in the sandbox, or a remote URL
    /// (an error when it is not an `http://` or `https://` URL, or when an https URL has no
    /// CA store to be verified against).
    pub fn target(&self) -> Result<crate::probe::Target, TargetError> {
        use crate::probe::Target;
        Ok(match self {
            TargetKind::Stdio(command) => Target::Stdio(command.clone()),
            TargetKind::Http {
                command,
                port,
                path,
            } => Target::LaunchedHttp {
                command: command.clone(),
                port: *port,
                path: path.clone(),
            },
            TargetKind::Url { url, ca } => {
                Target::RemoteHttp(crate::client::HttpEndpoint::parse(url)?.trust(ca.as_deref())?)
            }
        })
    }
}

/// Why a checked campaign target cannot be made ready to run: its URL, its CA file, or a
/// credential its environment does not hold. Each names the key and its input.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Url(#[from] crate::client::UrlError),
    #[error(transparent)]
    Tls(#[from] crate::client::TlsError),
    #[error("bearer_env {var}: {source}")]
    BearerEnv {
        var: String,
        #[source]
        source: crate::client::OptionError,
    },
    #[error("header_env {name}: {source}")]
    HeaderEnv {
        name: String,
        #[source]
        source: crate::client::OptionError,
    },
}

/// A campaign file that cannot be run, named by where.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{at}: {message}")]
    At { at: Location, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Spanned<String>,
    #[serde(default)]
    seed: Option<Spanned<u64>>,
    #[serde(default)]
    repetitions: Option<Spanned<i64>>,
    #[serde(default)]
    isolation: Option<Spanned<String>>,
    #[serde(default)]
    relaunch: Option<Spanned<i64>>,
    #[serde(default)]
    jobs: Option<Spanned<i64>>,
    #[serde(default)]
    out: Option<Spanned<String>>,
    #[serde(default)]
    budgets: Option<RawBudgets>,
    #[serde(default)]
    target: Vec<Spanned<RawTarget>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBudgets {
    #[serde(default)]
    calls_per_tool: Option<Spanned<i64>>,
    #[serde(default)]
    tools_per_server: Option<Spanned<i64>>,
    #[serde(default)]
    calls_per_server: Option<Spanned<i64>>,
    #[serde(default)]
    timeout_seconds: Option<Spanned<i64>>,
    #[serde(default)]
    wall_seconds_per_server: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    id: Spanned<String>,
    #[serde(default)]
    command: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    http: Option<Spanned<String>>,
    #[serde(default)]
    url: Option<Spanned<String>>,
    #[serde(default)]
    env: BTreeMap<Spanned<String>, Spanned<String>>,
    #[serde(default)]
    plant: Vec<Spanned<String>>,
    #[serde(default)]
    args: Vec<Spanned<String>>,
    #[serde(default)]
    expose: Vec<Spanned<String>>,
    #[serde(default)]
    uid: Option<Spanned<i64>>,
    #[serde(default)]
    protocol: Option<Spanned<String>>,
    #[serde(default)]
    ca: Option<Spanned<String>>,
    #[serde(default)]
    bearer_env: Option<Spanned<String>>,
    #[serde(default)]
    header_env: BTreeMap<Spanned<String>, Spanned<String>>,
    #[serde(default)]
    contract: Option<Spanned<String>>,
    #[serde(default)]
    tags: Vec<String>,
}

impl Campaign {
    /// Reads and checks the campaign file at `path`.
    pub fn load(path: &Path) -> Result<Campaign, CampaignError> {
        let text = std::fs::read_to_string(path).map_err(|source| CampaignError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Campaign::parse(path, &text)
    }

    /// Checks campaign text as if it were the file at `path` (relative paths in it are
    /// resolved against `path`'s directory; contracts and plants are read from there).
    pub fn parse(path: &Path, text: &str) -> Result<Campaign, CampaignError> {
        let check = Checker {
            source: path.display().to_string(),
            text,
            base: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            check.error(
                e.span().map_or(0, |s| s.start),
                e.message().lines().next().unwrap_or("").to_owned(),
            )
        })?;
        let name = raw.name.get_ref().trim().to_owned();
        if name.is_empty() {
            return Err(check.error(raw.name.span().start, "`name` is empty".into()));
        }
        let repetitions = check.count(raw.repetitions, "repetitions", 1, 1000)? as u32;
        let jobs = check.count(raw.jobs, "jobs", 1, 64)? as usize;
        let relaunch = match &raw.relaunch {
            None => 1,
            Some(v) if (0..=16).contains(v.get_ref()) => *v.get_ref() as u32,
            Some(v) => {
                return Err(check.error(
                    v.span().start,
                    format!("`relaunch` must be between 0 and 16, not {}", v.get_ref()),
                ));
            }
        };
        let isolation = match &raw.isolation {
            None => crate::probe::Isolation::default(),
            Some(name) => crate::probe::Isolation::parse(name.get_ref()).ok_or_else(|| {
                check.error(
                    name.span().start,
                    format!(
                        "unknown isolation {:?} (expected \"adaptive\", \"per-tool\" or \"per-call\")",
                        name.get_ref()
                    ),
                )
            })?,
        };
        let budgets = match raw.budgets {
            None => Budgets::default(),
            Some(b) => check.budgets(b)?,
        };
        let out = check.relative(
            raw.out
                .as_ref()
                .map_or(format!("runs/{name}"), |o| o.get_ref().clone())
                .as_str(),
        );
        if raw.target.is_empty() {
            return Err(check.error(0, "no [[target]]: a campaign needs at least one".into()));
        }
        let mut targets: Vec<CampaignTarget> = Vec::new();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for spanned in raw.target {
            let table = spanned.span().start;
            let t = spanned.into_inner();
            let id = check.target_id(&t.id)?;
            if let Some(first) = seen.get(&id) {
                return Err(check.error(
                    t.id.span().start,
                    format!(
                        "duplicate target id {id:?} (first at line {})",
                        check.at(*first).line
                    ),
                ));
            }
            seen.insert(id.clone(), t.id.span().start);
            targets.push(check.target(id, t, table)?);
        }
        Ok(Campaign {
            file: path.to_path_buf(),
            text: text.to_owned(),
            name,
            seed: raw.seed.map_or(0, |s| *s.get_ref()),
            repetitions,
            jobs,
            isolation,
            relaunch,
            out,
            budgets,
            targets,
        })
    }
}

/// One campaign file being checked: where it is, its text (to name a line and column), and
/// the directory its relative paths are resolved against.
struct Checker<'a> {
    source: String,
    text: &'a str,
    base: PathBuf,
}

impl Checker<'_> {
    fn at(&self, offset: usize) -> Location {
        Location::at(&self.source, self.text, offset)
    }

    fn error(&self, offset: usize, message: String) -> CampaignError {
        CampaignError::At {
            at: self.at(offset),
            message,
        }
    }

    /// A path of the file, resolved against its directory unless absolute.
    fn relative(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base.join(p)
        }
    }

    /// A count between 1 and `max`, `default` when absent.
    fn count(
        &self,
        value: Option<Spanned<i64>>,
        key: &str,
        default: i64,
        max: i64,
    ) -> Result<i64, CampaignError> {
        match value {
            None => Ok(default),
            Some(v) if (1..=max).contains(v.get_ref()) => Ok(*v.get_ref()),
            Some(v) => Err(self.error(
                v.span().start,
                format!("`{key}` must be between 1 and {max}, not {}", v.get_ref()),
            )),
        }
    }

    /// `[budgets]`: each key given replaces its default.
    fn budgets(&self, b: RawBudgets) -> Result<Budgets, CampaignError> {
        let day = 86_400;
        let defaults = Budgets::default();
        Ok(Budgets {
            calls_per_tool: self.count(
                b.calls_per_tool,
                "calls_per_tool",
                defaults.calls_per_tool as i64,
                1000,
            )? as usize,
            tools_per_server: self.count(
                b.tools_per_server,
                "tools_per_server",
                defaults.tools_per_server as i64,
                100_000,
            )? as usize,
            calls_per_server: self.count(
                b.calls_per_server,
                "calls_per_server",
                defaults.calls_per_server as i64,
                1_000_000,
            )? as usize,
            timeout_seconds: self.count(
                b.timeout_seconds,
                "timeout_seconds",
                defaults.timeout_seconds as i64,
                day,
            )? as u64,
            wall_seconds_per_server: self.count(
                b.wall_seconds_per_server,
                "wall_seconds_per_server",
                defaults.wall_seconds_per_server as i64,
                7 * day,
            )? as u64,
        })
    }

    /// A target's `id`: 1–128 of `A-Z a-z 0-9 - _ .`, not leading `.`.
    fn target_id(&self, id: &Spanned<String>) -> Result<String, CampaignError> {
        let text = id.get_ref();
        let valid = !text.is_empty()
            && text.len() <= 128
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !text.starts_with('.');
        match valid {
            true => Ok(text.clone()),
            false => Err(self.error(
                id.span().start,
                format!(
                    "target id {text:?} must be 1–128 letters, digits, '-', '_' or '.' (not leading)"
                ),
            )),
        }
    }

    /// One `[[target]]` whose id is checked; `table` is where its table starts.
    fn target(
        &self,
        id: String,
        t: RawTarget,
        table: usize,
    ) -> Result<CampaignTarget, CampaignError> {
        let kind = self.kind(&id, &t, table)?;
        let uid = match &t.uid {
            None => None,
            Some(uid) => Some(u32::try_from(*uid.get_ref()).map_err(|_| {
                self.error(
                    uid.span().start,
                    format!("target {id:?}: uid {} is not a user id", uid.get_ref()),
                )
            })?),
        };
        let protocol = match &t.protocol {
            None => None,
            Some(p) => Some(
                crate::client::Protocol::parse(p.get_ref())
                    .map_err(|e| self.error(p.span().start, format!("target {id:?}: {e}")))?,
            ),
        };
        if let Some(ca) = &t.ca
            && !matches!(kind, TargetKind::Url { .. })
        {
            return Err(self.error(
                ca.span().start,
                format!("target {id:?}: `ca` is for `url` targets"),
            ));
        }
        let credentials = self.credentials(&id, &t, &kind, table)?;
        let inputs = self.inputs(&id, &t)?;
        let (contract, derivation) = self.contract(&id, &t)?;
        Ok(CampaignTarget {
            id,
            kind,
            inputs,
            uid,
            protocol,
            credentials,
            contract,
            derivation,
            tags: t.tags,
        })
    }

    /// `command`, `http` and `url`: how the server is reached.
    fn kind(&self, id: &str, t: &RawTarget, table: usize) -> Result<TargetKind, CampaignError> {
        let command = match &t.command {
            Some(c) if c.get_ref().is_empty() => {
                return Err(
                    self.error(c.span().start, format!("target {id:?}: `command` is empty"))
                );
            }
            Some(c) => Some(
                c.get_ref()
                    .iter()
                    .enumerate()
                    .map(|(i, arg)| program(i, arg, &self.base))
                    .collect::<Vec<OsString>>(),
            ),
            None => None,
        };
        Ok(match (command, &t.http, &t.url) {
            (Some(_), _, Some(url)) => {
                return Err(self.error(
                    url.span().start,
                    format!("target {id:?} has both `command` and `url`: give one"),
                ));
            }
            (None, Some(http), None) => {
                return Err(self.error(
                    http.span().start,
                    format!("target {id:?}: `http` needs the `command` that serves it"),
                ));
            }
            (None, _, Some(url)) => TargetKind::Url {
                url: url.get_ref().clone(),
                ca: match &t.ca {
                    None => None,
                    Some(ca) => {
                        let path = self.relative(ca.get_ref());
                        if std::fs::metadata(&path).is_err() {
                            return Err(self.error(
                                ca.span().start,
                                format!("target {id:?}: ca {} does not exist", path.display()),
                            ));
                        }
                        Some(path)
                    }
                },
            },
            (Some(command), None, None) => TargetKind::Stdio(command),
            (Some(command), Some(http), None) => {
                let (port, path) = crate::http_port(http.get_ref()).map_err(|m| {
                    self.error(http.span().start, format!("target {id:?}: http: {m}"))
                })?;
                TargetKind::Http {
                    command,
                    port,
                    path,
                }
            }
            (None, None, None) => {
                return Err(self.error(
                    table,
                    format!("target {id:?} has no `command` (stdio, or with `http`) and no `url`"),
                ));
            }
        })
    }

    /// `bearer_env` and `header_env`: for HTTP targets only.
    fn credentials(
        &self,
        id: &str,
        t: &RawTarget,
        kind: &TargetKind,
        table: usize,
    ) -> Result<Vec<Credential>, CampaignError> {
        let mut credentials = Vec::new();
        let variable = |var: &Spanned<String>| {
            let name = var.get_ref();
            let valid =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            match valid {
                true => Ok(name.clone()),
                false => Err(self.error(
                    var.span().start,
                    format!("target {id:?}: {name:?} is not an environment variable name"),
                )),
            }
        };
        if let Some(var) = &t.bearer_env {
            credentials.push(Credential::Bearer {
                var: variable(var)?,
            });
        }
        for (name, var) in &t.header_env {
            if hyper::header::HeaderName::from_bytes(name.get_ref().as_bytes()).is_err() {
                return Err(self.error(
                    name.span().start,
                    format!(
                        "target {id:?}: {:?} is not a valid header name",
                        name.get_ref()
                    ),
                ));
            }
            credentials.push(Credential::Header {
                name: name.get_ref().clone(),
                var: variable(var)?,
            });
        }
        if !credentials.is_empty() && matches!(kind, TargetKind::Stdio(_)) {
            let at = t
                .bearer_env
                .as_ref()
                .map(|v| v.span().start)
                .or_else(|| t.header_env.keys().next().map(|k| k.span().start));
            return Err(self.error(
                at.unwrap_or(table),
                format!(
                    "target {id:?}: `bearer_env` and `header_env` are for HTTP targets (`url`, or `command` with `http`)"
                ),
            ));
        }
        Ok(credentials)
    }

    /// `env`, `plant`, `expose` and `args`: what the probe is given; every source and exposed
    /// path must exist.
    fn inputs(&self, id: &str, t: &RawTarget) -> Result<Inputs, CampaignError> {
        let mut inputs = Inputs::default();
        for (key, value) in &t.env {
            let given = format!("{}={}", key.get_ref(), value.get_ref());
            let parsed: EnvVar = given
                .parse()
                .map_err(|e| self.error(key.span().start, format!("target {id:?}: {e}")))?;
            inputs.env.push(parsed);
        }
        for plant in &t.plant {
            let mut parsed: Plant = plant
                .get_ref()
                .parse()
                .map_err(|e| self.error(plant.span().start, format!("target {id:?}: {e}")))?;
            parsed.source = self.relative(&parsed.source.to_string_lossy());
            if std::fs::symlink_metadata(&parsed.source).is_err() {
                return Err(self.error(
                    plant.span().start,
                    format!(
                        "target {id:?}: plant source {} does not exist",
                        parsed.source.display()
                    ),
                ));
            }
            inputs.plants.push(parsed);
        }
        for path in &t.expose {
            let exposed = self.relative(path.get_ref());
            if std::fs::symlink_metadata(&exposed).is_err() {
                return Err(self.error(
                    path.span().start,
                    format!(
                        "target {id:?}: exposed path {} does not exist",
                        exposed.display()
                    ),
                ));
            }
            inputs.expose.push(exposed);
        }
        for arg in &t.args {
            let parsed: ArgHint = arg
                .get_ref()
                .parse()
                .map_err(|e| self.error(arg.span().start, format!("target {id:?}: {e}")))?;
            inputs.args.push(parsed);
        }
        Ok(inputs)
    }

    /// `contract`: `"intent"` (the default), `"annotations"`, or a document read and parsed
    /// now.
    fn contract(
        &self,
        id: &str,
        t: &RawTarget,
    ) -> Result<(Option<(String, String)>, Derivation), CampaignError> {
        Ok(match &t.contract {
            None => (None, Derivation::default()),
            Some(c) if c.get_ref() == "intent" => (None, Derivation::default()),
            Some(c) if c.get_ref() == "annotations" => (None, Derivation::Annotations),
            Some(c) => {
                let file = self.relative(c.get_ref());
                let name = file.display().to_string();
                let text = std::fs::read_to_string(&file).map_err(|e| {
                    self.error(
                        c.span().start,
                        format!("target {id:?}: contract {name}: {e}"),
                    )
                })?;
                ContractDocument::parse(&name, &text)
                    .map_err(|e| self.error(c.span().start, format!("target {id:?}: {e}")))?;
                (Some((name, text)), Derivation::default())
            }
        })
    }
}

/// A command's word: the program `vac` is this binary (so a campaign over the fixtures
/// runs anywhere), a program with a `/` is relative to the campaign file, and every
/// other word is left as written (a bare program is found on `PATH` in the sandbox).
fn program(index: usize, word: &str, base: &Path) -> OsString {
    if index > 0 {
        return word.into();
    }
    if word == "vac"
        && let Ok(me) = std::env::current_exe()
    {
        return me.into();
    }
    let path = Path::new(word);
    if path.is_relative() && path.components().count() > 1 {
        return base.join(path).into();
    }
    word.into()
}
