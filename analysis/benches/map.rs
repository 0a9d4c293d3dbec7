//! `cargo bench -p vac-analysis`: read + tables + map over a synthetic campaign of
//! 1,000,000 effect rows and 100,000 verdict cells (100 servers × 100 tools × 10 clauses,
//! 100 effect events per tool's run), written through the real receipt writer.
//!
//! Prints, for each pass and the median of the passes: verify-and-read, the seven polars
//! tables, the map, and the HTML page (rendered in memory), with the CPU time of the pass
//! beside its wall time; and the peak resident memory of the passes (VmHWM, reset after
//! the campaign is written). `VAC_BENCH_PASSES` sets the passes (default 5: the machine's
//! noise moves a single pass by a third); `VAC_BENCH_DIR` chooses where the campaign is
//! written (default: a temporary directory under /dev/shm when present).

#[path = "../tests/synth/mod.rs"]
mod synth;

use std::time::{Duration, Instant};

fn main() {
    let shape = synth::Shape {
        servers: 100,
        tools: 100,
        effects_per_tool: 100,
    };
    let base = std::env::var_os("VAC_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            let shm = std::path::Path::new("/dev/shm");
            if shm.is_dir() {
                shm.to_path_buf()
            } else {
                std::env::temp_dir()
            }
        });
    let tmp = tempfile::tempdir_in(base).expect("a directory for the synthetic campaign");
    let started = Instant::now();
    synth::campaign(tmp.path(), shape);
    let bytes: u64 = walk_size(tmp.path());
    println!(
        "synthetic campaign: {} servers × {} tools × 10 clauses = {} cells, {} effect rows, {:.1} MB of receipts, written in {:.1} s",
        shape.servers,
        shape.tools,
        shape.servers * shape.tools * 10,
        shape.servers * shape.tools * shape.effects_per_tool,
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    reset_peak();
    // The chain check alone, for scale: what any reader of the receipts must pay.
    let t = Instant::now();
    for dir in vac_analysis::probe_dirs(tmp.path()).unwrap() {
        vac_receipts::verify(&dir, &Default::default()).unwrap();
    }
    println!(
        "verify alone (vac verify of every probe): {:.3} s",
        t.elapsed().as_secs_f64()
    );

    let count: usize = std::env::var("VAC_BENCH_PASSES")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(5);
    let mut passes = Vec::new();
    for pass in 1..=count {
        let cpu0 = cpu_seconds();
        let t0 = Instant::now();
        let rows = vac_analysis::read(tmp.path()).expect("the campaign reads");
        let t1 = Instant::now();
        let mut table_rows = 0;
        for name in vac_analysis::tables::TABLES {
            table_rows += vac_analysis::tables::table(&rows, name)
                .expect("table")
                .height();
        }
        let t2 = Instant::now();
        let map = vac_analysis::map::build(&rows, "bench");
        let t3 = Instant::now();
        let html = vac_analysis::html::html(&map, None);
        let t4 = Instant::now();
        let cpu = cpu_seconds() - cpu0;
        assert_eq!(rows.effects.len(), 1_000_000);
        assert_eq!(map.cells().count(), 100_000);
        let times = [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0];
        println!(
            "pass {pass}: read+verify {:.3} s, tables {:.3} s ({table_rows} rows), map {:.3} s, html {:.3} s ({:.1} MB); total {:.3} s wall, {cpu:.2} s CPU",
            times[0].as_secs_f64(),
            times[1].as_secs_f64(),
            times[2].as_secs_f64(),
            times[3].as_secs_f64(),
            html.len() as f64 / 1e6,
            times[4].as_secs_f64()
        );
        passes.push(times);
    }
    let median = |i: usize| {
        let mut v: Vec<Duration> = passes.iter().map(|t| t[i]).collect();
        v.sort();
        v[v.len() / 2].as_secs_f64()
    };
    println!(
        "median: read+verify {:.3} s, tables {:.3} s, map {:.3} s, html {:.3} s; read + tables + map {:.3} s; total {:.3} s",
        median(0),
        median(1),
        median(2),
        median(3),
        median(0) + median(1) + median(2),
        median(4)
    );
    println!("peak resident memory of the passes: {:.0} MB", peak_mb());
}

/// User and system CPU time of the process so far (all threads), in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which ends at the last ')': utime and stime are
    // the 14th and 15th fields of the line, the 12th and 13th after the name.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: Vec<f64> = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse().ok())
        .collect();
    // Linux reports these in USER_HZ, 100 on every architecture vac runs on.
    ticks.iter().sum::<f64>() / 100.0
}

fn walk_size(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            walk_size(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

/// Resets VmHWM (Linux: `5` to `/proc/self/clear_refs`).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}
