//! The conformance map end to end: `vac demo` writes its campaign's map, headless
//! Chromium (Debian's `chromium`, installed by `.ci/`) opens the HTML from a file:// URL,
//! and the page is checked against the map's JSON and SARIF; `vac report --out` on bad
//! input exits with a named error and writes nothing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The chromium binary, or a visible skip (a failure under CI).
fn chromium(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("chromium"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("VAC_REQUIRE_PRIVILEGED").is_none(),
            "{test} needs chromium (apt-get install chromium) and VAC_REQUIRE_PRIVILEGED is set"
        );
        eprintln!("SKIPPED {test}: chromium is not installed");
    }
    found
}

fn cdp(page: &Path, steps: &[&str], screenshot: &Path) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let steps_file = dir.path().join("steps.json");
    std::fs::write(&steps_file, serde_json::to_vec(&json!(steps)).unwrap()).unwrap();
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/../analysis/tests/cdp.py");
    let output = Command::new("python3")
        .arg(driver)
        .arg(page)
        .arg(&steps_file)
        .arg(screenshot)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cdp.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The one `demo-*` directory `vac demo --out DIR` made.
fn campaign(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("demo-")
        })
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[test]
fn the_demo_map_opens_offline_in_chromium_and_matches_its_json_and_sarif() {
    let test = "the_demo_map_opens_offline_in_chromium_and_matches_its_json_and_sarif";
    if !common::privileged(test) {
        return;
    }
    let Some(_) = chromium(test) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("demo");
    let output = common::vac(&["demo", "--out", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let campaign = campaign(&out);
    let map_dir = campaign.join("map");
    assert!(
        stdout.contains(&format!(
            "conformance map: {}",
            map_dir.join("map.html").display()
        )),
        "demo says where the map is: {stdout}"
    );
    let map: Value =
        serde_json::from_slice(&std::fs::read(map_dir.join("map.json")).unwrap()).unwrap();
    let clauses = map["clauses"].as_array().unwrap().len();
    let servers = map["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 3);
    // The planner's arguments do every fixture tool's job at least once.
    for s in servers {
        assert_eq!(s["summary"]["no_successful_call"], 0, "{}", s["id"]);
    }
    let cells: usize = servers
        .iter()
        .map(|s| s["tools"].as_array().unwrap().len() * clauses)
        .sum();
    let server = |needle: &str| servers.iter().find(|s| s["id"] == needle).unwrap();
    assert_eq!(server("honest")["summary"]["confirmed"], 0);
    assert_eq!(server("broad")["summary"]["confirmed"], 0);
    let dishonest = server("dishonest");
    let confirmed: Vec<(String, String)> = dishonest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| {
            t["cells"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["verdict"] == "confirmed")
                .map(|c| {
                    (
                        t["name"].as_str().unwrap().to_string(),
                        c["clause"].as_str().unwrap().to_string(),
                    )
                })
        })
        .collect();
    assert!(confirmed.len() >= 11, "{confirmed:?}");

    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("demo-map.png");
    let steps = [
        "document.querySelectorAll('svg.heatmap g.cell').length",
        "Object.fromEntries(Array.from(document.querySelectorAll('#totals td[data-count]')).slice(1).map(td => [td.dataset.count, Number(td.textContent)]))",
        "Array.from(document.querySelectorAll('#summary tbody tr')).map(tr => [tr.dataset.server, Number(tr.querySelector('[data-count=confirmed]').textContent)])",
        "(() => { const c = document.querySelector('g.cell[data-verdict=confirmed][data-tool=read_note][data-clause=\"fs.write\"]'); const d = document.getElementById(c.dataset.ev); const before = d.open; c.dispatchEvent(new MouseEvent('click', {bubbles: true})); const r = d.querySelector('dl.record').getBoundingClientRect(); return [before, d.open, r.height > 0, d.querySelector('dl.record').textContent]; })()",
        "document.querySelectorAll('g.cell[data-verdict=confirmed]').length",
        "Array.from(document.querySelectorAll('details.profile[data-server=dishonest] li[data-tool]')).map(li => [li.dataset.tool, li.textContent])",
    ];
    let page = cdp(&map_dir.join("map.html"), &steps, &screenshot);
    let results = page["results"].as_array().unwrap();
    assert_eq!(
        results[0], cells,
        "one heat-map cell per server × tool × clause"
    );
    let totals = &map["summary"];
    for key in [
        "tools",
        "confirmed",
        "refuted",
        "skipped",
        "errored",
        "unstable",
        "no_successful_call",
    ] {
        assert_eq!(results[1][key], totals[key], "summary {key}");
    }
    assert_eq!(results[1]["kept"], totals["kept_every_promise"]);
    for row in results[2].as_array().unwrap() {
        let id = row[0].as_str().unwrap();
        let json_server = servers.iter().find(|s| s["id"] == id).unwrap();
        assert_eq!(row[1], json_server["summary"]["confirmed"], "{id}");
    }
    let expand = &results[3];
    assert_eq!(expand[0], false, "evidence starts folded");
    assert_eq!(expand[1], true, "a click on the cell opens its evidence");
    assert_eq!(expand[2], true, "the evidence is laid out");
    let text = expand[3].as_str().unwrap();
    assert!(
        text.contains("seq") && text.contains("/.notes-server/"),
        "{text}"
    );
    assert_eq!(results[4], totals["confirmed"]);
    // The behaviour profile: what each tool did whatever its cells, in the JSON and on the
    // page alike; the honest twin's write-free tools did nothing seen.
    let profile_of = |server: &Value, tool: &str| {
        server["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == tool)
            .unwrap()["profile"]
            .clone()
    };
    let execs = profile_of(dishonest, "index_notes")["execs"]["targets"].clone();
    assert!(
        execs.as_array().unwrap().contains(&json!("/bin/sh")),
        "{execs}"
    );
    assert_eq!(profile_of(server("honest"), "word_count"), json!({}));
    let active: Vec<&str> = dishonest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["profile"].as_object().is_some_and(|p| !p.is_empty()))
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let listed = results[5].as_array().unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|l| l[0].as_str().unwrap())
            .collect::<Vec<_>>(),
        active
    );
    let index_notes = listed.iter().find(|l| l[0] == "index_notes").unwrap();
    assert!(
        index_notes[1]
            .as_str()
            .unwrap()
            .contains("execs /usr/bin/setsid"),
        "{index_notes}"
    );
    let url = format!("file://{}", map_dir.join("map.html").display());
    assert_eq!(
        page["requests"],
        json!([url]),
        "the page fetches nothing but itself"
    );
    assert_eq!(page["exceptions"], json!([]), "no script error");
    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    eprintln!("screenshot of the map: {}", screenshot.display());

    // SARIF: one result per confirmed cell of the dishonest twin, and nothing else.
    let sarif: Value =
        serde_json::from_slice(&std::fs::read(map_dir.join("map.sarif")).unwrap()).unwrap();
    let mut results: Vec<(String, String)> = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["properties"]["server"], dishonest["id"]);
            (
                r["properties"]["tool"].as_str().unwrap().to_string(),
                r["properties"]["clause"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    results.sort();
    let mut expected = confirmed.clone();
    expected.sort();
    assert_eq!(results, expected);
    // Valid SARIF 2.1.0, every location a URI reference GitHub takes: a relative path of
    // URI characters (no scheme, no space, no "derived from …" text), its line from 1.
    let schema: Value = serde_json::from_str(include_str!(
        "../../analysis/tests/data/sarif-schema-2.1.0.json"
    ))
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    for result in sarif["runs"][0]["results"].as_array().unwrap() {
        let location = &result["locations"][0]["physicalLocation"];
        let uri = location["artifactLocation"]["uri"].as_str().unwrap();
        let reference = !uri.is_empty()
            && !uri.contains("://")
            && !uri.starts_with('/')
            && uri
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~/%!$&'()*+,;=:@".contains(c));
        assert!(reference, "not a relative URI reference: {uri:?}");
        assert!(location["region"]["startLine"].as_u64().unwrap() >= 1);
    }

    // `vac report` of the campaign writes the same map again, byte for byte.
    let again = tmp.path().join("again");
    let output = common::vac(&[
        "report",
        campaign.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
        "--campaign",
        "vac demo",
    ]);
    assert_eq!(output.status.code(), Some(1), "a violation was confirmed");
    for name in [
        "map.html",
        "map.md",
        "map.json",
        "map.csv",
        "tables/verdicts.parquet",
        "tables/effects.parquet",
    ] {
        assert!(
            std::fs::read(again.join(name)).unwrap() == std::fs::read(map_dir.join(name)).unwrap(),
            "{name} differs"
        );
    }
}

/// A sealed one-probe log with one verdict, written through the receipt writer.
fn tiny_probe(dir: &Path) {
    use vac_receipts::*;
    let config = json!({"target": "/usr/bin/tiny-server"});
    let start = CampaignStart {
        vac_version: "0.1.0".into(),
        host: Host {
            hostname: "h".into(),
            kernel: "k".into(),
            arch: "a".into(),
        },
        config_hash: Digest::of(config.to_string().as_bytes()),
        seed: 0,
        config,
    };
    let mut w = ReceiptWriter::create(dir, WriterOptions::default(), start).unwrap();
    w.append(Body::Verdict(Verdict {
        run_id: "run-1".into(),
        tool: "t".into(),
        clause: "fs.write".into(),
        verdict: VerdictKind::Refuted,
        reason: "nothing written".into(),
        evidence: json!({"contract": "c"}).into(),
    }))
    .unwrap();
    w.seal(None).unwrap();
}

#[test]
fn report_out_on_bad_input_names_it_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("map");
    let out_arg = out.to_str().unwrap();

    // Not receipts at all.
    let junk = tmp.path().join("junk");
    std::fs::create_dir(&junk).unwrap();
    std::fs::write(junk.join("notes.txt"), "x").unwrap();
    let output = common::vac(&["report", junk.to_str().unwrap(), "--out", out_arg]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("junk") && stderr.contains("not a receipt directory"),
        "{stderr}"
    );
    assert!(!out.exists());

    // An empty campaign: a directory with nothing in it.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let output = common::vac(&["report", empty.to_str().unwrap(), "--out", out_arg]);
    assert_eq!(output.status.code(), Some(2));
    assert!(!out.exists());

    // A campaign one of whose chains is broken: exit 4, the probe and line named.
    let campaign = tmp.path().join("campaign");
    tiny_probe(&campaign.join("a"));
    tiny_probe(&campaign.join("b"));
    let output = common::vac(&["report", campaign.to_str().unwrap(), "--out", out_arg]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(out.join("map.html").is_file());
    std::fs::remove_dir_all(&out).unwrap();
    let log = campaign.join("b").join("receipts.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    let second = bytes.iter().position(|&b| b == b'\n').unwrap() + 30;
    bytes[second] ^= 0x20;
    std::fs::write(&log, bytes).unwrap();
    let output = common::vac(&["report", campaign.to_str().unwrap(), "--out", out_arg]);
    assert_eq!(output.status.code(), Some(4));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("BROKEN") && stdout.contains("/b") && stdout.contains("line 2"),
        "{stdout}"
    );
    assert!(!out.exists(), "no partial map");

    // An unknown format is a usage error before anything is read.
    let output = common::vac(&[
        "report",
        campaign.to_str().unwrap(),
        "--out",
        out_arg,
        "--format",
        "html,pdf",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown format \"pdf\""));
}

/// The published campaign's map (`results/`, checked by VERIFY.sh) opens offline in
/// headless Chromium: one heat-map cell per server × tool × clause of its JSON, the
/// totals of its JSON, its static-vs-dynamic matrix, no request but itself.
#[test]
fn the_published_map_opens_offline_in_chromium() {
    let test = "the_published_map_opens_offline_in_chromium";
    let Some(_) = chromium(test) else {
        return;
    };
    let dir = std::fs::canonicalize(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/thirdparty/map"),
    )
    .unwrap();
    let map: Value = serde_json::from_slice(&std::fs::read(dir.join("map.json")).unwrap()).unwrap();
    let clauses = map["clauses"].as_array().unwrap().len();
    let cells: usize = map["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tools"].as_array().unwrap().len() * clauses)
        .sum();
    let steps = [
        "document.querySelectorAll('svg.heatmap g.cell').length",
        "Number(document.querySelector('#totals td[data-count=confirmed]').textContent)",
        "document.querySelectorAll('#static-matrix tbody tr').length",
    ];
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("published-map.png");
    let page = cdp(&dir.join("map.html"), &steps, &screenshot);
    let results = page["results"].as_array().unwrap();
    assert_eq!(results[0], cells);
    assert_eq!(results[1], map["summary"]["confirmed"]);
    assert_eq!(
        results[2],
        map["static_dynamic"]["matrix"].as_array().unwrap().len()
    );
    let url = format!("file://{}", dir.join("map.html").display());
    assert_eq!(
        page["requests"],
        json!([url]),
        "the page fetches nothing but itself"
    );
    assert_eq!(page["exceptions"], json!([]), "{page}");
}

/// The published map used as a reader would: filtered by a name, the heat maps close up
/// (no blank band where a hidden row was, each map as tall as its rows); the long
/// static-vs-dynamic section is folded; and at a phone's 400 px the page is no wider than
/// the screen (tables and heat maps scroll within it).
#[test]
fn the_map_closes_up_when_filtered_and_fits_a_phone() {
    let test = "the_map_closes_up_when_filtered_and_fits_a_phone";
    let Some(_) = chromium(test) else {
        return;
    };
    let dir = std::fs::canonicalize(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/thirdparty/map"),
    )
    .unwrap();
    let filtered = r#"(function () {
      var f = document.getElementById('filter');
      f.value = 'read';
      f.dispatchEvent(new Event('input'));
      var bad = [], shown = 0, hidden = 0;
      document.querySelectorAll('section.server:not(.hidden) svg.heatmap').forEach(function (svg) {
        var cell = Number(svg.dataset.cell);
        var rows = [].filter.call(svg.querySelectorAll('g.row'), function (r) { return r.style.display !== 'none'; });
        hidden += svg.querySelectorAll('g.row').length - rows.length;
        shown += rows.length;
        var tops = rows.map(function (r) { return r.querySelector('rect').getBoundingClientRect().top; });
        for (var i = 1; i < tops.length; i++) {
          if (Math.abs(tops[i] - tops[i - 1] - cell) > 0.5) bad.push('gap of ' + (tops[i] - tops[i - 1]));
        }
        var height = Number(svg.getAttribute('height'));
        if (height !== Number(svg.dataset.header) + cell * rows.length + 4) bad.push('height ' + height);
      });
      return [shown, hidden, bad];
    })()"#;
    let steps = [
        filtered,
        "document.getElementById('static-section').open",
        "@viewport 400",
        "document.documentElement.scrollWidth",
    ];
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("map-400px.png");
    let page = cdp(&dir.join("map.html"), &steps, &screenshot);
    let results = page["results"].as_array().unwrap();
    let (shown, hidden) = (
        results[0][0].as_u64().unwrap(),
        results[0][1].as_u64().unwrap(),
    );
    assert!(shown >= 3 && hidden >= 3, "{page}");
    assert_eq!(results[0][2], json!([]), "{page}");
    assert_eq!(results[1], false, "the static section is folded");
    assert!(results[3].as_u64().unwrap() <= 400, "{page}");
    assert_eq!(page["exceptions"], json!([]), "{page}");
}
