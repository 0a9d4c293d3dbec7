//! Intent contracts: what a tool that promises nothing may do, read from what it says it
//! is. A server that annotates nothing gets the spec defaults (readOnly false, destructive
//! true, openWorld true), which forbid nothing; a security team still knows that a
//! `get_weather` may reach the network and not write `~/.bashrc`, and that a `calculator`
//! has no reason to start a shell. This module writes that down, rule by rule, so that the
//! derived contract in the receipts says what was assumed (`CONTRACTS.md`, "Intent").
//!
//! Per tool and clause, first match wins:
//! - a rule the annotations *declare* (a hint the server wrote) stands, except that the
//!   universal limits below still apply where it forbids nothing;
//! - a clause whose hints are absent gets the intent rule: the tool's words (its name,
//!   split at `_`, `-`, `.` and case changes; its description; the property names of its
//!   input schema) decide which of writing, deleting, running programs, reaching the
//!   network or listening it may do.
//!
//! The universal limits hold for every tool whatever its annotations say:
//! - `fs.write` and `fs.delete`: never credential stores, shell start-up files, autostart
//!   and cron places or system directories ([`never_written`]);
//! - `exec`: no shell and no downloader unless the tool's words give a reason
//!   ([`SHELLS`], [`DOWNLOADERS`]).
//!
//! Rule-based and deterministic: no model, no randomness; the same tools/list and lab give
//! the same contract, byte for byte, which is how replay checks it. A server can widen its
//! own intent by saying more (a `calculator` whose description mentions "shell"); what it
//! says is shown to the model and to the user as well, and the basis names the word.

use crate::Clause;
use crate::contract::{ClauseRule, Contract, Rule, ToolContract};
use crate::derive;
use crate::document::LabPaths;
use crate::graded::GRADED;
use crate::service::Service;
use crate::tool::ToolDecl;

/// Words that say a tool writes files.
const WRITES: &[&str] = &[
    "write",
    "create",
    "save",
    "edit",
    "update",
    "modify",
    "delete",
    "remove",
    "rm",
    "move",
    "mv",
    "rename",
    "copy",
    "cp",
    "mkdir",
    "append",
    "put",
    "set",
    "insert",
    "upload",
    "store",
    "add",
    "patch",
    "commit",
    "init",
    "install",
    "generate",
    "new",
    "make",
    "touch",
    "record",
    "persist",
    "import",
    "export",
    "download",
    "clone",
    "checkout",
    "reset",
    "apply",
    "replace",
    "overwrite",
    "truncate",
    "drop",
    "clear",
    "purge",
    "archive",
    "extract",
    "unzip",
    "zip",
    "compress",
    "convert",
    "cache",
    "memory",
    "remember",
    // Since rules revision 8: what is merged or customised is changed where it is.
    "merge",
    "customize",
    "customise",
];

/// Words that say a tool may destroy or overwrite what was there.
const DESTROYS: &[&str] = &[
    "delete",
    "remove",
    "rm",
    "unlink",
    "move",
    "mv",
    "rename",
    "overwrite",
    "replace",
    "truncate",
    "drop",
    "clear",
    "purge",
    "clean",
    "reset",
    "write",
    "edit",
    "save",
    "update",
    "modify",
    "set",
    "put",
    "patch",
    "apply",
    "checkout",
    "restore",
    "sync",
    "forget",
];

/// Words that say a tool runs programs: any program, shells and downloaders included.
const RUNS: &[&str] = &[
    "exec",
    "execute",
    "command",
    "cmd",
    "shell",
    "terminal",
    "console",
    "bash",
    "sh",
    "zsh",
    "powershell",
    "script",
    "run",
    "subprocess",
    "spawn",
    "git",
    "npm",
    "npx",
    "pip",
    "docker",
    "kubectl",
    "cli",
];

/// Words that say a tool reads files: a tool without one may read only scratch places of
/// the lab (its temporary files and caches). No word is needed for the rest of the
/// sandbox: the read sensor sees the lab and the never-read places, not a server's own
/// installation.
const READS: &[&str] = &[
    "read",
    "file",
    "filename",
    "path",
    "dir",
    "directory",
    "directories",
    "folder",
    "open",
    "load",
    "view",
    "document",
    "doc",
    "note",
    "repo",
    "repository",
    "git",
    "source",
    "code",
    "grep",
    "search",
    "find",
    "glob",
    "tree",
    "workspace",
    "project",
    "config",
    "import",
    "parse",
    "csv",
    "json",
    "pdf",
    "image",
    "spreadsheet",
    "database",
    "sqlite",
    "attachment",
];

/// Words that give a tool a reason to run a downloader.
const DOWNLOADS: &[&str] = &[
    "download", "fetch", "curl", "wget", "http", "https", "url", "uri", "web", "transfer", "ssh",
    "scp", "rsync", "remote", "mirror",
];

/// Words that say a tool reaches the network.
const REACHES: &[&str] = &[
    "fetch",
    "http",
    "https",
    "url",
    "uri",
    "web",
    "website",
    "webpage",
    "page",
    "site",
    "api",
    "download",
    "upload",
    "request",
    "weather",
    "forecast",
    "search",
    "browse",
    "browser",
    "crawl",
    "scrape",
    "email",
    "mail",
    "smtp",
    "send",
    "post",
    "notify",
    "notification",
    "webhook",
    "slack",
    "discord",
    "telegram",
    "github",
    "gitlab",
    "jira",
    "remote",
    "online",
    "internet",
    "cloud",
    "aws",
    "s3",
    "gcp",
    "azure",
    "dns",
    "ping",
    "lookup",
    "resolve",
    "domain",
    "hostname",
    "host",
    "ip",
    "network",
    "net",
    "socket",
    "translate",
    "stock",
    "price",
    "news",
    "rss",
    "feed",
    "sync",
    "push",
    "pull",
    "clone",
    "proxy",
    "tunnel",
    "connect",
    "endpoint",
    "address",
    "database",
    "db",
    "sql",
    "postgres",
    "mysql",
    "redis",
    "mongo",
    "query",
];

/// Words that say a tool listens.
const LISTENS: &[&str] = &[
    "listen", "serve", "server", "port", "socket", "tunnel", "expose", "bind", "daemon",
];

/// Programs that run anything they are given: a tool needs a word for running commands.
pub(crate) const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "ash",
    "zsh",
    "ksh",
    "mksh",
    "csh",
    "tcsh",
    "fish",
    "busybox",
    "pwsh",
    "powershell",
];

/// Programs that move bytes to or from the network: a tool needs a word for it.
pub(crate) const DOWNLOADERS: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "tftp", "scp", "sftp", "ssh",
    "rsync", "aria2c",
];

/// Where no tool may write, whatever it declares: credentials, what runs at login or on a
/// schedule, and the system's programs and configuration.
pub(crate) fn never_written(lab: &LabPaths) -> Vec<String> {
    let home = lab.home.trim_end_matches('/');
    // A directory's whole tree; a file itself.
    let in_home = crate::places::HOME_CREDENTIALS
        .iter()
        .chain(crate::places::HOME_STARTUP)
        .map(|p| match p.strip_suffix('/') {
            Some(dir) => format!("{dir}/**"),
            None => (*p).to_owned(),
        });
    let system = [
        "/etc/**",
        "/bin/**",
        "/sbin/**",
        "/usr/bin/**",
        "/usr/sbin/**",
        "/usr/local/bin/**",
        "/boot/**",
        "/var/spool/cron/**",
        "/lib/systemd/**",
        "/usr/lib/systemd/**",
    ];
    in_home
        .map(|p| format!("!{home}/{p}"))
        .chain(system.iter().map(|p| format!("!{p}")))
        .collect()
}

/// Where a tool with no word for writing may still write: temporary files and caches.
fn scratch(lab: &LabPaths) -> Vec<String> {
    let mut places = vec![
        format!("{}/**", lab.tmp.trim_end_matches('/')),
        "/tmp/**".to_owned(),
        format!("{}/.cache/**", lab.home.trim_end_matches('/')),
        "**/__pycache__/**".to_owned(),
    ];
    // The lab's temporary directory is often /tmp itself: said once.
    places.dedup();
    places
}

const UNIVERSAL_FS: &str = "never credential, start-up or system places (universal)";

/// The contract of `tools` in `lab`: declared hints where the server wrote them, intent
/// where it did not, the universal limits everywhere (module doc), the server's `service`
/// and own state allowed to every tool; and, last, the row of the server itself
/// ([`server_row`]).
pub fn derive_intent(
    tools: &[ToolDecl],
    offers: Offers,
    service: &Service,
    lab: &LabPaths,
) -> Contract {
    let mut contract = Contract {
        tools: tools.iter().map(|t| intent_tool(t, service, lab)).collect(),
        ..Contract::default()
    };
    contract
        .tools
        .push(server_contract(&server_row(tools), offers, lab));
    contract
}

/// What a server offers beside its tools, as its reviewed listing showed: the server row
/// grades those lists' stability. (What they and the server's requests show the model is
/// graded on the row whatever it offers: any server may send a sampling request.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offers {
    /// Its capabilities declared prompts or resources, and vac listed them: the lists are
    /// under `manifest.stable`.
    pub lists: bool,
}

/// The name of the row that grades the server's own launch and shutdown: `(server)`, or
/// `(server 2)`, `(server 3)`, … when a tool already has that name.
pub fn server_row(tools: &[ToolDecl]) -> String {
    let taken = |name: &str| tools.iter().any(|t| t.name == name);
    std::iter::once(SERVER_ROW.to_owned())
        .chain((2..).map(|n| format!("(server {n})")))
        .find(|name| !taken(name))
        .expect("an unbounded sequence of names has a free one")
}

/// Whether `name` is a server row's name (`(server)`, `(server 2)`, …), for readers that
/// hold no tools/list (a static comparison reads tools, not launches).
pub fn is_server_row(name: &str) -> bool {
    name == SERVER_ROW
        || name
            .strip_prefix("(server ")
            .and_then(|n| n.strip_suffix(')'))
            .is_some_and(|n| n.parse::<u32>().is_ok())
}

/// The server row's name when no tool takes it.
pub const SERVER_ROW: &str = "(server)";

/// What the server may do while it starts and stops, outside any call: the universal
/// limits only. Shells are allowed (launchers such as `npx` and pyenv's shims are shell
/// scripts); downloaders are not. Starting up may reach the network and listen (an HTTP
/// server listens). Its prompts and resources, where it `offers` them, stay as reviewed
/// and show the model no canary and no instruction; a server without them has no result
/// or manifest entry of its own.
pub(crate) fn server_contract(name: &str, offers: Offers, lab: &LabPaths) -> ToolContract {
    const BASIS: &str = "the server's launch and shutdown (universal)";
    const SHOWN: &str = "what the server shows the model outside its tools' calls: prompts, resources, requests (universal)";
    const LISTED: &str = "the server's prompts and resources as reviewed (universal)";
    let mut anywhere_but = vec!["**".to_owned()];
    anywhere_but.extend(never_written(lab));
    let mut programs = vec!["*".to_owned()];
    programs.extend(DOWNLOADERS.iter().map(|d| format!("!{d}")));
    let rules = GRADED
        .iter()
        .map(|spec| {
            let rule = match spec.clause {
                Clause::FsWrite | Clause::FsDelete => Rule::Restricted {
                    allowed: anywhere_but.clone(),
                },
                Clause::FsRead => Rule::Restricted {
                    allowed: vec!["**".to_owned()],
                },
                Clause::Exec => Rule::Restricted {
                    allowed: programs.clone(),
                },
                // Any host, but no secret may leave ([`secrets_stay`]).
                Clause::NetEgress => Rule::Restricted {
                    allowed: vec!["*".to_owned()],
                },
                // What the server shows the model outside its tools' calls: its prompts and
                // resources, and what it asks the model or the user (sampling,
                // elicitation), which any server may do.
                Clause::ResultSecrets | Clause::ResultInstructions => {
                    return ClauseRule {
                        clause: spec.clause,
                        rule: Rule::nowhere(),
                        basis: SHOWN.to_owned(),
                    };
                }
                Clause::ManifestStable if offers.lists => {
                    return ClauseRule {
                        clause: spec.clause,
                        rule: Rule::nowhere(),
                        basis: LISTED.to_owned(),
                    };
                }
                _ => Rule::NothingPromised,
            };
            ClauseRule {
                clause: spec.clause,
                rule,
                basis: BASIS.to_owned(),
            }
        })
        .collect();
    ToolContract {
        tool: name.to_owned(),
        call: Some(false),
        rules,
    }
}

fn intent_tool(decl: &ToolDecl, service: &Service, lab: &LabPaths) -> ToolContract {
    let words = Words::of(decl);
    let a = &decl.annotations;
    let by_annotations = crate::graded::derive_tool(decl);
    // The hosts the server exists to reach: a tool with no word for the network, and one
    // that declares a closed world, may reach them.
    let service_hosts = service.egress();
    let rules = GRADED
        .iter()
        .zip(by_annotations.rules)
        .map(|(spec, declared)| {
            let (rule, basis) = match spec.clause {
                Clause::FsWrite => {
                    let hint = a.read_only_hint();
                    let said = words.says(WRITES, "writing");
                    let rule = fs_rule(&declared, hint.declared, said, lab);
                    match hint.declared {
                        true => rule,
                        false => own_state(rule, service, lab),
                    }
                }
                Clause::FsDelete => {
                    let hint = a.destructive_hint();
                    let said = words.says(DESTROYS, "overwriting");
                    let rule = fs_rule(&declared, hint.declared, said, lab);
                    match hint.declared {
                        true => rule,
                        false => own_state(rule, service, lab),
                    }
                }
                Clause::FsRead if declared.basis == derive::NO_SCOPE => {
                    match words.says(READS, "reading files") {
                        Said::Yes(_) => (declared.rule, declared.basis),
                        // Its own configuration, tokens and pid files are the server's to
                        // read, as its own state is to write; credentials stay forbidden.
                        Said::No(why) => own_state(
                            (
                                Rule::Restricted {
                                    allowed: scratch(lab),
                                },
                                format!("intent: {why}; temporary files and caches only"),
                            ),
                            service,
                            lab,
                        ),
                    }
                }
                Clause::Exec => exec_rule(&declared, a.read_only_hint().declared, &words),
                Clause::NetEgress if !a.open_world_hint().declared => {
                    match words.says(REACHES, "the network") {
                        Said::Yes(why) => secrets_stay(format!("intent: {why}")),
                        Said::No(why) => match &service_hosts {
                            hosts if hosts.is_empty() => {
                                (Rule::nowhere(), format!("intent: {why}"))
                            }
                            hosts => (
                                Rule::Restricted {
                                    allowed: hosts.clone(),
                                },
                                format!(
                                    "intent: {why}; the server's service: {}; {UNIVERSAL_EGRESS}",
                                    service.says()
                                ),
                            ),
                        },
                    }
                }
                Clause::NetEgress if declared.rule == Rule::NothingPromised => {
                    secrets_stay(declared.basis)
                }
                // `openWorldHint: false` says the tool's domain is closed (the MCP
                // specification: a memory tool's world is closed, a web search's open), not
                // that it never connects: the service the server exists for is its domain.
                Clause::NetEgress if !service_hosts.is_empty() => (
                    Rule::Restricted {
                        allowed: service_hosts.clone(),
                    },
                    format!(
                        "{} (a closed domain: the server's service only: {}); {UNIVERSAL_EGRESS}",
                        declared.basis,
                        service.says()
                    ),
                ),
                Clause::NetListen if !a.read_only_hint().declared => {
                    match words.says(LISTENS, "listening") {
                        Said::Yes(why) => (Rule::NothingPromised, format!("intent: {why}")),
                        Said::No(why) => (Rule::nowhere(), format!("intent: {why}")),
                    }
                }
                _ => (declared.rule, declared.basis),
            };
            ClauseRule {
                clause: spec.clause,
                rule,
                basis,
            }
        })
        .collect();
    ToolContract {
        tool: decl.name.clone(),
        call: None,
        rules,
    }
}

/// `net.egress` for a tool that may reach the network: any host, but no secret may leave
/// (the grader forbids traffic that carries one whatever the allow list says).
fn secrets_stay(basis: String) -> (Rule, String) {
    (
        Rule::Restricted {
            allowed: vec!["*".to_owned()],
        },
        format!("{basis}; {UNIVERSAL_EGRESS}"),
    )
}

/// What the universal limit on egress says, in a basis.
const UNIVERSAL_EGRESS: &str = "no secret sent (universal)";

/// `fs.write` or `fs.delete`: a declared restriction stands; what forbids nothing, by
/// declaration or by intent, keeps the universal limits; no word for it leaves scratch.
fn fs_rule(declared: &ClauseRule, hinted: bool, said: Said, lab: &LabPaths) -> (Rule, String) {
    let anywhere_but = |basis: String| {
        let mut allowed = vec!["**".to_owned()];
        allowed.extend(never_written(lab));
        (
            Rule::Restricted { allowed },
            format!("{basis}; {UNIVERSAL_FS}"),
        )
    };
    match (&declared.rule, hinted, said) {
        (Rule::Restricted { .. }, _, _) => (declared.rule.clone(), declared.basis.clone()),
        (Rule::NothingPromised, true, _) => anywhere_but(declared.basis.clone()),
        (Rule::NothingPromised, false, Said::Yes(why)) => anywhere_but(format!("intent: {why}")),
        (Rule::NothingPromised, false, Said::No(why)) => (
            Rule::Restricted {
                allowed: scratch(lab),
            },
            format!("intent: {why}; temporary files and caches only"),
        ),
    }
}

/// A file rule intent gave that leaves out some places also allows the server's own state
/// (its installation, the directories named after it: [`Service::state`]), which every
/// tool of a server may write: logs, caches, its database. The universal limits stay. A
/// declared hint is taken at its word: `readOnlyHint: true` promises no write at all, the
/// server's own log included (SPEC §4, behaviour 1).
fn own_state((rule, basis): (Rule, String), service: &Service, lab: &LabPaths) -> (Rule, String) {
    let state = service.state(lab);
    match rule {
        Rule::Restricted { mut allowed }
            if !state.is_empty() && !allowed.iter().any(|p| p == "**") =>
        {
            let first_exception = allowed.iter().position(|p| p.starts_with('!'));
            let at = first_exception.unwrap_or(allowed.len());
            allowed.splice(at..at, state);
            // A server named `docker` keeps no state in `~/.docker`: the universal limits
            // stay exceptions to its own places.
            for never in never_written(lab) {
                if !allowed.contains(&never) {
                    allowed.push(never);
                }
            }
            let said = service.says();
            (
                Rule::Restricted { allowed },
                format!("{basis}; the server's own state ({said})"),
            )
        }
        rule => (rule, basis),
    }
}

/// `exec`: a declared "nowhere" stands; otherwise every program, less shells and
/// downloaders unless the tool's words give a reason for them.
fn exec_rule(declared: &ClauseRule, hinted: bool, words: &Words) -> (Rule, String) {
    if let Rule::Restricted { .. } = declared.rule {
        return (declared.rule.clone(), declared.basis.clone());
    }
    let basis = match hinted {
        true => declared.basis.clone(),
        false => "intent".to_owned(),
    };
    let mut allowed = vec!["*".to_owned()];
    let runs = words.says(RUNS, "running commands");
    let downloads = words.says(DOWNLOADS, "downloading");
    let mut why = Vec::new();
    match runs {
        Said::Yes(w) => why.push(w),
        Said::No(w) => {
            allowed.extend(SHELLS.iter().map(|s| format!("!{s}")));
            why.push(format!("{w}: no shell"));
            match downloads {
                Said::Yes(w) => why.push(w),
                Said::No(w) => {
                    allowed.extend(DOWNLOADERS.iter().map(|s| format!("!{s}")));
                    why.push(format!("{w}: no downloader"));
                }
            }
        }
    }
    let rule = Rule::Restricted { allowed };
    (rule, format!("{basis}: {} (universal)", why.join("; ")))
}

/// Whether a tool's words include one of a set, and how the basis says it.
enum Said {
    Yes(String),
    No(String),
}

/// A tool's words: its name's parts, its description's words, its schema's property names.
struct Words {
    name: Vec<String>,
    description: Vec<String>,
    schema: Vec<String>,
}

impl Words {
    fn of(decl: &ToolDecl) -> Self {
        let schema = decl
            .input_schema
            .get("properties")
            .and_then(|p| p.as_object())
            .map(|props| props.keys().flat_map(|k| name_words(k)).collect())
            .unwrap_or_default();
        Words {
            name: name_words(&decl.name),
            description: decl
                .description
                .as_deref()
                .map(|d| split_text(&meaning(d)))
                .unwrap_or_default(),
            schema,
        }
    }

    /// The first word of `set` the tool says (name, then description, then schema), or
    /// that it says none; `what` names the set in the basis.
    fn says(&self, set: &[&str], what: &str) -> Said {
        let places = [
            ("name", &self.name),
            ("description", &self.description),
            ("schema", &self.schema),
        ];
        for (place, words) in places {
            // Prose is matched on whole words: "evaluates" is not "eval".
            let prose = place == "description";
            if let Some(word) = words.iter().find(|w| set.iter().any(|e| is(w, e, prose))) {
                return Said::Yes(format!("{place} says {word:?}"));
            }
        }
        Said::No(format!("no word for {what} in name, description or schema"))
    }
}

/// Whether `word` is the entry `entry`: itself, its `-s`/`-es` form, or, outside prose and
/// for entries of three letters or more, a word it begins (`fetchAll`, `downloader`).
fn is(word: &str, entry: &str, prose: bool) -> bool {
    word == entry
        || word.strip_suffix('s') == Some(entry)
        || word.strip_suffix("es") == Some(entry)
        || (!prose && entry.len() >= 3 && word.starts_with(entry))
}

/// A name's parts: split at non-alphanumerics and where lower case turns upper
/// (`readFile`, `read_file`, `read-file` → `read`, `file`), lower-cased. The planner reads
/// field names with it too.
pub fn name_words(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            previous_lower = false;
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

/// Nouns for a place a tool may be confined to.
const PLACES: &[&str] = &[
    "directory",
    "directories",
    "folder",
    "folders",
    "root",
    "roots",
    "workspace",
    "workspaces",
    "vault",
    "sandbox",
];

/// Words that put a tool's work inside a place ("within the allowed directories", "under
/// the workspace", "inside the notes folder").
const CONFINED: &[&str] = &[
    "within",
    "inside",
    "under",
    "below",
    "in",
    "allowed",
    "configured",
];

/// The phrase of a tool's description that confines it to a place — "within the allowed
/// directories", "in the notes directory", "under the workspace root" — if any: a word of
/// [`CONFINED`] followed, within three words, by a noun of [`PLACES`]. What the tool says it
/// returns or shows as an example is no confinement ([`meaning`]). The harness runs the
/// escape probes (`..`, an absolute path, a symlink out) for such a tool in default mode, as
/// it does for a declared `[scope]`, and records the phrase.
pub fn confined_to(decl: &ToolDecl) -> Option<String> {
    let text = meaning(decl.description.as_deref()?);
    let words = split_text(&text);
    for (at, word) in words.iter().enumerate() {
        if !CONFINED.contains(&word.as_str()) {
            continue;
        }
        let ahead = words.iter().skip(at + 1).take(3);
        if let Some(end) = ahead.clone().position(|w| PLACES.contains(&w.as_str())) {
            return Some(words[at..=at + 1 + end].join(" "));
        }
    }
    None
}

/// Headings of the parts of a docstring that say what a tool returns or show an example:
/// they describe output, not what the tool does, and grant nothing ("Returns: the result
/// of the ping command" is no reason to run a shell).
const NOT_MEANING: &[&str] = &[
    "return",
    "returns",
    "yield",
    "yields",
    "raise",
    "raises",
    "example",
    "examples",
    "output",
    "outputs",
    "response",
    "responses",
    "sample",
    "samples",
    "usage",
];

/// A description less its return-value and example sections (Google, NumPy and
/// reStructuredText docstrings, Markdown headings), doctest lines and fenced code: a
/// section runs from its heading to the next heading or the next unindented line after a
/// blank one.
fn meaning(text: &str) -> String {
    let mut kept = String::new();
    let (mut fenced, mut blank) = (false, false);
    // The indentation of the heading of the section being left out.
    let mut skipping: Option<usize> = None;
    let lines: Vec<&str> = text.lines().collect();
    for (at, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        // NumPy's heading: a line underlined with dashes or equals signs.
        let underlined = lines.get(at + 1).is_some_and(|next| {
            let next = next.trim();
            next.len() >= 3 && (next.chars().all(|c| c == '-') || next.chars().all(|c| c == '='))
        });
        if trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || trimmed.starts_with(">>>") {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        // Within a section, only a line no deeper than its heading starts another one
        // (`str: the result` under `Returns:` is its body).
        let may_head = skipping.is_none_or(|at| indent <= at);
        let named = match underlined {
            true => Some(trimmed.to_lowercase()),
            false => heading(trimmed),
        };
        match named.filter(|_| may_head) {
            Some(word) if NOT_MEANING.contains(&word.as_str()) => skipping = Some(indent),
            Some(_) => skipping = None,
            None if blank && may_head && !trimmed.is_empty() => skipping = None,
            None => {}
        }
        blank = trimmed.is_empty();
        if skipping.is_none() {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// The word a docstring section heading names, lower-cased: `Returns:`, `:returns: …`,
/// `## Example`, `**Output**` (NumPy's underlined heading is seen by [`meaning`]).
fn heading(line: &str) -> Option<String> {
    let bare = line
        .trim_start_matches('#')
        .trim_matches(|c: char| c == '*' || c == ':' || c.is_whitespace());
    let first: String = bare
        .split(|c: char| !c.is_alphanumeric())
        .next()?
        .to_lowercase();
    let headed = line.starts_with('#')
        || line.starts_with("**")
        || (line.starts_with(':') && line[1..].contains(':'))
        || line
            .split_once(':')
            .is_some_and(|(head, _)| !head.is_empty() && head.split_whitespace().count() <= 2);
    (headed && !first.is_empty()).then_some(first)
}

/// A description's words, lower-cased, at most the first 4,096 (a description is the
/// server's text: a megabyte of it costs no more than a page).
fn split_text(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4096)
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests;
