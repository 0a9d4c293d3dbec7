use super::*;
use serde_json::json;

fn plants() -> Plants {
    Plants {
        note_relative: "notes/welcome.md".into(),
        note_absolute: "/lab/work/notes/welcome.md".into(),
        nonce_path: "notes/draft-0123456789ab.md".into(),
        canary: "memo-0123456789ab".into(),
        escapes: Vec::new(),
        repository: None,
        topic: Vec::new(),
        kit: Some((
            ("files".into(), "/lab/work/files".into()),
            &crate::probe::plants::KIT_FILES,
        )),
    }
}

#[test]
fn a_path_field_that_names_a_kind_of_file_gets_the_kits_file_of_that_kind() {
    let schema = |description: &str| {
        json!({"type": "object", "required": ["filepath"], "properties": {
            "filepath": {"type": "string", "description": description}}})
    };
    let first = |tool: &str, description: &str| {
        plan_tool(tool, &schema(description), &plants(), 6, false)[0].arguments["filepath"].clone()
    };
    assert_eq!(
        first("read_sheet", "Path to the Excel workbook"),
        "files/data.xlsx"
    );
    assert_eq!(first("extract_text", "The PDF to read"), "files/report.pdf");
    assert_eq!(first("read_docx", ""), "files/letter.docx");
    // A tool that makes the file gets a new one of the kind beside the kit's, which it
    // would empty for every call after it; one that makes from a template reads the kit's.
    assert_eq!(
        first("create_document", "Path of the docx file"),
        "files/new-letter.docx"
    );
    assert_eq!(
        first("new_workbook", "Excel workbook"),
        "files/new-data.xlsx"
    );
    assert_eq!(
        first("add_paragraph", "Path of the docx file"),
        "files/letter.docx"
    );
    assert!(makes_file("create_document", "filename"));
    assert!(!makes_file(
        "create_presentation_from_template",
        "template_path"
    ));
    assert!(!makes_file("add_table", "filename"));
    assert_eq!(first("query", "SQLite database file"), "files/data.sqlite");
    assert_eq!(first("describe_image", ""), "files/image.png");
    // Nothing names a kind: the note, as before.
    assert_eq!(first("read_file", "The file to read"), "notes/welcome.md");
}

/// Grown from the study's excel-mcp-server, whose 46 tools take a bare `path` and a
/// `sheet`: its normal calls got the note and a made-up sheet (7 of 46 tools answered).
#[test]
fn a_path_that_names_no_kind_takes_its_tools_description_or_its_servers_topic() {
    let excel = Plants {
        topic: vec!["excel".into()],
        ..plants()
    };
    let bare = json!({"type": "object", "required": ["path", "sheet"], "properties": {
        "path": {"type": "string"}, "sheet": {"type": "string"}}});
    let first = |tool: &str, schema: &Value, plants: &Plants| {
        plan_tool(tool, schema, plants, 6, false)[0]
            .arguments
            .clone()
    };
    // The server's topic: the workbook, and the sheet it has.
    let call = first("replace_cells", &bare, &excel);
    assert_eq!(call["path"], "files/data.xlsx");
    assert_eq!(call["sheet"], "Sheet1");
    // Cells of it in A1 notation, where the field takes text.
    let cells = json!({"type": "object", "required": ["path", "at", "range", "content_base64"],
        "properties": {"path": {"type": "string"}, "at": {"type": "string"},
        "range": {"type": "string"}, "content_base64": {"type": "string"}}});
    let call = first("write_range", &cells, &excel);
    assert_eq!(
        (&call["at"], &call["range"]),
        (&json!("A1"), &json!("A1:B2"))
    );
    assert_eq!(call["content_base64"], "bWVtby0wMTIzNDU2Nzg5YWI=");
    // The tool's own description, with no topic.
    let described = with_tool_description(&bare, Some("Read cell values from an Excel workbook."));
    assert_eq!(
        first("read_range", &described, &plants())["path"],
        "files/data.xlsx"
    );
    // Neither: the note, and the sheet field keeps its ordinary value.
    let call = first("read_range", &bare, &plants());
    assert_eq!(call["path"], "notes/welcome.md");
    assert_eq!(call["sheet"], "memo-0123456789ab");
    // A kind another field names for itself is not the bare field's: `export_csv` reads the
    // workbook at `path` and writes the CSV at `csv_path`.
    let export = json!({"type": "object", "required": ["path", "csv_path"], "properties": {
        "path": {"type": "string"}, "csv_path": {"type": "string"}}});
    let call = first("export_csv", &export, &excel);
    assert_eq!(call["path"], "files/data.xlsx");
    assert_eq!(call["csv_path"], "files/data.csv");
    // A database's table.
    let query = json!({"type": "object", "required": ["db_path", "table"], "properties": {
        "db_path": {"type": "string", "description": "SQLite database file"},
        "table": {"type": "string"}}});
    let call = first("describe_table", &query, &plants());
    assert_eq!(call["db_path"], "files/data.sqlite");
    assert_eq!(call["table"], "items");
    // A presentation by its tool's name; a document by the product its server is named
    // after (office-word-mcp-server), never by a tool's own word.
    let file = json!({"type": "object", "required": ["file_path"], "properties": {
        "file_path": {"type": "string"}}});
    assert_eq!(
        first("open_presentation", &file, &plants())["file_path"],
        "files/slides.pptx"
    );
    let word = Plants {
        topic: vec!["office".into(), "word".into()],
        ..plants()
    };
    assert_eq!(
        first("get_document_text", &file, &word)["file_path"],
        "files/letter.docx"
    );
    assert_eq!(
        first("word_count", &file, &plants())["file_path"],
        "notes/welcome.md"
    );
}

#[test]
fn producers_are_named_by_their_first_word_and_setups_come_first() {
    for producer in [
        "create_entities",
        "add_observations",
        "newNote",
        "start-session",
    ] {
        assert!(is_producer(producer), "{producer}");
    }
    for other in [
        "open_nodes",
        "read_graph",
        "delete_entities",
        "git_add",
        "recreate",
    ] {
        assert!(!is_producer(other), "{other}");
    }
    let schema = json!({"type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}}});
    let setup = plan_tool("create_entity", &schema, &plants(), 1, false);
    let calls = plan_tool("delete_entity", &schema, &plants(), 6, true);
    let repeat = calls.iter().position(|c| c.repeat_of.is_some()).unwrap();
    let with = with_setups(&setup, calls.clone());
    assert_eq!(with.len(), calls.len() + 1);
    assert_eq!(with[0].tool, "create_entity");
    assert_eq!(with[0].purpose, Purpose::Setup);
    assert_eq!(
        with[0].arguments["name"], calls[0].arguments["name"],
        "the same state"
    );
    assert_eq!(
        with[repeat + 1].repeat_of,
        Some(calls[repeat].repeat_of.unwrap() + 1)
    );
}

/// Grown from the study's cyanheads git-mcp-server (28 tools, 3 answered): its `path` says
/// "Path to the Git repository" and got the note.
#[test]
fn a_field_described_as_a_repository_gets_the_planted_one() {
    let plants = Plants {
        repository: Some(("repo".into(), "/lab/work/repo".into())),
        ..plants()
    };
    let schema = json!({"type": "object", "required": ["filePath"], "properties": {
        "path": {"type": "string", "description": "Path to the Git repository. Defaults to the session's."},
        "filePath": {"type": "string", "description": "Path to the file within the repository"}}});
    let first = &plan_tool("git_blame", &schema, &plants, 6, false)[0].arguments;
    assert_eq!(first["path"], "/lab/work/repo", "{first:?}");
    assert_eq!(first["filePath"], "README.md", "{first:?}");
}

#[test]
fn a_repository_tool_gets_the_planted_repository_its_file_and_revisions() {
    let plants = Plants {
        repository: Some(("repo".into(), "/lab/work/repo".into())),
        ..plants()
    };
    let schema = json!({"type": "object", "required": ["repo_path", "revision", "files"],
        "properties": {"repo_path": {"type": "string"}, "revision": {"type": "string"},
        "files": {"type": "array", "items": {"type": "string"}}}});
    let calls = plan_tool("git_show", &schema, &plants, 6, false);
    let first = &calls[0].arguments;
    assert_eq!(first["repo_path"], "/lab/work/repo", "{calls:?}");
    assert_eq!(first["revision"], "HEAD");
    assert_eq!(first["files"], json!(["README.md"]));
    let branch = json!({"type": "object", "required": ["repo_path", "branch_name"],
        "properties": {"repo_path": {"type": "string"}, "branch_name": {"type": "string"}}});
    let checkout = plan_tool("git_checkout", &branch, &plants, 6, false);
    assert_eq!(checkout[0].arguments["branch_name"], "main");
    let create = plan_tool("git_create_branch", &branch, &plants, 6, false);
    assert_eq!(create[0].arguments["branch_name"], "memo-0123456789ab");
    // Without a repository field nothing changes: the note, as before.
    let plain = plan_tool(
        "read_note",
        &json!({"type": "object", "required": ["path"],
        "properties": {"path": {"type": "string"}}}),
        &plants,
        6,
        false,
    );
    assert_eq!(plain[0].arguments["path"], "notes/welcome.md");
}

#[test]
fn path_fields_get_the_note_both_ways_and_a_nonce() {
    let schema =
        json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]});
    let calls = plan_tool("read_note", &schema, &plants(), 6, false);
    let paths: Vec<&str> = calls
        .iter()
        .map(|c| c.arguments["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "notes/welcome.md",
            "/lab/work/notes/welcome.md",
            "notes/draft-0123456789ab.md"
        ]
    );
}

#[test]
fn enums_each_value_and_required_strings_a_canary() {
    let schema = json!({"type":"object","properties":{
        "datasource":{"type":"string","enum":["analytics","reporting"]},
        "query":{"type":"string"},
        "optional":{"type":"string"}},"required":["datasource","query"]});
    let calls = plan_tool("query_data", &schema, &plants(), 6, false);
    let sources: Vec<&str> = calls
        .iter()
        .map(|c| c.arguments["datasource"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        ["analytics", "reporting", "ANALYTICS", " analytics "]
    );
    assert_eq!(calls[0].arguments["query"], "memo-0123456789ab");
    assert!(!calls[0].arguments.contains_key("optional"));
}

#[test]
fn refs_into_defs_are_followed_and_no_schema_means_an_empty_call_and_its_repeat() {
    let schema = json!({"type":"object","properties":{"action":{"$ref":"#/$defs/Action"},"n":{"type":"integer","minimum":3}},
        "required":["action","n"],"$defs":{"Action":{"type":"string","enum":["read","write"]}}});
    let calls = plan_tool("file_manager", &schema, &plants(), 6, false);
    assert_eq!(calls[0].arguments["action"], "read");
    assert_eq!(calls[0].arguments["n"], 3);
    assert_eq!(calls[1].arguments["action"], "write");
    let none = plan_tool("get_config", &json!({"type":"object"}), &plants(), 6, false);
    let empty = PlannedCall {
        tool: "get_config".into(),
        arguments: Map::new(),
        repeat_of: None,
        judged: false,
        purpose: Purpose::Normal,
    };
    let again = PlannedCall {
        repeat_of: Some(0),
        ..empty.clone()
    };
    assert_eq!(none, vec![empty.clone(), again.clone()]);
    // Only a repeat the contract grades (`idempotent`) is judged: its run waits for
    // quiet around it.
    let graded = plan_tool("get_config", &json!({"type":"object"}), &plants(), 6, true);
    let judged = PlannedCall {
        judged: true,
        ..again
    };
    assert_eq!(graded, vec![empty.clone(), judged]);
    // A budget of one call leaves no room for the repeat.
    let one = plan_tool("get_config", &json!({"type":"object"}), &plants(), 1, false);
    assert_eq!(one, vec![empty]);
}

#[test]
fn self_referencing_refs_stop() {
    let schema = json!({"$ref":"#","properties":{}});
    // One call, and its repeat.
    assert_eq!(plan_tool("loop", &schema, &plants(), 3, false).len(), 2);
    assert!(!has_path_argument(&schema));
}

#[test]
fn lists_of_paths_get_one_path_per_call() {
    let schema = json!({"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"}}},"required":["paths"]});
    let calls = plan_tool("read_multiple_files", &schema, &plants(), 6, false);
    assert_eq!(calls.len(), 3);
    assert_eq!(
        calls[1].arguments["paths"],
        json!(["/lab/work/notes/welcome.md"])
    );
}

#[test]
fn the_witness_reads_a_control_nonce_once_and_a_flip_nonce_twice() {
    let schema = json!({"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"}},
        "mode":{"enum":["a","b"]}},"required":["paths","mode"]});
    let plants = plants();
    let (control, flip) = plants.witness_paths(3);
    assert_eq!(control, "notes/draft-0123456789ab-3a.md");
    assert_eq!(flip, "notes/draft-0123456789ab-3b.md");
    assert_ne!(plants.witness_paths(4).0, control);
    let calls = plan_witness("read_many", &schema, &plants, plants.witness_paths(3));
    let purposes: Vec<Purpose> = calls.iter().map(|c| c.purpose).collect();
    assert_eq!(
        purposes,
        [
            Purpose::NegativeControl,
            Purpose::FlipFirst,
            Purpose::FlipSecond
        ]
    );
    assert_eq!(calls[0].arguments["paths"], json!([control]));
    assert_eq!(calls[0].arguments["mode"], "a");
    assert_eq!(calls[1].arguments, calls[2].arguments);
    assert_eq!(calls[1].arguments["paths"], json!([flip]));
    assert!(calls.iter().all(|c| c.repeat_of.is_none()));
    let none =
        json!({"type":"object","properties":{"query":{"type":"string"}},"required":["query"]});
    assert!(plan_witness("q", &none, &plants, plants.witness_paths(0)).is_empty());
}

/// A path field takes a directory by its name, by a description that names one as the
/// thing to give, or as the `path` of a listing tool; a file's path relative to the
/// working directory is still a file.
#[test]
fn directory_fields_are_told_from_file_fields() {
    let described = |text: &str| json!({"type": "string", "description": text});
    assert!(wants_directory("x", "root", &json!({})));
    assert!(wants_directory("x", "repo_path", &json!({})));
    assert!(wants_directory(
        "x",
        "path",
        &described("Directory to list, relative to the working directory")
    ));
    assert!(wants_directory(
        "x",
        "target",
        &described("The folder to scan")
    ));
    assert!(wants_directory("list_directory", "path", &json!({})));
    assert!(!wants_directory(
        "file_manager",
        "path",
        &described("Path of the file, relative to the working directory or absolute.")
    ));
    assert!(!wants_directory(
        "read_note",
        "path",
        &described("Relative to the current directory")
    ));
    assert!(!wants_directory("read_file", "path", &json!({})));
}

/// Each field gets a value that does its job: by format, by name, from the schema's
/// own default, bounds and structure; free text gets the canary.
#[test]
fn values_follow_the_schema_and_the_field_name() {
    let schema = json!({"type": "object", "required": [
        "source_timezone", "time", "url", "homepage", "sql_query", "expression",
        "command", "when", "limit", "ratio", "entities", "options", "mode", "choice",
        "note", "tags", "paragraph_index", "placeholder_idx", "page_index"],
    "properties": {
        "source_timezone": {"type": "string"},
        "time": {"type": "string", "description": "Time in 24-hour format (HH:MM)"},
        "url": {"type": "string"},
        "homepage": {"type": "string", "format": "uri"},
        "sql_query": {"type": "string"},
        "expression": {"type": "string"},
        "command": {"type": "string"},
        "when": {"type": "string", "format": "date-time"},
        "limit": {"type": "integer", "minimum": 5, "maximum": 10},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.5},
        "entities": {"type": "array", "minItems": 2, "items": {"type": "object",
            "required": ["name", "observations"],
            "properties": {"name": {"type": "string"}, "observations": {"type": "array", "items": {"type": "string"}},
                           "extra": {"type": "string"}}}},
        "options": {"type": "object", "required": ["depth"], "properties": {"depth": {"type": "integer", "default": 2}}},
        "mode": {"anyOf": [{"type": "null"}, {"type": "string", "enum": ["fast", "slow"]}]},
        "choice": {"type": "string", "default": "b"},
        "note": {"type": "string"},
        "tags": {"type": "array"},
        "paragraph_index": {"type": "integer"},
        "placeholder_idx": {"type": "integer"},
        "page_index": {"type": "integer", "minimum": 1}
    }});
    let calls = plan_tool("t", &schema, &plants(), 1, false);
    let canary = "memo-0123456789ab";
    assert_eq!(
        Value::Object(calls[0].arguments.clone()),
        json!({
            "source_timezone": "UTC", "time": "12:00", "url": "http://example.com/",
            "homepage": "http://example.com/", "sql_query": "SELECT 1", "expression": "1 + 1",
            "command": format!("echo {canary}"), "when": "2026-01-01T00:00:00Z",
            "limit": 5, "ratio": 0.25,
            "entities": [{"name": canary, "observations": [canary]}, {"name": canary, "observations": [canary]}],
            "options": {"depth": 2}, "mode": "fast", "choice": "b", "note": canary, "tags": [],
            // An index with no bounds counts from 0, the first element; bounds still rule.
            "paragraph_index": 0, "placeholder_idx": 0, "page_index": 1
        })
    );
    assert_eq!(words("repoURL"), ["repo", "url"]);
    assert_eq!(words("timeZone"), ["time", "zone"]);
    assert_eq!(words("timeout"), ["timeout"]);
    assert_eq!(singular("entities"), "entity");
    assert_eq!(singular("urls"), "url");
    assert_eq!(singular("address"), "address");
}

#[test]
fn values_a_description_lists_are_tried_like_an_enums() {
    let cases: &[(&str, &[&str])] = &[
        (
            "Service to use, one of: email_service, cloud_storage",
            &["email_service", "cloud_storage"],
        ),
        ("Sort order (one of `asc`, `desc`).", &["asc", "desc"]),
        ("Either 'json' or 'text'.", &["json", "text"]),
        (
            "Output format. Options: csv | json | xlsx",
            &["csv", "json", "xlsx"],
        ),
        (r#"Valid values: ["a", "b"]. Default a."#, &["a", "b"]),
        (
            "One of: red, green, blue, cyan, magenta",
            &["red", "green", "blue", "cyan"],
        ),
        ("The text, one of the following kinds of prose.", &[]),
        ("Either plain prose or markdown.", &[]),
        ("Someone of note, either way.", &[]),
        ("A path to the file.", &[]),
        (
            "Whether to list local branches ('local'), remote branches ('remote') or all branches('all').",
            &["local", "remote", "all"],
        ),
        ("The name ('main') of one branch.", &[]),
    ];
    for (description, expected) in cases {
        assert_eq!(described_values(description), *expected, "{description}");
    }
    let schema = json!({"type": "object", "required": ["target"], "properties": {
        "target": {"type": "string"}, "text": {"type": "string"},
        "mode": {"type": "string", "description": "One of: fast, slow"}}});
    let docstring = "Sends the text somewhere.\n\nArgs:\n    target: one of email_service, cloud_storage\n    mode: either json or text\n    text: the text, either way";
    let told = with_tool_description(&schema, Some(docstring));
    let target = told["properties"]["target"]["description"]
        .as_str()
        .unwrap();
    assert_eq!(described_values(target), ["email_service", "cloud_storage"]);
    // A field whose own description lists values keeps them; prose lists nothing.
    assert_eq!(
        told["properties"]["mode"]["description"],
        "One of: fast, slow"
    );
    assert!(told["properties"]["text"].get("description").is_none());
    let calls = plan_tool("send", &told, &plants(), 8, false);
    let targets: Vec<&Value> = calls
        .iter()
        .filter_map(|c| c.arguments.get("target"))
        .collect();
    assert!(targets.contains(&&json!("email_service")), "{targets:?}");
    assert!(targets.contains(&&json!("cloud_storage")), "{targets:?}");
    // A name inside a longer one is not the field.
    assert_eq!(whole_word("retarget: one of a, b", "target"), None);
    let schema = json!({"type": "object", "required": ["service", "note"], "properties": {
        "service": {"type": "string", "description": "Where to send it, one of: email_service, cloud_storage"},
        "note": {"type": "string", "description": "Free text."}}});
    let calls = plan_tool("send", &schema, &plants(), 8, false);
    let services: Vec<&Value> = calls.iter().map(|c| &c.arguments["service"]).collect();
    assert_eq!(
        services,
        [
            &json!("email_service"),
            &json!("cloud_storage"),
            &json!("memo-0123456789ab")
        ]
    );
    assert!(
        calls
            .iter()
            .all(|c| c.arguments["note"] == "memo-0123456789ab")
    );
}

/// Per-call runs: setups first in each; a repeat stays with its original, a retry slot
/// with the call before it and the witness's three reads together, their positions
/// renumbered.
#[test]
fn per_call_runs_keep_setups_repeats_and_the_witness_together() {
    let call = |tool: &str, repeat_of, purpose| PlannedCall {
        tool: tool.into(),
        arguments: Map::new(),
        repeat_of,
        judged: false,
        purpose,
    };
    let calls = vec![
        call("create", None, Purpose::Setup),
        call("t", None, Purpose::Normal),
        call("t", Some(1), Purpose::Normal),
        call("t", None, Purpose::Normal),
        call("t", None, Purpose::Retry),
        call("t", None, Purpose::NegativeControl),
        call("t", None, Purpose::FlipFirst),
        call("t", None, Purpose::FlipSecond),
    ];
    let runs = per_call(&calls);
    let shape: Vec<Vec<(Purpose, Option<usize>)>> = runs
        .iter()
        .map(|run| run.iter().map(|c| (c.purpose, c.repeat_of)).collect())
        .collect();
    let setup = (Purpose::Setup, None);
    assert_eq!(
        shape,
        [
            vec![setup, (Purpose::Normal, None), (Purpose::Normal, Some(1))],
            vec![setup, (Purpose::Normal, None), (Purpose::Retry, None)],
            vec![
                setup,
                (Purpose::NegativeControl, None),
                (Purpose::FlipFirst, None),
                (Purpose::FlipSecond, None)
            ],
        ]
    );
    assert_eq!(per_call(&calls[1..2]).len(), 1);
    assert!(per_call(&[]).is_empty());
}

/// A tool's retry slot copies its first ordinary call (setups are not its own); a tool
/// that takes no argument has none.
#[test]
fn the_retry_slot_starts_from_the_first_ordinary_call() {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let calls = plan_tool("read", &schema, &plants(), 8, false);
    let setup = PlannedCall {
        tool: "create".into(),
        arguments: Map::from_iter([("name".to_string(), json!("x"))]),
        repeat_of: None,
        judged: false,
        purpose: Purpose::Setup,
    };
    let slot = retry_slot(&with_setups(&[setup], calls.clone())).unwrap();
    assert_eq!(slot.purpose, Purpose::Retry);
    assert_eq!(
        (slot.tool.as_str(), &slot.arguments),
        ("read", &calls[0].arguments)
    );
    assert_eq!(slot.repeat_of, None);
    let bare = plan_tool("now", &json!({"type": "object"}), &plants(), 8, false);
    assert!(retry_slot(&bare).is_none());
}

#[test]
fn the_budget_caps_the_calls() {
    let schema = json!({"type":"object","properties":{"path":{"type":"string"},"mode":{"enum":["a","b","c","d","e"]}},"required":["path","mode"]});
    assert_eq!(plan_tool("t", &schema, &plants(), 4, false).len(), 4);
}

/// Grown from the study's code runner, whose `code` got the bare canary (a SyntaxError).
#[test]
fn a_code_field_gets_a_program_and_a_code_that_is_an_identifier_does_not() {
    let schema = json!({"type": "object", "required": ["code", "languageId", "country_code"],
        "properties": {"code": {"type": "string"}, "languageId": {"type": "string"},
        "country_code": {"type": "string"}}});
    let first = &plan_tool("run_code", &schema, &plants(), 6, false)[0].arguments;
    assert_eq!(first["code"], "print(\"memo-0123456789ab\")");
    assert_eq!(first["languageId"], "python");
    assert_eq!(first["country_code"], "memo-0123456789ab");
}
