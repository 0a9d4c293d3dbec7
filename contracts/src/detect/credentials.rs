//! Real secrets in what the model sees and in what a server sends: well-known credential
//! formats, beside vac's own canaries (`secrets.rs`). A tool that answers with a cloud key
//! it holds, a token it found or a private key block leaks a secret that is not ours, and
//! `result.secrets` grades it the same way.
//!
//! Each rule is a format with a fixed shape (a vendor prefix, a length, a charset), so an
//! identifier, a hash or base64 of an image does not match; connection strings count only
//! with a password that is not a placeholder (`password`, `***`, `${DB_PASS}`, `<pass>`).
//! Evidence never carries the secret: the match is redacted to its first four and last two
//! characters and its length.
//!
//! Not covered: secrets without a recognisable shape (a bare 32-character hex key, a
//! password in prose), and formats not in [`RULES`].

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::{Segment, segments};

/// A credential format: its stable name (the effect's `path`) and its shape.
struct Rule {
    name: &'static str,
    pattern: &'static str,
}

/// The formats, most specific first: where two overlap, the first names the match.
const RULES: &[Rule] = &[
    Rule {
        name: "private_key",
        pattern: r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----",
    },
    Rule {
        name: "aws_access_key_id",
        pattern: r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",
    },
    Rule {
        name: "aws_secret_access_key",
        pattern: r#"(?i)aws_secret_access_key["']?\s*[=:]\s*["']?[A-Za-z0-9/+]{40}\b"#,
    },
    Rule {
        name: "github_token",
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b",
    },
    Rule {
        name: "gitlab_token",
        pattern: r"\bglpat-[A-Za-z0-9_\-]{20,}\b",
    },
    Rule {
        name: "slack_token",
        pattern: r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b",
    },
    Rule {
        name: "stripe_key",
        pattern: r"\b(?:sk|rk)_live_[A-Za-z0-9]{24,}\b",
    },
    Rule {
        name: "google_api_key",
        pattern: r"\bAIza[0-9A-Za-z_\-]{35}\b",
    },
    Rule {
        name: "anthropic_key",
        pattern: r"\bsk-ant-[A-Za-z0-9_\-]{32,}",
    },
    Rule {
        name: "openai_key",
        pattern: r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}|\bsk-proj-[A-Za-z0-9_\-]{40,}",
    },
    Rule {
        name: "npm_token",
        pattern: r"\bnpm_[A-Za-z0-9]{36}\b",
    },
    Rule {
        name: "pypi_token",
        pattern: r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}",
    },
    Rule {
        name: "jwt",
        pattern: r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}",
    },
    Rule {
        name: "connection_string",
        pattern: r"\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|redis|rediss|amqps?|mssql)://[^\s:/@]+:(?P<password>[^\s@/]+)@[^\s/]+",
    },
];

/// Passwords that are documentation, not secrets.
const PLACEHOLDERS: &[&str] = &[
    "password", "pass", "passwd", "secret", "changeme", "example", "xxx", "xxxx", "pwd",
];

static COMPILED: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|r| {
            (
                r.name,
                Regex::new(r.pattern).expect("the rules are valid regexes"),
            )
        })
        .collect()
});

/// One credential found in a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialFinding {
    /// The rule that matched (`aws_access_key_id`, `private_key`, …).
    pub rule: &'static str,
    /// JSON pointer of the string that holds it.
    pub pointer: String,
    /// The match, redacted: `AKIA…4N (20 chars)`.
    pub redacted: String,
}

/// Every credential in any string of `result`, one finding per rule and string, skipping
/// matches that are part of a planted token or hold one (those are canaries, found by
/// [`super::secrets_in_result`]).
pub fn credentials_in_result(result: &Value, tokens: &[String]) -> Vec<CredentialFinding> {
    let mut findings = Vec::new();
    for Segment { pointer, text, .. } in segments(result) {
        for (rule, matched) in credentials_in_text(text, tokens) {
            findings.push(CredentialFinding {
                rule,
                pointer: pointer.clone(),
                redacted: redact(matched),
            });
        }
    }
    findings
}

/// The rules that match in `bytes` (read as UTF-8, lossily), planted tokens set aside as in
/// [`credentials_in_result`]: what the network sensor adds to a connection's evidence.
pub fn credentials_in(bytes: &[u8], tokens: &[String]) -> Vec<&'static str> {
    let text = String::from_utf8_lossy(bytes);
    credentials_in_text(&text, tokens)
        .into_iter()
        .map(|(rule, _)| rule)
        .collect()
}

/// The first match of each rule in `text` that is neither a placeholder nor a canary.
fn credentials_in_text<'t>(text: &'t str, tokens: &[String]) -> Vec<(&'static str, &'t str)> {
    let mut found: Vec<(&'static str, std::ops::Range<usize>)> = Vec::new();
    for (rule, regex) in COMPILED.iter() {
        let hit = regex.captures_iter(text).find(|caps| {
            let whole = caps.get(0).expect("group 0 is the match");
            let placeholder = caps
                .name("password")
                .is_some_and(|p| is_placeholder(p.as_str()));
            let canary = tokens
                .iter()
                .filter(|t| !t.is_empty())
                .any(|t| t.contains(whole.as_str()) || whole.as_str().contains(t.as_str()));
            let overlapped = found
                .iter()
                .any(|(_, r)| r.start < whole.end() && whole.start() < r.end);
            !placeholder && !canary && !overlapped
        });
        if let Some(caps) = hit {
            let whole = caps.get(0).expect("group 0 is the match");
            found.push((rule, whole.range()));
        }
    }
    found
        .into_iter()
        .map(|(rule, range)| (rule, &text[range]))
        .collect()
}

fn is_placeholder(password: &str) -> bool {
    let lower = password.to_lowercase();
    PLACEHOLDERS.contains(&lower.as_str())
        || lower.chars().all(|c| c == '*' || c == 'x' || c == '.')
        || (lower.starts_with("${") || lower.starts_with('<') || lower.starts_with('{'))
        || lower.starts_with("your")
}

/// The first four and last two characters, and the length: enough to tell two findings
/// apart and to find the secret where it came from, not enough to use it.
fn redact(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    let head: String = chars.iter().take(4).collect();
    let tail: String = chars[chars.len().saturating_sub(2).max(4.min(chars.len()))..]
        .iter()
        .collect();
    format!("{head}…{tail} ({} chars)", chars.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(text: &str) -> Vec<&'static str> {
        credentials_in(text.as_bytes(), &[])
    }

    #[test]
    fn each_format_is_found_and_named() {
        let cases = [
            ("key AKIAZ7QH3MVKX2PLDW4N here", "aws_access_key_id"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key",
            ),
            (
                "token ghp_8fKq2ZtVw1LmXo9RcYbN4sJdHa7EuP3gTiQ6",
                "github_token",
            ),
            ("glpat-AbCdEfGhIjKlMnOpQrSt", "gitlab_token"),
            ("xoxb-123456789012-abcdefghij", "slack_token"),
            ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_key"),
            ("AIzaSyD3x-Example_Key_With35Chars012345", "google_api_key"),
            (
                "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
                "anthropic_key",
            ),
            ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_token"),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "jwt",
            ),
            (
                "postgres://app:s3cr3t-Pa55@db.internal:5432/prod",
                "connection_string",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=",
                "private_key",
            ),
        ];
        for (text, rule) in cases {
            assert_eq!(rules(text), [rule], "{text}");
        }
    }

    #[test]
    fn identifiers_hashes_placeholders_and_prose_are_not_secrets() {
        let clean = [
            "commit 3f786850e387550fdab836ed7e6dc881de23001b",
            "uuid 123e4567-e89b-12d3-a456-426614174000",
            "postgres://user:password@localhost/db",
            "mysql://root:${DB_PASSWORD}@db/app",
            "redis://default:****@cache:6379",
            "set AWS_ACCESS_KEY_ID to your key (it starts with AKIA)",
            "the word AKIAZ7QH3MVKX2PLDW4Nx is too long to be a key id",
            "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
            "-----BEGIN PUBLIC KEY-----",
        ];
        for text in clean {
            assert_eq!(rules(text), Vec::<&str>::new(), "{text}");
        }
    }

    #[test]
    fn planted_tokens_are_left_to_the_canary_detector() {
        let token = "AKIAZ7QH3MVKX2PLDW4N".to_owned();
        assert!(credentials_in(b"id AKIAZ7QH3MVKX2PLDW4N", &[token]).is_empty());
        let wrapped = "aws_access_key_id = AKIAZ7QH3MVKX2PLDW4N".to_owned();
        assert!(credentials_in(b"AKIAZ7QH3MVKX2PLDW4N", &[wrapped]).is_empty());
    }

    #[test]
    fn findings_name_the_string_and_never_carry_the_secret() {
        let result = json!({"content": [{"type": "text", "text": "ok"},
            {"type": "text", "text": "AWS_ACCESS_KEY_ID=AKIAZ7QH3MVKX2PLDW4N"}]});
        let findings = credentials_in_result(&result, &[]);
        assert_eq!(
            findings,
            [CredentialFinding {
                rule: "aws_access_key_id",
                pointer: "/content/1/text".into(),
                redacted: "AKIA…4N (20 chars)".into(),
            }]
        );
    }

    #[test]
    fn a_key_id_inside_a_key_blocks_base64_is_not_a_key_id() {
        let text = "-----BEGIN RSA PRIVATE KEY-----\nMIIEAKIAZ7QH3MVKX2PLDW4N\n";
        assert_eq!(rules(text), ["private_key"]);
    }
}
