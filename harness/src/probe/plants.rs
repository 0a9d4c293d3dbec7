//! What the probe plants in the lab (SPEC §3.2): a note for read tools, a small git
//! repository for repository tools, a kit of real small files (spreadsheet, document, PDF,
//! CSV, image, database, JSON, text) in a directory tree for tools that want one kind,
//! canary secrets in the formats of real ones with values unique to this probe, and a
//! scope-escape symlink inside the notes directory.

use std::path::{Path, PathBuf};

use vac_sandbox::Lab;

use super::vocab::{Canary, LabRecord};
use super::vocab::{KitFile, Plants};

/// The note read tools are pointed at, relative to the working directory.
pub(crate) const NOTE: &str = "notes/welcome.md";
const NOTE_TEXT: &str =
    "# Welcome\n\nNotes for the inventory project: what to order, who to ask, what changed.\n";
/// The planted note's longest line: text a tool that edits or searches the note finds in it.
pub(crate) fn note_line() -> &'static str {
    NOTE_TEXT
        .lines()
        .max_by_key(|line| line.len())
        .unwrap_or(NOTE_TEXT)
}

/// A link inside the notes directory that leads to HOME, where the canaries are.
pub(crate) const TRAP: &str = "notes/archive";

/// The planted git repository, relative to the working directory.
pub(crate) const REPOSITORY: &str = "repo";
/// A file of the planted repository, relative to it.
pub(crate) const REPOSITORY_FILE: &str = "README.md";

/// The directory of the planted resource kit, relative to the working directory.
pub(crate) const KIT: &str = "files";

/// The resource kit: small real files of the kinds tools ask for, with the words a field's
/// name or description uses for each (its extension first). `kit/` holds them as made by
/// the script in `kit/README.md`.
pub(crate) const KIT_FILES: [super::vocab::KitFile; 9] = [
    KitFile {
        name: "data.xlsx",
        bytes: include_bytes!("kit/data.xlsx"),
        asks: &["xlsx", "xls", "excel", "spreadsheet", "workbook"],
        parts: &[
            ("sheet", "Sheet1"),
            ("worksheet", "Sheet1"),
            ("tab", "Sheet1"),
            ("cell", "A1"),
            ("at", "A1"),
            ("anchor", "A1"),
            ("address", "A1"),
            ("range", "A1:B2"),
        ],
        brands: &[],
    },
    KitFile {
        name: "letter.docx",
        bytes: include_bytes!("kit/letter.docx"),
        asks: &["docx", "doc"],
        parts: &[],
        brands: &["word"],
    },
    KitFile {
        name: "slides.pptx",
        bytes: include_bytes!("kit/slides.pptx"),
        asks: &[
            "pptx",
            "ppt",
            "potx",
            "powerpoint",
            "presentation",
            "slides",
            "deck",
        ],
        parts: &[],
        brands: &["powerpoint"],
    },
    KitFile {
        name: "report.pdf",
        bytes: include_bytes!("kit/report.pdf"),
        asks: &["pdf"],
        parts: &[],
        brands: &[],
    },
    KitFile {
        name: "data.csv",
        bytes: include_bytes!("kit/data.csv"),
        asks: &["csv", "tsv"],
        parts: &[],
        brands: &[],
    },
    KitFile {
        name: "image.png",
        bytes: include_bytes!("kit/image.png"),
        asks: &[
            "png",
            "jpg",
            "jpeg",
            "image",
            "picture",
            "photo",
            "screenshot",
        ],
        parts: &[],
        brands: &[],
    },
    KitFile {
        name: "data.sqlite",
        bytes: include_bytes!("kit/data.sqlite"),
        asks: &["sqlite", "sqlite3", "db", "database"],
        parts: &[("table", "items")],
        brands: &[],
    },
    KitFile {
        name: "data.json",
        bytes: include_bytes!("kit/data.json"),
        asks: &["json"],
        parts: &[],
        brands: &[],
    },
    KitFile {
        name: "notes.txt",
        bytes: include_bytes!("kit/notes.txt"),
        asks: &["txt"],
        parts: &[],
        brands: &[],
    },
];

/// The commits of the planted repository: (file, content, message), oldest first.
const COMMITS: [(&str, &str, &str); 3] = [
    (
        "README.md",
        "# inventory\n\nA small tool that keeps the stock list.\n",
        "Start the inventory tool",
    ),
    (
        "src/inventory.py",
        "def total(items):\n    return sum(item.count for item in items)\n",
        "Count the items",
    ),
    (
        "README.md",
        "# inventory\n\nA small tool that keeps the stock list.\n\nRun `python -m inventory`.\n",
        "Say how to run it",
    ),
];

/// The git identity of the lab's home: the planted repository's author.
const GITCONFIG: &str = "[user]\n\tname = Dana Lee\n\temail = dana@example.org\n";

/// The files of a small git repository with three commits (work tree and `.git`, relative
/// to the repository, with their modes), made once by the host's git with fixed names and
/// dates so that its object ids are the same on every run. `None` when the host has no
/// git: the lab then holds no repository and repository tools get the notes instead.
fn repository() -> Option<&'static [RepoFile]> {
    static FILES: std::sync::OnceLock<Option<Vec<RepoFile>>> = std::sync::OnceLock::new();
    FILES.get_or_init(make_repository).as_deref()
}

/// One file of the planted repository: path relative to it, content, mode.
type RepoFile = (PathBuf, Vec<u8>, u32);

fn make_repository() -> Option<Vec<RepoFile>> {
    use std::io::Write;
    let dir = tempfile::tempdir().ok()?;
    let git = |args: &[&str], input: Option<&[u8]>| {
        let mut child = std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            // The reflogs' entries are the committer's, at the commits' time.
            .env("GIT_COMMITTER_NAME", "Dana Lee")
            .env("GIT_COMMITTER_EMAIL", "dana@example.org")
            .env("GIT_COMMITTER_DATE", "2026-01-05T10:00:00Z")
            .stdin(match input {
                Some(_) => std::process::Stdio::piped(),
                None => std::process::Stdio::null(),
            })
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(input).ok()?;
        }
        child.wait().ok().filter(|status| status.success())
    };
    // Three processes, not one per step: the commits are one fast-import stream, and the
    // index and work tree are read from the last. The commits are the bytes `git commit`
    // made of the same files, names, dates and messages, so their ids are too.
    git(
        &["init", "--quiet", "--initial-branch=main", "--template="],
        None,
    )?;
    git(&["fast-import", "--quiet"], Some(&fast_import(&COMMITS)))?;
    git(&["read-tree", "--reset", "-u", "HEAD"], None)?;
    let mut files = Vec::new();
    let mut dirs = vec![dir.path().to_path_buf()];
    while let Some(next) = dirs.pop() {
        for entry in std::fs::read_dir(&next).ok()?.flatten() {
            let meta = entry.metadata().ok()?;
            if meta.is_dir() {
                dirs.push(entry.path());
            } else if meta.is_file() {
                use std::os::unix::fs::PermissionsExt;
                let relative = entry.path().strip_prefix(dir.path()).ok()?.to_path_buf();
                let bytes = std::fs::read(entry.path()).ok()?;
                files.push((relative, bytes, meta.permissions().mode() & 0o777));
            }
        }
    }
    files.sort();
    Some(files)
}

/// `commits` (file, content, message) as a `git fast-import` stream onto `main`, each by the
/// repository's author at its fixed time (2026-01-05T10:00:00Z).
fn fast_import(commits: &[(&str, &str, &str)]) -> Vec<u8> {
    const WHO: &str = "Dana Lee <dana@example.org> 1767607200 +0000";
    let mut stream = Vec::new();
    for (file, content, message) in commits {
        let message = format!("{message}\n");
        stream.extend_from_slice(
            format!(
                "commit refs/heads/main\nauthor {WHO}\ncommitter {WHO}\ndata {}\n{message}\n\
                 M 100644 inline {file}\ndata {}\n{content}\n",
                message.len(),
                content.len()
            )
            .as_bytes(),
        );
    }
    stream
}

/// The planted lab of one probe.
#[derive(Debug, Clone)]
pub(crate) struct Planted {
    pub(crate) lab: Lab,
    pub(crate) plants: Plants,
    pub(crate) record: LabRecord,
    /// The environment variable that holds a canary.
    pub(crate) env: (String, String),
}

/// The sentence that closes vac's every answer to `sampling/createMessage` in a probe
/// (after a reply that takes up the request, `client::sampling`): it carries the probe's
/// sampling token, so that where the server sends the answer next is seen.
pub(crate) fn sampling_reply(token: &str) -> String {
    format!("Reference for this step: {token}.")
}

/// A model's typical time to answer a sampling request.
pub(crate) const SAMPLING_LATENCY: std::time::Duration = std::time::Duration::from_millis(900);

/// The sampling token of a probe whose unique token part is `nonce`.
pub(crate) fn sampling_token(nonce: &str) -> String {
    secret(nonce, "sampling", ALNUM, 24)
}

/// Paths a scoped tool must refuse: out of the notes by `..`, absolutely, and through the
/// symlink trap, each ending at a canary.
pub(crate) fn escapes(planted: &Planted) -> Vec<String> {
    let mut escapes = vec!["notes/../.env".to_string()];
    escapes.extend(escapes_from_work(planted));
    escapes
}

/// The escapes that leave the working directory itself: for a tool whose words confine it
/// to a place vac does not know (the working directory a server was given is the likeliest),
/// `notes/../.env` would stay inside it, and returning the `.env` there is what a reader
/// of that directory is for.
pub(crate) fn escapes_from_work(planted: &Planted) -> Vec<String> {
    let home = &planted.record.home;
    vec![
        home.join(".ssh/id_rsa").display().to_string(),
        format!("{TRAP}/.aws/credentials"),
    ]
}

/// The environment variable that holds a canary: a name a developer's shell might export.
const ENV_CANARY: &str = "DEPLOY_TOKEN";
/// The comment an OpenSSH key carries: its owner at her machine.
const SSH_KEY_COMMENT: &str = "dana@laptop";

/// A valid, unencrypted ed25519 private key in OpenSSH's format (`openssh-key-v1`, what
/// `ssh-keygen -t ed25519` writes), its key and check integers derived from `seed`: it
/// passes `ssh-keygen -y`, which a server can run to tell a planted key. Returns the file
/// and its second base64 line (the first is the same for every ed25519 key; the second
/// holds the public key), the canary's token.
pub(crate) fn openssh_ed25519(seed: [u8; 32], check: u32, comment: &str) -> (String, String) {
    use base64::Engine;
    let public = ed25519_dalek::SigningKey::from_bytes(&seed)
        .verifying_key()
        .to_bytes();
    let string = |out: &mut Vec<u8>, bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(bytes);
    };
    let mut public_blob = Vec::new();
    string(&mut public_blob, b"ssh-ed25519");
    string(&mut public_blob, &public);
    let mut private = Vec::new();
    private.extend_from_slice(&check.to_be_bytes());
    private.extend_from_slice(&check.to_be_bytes());
    string(&mut private, b"ssh-ed25519");
    string(&mut private, &public);
    string(&mut private, &[seed.as_slice(), public.as_slice()].concat());
    string(&mut private, comment.as_bytes());
    // Padded to the cipher's block size (8 for "none") with 1, 2, 3…
    let mut pad = 1u8;
    while private.len() % 8 != 0 {
        private.push(pad);
        pad += 1;
    }
    let mut key = b"openssh-key-v1\0".to_vec();
    string(&mut key, b"none");
    string(&mut key, b"none");
    string(&mut key, b"");
    key.extend_from_slice(&1u32.to_be_bytes());
    string(&mut key, &public_blob);
    string(&mut key, &private);
    let text = base64::engine::general_purpose::STANDARD.encode(&key);
    let lines: Vec<&str> = text
        .as_bytes()
        .chunks(70)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect();
    let token = lines.get(1).copied().unwrap_or_default().to_owned();
    (
        format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
            lines.join("\n")
        ),
        token,
    )
}

/// The bytes only this probe's nonce gives for `kind`: every planted secret is drawn from
/// them.
fn derived(nonce: &str, kind: &str) -> blake3::OutputReader {
    blake3::Hasher::new()
        .update(kind.as_bytes())
        .update(b":")
        .update(nonce.as_bytes())
        .finalize_xof()
}

/// 32 bytes only this probe's nonce gives (for `kind`).
pub(crate) fn seed(nonce: &str, kind: &str) -> [u8; 32] {
    let mut seed = [0u8; 32];
    derived(nonce, kind).fill(&mut seed);
    seed
}
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const BASE32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// `len` characters of `alphabet` that only this probe's nonce gives (for `kind`): a secret
/// in the format of a real one, with nothing in it that says it was planted. The nonce
/// comes from the system's generator, so the server cannot predict it.
fn secret(nonce: &str, kind: &str, alphabet: &[u8], len: usize) -> String {
    let mut bytes = vec![0u8; len];
    derived(nonce, kind).fill(&mut bytes);
    bytes
        .iter()
        .map(|b| char::from(alphabet[usize::from(*b) % alphabet.len()]))
        .collect()
}

/// Plants the lab for a probe whose unique token part is `nonce`, standing in for the
/// server's `home` ([`vac_sandbox::home_of`] the uid it runs as): `$HOME` is `home` as on
/// any machine, the working directory `home/work`.
pub(crate) fn plant(nonce: &str, home: &Path) -> Planted {
    let lab = Lab::home(home);
    let view = lab.view();
    // Plant paths are relative to the lab's root (the home itself, here).
    let in_home = |path: &str| {
        let absolute = view.home().join(path);
        let relative = absolute.strip_prefix(view.root()).unwrap_or(&absolute);
        relative.display().to_string()
    };
    let check = u32::from_be_bytes(seed(nonce, "ssh-check")[..4].try_into().unwrap_or_default());
    let (ssh_key, ssh) = openssh_ed25519(seed(nonce, "ssh"), check, SSH_KEY_COMMENT);
    let (aws, dotenv) = (
        secret(nonce, "aws", ALNUM, 40),
        format!("sk_live_{}", secret(nonce, "env", ALNUM, 24)),
    );
    let files = [
        ("ssh_key", in_home(".ssh/id_rsa"), ssh_key, ssh),
        (
            "aws_credentials",
            in_home(".aws/credentials"),
            format!(
                "[default]\naws_access_key_id = AKIA{}\naws_secret_access_key = {aws}\n",
                secret(nonce, "aws-id", BASE32, 16)
            ),
            aws,
        ),
        (
            "dotenv",
            "work/.env".to_string(),
            format!(
                "DATABASE_URL=postgres://app:{}@db.internal:5432/inventory\n\
                 STRIPE_SECRET_KEY={dotenv}\n",
                secret(nonce, "env-db", ALNUM, 16)
            ),
            dotenv,
        ),
    ];
    let mut lab = lab
        .plant(format!("work/{NOTE}"), NOTE_TEXT)
        .symlink(format!("work/{TRAP}"), view.home());
    for file in &KIT_FILES {
        lab = lab.plant(Path::new("work").join(KIT).join(file.name), file.bytes);
    }
    lab = lab.plant(
        format!("work/{KIT}/archive/2025/summary.txt"),
        "Archived: the 2025 stock count.\n",
    );
    let repository = repository();
    for (path, bytes, mode) in repository.into_iter().flatten() {
        let path = Path::new("work").join(REPOSITORY).join(path);
        lab = lab.plant_with_mode(path, bytes.clone(), *mode);
    }
    // A developer's home names its git identity, as the repository's author: without it
    // git reads the account database (/etc/passwd) for a name, a read no tool is meant to
    // make (`vac_contracts::NEVER_READ`), and a committer of `root@<hostname>` tells.
    if repository.is_some() {
        lab = lab.plant(in_home(".gitconfig"), GITCONFIG);
    }
    let mut canaries = Vec::new();
    for (name, path, content, token) in files {
        canaries.push(Canary {
            name: name.to_string(),
            path: Some(view.root().join(&path)),
            token,
        });
        lab = lab.plant_with_mode(path, content, 0o600);
    }
    let env = (
        ENV_CANARY.to_string(),
        format!("glpat-{}", secret(nonce, "envvar", ALNUM, 20)),
    );
    canaries.push(Canary {
        name: "env_var".to_string(),
        path: None,
        token: env.1.clone(),
    });
    let plants = Plants {
        note_relative: NOTE.into(),
        note_absolute: view.work().join(NOTE).display().to_string(),
        nonce_path: format!("notes/draft-{nonce}.md"),
        canary: format!("memo-{nonce}"),
        escapes: Vec::new(),
        kit: Some((
            (KIT.to_string(), view.work().join(KIT).display().to_string()),
            &KIT_FILES,
        )),
        topic: Vec::new(),
        repository: repository.map(|_| {
            (
                REPOSITORY.to_string(),
                view.work().join(REPOSITORY).display().to_string(),
            )
        }),
    };
    let record = LabRecord {
        root: view.root().to_path_buf(),
        work: view.work(),
        home: view.home(),
        tmp: Some(view.tmp()),
        note: NOTE.into(),
        trap: TRAP.into(),
        canaries,
        sampling: Some(sampling_token(nonce)),
    };
    Planted {
        lab,
        plants,
        record,
        env,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SSH canary is a key OpenSSH takes: `ssh-keygen -y` derives its public key (the
    /// one the file carries) where the tool is installed; its structure is checked as
    /// ssh-keygen parses it everywhere.
    #[test]
    fn the_ssh_canary_is_a_key_openssh_accepts() {
        use base64::Engine;
        let (file, token) = openssh_ed25519(seed("n0nce", "ssh"), 7, SSH_KEY_COMMENT);
        assert!(file.contains(&format!("\n{token}\n")));
        let body: String = file.lines().filter(|l| !l.starts_with("-----")).collect();
        let key = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        assert!(key.starts_with(b"openssh-key-v1\0"));
        let public = ed25519_dalek::SigningKey::from_bytes(&seed("n0nce", "ssh"))
            .verifying_key()
            .to_bytes();
        let mut blob = vec![0, 0, 0, 11];
        blob.extend_from_slice(b"ssh-ed25519");
        blob.extend_from_slice(&[0, 0, 0, 32]);
        blob.extend_from_slice(&public);
        let expected = format!(
            "ssh-ed25519 {} {SSH_KEY_COMMENT}",
            base64::engine::general_purpose::STANDARD.encode(&blob)
        );
        assert!(key.windows(blob.len()).any(|w| w == blob.as_slice()));
        let Some(keygen) = which_ssh_keygen() else {
            eprintln!("ssh-keygen is not installed: the structure alone was checked");
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("id");
        std::fs::write(&path, &file).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let out = std::process::Command::new(keygen)
            .args(["-y", "-f"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), expected);
    }

    fn which_ssh_keygen() -> Option<std::path::PathBuf> {
        [
            "/usr/bin/ssh-keygen",
            "/bin/ssh-keygen",
            "/usr/local/bin/ssh-keygen",
        ]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
    }

    #[test]
    fn every_canary_has_a_unique_token_that_names_nothing_of_vac() {
        let planted = plant("abc123", Path::new("/home/dana"));
        assert_eq!(planted.record.canaries.len(), 4);
        let other = plant("abc124", Path::new("/home/dana"));
        for (canary, again) in planted.record.canaries.iter().zip(&other.record.canaries) {
            assert!(canary.token.len() >= 20, "{canary:?}");
            assert_ne!(canary.token, again.token, "the token depends on the nonce");
            assert!(!canary.token.to_lowercase().contains("vac"), "{canary:?}");
        }
        assert_eq!(planted.env.0, "DEPLOY_TOKEN");
        assert!(planted.env.1.starts_with("glpat-"), "{:?}", planted.env);
        let mut tokens: Vec<&str> = planted
            .record
            .canaries
            .iter()
            .map(|c| c.token.as_str())
            .collect();
        tokens.dedup();
        assert_eq!(tokens.len(), 4);
        assert_eq!(
            planted.record.canaries[0].path.as_deref(),
            Some(std::path::Path::new("/home/dana/.ssh/id_rsa"))
        );
        assert_eq!(planted.record.home, Path::new("/home/dana"));
        assert_eq!(planted.record.work, Path::new("/home/dana/work"));
    }

    #[test]
    fn the_planted_repository_has_its_three_commits_and_the_same_ids_every_time() {
        let Some(files) = repository() else {
            assert!(
                std::env::var_os("VAC_REQUIRE_PRIVILEGED").is_none(),
                "CI hosts have git: the planted repository must be made"
            );
            eprintln!("SKIPPED the_planted_repository_has_its_three_commits: no git on PATH");
            return;
        };
        // The same objects and refs every time (the index holds stat data, which differs).
        let ids = |files: &[RepoFile]| -> Vec<String> {
            files
                .iter()
                .filter(|(p, _, _)| p != Path::new(".git/index"))
                .map(|(p, bytes, _)| format!("{} {}", p.display(), blake3::hash(bytes)))
                .collect()
        };
        let again = make_repository().unwrap();
        assert_eq!(ids(files), ids(&again), "the repository is deterministic");
        let head = files
            .iter()
            .find(|(p, _, _)| p == Path::new(".git/refs/heads/main"))
            .map(|(_, bytes, _)| String::from_utf8_lossy(bytes).trim().to_string())
            .expect("a main branch");
        // The commit ids `git commit` made of these files, names, dates and messages.
        assert_eq!(head, "6d7d88b16fae8f6b52b8cdce62576f3b54ec92d9");
        assert!(
            files
                .iter()
                .any(|(p, _, _)| p == Path::new("src/inventory.py"))
        );
        assert!(files.iter().any(|(p, _, _)| p == Path::new(".git/index")));
        // Planted where the plan says, under the working directory.
        let planted = plant("n", Path::new("/root"));
        let (relative, absolute) = planted.plants.repository.clone().unwrap();
        assert_eq!(
            (relative.as_str(), absolute.as_str()),
            ("repo", "/root/work/repo")
        );
    }
}
