//! Rendering a probe: the SPEC §5 JSON document and a short human table of it. Both take a
//! [`ProbeReport`], which is always graded from receipts (`vac probe` and `vac report`
//! alike), so the two commands print the same bytes for the same directory.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::probe::ProbeReport;

/// The JSON document of `--json` without its cells (`verdicts` is empty): `target`,
/// `status`, the manifest, runs, findings and `receipts`, the receipt directory. Small
/// whatever the server's size; [`cells`] gives the verdicts, one at a time.
pub fn head(report: &ProbeReport) -> Value {
    json!({
        "target": report.target,
        "status": if report.failure.is_some() { "errored" } else { "completed" },
        "error": report.failure,
        "protocol_version": report.protocol_version,
        "tools": report.tools,
        "manifest": report.manifest,
        "contract": report.contract,
        "verdicts": [],
        "unattributed": report.grades.as_ref().map(|g| g.unattributed.len()).unwrap_or(0),
        "not_called": {"budget": report.not_called_for_budget()},
        "runs": report.runs,
        "isolation": report.isolation,
        "profile": report.profile,
        "answers": answers(report),
        "findings": findings(report),
        "receipts": report.receipts,
        "head": report.head,
    })
}

/// Per tool called, what its best call achieved, and how many tools got an answer that did
/// the job (not an error, told in text or flagged).
fn answers(report: &ProbeReport) -> Value {
    let succeeded = report.answers.values().filter(|a| a.succeeded()).count();
    json!({
        "tools_called": report.answers.len(),
        "tools_answered": succeeded,
        "best": report.answers,
    })
}

/// The protocol findings: text on stdout that is not JSON-RPC, then the conformance
/// findings (`probe::conformance`), each counted with its first occurrence.
fn findings(report: &ProbeReport) -> Value {
    let noise = &report.stdout_noise;
    let stdout = if crate::probe::described_http(&report.target) {
        json!({
            "id": "protocol.stdout_clean",
            "verdict": "skipped",
            "reason": "the server speaks HTTP: its stdout is not the protocol's channel",
            "lines": 0,
            "first": null,
        })
    } else {
        json!({
        "id": "protocol.stdout_clean",
        "verdict": if noise.lines > 0 { "confirmed" } else { "refuted" },
        "reason": match noise.lines {
            0 => "every line the server sent was a JSON-RPC message".to_string(),
            n => format!("{n} line(s) the server sent were text, not JSON-RPC: recorded and skipped"),
        },
        "lines": noise.lines,
        "first": noise.first,
        })
    };
    Value::Array(
        std::iter::once(stdout)
            .chain(report.conformance.iter().cloned())
            .collect(),
    )
}

/// The document's `verdicts`, one object per tool × clause (`tool`, `clause`, `verdict`,
/// `reason`, `evidence`, the contract, what the rule rests on and the tool's isolation),
/// built one at a time.
pub fn cells(report: &ProbeReport) -> impl Iterator<Item = Value> + '_ {
    report.grades.iter().flat_map(|g| &g.cells).map(|cell| {
        let mut value = cell.to_json();
        value["contract"] = json!(report.contract);
        // Whether the cell rests on a declared hint, the tool's intent, a universal limit,
        // the spec's default or a written contract (CONTRACTS.md).
        if let Some(basis) = value["evidence"]["basis"].as_str() {
            value["rests_on"] = json!(vac_contracts::rests_on(basis));
        }
        if let Some(isolated) = report.isolation.get(&cell.tool) {
            value["isolation"] = isolated.clone();
        }
        value
    })
}

/// Writes the `--json` document ([`head`] with its [`cells`]) and a newline, without
/// holding it: its cells are serialised as they are built, in the bytes `serde_json` gives
/// the whole document as one value. A value tree costs about ten times its text (94 MB for
/// the 9 MB document of a server with 3,000 tools), which a hostile server must not buy.
pub fn write_json(report: &ProbeReport, out: &mut impl std::io::Write) -> std::io::Result<()> {
    use serde::ser::{SerializeMap, SerializeSeq};
    struct Doc<'a>(&'a serde_json::Map<String, Value>, &'a ProbeReport);
    struct Cells<'a>(&'a ProbeReport);
    impl serde::Serialize for Doc<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            // The head's keys come in the order a whole document's would (serde_json's
            // maps are sorted), so the bytes are the same.
            let mut map = s.serialize_map(Some(self.0.len()))?;
            for (key, value) in self.0 {
                match key.as_str() {
                    "verdicts" => map.serialize_entry(key, &Cells(self.1))?,
                    _ => map.serialize_entry(key, value)?,
                }
            }
            map.end()
        }
    }
    impl serde::Serialize for Cells<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(None)?;
            for cell in cells(self.0) {
                seq.serialize_element(&cell)?;
            }
            seq.end()
        }
    }
    let head = head(report);
    let Value::Object(head) = &head else {
        unreachable!("the head is an object")
    };
    serde_json::to_writer(&mut *out, &Doc(head, report)).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// The terminal view of a probe: a summary (tools, confirmed cells, tools with no
/// successful call, unstable cells), then the confirmed cells only, each on one line cut to
/// `width` columns; `all` lists every cell instead. One pass over `cells`, keeping only
/// the lines it shows.
pub fn table(doc: &Value, cells: impl Iterator<Item = Value>, all: bool, width: usize) -> String {
    let text = |key: &str| doc[key].as_str().unwrap_or("?").to_string();
    let mut out = String::new();
    let _ = writeln!(out, "target    {}", text("target"));
    let _ = writeln!(
        out,
        "receipts  {} (head {})",
        text("receipts"),
        short(&text("head"))
    );
    if let Some(error) = doc["error"].as_str() {
        let _ = writeln!(out, "ERRORED   the server could not be audited: {error}");
        return out;
    }
    let _ = writeln!(out, "contract  {}", short(&text("contract")));
    for finding in doc["findings"].as_array().into_iter().flatten() {
        if finding["verdict"] == "confirmed" {
            let first = &finding["first"];
            let _ = writeln!(
                out,
                "{}",
                cut(
                    &format!(
                        "stdout    {} ({}): {}; first at seq {}: {:?}",
                        finding["id"].as_str().unwrap_or("?"),
                        finding["verdict"].as_str().unwrap_or("?"),
                        finding["reason"].as_str().unwrap_or(""),
                        first["seq"],
                        first["excerpt"].as_str().unwrap_or("")
                    ),
                    width
                )
            );
        }
    }
    let name = |cell: &Value, key: &str| cell[key].as_str().unwrap_or("?").to_string();
    // Each tool, and whether any of its cells had a successful call (a server with
    // thousands of tools must not cost tools × cells).
    let mut succeeded: std::collections::HashMap<String, bool> = Default::default();
    let mut counts: std::collections::HashMap<String, usize> = Default::default();
    let mut shown = Vec::new();
    let mut budget: std::collections::BTreeSet<String> = Default::default();
    for cell in cells {
        // The server row is graded, but it is not a tool.
        if !vac_contracts::is_server_row(&name(&cell, "tool")) {
            *succeeded.entry(name(&cell, "tool")).or_default() |=
                cell["succeeded"].as_u64().unwrap_or(0) > 0;
        }
        *counts.entry(name(&cell, "verdict")).or_default() += 1;
        if cell["verdict"] == "skipped" && cell["reason"] == "budget" {
            budget.insert(name(&cell, "tool"));
        }
        if all || cell["verdict"] == "confirmed" {
            let line = format!(
                "{:<20} {:<19} {:<10} {}",
                name(&cell, "tool"),
                name(&cell, "clause"),
                name(&cell, "verdict"),
                one_line(&cell)
            );
            shown.push(cut(&line, width));
        }
    }
    let tools = succeeded.len();
    let count = |verdict: &str| counts.get(verdict).copied().unwrap_or(0);
    if let Some(line) = not_called(budget.len(), width) {
        let _ = writeln!(out, "{line}");
    }
    let no_success = succeeded.values().filter(|worked| !**worked).count();
    let _ = writeln!(
        out,
        "summary   {tools} tools: {} confirmed, {} refuted, {} skipped, {} errored cells; \
         {no_success} tools with no successful call; 0 unstable cells (one repetition)",
        count("confirmed"),
        count("refuted"),
        count("skipped"),
        count("errored"),
    );
    let _ = writeln!(out);
    if shown.is_empty() {
        let _ = writeln!(out, "no confirmed cell (--all lists every cell)");
    } else {
        let _ = writeln!(
            out,
            "{:<20} {:<19} {:<10} EVIDENCE",
            "TOOL", "CLAUSE", "VERDICT"
        );
        for line in shown {
            let _ = writeln!(out, "{line}");
        }
    }
    profile_lines(doc, width, &mut out);
    out
}

/// The line that says how many tools a budget left uncalled, when any was.
fn not_called(tools: usize, width: usize) -> Option<String> {
    (tools > 0).then(|| {
        cut(
            &format!(
                "NOT CALLED {tools} tools: a budget ran out before them (--max-tools, --max-calls, or the campaign's [budgets]); no clean bill of health"
            ),
            width,
        )
    })
}

/// The behaviour profile: per tool that did anything the sensors saw, what it did, one
/// line each, whatever its cells say; then how many did nothing seen.
fn profile_lines(doc: &Value, width: usize, out: &mut String) {
    let Some(profile) = doc["profile"].as_object() else {
        return;
    };
    let mut idle = 0;
    let mut lines = Vec::new();
    for (tool, kinds) in profile {
        let Some(kinds) = kinds.as_object().filter(|k| !k.is_empty()) else {
            idle += 1;
            continue;
        };
        let parts: Vec<String> = kinds
            .iter()
            .map(|(kind, seen)| {
                let targets: Vec<&str> = seen["targets"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let more = match seen["omitted"].as_u64() {
                    Some(n) if n > 0 => format!(" and {n} more"),
                    _ => String::new(),
                };
                format!("{kind} {}{more}", targets.join(", "))
            })
            .collect();
        lines.push(cut(&format!("{tool:<20} {}", parts.join("; ")), width));
    }
    if lines.is_empty() && idle == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "\nPROFILE (what each tool was seen to do, whatever its contract)"
    );
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    if idle > 0 {
        let _ = writeln!(out, "{idle} tool(s) did nothing the sensors saw");
    }
}

/// `line` cut to `width` characters, an ellipsis marking the cut; control characters
/// (a server's names may hold terminal escapes) are shown escaped, never sent.
fn cut(line: &str, width: usize) -> String {
    let line: String = line
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = match c.is_control() {
                true => c.escape_default().collect(),
                false => vec![c],
            };
            escaped
        })
        .collect();
    if line.chars().count() <= width || width < 2 {
        return line;
    }
    let mut out: String = line.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// The terminal view of a campaign's map: a summary line per server, then its confirmed
/// cells (every cell's symbol per tool with `all`), each line cut to `width` (but a target
/// that could not be audited, whose reason is shown whole).
pub fn map_summary(map: &vac_analysis::Map, all: bool, width: usize) -> String {
    use vac_analysis::marks::symbol;
    let mut out = String::new();
    let _ = writeln!(out, "== conformance map: {} ==", map.campaign);
    let line = |out: &mut String, text: String| {
        let _ = writeln!(out, "{}", cut(&text, width));
    };
    for server in &map.servers {
        let s = &server.summary;
        line(
            &mut out,
            format!(
                "{}: {} tools, {} kept every promise; {} confirmed cells; {} tools with no \
                 successful call; {} unstable cells",
                server.id, s.tools, s.kept, s.confirmed, s.no_successful_call, s.unstable
            ),
        );
        // Why a target could not be audited is shown whole: it is all there is of it.
        for n in &server.not_audited {
            let _ = writeln!(out, "  not audited: {n}");
        }
        for tool in &server.tools {
            if all {
                let marks: String = tool
                    .cells
                    .iter()
                    .map(|c| format!("{}{}", symbol(c.verdict), if c.stable { " " } else { "~" }))
                    .collect();
                line(&mut out, format!("  {:<24} {marks}", tool.name));
                continue;
            }
            for cell in tool.cells.iter().filter(|c| c.verdict == "confirmed") {
                line(
                    &mut out,
                    format!(
                        "  {} {:<20} {:<19} [{}] {}",
                        symbol(cell.verdict),
                        tool.name,
                        cell.clause,
                        cell.severity.name,
                        cell.reason
                    ),
                );
            }
        }
    }
    if all {
        line(&mut out, format!("  columns: {}", map.clauses.join(" ")));
    }
    out
}

fn one_line(cell: &Value) -> String {
    let evidence = &cell["evidence"];
    let reason = cell["reason"].as_str().unwrap_or_default();
    let Some(effects) = evidence["effects"].as_array() else {
        return reason.to_string();
    };
    let call = |index: &Value| {
        evidence["calls"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| &c["index"] == index)
    };
    let arguments =
        |index: &Value| call(index).map_or(String::new(), |c| c["arguments"].to_string());
    // The server row's one call is its launch: no arguments, no number to show.
    let launch = |index: &Value| call(index).is_some_and(|c| c["arguments"].is_null());
    let effects: Vec<String> = effects
        .iter()
        .map(|e| {
            let excerpt = e["detail"]["excerpt"]
                .as_str()
                .map(|x| format!(" {:?}", x.chars().take(40).collect::<String>()))
                .unwrap_or_default();
            let hash = e["detail"]["blake3"]
                .as_str()
                .map(|h| format!(" b3:{}", &h[..h.len().min(12)]))
                .unwrap_or_default();
            let when = match (
                &e["attribution"]["call"],
                &e["attribution"]["after_response"],
            ) {
                (index @ Value::Number(_), _) if launch(index) => {
                    String::from(" at the server's launch or shutdown")
                }
                (index @ Value::Number(_), _) => format!(" in call #{index} {}", arguments(index)),
                (_, index @ Value::Number(_)) => {
                    format!(" after the response to call #{index} {}", arguments(index))
                }
                _ => String::from(" unattributed"),
            };
            format!(
                "{} {}{}{}{}",
                e["class"].as_str().unwrap_or("?"),
                e["path"].as_str().unwrap_or("?"),
                hash,
                excerpt,
                when
            )
        })
        .collect();
    let subtracted = evidence["control_subtracted"]
        .as_array()
        .map_or(0, Vec::len);
    format!("{}; control subtracted: {subtracted}", effects.join("; "))
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(16)]
}

/// The terminal view of `vac static`: the findings, one line each, then — when there are
/// dynamic verdicts to compare with — the matrix and the disagreements both ways.
pub fn static_table(
    findings: &[vac_analysis::compare::Prediction],
    comparison: Option<&vac_analysis::compare::Comparison>,
    width: usize,
) -> String {
    use vac_analysis::compare::MATRIX;
    use vac_analysis::marks::symbol;
    let mut out = String::new();
    let line = |out: &mut String, text: String| {
        let _ = writeln!(out, "{}", cut(&text, width));
    };
    let mut servers: Vec<&str> = Vec::new();
    for f in findings {
        if !servers.contains(&f.server.as_str()) {
            servers.push(&f.server);
        }
    }
    line(
        &mut out,
        format!(
            "== static findings: {} on {} server{} ==",
            findings.len(),
            servers.len(),
            if servers.len() == 1 { "" } else { "s" }
        ),
    );
    for server in servers {
        line(&mut out, format!("{server}:"));
        for f in findings.iter().filter(|f| f.server == server) {
            line(
                &mut out,
                format!(
                    "  {:<9} {:<7} {:<22} {}",
                    f.rule, f.severity, f.tool, f.message
                ),
            );
        }
    }
    let Some(c) = comparison else {
        return out;
    };
    line(
        &mut out,
        format!(
            "== static vs dynamic: {} against the verdicts ==",
            c.analyser
        ),
    );
    // The matrix's columns (`compare::MATRIX`) at the terminal's widths.
    const WIDTHS: [usize; 9] = [20, 5, 5, 5, 5, 9, 9, 9, 6];
    let row = |cells: &[&str]| {
        let mut text = String::from(" ");
        for ((cell, width), column) in cells.iter().zip(WIDTHS).zip(MATRIX) {
            match column.number {
                true => text.push_str(&format!(" {cell:>width$}")),
                false => text.push_str(&format!(" {cell:<width$}")),
            }
        }
        text
    };
    let shorts: Vec<&str> = MATRIX.iter().map(|c| c.short).collect();
    line(&mut out, row(&shorts));
    for r in &c.rows {
        let cells = r.cells();
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        line(&mut out, row(&cells));
    }
    for (title, list) in [
        ("declaration gaps (static said no, confirmed)", &c.gaps),
        (
            "over-approximations (static said yes, refuted)",
            &c.over_approximations,
        ),
    ] {
        line(&mut out, format!("{title}: {}", list.len()));
        for d in list {
            line(
                &mut out,
                format!(
                    "  {} {} × {} on {}: {} [{}]",
                    symbol(&d.verdict),
                    d.tool,
                    d.class,
                    d.server,
                    d.reason,
                    if d.rules.is_empty() {
                        "no rule fired".to_owned()
                    } else {
                        d.rules.join(", ")
                    }
                ),
            );
        }
    }
    line(
        &mut out,
        format!(
            "predictions not tested (skipped or errored cells): {}",
            c.untested.len()
        ),
    );
    out
}
