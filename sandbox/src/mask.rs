//! What of the host the program must not read: every account's home directory, the host's
//! temporary and runtime directories, its password hashes and private keys. Each is hidden
//! by an overlay whiteout in a layer of its own, between the lab and the host root, so the
//! program sees them as absent whichever uid it runs as.
//!
//! The program's own installation stays visible: a server installed with pyenv, uv, nvm or
//! npx lives under a home, and must run as installed. The files its start goes through (the
//! program, its symlinks, its `#!` interpreter, a venv's `pyvenv.cfg` home, absolute paths
//! among its arguments) each name an installation directory; inside a hidden directory,
//! every entry but the ones leading to an installation is whited out.
//!
//! ```text
//! host /root/{.ssh, .bash_history, .venv/…}   program /root/.venv/bin/server
//! mask  root/            (dir, host's mode and owner)
//!       root/.ssh        whiteout
//!       root/.bash_history whiteout
//!                        (.venv absent from the mask: the host's shows through)
//! ```

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt, lchown};
use std::path::{Component, Path, PathBuf};

use nix::sys::stat::{Mode, SFlag, mknod};

use crate::sys;

/// Fixed paths hidden on every host; account homes and host keys are found at each run.
const HIDDEN: [&str; 11] = [
    "/root",
    "/home",
    "/tmp",
    "/var/tmp",
    "/run",
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssl/private",
    "/var/backups",
];

/// Homes in `/etc/passwd` under these are system directories (`/usr/sbin`, `/bin`, `/dev`),
/// not private state: hiding them would break the programs a server runs.
const SYSTEM_DIRS: [&str; 11] = [
    "/", "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc",
];

/// Directories whose outermost one below a hidden directory is an installation.
const PROJECT_MARKERS: [&str; 12] = [
    "pyvenv.cfg",
    "package.json",
    "node_modules",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "uv.lock",
    "Pipfile",
    "Cargo.toml",
    "go.mod",
    "deno.json",
];

/// More whiteouts than this in one run's mask is an error: the run tmpfs's inodes are the
/// program's write budget.
pub(crate) const MAX_WHITEOUTS: usize = 16_384;
/// Links, interpreters and venv homes followed from the program, at most.
const MAX_CHAIN: usize = 32;

/// What of the host a run's program could see, for the record: who it ran as, the host
/// paths hidden from it, and the installation directories left visible inside them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Visibility {
    pub uid: u32,
    pub gid: u32,
    #[serde(with = "crate::serde_path::vec")]
    pub hidden: Vec<PathBuf>,
    #[serde(with = "crate::serde_path::vec")]
    pub exposed: Vec<PathBuf>,
    /// Why each of `exposed` is visible, in its order (absent in older receipts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub because: Vec<Exposure>,
}

/// A host path left visible inside a hidden directory, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Exposure {
    #[serde(with = "crate::serde_path")]
    pub path: PathBuf,
    pub why: String,
}

/// The mask could not be laid out.
#[derive(Debug, thiserror::Error)]
pub enum MaskError {
    #[error("cannot hide {path} from the program")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "hiding the host's private directories needs more than {MAX_WHITEOUTS} whiteouts (at {path})"
    )]
    TooMany { path: PathBuf },
}

/// The host paths to hide, in the sandbox's view, read from the host root as the overlay
/// sees it (`lower`), with `extra` ones the caller named.
pub(crate) fn hidden_paths(lower: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut hidden: BTreeSet<PathBuf> = HIDDEN.iter().map(PathBuf::from).collect();
    let passwd = fs::read_to_string(lower.join("etc/passwd")).unwrap_or_default();
    let homes = passwd.lines().filter_map(|l| l.split(':').nth(5));
    hidden.extend(homes.filter_map(|home| private_home(Path::new(home))));
    for entry in fs::read_dir(lower.join("etc/ssh"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("ssh_host_") && name.ends_with("_key") {
            hidden.insert(Path::new("/etc/ssh").join(&*name));
        }
    }
    hidden.extend(extra.iter().map(|p| normalise(p)));
    hidden.into_iter().collect()
}

/// An account's home, normalised, when it is private state (not a system directory).
fn private_home(home: &Path) -> Option<PathBuf> {
    let home = normalise(home);
    let system = SYSTEM_DIRS
        .iter()
        .any(|s| home == Path::new(s) || (*s != "/" && home.starts_with(s)));
    (home.is_absolute() && !system).then_some(home)
}

/// Where `uid`'s home is, as a login would set `$HOME`: its account's home in the host's
/// `/etc/passwd` when that is private state (hidden from every run, so a lab can stand in
/// for it), else `/home/<account>`, else `/home/user`.
pub fn home_of(uid: u32) -> PathBuf {
    home_in(Path::new("/"), uid)
}

fn home_in(lower: &Path, uid: u32) -> PathBuf {
    match account(lower, uid) {
        Some((_, home)) if private_home(Path::new(&home)).is_some() => normalise(Path::new(&home)),
        Some((name, _)) if !name.is_empty() && !name.contains('/') => Path::new("/home").join(name),
        _ => PathBuf::from("/home/user"),
    }
}

/// The installation directories the program's start goes through (sandbox view), each below
/// one of `hidden`: what stays visible inside them, and why, in path order.
pub(crate) fn installation(
    program: &Path,
    args: &[OsString],
    lower: &Path,
    hidden: &[PathBuf],
) -> Vec<Exposure> {
    let why = |why: String, path: &Path| (path.to_path_buf(), why);
    let mut todo: Vec<(PathBuf, String)> = args
        .iter()
        .map(PathBuf::from)
        .filter(|a| a.is_absolute() && fs::symlink_metadata(in_layer(lower, a)).is_ok())
        .map(|a| why(format!("{} is an argument of the command", a.display()), &a))
        .rev()
        .collect();
    todo.push(why(
        format!("{} is the program", program.display()),
        program,
    ));
    let mut seen = BTreeSet::new();
    let mut kept: std::collections::BTreeMap<PathBuf, String> = Default::default();
    while let Some((file, reason)) = todo.pop() {
        let file = normalise(&file);
        if seen.len() >= MAX_CHAIN || !seen.insert(file.clone()) {
            continue;
        }
        let on_host = in_layer(lower, &file);
        if let Ok(target) = fs::read_link(&on_host) {
            let parent = file.parent().unwrap_or(Path::new("/"));
            let to = parent.join(target);
            todo.push(why(
                format!("{} links to it ({reason})", file.display()),
                &to,
            ));
        }
        if let Some(interpreter) = shebang(&on_host) {
            let said = format!("the #! line of {} names it ({reason})", file.display());
            todo.push(why(said, &interpreter));
        }
        let Some(root) = installation_root(&file, lower, hidden) else {
            continue;
        };
        if let Some(home) = venv_home(&in_layer(lower, &root)) {
            // The interpreter the venv was made from: `home` is its bin directory.
            let said = format!("the venv {} was made from it", root.display());
            todo.push(why(said, &home.join("python3")));
        }
        let within = if root == file {
            reason
        } else {
            format!("the installation of {}: {reason}", file.display())
        };
        kept.entry(root).or_insert(within);
    }
    kept.into_iter()
        .map(|(path, why)| Exposure { path, why })
        .collect()
}

/// The directory of `file`'s installation, when `file` is inside a hidden directory: the
/// outermost directory below it with a project marker, else the parent of a `bin`
/// directory, else the file's own directory.
fn installation_root(file: &Path, lower: &Path, hidden: &[PathBuf]) -> Option<PathBuf> {
    let within = hidden
        .iter()
        .filter(|h| file.starts_with(h) && file != h.as_path())
        .max_by_key(|h| h.components().count())?;
    let dir = file.parent()?;
    if dir == within {
        // A file directly in a hidden directory (a script in /tmp): that file alone.
        return Some(file.to_path_buf());
    }
    let below = |a: &Path| a.starts_with(within) && a != within.as_path();
    let marked = dir
        .ancestors()
        .filter(|a| below(a))
        .filter(|a| {
            let on_host = in_layer(lower, a);
            PROJECT_MARKERS
                .iter()
                .any(|m| fs::symlink_metadata(on_host.join(m)).is_ok())
        })
        .last();
    if let Some(marked) = marked {
        return Some(marked.to_path_buf());
    }
    let bin = matches!(
        dir.file_name().map(|n| n.as_bytes()),
        Some(b"bin" | b"sbin")
    );
    match dir.parent() {
        // `~/.local` is the user's own prefix for everything (keyrings, other programs'
        // data): a link or script in `~/.local/bin` keeps itself alone; what it leads to
        // (pipx's or uv's venv) keeps its own installation.
        Some(parent) if bin && parent.file_name() == Some(std::ffi::OsStr::new(".local")) => {
            Some(file.to_path_buf())
        }
        Some(parent) if bin && below(parent) => Some(parent.to_path_buf()),
        _ => Some(dir.to_path_buf()),
    }
}

/// The interpreter a `#!` line names (`/usr/bin/env` is itself the interpreter: what it
/// finds on the sandbox's PATH is outside the homes).
fn shebang(path: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = fs::File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let interpreter = line
        .split(|b| b.is_ascii_whitespace())
        .find(|w| !w.is_empty())?;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(interpreter)))
}

/// A venv's `home = …` (the bin directory of the interpreter it was made from).
fn venv_home(root: &Path) -> Option<PathBuf> {
    let config = fs::read_to_string(root.join("pyvenv.cfg")).ok()?;
    config.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "home").then(|| PathBuf::from(value.trim()))
    })
}

/// Lays out the mask layer: each hidden file a whiteout, each hidden directory an empty
/// opaque one, or, when an installation lies inside it, a directory hiding every entry not
/// leading there. Directories the mask makes carry the host's mode and owner, since the
/// topmost layer's are the ones seen. Returns the number of paths hidden.
pub(crate) fn build(
    layer: &Path,
    lower: &Path,
    hidden: &[PathBuf],
    kept: &[PathBuf],
) -> Result<usize, MaskError> {
    let mut mask = Mask {
        layer,
        lower,
        kept,
        whiteouts: 0,
    };
    for path in hidden {
        mask.hide(path, true)?;
    }
    Ok(mask.whiteouts)
}

/// Puts `bytes` at `path` (sandbox view) in the mask layer, over the host's file, with the
/// host file's mode (0644 when it has none): what the program reads there instead.
pub(crate) fn replace(
    layer: &Path,
    lower: &Path,
    path: &Path,
    bytes: &[u8],
) -> Result<(), MaskError> {
    let mask = Mask {
        layer,
        lower,
        kept: &[],
        whiteouts: 0,
    };
    let io = |source| MaskError::Io {
        path: path.to_path_buf(),
        source,
    };
    if mask.parents(path)? {
        return Ok(());
    }
    let mode = fs::metadata(in_layer(lower, path)).map_or(0o644, |m| m.mode() & 0o777);
    let target = in_layer(layer, path);
    fs::write(&target, bytes).map_err(io)?;
    fs::set_permissions(&target, fs::Permissions::from_mode(mode)).map_err(io)
}

/// The account name of `uid` in `lower/etc/passwd`; `None` for a uid with no account.
pub(crate) fn account_name(lower: &Path, uid: u32) -> Option<String> {
    account(lower, uid)
        .map(|(name, _)| name)
        .filter(|name| !name.is_empty())
}

/// `uid`'s account in `lower/etc/passwd`: its name and home.
fn account(lower: &Path, uid: u32) -> Option<(String, String)> {
    let passwd = fs::read_to_string(lower.join("etc/passwd")).ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() > 5 && fields[2].parse::<u32>().ok() == Some(uid))
            .then(|| (fields[0].to_owned(), fields[5].to_owned()))
    })
}

/// The host's `/etc/hosts` with the sandbox's own hostname on 127.0.1.1, as Debian writes
/// it: a program that looks up the machine's name (git does, for its reflog) finds it
/// locally instead of asking the sinkhole's resolver, as on an ordinary machine.
pub(crate) fn hosts_with(lower: &Path, hostname: &str) -> Vec<u8> {
    let mut hosts = fs::read_to_string(lower.join("etc/hosts")).unwrap_or_default();
    let named = hosts.lines().any(|line| {
        let line = line.split('#').next().unwrap_or_default();
        line.split_whitespace().skip(1).any(|name| name == hostname)
    });
    if !named {
        if !hosts.is_empty() && !hosts.ends_with('\n') {
            hosts.push('\n');
        }
        hosts.push_str(&format!("127.0.1.1\t{hostname}\n"));
    }
    hosts.into_bytes()
}

struct Mask<'a> {
    layer: &'a Path,
    lower: &'a Path,
    kept: &'a [PathBuf],
    whiteouts: usize,
}

impl Mask<'_> {
    /// Hides `path`: a hidden directory named in the list stays as an empty one; what lies
    /// beside the way to an installation inside it is made absent, names and all.
    fn hide(&mut self, path: &Path, named: bool) -> Result<(), MaskError> {
        let on_host = in_layer(self.lower, path);
        let Ok(meta) = fs::symlink_metadata(&on_host) else {
            return Ok(());
        };
        if self.kept.iter().any(|k| path.starts_with(k)) {
            return Ok(());
        }
        let target = in_layer(self.layer, path);
        let io = |source| MaskError::Io {
            path: path.to_path_buf(),
            source,
        };
        if self.parents(path)? {
            return Ok(());
        }
        let leads_to_kept = self.kept.iter().any(|k| k.starts_with(path));
        if named && meta.is_dir() && !leads_to_kept {
            // An empty directory where the host's was: programs that write to /tmp or
            // their home still can, and see nothing of the host's.
            self.dir_like(&target, &meta).map_err(io)?;
            sys::lsetxattr(&c_path(&target), c"trusted.overlay.opaque", b"y")
                .map_err(|errno| io(std::io::Error::from(errno)))?;
            return self.count(path);
        }
        if !leads_to_kept {
            if fs::symlink_metadata(&target).is_ok() {
                return Ok(());
            }
            mknod(&target, SFlag::S_IFCHR, Mode::empty(), 0)
                .map_err(|errno| io(std::io::Error::from(errno)))?;
            return self.count(path);
        }
        self.dir_like(&target, &meta).map_err(io)?;
        let entries = fs::read_dir(&on_host).map_err(io)?;
        for entry in entries {
            let entry = entry.map_err(io)?;
            self.hide(&path.join(entry.file_name()), false)?;
        }
        Ok(())
    }

    fn count(&mut self, path: &Path) -> Result<(), MaskError> {
        self.whiteouts += 1;
        if self.whiteouts > MAX_WHITEOUTS {
            return Err(MaskError::TooMany {
                path: path.to_path_buf(),
            });
        }
        Ok(())
    }

    /// Makes the mask's copies of `path`'s ancestors, with the host's mode and owner; true
    /// when one of them already hides it (a hidden path inside another).
    fn parents(&self, path: &Path) -> Result<bool, MaskError> {
        let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
        ancestors.pop(); // "/"
        for dir in ancestors.into_iter().rev() {
            let target = in_layer(self.layer, dir);
            match fs::symlink_metadata(&target) {
                Ok(meta) if meta.is_dir() && !is_opaque(&target) => continue,
                Ok(_) => return Ok(true),
                Err(_) => {}
            }
            let io = |source| MaskError::Io {
                path: dir.to_path_buf(),
                source,
            };
            let meta = fs::metadata(in_layer(self.lower, dir)).map_err(io)?;
            self.dir_like(&target, &meta).map_err(io)?;
        }
        Ok(false)
    }

    fn dir_like(&self, target: &Path, host: &fs::Metadata) -> std::io::Result<()> {
        if !target.exists() {
            fs::create_dir(target)?;
        }
        lchown(target, Some(host.uid()), Some(host.gid()))?;
        fs::set_permissions(target, fs::Permissions::from_mode(host.mode() & 0o7777))
    }
}

fn is_opaque(dir: &Path) -> bool {
    sys::lgetxattr(&c_path(dir), c"trusted.overlay.opaque")
        .is_ok_and(|v| v.as_deref() == Some(b"y"))
}

fn c_path(path: &Path) -> std::ffi::CString {
    std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap_or_default()
}

/// `path` (sandbox view, absolute) inside a layer directory.
fn in_layer(layer: &Path, path: &Path) -> PathBuf {
    layer.join(path.strip_prefix("/").unwrap_or(path))
}

/// `.` and `..` resolved lexically (symlinks are followed by reading them, not here).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> tempfile::TempDir {
        let host = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = host.path().join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        write(
            "etc/passwd",
            "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/bin/false\n\
             pg:x:101:101::/var/lib/postgresql:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n\
             sync:x:4:65534::/bin:/bin/sync\nnet:x:998:998::/:/bin/false\n",
        );
        write("etc/ssh/ssh_host_ed25519_key", "private");
        write("etc/ssh/ssh_host_ed25519_key.pub", "public");
        write("root/.ssh/id_rsa", "secret");
        write(
            "root/.venv/pyvenv.cfg",
            "home = /root/.pyenv/versions/3.11.7/bin\nversion = 3.11.7\n",
        );
        write(
            "root/.venv/bin/server",
            "#!/root/.venv/bin/python3\nimport x\n",
        );
        write("root/.pyenv/versions/3.11.7/bin/python3.11", "ELF");
        write("root/.pyenv/versions/3.11.7/lib/python3.11/os.py", "");
        write("root/.pyenv/versions/3.12.0/bin/python3.12", "ELF");
        write("home/alice/proj/package.json", "{}");
        write("home/alice/proj/dist/index.js", "");
        write("home/alice/.npmrc", "//registry:_authToken=secret");
        std::os::unix::fs::symlink(
            "/root/.pyenv/versions/3.11.7/bin/python3.11",
            host.path().join("root/.venv/bin/python3"),
        )
        .unwrap();
        host
    }

    #[test]
    fn a_home_is_the_accounts_private_one_or_one_under_home() {
        let host = host();
        assert_eq!(home_in(host.path(), 0), Path::new("/root"));
        assert_eq!(home_in(host.path(), 1000), Path::new("/home/alice"));
        assert_eq!(home_in(host.path(), 101), Path::new("/var/lib/postgresql"));
        // A system directory is not a home to stand in for.
        assert_eq!(home_in(host.path(), 1), Path::new("/home/daemon"));
        assert_eq!(home_in(host.path(), 61_017), Path::new("/home/user"));
    }

    #[test]
    fn an_account_name_is_found_by_uid_and_a_uid_without_one_has_none() {
        let host = host();
        assert_eq!(account_name(host.path(), 0).as_deref(), Some("root"));
        assert_eq!(account_name(host.path(), 1000).as_deref(), Some("alice"));
        assert_eq!(account_name(host.path(), 61_017), None);
    }

    #[test]
    fn the_sandbox_hostname_is_added_to_the_hosts_file_once() {
        let host = host();
        fs::write(host.path().join("etc/hosts"), "127.0.0.1\tlocalhost\n").unwrap();
        let hosts = String::from_utf8(hosts_with(host.path(), "box")).unwrap();
        assert_eq!(hosts, "127.0.0.1\tlocalhost\n127.0.1.1\tbox\n");
        fs::write(host.path().join("etc/hosts"), &hosts).unwrap();
        assert_eq!(hosts_with(host.path(), "box"), hosts.as_bytes());
    }

    #[test]
    fn homes_of_accounts_are_hidden_but_system_directories_are_not() {
        let host = host();
        let hidden = hidden_paths(host.path(), &[PathBuf::from("/srv/secrets/../keys")]);
        for path in [
            "/root",
            "/home/alice",
            "/var/lib/postgresql",
            "/etc/ssh/ssh_host_ed25519_key",
            "/srv/keys",
            "/tmp",
        ] {
            assert!(hidden.contains(&PathBuf::from(path)), "{path}: {hidden:?}");
        }
        for path in [
            "/",
            "/usr/sbin",
            "/bin",
            "/etc/ssh/ssh_host_ed25519_key.pub",
        ] {
            assert!(!hidden.contains(&PathBuf::from(path)), "{path}: {hidden:?}");
        }
    }

    fn paths(kept: Vec<Exposure>) -> Vec<PathBuf> {
        kept.into_iter().map(|k| k.path).collect()
    }

    #[test]
    fn a_venv_keeps_itself_and_the_interpreter_it_was_made_from() {
        let host = host();
        let hidden = hidden_paths(host.path(), &[]);
        let kept = paths(installation(
            Path::new("/root/.venv/bin/server"),
            &[],
            host.path(),
            &hidden,
        ));
        assert_eq!(
            kept,
            [
                PathBuf::from("/root/.pyenv/versions/3.11.7"),
                PathBuf::from("/root/.venv"),
            ]
        );
    }

    #[test]
    fn a_script_argument_keeps_its_project_not_the_home() {
        let host = host();
        let hidden = hidden_paths(host.path(), &[]);
        let args = [
            OsString::from("/home/alice/proj/dist/index.js"),
            OsString::from("--x"),
        ];
        let kept = installation(Path::new("/usr/bin/node"), &args, host.path(), &hidden);
        assert_eq!(paths(kept.clone()), [PathBuf::from("/home/alice/proj")]);
        // The record says why: the argument, through the installation it lies in.
        assert_eq!(
            kept[0].why,
            "the installation of /home/alice/proj/dist/index.js: \
             /home/alice/proj/dist/index.js is an argument of the command"
        );
        let loose = paths(installation(
            Path::new("/tmp/tool.sh"),
            &[],
            host.path(),
            &hidden,
        ));
        assert_eq!(loose, [PathBuf::from("/tmp/tool.sh")]);
        // A Python project marked only by what its README installs from keeps its root:
        // a script in src/ imports modules beside the project's other directories.
        for marker in ["requirements.txt", "uv.lock", "setup.cfg", "Pipfile"] {
            let project = host.path().join(format!("home/alice/py-{marker}"));
            fs::create_dir_all(project.join("src")).unwrap();
            fs::write(project.join(marker), "").unwrap();
            fs::write(project.join("src/server.py"), "import tools\n").unwrap();
            let script = OsString::from(format!("/home/alice/py-{marker}/src/server.py"));
            let kept = paths(installation(
                Path::new("/usr/bin/python3"),
                &[script],
                host.path(),
                &hidden,
            ));
            let root = PathBuf::from(format!("/home/alice/py-{marker}"));
            assert_eq!(kept, [root], "{marker}");
        }
        // A link in ~/.local/bin keeps itself and what it leads to, not all of ~/.local.
        let tool = host.path().join("root/.local/share/uv/tools/srv");
        fs::create_dir_all(tool.join("bin")).unwrap();
        fs::write(tool.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        fs::write(tool.join("bin/srv"), "#!/usr/bin/python3\n").unwrap();
        fs::create_dir_all(host.path().join("root/.local/bin")).unwrap();
        std::os::unix::fs::symlink(
            "/root/.local/share/uv/tools/srv/bin/srv",
            host.path().join("root/.local/bin/srv"),
        )
        .unwrap();
        let uv = installation(Path::new("/root/.local/bin/srv"), &[], host.path(), &hidden);
        assert!(
            uv[1].why.contains("/root/.local/bin/srv links to it"),
            "{uv:?}"
        );
        let uv = paths(uv);
        assert_eq!(
            uv,
            [
                PathBuf::from("/root/.local/bin/srv"),
                PathBuf::from("/root/.local/share/uv/tools/srv"),
            ]
        );
    }

    /// Whiteouts need CAP_MKNOD before Linux 5.8; without root the case is a visible skip.
    #[test]
    fn the_mask_whites_out_all_but_the_way_to_an_installation() {
        if !nix::unistd::geteuid().is_root() {
            assert!(
                std::env::var_os("VAC_REQUIRE_PRIVILEGED").is_none(),
                "the mask test needs root to make whiteouts"
            );
            eprintln!("SKIPPED the_mask_whites_out_all_but_the_way_to_an_installation: needs root");
            return;
        }
        let host = host();
        let layer = tempfile::tempdir().unwrap();
        fs::set_permissions(host.path().join("root"), fs::Permissions::from_mode(0o700)).unwrap();
        let hidden = hidden_paths(host.path(), &[]);
        let kept = paths(installation(
            Path::new("/root/.venv/bin/server"),
            &[],
            host.path(),
            &hidden,
        ));
        let made = build(layer.path(), host.path(), &hidden, &kept).unwrap();
        let whiteout = |rel: &str| {
            fs::symlink_metadata(layer.path().join(rel))
                .is_ok_and(|m| m.file_type().is_char_device() && m.rdev() == 0)
        };
        use std::os::unix::fs::FileTypeExt;
        let empty = |rel: &str| {
            let dir = layer.path().join(rel);
            is_opaque(&dir) && fs::read_dir(&dir).unwrap().next().is_none()
        };
        assert!(
            whiteout("root/.ssh"),
            "beside the way to .venv: absent, name and all"
        );
        assert!(whiteout("root/.pyenv/versions/3.12.0"));
        assert!(empty("home"), "/home holds no installation: hidden whole");
        assert!(whiteout("etc/ssh/ssh_host_ed25519_key"));
        assert!(
            !is_opaque(&layer.path().join("root")),
            "the way to .venv stays open"
        );
        assert!(!layer.path().join("root/.venv").exists());
        assert!(!layer.path().join("root/.pyenv/versions/3.11.7").exists());
        assert!(
            !layer
                .path()
                .join("etc/ssh/ssh_host_ed25519_key.pub")
                .exists()
        );
        assert_eq!(made, 4, "one whiteout each, none inside another");
        let mode = fs::metadata(layer.path().join("root")).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o700, "the mask's /root has the host's mode");
    }
}
