//! A server started as installed (SPEC §3.2): the user starts a server from its project
//! directory (`python server.py`, `node dist/index.js`, `python -m pkg`, `uvicorn pkg.app:app`,
//! `fastmcp run server.py:mcp`), but the sandbox starts every program in the lab's working
//! directory, and its mask hides the homes and `/tmp` where projects live. [`as_installed`]
//! makes the command start the same there: a file the command names relative to where vac
//! was started becomes absolute (the mask then keeps its installation visible, by the
//! project's markers), and a Python module named by `-m` or `module:object` that lies there
//! is kept visible and importable (`PYTHONPATH`). Directories are left as written: `.` or
//! `notes` may as well mean the lab's.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use vac_sandbox::Exposure;

/// The command to run, and what else its start needs of the host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Started {
    pub command: Vec<OsString>,
    /// Host paths the command's modules lie in, kept visible, and why.
    pub exposed: Vec<Exposure>,
    /// The directory Python imports those modules from.
    pub import_from: Option<PathBuf>,
}

impl Started {
    /// What the start needs beside its command, added to `inputs`: the modules kept
    /// visible, and `PYTHONPATH` naming where they are imported from (unless the user set
    /// one).
    pub fn add_to(&self, inputs: &mut super::inputs::Inputs) {
        inputs.start.extend(self.exposed.iter().cloned());
        if let Some(dir) = &self.import_from
            && !inputs.env.iter().any(|v| v.name == "PYTHONPATH")
        {
            inputs.env.push(super::inputs::EnvVar {
                name: "PYTHONPATH".into(),
                value: dir.display().to_string(),
            });
        }
    }
}

/// `command` as typed in `origin` (the directory vac was started from), made to start the
/// same in the sandbox.
pub fn as_installed(command: Vec<OsString>, origin: &Path) -> Started {
    let mut started = Started::default();
    let mut after_m = false;
    for (at, arg) in command.into_iter().enumerate() {
        let module_flag = std::mem::replace(&mut after_m, arg == "-m");
        let Some(text) = arg.to_str() else {
            started.command.push(arg);
            continue;
        };
        // The program: a relative path with a slash is where it was typed.
        if at == 0 {
            let path = Path::new(text);
            let typed = path.is_relative() && path.components().count() > 1;
            started.command.push(match typed {
                true => below(origin, path).into(),
                false => arg,
            });
            continue;
        }
        if let Some(file) = relative_file(text, origin) {
            started.command.push(file.into());
            continue;
        }
        // `file.py:object`: the file part, where it was typed.
        if let Some((file, object)) = text.rsplit_once(':')
            && is_identifier(object)
            && let Some(file) = relative_file(file, origin)
        {
            started
                .command
                .push(format!("{}:{object}", file.display()).into());
            continue;
        }
        let module = match text.split_once(':') {
            _ if module_flag => Some(text),
            Some((module, object)) if is_identifier(object) => Some(module),
            _ => None,
        };
        if let Some(found) = module.and_then(|m| module_in(m, origin)) {
            let why = format!("the module {text} is imported from {}", origin.display());
            if !started.exposed.iter().any(|e| e.path == found) {
                started.exposed.push(Exposure { path: found, why });
            }
            started.import_from = Some(origin.to_path_buf());
        }
        started.command.push(arg);
    }
    started
}

/// `text` as a file below `origin`, when it names one there (not an option, not absolute).
fn relative_file(text: &str, origin: &Path) -> Option<PathBuf> {
    let path = Path::new(text);
    if text.starts_with('-') || !path.is_relative() || text.contains('\0') {
        return None;
    }
    let file = below(origin, path);
    std::fs::metadata(&file)
        .is_ok_and(|m| m.is_file())
        .then_some(file)
}

/// `path` below `origin`, without its `.` components.
fn below(origin: &Path, path: &Path) -> PathBuf {
    origin.join(path).components().collect()
}

/// Where the top package of a dotted module name lies in `origin` (`pkg/` or `pkg.py`).
fn module_in(module: &str, origin: &Path) -> Option<PathBuf> {
    let top = module.split('.').next()?;
    if !module.split('.').all(is_identifier) {
        return None;
    }
    [origin.join(top), origin.join(format!("{top}.py"))]
        .into_iter()
        .find(|p| p.exists())
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each typed command, in a project directory holding a script, a package and a file
    /// named like a directory of the lab, and what the sandbox is given to start.
    #[test]
    fn a_command_typed_in_its_project_starts_the_same_in_the_lab() {
        let dir = tempfile::tempdir().unwrap();
        let origin = dir.path();
        std::fs::create_dir_all(origin.join("pkg/sub")).unwrap();
        std::fs::write(origin.join("pkg/__init__.py"), "").unwrap();
        std::fs::write(origin.join("server.py"), "").unwrap();
        std::fs::write(origin.join("tools.py"), "").unwrap();
        std::fs::create_dir_all(origin.join("notes")).unwrap();
        std::fs::create_dir_all(origin.join("bin")).unwrap();
        std::fs::write(origin.join("bin/serve"), "").unwrap();
        let o = origin.display();
        let module = |top: &str, m: &str| Exposure {
            path: origin.join(top),
            why: format!("the module {m} is imported from {o}"),
        };
        let cases: Vec<(&str, String, Vec<Exposure>)> = vec![
            (
                "python3 server.py",
                format!("python3 {o}/server.py"),
                vec![],
            ),
            (
                "./bin/serve --port 1",
                format!("{o}/bin/serve --port 1"),
                vec![],
            ),
            (
                "fastmcp run server.py:mcp",
                format!("fastmcp run {o}/server.py:mcp"),
                vec![],
            ),
            (
                "python3 -m pkg.sub",
                "python3 -m pkg.sub".into(),
                vec![module("pkg", "pkg.sub")],
            ),
            (
                "uvicorn pkg.app:app",
                "uvicorn pkg.app:app".into(),
                vec![module("pkg", "pkg.app:app")],
            ),
            (
                "uvicorn tools:app",
                "uvicorn tools:app".into(),
                vec![module("tools.py", "tools:app")],
            ),
            // A directory, an option, a name that is nowhere there: as typed.
            ("server notes -v", "server notes -v".into(), vec![]),
            (
                "python3 -m http.server",
                "python3 -m http.server".into(),
                vec![],
            ),
            ("npx -y mcp-server-x", "npx -y mcp-server-x".into(), vec![]),
            (
                "python3 /abs/server.py",
                "python3 /abs/server.py".into(),
                vec![],
            ),
        ];
        for (typed, expected, exposed) in cases {
            let command = typed.split(' ').map(OsString::from).collect();
            let started = as_installed(command, origin);
            let got: Vec<_> = started
                .command
                .iter()
                .map(|a| a.to_string_lossy())
                .collect();
            assert_eq!(got.join(" "), expected, "{typed}");
            assert_eq!(started.exposed, exposed, "{typed}");
            let imports = !exposed.is_empty();
            assert_eq!(started.import_from.is_some(), imports, "{typed}");
        }
    }
}
