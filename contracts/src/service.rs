//! What a server exists for, read from what it is called and how it was configured: the
//! service it reaches and the state it keeps (issue "Verdicts that hold", server-level
//! intent). A Bitbucket server looks up the Bitbucket host its configuration names; a
//! Pinecone server reaches `api.pinecone.io`; a server named `cloudbase-mcp` logs to
//! `~/.cloudbase-mcp`; a Python server writes into its own installation. None of these is
//! what a tool's own words say, and all of them are what every tool of the server does.
//!
//! - **Names**: the words of the server's `serverInfo.name` and of its entry point (the
//!   program or script its command starts, or the package `npx`/`uvx` runs), less words
//!   that name no one ([`GENERIC`]) and words under four letters.
//! - **Configured hosts**: every `scheme://host` in its command or environment, and the
//!   value of an environment variable whose name says it holds a host (`…_HOST`, `…_URL`,
//!   `…_ENDPOINT`, …).
//! - **Installations**: the package directories its command names (a virtual
//!   environment's prefix, a `node_modules` package, a script's directory), never a
//!   system prefix.
//!
//! A server widens its own allowance by what it calls itself, as a tool does by its words;
//! the derived contract names each host and place, and no secret may leave to any of them
//! (the universal limit on egress). Deterministic: the same name, command and environment
//! give the same service, which is how replay derives the contract again.

/// What a server exists to reach and where it keeps its own state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Service {
    /// Words that name the server (lower case, sorted, unique).
    pub names: Vec<String>,
    /// The server's name as one label, where it has more than one word that is not generic:
    /// a host label (`cfpb-complaints-analysis.fly.dev`, its own deployment) and a state
    /// directory's name (`~/.oi-browser`; lower case, sorted, unique).
    pub labels: Vec<String>,
    /// Hosts its configuration names (lower case, sorted, unique).
    pub hosts: Vec<String>,
    /// Directories its installation occupies (sorted, unique).
    pub installations: Vec<String>,
    /// Files its configuration names (an environment value or a command word that is a
    /// path with an extension: `MEMORY_FILE_PATH={work}/memory.jsonl`, `--db=~/x.sqlite`),
    /// as written, placeholders kept (sorted, unique): the store it was told to keep.
    pub files: Vec<String>,
    /// Domains a vendor its names stand for keeps its APIs under, where the name does not
    /// spell them (`aws` → `amazonaws.com`; [`VENDOR_DOMAINS`]; sorted, unique).
    pub domains: Vec<String>,
    /// Loopback endpoints of a service its names stand for, at that service's default port
    /// (`redis` → `127.0.0.1:6379`; [`LOCAL_SERVICES`]; sorted, unique).
    pub local: Vec<String>,
}

/// Vendors whose APIs live under domains their names do not spell, by a word a server's
/// name may hold (grown from the study's servers: the AWS Labs servers reach
/// `*.amazonaws.com`, Google's reach `*.googleapis.com`, Feishu's `open.feishu.cn`).
pub(crate) const VENDOR_DOMAINS: &[(&str, &[&str])] = &[
    ("aws", &["amazonaws.com", "api.aws", "aws.amazon.com"]),
    ("awslabs", &["amazonaws.com", "api.aws", "aws.amazon.com"]),
    ("amazon", &["amazonaws.com", "api.aws"]),
    ("google", &["googleapis.com", "google.com"]),
    ("gemini", &["googleapis.com"]),
    ("gmail", &["googleapis.com", "google.com"]),
    ("youtube", &["googleapis.com"]),
    ("gcp", &["googleapis.com"]),
    ("bigquery", &["googleapis.com"]),
    ("firebase", &["googleapis.com", "firebaseio.com"]),
    (
        "azure",
        &[
            "azure.com",
            "windows.net",
            "microsoft.com",
            "microsoftonline.com",
            "azure-api.net",
        ],
    ),
    (
        "microsoft",
        &[
            "microsoft.com",
            "microsoftonline.com",
            "office.com",
            "windows.net",
        ],
    ),
    (
        "outlook",
        &[
            "office.com",
            "office365.com",
            "microsoft.com",
            "outlook.com",
        ],
    ),
    ("feishu", &["feishu.cn", "larksuite.com"]),
    ("lark", &["larksuite.com", "feishu.cn"]),
    ("github", &["githubusercontent.com"]),
    ("atlassian", &["atlassian.net", "atlassian.com"]),
    ("jira", &["atlassian.net", "atlassian.com"]),
    ("confluence", &["atlassian.net", "atlassian.com"]),
];

/// Services a server reaches on its own machine by default, by a word a server's name may
/// hold, with their default ports (grown from the study: a Kubernetes server reaches the
/// API at `127.0.0.1:8080` when no cluster is configured).
pub(crate) const LOCAL_SERVICES: &[(&str, &[u16])] = &[
    ("postgres", &[5432]),
    ("postgresql", &[5432]),
    ("mysql", &[3306]),
    ("mariadb", &[3306]),
    ("redis", &[6379]),
    ("valkey", &[6379]),
    ("mongo", &[27017]),
    ("mongodb", &[27017]),
    ("elasticsearch", &[9200]),
    ("opensearch", &[9200]),
    ("memcached", &[11211]),
    ("rabbitmq", &[5672, 15672]),
    ("kafka", &[9092]),
    ("kubernetes", &[6443, 8080, 8001]),
    ("k8s", &[6443, 8080, 8001]),
    ("kubectl", &[6443, 8080, 8001]),
    ("ollama", &[11434]),
    ("qdrant", &[6333, 6334]),
    ("chroma", &[8000]),
    ("chromadb", &[8000]),
    ("neo4j", &[7687, 7474]),
    ("clickhouse", &[8123, 9000]),
    ("influxdb", &[8086]),
    ("prometheus", &[9090]),
    ("milvus", &[19530]),
    ("couchdb", &[5984]),
    ("cassandra", &[9042]),
    ("nats", &[4222]),
    ("consul", &[8500]),
    ("etcd", &[2379]),
    ("solr", &[8983]),
];

/// Words in server names that name no service: the protocol, the kind of program, the
/// packaging, the language.
const GENERIC: &[&str] = &[
    "mcp",
    "server",
    "servers",
    "model",
    "context",
    "protocol",
    "official",
    "client",
    "tool",
    "tools",
    "toolkit",
    "toolbox",
    "agent",
    "agents",
    "assistant",
    "bridge",
    "connector",
    "integration",
    "plugin",
    "service",
    "services",
    "lite",
    "plus",
    "simple",
    "basic",
    "local",
    "remote",
    "demo",
    "test",
    "example",
    "hello",
    "world",
    "python",
    "node",
    "nodejs",
    "index",
    "main",
    "dist",
    "build",
    "stdio",
    "http",
    "https",
    "serve",
    "start",
    "run",
    "cli",
    "app",
    "api",
    "sdk",
    "with",
    "your",
    "open",
    "free",
    "core",
    "utils",
    "fastmcp",
];

/// Programs that start the server rather than being it: the entry point is what they run.
const LAUNCHERS: &[&str] = &[
    "node", "nodejs", "bun", "deno", "npx", "npm", "pnpm", "yarn", "tsx", "ts-node", "uv", "uvx",
    "pipx", "python", "python3", "java", "ruby", "php", "go", "env",
];

/// Environment variable name parts that say the value is a host or an address.
const HOST_VARS: &[&str] = &[
    "host", "hostname", "url", "uri", "endpoint", "server", "domain", "addr", "address", "base",
];

/// Prefixes that hold many programs: never a server's own installation.
const SYSTEM_PREFIXES: &[&str] = &["/", "/usr", "/usr/local", "/opt", "/bin", "/sbin"];

impl Service {
    /// The service of a server called `name` (its `serverInfo.name`, if it gave one),
    /// started by `command` (its words, as recorded) with `env` (name, value) set.
    pub fn of(name: Option<&str>, command: &[String], env: &[(String, String)]) -> Service {
        let mut names = Vec::new();
        let mut labels = Vec::new();
        // Every word, however short: `aws` and `k8s` name a vendor and a service.
        let mut words = Vec::new();
        let parts = name
            .into_iter()
            .chain(entry_point(command).into_iter().flat_map(entry_parts));
        for part in parts {
            names.extend(naming_words(part));
            labels.extend(label(part));
            words.extend(crate::name_words(part));
        }
        let mut domains: Vec<String> = VENDOR_DOMAINS
            .iter()
            .filter(|(word, _)| words.iter().any(|w| w == word))
            .flat_map(|(_, domains)| domains.iter().map(|d| d.to_string()))
            .collect();
        let mut local: Vec<String> = LOCAL_SERVICES
            .iter()
            .filter(|(word, _)| words.iter().any(|w| w == word))
            .flat_map(|(_, ports)| ports.iter())
            .flat_map(|port| [format!("127.0.0.1:{port}"), format!("localhost:{port}")])
            .collect();
        let mut hosts = Vec::new();
        for word in command {
            hosts.extend(url_host(word));
        }
        for (var, value) in env {
            match url_host(value) {
                Some(host) => hosts.push(host),
                None if names_a_host(var) => hosts.extend(bare_host(value)),
                None => {}
            }
        }
        let mut installations: Vec<String> =
            command.iter().filter_map(|w| installation(w)).collect();
        let mut files: Vec<String> = command
            .iter()
            .skip(1)
            .chain(env.iter().map(|(_, value)| value))
            .filter_map(|w| configured_file(w))
            // The program and its script are the installation, not a file it keeps.
            .filter(|file| !installations.iter().any(|dir| within(file, dir)))
            .collect();
        for list in [
            &mut names,
            &mut labels,
            &mut hosts,
            &mut installations,
            &mut files,
            &mut domains,
            &mut local,
        ] {
            list.sort();
            list.dedup();
        }
        Service {
            names,
            labels,
            hosts,
            installations,
            files,
            domains,
            local,
        }
    }

    /// Whether the server names nothing it exists for.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
            && self.labels.is_empty()
            && self.hosts.is_empty()
            && self.installations.is_empty()
            && self.files.is_empty()
            && self.domains.is_empty()
            && self.local.is_empty()
    }

    /// `net.egress` patterns for the service: each configured host, every host under a
    /// registrable domain a name or the name's label spells (`pinecone` → `pinecone.%`,
    /// `*.pinecone.%`: any public suffix, a hosting platform's included, `pattern.rs`),
    /// every host under a vendor's domains, and the loopback endpoints of a local service.
    pub(crate) fn egress(&self) -> Vec<String> {
        let mut patterns = self.hosts.clone();
        for name in self.names.iter().chain(&self.labels) {
            patterns.push(format!("{name}.%"));
            patterns.push(format!("*.{name}.%"));
        }
        for domain in &self.domains {
            patterns.push(domain.clone());
            patterns.push(format!("*.{domain}"));
        }
        patterns.extend(self.local.iter().cloned());
        patterns
    }

    /// `fs.write` patterns for the server's own state in `lab`: its installation, unless
    /// it lies in the lab or holds it (a script in the working directory makes the user's
    /// files no state of the server's), and the directories named after it (a name or its
    /// label) under the home
    /// (`~/.NAME…`, `~/.config/NAME…`, `~/.local/share/NAME…`, `~/.local/state/NAME…`), each
    /// the directory itself and what it holds, with the XDG parents (`~/.config`,
    /// `~/.local`, `~/.local/share`, `~/.local/state`) that making it may create — those
    /// as directories' own entries only, never what else they hold; and each file its
    /// configuration names, with the siblings its writer makes beside it (`x.sqlite-wal`,
    /// `memory.jsonl.tmp`) — a file, never the directory around it, which may be the user's
    /// (since rules revision 8).
    pub(crate) fn state(&self, lab: &crate::LabPaths) -> Vec<String> {
        let home = lab.home.trim_end_matches('/');
        let places = [&lab.lab, &lab.home, &lab.work, &lab.tmp];
        let overlaps = |dir: &str| {
            places.iter().any(|place| {
                let place = place.trim_end_matches('/');
                within(dir, place) || within(place, dir)
            })
        };
        let mut patterns: Vec<String> = self
            .installations
            .iter()
            .map(|dir| dir.trim_end_matches('/'))
            .filter(|dir| !overlaps(dir))
            .map(|dir| format!("{}/**", globset::escape(dir)))
            .collect();
        for name in self.names.iter().chain(&self.labels) {
            for under in [".", ".config/", ".local/share/", ".local/state/"] {
                patterns.push(format!("{home}/{under}{name}*"));
                patterns.push(format!("{home}/{under}{name}*/**"));
            }
        }
        if !self.names.is_empty() {
            for parent in [".config", ".local", ".local/share", ".local/state"] {
                patterns.push(format!("{home}/{parent}"));
            }
        }
        for file in &self.files {
            let path = match file.strip_prefix("~/") {
                Some(rest) => format!("{home}/{rest}"),
                None => lab.expand(file),
            };
            if path.starts_with('/') {
                patterns.push(globset::escape(&path));
                patterns.push(format!("{}*", globset::escape(&path)));
            }
        }
        patterns
    }

    /// How a basis names it: `the server's name says "pinecone"; its configuration names
    /// bitbucket.example.com`.
    pub(crate) fn says(&self) -> String {
        let mut parts = Vec::new();
        if !self.names.is_empty() {
            parts.push(format!("its name says {}", quoted(&self.names)));
        }
        if !self.labels.is_empty() {
            parts.push(format!("its name as one label is {}", quoted(&self.labels)));
        }
        if !self.domains.is_empty() {
            parts.push(format!(
                "its vendor's APIs are under {}",
                quoted(&self.domains)
            ));
        }
        if !self.local.is_empty() {
            parts.push(format!(
                "the service it names listens by default at {}",
                quoted(&self.local)
            ));
        }
        if !self.hosts.is_empty() {
            parts.push(format!("its configuration names {}", quoted(&self.hosts)));
        }
        if !self.installations.is_empty() {
            parts.push(format!(
                "it is installed in {}",
                quoted(&self.installations)
            ));
        }
        if !self.files.is_empty() {
            parts.push(format!(
                "its configuration names the file {}",
                quoted(&self.files)
            ));
        }
        parts.join("; ")
    }
}

fn quoted(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("{w:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The words of a name that may name a service.
fn naming_words(name: &str) -> Vec<String> {
    crate::name_words(name)
        .into_iter()
        .filter(|w| w.len() >= 4 && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| w.chars().all(|c| c.is_ascii_alphanumeric()))
        .filter(|w| !GENERIC.contains(&w.as_str()))
        .collect()
}

/// A name as one host label: its words less generic ones, joined by `-`, where at least
/// two remain and one of them names a service (`cfpb-complaints-analysis`; not
/// `bitbucket-mcp-server`, whose one word is already a name).
fn label(name: &str) -> Option<String> {
    let words: Vec<String> = crate::name_words(name)
        .into_iter()
        .filter(|w| !GENERIC.contains(&w.as_str()))
        .collect();
    let names_one = !naming_words(name).is_empty();
    (words.len() >= 2
        && names_one
        && words
            .iter()
            .all(|w| w.chars().all(|c| c.is_ascii_alphanumeric())))
    .then(|| words.join("-"))
}

/// The word of a command that is the server: past launchers, their options and `-m`'s
/// module, the first word that is not an option.
fn entry_point(command: &[String]) -> Option<&str> {
    let mut words = command.iter().map(String::as_str).peekable();
    while let Some(word) = words.next() {
        let base = word.rsplit('/').next().unwrap_or(word);
        let launcher = LAUNCHERS.iter().any(|l| {
            base == *l
                || (base.starts_with(l)
                    && base[l.len()..]
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == '.'))
        });
        if launcher || word.starts_with('-') {
            // `-m module` and `--from package` name the entry point.
            if matches!(word, "-m" | "--from" | "--package" | "-p") {
                return words.next();
            }
            continue;
        }
        if matches!(word, "run" | "exec" | "x" | "dlx" | "tool") {
            continue;
        }
        return Some(word);
    }
    None
}

/// The parts of an entry point that name it: a package (`@scope/name`, or the package of
/// a `node_modules` or `site-packages` path) by its scope and name, a program or script by
/// its file name.
fn entry_parts(entry: &str) -> Vec<&str> {
    let parts: Vec<&str> = entry.split('/').collect();
    let package = match parts
        .iter()
        .rposition(|p| *p == "node_modules" || *p == "site-packages")
    {
        Some(at) => parts[at + 1..].iter().take(2).copied().collect::<Vec<_>>(),
        None if entry.starts_with('@') => parts.iter().take(2).copied().collect(),
        None => vec![strip_extension(parts.last().copied().unwrap_or(entry))],
    };
    let scoped = package.first().is_some_and(|p| p.starts_with('@'));
    package
        .into_iter()
        .take(if scoped { 2 } else { 1 })
        // `pkg@1.2.3`: the version names nothing.
        .map(|part| {
            let bare = part.trim_start_matches('@');
            bare.split('@').next().unwrap_or(bare)
        })
        .collect()
}

fn strip_extension(name: &str) -> &str {
    for ext in [".js", ".mjs", ".cjs", ".ts", ".py", ".pyz"] {
        if let Some(stem) = name.strip_suffix(ext) {
            return stem;
        }
    }
    name
}

/// Whether an environment variable's name says it holds a host.
fn names_a_host(var: &str) -> bool {
    crate::name_words(var)
        .iter()
        .any(|w| HOST_VARS.contains(&w.as_str()))
}

/// The host of `scheme://host[:port]/…`, lower case.
fn url_host(text: &str) -> Option<String> {
    let (scheme, rest) = text.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    bare_host(host_port)
}

/// A value that is a host name or address (`db.example.com`, `cache:11211`), lower case.
fn bare_host(value: &str) -> Option<String> {
    let host = match value.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => value.split(':').next()?,
    };
    let valid = !host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == ':');
    valid.then(|| host.to_ascii_lowercase())
}

/// The installation an absolute path of a command lies in: the package of a
/// `node_modules` or `site-packages` path, the prefix of a `bin/` program, or the directory
/// of a script; never a system prefix.
fn installation(word: &str) -> Option<String> {
    if !word.starts_with('/') {
        return None;
    }
    let parts: Vec<&str> = word.split('/').collect();
    let dir = if let Some(at) = parts
        .iter()
        .rposition(|p| *p == "node_modules" || *p == "site-packages")
    {
        let scoped = parts.get(at + 1).is_some_and(|p| p.starts_with('@'));
        let end = (at + if scoped { 3 } else { 2 }).min(parts.len());
        parts[..end].join("/")
    } else if let Some(at) = parts.iter().rposition(|p| *p == "bin") {
        parts[..at].join("/")
    } else {
        parts[..parts.len().saturating_sub(1)].join("/")
    };
    let dir = if dir.is_empty() { "/".to_owned() } else { dir };
    (!SYSTEM_PREFIXES.contains(&dir.as_str())).then_some(dir)
}

/// A path to a file in a configuration value: absolute, under the home (`~/`) or a lab
/// placeholder (`{work}/…`), its last part with an extension (`memory.jsonl`, `x.sqlite`);
/// after `=` in `--db=PATH`. A directory (`{work}/repo`, a vault) is not one: what it holds
/// may be the user's.
fn configured_file(word: &str) -> Option<String> {
    let value = word.split_once('=').map_or(word, |(_, v)| v).trim();
    let rooted = ["/", "~/", "{work}/", "{home}/", "{tmp}/", "{lab}/"]
        .iter()
        .any(|start| value.starts_with(start));
    let last = value.rsplit('/').next()?;
    let (stem, extension) = last.rsplit_once('.')?;
    let extension_like = (1..=8).contains(&extension.len())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension.chars().any(|c| c.is_ascii_alphabetic());
    (rooted && !stem.is_empty() && extension_like && !value.contains(char::is_whitespace))
        .then(|| value.to_owned())
}

/// Whether `path` is `dir` or lies under it.
fn within(path: &str, dir: &str) -> bool {
    path == dir
        || dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn names_come_from_the_server_name_and_its_entry_point_less_generic_words() {
        let s = Service::of(
            Some("bitbucket-mcp-server"),
            &words(
                "/usr/bin/node /opt/s/node_modules/@nexus2520/bitbucket-mcp-server/build/index.js",
            ),
            &[],
        );
        assert_eq!(s.names, ["bitbucket", "nexus2520"]);
        let s = Service::of(
            Some("shopify-dev-mcp"),
            &words("npx -y @shopify/dev-mcp"),
            &[],
        );
        assert_eq!(s.names, ["shopify"]);
        let s = Service::of(
            Some("awslabs.memcached-mcp-server"),
            &words("/opt/s/pypi/x/bin/awslabs.memcached-mcp-server"),
            &[],
        );
        assert_eq!(s.names, ["awslabs", "memcached"]);
        let s = Service::of(
            None,
            &words("python3 -m mcp_server_time --local-timezone UTC"),
            &[],
        );
        assert_eq!(s.names, ["time"]);
        assert!(
            Service::of(Some("mcp"), &words("node index.js"), &[])
                .names
                .is_empty()
        );
    }

    #[test]
    fn hosts_come_from_urls_and_from_variables_that_name_a_host() {
        let s = Service::of(
            None,
            &words("server --api https://Api.Example.com:8443/v1"),
            &env(&[
                ("BITBUCKET_BASE_URL", "https://bitbucket.yourcompany.com"),
                ("MEMCACHED_HOST", "dummy-memcached-host"),
                ("MEMCACHED_PORT", "11211"),
                ("DB", "postgresql://alice:secret@db.internal:5432/app"),
                ("API_TOKEN", "abc.def"),
            ]),
        );
        assert_eq!(
            s.hosts,
            [
                "api.example.com",
                "bitbucket.yourcompany.com",
                "db.internal",
                "dummy-memcached-host"
            ]
        );
    }

    #[test]
    fn installations_are_package_directories_never_system_prefixes() {
        let s = Service::of(
            None,
            &words("/usr/bin/node /opt/s/npm/x/node_modules/@pinecone-database/mcp/dist/index.js"),
            &[],
        );
        assert_eq!(
            s.installations,
            ["/opt/s/npm/x/node_modules/@pinecone-database/mcp"]
        );
        let s = Service::of(None, &words("/opt/s/pypi/y/bin/billing-server"), &[]);
        assert_eq!(s.installations, ["/opt/s/pypi/y"]);
        let s = Service::of(None, &words("/usr/bin/python3 /srv/app/server.py"), &[]);
        assert_eq!(s.installations, ["/srv/app"]);
        let s = Service::of(None, &words("/usr/local/bin/thing"), &[]);
        assert!(s.installations.is_empty());
    }

    #[test]
    fn a_file_its_configuration_names_is_its_own_a_directory_is_not() {
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let s = Service::of(
            None,
            &words(
                "/usr/bin/node /opt/s/npm/m/node_modules/@x/server-memory/dist/index.js --db=~/graph.sqlite {work}/repo",
            ),
            &env(&[
                ("MEMORY_FILE_PATH", "{work}/memory.jsonl"),
                ("VAULT", "{work}/vault"),
                ("LEVEL", "info"),
                ("VERSION", "1.2"),
                ("URL", "https://api.example.com/v1/x.json"),
            ]),
        );
        // Not the script (the installation), a directory, a number or a URL.
        assert_eq!(s.files, ["{work}/memory.jsonl", "~/graph.sqlite"]);
        let lab = crate::LabPaths::at("/lab");
        let state = s.state(&lab);
        for expected in [
            "/lab/work/memory.jsonl",
            "/lab/work/memory.jsonl*",
            "/lab/home/graph.sqlite",
            "/lab/home/graph.sqlite*",
        ] {
            assert!(state.iter().any(|p| p == expected), "{expected}: {state:?}");
        }
        assert!(
            !state
                .iter()
                .any(|p| p.contains("vault") || p.contains("repo"))
        );
        assert!(s.says().contains("its configuration names the file"));
    }

    #[test]
    fn a_name_of_several_words_is_also_a_host_label() {
        let s = Service::of(
            Some("cfpb-complaints-analysis"),
            &words("/opt/s/pypi/x/bin/cfpb-complaints-analysis"),
            &[],
        );
        assert_eq!(s.labels, ["cfpb-complaints-analysis"]);
        assert!(
            s.egress()
                .contains(&"cfpb-complaints-analysis.%".to_owned())
        );
        // Generic words are left out; one word left is a name, not a label.
        let s = Service::of(Some("bitbucket-mcp-server"), &words("node index.js"), &[]);
        assert!(s.labels.is_empty());
        let s = Service::of(Some("awslabs.memcached-mcp-server"), &[], &[]);
        assert_eq!(s.labels, ["awslabs-memcached"]);
        // Nothing but generic and short words: no label.
        let s = Service::of(Some("mcp-server-ai-x"), &[], &[]);
        assert!(s.labels.is_empty());
    }

    #[test]
    fn own_state_is_the_directory_itself_what_it_holds_and_the_xdg_parents() {
        let lab = crate::LabPaths::at("/lab");
        let s = Service::of(Some("kyoo"), &[], &[]);
        let state = s.state(&lab);
        let home = lab.home.trim_end_matches('/');
        let set =
            crate::pattern::Matcher::compile(crate::pattern::PatternKind::Paths, &state).unwrap();
        for allowed in [
            ".local",
            ".local/share",
            ".local/share/kyoo",
            ".local/share/kyoo/db.sqlite",
            ".config/kyoo.toml",
            ".kyoo",
        ] {
            assert!(set.allows(&format!("{home}/{allowed}")), "{allowed}");
        }
        for refused in [
            ".local/share/other/x",
            ".config/autostart/x.desktop",
            ".bashrc",
        ] {
            assert!(!set.allows(&format!("{home}/{refused}")), "{refused}");
        }
    }

    #[test]
    fn an_installation_in_the_lab_is_no_state_of_the_server() {
        let lab = crate::LabPaths::at("/lab");
        let s = Service::of(None, &words("python3 /lab/work/server.py"), &[]);
        assert_eq!(s.installations, ["/lab/work"]);
        assert!(s.state(&lab).is_empty());
        let s = Service::of(None, &words("/lab/home/.venv/bin/srv"), &[]);
        assert!(s.state(&lab).is_empty());
        let s = Service::of(None, &words("/srv/app/bin/srv"), &[]);
        assert_eq!(s.state(&lab), ["/srv/app/**"]);
    }
}
