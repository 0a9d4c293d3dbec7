//! Exit codes against README's table for inputs that are not what the command needs: a file
//! the command line names that cannot be read, or a directory that is not receipts, is a
//! usage error (2) naming it — never "could not run" (3) or "BROKEN" (4), which means tampering.
//! These fail before any sandbox: no root needed.

mod common;

#[test]
fn missing_inputs_are_usage_errors_that_name_them() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().display().to_string();
    let missing = tmp.path().join("missing").display().to_string();
    let bad_baseline = tmp.path().join("baseline.json");
    std::fs::write(&bad_baseline, "not a map").unwrap();
    let bad_suppressions = tmp.path().join("suppressions.toml");
    std::fs::write(&bad_suppressions, "[[suppress]]\nserver = \"*\"\n").unwrap();
    let (bad_baseline, bad_suppressions) = (
        bad_baseline.display().to_string(),
        bad_suppressions.display().to_string(),
    );
    let receipts = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../results/thirdparty/receipts"
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["verify", &missing], "no such directory"),
        (vec!["verify", &empty], "not a receipt directory"),
        (vec!["report", &missing], "no such directory"),
        (vec!["report", &empty], "not a receipt directory"),
        (
            vec!["probe", "--contract", &missing, "--", "/bin/true"],
            "cannot read contract",
        ),
        (
            vec!["static", "--contract", &missing, "--", "/bin/true"],
            "cannot read contract",
        ),
        (vec!["import", &missing], "cannot read"),
        (vec!["campaign", "check", &missing], "cannot read"),
        (
            vec!["report", receipts, "--baseline", &missing],
            "cannot read baseline",
        ),
        (
            vec!["report", receipts, "--baseline", &bad_baseline],
            "not a map.json",
        ),
        (
            vec!["report", receipts, "--suppress", &bad_suppressions],
            "missing field `tool`",
        ),
    ];
    for (args, says) in cases {
        let output = common::vac(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        let named = stderr.contains(tmp.path().to_str().unwrap());
        assert!(named, "{args:?} does not name its input: {stderr}");
    }
}
