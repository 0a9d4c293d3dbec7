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
/// its head against the one recorded, and its verdicts re-graded.
pub(crate) fn verify_campaign(dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let members = match crate::campaign::members(dir) {
        Ok(members) => members,
        Err(error) => {
            println!("{error}");
            return Ok(Exit::Broken.into());
        }
    };
    let mut worst = Exit::Clean;
    let mut probes = 0;
    for member in members.iter().filter(|m| m.role == "probe") {
        let Some(head) = &member.head else {
            println!(
                "{}: {} rep {}: no sealed log ({}): {}",
                dir.display(),
                member.target,
                member.repetition,
                member.status,
                member.detail
            );
            continue;
        };
        let path = dir.join(&member.dir);
        match vac_receipts::verify(&path, &vac_receipts::VerifyOptions::default()) {
            Ok(report) if report.head.to_string() == *head => {}
            Ok(report) => {
                println!(
                    "{}: BROKEN: its head is {}, the campaign log lists {head}",
                    path.display(),
                    report.head
                );
                worst = Exit::Broken;
                continue;
            }
            Err(_) => {}
        }
        probes += 1;
        if verify_probe(&path) != Exit::Clean {
            worst = Exit::Broken;
        }
    }
    if worst == Exit::Clean {
        let head = vac_receipts::verify(dir, &vac_receipts::VerifyOptions::default())
            .map(|r| r.head.to_string())
            .unwrap_or_default();
        println!(
            "{}: campaign chain verifies (head {head}); {probes} probes verify and re-grade, each with the head the chain lists",
            dir.display()
        );
    }
    Ok(worst.into())
}

/// One probe's chain and blobs, then every verdict record re-derived from its evidence.
pub(crate) fn verify_probe(path: &std::path::Path) -> Exit {
    let dir = path.display();
    let chain = match vac_receipts::verify(path, &vac_receipts::VerifyOptions::default()) {
        Ok(report) => report,
        Err(error) => {
            println!("{dir}: BROKEN: {error}");
            return Exit::Broken;
        }
    };
    match crate::probe::check_verdicts(path) {
        Ok(regraded) if regraded.mismatches.is_empty() => {
            println!("{dir}: {chain}; every verdict re-graded from the recorded evidence");
            Exit::Clean
        }
        // Graded under other rules: the chain shows the receipts are as written; the
        // differences are what today's rules make of the same evidence.
        Ok(regraded) if regraded.other_rules() => {
            print_rule_change(&dir.to_string(), &chain.to_string(), &regraded);
            Exit::Clean
        }
        Ok(regraded) => {
            let mismatches = regraded.mismatches;
            for m in &mismatches {
                let at = m
                    .seq
                    .map_or("missing record".to_string(), |s| format!("seq {s}"));
                let what = match m.clause.as_str() {
                    "profile" => "a profile line",
                    _ => "a verdict",
                };
                println!(
                    "{dir}: MISMATCH: {at}: {} × {}: {what} the evidence does not support: {}",
                    m.tool, m.clause, m.detail
                );
            }
            Exit::Broken
        }
        Err(error) => {
            println!("{dir}: BROKEN: {:#}", anyhow::Error::new(error));
            Exit::Broken
        }
    }
}

/// What today's rules make of receipts graded under another revision: every verdict that
/// changes (recorded → re-graded), then a count of records whose verdict stays with another
/// reason or evidence, the first few of them shown.
fn print_rule_change(dir: &str, chain: &str, regraded: &crate::probe::Regraded) {
    let (changed, reworded): (Vec<_>, Vec<_>) = regraded
        .mismatches
        .iter()
        .partition(|m| m.changed.is_some());
    println!(
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
        println!("{}", line(m));
    }
    const SHOWN: usize = 20;
    for m in reworded.iter().take(SHOWN) {
        println!("{}", line(m));
    }
    if reworded.len() > SHOWN {
        println!(
            "{dir}: REGRADED: … and {} more with the same verdict",
            reworded.len() - SHOWN
        );
    }
}
