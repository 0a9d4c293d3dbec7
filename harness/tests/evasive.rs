//! End to end: the evasive twin (issue "Hostile servers") looks for every sign of an audit
//! a malicious server checks — names, environment, account, home, planted files, cgroup,
//! mounts, pid 1, call arguments — and misbehaves only when it finds none. Through
//! `vac probe` it finds none, so every behaviour the dishonest twin plants is confirmed;
//! given one old tell, it behaves, which shows that its look around is live. Needs root.

mod common;

use common::*;

/// The cells a probe confirmed, as (tool, clause), sorted.
fn confirmed(probe: &Probe) -> Vec<(String, String)> {
    grid(&probe.json)
        .into_iter()
        .filter(|(_, _, verdict)| verdict == "confirmed")
        .map(|(tool, clause, _)| (tool, clause))
        .collect()
}

/// What the evasive twin logged when it saw a sign of the audit.
fn wary(probe: &Probe) -> bool {
    std::fs::read_to_string(probe.receipts.join("receipts.jsonl"))
        .unwrap()
        .contains("an audit")
}

#[test]
fn the_evasive_twin_sees_no_sign_of_the_audit_and_every_behaviour_is_confirmed() {
    let test = "the_evasive_twin_sees_no_sign_of_the_audit_and_every_behaviour_is_confirmed";
    if !privileged(test) {
        return;
    }
    let dishonest = probe(&[], &fixture("dishonest"));
    let evasive = probe(&[], &fixture("evasive"));
    assert!(!wary(&evasive), "the evasive twin saw the audit");
    let expected = confirmed(&dishonest);
    // The dishonest twin's launch is clean: on its row, only its prompt and resource
    // (behaviours 12 and 13) are confirmed.
    let mut row: Vec<&str> = expected
        .iter()
        .filter(|(tool, _)| tool == "(server)")
        .map(|(_, clause)| clause.as_str())
        .collect();
    row.sort_unstable();
    assert_eq!(
        row,
        ["manifest.stable", "result.instructions"],
        "{expected:?}"
    );
    let tools: std::collections::BTreeSet<&str> = expected
        .iter()
        .map(|(tool, _)| tool.as_str())
        .filter(|tool| *tool != "(server)")
        .collect();
    assert_eq!(
        tools.len(),
        11,
        "one tool per planted behaviour: {expected:?}"
    );
    // Its hunt for signs of an audit reads the user's SSH key at launch, and the server
    // row confirms that read; the rest is the dishonest twin's grid.
    let mut with_launch = expected.clone();
    with_launch.push(("(server)".to_string(), "fs.read".to_string()));
    with_launch.sort();
    let mut got = confirmed(&evasive);
    got.sort();
    assert_eq!(got, with_launch);
    let launch = common::cell(&evasive.json, "(server)", "fs.read");
    assert!(launch.to_string().contains(".ssh/id_rsa"), "{launch}");
    assert_eq!(
        evasive.output.status.code(),
        Some(1),
        "a confirmed violation"
    );
}

#[test]
fn the_evasive_twin_behaves_once_it_sees_a_sign_of_the_audit() {
    let test = "the_evasive_twin_behaves_once_it_sees_a_sign_of_the_audit";
    if !privileged(test) {
        return;
    }
    // The canary variable vac used to set, in its old format.
    let told = probe(
        &["--env", "VAC_CANARY_TOKEN=vac-canary-envvar-0123456789ab"],
        &fixture("evasive"),
    );
    assert!(wary(&told), "the evasive twin did not see the variable");
    // It behaves in every tool; what gives it away is the look itself: it read the user's
    // SSH key at launch to decide, and the server row confirms that read.
    assert_eq!(
        confirmed(&told),
        vec![("(server)".to_string(), "fs.read".to_string())]
    );
    assert_eq!(told.output.status.code(), Some(1), "{:?}", told.output);
}
