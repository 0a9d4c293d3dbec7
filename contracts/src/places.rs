//! Places no tool has a reason to read, whatever it promised: the system's account and
//! credential files and another process's environment or memory. A read of one is an
//! `fs.read` violation as a canary read is, in every contract, derived or written, and in
//! the server's own row ([`NEVER_READ`], documented in `contracts/CONTRACTS.md`).
//!
//! The list is of the sandbox's system paths only: the lab stands in for a home, and its
//! secrets are the planted canaries.

use std::sync::LazyLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The account database. Programs read it to look up their own user (`getpwuid`: git
/// without a configured identity, curl, ssh): the harness counts a read of it only by the
/// server's own program, never by another program the server ran.
pub const ACCOUNT_DATABASE: &str = "/etc/passwd";

/// The places, as path globs (`*` stays within one component).
pub const NEVER_READ: &[&str] = &[
    "/etc/passwd",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/master.passwd",
    "/etc/sudoers",
    "/etc/sudoers.d/**",
    "/etc/ssh/ssh_host_*_key",
    "/etc/ssl/private/**",
    "/etc/krb5.keytab",
    "/proc/*/environ",
    "/proc/*/task/*/environ",
    "/proc/*/mem",
    "/proc/*/task/*/mem",
    "/run/secrets/**",
    "/var/run/secrets/**",
];

static SET: LazyLock<GlobSet> = LazyLock::new(|| {
    let mut set = GlobSetBuilder::new();
    for glob in NEVER_READ {
        let glob = GlobBuilder::new(glob).literal_separator(true).build();
        set.add(glob.expect("the never-read globs are valid"));
    }
    set.build().expect("the never-read globs are valid")
});

/// The [`NEVER_READ`] glob `path` falls under, if any.
pub fn never_read(path: &str) -> Option<&'static str> {
    SET.matches(path).first().map(|&i| NEVER_READ[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_files_and_other_environments_are_never_read() {
        assert_eq!(never_read("/etc/passwd"), Some("/etc/passwd"));
        assert_eq!(never_read("/proc/17/environ"), Some("/proc/*/environ"));
        assert_eq!(never_read("/proc/1/task/2/mem"), Some("/proc/*/task/*/mem"));
        assert_eq!(
            never_read("/etc/ssh/ssh_host_ed25519_key"),
            Some("/etc/ssh/ssh_host_*_key")
        );
    }

    #[test]
    fn what_servers_read_to_run_is_not_on_the_list() {
        for path in [
            "/etc/hosts",
            "/etc/ld.so.cache",
            "/etc/ssh/ssh_host_ed25519_key.pub",
            "/proc/17/status",
            "/proc/self/maps",
            "/usr/lib/python3.13/json/__init__.py",
            "/home/user/work/notes.md",
            "/etc/passwd-",
        ] {
            assert_eq!(never_read(path), None, "{path}");
        }
    }
}
