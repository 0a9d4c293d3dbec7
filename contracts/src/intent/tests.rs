use serde_json::json;

use super::*;
use crate::compile::CompiledContract;

fn tool(entry: serde_json::Value) -> ToolDecl {
    serde_json::from_value(entry).unwrap()
}

fn compiled(decl: ToolDecl) -> CompiledContract {
    derive_intent(
        &[decl],
        Offers::default(),
        &Service::default(),
        &LabPaths::at("/lab"),
    )
    .compile()
    .unwrap()
}

fn allows(c: &CompiledContract, tool: &str, clause: Clause, target: &str) -> Option<bool> {
    c.rule(tool, clause).unwrap().allows(target)
}

/// One case of `tests/data/intent/*.json`: a tool's text and what its derived contract
/// must allow or forbid (clause, target, allowed).
#[derive(serde::Deserialize)]
struct WordsCase {
    name: String,
    why: String,
    /// The server the tool belongs to, where the case is about its service or state.
    #[serde(default)]
    server: Option<ServerCase>,
    tool: serde_json::Value,
    allows: Vec<(String, String, bool)>,
}

/// A server as its receipts record it: `serverInfo.name`, the command line, the
/// environment vac set.
#[derive(serde::Deserialize)]
struct ServerCase {
    name: Option<String>,
    command: String,
    env: Vec<(String, String)>,
}

/// Tool texts → intent allowances, data-driven.
#[test]
fn each_tool_text_allows_what_its_file_says() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/intent/words.json");
    let cases: Vec<WordsCase> =
        serde_json::from_str(&std::fs::read_to_string(dir).unwrap()).unwrap();
    let mut wrong = Vec::new();
    for case in &cases {
        let decl = tool(case.tool.clone());
        let name = decl.name.clone();
        let service = case.server.as_ref().map_or_else(Service::default, |s| {
            let command: Vec<String> = s.command.split_whitespace().map(str::to_owned).collect();
            Service::of(s.name.as_deref(), &command, &s.env)
        });
        let lab = LabPaths::at("/lab");
        let c = derive_intent(&[decl], Offers::default(), &service, &lab)
            .compile()
            .unwrap();
        for (clause, target, expected) in &case.allows {
            let clause: Clause = clause.parse().unwrap();
            let got = allows(&c, &name, clause, target);
            if got != Some(*expected) {
                wrong.push(format!(
                    "{}: {clause} {target}: {got:?} ({})",
                    case.name, case.why
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_description_that_names_a_place_confines_the_tool_to_it() {
    let confined =
        |description: &str| confined_to(&tool(json!({"name": "t", "description": description})));
    // server-filesystem's own words.
    assert_eq!(
        confined("Read the complete contents of a file. Only works within allowed directories.")
            .as_deref(),
        Some("within allowed directories")
    );
    assert_eq!(
        confined("Saves a note in the notes directory").as_deref(),
        Some("in the notes directory")
    );
    assert_eq!(
        confined("Lists files under the workspace root").as_deref(),
        Some("under the workspace")
    );
    assert_eq!(confined("Reads a file from disk"), None);
    assert_eq!(confined("Search in the web for a query"), None);
    assert_eq!(
        confined("Get the weather.\n\nExample:\n    in the root directory"),
        None,
        "an example confines nothing"
    );
}

#[test]
fn names_split_at_separators_and_case_changes() {
    assert_eq!(name_words("readFile"), ["read", "file"]);
    assert_eq!(
        name_words("get_current-time.v2"),
        ["get", "current", "time", "v2"]
    );
    assert_eq!(name_words("HTTPFetch"), ["httpfetch"]);
    assert_eq!(name_words("fetchURL"), ["fetch", "url"]);
}

#[test]
fn a_calculator_may_write_scratch_only_and_never_reach_the_network() {
    let c = compiled(tool(
        json!({"name": "add", "description": "Adds two numbers"}),
    ));
    // "add" is a word for writing: a calculator named add may write, not start a shell.
    assert_eq!(
        allows(&c, "add", Clause::FsWrite, "/lab/work/x"),
        Some(true)
    );
    assert_eq!(
        allows(&c, "add", Clause::FsWrite, "/lab/home/.bashrc"),
        Some(false)
    );
    let c = compiled(tool(
        json!({"name": "calculate", "description": "Evaluates 2+2"}),
    ));
    assert_eq!(
        allows(&c, "calculate", Clause::FsWrite, "/lab/work/x"),
        Some(false)
    );
    assert_eq!(
        allows(&c, "calculate", Clause::FsWrite, "/lab/tmp/x"),
        Some(true)
    );
    assert_eq!(
        allows(&c, "calculate", Clause::NetEgress, "evil.test:443"),
        Some(false)
    );
    assert_eq!(
        allows(&c, "calculate", Clause::Exec, "/bin/sh"),
        Some(false)
    );
    assert_eq!(
        allows(&c, "calculate", Clause::Exec, "/usr/bin/curl"),
        Some(false)
    );
    assert_eq!(
        allows(&c, "calculate", Clause::Exec, "/usr/bin/python3"),
        Some(true)
    );
    assert_eq!(
        allows(&c, "calculate", Clause::NetListen, "0.0.0.0:80"),
        Some(false)
    );
}

#[test]
fn a_tool_with_no_word_for_files_reads_scratch_only_and_a_file_tool_anything_but_canaries() {
    let weather = compiled(tool(json!({"name": "get_weather",
        "description": "Current weather for a city",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}})));
    let read = |c: &CompiledContract, tool: &str, path: &str| allows(c, tool, Clause::FsRead, path);
    assert_eq!(
        read(&weather, "get_weather", "/lab/work/notes/plan.md"),
        Some(false)
    );
    assert_eq!(
        read(&weather, "get_weather", "/lab/home/.gitconfig"),
        Some(false)
    );
    assert_eq!(
        read(&weather, "get_weather", "/lab/tmp/cache.json"),
        Some(true)
    );
    assert_eq!(
        read(&weather, "get_weather", "/lab/home/.cache/w/x"),
        Some(true)
    );
    let rule = weather.rule("get_weather", Clause::FsRead).unwrap();
    assert_eq!(
        rule.basis,
        "intent: no word for reading files in name, description or schema; temporary files and caches only"
    );
    assert_eq!(crate::rests_on(&rule.basis), "intent");
    // A word anywhere (name, description, schema) lifts it: the universal limit stays.
    for entry in [
        json!({"name": "read_file"}),
        json!({"name": "summarize", "description": "Summarizes the notes in the workspace"}),
        json!({"name": "stats", "inputSchema": {"type": "object", "properties": {"filePath": {"type": "string"}}}}),
    ] {
        let name = entry["name"].as_str().unwrap().to_owned();
        let c = compiled(tool(entry));
        assert_eq!(
            read(&c, &name, "/lab/work/notes/plan.md"),
            Some(true),
            "{name}"
        );
        assert_eq!(
            read(&c, &name, "/lab/home/.gitconfig"),
            Some(true),
            "{name}"
        );
        assert_eq!(
            crate::rests_on(&c.rule(&name, Clause::FsRead).unwrap().basis),
            "universal",
            "{name}"
        );
    }
}

#[test]
fn words_in_name_description_or_schema_give_the_tool_its_reasons() {
    let c = compiled(tool(
        json!({"name": "get_weather", "description": "Forecast for a city"}),
    ));
    assert_eq!(
        c.rule("get_weather", Clause::NetEgress)
            .unwrap()
            .allows("x:443"),
        Some(true)
    );
    let c = compiled(tool(json!({
        "name": "summarise", "inputSchema": {"properties": {"pageUrl": {"type": "string"}}}
    })));
    assert_eq!(
        c.rule("summarise", Clause::NetEgress)
            .unwrap()
            .allows("x:443"),
        Some(true)
    );
    assert_eq!(
        allows(&c, "summarise", Clause::Exec, "/usr/bin/curl"),
        Some(true)
    );
    assert_eq!(
        allows(&c, "summarise", Clause::Exec, "/bin/bash"),
        Some(false)
    );
    let c = compiled(tool(json!({"name": "run_command"})));
    assert_eq!(
        allows(&c, "run_command", Clause::Exec, "/bin/bash"),
        Some(true)
    );
    assert_eq!(
        allows(&c, "run_command", Clause::Exec, "/usr/bin/wget"),
        Some(true)
    );
}

#[test]
fn declared_hints_stand_and_the_universal_limits_still_hold() {
    let c = compiled(tool(json!({
        "name": "calculate", "annotations": {"readOnlyHint": false, "openWorldHint": true}
    })));
    // Declared: may write anywhere but credential places, may reach any host (a secret
    // sent is the grader's to forbid).
    assert_eq!(
        allows(&c, "calculate", Clause::FsWrite, "/lab/work/x"),
        Some(true)
    );
    assert_eq!(
        allows(
            &c,
            "calculate",
            Clause::FsWrite,
            "/lab/home/.ssh/authorized_keys"
        ),
        Some(false)
    );
    assert_eq!(
        allows(&c, "calculate", Clause::FsWrite, "/etc/cron.d/x"),
        Some(false)
    );
    assert_eq!(
        c.rule("calculate", Clause::NetEgress)
            .unwrap()
            .allows("x:443"),
        Some(true)
    );
    assert_eq!(
        allows(&c, "calculate", Clause::Exec, "/bin/sh"),
        Some(false)
    );
    let c = compiled(tool(
        json!({"name": "fetch", "annotations": {"readOnlyHint": true}}),
    ));
    assert_eq!(
        allows(&c, "fetch", Clause::FsWrite, "/lab/tmp/x"),
        Some(false)
    );
    assert_eq!(
        allows(&c, "fetch", Clause::Exec, "/usr/bin/curl"),
        Some(false)
    );
}

#[test]
fn every_basis_says_what_it_rests_on() {
    let lab = LabPaths::at("/lab");
    let declared = tool(json!({"name": "lookup", "annotations": {"readOnlyHint": true}}));
    let bare = tool(json!({"name": "lookup", "description": "Looks up a word"}));
    let rests = |contract: &Contract, clause: Clause| {
        let rule = contract.tools[0].rules.iter().find(|r| r.clause == clause);
        crate::rests_on(&rule.unwrap().basis)
    };
    let by_hints = crate::derive(std::slice::from_ref(&declared));
    assert_eq!(rests(&by_hints, Clause::FsWrite), "declared");
    assert_eq!(rests(&by_hints, Clause::Idempotent), "default");
    assert_eq!(rests(&by_hints, Clause::ResultSecrets), "universal");
    assert_eq!(rests(&by_hints, Clause::FsRead), "universal");
    let by_intent = derive_intent(&[bare], Offers::default(), &Service::default(), &lab);
    assert_eq!(rests(&by_intent, Clause::NetEgress), "intent");
    assert_eq!(rests(&by_intent, Clause::FsWrite), "intent");
    assert_eq!(rests(&by_intent, Clause::Exec), "intent");
    let row = &by_intent.tools[1];
    assert!(
        row.rules
            .iter()
            .filter(|r| r.rule != Rule::NothingPromised)
            .all(|r| crate::rests_on(&r.basis) == "universal")
    );
    assert_eq!(crate::rests_on("servers.toml:4:1"), "contract");
}

#[test]
fn the_server_row_grades_what_the_server_shows_always_and_its_lists_where_offered() {
    let lab = LabPaths::at("/lab");
    let lookup = || tool(json!({"name": "lookup", "description": "Looks up a word"}));
    let row_rule = |offers: Offers, clause: Clause| {
        let contract = derive_intent(&[lookup()], offers, &Service::default(), &lab);
        let row = &contract.tools[1];
        assert_eq!(row.tool, SERVER_ROW);
        let rule = row.rules.iter().find(|r| r.clause == clause).unwrap();
        (rule.rule.clone(), crate::rests_on(&rule.basis))
    };
    // Any server may ask the model something (sampling) outside a call.
    for clause in [Clause::ResultSecrets, Clause::ResultInstructions] {
        for offers in [Offers::default(), Offers { lists: true }] {
            assert_eq!(row_rule(offers, clause), (Rule::nowhere(), "universal"));
        }
    }
    assert_eq!(
        row_rule(Offers::default(), Clause::ManifestStable).0,
        Rule::NothingPromised
    );
    let listed = Offers { lists: true };
    assert_eq!(
        row_rule(listed, Clause::ManifestStable),
        (Rule::nowhere(), "universal")
    );
    // The tools' own rules do not depend on it.
    let tools =
        |offers| derive_intent(&[lookup()], offers, &Service::default(), &lab).tools[0].clone();
    assert_eq!(tools(Offers::default()), tools(listed));
}

#[test]
fn the_basis_names_the_word_or_its_absence() {
    let contract = derive_intent(
        &[tool(
            json!({"name": "lookup", "description": "Looks up a word"}),
        )],
        Offers::default(),
        &Service::default(),
        &LabPaths::at("/lab"),
    );
    let basis = |clause: Clause| {
        contract.tools[0]
            .rules
            .iter()
            .find(|r| r.clause == clause)
            .unwrap()
            .basis
            .clone()
    };
    assert_eq!(
        basis(Clause::NetEgress),
        "intent: name says \"lookup\"; no secret sent (universal)"
    );
    assert!(
        basis(Clause::FsWrite).starts_with("intent: no word for writing"),
        "{}",
        basis(Clause::FsWrite)
    );
    assert!(
        basis(Clause::Exec).ends_with("(universal)"),
        "{}",
        basis(Clause::Exec)
    );
}

/// What the rules make of the data-driven cases: every intent case's derived contract and
/// every instruction case's findings, hashed. `tests/data/rules.json` records it with the
/// revision ([`crate::RULES`]) it was made under, so that a change of the rules that leaves
/// the revision where it was fails here: receipts of the old rules would then derive
/// another contract under the same number, which `vac report` refuses.
#[test]
fn the_rules_revision_moves_with_the_rules() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let read = |path: &str| std::fs::read_to_string(format!("{data}/{path}")).unwrap();
    let cases: Vec<WordsCase> = serde_json::from_str(&read("intent/words.json")).unwrap();
    let mut hasher = blake3::Hasher::new();
    for case in &cases {
        let service = case.server.as_ref().map_or_else(Service::default, |s| {
            let command: Vec<String> = s.command.split_whitespace().map(str::to_owned).collect();
            Service::of(s.name.as_deref(), &command, &s.env)
        });
        let contract = derive_intent(
            &[tool(case.tool.clone())],
            Offers::default(),
            &service,
            &LabPaths::at("/lab"),
        );
        hasher.update(&serde_json::to_vec(&contract).unwrap());
    }
    let texts: Vec<serde_json::Value> =
        serde_json::from_str(&read("instructions/languages.json")).unwrap();
    for case in &texts {
        let result = json!({"content": [{"type": "text", "text": case["text"]}]});
        let found = crate::detect::instructions_in_result(&result);
        hasher.update(format!("{found:?}").as_bytes());
    }
    let now = hasher.finalize().to_hex().to_string();
    let recorded: serde_json::Value = serde_json::from_str(&read("rules.json")).unwrap();
    let (rules, fingerprint) = (recorded["rules"].as_u64(), recorded["fingerprint"].as_str());
    assert!(
        fingerprint == Some(now.as_str()) || rules != Some(u64::from(crate::RULES)),
        "the rules changed under revision {}: bump vac_contracts::RULES (and say what changed \
         in its doc), then record {{\"rules\": <new>, \"fingerprint\": \"{now}\"}} in \
         tests/data/rules.json",
        crate::RULES
    );
    assert_eq!(
        (rules, fingerprint),
        (Some(u64::from(crate::RULES)), Some(now.as_str())),
        "record the revision and the fingerprint in tests/data/rules.json"
    );
}
