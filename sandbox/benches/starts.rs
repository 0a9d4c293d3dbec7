//! The distribution of a sandbox's start: from `spawn` to the program's exec (the lab,
//! the overlay root, the cgroup, the network namespace with its sinkhole and the sensors'
//! self-tests on the way), over many starts. Needs root.
//!
//! `cargo bench -p vac-sandbox --bench starts` (`VAC_BENCH_STARTS`, 1,000 by default)

use std::time::{Duration, Instant};

use vac_sandbox::Sandbox;

/// A start this slow is a stall: the issue that asked for this bench saw 1.7 % of starts
/// wait 1,000–1,030 ms and none between 400 and 1,000 ms.
const STALL: Duration = Duration::from_millis(400);

fn main() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED starts: needs root");
        return;
    }
    let starts: usize = std::env::var("VAC_BENCH_STARTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sandbox = Sandbox::builder(["/bin/true"]).build().unwrap();
    let mut samples: Vec<Duration> = runtime.block_on(async {
        let mut samples = Vec::with_capacity(starts);
        for _ in 0..starts + 5 {
            let start = Instant::now();
            let mut running = sandbox.spawn().unwrap();
            samples.push(start.elapsed());
            running.wait().await;
            running.stop().unwrap().remove().unwrap();
        }
        samples.split_off(5) // the first starts warm caches
    });
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let at = |q: f64| ms(samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)]);
    let stalls = samples.iter().filter(|d| **d > STALL).count();
    println!(
        "sandbox start (spawn to exec), {} starts: min {:.1} ms, median {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms; over {} ms: {stalls}",
        samples.len(),
        ms(samples[0]),
        at(0.5),
        at(0.9),
        at(0.99),
        ms(samples[samples.len() - 1]),
        STALL.as_millis()
    );
    let mut histogram = std::collections::BTreeMap::new();
    for sample in &samples {
        *histogram.entry(sample.as_millis() / 50 * 50).or_insert(0) += 1;
    }
    for (bucket, count) in histogram {
        println!("  {bucket:>5}–{:<5} ms {count}", bucket + 50);
    }
}
