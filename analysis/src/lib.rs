//! Analysis: receipts → tables → conformance maps.
//!
//! [`load`] reads a receipt directory — one probe, or a campaign (a directory whose
//! subdirectories are probes) — verifying each sealed chain in the same pass, into
//! [`Rows`]; [`tables::table`] turns them into polars tables (`TABLES.md`); [`map::build`]
//! folds the verdicts into the server × tool × clause map; [`render::render`] writes it
//! as HTML (with an SVG heat map), Markdown, JSON, CSV, Parquet and SARIF 2.1.0.
//! [`scan`] is the static analyser of manifests (`RULES.md`), and [`compare`] sets any
//! static analyser's predictions against the map: the static-vs-dynamic comparison, which
//! the map carries too.
//!
//! The same receipts give byte-identical outputs: rows keep log order, maps keep
//! first-seen order, nothing reads a clock, and Parquet is written with fixed settings.
//! This crate reads receipts only: it never depends on the harness, and it is the only
//! crate that links polars.

pub mod compare;
pub mod html;
pub mod map;
pub mod marks;
mod read;
pub mod render;
pub mod rows;
pub mod sarif;
pub mod scan;
pub mod severity;
pub mod tables;
pub mod triage;

use std::path::Path;

pub use map::Map;
pub use read::{AnalysisError, probe_dirs, read, server_id};
pub use render::{Format, RenderOptions, render};
pub use rows::Rows;

/// The name the comparison gives vac's own rules.
pub const STATIC_ANALYSER: &str = "vac static";

/// What a receipt directory holds, read and folded into its map.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub rows: Rows,
    pub map: Map,
    /// vac's static findings on the servers' recorded manifests (`RULES.md`).
    pub findings: Vec<scan::Finding>,
    /// Those findings set against the map's verdicts.
    pub comparison: compare::Comparison,
}

/// Reads and verifies `dir`, and builds its map; `campaign` names the map (by default,
/// the directory's file name).
pub fn load(dir: &Path, campaign: Option<&str>) -> Result<Analysis, AnalysisError> {
    let rows = read::read(dir)?;
    let name = campaign.map(str::to_string).unwrap_or_else(|| {
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "receipts".to_string())
    });
    let map = map::build(&rows, &name);
    let findings = scan::scan_rows(&rows);
    let predictions: Vec<compare::Prediction> = findings.iter().map(Into::into).collect();
    let comparison = compare::compare(&map, &predictions, STATIC_ANALYSER);
    Ok(Analysis {
        rows,
        map,
        findings,
        comparison,
    })
}
