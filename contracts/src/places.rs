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

/// A home's credential places, relative to it (a directory ends in `/`): no tool writes
/// there whatever it declares (`intent.rs`), and an effect there touched secrets
/// (`touched.rs`).
pub(crate) const HOME_CREDENTIALS: &[&str] = &[
    ".ssh/",
    ".aws/",
    ".gnupg/",
    ".kube/",
    ".docker/",
    ".azure/",
    ".config/gcloud/",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
];

/// What runs at login or from the user's `PATH`, relative to the home (a directory ends in
/// `/`): no tool writes there, and an effect there touched the system.
pub(crate) const HOME_STARTUP: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".config/fish/",
    ".config/autostart/",
    ".config/systemd/",
    ".local/bin/",
];

/// Files a server's framework loads from its working directory by convention, relative to
/// it: the Python SDK's FastMCP and FastMCP 2.x read `.env` at start (their settings
/// loaders), as python-dotenv and Node's dotenv do when a server asks. A read of one is
/// behaviour to profile, not an `fs.read` violation, even when the file is a canary: a
/// well-behaved server built on such a framework does it before any tool is called. What
/// is graded is its value leaving — in a result (`result.secrets`), a connection
/// (`net.egress`) or a request to the model — as for any canary (`CONTRACTS.md`).
pub const LOADED_BY_CONVENTION: &[&str] = &[".env"];

/// The [`LOADED_BY_CONVENTION`] file `path` is, for a server whose working directory is
/// `cwd`, if any.
pub fn loaded_by_convention(path: &std::path::Path, cwd: &std::path::Path) -> Option<&'static str> {
    let relative = path.strip_prefix(cwd).ok()?;
    LOADED_BY_CONVENTION
        .iter()
        .copied()
        .find(|name| relative == std::path::Path::new(name))
}

static SET: LazyLock<GlobSet> = LazyLock::new(|| {
    let mut set = GlobSetBuilder::new();
    for glob in NEVER_READ {
        let glob = GlobBuilder::new(glob).literal_separator(true).build();
        set.add(glob.expect("the never-read globs are valid"));
    }
    set.build().expect("the never-read globs are valid")
});

/// The [`NEVER_READ`] glob `path` falls under, if any: a place whose read is watched,
/// whoever's it is.
pub fn never_read_place(path: &str) -> Option<&'static str> {
    SET.matches(path).first().map(|&i| NEVER_READ[i])
}

/// The [`NEVER_READ`] glob `path` falls under when reading it is a violation. Not the
/// environment of the server's own processes: paths are as the server saw them in vac's
/// sandbox, whose pid namespace holds only the server's process tree and its init (pid 1,
/// whose `/proc/1/environ` it cannot read); `/proc/self/environ`, `/proc/2/environ` and
/// their tasks' are a copy of the environment vac gave the server (a browser's crash
/// handler reads its parent's). What is graded there is its values leaving, as for any
/// canary (`result.secrets`, `net.egress`).
pub fn never_read(path: &str) -> Option<&'static str> {
    let place = never_read_place(path)?;
    (!environment_of_own_process(path, place)).then_some(place)
}

/// Whether `path` is the environment of one of the server's own processes (any pid but the
/// sandbox's init, `self`, their tasks'): a copy of what vac gave the server, not a file a
/// tool reads. Not graded as a read under any file rule; its values leaving are.
pub fn own_environment(path: &str) -> bool {
    never_read_place(path).is_some_and(|place| environment_of_own_process(path, place))
}

/// Whether `path`, which falls under the never-read `place`, is an environment of a pid but
/// the init's.
fn environment_of_own_process(path: &str, place: &str) -> bool {
    let pid = path
        .strip_prefix("/proc/")
        .and_then(|rest| rest.split('/').next());
    place.ends_with("/environ") && pid.is_some_and(|pid| pid != "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_files_and_other_environments_are_never_read() {
        assert_eq!(never_read("/etc/passwd"), Some("/etc/passwd"));
        assert_eq!(never_read("/proc/1/environ"), Some("/proc/*/environ"));
        assert_eq!(
            never_read("/proc/1/task/1/environ"),
            Some("/proc/*/task/*/environ")
        );
        // The server's own processes' environment: a copy of what vac gave it.
        for own in [
            "/proc/17/environ",
            "/proc/self/environ",
            "/proc/2/task/9/environ",
        ] {
            assert_eq!(never_read(own), None, "{own}");
            assert!(never_read_place(own).is_some(), "{own}");
        }
        assert_eq!(never_read("/proc/17/mem"), Some("/proc/*/mem"));
        assert_eq!(never_read("/proc/1/task/2/mem"), Some("/proc/*/task/*/mem"));
        assert_eq!(
            never_read("/etc/ssh/ssh_host_ed25519_key"),
            Some("/etc/ssh/ssh_host_*_key")
        );
    }

    #[test]
    fn only_the_working_directorys_own_dotenv_is_loaded_by_convention() {
        let cwd = std::path::Path::new("/root/work");
        let of = |p: &str| loaded_by_convention(std::path::Path::new(p), cwd);
        assert_eq!(of("/root/work/.env"), Some(".env"));
        for other in [
            "/root/.env",
            "/root/work/notes/.env",
            "/root/work/.env.local",
            "/root/.aws/credentials",
        ] {
            assert_eq!(of(other), None, "{other}");
        }
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
