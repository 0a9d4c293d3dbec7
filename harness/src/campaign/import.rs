//! `vac import`: the MCP server configs users already have → a campaign file.
//!
//! Read shapes (`harness/CAMPAIGNS.md`, one data-driven case per host in
//! `tests/data/import/`): JSON with comments and trailing commas, or TOML, whose servers are
//! under one of [`TABLES`] (or Claude Code's `projects.<path>.mcpServers`). Each server is
//! `{command, args, env}` (Zed's older `command: {path, args, env}` too) or a URL (`url`,
//! Windsurf's `serverUrl`, Gemini CLI's `httpUrl`) with `headers` (Codex: `http_headers`,
//! `env_http_headers`, `bearer_token_env_var`).
//!
//! A document that is neither, or that has none of those tables or no server in them, is an
//! error naming the file and the key; an entry vac cannot run is reported and skipped.
//! **No secret is copied**: a value that looks like one — in `env`, an argument, a URL's
//! password or query, any header — becomes a named placeholder (`${NAME}`) or, for headers,
//! a variable that `bearer_env`/`header_env` read when the target runs. A host's own
//! references (`${env:VAR}`, `${input:ID}`, `${VAR:-default}`, `$VAR`) become placeholders
//! of the same name.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// Why a config could not be imported, naming the file and the key.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}: {key}: {problem}")]
pub struct ImportError {
    pub file: String,
    /// A path into the document: `mcpServers.github.command`.
    pub key: String,
    pub problem: String,
}

/// Where each agent host keeps its servers (a path of keys from the document's root).
pub const TABLES: &[(&[&str], &str)] = &[
    (
        &["mcpServers"],
        "Claude Desktop, Cursor, Windsurf, Gemini CLI, Claude Code's .mcp.json",
    ),
    (&["servers"], "VS Code's mcp.json"),
    (&["mcp", "servers"], "VS Code's settings.json"),
    (&["context_servers"], "Zed's settings.json"),
    (&["mcp_servers"], "Codex's config.toml"),
];
// A top-level key that is a dotted path ending in one of these (Amp's `amp.mcpServers`,
// Theia's `ai-features.mcp.mcpServers`) is read as well.

/// What an import made, and what its user must be told.
#[derive(Debug)]
pub struct Imported {
    /// The campaign file's text.
    pub campaign: String,
    /// The target ids written, in the file's order.
    pub ids: Vec<String>,
    /// Entries found and not imported.
    pub skipped: Vec<Skipped>,
    /// `${NAME}` placeholders written in place of secrets and host variables.
    pub placeholders: BTreeSet<String>,
    /// Variables `bearer_env`/`header_env` read when a target runs.
    pub variables: BTreeSet<String>,
}

/// An entry found and not imported, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub key: String,
    pub reason: String,
}

impl Imported {
    /// What the command tells on stderr: what it imported, skipped, and left to fill in.
    pub fn summary(&self, file: &str) -> String {
        let found = self.ids.len() + self.skipped.len();
        let mut out = format!(
            "vac: imported {} of {found} server{} from {file}: {}\n",
            self.ids.len(),
            if found == 1 { "" } else { "s" },
            self.ids.join(", ")
        );
        for skipped in &self.skipped {
            out.push_str(&format!(
                "vac: skipped {}: {}\n",
                skipped.key, skipped.reason
            ));
        }
        if !self.placeholders.is_empty() {
            let names: Vec<String> = self
                .placeholders
                .iter()
                .map(|n| format!("${{{n}}}"))
                .collect();
            out.push_str(&format!(
                "vac: fill in before running (not copied): {}\n",
                names.join(", ")
            ));
        }
        if !self.variables.is_empty() {
            let names: Vec<&str> = self.variables.iter().map(String::as_str).collect();
            out.push_str(&format!(
                "vac: set before running (read when the target runs): {}\n",
                names.join(", ")
            ));
        }
        out
    }
}

/// One server found in a config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Found {
    id: String,
    /// Where it was found, for the comment above it.
    from: String,
    command: Vec<String>,
    url: Option<String>,
    env: Vec<(String, String)>,
    /// `bearer_env`: the variable holding the token.
    bearer: Option<String>,
    /// `header_env`: header name → variable.
    headers: Vec<(String, String)>,
    notes: Vec<String>,
    placeholders: BTreeSet<String>,
}

/// The campaign for the servers of a config file (`text`, named `file`).
pub fn import(file: &str, text: &str, name: &str) -> Result<Imported, ImportError> {
    let error = |key: &str, problem: String| ImportError {
        file: file.to_owned(),
        key: key.to_owned(),
        problem,
    };
    let document = document(file, text)?;
    let Some(root) = document.as_object() else {
        return Err(error(
            "(document)",
            "expected an object (a JSON object or a TOML table)".into(),
        ));
    };
    let tables = tables_of(root);
    if tables.is_empty() {
        let keys: Vec<&str> = root.keys().map(String::as_str).collect();
        let known: Vec<String> = TABLES
            .iter()
            .map(|(p, _)| format!("`{}`", p.join(".")))
            .collect();
        return Err(error(
            "(document)",
            format!(
                "no {}, `projects.*.mcpServers` or a dotted key ending in one (keys: {})",
                known.join(", "),
                if keys.is_empty() {
                    "none".to_owned()
                } else {
                    keys.join(", ")
                }
            ),
        ));
    }
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for (key, table) in &tables {
        let Some(servers) = table.as_object() else {
            return Err(error(key, "expected an object of servers by name".into()));
        };
        for (name, entry) in servers {
            match server(&format!("{key}.{name}"), name, entry) {
                Ok(server) => found.push(server),
                Err(skip) => skipped.push(skip),
            }
        }
    }
    if found.is_empty() {
        let keys: Vec<&str> = tables.iter().map(|(k, _)| k.as_str()).collect();
        let mut problem = format!("no server to import in `{}`", keys.join("`, `"));
        for skip in &skipped {
            problem.push_str(&format!("; skipped {}: {}", skip.key, skip.reason));
        }
        return Err(error("(document)", problem));
    }
    // Ids unique: a second `github` (another project's) becomes `github-2`.
    let mut ids: Vec<String> = Vec::new();
    for server in &mut found {
        let base = server.id.clone();
        let mut n = 1;
        while ids.contains(&server.id) {
            n += 1;
            server.id = format!("{base}-{n}");
        }
        ids.push(server.id.clone());
    }
    Ok(Imported {
        campaign: render(file, name, &found),
        ids,
        skipped,
        placeholders: found
            .iter()
            .flat_map(|f| f.placeholders.iter().cloned())
            .collect(),
        variables: found
            .iter()
            .flat_map(|f| {
                f.bearer
                    .iter()
                    .chain(f.headers.iter().map(|(_, v)| v))
                    .cloned()
            })
            .collect(),
    })
}

/// The server tables of a document, each with its key: [`TABLES`], a dotted key ending in
/// one, and Claude Code's `projects.<path>.mcpServers`.
fn tables_of(root: &Map<String, Value>) -> Vec<(String, &Value)> {
    let mut tables: Vec<(String, &Value)> = Vec::new();
    for (path, _) in TABLES {
        let mut at = root.get(path[0]);
        for key in &path[1..] {
            at = at.and_then(|v| v.get(key));
        }
        if let Some(table) = at {
            tables.push((path.join("."), table));
        }
    }
    // Settings files whose keys are dotted paths: Amp's `amp.mcpServers`, Theia's
    // `ai-features.mcp.mcpServers`.
    for (key, table) in root {
        let segments: Vec<&str> = key.split('.').collect();
        let dotted = segments.len() > 1
            && TABLES
                .iter()
                .any(|(path, _)| *path != ["servers"] && segments.ends_with(path));
        if dotted {
            tables.push((key.clone(), table));
        }
    }
    if let Some(projects) = root.get("projects").and_then(Value::as_object) {
        for (path, project) in projects {
            if let Some(servers) = project.get("mcpServers") {
                tables.push((format!("projects.{path}.mcpServers"), servers));
            }
        }
    }
    tables
}

/// The document: TOML when the file's name says so, else JSON with comments and trailing
/// commas (VS Code's and Zed's JSONC), else TOML.
fn document(file: &str, text: &str) -> Result<Value, ImportError> {
    let error = |problem: String| ImportError {
        file: file.to_owned(),
        key: "(document)".to_owned(),
        problem,
    };
    let toml = || toml::from_str::<Value>(text);
    if file.ends_with(".toml") {
        return toml().map_err(|e| error(format!("not TOML: {e}")));
    }
    let options = jsonc_parser::ParseOptions::default();
    jsonc_parser::parse_to_serde_value::<Value>(text, &options).or_else(|json| {
        toml().map_err(|_| {
            error(format!(
                "neither JSON (comments and trailing commas allowed) nor TOML: {json}"
            ))
        })
    })
}

/// How an entry starts its server, as written.
struct Launch<'a> {
    command: Option<String>,
    args: Vec<String>,
    env: Option<&'a Value>,
}

/// One entry of a server table, at its key.
struct Entry<'a> {
    at: &'a str,
    map: &'a Map<String, Value>,
}

impl Entry<'_> {
    /// The entry skipped, at `key` under it (the entry itself when empty).
    fn skip(&self, key: &str, reason: &str) -> Skipped {
        Skipped {
            key: if key.is_empty() {
                self.at.to_owned()
            } else {
                format!("{}.{key}", self.at)
            },
            reason: reason.to_owned(),
        }
    }

    fn text(&self, field: &str) -> Result<Option<String>, Skipped> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.skip(field, "expected a string")),
        }
    }

    /// The command, its arguments and its environment table; Zed's older shape nests them
    /// as `command: {path, args, env}`.
    fn command(&self) -> Result<Launch<'_>, Skipped> {
        let (command, args, env) = match self.map.get("command") {
            Some(Value::Object(nested)) => match nested.get("path") {
                Some(Value::String(path)) => {
                    (Some(path.clone()), nested.get("args"), nested.get("env"))
                }
                _ => return Err(self.skip("command.path", "expected a string")),
            },
            _ => (
                self.text("command")?,
                self.map.get("args"),
                self.map.get("env"),
            ),
        };
        let args = match args {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    a.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| self.skip(&format!("args[{i}]"), "expected a string"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(self.skip("args", "expected an array")),
        };
        Ok(Launch { command, args, env })
    }

    /// The URL under whichever key the host uses: `url`, Windsurf's `serverUrl`, Gemini
    /// CLI's `httpUrl`.
    fn url(&self) -> Result<Option<String>, Skipped> {
        match (
            self.text("url")?,
            self.text("serverUrl")?,
            self.text("httpUrl")?,
        ) {
            (Some(u), None, None) | (None, Some(u), None) | (None, None, Some(u)) => Ok(Some(u)),
            (None, None, None) => Ok(None),
            _ => Err(self.skip("", "has more than one of `url`, `serverUrl`, `httpUrl`")),
        }
    }

    /// The environment into `found`: each value through [`Found::env_value`], and Codex's
    /// `env_vars` (passed through from the host by name) as placeholders.
    fn environment(&self, env: Option<&Value>, found: &mut Found) -> Result<(), Skipped> {
        match env {
            None | Some(Value::Null) => {}
            Some(Value::Object(env)) => {
                for (var, value) in env {
                    let value = match value {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        _ => return Err(self.skip(&format!("env.{var}"), "expected a string")),
                    };
                    let value = found.env_value(var, &value);
                    found.env.push((var.clone(), value));
                }
            }
            Some(_) => return Err(self.skip("env", "expected an object")),
        }
        if let Some(vars) = self.map.get("env_vars") {
            let names: Option<Vec<&str>> = vars
                .as_array()
                .and_then(|vars| vars.iter().map(Value::as_str).collect());
            let Some(names) = names else {
                return Err(self.skip("env_vars", "expected an array of names"));
            };
            for var in names {
                found.placeholders.insert(var.to_owned());
                found.env.push((var.to_owned(), format!("${{{var}}}")));
            }
        }
        Ok(())
    }

    /// What the campaign does not carry, as notes: a working directory, an env file, and
    /// that the host has the server switched off.
    fn notes(&self, found: &mut Found) -> Result<(), Skipped> {
        if let Some(cwd) = self.text("cwd")? {
            found.notes.push(format!(
                "the config's cwd {cwd:?} is not carried: vac runs the server in its lab"
            ));
        }
        if let Some(env_file) = self.text("envFile")? {
            found.notes.push(format!(
                "envFile {env_file:?} not read: its variables are not copied"
            ));
        }
        let disabled = self.map.get("disabled") == Some(&Value::Bool(true))
            || self.map.get("enabled") == Some(&Value::Bool(false));
        if disabled {
            found.notes.push("disabled in this config".into());
        }
        Ok(())
    }

    /// A `{NAME: "value"}` table of headers under `key`.
    fn string_table(&self, key: &str) -> Result<Vec<(String, String)>, Skipped> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(name, value)| match value.as_str() {
                    Some(value) => Ok((name.clone(), value.to_owned())),
                    None => Err(self.skip(&format!("{key}.{name}"), "expected a string")),
                })
                .collect(),
            Some(_) => Err(self.skip(key, "expected an object")),
        }
    }

    /// A URL server's headers: each becomes a variable read when the target runs, never a
    /// value in the file; `Authorization: Bearer …` becomes `bearer_env`.
    fn headers(&self, found: &mut Found) -> Result<(), Skipped> {
        // Codex names the variables itself.
        if let Some(var) = self.text("bearer_token_env_var")? {
            found.bearer = Some(var);
        }
        for (header, var) in self.string_table("env_http_headers")? {
            found.headers.push((header, var));
        }
        let mut literal = self.string_table("headers")?;
        literal.extend(self.string_table("http_headers")?);
        for (header, value) in literal {
            let (value, _) = references(&value);
            let whole = whole_reference(&value);
            let bearer = header.eq_ignore_ascii_case("authorization")
                && value
                    .get(..7)
                    .is_some_and(|p| p.eq_ignore_ascii_case("bearer "));
            if bearer {
                let token = value[7..].trim();
                let var = whole_reference(token).unwrap_or_else(|| found.own("token"));
                found.bearer = Some(var);
                continue;
            }
            let var = whole.clone().unwrap_or_else(|| found.own(&header));
            if whole.is_none() {
                if is_secret(&header, &value) {
                    found.notes.push(format!(
                        "header {header}: set {var} to its value (not copied)"
                    ));
                } else {
                    found
                        .notes
                        .push(format!("header {header}: set {var} to {value:?}"));
                }
            }
            found.headers.push((header, var));
        }
        Ok(())
    }
}

/// One entry of a server table, or why it is skipped.
fn server(at: &str, name: &str, entry: &Value) -> Result<Found, Skipped> {
    let Some(map) = entry.as_object() else {
        return Err(Skipped {
            key: at.to_owned(),
            reason: "expected an object".into(),
        });
    };
    let entry = Entry { at, map };
    let mut found = Found {
        id: id_of(name),
        from: at.to_owned(),
        ..Found::default()
    };
    let kind = match entry.text("type")? {
        Some(kind) => Some(kind),
        None => entry.text("transport")?,
    };
    let Launch { command, args, env } = entry.command()?;
    let url = entry.url()?;
    entry.environment(env, &mut found)?;
    match (command, url) {
        (Some(command), None) => {
            if let Some(kind) = kind.as_deref().filter(|k| *k != "stdio") {
                let reason = format!("{kind:?} with a command: expected \"stdio\"");
                return Err(entry.skip("type", &reason));
            }
            found.stdio(&command, &args);
            if has_headers(map) {
                found
                    .notes
                    .push("headers not carried: a command's server speaks stdio".into());
            }
        }
        (None, Some(url)) => {
            if !args.is_empty() {
                return Err(entry.skip("args", "a URL server with arguments"));
            }
            if kind.as_deref() == Some("sse") {
                found
                    .notes
                    .push("legacy HTTP+SSE transport: vac speaks Streamable HTTP only".into());
            }
            let url = found.referenced(&url);
            found.url = Some(found.url_value(&url));
            entry.headers(&mut found)?;
        }
        (Some(_), Some(_)) => return Err(entry.skip("", "has both `command` and a URL")),
        (None, None) if map.get("source").and_then(Value::as_str) == Some("extension") => {
            return Err(entry.skip(
                "",
                "a Zed extension's server: its command comes from the extension, not this file",
            ));
        }
        (None, None) => {
            return Err(entry.skip(
                "",
                "has neither `command` nor a URL (`url`, `serverUrl`, `httpUrl`)",
            ));
        }
    }
    entry.notes(&mut found)?;
    Ok(found)
}

fn has_headers(entry: &Map<String, Value>) -> bool {
    [
        "headers",
        "http_headers",
        "env_http_headers",
        "bearer_token_env_var",
    ]
    .iter()
    .any(|k| entry.contains_key(*k))
}

impl Found {
    /// The command and its arguments, each through [`Found::arg_value`]; the value after a
    /// `--flag` whose name says secret (`--token X`) is a placeholder named after the flag.
    fn stdio(&mut self, command: &str, args: &[String]) {
        let program = self.arg_value(command);
        self.command.push(program);
        let mut secret_flag: Option<String> = None;
        for arg in args {
            let path = arg.starts_with(['/', '.', '~', '-']);
            let value = match secret_flag.take() {
                Some(flag) if !path => {
                    let name = self.own(&flag);
                    self.placeholder(&name)
                }
                _ => self.arg_value(arg),
            };
            if let Some(flag) = arg.strip_prefix("--").filter(|f| !f.contains('='))
                && secret_name(flag)
            {
                secret_flag = Some(flag.to_owned());
            }
            self.command.push(value);
        }
    }

    /// A variable's name for something of this server's: `brave` and `api-key` → `BRAVE_API_KEY`.
    fn own(&self, what: &str) -> String {
        name_of(&format!("{}_{what}", self.id))
    }

    /// A placeholder for a secret not copied.
    fn placeholder(&mut self, name: &str) -> String {
        self.placeholders.insert(name.to_owned());
        format!("${{{name}}}")
    }

    /// A host's references made placeholders, remembered.
    fn referenced(&mut self, value: &str) -> String {
        let (value, names) = references(value);
        self.placeholders.extend(names);
        value
    }

    /// An `env` value: the whole value is a placeholder named after its variable when it
    /// looks like a secret.
    fn env_value(&mut self, var: &str, value: &str) -> String {
        let value = self.referenced(value);
        if is_secret(var, &value) {
            self.placeholder(var)
        } else {
            value
        }
    }

    /// An argument: `--flag=SECRET` and `NAME=SECRET` keep their name, a URL its shape,
    /// anything else that looks like a secret is a placeholder named after its position.
    fn arg_value(&mut self, arg: &str) -> String {
        let arg = self.referenced(arg);
        let named = |key: &str| {
            !key.trim_start_matches('-').is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        if let Some((flag, value)) = arg.split_once('=').filter(|(k, _)| named(k)) {
            let name = flag.trim_start_matches('-');
            if is_secret(name, value) && whole_reference(value).is_none() {
                let placeholder = self.placeholder(&self.own(name));
                return format!("{flag}={placeholder}");
            }
            if value.contains("://") {
                return format!("{flag}={}", self.url_value(value));
            }
            return arg;
        }
        if arg.contains("://") {
            return self.url_value(&arg);
        }
        if is_secret("", &arg) {
            let name = self.own(&format!("arg{}", self.command.len()));
            return self.placeholder(&name);
        }
        arg
    }

    /// A URL with its password (or a token as its user) and secret query values replaced.
    fn url_value(&mut self, url: &str) -> String {
        let Some((scheme, rest)) = url.split_once("://") else {
            return url.to_owned();
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let authority = match authority.rsplit_once('@') {
            Some((user, host)) => {
                let user = match user.split_once(':') {
                    Some((_, pass)) if whole_reference(pass).is_some() => user.to_owned(),
                    Some((name, _)) => {
                        format!("{name}:{}", self.placeholder(&self.own("password")))
                    }
                    None if is_secret("", user) => self.placeholder(&self.own("token")),
                    None => user.to_owned(),
                };
                format!("{user}@{host}")
            }
            None => authority.to_owned(),
        };
        let tail = match tail.split_once('?') {
            Some((path, query)) => {
                let (query, fragment) = match query.split_once('#') {
                    Some((q, f)) => (q, Some(f)),
                    None => (query, None),
                };
                let pairs: Vec<String> = query
                    .split('&')
                    .map(|pair| match pair.split_once('=') {
                        Some((k, v)) if is_secret(k, v) && whole_reference(v).is_none() => {
                            format!("{k}={}", self.placeholder(&self.own(k)))
                        }
                        _ => pair.to_owned(),
                    })
                    .collect();
                let fragment = fragment.map(|f| format!("#{f}")).unwrap_or_default();
                format!("{path}?{}{fragment}", pairs.join("&"))
            }
            None => tail.to_owned(),
        };
        format!("{scheme}://{authority}{tail}")
    }
}

/// Every reference a host expands in a value — `${VAR}`, `${env:VAR}`, `${input:ID}`,
/// `$VAR` — as vac's placeholder `${NAME}`, and the names; `${VAR:-default}` as its default
/// (then checked for secrets like any value).
fn references(value: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut names = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (inner, used) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (Some(&braced[..end]), end + 2),
                None => (None, 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            let starts = after
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
            if starts {
                (Some(&after[..end]), end)
            } else {
                (None, 0)
            }
        };
        match inner {
            // `${VAR:-default}`: the default, as the host expands it without VAR.
            Some(inner) if inner.contains(":-") => {
                out.push_str(inner.split_once(":-").map_or("", |(_, d)| d));
                rest = &after[used..];
            }
            Some(inner) if !inner.is_empty() => {
                let inner = inner
                    .strip_prefix("env:")
                    .or_else(|| inner.strip_prefix("input:"))
                    .unwrap_or(inner);
                let name = name_of(inner);
                out.push_str(&format!("${{{name}}}"));
                names.push(name);
                rest = &after[used..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    (out, names)
}

/// The name when the whole value is one placeholder `${NAME}`.
fn whole_reference(value: &str) -> Option<String> {
    let name = value.strip_prefix("${")?.strip_suffix('}')?;
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| name.to_owned())
}

/// An environment variable's name from anything: `github-token` → `GITHUB_TOKEN`, `apiKey`
/// → `API_KEY`, `X-API-Key` → `X_API_KEY`.
fn name_of(text: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && previous_lower {
                out.push('_');
            }
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_uppercase());
        } else {
            previous_lower = false;
            if !out.ends_with('_') {
                out.push('_');
            }
        }
    }
    let out = out.trim_matches('_').to_owned();
    match out.chars().next() {
        None => "SECRET".into(),
        Some(c) if c.is_ascii_digit() => format!("_{out}"),
        Some(_) => out,
    }
}

/// A name (of a variable, flag, header or query key) that says secret.
fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "AUTH",
        "CREDENTIAL",
        "PRIVATE",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|w| upper.contains(w))
}

/// A value is kept only when neither its name nor its shape says secret: a name that
/// [`secret_name`] knows; a value with a known token prefix, a URL with a password, or 20 or
/// more characters of letters and digits mixed (four digits or more, or both cases), or an
/// authorization scheme and its credential (`Bearer …`). Placeholders alone are not secrets.
fn is_secret(name: &str, value: &str) -> bool {
    if whole_reference(value).is_some() || value.is_empty() {
        return false;
    }
    let prefixed = [
        "sk-",
        "sk_",
        "pk_",
        "rk_",
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "xox",
        "AKIA",
        "ASIA",
        "glpat-",
        "eyJ",
        "AIza",
        "hf_",
        "npm_",
    ]
    .iter()
    .any(|p| value.starts_with(p));
    // A URL with a password in it: `postgres://user:pass@host/db`.
    let credentialed = value.split_once("://").is_some_and(|(_, rest)| {
        rest.split(['/', '?', '#'])
            .next()
            .is_some_and(|authority| authority.contains('@') && authority.contains(':'))
    });
    let opaque = value.len() >= 20
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_+/=.".contains(c))
        && !value.contains('/')
        && value.chars().any(|c| c.is_ascii_alphabetic())
        && {
            // A token's digits are many, or its letters of both cases; a package's name
            // (`mcp-server-kubernetes2`) is words.
            let digits = value.chars().filter(char::is_ascii_digit).count();
            let upper = value.chars().any(|c| c.is_ascii_uppercase());
            let lower = value.chars().any(|c| c.is_ascii_lowercase());
            digits >= 4 || (digits > 0 && upper && lower)
        };
    // A header line or list in a value: `Authorization:Bearer …,X-API-Key:…`.
    let lower = value.to_ascii_lowercase();
    let authorization = ["bearer ", "basic ", "token "]
        .iter()
        .any(|scheme| lower.contains(scheme));
    secret_name(name) || prefixed || credentialed || opaque || authorization
}

/// A target id from a server's name: letters, digits, `-`, `_`, `.`; others become `-`.
fn id_of(name: &str) -> String {
    let id: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let id = id
        .trim_start_matches('.')
        .chars()
        .take(128)
        .collect::<String>();
    if id.is_empty() { "server".into() } else { id }
}

/// A TOML basic string.
fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn render(file: &str, name: &str, found: &[Found]) -> String {
    let mut out = format!(
        "# Imported by `vac import` from {file}.\n# Placeholders (${{NAME}}) stand for secrets and host variables that were not copied:\n# fill them in before running (vac records each probe's environment in its receipts).\n"
    );
    if found
        .iter()
        .any(|f| f.bearer.is_some() || !f.headers.is_empty())
    {
        out.push_str("# `bearer_env` and `header_env` name variables read when the target runs.\n");
    }
    out.push_str(&format!(
        "name = {}\nseed = 0\nrepetitions = 1\njobs = 1\n",
        quote(name)
    ));
    let table = |pairs: &[(String, String)]| {
        let pairs: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{} = {}", quote(k), quote(v)))
            .collect();
        format!("{{ {} }}", pairs.join(", "))
    };
    for server in found {
        out.push_str(&format!("\n# {}\n", server.from.replace('\n', " ")));
        for note in &server.notes {
            out.push_str(&format!("# {}\n", note.replace('\n', " ")));
        }
        out.push_str("[[target]]\n");
        out.push_str(&format!("id = {}\n", quote(&server.id)));
        if let Some(url) = &server.url {
            out.push_str(&format!("url = {}\n", quote(url)));
        } else {
            let words: Vec<String> = server.command.iter().map(|w| quote(w)).collect();
            out.push_str(&format!("command = [{}]\n", words.join(", ")));
        }
        if !server.env.is_empty() {
            out.push_str(&format!("env = {}\n", table(&server.env)));
        }
        if let Some(var) = &server.bearer {
            out.push_str(&format!("bearer_env = {}\n", quote(var)));
        }
        if !server.headers.is_empty() {
            out.push_str(&format!("header_env = {}\n", table(&server.headers)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_told_by_name_prefix_or_shape() {
        assert!(is_secret("GITHUB_TOKEN", "x"));
        assert!(is_secret("OPENAI", "sk-abc"));
        assert!(is_secret("DATA", "a1b2c3d4e5f6g7h8i9j0k1"));
        assert!(!is_secret("NODE_ENV", "production"));
        assert!(is_secret("DATABASE_URL", "postgres://u:p@localhost/db"));
        assert!(!is_secret("SERVER_URL", "http://localhost:3000/mcp"));
        assert!(!is_secret("ROOT", "/home/me/projects/very/long/path1"));
        assert!(!is_secret("API_KEY", "${API_KEY}"));
        assert!(!is_secret("", "mcp-server-kubernetes2-npx"));
        assert!(!is_secret("", "@modelcontextprotocol/server-filesystem"));
        assert!(is_secret("", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(is_secret("API_HEADERS", "Authorization:Bearer t0k,X-Id:me"));
    }

    #[test]
    fn ids_are_made_safe() {
        assert_eq!(id_of("my server/2"), "my-server-2");
        assert_eq!(id_of(".hidden"), "hidden");
        assert_eq!(id_of(""), "server");
    }

    #[test]
    fn a_hosts_references_become_placeholders_of_the_same_name() {
        let cases = [
            ("${env:GITHUB_TOKEN}", "${GITHUB_TOKEN}"),
            ("${input:github-token}", "${GITHUB_TOKEN}"),
            ("${input:apiKey}", "${API_KEY}"),
            (
                "${DB_URL:-postgres://localhost/db}",
                "postgres://localhost/db",
            ),
            ("Bearer $TOKEN", "Bearer ${TOKEN}"),
            ("costs $5 and ${", "costs $5 and ${"),
            ("${workspaceFolder}/src", "${WORKSPACE_FOLDER}/src"),
        ];
        for (value, expected) in cases {
            assert_eq!(references(value).0, expected, "{value}");
        }
        assert_eq!(name_of("X-API-Key"), "X_API_KEY");
        assert_eq!(name_of("9lives"), "_9LIVES");
    }
}
