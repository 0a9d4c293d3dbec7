//! `vac verify`: a receipt directory's chain, blobs and verdicts checked.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::Exit;
use clap::Args;

#[derive(Args)]
pub(crate) struct VerifyArgs {
    /// The receipt directory.
    dir: PathBuf,
}

/// The chain and blobs, then every verdict record re-derived from the recorded evidence.
pub(crate) fn run_verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    // Not receipts at all is a usage error; receipts that do not verify are BROKEN (4). A
    // probe directory whose log is gone still has its blobs, and is BROKEN.
    let dir = args.dir.display();
    if !args.dir.is_dir() {
        eprintln!("vac: {dir}: no such directory");
        return Ok(Exit::Usage.into());
    }
    if crate::campaign::is_campaign(&args.dir) {
        return verify_campaign(&args.dir);
    }
    if !vac_receipts::is_receipt_dir(&args.dir) && !args.dir.join("blobs").is_dir() {
        eprintln!(
            "vac: {dir}: not a receipt directory (no {} or {})",
            vac_receipts::LOG_FILE,
            vac_receipts::PACKED_LOG_FILE
        );
        return Ok(Exit::Usage.into());
    }
    Ok(verify_probe(&args.dir).into())
}

/// A campaign directory: its own chain, then every probe it lists — each probe's chain,
/// its head against the one recorded, and its verdicts re-graded. Probes are checked on
/// every core at once and reported in the campaign's order.
pub(crate) fn verify_campaign(dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let (campaign, members) = match crate::campaign::verified_members(dir) {
        Ok(verified) => verified,
        Err(error) => {
            println!("{error}");
            return Ok(Exit::Broken.into());
        }
    };
    let mut listed = Vec::new();
    for member in members.iter().filter(|m| m.role == "probe") {
        match &member.head {
            Some(head) => listed.push((dir.join(&member.dir), head.as_str())),
            None => println!(
                "{}: {} rep {}: no sealed log ({}): {}",
                dir.display(),
                member.target,
                member.repetition,
                member.status,
                member.detail
            ),
        }
    }
    let checked: Vec<Checked> = {
        use rayon::prelude::*;
        listed
            .par_iter()
            .map(|(path, head)| check_probe(path, Some(head)))
            .collect()
    };
    let mut worst = Exit::Clean;
    let mut total = Totals::default();
    for probe in &checked {
        print!("{}", probe.output);
        if probe.exit != Exit::Clean {
            worst = Exit::Broken;
        }
        total.add(probe);
    }
    if worst == Exit::Clean {
        println!(
            "{}: campaign chain verifies (head {}); {} probes verify and re-grade, each with the head the chain lists",
            dir.display(),
            campaign.head,
            checked.len()
        );
        println!("{}", total.line(started.elapsed()));
    }
    Ok(worst.into())
}

/// One probe's chain and blobs, then every verdict record re-derived from its evidence.
pub(crate) fn verify_probe(path: &std::path::Path) -> Exit {
    let checked = check_probe(path, None);
    print!("{}", checked.output);
    checked.exit
}

/// What checking one probe directory printed, decided and cost.
struct Checked {
    exit: Exit,
    output: String,
    bytes: u64,
    timings: crate::probe::CheckTimings,
}

/// Checks one probe: its chain (and head, when the campaign lists one), then its verdicts
/// re-graded; the lines it would print are returned, not printed.
fn check_probe(path: &std::path::Path, listed_head: Option<&str>) -> Checked {
    use std::fmt::Write;
    let dir = path.display().to_string();
    let mut out = String::new();
    let regraded = match crate::probe::check_verdicts(path) {
        Ok(regraded) => regraded,
        Err(crate::probe::ReplayError::Broken { source, .. }) => {
            let _ = writeln!(out, "{dir}: BROKEN: {source}");
            return Checked::broken(out);
        }
        Err(error) => {
            let _ = writeln!(out, "{dir}: BROKEN: {:#}", anyhow::Error::new(error));
            return Checked::broken(out);
        }
    };
    let chain = &regraded.chain;
    if let Some(head) = listed_head.filter(|h| chain.head.to_string() != *h) {
        let _ = writeln!(
            out,
            "{dir}: BROKEN: its head is {}, the campaign log lists {head}",
            chain.head
        );
        return Checked::broken(out);
    }
    let exit = if regraded.mismatches.is_empty() {
        let _ = writeln!(
            out,
            "{dir}: {chain}; every verdict re-graded from the recorded evidence"
        );
        Exit::Clean
    } else if regraded.other_rules() {
        // Graded under other rules: the chain shows the receipts are as written; the
        // differences are what today's rules make of the same evidence.
        rule_change(&mut out, &dir, &chain.to_string(), &regraded);
        Exit::Clean
    } else {
        for m in &regraded.mismatches {
            let at = m
                .seq
                .map_or("missing record".to_string(), |s| format!("seq {s}"));
            let what = match m.clause.as_str() {
                "profile" => "a profile line",
                _ => "a verdict",
            };
            let _ = writeln!(
                out,
                "{dir}: MISMATCH: {at}: {} × {}: {what} the evidence does not support: {}",
                m.tool, m.clause, m.detail
            );
        }
        Exit::Broken
    };
    Checked {
        exit,
        output: out,
        bytes: chain.log_bytes + chain.blob_bytes,
        timings: regraded.timings,
    }
}

impl Checked {
    fn broken(output: String) -> Self {
        Checked {
            exit: Exit::Broken,
            output,
            bytes: 0,
            timings: crate::probe::CheckTimings::default(),
        }
    }
}

/// The campaign's receipts, checked: bytes (log and blobs, unpacked) and where the time went.
#[derive(Default)]
struct Totals {
    bytes: u64,
    chain: std::time::Duration,
    regrade: std::time::Duration,
}

impl Totals {
    fn add(&mut self, probe: &Checked) {
        self.bytes += probe.bytes;
        self.chain += probe.timings.chain;
        self.regrade += probe.timings.regrade;
    }

    fn line(&self, wall: std::time::Duration) -> String {
        let mb = self.bytes as f64 / 1e6;
        let rate = |d: std::time::Duration| mb / d.as_secs_f64().max(1e-9);
        format!(
            "checked {mb:.1} MB of probe receipts (log and blobs, unpacked) in {:.1} s wall ({:.0} MB/s); on the worker threads, the chain check {:.1} s ({:.0} MB/s) and the re-grading {:.1} s",
            wall.as_secs_f64(),
            rate(wall),
            self.chain.as_secs_f64(),
            rate(self.chain),
            self.regrade.as_secs_f64(),
        )
    }
}

/// What today's rules make of receipts graded under another revision: every verdict that
/// changes (recorded → re-graded), then a count of records whose verdict stays with another
/// reason or evidence, the first few of them shown.
fn rule_change(out: &mut String, dir: &str, chain: &str, regraded: &crate::probe::Regraded) {
    use std::fmt::Write;
    let (changed, reworded): (Vec<_>, Vec<_>) = regraded
        .mismatches
        .iter()
        .partition(|m| m.changed.is_some());
    let _ = writeln!(
        out,
        "{dir}: {chain}; graded under rules revision {}, re-graded under revision {}: {} records differ, {} of them in verdict (a rule change, not tampering: the chain verifies)",
        regraded.graded_under,
        vac_contracts::RULES,
        regraded.mismatches.len(),
        changed.len()
    );
    let line = |m: &crate::probe::VerdictMismatch| {
        let at = m
            .seq
            .map_or("missing record".to_string(), |s| format!("seq {s}"));
        format!(
            "{dir}: REGRADED: {at}: {} × {}: {}",
            m.tool, m.clause, m.detail
        )
    };
    for m in &changed {
        let _ = writeln!(out, "{}", line(m));
    }
    const SHOWN: usize = 20;
    for m in reworded.iter().take(SHOWN) {
        let _ = writeln!(out, "{}", line(m));
    }
    if reworded.len() > SHOWN {
        let _ = writeln!(
            out,
            "{dir}: REGRADED: … and {} more with the same verdict",
            reworded.len() - SHOWN
        );
    }
}
