//! Allow-list patterns and how each kind matches an effect's `path`.
//!
//! - paths: globs over sandbox paths, `*` not crossing `/`, `**` crossing it;
//! - programs: a pattern with a `/` is a path glob over the executable, one without
//!   matches the executable's file name (`git` allows `/usr/bin/git`);
//! - endpoints: `host:port`, where the host is a glob (`*` matches any characters, dots
//!   included) and the port a number or `*`; a pattern without `:` allows every port. A
//!   `Dns` effect (a name, no port) is allowed when some pattern's host matches it. A host
//!   that ends in `.%` matches under any public suffix: `*.pinecone.%` allows
//!   `api.pinecone.io` and `pinecone.co.uk`'s hosts, not `pinecone.evil.com` ([`suffix`]).
//!
//! In every kind, a pattern that starts with `!` is an exception: an effect it matches is
//! not allowed, whatever else matches it (`["*", "!sh"]`: every program but a shell). A list
//! of exceptions alone allows nothing.

use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

/// How a clause's allowed patterns are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatternKind {
    Paths,
    Programs,
    Endpoints,
}

/// A pattern that does not compile.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// A glob does not parse.
    #[error("bad glob {glob:?}")]
    BadGlob {
        /// The glob as written.
        glob: String,
        /// The parser's complaint.
        #[source]
        source: globset::Error,
    },
    /// An endpoint's port is neither a number from 0 to 65535 nor `*`.
    #[error("bad port {port:?} in endpoint {pattern:?} (a number or *)")]
    BadPort {
        /// The endpoint as written.
        pattern: String,
        /// The port part.
        port: String,
    },
}

/// A compiled allow list: what it allows, less its exceptions.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    allow: Set,
    except: Option<Set>,
}

/// Patterns of one kind, compiled.
#[derive(Debug, Clone)]
enum Set {
    Paths(GlobSet),
    Programs { paths: GlobSet, names: GlobSet },
    Endpoints(Vec<Endpoint>),
}

#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    host: GlobMatcher,
    port: Option<u16>,
    /// The host pattern ended in `.%`: it matches the host less its public suffix.
    any_suffix: bool,
}

impl Matcher {
    pub(crate) fn compile(kind: PatternKind, patterns: &[String]) -> Result<Self, PatternError> {
        let (except, allow): (Vec<String>, Vec<String>) =
            patterns.iter().cloned().partition(|p| p.starts_with('!'));
        let except: Vec<String> = except.iter().map(|p| p[1..].to_owned()).collect();
        Ok(Matcher {
            allow: Set::compile(kind, &allow)?,
            except: match except.is_empty() {
                true => None,
                false => Some(Set::compile(kind, &except)?),
            },
        })
    }

    /// Whether an effect on `target` (the effect's `path`) is allowed.
    pub(crate) fn allows(&self, target: &str) -> bool {
        self.allow.matches(target) && !self.except.as_ref().is_some_and(|e| e.matches(target))
    }
}

impl Set {
    fn compile(kind: PatternKind, patterns: &[String]) -> Result<Self, PatternError> {
        match kind {
            PatternKind::Paths => glob_set(patterns.iter()).map(Set::Paths),
            PatternKind::Programs => {
                let (paths, names): (Vec<_>, Vec<_>) =
                    patterns.iter().partition(|p| p.contains('/'));
                Ok(Set::Programs {
                    paths: glob_set(paths.into_iter())?,
                    names: glob_set(names.into_iter())?,
                })
            }
            PatternKind::Endpoints => patterns
                .iter()
                .map(|p| endpoint(p))
                .collect::<Result<_, _>>()
                .map(Set::Endpoints),
        }
    }

    fn matches(&self, target: &str) -> bool {
        match self {
            Set::Paths(globs) => globs.is_match(target),
            Set::Programs { paths, names } => {
                let name = target.rsplit('/').next().unwrap_or(target);
                paths.is_match(target) || names.is_match(name)
            }
            Set::Endpoints(endpoints) => {
                let (host, port) = match target.rsplit_once(':') {
                    Some((host, port)) => (host, port.parse::<u16>().ok()),
                    None => (target, None),
                };
                // The host less its public suffix, looked up once for every `.%` pattern.
                let registrable = std::cell::OnceCell::new();
                endpoints.iter().any(|e| {
                    let host = match e.any_suffix {
                        true => {
                            match registrable.get_or_init(|| suffix(host).map(|at| &host[..at])) {
                                Some(less) => *less,
                                None => return false,
                            }
                        }
                        false => host,
                    };
                    e.host.is_match(host) && (e.port.is_none() || port.is_none() || e.port == port)
                })
            }
        }
    }
}

/// Checks one pattern alone, so that an error can point at it.
pub(crate) fn check(kind: PatternKind, pattern: &str) -> Result<(), PatternError> {
    Matcher::compile(kind, &[pattern.to_owned()]).map(|_| ())
}

fn path_glob(glob: &str) -> Result<Glob, PatternError> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map_err(|source| PatternError::BadGlob {
            glob: glob.to_owned(),
            source,
        })
}

fn glob_set<'a>(globs: impl Iterator<Item = &'a String>) -> Result<GlobSet, PatternError> {
    let mut set = GlobSetBuilder::new();
    let mut all = Vec::new();
    for glob in globs {
        set.add(path_glob(glob)?);
        all.push(glob.as_str());
    }
    // Each glob built alone above, so a set-level failure still names the globs.
    set.build().map_err(|source| PatternError::BadGlob {
        glob: all.join(" "),
        source,
    })
}

fn endpoint(pattern: &str) -> Result<Endpoint, PatternError> {
    let (host, port) = pattern.rsplit_once(':').unwrap_or((pattern, "*"));
    let port = match port {
        "*" => None,
        digits => Some(digits.parse().map_err(|_| PatternError::BadPort {
            pattern: pattern.to_owned(),
            port: digits.to_owned(),
        })?),
    };
    let (host, any_suffix) = match host.strip_suffix(".%") {
        Some(name) => (name, true),
        None => (host, false),
    };
    let host = GlobBuilder::new(host)
        .case_insensitive(true)
        .build()
        .map_err(|source| PatternError::BadGlob {
            glob: pattern.to_owned(),
            source,
        })?
        .compile_matcher();
    Ok(Endpoint {
        host,
        port,
        any_suffix,
    })
}

/// Where a host name's public suffix starts (the dot before it), by the Public Suffix List
/// with its private section: a hosting platform's domain (`fly.dev`, `github.io`) is a
/// suffix, so `app.fly.dev` less its suffix is `app`. `None` for a name of one label, an
/// address, or a name that is its own suffix, which have no registrable domain.
fn suffix(host: &str) -> Option<usize> {
    let host = host.trim_end_matches('.');
    if host.parse::<std::net::IpAddr>().is_ok() || host.split('.').any(str::is_empty) {
        return None;
    }
    let lower = host.to_ascii_lowercase();
    let suffix = psl::suffix(lower.as_bytes())?;
    let len = suffix.as_bytes().len();
    (len < lower.len()).then(|| lower.len() - len - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(kind: PatternKind, patterns: &[&str]) -> Matcher {
        let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
        Matcher::compile(kind, &patterns).unwrap()
    }

    #[test]
    fn path_globs_keep_single_stars_within_a_component() {
        let m = matcher(PatternKind::Paths, &["/tmp/*.lock", "/lab/home/**"]);
        assert!(m.allows("/tmp/a.lock"));
        assert!(!m.allows("/tmp/x/a.lock"));
        assert!(m.allows("/lab/home/a/b"));
        assert!(matcher(PatternKind::Paths, &["**"]).allows("/lab/work/.env"));
    }

    #[test]
    fn programs_match_by_path_or_by_name() {
        let m = matcher(PatternKind::Programs, &["git", "/usr/local/bin/*"]);
        assert!(m.allows("/usr/bin/git"));
        assert!(m.allows("/usr/local/bin/tool"));
        assert!(!m.allows("/usr/bin/curl"));
        assert!(!m.allows("/usr/bin/gitk"));
    }

    #[test]
    fn endpoints_match_host_globs_and_ports() {
        let m = matcher(
            PatternKind::Endpoints,
            &["api.example.com:443", "*:53", "*.cdn.net"],
        );
        assert!(m.allows("api.example.com:443"));
        assert!(m.allows("API.example.com:443"));
        assert!(!m.allows("api.example.com:80"));
        assert!(m.allows("10.0.0.1:53"));
        assert!(m.allows("a.b.cdn.net:8080"));
        assert!(m.allows("api.example.com"), "a lookup matches by host");
        assert!(!m.allows("evil.example.org:443"));
        assert!(!matcher(PatternKind::Endpoints, &[]).allows("localhost:1"));
    }

    #[test]
    fn a_host_ending_in_any_suffix_matches_under_a_public_suffix_only() {
        let m = matcher(PatternKind::Endpoints, &["pinecone.%", "*.pinecone.%"]);
        for allowed in [
            "api.pinecone.io:443",
            "pinecone.io",
            "pinecone.co.uk",
            "a.b.pinecone.com.cn:80",
            "PINECONE.dev",
        ] {
            assert!(m.allows(allowed), "{allowed}");
        }
        for refused in [
            "pinecone.evil.com",
            "evil-pinecone.io",
            "pinecone",
            "142.59.162.43:443",
            "api.pinecone.io.evil.com",
        ] {
            assert!(!m.allows(refused), "{refused}");
        }
    }

    #[test]
    fn a_hosting_platforms_domain_is_a_public_suffix() {
        // The Public Suffix List's private section: an app on a platform is its own domain.
        let m = matcher(
            PatternKind::Endpoints,
            &["complaints-analysis.%", "*.github.%"],
        );
        assert!(m.allows("complaints-analysis.fly.dev:443"));
        assert!(m.allows("api.github.com"));
        for refused in [
            "complaints-analysis.evil.com",
            "someone.github.io",
            "complaints-analysis.fly.dev.evil.com",
        ] {
            assert!(!m.allows(refused), "{refused}");
        }
    }

    #[test]
    fn exceptions_win_over_what_allows_them_in_every_kind() {
        let programs = matcher(PatternKind::Programs, &["*", "!sh", "!/usr/bin/curl"]);
        assert!(programs.allows("/usr/bin/git"));
        assert!(!programs.allows("/bin/sh"));
        assert!(!programs.allows("/usr/bin/curl"));
        assert!(programs.allows("/usr/local/bin/curl"));
        let paths = matcher(PatternKind::Paths, &["**", "!/root/.ssh/**"]);
        assert!(paths.allows("/root/work/a"));
        assert!(!paths.allows("/root/.ssh/authorized_keys"));
        let endpoints = matcher(PatternKind::Endpoints, &["*", "!*.evil.test"]);
        assert!(endpoints.allows("api.example.com:443"));
        assert!(!endpoints.allows("x.evil.test:80"));
        assert!(!matcher(PatternKind::Paths, &["!/etc/**"]).allows("/tmp/a"));
    }

    #[test]
    fn bad_port_and_bad_glob_name_the_pattern() {
        let err = check(PatternKind::Endpoints, "example.com:https").unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad port \"https\" in endpoint \"example.com:https\" (a number or *)"
        );
        let err = check(PatternKind::Paths, "/tmp/[ab").unwrap_err();
        assert_eq!(err.to_string(), "bad glob \"/tmp/[ab\"");
    }
}
