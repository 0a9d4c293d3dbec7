//! The analysis crate on synthetic campaigns written through the real receipt writer:
//! determinism of every format, the documented tables, SARIF against the 2.1.0 schema
//! and GitHub's rules, repetitions, escaping, and bad input.

mod synth;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::Value;
use synth::Shape;
use vac_analysis::{AnalysisError, Format, RenderOptions, load, render};

const SMALL: Shape = Shape {
    servers: 3,
    tools: 6,
    effects_per_tool: 8,
};

fn options(root: &str) -> RenderOptions {
    RenderOptions {
        formats: Format::ALL.to_vec(),
        source_root: root.to_string(),
        version: "0.1.0".into(),
        triage: None,
    }
}

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for sub in ["", "tables"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[test]
fn rendering_twice_gives_identical_bytes_in_all_six_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let campaign = tmp.path().join("campaign");
    synth::campaign(&campaign, SMALL);
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    render(&load(&campaign, None).unwrap(), &a, &options("campaign")).unwrap();
    render(&load(&campaign, None).unwrap(), &b, &options("campaign")).unwrap();
    let (fa, fb) = (files(&a), files(&b));
    let names: Vec<&String> = fa.keys().collect();
    for wanted in [
        "map.html",
        "map.md",
        "map.json",
        "map.csv",
        "map.sarif",
        "tables/verdicts.parquet",
        "tables/effects.csv",
    ] {
        assert!(fa.contains_key(wanted), "{wanted} missing from {names:?}");
    }
    // 5 map files; the 8 tables (profile among them: the receipts hold one) and the 3
    // static-vs-dynamic tables, each as CSV and Parquet.
    assert_eq!(fa.len(), 5 + 2 * (8 + 3), "{names:?}");
    for (name, bytes) in &fa {
        assert!(!bytes.is_empty(), "{name} is empty");
        assert!(fb[name] == *bytes, "{name} differs between two renders");
    }
    // A fresh copy of the receipts elsewhere gives the same bytes too.
    let copy = tmp.path().join("copy").join("campaign");
    synth::campaign(&copy, SMALL);
    let c = tmp.path().join("c");
    render(&load(&copy, None).unwrap(), &c, &options("campaign")).unwrap();
    assert_eq!(files(&c), fa);
}

#[test]
fn the_map_has_one_cell_per_server_tool_clause_and_its_summary_adds_up() {
    let tmp = tempfile::tempdir().unwrap();
    synth::campaign(tmp.path(), SMALL);
    let analysis = load(tmp.path(), Some("synthetic")).unwrap();
    let map = &analysis.map;
    assert_eq!(map.servers.len(), 3);
    assert_eq!(map.cells().count(), 3 * 6 * 10);
    assert_eq!(map.clauses, synth::CLAUSES);
    for (s, server) in map.servers.iter().enumerate() {
        assert_eq!(server.id, format!("server-{s:03} --root /data"));
        assert_eq!(server.name.as_deref(), Some(format!("synth-{s}").as_str()));
        for (t, tool) in server.tools.iter().enumerate() {
            for (c, cell) in tool.cells.iter().enumerate() {
                assert_eq!(cell.verdict, synth::verdict_of(s, t, c), "{s} {t} {c}");
                assert!(cell.stable);
                assert_eq!(cell.records.len(), 1);
            }
        }
        let confirmed = (0..6)
            .flat_map(|t| (0..10).map(move |c| (t, c)))
            .filter(|&(t, c)| synth::verdict_of(s, t, c) == "confirmed")
            .count() as u64;
        assert_eq!(server.summary.confirmed, confirmed);
        let failing_tools = (0..6).filter(|t| (s + t) % 5 == 0).count() as u64;
        assert_eq!(server.summary.no_successful_call, failing_tools);
    }
    let json = vac_analysis::map::to_json(map);
    let totals = map.totals();
    assert_eq!(json["summary"]["confirmed"], totals.confirmed);
    assert_eq!(
        totals.confirmed + totals.refuted + totals.skipped + totals.errored + totals.not_graded,
        180
    );
    assert_eq!(analysis.rows.effects.len(), 3 * 6 * 8);
    assert_eq!(analysis.rows.calls.len(), 3 * 6);
    let subjects: Vec<_> = analysis
        .rows
        .runs
        .iter()
        .filter(|r| &*r.role == "subject")
        .collect();
    assert_eq!(subjects.len(), 3 * 6);
    assert!(
        subjects
            .iter()
            .all(|r| r.tool.as_deref().is_some_and(|t| t.starts_with("tool_")))
    );
    assert_eq!(analysis.rows.manifests.len(), 3 * 6);
}

#[test]
fn repetitions_that_disagree_make_an_unstable_cell_with_its_distribution() {
    let tmp = tempfile::tempdir().unwrap();
    let one = Shape {
        servers: 1,
        tools: 2,
        effects_per_tool: 1,
    };
    // The same server twice (rep-a, rep-b), then a third copy edited to differ.
    synth::probe(&tmp.path().join("rep-a"), 0, one);
    synth::probe(&tmp.path().join("rep-b"), 0, one);
    synth::probe(&tmp.path().join("rep-c"), 5, one); // another server
    let map = load(tmp.path(), None).unwrap().map;
    assert_eq!(map.servers.len(), 2);
    let first = &map.servers[0];
    assert_eq!(first.probes, ["rep-a", "rep-b"]);
    for cell in first.tools.iter().flat_map(|t| &t.cells) {
        assert!(cell.stable);
        assert_eq!(cell.records.len(), 2);
    }

    // Two servers whose probes differ: write server 0 as a repetition of server 5's
    // command by renaming — the id is the command, so give both the same target.
    let tmp = tempfile::tempdir().unwrap();
    synth::probe(&tmp.path().join("a"), 0, one);
    synth::probe(&tmp.path().join("b"), 5, one);
    let mut rows = vac_analysis::read(tmp.path()).unwrap();
    let id = rows.probes[0].server.clone();
    rows.probes[1].server = id;
    let map = vac_analysis::map::build(&rows, "reps");
    assert_eq!(map.servers.len(), 1);
    let unstable: Vec<_> = map.cells().filter(|(_, _, c)| !c.stable).collect();
    assert!(!unstable.is_empty());
    for (_, _, cell) in &unstable {
        assert_eq!(cell.counts.iter().sum::<u64>(), 2);
    }
    assert_eq!(map.servers[0].summary.unstable, unstable.len() as u64);
    let json = vac_analysis::map::to_json(&map);
    let cell = &json["servers"][0]["tools"][0]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["stable"] == false)
        .cloned()
        .unwrap();
    assert_eq!(cell["distribution"].as_object().unwrap().len(), 2, "{cell}");
}

#[test]
fn the_behaviour_profile_is_shown_where_recorded_and_nowhere_else() {
    let tmp = tempfile::tempdir().unwrap();
    synth::campaign(tmp.path(), SMALL);
    let analysis = load(tmp.path(), None).unwrap();
    let json = vac_analysis::map::to_json(&analysis.map);
    let md = vac_analysis::render::markdown(&analysis.map, None);
    let html = vac_analysis::html::html(&analysis.map, None);
    for (s, server) in json["servers"].as_array().unwrap().iter().enumerate() {
        let tools = server["tools"].as_array().unwrap();
        if server["id"].as_str().unwrap().starts_with("server-001") {
            // Receipts without a profile: no profile, rather than "did nothing".
            assert!(tools.iter().all(|t| t.get("profile").is_none()), "{server}");
            continue;
        }
        assert!(tools.iter().all(|t| t["profile"].is_object()), "{server}");
        let first = &tools[0]["profile"];
        assert_eq!(
            first["writes"]["targets"],
            serde_json::json!(["/lab/work/out-0.txt", "/lab/work/out-4.txt"]),
            "server {s}: {first}"
        );
        assert_eq!(first["reaches"]["distinct"], 3, "{first}");
        assert_eq!(
            first["execs"]["targets"],
            serde_json::json!(["/usr/bin/true"]),
            "{first}"
        );
        // Every third tool did nothing the sensors saw: an empty profile.
        assert_eq!(tools[2]["profile"], serde_json::json!({}), "{server}");
    }
    // Two of the three servers carry profiles: two sections, each with 4 of 6 tools active.
    assert_eq!(md.matches("behaviour profile").count(), 2, "{md}");
    assert_eq!(
        md.matches("- 2 did nothing the sensors saw").count(),
        2,
        "{md}"
    );
    assert!(md.contains("- **tool\\_000**: execs /usr/bin/true; reaches host-2.example.invalid., 10.255.255.1:443, host-6.example.invalid.; writes /lab/work/out-0.txt, /lab/work/out-4.txt"), "{md}");
    assert_eq!(html.matches("<details class=\"profile\"").count(), 2);
    assert!(html.contains("4 of 6 rows did something the sensors saw"));
    assert_eq!(analysis.rows.profile.len(), 2 * (4 * 6 + 2));
    let out = tmp.path().join("out");
    render(&analysis, &out, &options("")).unwrap();
    assert!(out.join("tables/profile.csv").is_file());

    // A cut list says how many it left out.
    let many = tmp.path().join("many");
    let wide = Shape {
        servers: 1,
        tools: 1,
        effects_per_tool: 80,
    };
    synth::probe(&many.join("server-000"), 0, wide);
    let map = load(&many, None).unwrap().map;
    let writes = &map.servers[0].tools[0].profile.as_ref().unwrap()[2];
    assert_eq!(
        (writes.kind.as_str(), writes.targets.len(), writes.distinct),
        ("writes", 16, 20)
    );
    assert!(vac_analysis::render::markdown(&map, None).contains("/lab/work/out-60.txt and 4 more"));

    // Receipts with no profile at all get no profile table.
    let older = tmp.path().join("older");
    synth::probe(&older.join("server-001"), 1, SMALL);
    let out = tmp.path().join("older-out");
    render(&load(&older, None).unwrap(), &out, &options("")).unwrap();
    assert!(out.join("tables/verdicts.csv").is_file());
    assert!(!out.join("tables/profile.csv").exists());
    assert!(!out.join("tables/profile.parquet").exists());
}

#[test]
fn tables_are_the_ones_tables_md_documents() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/TABLES.md")).unwrap();
    let mut documented: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in doc.lines() {
        if line.starts_with("# ") {
            current = None;
        } else if let Some(name) = line.strip_prefix("## `").and_then(|l| l.strip_suffix('`')) {
            current = Some(name.to_string());
            documented.insert(name.to_string(), Vec::new());
        } else if let (Some(table), Some(rest)) = (&current, line.strip_prefix("| `")) {
            let column = rest.split('`').next().unwrap().to_string();
            documented.get_mut(table).unwrap().push(column);
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    synth::campaign(tmp.path(), SMALL);
    let rows = vac_analysis::read(tmp.path()).unwrap();
    let names: Vec<String> = vac_analysis::tables::TABLES
        .iter()
        .chain(&vac_analysis::tables::STATIC_TABLES)
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        documented.keys().cloned().collect::<HashSet<_>>(),
        names.iter().cloned().collect()
    );
    for name in vac_analysis::tables::TABLES {
        let df = vac_analysis::tables::table(&rows, name).unwrap();
        let columns: Vec<String> = df
            .get_column_names()
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(columns, documented[name], "table {name}");
        assert!(df.height() > 0, "table {name} is empty");
    }
    let analysis = load(tmp.path(), None).unwrap();
    for name in vac_analysis::tables::STATIC_TABLES {
        let df = vac_analysis::tables::static_table(&analysis.findings, &analysis.comparison, name)
            .unwrap();
        let columns: Vec<String> = df
            .get_column_names()
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(columns, documented[name], "table {name}");
    }
}

#[test]
fn the_clause_list_is_the_contracts_one() {
    let ours: Vec<&str> = vac_analysis::severity::CLAUSES
        .iter()
        .map(|(c, _)| *c)
        .collect();
    let theirs: Vec<&str> = vac_contracts::Clause::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    assert_eq!(ours, theirs);
}

#[test]
fn server_controlled_text_is_escaped_in_html_and_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    synth::campaign(tmp.path(), SMALL);
    let analysis = load(tmp.path(), None).unwrap();
    let html = vac_analysis::html::html(&analysis.map, Some(&analysis.comparison));
    // Reasons hold `<clause> & "tool"`.
    assert!(!html.contains("<fs.write>"));
    assert!(html.contains("&lt;fs.write&gt; &amp; &quot;tool_000&quot;"));
    // Nothing is fetched from elsewhere.
    for needle in ["src=\"http", "href=\"http", "@import", "url("] {
        assert!(!html.contains(needle), "{needle}");
    }
    assert!(html.contains("Content-Security-Policy"));
    let md = vac_analysis::render::markdown(&analysis.map, Some(&analysis.comparison));
    assert!(md.contains("\\<fs.write\\>"), "markdown escapes");
}

fn sarif_of(servers: usize) -> (Value, vac_analysis::Analysis) {
    let tmp = tempfile::tempdir().unwrap();
    synth::campaign(
        tmp.path(),
        Shape {
            servers,
            tools: 4,
            effects_per_tool: 1,
        },
    );
    let analysis = load(tmp.path(), Some("synthetic")).unwrap();
    let log =
        vac_analysis::sarif::sarif(&analysis.map, &analysis.rows, "receipts/campaign", "0.1.0");
    (log, analysis)
}

/// Schema validity and the rules GitHub code scanning applies to uploads.
fn check_sarif(log: &Value, confirmed: usize) {
    let schema: Value = serde_json::from_str(include_str!("data/sarif-schema-2.1.0.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(log)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The schema does reject what breaks it (the check can fail).
    let mut broken = log.clone();
    broken["runs"][0]["results"] = serde_json::json!([{"message": {}}]);
    assert!(
        !validator.is_valid(&broken),
        "the schema accepted a result without ruleId text"
    );

    assert_eq!(log["version"], "2.1.0");
    let runs = log["runs"].as_array().unwrap();
    assert!(runs.len() <= 20, "GitHub takes at most 20 runs per file");
    let mut ids = HashSet::new();
    let mut fingerprints = HashSet::new();
    let mut results = 0;
    for run in runs {
        let id = run["automationDetails"]["id"].as_str().unwrap();
        assert!(ids.insert(id.to_string()), "category {id} repeats");
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        let rule_ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
        for rule in rules {
            let tags: Vec<&str> = rule["properties"]["tags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            assert!(tags.contains(&"security"), "{rule}");
            let severity: f64 = rule["properties"]["security-severity"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((0.0..=10.0).contains(&severity));
            assert!(rule["shortDescription"]["text"].is_string());
        }
        let logical = run["logicalLocations"].as_array().unwrap();
        let results_of_run = run["results"].as_array().unwrap();
        assert!(results_of_run.len() <= 25_000);
        for result in results_of_run {
            results += 1;
            let rule = result["ruleId"].as_str().unwrap();
            assert_eq!(
                rule_ids[result["ruleIndex"].as_u64().unwrap() as usize],
                rule
            );
            let locations = result["locations"].as_array().unwrap();
            assert!(!locations.is_empty());
            let physical = &locations[0]["physicalLocation"];
            let uri = physical["artifactLocation"]["uri"].as_str().unwrap();
            assert!(
                !uri.starts_with('/') && !uri.contains("://"),
                "{uri} is not repository-relative"
            );
            assert!(physical["region"]["startLine"].as_u64().unwrap() >= 1);
            let l = &locations[0]["logicalLocations"][0];
            let tool = &logical[l["index"].as_u64().unwrap() as usize];
            assert_eq!(tool["kind"], "function");
            assert_eq!(tool["name"], l["name"]);
            let server = &logical[tool["parentIndex"].as_u64().unwrap() as usize];
            assert_eq!(server["kind"], "module");
            assert_eq!(result["properties"]["server"], server["name"]);
            let fp = result["partialFingerprints"]["vacCell/v1"]
                .as_str()
                .unwrap();
            assert!(
                fingerprints.insert(fp.to_string()),
                "fingerprint {fp} repeats"
            );
        }
    }
    assert_eq!(results, confirmed, "one result per confirmed cell");
}

#[test]
fn sarif_validates_and_keeps_githubs_rules() {
    let (log, analysis) = sarif_of(3);
    let confirmed = analysis
        .map
        .cells()
        .filter(|(_, _, c)| c.verdict == "confirmed")
        .count();
    assert!(confirmed > 0);
    check_sarif(&log, confirmed);
    assert_eq!(log["runs"].as_array().unwrap().len(), 1);
    assert_eq!(log["runs"][0]["automationDetails"]["id"], "vac/synthetic/");
    let result = &log["runs"][0]["results"][0];
    let uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        uri.starts_with("receipts/campaign/server-") && uri.ends_with("/receipts.jsonl"),
        "{uri}"
    );
    // The line is the verdict record's own.
    let seq = result["properties"]["receipt"]["seq"].as_u64().unwrap();
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"]["startLine"],
        seq + 1
    );
    // Fingerprints are stable: the same server, tool and clause always hash alike.
    let (again, _) = sarif_of(3);
    assert_eq!(log, again);
    assert_eq!(
        log["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );

    // A target that could not be audited is a notification of the invocation, on its
    // server, and the log still validates.
    let mut map = analysis.map.clone();
    let target = map.servers[1].id.clone();
    map.servers[1]
        .not_audited
        .push(vac_analysis::rows::NotAudited {
            target,
            dir: "server-1/rep-2".into(),
            repetition: 2,
            status: "failed".into(),
            exit: 3,
            detail: "initialize: server closed its stdout during initialize".into(),
        });
    let failed = vac_analysis::sarif::sarif(&map, &analysis.rows, "receipts/campaign", "0.1.0");
    check_sarif(&failed, confirmed);
    let invocation = &failed["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false, "{invocation}");
    let note = &invocation["toolExecutionNotifications"][0];
    assert_eq!(note["level"], "error", "{note}");
    assert!(
        note["message"]["text"]
            .as_str()
            .unwrap()
            .contains("not audited: server-1/rep-2 failed (exit 3)"),
        "{note}"
    );
    let server = note["locations"][0]["logicalLocations"][0]["index"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(
        failed["runs"][0]["logicalLocations"][server]["name"],
        map.servers[1].id.as_str()
    );
}

#[test]
fn sarif_beyond_twenty_servers_is_one_run_per_clause_family() {
    let (log, analysis) = sarif_of(21);
    let confirmed = analysis
        .map
        .cells()
        .filter(|(_, _, c)| c.verdict == "confirmed")
        .count();
    check_sarif(&log, confirmed);
    let ids: Vec<&str> = log["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["automationDetails"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "vac/synthetic/fs/",
            "vac/synthetic/exec/",
            "vac/synthetic/net/",
            "vac/synthetic/result/",
            "vac/synthetic/manifest/",
            "vac/synthetic/idempotent/"
        ]
    );
}

#[test]
fn a_directory_that_is_not_receipts_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "hello").unwrap();
    let err = load(tmp.path(), None).unwrap_err();
    assert!(matches!(err, AnalysisError::NotReceipts(_)), "{err}");
    assert!(err.to_string().contains("not a receipt directory"), "{err}");
    // A log file that is not a receipt log.
    std::fs::write(tmp.path().join("receipts.jsonl"), "hello\n").unwrap();
    let err = load(tmp.path(), None).unwrap_err();
    assert!(err.to_string().contains("not a receipt directory"), "{err}");
}

#[test]
fn a_broken_chain_is_named_by_its_record_and_nothing_is_rendered() {
    let tmp = tempfile::tempdir().unwrap();
    synth::campaign(tmp.path(), SMALL);
    let log = tmp.path().join("server-001").join("receipts.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    let at = bytes.iter().position(|&b| b == b'\n').unwrap() + 40; // inside line 2
    bytes[at] ^= 0x01;
    std::fs::write(&log, bytes).unwrap();
    let err = load(tmp.path(), None).unwrap_err();
    assert!(err.is_broken(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("server-001") && text.contains("line 2"),
        "{text}"
    );
}

#[test]
fn an_unsealed_log_and_an_empty_campaign_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    synth::campaign(tmp.path(), SMALL);
    // Cut the seal off: the log still chains, but the probe never finished.
    let log = tmp.path().join("server-002").join("receipts.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let cut = text.trim_end().rfind('\n').unwrap() + 1;
    std::fs::write(&log, &text[..cut]).unwrap();
    let err = load(tmp.path(), None).unwrap_err();
    assert!(err.to_string().contains("not sealed"), "{err}");

    // A campaign with no probe directory at all.
    let empty = tempfile::tempdir().unwrap();
    std::fs::create_dir(empty.path().join("server-000")).unwrap();
    let err = load(empty.path(), None).unwrap_err();
    assert!(matches!(err, AnalysisError::NotReceipts(_)), "{err}");

    // Probes that hold no verdict: nothing to map.
    let bare = tempfile::tempdir().unwrap();
    let start = vac_receipts::CampaignStart {
        vac_version: "0.1.0".into(),
        host: vac_receipts::Host {
            hostname: "h".into(),
            kernel: "k".into(),
            arch: "a".into(),
        },
        config_hash: vac_receipts::Digest::of(b"{}"),
        seed: 0,
        config: Value::Null,
    };
    let w = vac_receipts::ReceiptWriter::create(bare.path().join("p"), Default::default(), start)
        .unwrap();
    w.seal(None).unwrap();
    let err = load(bare.path(), None).unwrap_err();
    assert!(matches!(err, AnalysisError::Empty(_)), "{err}");
}

#[test]
fn a_failed_render_leaves_no_output_that_looks_complete() {
    let tmp = tempfile::tempdir().unwrap();
    let campaign = tmp.path().join("campaign");
    synth::campaign(&campaign, SMALL);
    let analysis = load(&campaign, None).unwrap();
    // `map.json` is a directory: writing it fails after other files were staged.
    let out = tmp.path().join("out");
    std::fs::create_dir_all(out.join("map.json")).unwrap();
    std::fs::write(out.join("map.json").join("keep"), "x").unwrap();
    let err = render(&analysis, &out, &options("")).unwrap_err();
    assert!(err.to_string().contains("map.json"), "{err}");
    let left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["map.json"], "only what was there before remains");
}

/// A baseline and suppressions mark the SARIF's results (`baselineState`, an accepted
/// external suppression with its reason) and the log stays valid; only new cells that no
/// suppression covers fail.
#[test]
fn triage_marks_sarif_results_and_fails_only_new_unsuppressed_cells() {
    use vac_analysis::triage::{Baseline, parse_suppressions, triage};
    let (mut log, analysis) = sarif_of(3);
    let confirmed: Vec<_> = analysis
        .map
        .servers
        .iter()
        .flat_map(|s| {
            s.tools.iter().flat_map(move |t| {
                t.cells
                    .iter()
                    .filter(|c| c.verdict == "confirmed")
                    .map(move |c| (s.id.clone(), t.name.clone(), c.clause.clone()))
            })
        })
        .collect();
    assert!(confirmed.len() >= 3);
    // The baseline holds every confirmed cell but the first, plus one that is gone now.
    let cells: Vec<String> = confirmed[1..]
        .iter()
        .map(|(s, t, c)| format!(r#"{{"id": "{s}", "tools": [{{"name": "{t}", "cells": [{{"clause": "{c}", "verdict": "confirmed"}}]}}]}}"#))
        .chain([r#"{"id": "gone", "tools": [{"name": "t", "cells": [{"clause": "exec", "verdict": "confirmed"}]}]}"#.to_owned()])
        .collect();
    let baseline = Baseline::parse(
        "b.json",
        &format!(r#"{{"servers": [{}]}}"#, cells.join(",")),
    )
    .unwrap();
    let triaged = triage(&analysis.map, Some(&baseline), &[], "2026-12-07");
    assert_eq!(triaged.failing().count(), 1);
    assert_eq!(triaged.fixed.len(), 1);
    // A suppression of the new cell: nothing fails; expired, it fails again.
    let (server, tool, clause) = &confirmed[0];
    let text = |expires: &str| {
        format!(
            "[[suppress]]\nserver = \"{server}\"\ntool = \"{tool}\"\nclause = \"{clause}\"\nreason = \"accepted\"\nexpires = \"{expires}\"\n"
        )
    };
    let live = parse_suppressions("s.toml", &text("2026-12-07")).unwrap();
    let suppressed = triage(&analysis.map, Some(&baseline), &live, "2026-12-07");
    assert_eq!(suppressed.failing().count(), 0);
    let expired = triage(&analysis.map, Some(&baseline), &live, "2026-12-08");
    assert_eq!(expired.failing().count(), 1);
    assert_eq!(expired.expired.len(), 1);
    suppressed.annotate_sarif(&mut log);
    check_sarif(&log, confirmed.len());
    let results: Vec<&Value> = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let states: Vec<&str> = results
        .iter()
        .filter_map(|r| r["baselineState"].as_str())
        .collect();
    assert_eq!(states.iter().filter(|s| **s == "new").count(), 1);
    assert_eq!(
        states.iter().filter(|s| **s == "unchanged").count(),
        confirmed.len() - 1
    );
    let justified: Vec<_> = results
        .iter()
        .filter(|r| r["suppressions"][0]["justification"] == "accepted")
        .collect();
    assert_eq!(justified.len(), 1);
    assert_eq!(justified[0]["baselineState"], "new");
}
