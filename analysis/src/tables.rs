//! The rows as polars tables, and their Parquet and CSV files. Column names and meanings
//! are in `TABLES.md`; a test keeps the two in step.

use std::io::Write;

use polars::prelude::{
    Column, CsvWriter, DataFrame, ParquetCompression, ParquetWriter, PolarsError, SerWriter,
    StatisticsOptions,
};

use crate::read::{AnalysisError, compact};
use crate::rows::Rows;

/// The tables, in the order they are documented and written.
pub const TABLES: [&str; 8] = [
    "probes",
    "runs",
    "calls",
    "effects",
    "verdicts",
    "manifests",
    "selftests",
    "profile",
];

/// The tables of the static-vs-dynamic comparison (`TABLES.md`), written after [`TABLES`].
pub const STATIC_TABLES: [&str; 3] = ["static_findings", "static_dynamic", "static_disagreements"];

/// One table of the comparison by name (one of [`STATIC_TABLES`]).
pub fn static_table(
    findings: &[crate::scan::Finding],
    comparison: &crate::compare::Comparison,
    name: &'static str,
) -> Result<DataFrame, AnalysisError> {
    let columns = match name {
        "static_findings" => {
            let f = findings;
            let predicts: Vec<String> = f
                .iter()
                .map(|f| {
                    f.predicts
                        .iter()
                        .map(|c| c.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect();
            let evidence: Vec<String> = f.iter().map(|f| compact(&f.evidence)).collect();
            vec![
                text("server", f.iter().map(|f| f.server.as_str())),
                text("tool", f.iter().map(|f| f.tool.as_str())),
                text("rule", f.iter().map(|f| f.rule.id())),
                text("name", f.iter().map(|f| f.rule.name())),
                text("severity", f.iter().map(|f| f.severity)),
                text("predicts", predicts.iter().map(String::as_str)),
                text("message", f.iter().map(|f| f.message.as_str())),
                text("evidence", evidence.iter().map(String::as_str)),
            ]
        }
        "static_dynamic" => {
            let r = &comparison.rows;
            vec![
                text("class", r.iter().map(|r| r.class.as_str())),
                int("true_positive", r.iter().map(|r| r.true_positive)),
                int("false_positive", r.iter().map(|r| r.false_positive)),
                int("false_negative", r.iter().map(|r| r.false_negative)),
                int("true_negative", r.iter().map(|r| r.true_negative)),
                int("untested_predicted", r.iter().map(|r| r.untested_predicted)),
                int(
                    "untested_unpredicted",
                    r.iter().map(|r| r.untested_unpredicted),
                ),
                Column::new(
                    "precision".into(),
                    r.iter().map(|r| r.precision()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "recall".into(),
                    r.iter().map(|r| r.recall()).collect::<Vec<_>>(),
                ),
            ]
        }
        "static_disagreements" => {
            let lists = [
                ("declaration_gap", &comparison.gaps),
                ("over_approximation", &comparison.over_approximations),
                ("untested_prediction", &comparison.untested),
            ];
            let all: Vec<(&str, &crate::compare::Disagreement)> = lists
                .iter()
                .flat_map(|(kind, list)| list.iter().map(move |d| (*kind, d)))
                .collect();
            let rules: Vec<String> = all.iter().map(|(_, d)| d.rules.join(",")).collect();
            vec![
                text("kind", all.iter().map(|(k, _)| *k)),
                text("server", all.iter().map(|(_, d)| d.server.as_str())),
                text("tool", all.iter().map(|(_, d)| d.tool.as_str())),
                text("class", all.iter().map(|(_, d)| d.class.as_str())),
                text("verdict", all.iter().map(|(_, d)| d.verdict.as_str())),
                text("reason", all.iter().map(|(_, d)| d.reason.as_str())),
                text("rules", rules.iter().map(String::as_str)),
                int("calls", all.iter().map(|(_, d)| d.calls)),
                int("succeeded", all.iter().map(|(_, d)| d.succeeded)),
                opt_text(
                    "probe",
                    all.iter()
                        .map(|(_, d)| d.record.as_ref().map(|r| r.0.as_str())),
                ),
                opt_int(
                    "seq",
                    all.iter().map(|(_, d)| d.record.as_ref().map(|r| r.1)),
                ),
                opt_text(
                    "record_hash",
                    all.iter()
                        .map(|(_, d)| d.record.as_ref().map(|r| r.2.as_str())),
                ),
            ]
        }
        _ => unreachable!("not a static table: {name}"),
    };
    DataFrame::new_infer_height(columns).map_err(|source| AnalysisError::Table {
        table: name,
        source,
    })
}

/// One table of `rows` by name (one of [`TABLES`]).
pub fn table(rows: &Rows, name: &'static str) -> Result<DataFrame, AnalysisError> {
    if name == "effects" {
        // Built as columns while reading.
        return rows.effects.frame().map_err(|source| AnalysisError::Table {
            table: name,
            source,
        });
    }
    let columns = match name {
        "probes" => {
            let p = &rows.probes;
            columns![
                text("probe", p.iter().map(|p| p.dir.as_str())),
                text("server", p.iter().map(|p| p.server.as_str())),
                text("target", p.iter().map(|p| p.target.as_str())),
                opt_text("server_name", p.iter().map(|p| p.server_name.as_deref())),
                opt_text(
                    "server_version",
                    p.iter().map(|p| p.server_version.as_deref()),
                ),
                opt_text("protocol", p.iter().map(|p| p.protocol.as_deref())),
                text("vac_version", p.iter().map(|p| p.vac_version.as_str())),
                int("seed", p.iter().map(|p| p.seed)),
                opt_text(
                    "contract_name",
                    p.iter().map(|p| p.contract_name.as_deref()),
                ),
                opt_text("contract", p.iter().map(|p| p.contract_hash.as_deref())),
                text("head", p.iter().map(|p| p.head.as_str())),
                int("records", p.iter().map(|p| p.records)),
            ]
        }
        "runs" => {
            let r = &rows.runs;
            columns![
                text("probe", r.iter().map(|r| r.probe.as_ref())),
                text("run_id", r.iter().map(|r| r.run_id.as_ref())),
                text("role", r.iter().map(|r| r.role.as_ref())),
                int("repetition", r.iter().map(|r| u64::from(r.repetition))),
                opt_text("tool", r.iter().map(|r| r.tool.as_deref())),
                text("status", r.iter().map(|r| r.status.as_str())),
                text("detail", r.iter().map(|r| r.detail.as_str())),
                int("start_seq", r.iter().map(|r| r.start_seq)),
                opt_int("end_seq", r.iter().map(|r| r.end_seq)),
                int("frames", r.iter().map(|r| r.frames)),
                int("events", r.iter().map(|r| r.events)),
            ]
        }
        "calls" => {
            let c = &rows.calls;
            columns![
                text("probe", c.iter().map(|c| c.probe.as_ref())),
                text("run_id", c.iter().map(|c| c.run_id.as_ref())),
                text("role", c.iter().map(|c| c.role.as_ref())),
                int("seq", c.iter().map(|c| c.seq)),
                int("index", c.iter().map(|c| c.index)),
                text("tool", c.iter().map(|c| c.tool.as_str())),
                text("purpose", c.iter().map(|c| c.purpose.as_str())),
                opt_int("repeat_of", c.iter().map(|c| c.repeat_of)),
                text("arguments", c.iter().map(|c| c.arguments.as_str())),
                text("status", c.iter().map(|c| c.status.as_str())),
                opt_text("error", c.iter().map(|c| c.error.as_deref())),
                opt_int("requested_ns", c.iter().map(|c| c.requested_ns)),
                opt_int("answered_ns", c.iter().map(|c| c.answered_ns)),
            ]
        }
        "verdicts" => {
            let v = &rows.verdicts;
            let servers: std::collections::HashMap<&str, &str> = rows
                .probes
                .iter()
                .map(|p| (p.dir.as_str(), p.server.as_str()))
                .collect();
            columns![
                text("probe", v.iter().map(|v| v.probe.as_ref())),
                text(
                    "server",
                    v.iter()
                        .map(|v| servers.get(v.probe.as_ref()).copied().unwrap_or("")),
                ),
                text("run_id", v.iter().map(|v| v.run_id.as_ref())),
                int("seq", v.iter().map(|v| v.seq)),
                text("record_hash", v.iter().map(|v| &*v.record_hash)),
                text("tool", v.iter().map(|v| v.tool.as_str())),
                text("clause", v.iter().map(|v| v.clause.as_str())),
                text("verdict", v.iter().map(|v| v.verdict)),
                text(
                    "severity",
                    v.iter()
                        .map(|v| crate::severity::of(&v.clause, v.verdict).name),
                ),
                text("reason", v.iter().map(|v| &*v.reason)),
                opt_int("calls", v.iter().map(|v| v.calls)),
                opt_int("succeeded", v.iter().map(|v| v.succeeded)),
                text("contract", v.iter().map(|v| &*v.contract)),
                opt_text("basis", v.iter().map(|v| v.basis.as_deref())),
                text("evidence", v.iter().map(|v| v.evidence.get())),
            ]
        }
        "manifests" => {
            let m = &rows.manifests;
            columns![
                text("probe", m.iter().map(|m| m.probe.as_ref())),
                text("run_id", m.iter().map(|m| m.run_id.as_ref())),
                int("seq", m.iter().map(|m| m.seq)),
                text("phase", m.iter().map(|m| m.phase.as_str())),
                int("position", m.iter().map(|m| m.position)),
                text("tool", m.iter().map(|m| m.tool.as_str())),
                opt_text("description", m.iter().map(|m| m.description.as_deref())),
                text("annotations", m.iter().map(|m| m.annotations.as_str())),
                text("input_schema", m.iter().map(|m| m.input_schema.as_str())),
                opt_bool("complete", m.iter().map(|m| m.complete)),
            ]
        }
        "selftests" => {
            let s = &rows.selftests;
            columns![
                text("probe", s.iter().map(|s| s.probe.as_ref())),
                text("run_id", s.iter().map(|s| s.run_id.as_ref())),
                int("seq", s.iter().map(|s| s.seq)),
                text("sensor", s.iter().map(|s| s.sensor.as_ref())),
                text("status", s.iter().map(|s| s.status.as_str())),
                text("detail", s.iter().map(|s| s.detail.as_str())),
            ]
        }
        "profile" => {
            let p = &rows.profile;
            columns![
                text("probe", p.iter().map(|p| p.probe.as_ref())),
                text("run_id", p.iter().map(|p| p.run_id.as_ref())),
                int("seq", p.iter().map(|p| p.seq)),
                text("tool", p.iter().map(|p| p.tool.as_str())),
                text("kind", p.iter().map(|p| p.kind.as_str())),
                text("target", p.iter().map(|p| p.target.as_str())),
                int("distinct", p.iter().map(|p| p.distinct)),
            ]
        }
        _ => unreachable!("not a table: {name}"),
    };
    DataFrame::new_infer_height(columns).map_err(|source| AnalysisError::Table {
        table: name,
        source,
    })
}

/// A column to build: the columns of a table are built side by side, on every core.
type Build<'a> = Box<dyn FnOnce() -> Column + Send + 'a>;

/// The columns, each expression built on its own (in parallel), in order.
macro_rules! columns {
    ($($column:expr),* $(,)?) => {
        parallel(vec![$(Box::new(move || $column) as Build<'_>),*])
    };
}
use columns;

fn parallel(builds: Vec<Build<'_>>) -> Vec<Column> {
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(builds.len());
    if workers <= 1 {
        return builds.into_iter().map(|build| build()).collect();
    }
    let count = builds.len();
    let queue = std::sync::Mutex::new(builds.into_iter().enumerate());
    let mut built: Vec<(usize, Column)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some((i, build)) = next else { break };
                        mine.push((i, build()));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    built.sort_by_key(|(i, _)| *i);
    debug_assert_eq!(built.len(), count);
    built.into_iter().map(|(_, column)| column).collect()
}

fn text<'a>(name: &str, values: impl Iterator<Item = &'a str>) -> Column {
    Column::new(name.into(), values.collect::<Vec<_>>())
}

fn opt_text<'a>(name: &str, values: impl Iterator<Item = Option<&'a str>>) -> Column {
    Column::new(name.into(), values.collect::<Vec<_>>())
}

fn int(name: &str, values: impl Iterator<Item = u64>) -> Column {
    Column::new(name.into(), values.collect::<Vec<_>>())
}

fn opt_int(name: &str, values: impl Iterator<Item = Option<u64>>) -> Column {
    Column::new(name.into(), values.collect::<Vec<_>>())
}

fn opt_bool(name: &str, values: impl Iterator<Item = Option<bool>>) -> Column {
    Column::new(name.into(), values.collect::<Vec<_>>())
}

/// A table as CSV: header line, `\n` line ends, polars' quoting.
pub fn write_csv(df: &mut DataFrame, out: &mut impl Write) -> Result<(), PolarsError> {
    CsvWriter::new(out).finish(df)
}

/// A table as Parquet with fixed settings, so the same rows give the same bytes:
/// zstd pages at its default level, no statistics, one row group per 65,536 rows, columns written in
/// order.
pub fn write_parquet(df: &mut DataFrame, out: &mut impl Write) -> Result<(), PolarsError> {
    ParquetWriter::new(out)
        .with_compression(ParquetCompression::Zstd(None))
        .with_statistics(StatisticsOptions::empty())
        .with_row_group_size(Some(65_536))
        .set_parallel(false)
        .finish(df)
        .map(|_| ())
}
