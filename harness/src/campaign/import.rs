//! `vac import`: the MCP server configs users already have → a campaign file.
//!
//! Read shapes (`harness/CAMPAIGNS.md`):
//! - `{"mcpServers": {NAME: {command, args, env} | {url, type}}}` — Claude Desktop, Cursor,
//!   a project's `.mcp.json`;
//! - Claude Code's `~/.claude.json`: the top-level `mcpServers` and each
//!   `projects.<path>.mcpServers`;
//! - VS Code's `.vscode/mcp.json`: `{"servers": {NAME: {type, command, args, env} | {type,
//!   url}}, "inputs": […]}`, where `${input:ID}` references stay as named placeholders.
//!
//! Anything else is an error naming the file and the key. Environment values that look like
//! secrets are never copied: the campaign gets a named placeholder (`${NAME}`) to fill in.

use serde_json::{Map, Value};

/// Why a config could not be imported, naming the file and the key.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}: {key}: {problem}")]
pub struct ImportError {
    pub file: String,
    /// A JSON path: `mcpServers.github.command`.
    pub key: String,
    pub problem: String,
}

/// One server found in a config.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    id: String,
    /// Where it was found, for the comment above it.
    from: String,
    command: Vec<String>,
    url: Option<String>,
    /// `(NAME, value or placeholder, is_placeholder)`.
    env: Vec<(String, String, bool)>,
    note: Option<String>,
}

/// The campaign text for the servers of a config file (`text`, named `file`).
pub fn import(file: &str, text: &str, name: &str) -> Result<String, ImportError> {
    let error = |key: &str, problem: String| ImportError {
        file: file.to_owned(),
        key: key.to_owned(),
        problem,
    };
    let document: Value =
        serde_json::from_str(text).map_err(|e| error("(document)", format!("not JSON: {e}")))?;
    let Some(root) = document.as_object() else {
        return Err(error("(document)", "expected a JSON object".into()));
    };
    let mut found = Vec::new();
    let mut known = false;
    if let Some(servers) = root.get("mcpServers") {
        known = true;
        servers_of(file, "mcpServers", servers, false, &mut found)?;
    }
    if let Some(servers) = root.get("servers") {
        known = true;
        servers_of(file, "servers", servers, true, &mut found)?;
    }
    if let Some(projects) = root.get("projects") {
        let Some(projects) = projects.as_object() else {
            return Err(error(
                "projects",
                "expected an object of project paths".into(),
            ));
        };
        for (path, project) in projects {
            if let Some(servers) = project.get("mcpServers") {
                known = true;
                let key = format!("projects.{path}.mcpServers");
                servers_of(file, &key, servers, false, &mut found)?;
            }
        }
    }
    if !known {
        let keys: Vec<&str> = root.keys().map(String::as_str).collect();
        return Err(error(
            "(document)",
            format!(
                "no `mcpServers`, `servers` or `projects.*.mcpServers` (keys: {})",
                if keys.is_empty() {
                    "none".to_owned()
                } else {
                    keys.join(", ")
                }
            ),
        ));
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
    Ok(render(file, name, &found))
}

fn servers_of(
    file: &str,
    key: &str,
    servers: &Value,
    vscode: bool,
    found: &mut Vec<Found>,
) -> Result<(), ImportError> {
    let error = |key: String, problem: String| ImportError {
        file: file.to_owned(),
        key,
        problem,
    };
    let Some(servers) = servers.as_object() else {
        return Err(error(
            key.into(),
            "expected an object of servers by name".into(),
        ));
    };
    for (name, server) in servers {
        let at = format!("{key}.{name}");
        let Some(server) = server.as_object() else {
            return Err(error(at, "expected an object".into()));
        };
        let text = |field: &str| -> Result<Option<String>, ImportError> {
            match server.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(error(format!("{at}.{field}"), "expected a string".into())),
            }
        };
        let kind = text("type")?;
        let command = text("command")?;
        let url = text("url")?;
        let args: Vec<String> = match server.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    a.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| error(format!("{at}.args[{i}]"), "expected a string".into()))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(error(format!("{at}.args"), "expected an array".into())),
        };
        let env = match server.get("env") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(env)) => env_of(&at, env, file)?,
            Some(_) => return Err(error(format!("{at}.env"), "expected an object".into())),
        };
        let mut note = None;
        let (command, url) = match (command, url) {
            (Some(command), None) => {
                if vscode && kind.as_deref().is_some_and(|k| k != "stdio") {
                    return Err(error(
                        format!("{at}.type"),
                        format!(
                            "{:?} with a command: expected \"stdio\"",
                            kind.as_deref().unwrap_or_default()
                        ),
                    ));
                }
                let mut all = vec![command];
                all.extend(args);
                (all, None)
            }
            (None, Some(url)) => {
                if kind.as_deref() == Some("sse") {
                    note = Some(
                        "legacy HTTP+SSE transport: vac speaks Streamable HTTP only".to_owned(),
                    );
                }
                (Vec::new(), Some(url))
            }
            (Some(_), Some(_)) => {
                return Err(error(at, "has both `command` and `url`".into()));
            }
            (None, None) => {
                return Err(error(at, "has neither `command` nor `url`".into()));
            }
        };
        found.push(Found {
            id: id_of(name),
            from: at,
            command,
            url,
            env,
            note,
        });
    }
    Ok(())
}

/// Environment variables: values that look like secrets become `${NAME}` placeholders.
fn env_of(
    at: &str,
    env: &Map<String, Value>,
    file: &str,
) -> Result<Vec<(String, String, bool)>, ImportError> {
    let mut out = Vec::new();
    for (name, value) in env {
        let Some(value) = value.as_str() else {
            return Err(ImportError {
                file: file.to_owned(),
                key: format!("{at}.env.{name}"),
                problem: "expected a string".into(),
            });
        };
        if is_secret(name, value) {
            out.push((name.clone(), format!("${{{name}}}"), true));
        } else {
            out.push((name.clone(), value.to_owned(), false));
        }
    }
    Ok(out)
}

/// A value is kept only when neither its name nor its shape says secret: names with KEY,
/// TOKEN, SECRET, PASSWORD, PASS, AUTH, CREDENTIAL, PRIVATE or COOKIE; values with a known
/// token prefix, a URL with a password, or 20 or more characters of letters and digits mixed. A `${…}` reference is
/// already a placeholder and is kept.
fn is_secret(name: &str, value: &str) -> bool {
    if value.starts_with("${") && value.ends_with('}') {
        return false;
    }
    let upper = name.to_ascii_uppercase();
    let named = [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASS",
        "AUTH",
        "CREDENTIAL",
        "PRIVATE",
        "COOKIE",
    ]
    .iter()
    .any(|w| upper.contains(w));
    let prefixed = [
        "sk-",
        "ghp_",
        "gho_",
        "github_pat_",
        "xox",
        "AKIA",
        "glpat-",
        "eyJ",
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
        && value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic())
        && !value.contains('/');
    named || prefixed || credentialed || opaque
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
        "# Imported by `vac import` from {file}.\n# Placeholders (${{NAME}}) stand for secrets that were not copied: fill them in\n# before running (vac records each probe's environment in its receipts).\nname = {}\nseed = 0\nrepetitions = 1\njobs = 1\n",
        quote(name)
    );
    for server in found {
        out.push_str(&format!("\n# {}\n", server.from));
        if let Some(note) = &server.note {
            out.push_str(&format!("# {note}\n"));
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
            let pairs: Vec<String> = server
                .env
                .iter()
                .map(|(k, v, _)| format!("{} = {}", quote(k), quote(v)))
                .collect();
            out.push_str(&format!("env = {{ {} }}\n", pairs.join(", ")));
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
    }

    #[test]
    fn ids_are_made_safe() {
        assert_eq!(id_of("my server/2"), "my-server-2");
        assert_eq!(id_of(".hidden"), "hidden");
        assert_eq!(id_of(""), "server");
    }
}
