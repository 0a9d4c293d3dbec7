//! The benign corpus (`tests/data/benign/`): a minimal honest server on each framework a
//! study meets. In default mode vac confirms nothing on any of them — in particular not the
//! `.env` that the Python SDK's FastMCP and FastMCP 2.x load from the working directory at
//! start — and every tool does its job; the one that shows the model what `.env` holds is
//! confirmed `result.secrets`. Needs root and `.ci/install-thirdparty.sh`; skips visibly
//! elsewhere, fails under CI.

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::Value;

fn venvs() -> (String, String) {
    let pinned = std::env::var("VAC_THIRDPARTY_VENV")
        .unwrap_or_else(|_| "/root/.vac-thirdparty/venv".into());
    let benign = std::env::var("VAC_BENIGN_VENV").unwrap_or_else(|_| {
        let parent = std::path::Path::new(&pinned).parent().unwrap();
        parent.join("benign").display().to_string()
    });
    (pinned, benign)
}

fn modules() -> String {
    let prefix =
        std::env::var("VAC_THIRDPARTY_PREFIX").unwrap_or_else(|_| "/opt/vac-thirdparty".into());
    format!("{prefix}/node_modules")
}

fn server(file: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/benign")
        .join(file)
        .display()
        .to_string()
}

/// The corpus's servers as commands, when the install ran; a visible skip if not.
fn corpus(test: &str) -> Option<Vec<(&'static str, Vec<String>)>> {
    if !privileged(test) {
        return None;
    }
    let (pinned, benign) = venvs();
    let python = |venv: &str| format!("{venv}/bin/python3");
    let installed = [
        python(&pinned),
        python(&benign),
        format!("{}/@modelcontextprotocol/sdk", modules()),
    ]
    .iter()
    .all(|p| std::path::Path::new(p).exists());
    required(installed, test, "needs .ci/install-thirdparty.sh run first").then(|| {
        vec![
            (
                "low-level Server (mcp 2.x)",
                vec![python(&pinned), server("lowlevel.py")],
            ),
            (
                "MCPServer (mcp 2.x)",
                vec![python(&pinned), server("mcpserver.py")],
            ),
            (
                "FastMCP (mcp 1.x)",
                vec![python(&benign), server("fastmcp_sdk.py")],
            ),
            ("FastMCP 2.x", vec![python(&benign), server("fastmcp2.py")]),
            (
                "TypeScript SDK",
                vec!["node".into(), server("ts_sdk.mjs"), modules()],
            ),
        ]
    })
}

fn confirmed(json: &Value) -> Vec<String> {
    json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "confirmed")
        .map(|c| format!("{} × {}: {}", c["tool"], c["clause"], c["evidence"]))
        .collect()
}

#[test]
fn default_mode_confirms_nothing_on_an_honest_server_of_any_framework() {
    let test = "default_mode_confirms_nothing_on_an_honest_server_of_any_framework";
    let Some(corpus) = corpus(test) else {
        return;
    };
    let mut wrong = Vec::new();
    for (framework, command) in &corpus {
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        let probe = probe(&[], &command);
        if probe.json["status"] != "completed" {
            wrong.push(format!("{framework}: {}", probe.json["error"]));
            continue;
        }
        let found = confirmed(&probe.json);
        if !found.is_empty() || probe.output.status.code() != Some(0) {
            wrong.push(format!(
                "{framework}: exit {:?}, confirmed {found:#?}",
                probe.output.status.code()
            ));
        }
        let (worked, tools) = tools_that_worked(&probe.json);
        if worked != tools {
            wrong.push(format!(
                "{framework}: tools that did their job {worked:?} of {tools:?}"
            ));
        }
        // The framework's `.env` read is profiled, not hidden.
        if framework.starts_with("FastMCP") {
            let profile = probe.json["profile"].to_string();
            if !profile.contains("/work/.env") {
                wrong.push(format!(
                    "{framework}: .env read not in the profile {profile}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_fastmcp_server_that_shows_the_model_its_dotenv_is_confirmed_for_secrets() {
    let test = "a_fastmcp_server_that_shows_the_model_its_dotenv_is_confirmed_for_secrets";
    if corpus(test).is_none() {
        return;
    }
    let (_, benign) = venvs();
    let probe = probe(
        &[],
        &[&format!("{benign}/bin/python3"), &server("leaky.py")],
    );
    assert_eq!(probe.output.status.code(), Some(1), "{:#}", probe.json);
    let secrets = cell(&probe.json, "show_settings", "result.secrets");
    assert_eq!(secrets["verdict"], "confirmed", "{secrets:#}");
    // The read itself is the framework's convention, not the finding.
    let read = cell(&probe.json, "show_settings", "fs.read");
    assert_ne!(read["verdict"], "confirmed", "{read:#}");
}

/// A project as its author keeps it: the FastMCP notes server split into a module of tools
/// and an entry point beside it, a package of the same, and a `requirements.txt`; made in a
/// temporary directory, which the sandbox's mask hides.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let tools = std::fs::read_to_string(server("fastmcp_sdk.py")).unwrap();
    std::fs::write(root.join("requirements.txt"), "mcp==1.27.0\n").unwrap();
    std::fs::write(root.join("notes_tools.py"), &tools).unwrap();
    std::fs::write(
        root.join("server.py"),
        "from notes_tools import mcp\n\nif __name__ == \"__main__\":\n    mcp.run()\n",
    )
    .unwrap();
    std::fs::create_dir(root.join("notes_pkg")).unwrap();
    std::fs::write(root.join("notes_pkg/__init__.py"), "").unwrap();
    std::fs::write(
        root.join("notes_pkg/app.py"),
        format!("{tools}\n\napp = mcp.streamable_http_app()\n"),
    )
    .unwrap();
    std::fs::write(
        root.join("notes_pkg/__main__.py"),
        "from notes_pkg.app import mcp\n\nmcp.run()\n",
    )
    .unwrap();
    dir
}

/// A server typed in its project directory — a script importing its sibling, a package by
/// `-m`, an ASGI app by `module:object` under uvicorn — starts in the sandbox without
/// `--expose`, does its job, and the receipts say why what it needed was visible.
#[test]
fn a_server_typed_in_its_project_directory_starts_as_installed() {
    let test = "a_server_typed_in_its_project_directory_starts_as_installed";
    if corpus(test).is_none() {
        return;
    }
    let (_, benign) = venvs();
    let project = project();
    let root = project.path().display().to_string();
    let python = format!("{benign}/bin/python3");
    let uvicorn = format!("{benign}/bin/uvicorn");
    let cases: [(&str, &[&str], Vec<&str>); 3] = [
        ("sibling import", &[], vec![&python, "server.py"]),
        ("-m package", &[], vec![&python, "-m", "notes_pkg"]),
        (
            "module:object",
            &["--http", "8765"],
            vec![&uvicorn, "notes_pkg.app:app", "--port", "8765"],
        ),
    ];
    let mut wrong = Vec::new();
    for (how, extra, command) in cases {
        let probe = probe_from(project.path(), extra, &command);
        if probe.json["status"] != "completed" {
            wrong.push(format!("{how}: {}", probe.json["error"]));
            continue;
        }
        let (worked, tools) = tools_that_worked(&probe.json);
        if tools.len() != 3 || worked != tools {
            wrong.push(format!(
                "{how}: tools that did their job {worked:?} of {tools:?}"
            ));
        }
        let found = confirmed(&probe.json);
        if !found.is_empty() {
            wrong.push(format!("{how}: confirmed {found:#?}"));
        }
        let visibility = &events(&probe, "visibility")[0];
        let because = visibility["because"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let why: Vec<&str> = because
            .iter()
            .filter(|b| b["path"].as_str().is_some_and(|p| p.starts_with(&root)))
            .filter_map(|b| b["why"].as_str())
            .collect();
        if why.is_empty() {
            wrong.push(format!("{how}: no reason for the project in {visibility}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
