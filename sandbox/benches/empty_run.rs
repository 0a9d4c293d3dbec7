//! Setup plus teardown of an empty run (`/bin/true`): namespaces, overlay root, cgroup,
//! spawn, stop, witness walk, unmount. Needs root.
//!
//! `cargo bench -p vac-sandbox --bench empty_run`

use std::time::{Duration, Instant};

use vac_sandbox::Sandbox;

const RUNS: usize = 50;

fn main() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED empty_run: needs root");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sandbox = Sandbox::builder(["/bin/true"])
        .process_sensor(false)
        .build()
        .unwrap();
    let mut samples: Vec<Duration> = runtime.block_on(async {
        let mut samples = Vec::with_capacity(RUNS);
        for _ in 0..RUNS + 5 {
            let start = Instant::now();
            let mut running = sandbox.spawn().unwrap();
            running.wait().await;
            let stopped = running.stop().unwrap();
            stopped.witness().collect().unwrap().require_live().unwrap();
            stopped.remove().unwrap();
            samples.push(start.elapsed());
        }
        samples.split_off(5) // the first runs warm caches
    });
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64;
    println!(
        "empty run (spawn + wait + stop + witness + remove), {RUNS} runs: min {:.1} ms, median {:.1} ms, mean {:.1} ms, p90 {:.1} ms",
        ms(samples[0]),
        ms(samples[RUNS / 2]),
        mean,
        ms(samples[RUNS * 9 / 10])
    );
}
