//! Merging shards ([`merge`]): each shard's chain verified, one campaign file and shard
//! count, every index and every planned probe once; the merged chain lists each shard by
//! its head, then every probe (copied under `out`) by its own.

use std::path::{Path, PathBuf};

use serde_json::json;
use vac_receipts::{Body, Member, ReceiptWriter, WriterOptions};

use super::{
    CONFIG_KEY, Campaign, Outcome, Planned, RunError, Shard, config, lock, plan, recorded,
    verified_members,
};

/// Merges shard directories of one campaign into `out`: each shard's chain verifies and is
/// sealed, all record the same campaign file (by hash) and shard count, every shard index
/// appears once, and together they hold every target × repetition once. The merged chain
/// lists each shard by its head, then every probe (copied under `out`) by its own.
pub fn merge(out: &Path, shards: &[PathBuf]) -> Result<Outcome, RunError> {
    let _writer = lock::WriterLock::take(out, true)?;
    if out.join(vac_receipts::LOG_FILE).exists() {
        return Err(RunError::Exists(out.to_path_buf()));
    }
    let Shards {
        campaign,
        mut heads,
        listed,
    } = read_shards(shards)?;
    let planned = plan(&campaign, None);
    every_probe_once(&campaign, &planned, &listed)?;
    let mut merged = config(&campaign, None);
    merged[CONFIG_KEY]["merged_from"] = heads
        .iter()
        .map(|(dir, s, head, _)| {
            json!({"dir": dir.display().to_string(), "shard": format!("{}/{}", s.index, s.count), "head": head})
        })
        .collect();
    let start = crate::probe::campaign_start(&campaign.text, campaign.seed, merged);
    let mut writer =
        ReceiptWriter::create(out, WriterOptions::default(), start).map_err(|source| {
            RunError::Receipts {
                dir: out.to_path_buf(),
                source,
            }
        })?;
    let write = |writer: &mut ReceiptWriter, member: Member| {
        writer
            .append(Body::Member(member))
            .map_err(|source| RunError::Receipts {
                dir: out.to_path_buf(),
                source,
            })
    };
    heads.sort_by_key(|(_, s, _, _)| s.index);
    for (dir, shard, head, records) in &heads {
        write(
            &mut writer,
            Member {
                dir: dir.display().to_string(),
                role: "shard".into(),
                target: format!("shard {}/{}", shard.index, shard.count),
                repetition: 0,
                head: Some(head.clone()),
                records: *records,
                status: "completed".into(),
                exit: 0,
                detail: String::new(),
            },
        )?;
    }
    let mut members = Vec::new();
    for p in &planned {
        let id = &campaign.targets[p.target].id;
        let (shard_dir, member) = listed
            .iter()
            .find(|(_, m)| m.target == *id && m.repetition == p.repetition)
            .cloned()
            .expect("checked above");
        let from = shard_dir.join(&member.dir);
        let to = out.join(&member.dir);
        copy_dir(&from, &to).map_err(|e| RunError::Io {
            dir: to.clone(),
            detail: format!("cannot copy {}: {e}", from.display()),
        })?;
        write(&mut writer, member.clone())?;
        members.push(member);
    }
    writer.seal(None).map_err(|source| RunError::Receipts {
        dir: out.to_path_buf(),
        source,
    })?;
    Ok(Outcome {
        dir: out.to_path_buf(),
        members,
        kept: 0,
        cut: None,
    })
}

/// The shards of one campaign, checked: its file, each shard's directory, index and head
/// (with its record count), and every probe each lists.
struct Shards {
    campaign: Campaign,
    heads: Vec<(PathBuf, Shard, String, u64)>,
    listed: Vec<(PathBuf, Member)>,
}

/// Reads and verifies each shard directory: all of one campaign file and shard count, each
/// index once, none missing.
fn read_shards(shards: &[PathBuf]) -> Result<Shards, RunError> {
    let refuse = |m: String| RunError::Merge(m);
    let mut first: Option<(Campaign, u32, String)> = None;
    let mut seen_index: Vec<(u32, PathBuf)> = Vec::new();
    let mut listed: Vec<(PathBuf, Member)> = Vec::new();
    let mut heads: Vec<(PathBuf, Shard, String, u64)> = Vec::new();
    for dir in shards {
        let (campaign, shard) = recorded(dir)?;
        let shard = shard.ok_or_else(|| {
            refuse(format!(
                "{}: not a shard (run with --shard K/N)",
                dir.display()
            ))
        })?;
        let hash = blake3::hash(campaign.text.as_bytes()).to_hex().to_string();
        match &first {
            None => first = Some((campaign.clone(), shard.count, hash.clone())),
            Some((_, count, first_hash)) => {
                if *first_hash != hash {
                    return Err(refuse(format!(
                        "{}: a shard of another campaign (its file's blake3 is {}, not {})",
                        dir.display(),
                        &hash[..16],
                        &first_hash[..16]
                    )));
                }
                if *count != shard.count {
                    return Err(refuse(format!(
                        "{}: shard {}/{} of {} shards, the others are of {count}",
                        dir.display(),
                        shard.index,
                        shard.count,
                        shard.count
                    )));
                }
            }
        }
        if let Some((_, other)) = seen_index.iter().find(|(i, _)| *i == shard.index) {
            return Err(refuse(format!(
                "{}: shard {}/{} given twice (also {})",
                dir.display(),
                shard.index,
                shard.count,
                other.display()
            )));
        }
        seen_index.push((shard.index, dir.clone()));
        let (report, members) = verified_members(dir)?;
        heads.push((dir.clone(), shard, report.head.to_string(), report.records));
        for member in members {
            listed.push((dir.clone(), member));
        }
    }
    let (campaign, count, _) = first.ok_or_else(|| refuse("no shard directory given".into()))?;
    let missing: Vec<u32> = (0..count)
        .filter(|i| !seen_index.iter().any(|(s, _)| s == i))
        .collect();
    if !missing.is_empty() {
        return Err(refuse(format!(
            "shard{} {} of {count} missing",
            if missing.len() == 1 { "" } else { "s" },
            missing
                .iter()
                .map(|i| format!("{i}/{count}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(Shards {
        campaign,
        heads,
        listed,
    })
}

/// Every planned probe is in exactly one shard, and nothing else is.
fn every_probe_once(
    campaign: &Campaign,
    planned: &[Planned],
    listed: &[(PathBuf, Member)],
) -> Result<(), RunError> {
    let refuse = |m: String| RunError::Merge(m);
    for p in planned {
        let id = &campaign.targets[p.target].id;
        let n = listed
            .iter()
            .filter(|(_, m)| m.target == *id && m.repetition == p.repetition)
            .count();
        if n != 1 {
            return Err(refuse(format!(
                "target {id:?} repetition {} is in {n} shards, not one",
                p.repetition
            )));
        }
    }
    if listed.len() != planned.len() {
        return Err(refuse(format!(
            "the shards hold {} probes, the campaign plans {}",
            listed.len(),
            planned.len()
        )));
    }
    Ok(())
}

/// A directory tree copied file by file (receipt directories hold files and directories
/// only).
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
