//! `vac static` end to end, on the built-in fixtures: the twins' manifests are the same
//! bytes, so the static analyser says the same of both, while the dynamic verdicts confirm
//! only the dishonest twin's planted behaviours — every one of which the comparison lists
//! as a declaration gap — and the broad server's declared-destructive tools are static
//! findings with nothing confirmed behind them. Other analysers' findings are compared the
//! same way (`--import`).

mod common;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// `vac demo --out DIR` once; the campaign directory it made.
fn demo(out: &Path) -> PathBuf {
    let output = common::vac(&["demo", "--out", out.to_str().unwrap()]);
    assert!(output.status.success(), "vac demo: {output:?}");
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// `vac static ARGS… --json`, which must exit 0.
fn static_json(args: &[&str]) -> Value {
    let mut all = vec!["static", "--json"];
    all.extend_from_slice(args);
    let output = common::vac(&all);
    assert!(output.status.success(), "vac {all:?}: {output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The `tools` of the first initial manifest event of a probe's log, as the exact text
/// recorded (canonical JSON: the same bytes for the same tools/list).
fn recorded_manifest(probe: &Path) -> String {
    let log = common::log_text(probe);
    let line = log
        .lines()
        .find(|l| l.contains("\"phase\":\"initial\"") && l.contains("\"tools\":["))
        .expect("an initial manifest event");
    let record: Value = serde_json::from_str(line).unwrap();
    serde_json::to_string(&record["body"]["event"]["tools"]).unwrap()
}

/// The findings of one server, without the server (to set two servers side by side).
fn findings_of(doc: &Value, server: &str) -> Vec<Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["server"] == server)
        .map(|f| {
            let mut f = f.clone();
            f.as_object_mut().unwrap().remove("server");
            f
        })
        .collect()
}

// The demo campaign names its servers by target id.
const HONEST: &str = "honest";
const DISHONEST: &str = "dishonest";
const BROAD: &str = "broad";

/// SPEC §4's planted behaviours: (tool, the clause it confirms).
const PLANTED: [(&str, &str); 11] = [
    ("read_note", "fs.write"),
    ("open_note", "fs.write"),
    ("get_config", "fs.write"),
    ("search_docs", "result.secrets"),
    ("summarize_account", "net.egress"),
    ("word_count", "exec"),
    ("check_status", "net.egress"),
    ("get_tips", "result.instructions"),
    ("list_projects", "manifest.stable"),
    ("query_data", "net.egress"),
    ("index_notes", "fs.write"),
];

#[test]
fn the_twins_read_alike_statically_and_every_planted_behaviour_is_a_declaration_gap() {
    let test = "the_twins_read_alike_statically_and_every_planted_behaviour_is_a_declaration_gap";
    if !common::privileged(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let campaign = demo(&tmp.path().join("demo"));

    // Byte-identical manifests, so identical static findings.
    assert_eq!(
        recorded_manifest(&campaign.join("honest/rep-1")),
        recorded_manifest(&campaign.join("dishonest/rep-1")),
        "the twins' tools/list must be byte-identical"
    );
    let doc = static_json(&[campaign.to_str().unwrap()]);
    let honest = findings_of(&doc, HONEST);
    assert!(!honest.is_empty());
    assert_eq!(honest, findings_of(&doc, DISHONEST));

    let comparison = &doc["comparison"];
    assert_eq!(comparison["analyser"], "vac static");
    let gaps = comparison["declaration_gaps"].as_array().unwrap();
    for (tool, clause) in PLANTED {
        let gap = gaps
            .iter()
            .find(|g| g["tool"] == tool && g["class"] == clause)
            .unwrap_or_else(|| panic!("{tool} × {clause} is not a declaration gap: {gaps:#?}"));
        assert_eq!(gap["server"], DISHONEST);
        assert_eq!(gap["verdict"], "confirmed");
        assert!(
            gap["record"]["hash"]
                .as_str()
                .is_some_and(|h| h.len() == 64)
        );
    }
    // Only the dishonest twin confirms anything: no gap elsewhere.
    assert!(gaps.iter().all(|g| g["server"] == DISHONEST), "{gaps:#?}");
    // search_docs' scope escape is the half of behaviour 4 seed 001's boundary does
    // predict (an open directory argument): a true positive, not a gap.
    let fs_read = comparison["matrix"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["class"] == "fs.read")
        .unwrap();
    assert!(fs_read["true_positive"].as_u64().unwrap() >= 1, "{fs_read}");
    // The honest twin's cells that static flagged and the tool did not do are
    // over-approximations: refuted, with successful calls.
    let over = comparison["over_approximations"].as_array().unwrap();
    assert!(over.iter().any(|o| o["server"] == HONEST));
    assert!(
        over.iter()
            .all(|o| o["verdict"] == "refuted" && o["succeeded"].as_u64() > Some(0))
    );

    // The broad server declares file_manager destructive: static findings, nothing
    // confirmed behind them. Its delete cell is graded under the universal limits (never
    // a credential, start-up or system place), which its deletes in the lab keep: the
    // prediction was tested and refuted, an over-approximation.
    let broad = findings_of(&doc, BROAD);
    let destructive = broad
        .iter()
        .find(|f| f["tool"] == "file_manager" && f["rule"] == "VAC-S003")
        .expect("file_manager's destructiveHint is a finding");
    assert_eq!(destructive["predicts"], json!(["fs.delete"]));
    let cell = over
        .iter()
        .find(|u| u["server"] == BROAD && u["tool"] == "file_manager" && u["class"] == "fs.delete")
        .expect("file_manager × fs.delete is an over-approximation");
    assert_eq!(cell["verdict"], "refuted");
    assert!(
        gaps.iter()
            .chain(over)
            .all(|d| d["server"] != BROAD || d["verdict"] != "confirmed")
    );

    // The matrix counts every tool × class once.
    let tools = 11 + 11 + 2;
    for row in comparison["matrix"].as_array().unwrap() {
        let sum: u64 = [
            "true_positive",
            "false_positive",
            "false_negative",
            "true_negative",
            "untested_predicted",
            "untested_unpredicted",
        ]
        .iter()
        .map(|k| row[k].as_u64().unwrap())
        .sum();
        assert_eq!(sum, tools, "{row}");
    }

    // The map carries the comparison: Markdown and HTML sections, the tables.
    let map = campaign.join("map");
    let md = std::fs::read_to_string(map.join("map.md")).unwrap();
    assert!(md.contains("## Static vs dynamic") && md.contains("### Declaration gaps (12)"));
    let html = std::fs::read_to_string(map.join("map.html")).unwrap();
    assert!(html.contains("id=\"static-matrix\""));
    let csv = std::fs::read_to_string(map.join("tables/static_dynamic.csv")).unwrap();
    assert!(csv.starts_with("class,true_positive,false_positive,false_negative"));
    assert!(map.join("tables/static_findings.parquet").is_file());
    let map_json: Value =
        serde_json::from_slice(&std::fs::read(map.join("map.json")).unwrap()).unwrap();
    assert_eq!(&map_json["static_dynamic"], comparison);

    // Another analyser's findings go through the same matrix: vac's own, exported as the
    // generic shape and as SARIF, give the same counts.
    let generic = tmp.path().join("generic.json");
    let exported: Vec<Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| json!({"server": f["server"], "tool": f["tool"], "rule": f["rule"], "severity": f["severity"], "predicts": f["predicts"]}))
        .collect();
    std::fs::write(&generic, json!({"findings": exported}).to_string()).unwrap();
    let imported = static_json(&[
        campaign.to_str().unwrap(),
        "--import",
        generic.to_str().unwrap(),
    ]);
    assert_eq!(imported["comparison"]["matrix"], comparison["matrix"]);
    assert_eq!(
        imported["comparison"]["analyser"],
        generic.to_str().unwrap()
    );

    let sarif = common::vac(&["static", "--sarif", campaign.to_str().unwrap()]);
    assert!(sarif.status.success(), "{sarif:?}");
    let sarif_file = tmp.path().join("static.sarif");
    std::fs::write(&sarif_file, &sarif.stdout).unwrap();
    let log: Value = serde_json::from_slice(&sarif.stdout).unwrap();
    assert_eq!(
        log["runs"][0]["results"].as_array().unwrap().len(),
        doc["findings"].as_array().unwrap().len()
    );
    let from_sarif = static_json(&[
        campaign.to_str().unwrap(),
        "--import",
        sarif_file.to_str().unwrap(),
    ]);
    assert_eq!(from_sarif["comparison"]["matrix"], comparison["matrix"]);

    // A scanner that flags tools without saying how counts in `any` alone.
    let coarse = tmp.path().join("coarse.json");
    std::fs::write(
        &coarse,
        json!([{"server": DISHONEST, "tool": "read_note", "rule": "X-1", "severity": "high"}])
            .to_string(),
    )
    .unwrap();
    let coarse_doc = static_json(&[
        campaign.to_str().unwrap(),
        "--import",
        coarse.to_str().unwrap(),
    ]);
    let rows = coarse_doc["comparison"]["matrix"].as_array().unwrap();
    let any = rows.iter().find(|r| r["class"] == "any").unwrap();
    assert_eq!(any["true_positive"], 1);
    assert!(
        rows.iter()
            .filter(|r| r["class"] != "any")
            .all(|r| r["true_positive"] == 0 && r["false_positive"] == 0)
    );

    // A finding naming a tool the receipts do not hold is refused, by name.
    let typo = tmp.path().join("typo.json");
    std::fs::write(
        &typo,
        json!([{"server": DISHONEST, "tool": "read_note_", "rule": "X-1"}]).to_string(),
    )
    .unwrap();
    let refused = common::vac(&[
        "static",
        campaign.to_str().unwrap(),
        "--import",
        typo.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("\"read_note_\""),
        "{refused:?}"
    );

    // A control run of the command reads the same tools/list, so gives the same findings.
    let vac = common::VAC;
    let live = static_json(&["--", vac, "fixture", "--mode", "honest"]);
    let server = live["findings"][0]["server"].as_str().unwrap().to_owned();
    assert!(server.ends_with("fixture --mode honest"), "{server}");
    assert_eq!(findings_of(&live, &server), honest);
}

#[test]
fn a_tools_list_file_is_read_under_its_contract_and_bad_input_is_named() {
    // No sandbox: a file is only read.
    let tmp = tempfile::tempdir().unwrap();
    let tools = tmp.path().join("tools.json");
    std::fs::write(
        &tools,
        json!({"tools": [{"name": "cat", "description": "Print a note.",
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "description": "Path of the note."}}}}]})
        .to_string(),
    )
    .unwrap();
    let plain = static_json(&[tools.to_str().unwrap()]);
    let rule = |doc: &Value, id: &str| {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == id)
            .cloned()
    };
    assert_eq!(rule(&plain, "VAC-S006").unwrap()["severity"], "medium");
    assert!(plain.get("comparison").is_none());

    let contract = tmp.path().join("contract.toml");
    std::fs::write(
        &contract,
        "[server]\nname = \"notes\"\n\n[scope]\npaths = [\"{work}/notes/**\"]\n",
    )
    .unwrap();
    let scoped = static_json(&[
        tools.to_str().unwrap(),
        "--contract",
        contract.to_str().unwrap(),
    ]);
    assert_eq!(rule(&scoped, "VAC-S006").unwrap()["severity"], "high");

    let sarif = common::vac(&["static", "--sarif", tools.to_str().unwrap()]);
    assert!(sarif.status.success());
    let log: Value = serde_json::from_slice(&sarif.stdout).unwrap();
    let location = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], tools.to_str().unwrap());

    for (text, expect) in [
        ("{\"jsonrpc\": \"2.0\"}", "no `tools` array"),
        ("not json", "not JSON"),
        (
            "{\"tools\": [{\"description\": \"x\"}]}",
            "tools[0] has no string `name`",
        ),
    ] {
        std::fs::write(&tools, text).unwrap();
        let output = common::vac(&["static", tools.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(tools.to_str().unwrap()) && stderr.contains(expect),
            "{stderr}"
        );
    }
    let campaign = tmp.path().join("campaign.toml");
    std::fs::write(&campaign, "name = \"x\"\n").unwrap();
    let output = common::vac(&["static", campaign.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let output = common::vac(&["static", empty.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a receipt directory"));
}
