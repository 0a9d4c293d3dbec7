//! Writing the outputs: every format rendered in memory first, then written beside its
//! final name and renamed into place, so a failure leaves no output that looks complete.

use crate::marks::{spoken, symbol};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use vac_contracts::touched::Touched;

use crate::Analysis;
use crate::compare::Comparison;
use crate::map::{Map, Summary, VERDICTS};
use crate::read::AnalysisError;
use crate::tables::{self, STATIC_TABLES, TABLES};

/// An output format of `vac report --out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    Html,
    Md,
    Json,
    Csv,
    Parquet,
    Sarif,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::Html,
        Format::Md,
        Format::Json,
        Format::Csv,
        Format::Parquet,
        Format::Sarif,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Md => "md",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Parquet => "parquet",
            Format::Sarif => "sarif",
        }
    }
}

impl FromStr for Format {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// A `--format` that names no format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {0:?} (one of {names})", names = Format::ALL.map(Format::name).join(", "))]
pub struct UnknownFormat(pub String);

/// What to render and how results name their files.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    pub formats: Vec<Format>,
    /// The directory read, as the user named it, when that is a relative path: SARIF
    /// locations in receipt logs are `<source_root>/<probe>/receipts.jsonl`.
    pub source_root: String,
    /// The vac version that renders (SARIF `tool.driver.version`).
    pub version: String,
    /// The confirmed cells against a baseline and suppressions (`vac report --baseline`,
    /// `--suppress`): the JSON's `triage`, a Markdown section, SARIF `baselineState` and
    /// `suppressions`.
    pub triage: Option<crate::triage::Triaged>,
}

/// Every file of `formats`, as (relative path, bytes), in a fixed order.
pub fn files(
    analysis: &Analysis,
    options: &RenderOptions,
) -> Result<Vec<(String, Vec<u8>)>, AnalysisError> {
    let mut formats = options.formats.clone();
    formats.sort();
    formats.dedup();
    let mut out = Vec::new();
    for format in formats {
        match format {
            Format::Html => out.push((
                "map.html".into(),
                crate::html::html(&analysis.map, Some(&analysis.comparison)).into_bytes(),
            )),
            Format::Md => {
                let mut md = markdown(&analysis.map, Some(&analysis.comparison));
                if let Some(triage) = &options.triage {
                    md.push_str("\n## Against the baseline and suppressions\n\n```\n");
                    for line in triage.lines() {
                        md.push_str(&line);
                        md.push('\n');
                    }
                    md.push_str("```\n");
                }
                out.push(("map.md".into(), md.into_bytes()));
            }
            Format::Json => {
                let mut json = map_json(analysis);
                if let Some(triage) = &options.triage {
                    json["triage"] = triage.to_json();
                }
                out.push(("map.json".into(), pretty(&json)));
            }
            Format::Sarif => {
                let log = crate::sarif::sarif(
                    &analysis.map,
                    &analysis.rows,
                    &options.source_root,
                    &options.version,
                );
                let mut log = log;
                if let Some(triage) = &options.triage {
                    triage.annotate_sarif(&mut log);
                }
                out.push(("map.sarif".into(), pretty(&log)));
            }
            Format::Csv => {
                out.push(("map.csv".into(), map_csv(&analysis.map).into_bytes()));
                table_files(analysis, "csv", tables::write_csv, &mut out)?;
            }
            Format::Parquet => table_files(analysis, "parquet", tables::write_parquet, &mut out)?,
        }
    }
    Ok(out)
}

/// Every table — the eight of the rows (`profile` only when the receipts hold one), then the three of the static-vs-dynamic comparison —
/// written by `write` as `tables/<name>.<extension>`.
fn table_files(
    analysis: &Analysis,
    extension: &str,
    write: fn(
        &mut polars::prelude::DataFrame,
        &mut Vec<u8>,
    ) -> Result<(), polars::prelude::PolarsError>,
    out: &mut Vec<(String, Vec<u8>)>,
) -> Result<(), AnalysisError> {
    let names = TABLES
        .iter()
        .map(|n| (*n, false))
        .chain(STATIC_TABLES.iter().map(|n| (*n, true)));
    for (name, comparison) in names {
        // Receipts written before profiles were recorded hold none: no table, rather
        // than an empty one that would say every tool did nothing.
        if name == "profile" && analysis.rows.profile.is_empty() {
            continue;
        }
        let mut df = match comparison {
            false => tables::table(&analysis.rows, name)?,
            true => tables::static_table(&analysis.findings, &analysis.comparison, name)?,
        };
        let mut bytes = Vec::new();
        write(&mut df, &mut bytes).map_err(|source| AnalysisError::Table {
            table: name,
            source,
        })?;
        out.push((format!("tables/{name}.{extension}"), bytes));
    }
    Ok(())
}

/// Renders `formats` into `dir` (created if absent); returns the files written.
///
/// Each file is written and synced as `NAME.partial`, then all are renamed into place.
/// On any failure every file of this render is removed again — the staged ones and any
/// already renamed — so a map that is there is a whole one.
pub fn render(
    analysis: &Analysis,
    dir: &Path,
    options: &RenderOptions,
) -> Result<Vec<PathBuf>, AnalysisError> {
    let files = files(analysis, options)?;
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| AnalysisError::Write { path, source }
    };
    std::fs::create_dir_all(dir.join("tables")).map_err(write_err(dir))?;
    let mut made: Vec<PathBuf> = Vec::new();
    let result = (|| {
        let mut staged = Vec::new();
        for (name, bytes) in &files {
            let partial = dir.join(format!("{name}.partial"));
            made.push(partial.clone());
            let mut file = std::fs::File::create(&partial).map_err(write_err(&partial))?;
            file.write_all(bytes).map_err(write_err(&partial))?;
            file.sync_all().map_err(write_err(&partial))?;
            staged.push((partial, dir.join(name)));
        }
        let mut written = Vec::new();
        for (partial, path) in staged {
            std::fs::rename(&partial, &path).map_err(write_err(&path))?;
            made.push(path.clone());
            written.push(path);
        }
        Ok(written)
    })();
    if result.is_err() {
        for path in &made {
            let _ = std::fs::remove_file(path);
        }
    }
    // An empty tables/ (no csv or parquet asked for, or a failed render) is not an output.
    let _ = std::fs::remove_dir(dir.join("tables"));
    result
}

/// `map.json`: the map, then vac's static findings and their comparison with it.
pub fn map_json(analysis: &Analysis) -> serde_json::Value {
    let mut json = crate::map::to_json(&analysis.map);
    json["static_findings"] = analysis.findings.iter().map(|f| f.to_json()).collect();
    json["static_dynamic"] = analysis.comparison.to_json();
    json
}

/// A JSON document as the map's files hold it: indented, with a final newline.
pub fn pretty(value: &serde_json::Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Summary then one matrix per server (tools × clauses).
pub fn markdown(map: &Map, comparison: Option<&Comparison>) -> String {
    let mut md = String::new();
    md.push_str(&format!("# Conformance map: {}\n\n", map.campaign));
    md.push_str(
        "Legend: ✗ confirmed (the tool broke the promise) · ✓ refuted (called, live sensors, \
         nothing forbidden seen) · – skipped · ! errored · · not graded. A cell marked ~ \
         differs between repetitions.\n\n",
    );
    md.push_str("## Summary\n\n");
    let labels: Vec<&str> = Summary::COLUMNS.iter().map(|(_, label)| *label).collect();
    md.push_str(&format!("| server | {} |\n", labels.join(" | ")));
    md.push_str(&format!("|---|{}\n", "---:|".repeat(labels.len())));
    let row = |name: &str, s: &Summary| {
        let values: Vec<String> = s.values().iter().map(u64::to_string).collect();
        format!("| {name} | {} |\n", values.join(" | "))
    };
    for s in &map.servers {
        md.push_str(&row(&md_escape(&s.id), &s.summary));
    }
    let totals = map.totals();
    md.push_str(&row("**all**", &totals));
    if totals.confirmed > 0 {
        md.push_str(
            "\nConfirmed cells by what they touched (the most serious of each cell's effects):\n\n",
        );
        md.push_str("| touched | confirmed cells |\n|---|---:|\n");
        for (t, n) in Touched::ALL.iter().zip(totals.touched) {
            md.push_str(&format!("| {} | {n} |\n", t.name()));
        }
    }
    for s in &map.servers {
        md.push_str(&format!("\n## {}\n\n", md_escape(&s.id)));
        if let Some(name) = &s.name {
            md.push_str(&format!(
                "Server `{}` {}; protocol {}; probes: {}.\n\n",
                md_escape(name),
                s.version.as_deref().map(md_escape).unwrap_or_default(),
                md_escape(&spoken(s)),
                s.probes.len()
            ));
        }
        for n in &s.not_audited {
            md.push_str(&format!("Not audited: {}.\n\n", md_escape(&n.to_string())));
        }
        if s.tools.is_empty() {
            continue;
        }
        md.push_str("| tool | calls ok |");
        for c in &map.clauses {
            md.push_str(&format!(" {c} |"));
        }
        md.push_str("\n|---|---:|");
        for _ in &map.clauses {
            md.push_str(":---:|");
        }
        md.push('\n');
        for t in &s.tools {
            md.push_str(&format!(
                "| {} | {}/{} |",
                md_escape(&t.name),
                t.succeeded,
                t.calls
            ));
            for c in &t.cells {
                let mark = if c.stable { "" } else { "~" };
                md.push_str(&format!(" {}{mark} |", symbol(c.verdict)));
            }
            md.push('\n');
        }
        let confirmed: Vec<_> = s
            .tools
            .iter()
            .flat_map(|t| t.cells.iter().map(move |c| (t, c)))
            .filter(|(_, c)| c.verdict == "confirmed")
            .collect();
        if !confirmed.is_empty() {
            md.push_str("\nConfirmed:\n\n");
            for (t, c) in confirmed {
                let r = c.records.iter().find(|r| r.verdict == "confirmed");
                md.push_str(&format!(
                    "- **{} × {}** ({}{}): {}{}\n",
                    md_escape(&t.name),
                    c.clause,
                    c.severity.name,
                    c.touched
                        .map(|t| format!(", touched {}", t.name()))
                        .unwrap_or_default(),
                    md_escape(&c.reason),
                    r.map(|r| format!(
                        " — receipt seq {} `{}`",
                        r.seq,
                        &r.hash[..16.min(r.hash.len())]
                    ))
                    .unwrap_or_default()
                ));
            }
        }
        profile_markdown(&mut md, s);
    }
    if let Some(comparison) = comparison {
        static_markdown(&mut md, comparison);
    }
    md
}

/// A server's behaviour profile, when its receipts recorded one: per tool that did
/// anything, what; then how many did nothing the sensors saw.
fn profile_markdown(md: &mut String, s: &crate::map::ServerMap) {
    let profiled = s.profiled();
    if profiled.is_empty() {
        return;
    }
    md.push_str(
        "
Seen to do, whatever the contract (behaviour profile):

",
    );
    let mut idle = 0;
    for (tool, lines) in &profiled {
        if lines.is_empty() {
            idle += 1;
            continue;
        }
        let parts: Vec<String> = lines
            .iter()
            .map(|l| {
                let targets: Vec<String> = l.targets.iter().map(|t| md_escape(t)).collect();
                let more = match l.omitted() {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                format!("{} {}{more}", md_escape(&l.kind), targets.join(", "))
            })
            .collect();
        md.push_str(&format!(
            "- **{}**: {}\n",
            md_escape(tool),
            parts.join("; ")
        ));
    }
    if idle > 0 {
        md.push_str(&format!("- {idle} did nothing the sensors saw\n"));
    }
}

/// The static-vs-dynamic section: the matrix, then the disagreements both ways.
fn static_markdown(md: &mut String, c: &Comparison) {
    md.push_str(&format!(
        "\n## Static vs dynamic\n\nThe static analyser `{}` ({} findings, rules in \
         `analysis/RULES.md`) as a predictor of what the tools did: per clause, whether a \
         finding predicts it against the cell's verdict. Cells not tested (skipped or errored) \
         are counted apart, never as negatives.\n\n",
        md_escape(&c.analyser),
        c.findings
    ));
    let columns = crate::compare::MATRIX;
    let labels: Vec<&str> = columns.iter().map(|c| c.label).collect();
    let aligns: Vec<&str> = columns
        .iter()
        .map(|c| if c.number { "---:" } else { "---" })
        .collect();
    md.push_str(&format!(
        "| {} |\n|{}|\n",
        labels.join(" | "),
        aligns.join("|")
    ));
    for r in &c.rows {
        md.push_str(&format!("| {} |\n", r.cells().join(" | ")));
    }
    let lists = [
        (
            "Declaration gaps",
            "static predicted nothing, the effect was confirmed",
            &c.gaps,
        ),
        (
            "Over-approximations",
            "static predicted it, the tool was seen not to do it (refuted: successful calls, live sensors)",
            &c.over_approximations,
        ),
        (
            "Predictions not tested",
            "static predicted it, the cell was not graded by a successful call",
            &c.untested,
        ),
    ];
    for (title, what, list) in lists {
        md.push_str(&format!("\n### {title} ({})\n\n{what}.\n\n", list.len()));
        for d in list {
            md.push_str(&format!(
                "- **{} × {}** on {} — {}: {}; rules: {}{}\n",
                md_escape(&d.tool),
                d.class,
                md_escape(&d.server),
                d.verdict,
                md_escape(&d.reason),
                if d.rules.is_empty() {
                    "none".to_owned()
                } else {
                    d.rules.join(", ")
                },
                d.record
                    .as_ref()
                    .map(|(_, seq, hash)| format!(
                        " — receipt seq {seq} `{}`",
                        &hash[..16.min(hash.len())]
                    ))
                    .unwrap_or_default()
            ));
        }
    }
}

fn md_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '|' | '*' | '_' | '`' | '[' | ']' | '<' | '>' | '#' | '\\' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            ch => out.push(ch),
        }
    }
    out
}

/// One line per cell, and one per probe that could not be audited (verdict
/// `not_audited`, its status, exit and detail as the reason).
pub fn map_csv(map: &Map) -> String {
    let mut csv = String::from("server,tool,clause,verdict,severity,stable,");
    csv.push_str(&VERDICTS.join(","));
    csv.push_str(",calls,succeeded,reason\n");
    for (s, t, c) in map.cells() {
        let fields = [
            s.id.clone(),
            t.name.clone(),
            c.clause.clone(),
            c.verdict.to_string(),
            c.severity.name.to_string(),
            c.stable.to_string(),
            c.counts[0].to_string(),
            c.counts[1].to_string(),
            c.counts[2].to_string(),
            c.counts[3].to_string(),
            t.calls.to_string(),
            t.succeeded.to_string(),
            c.reason.to_string(),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        csv.push_str(&line.join(","));
        csv.push('\n');
    }
    for s in &map.servers {
        for n in &s.not_audited {
            let reason = n.to_string();
            let mut fields = vec![s.id.clone(), String::new(), String::new()];
            fields.push("not_audited".to_string());
            fields.extend(["none", "true", "0", "0", "0", "0", "0", "0"].map(String::from));
            fields.push(reason);
            let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            csv.push_str(&line.join(","));
            csv.push('\n');
        }
    }
    csv
}

fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}
