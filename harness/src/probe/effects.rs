//! From witnessed filesystem changes to attributable effects: content excerpts, control
//! subtraction by class, normalised path and content, and per-call attribution by the timing
//! of lab events (SPEC §3.4).

use std::path::{Path, PathBuf};
use std::time::Duration;

use vac_contracts::evidence::{Change, ControlState, Evidence, Origin, Read, Write};
use vac_contracts::{Attribution, Basis, Effect, EffectClass};
use vac_sandbox::{FsChange, FsEventKind, NodeKind, Stopped};

use super::vocab::CallRecord;
use super::vocab::LabEvent;
use super::vocab::ObservedChange;

/// Bytes of a written file kept as evidence (the excerpt in reports is shorter).
pub(crate) const CONTENT_CAP: u64 = 64 * 1024;
/// Bytes of written files kept as evidence per probe, in all its runs: beyond them a change
/// keeps its digest only, and is counted. 60,000 files a hostile server writes cost this
/// much, not 60,000 × the cap, and a server with many tools that each run alone cannot
/// multiply it by its runs.
pub(crate) const CONTENT_BUDGET: u64 = 64 * 1024 * 1024;

/// What is left of a probe's [`CONTENT_BUDGET`], shared by its runs.
#[derive(Debug)]
pub(crate) struct ContentBudget(std::sync::atomic::AtomicU64);

impl Default for ContentBudget {
    fn default() -> Self {
        ContentBudget(std::sync::atomic::AtomicU64::new(CONTENT_BUDGET))
    }
}

impl ContentBudget {
    /// Takes `bytes` from the budget, if that many are left.
    fn take(&self, bytes: u64) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.0
            .fetch_update(Relaxed, Relaxed, |left| left.checked_sub(bytes))
            .is_ok()
    }
}
const EXCERPT: usize = 160;
const MAX_WRITES: usize = 64;

/// Reads contents while the run directory still exists; with them, how many contents were
/// not kept because the probe's [`CONTENT_BUDGET`] was spent (those changes keep their digest).
pub(crate) fn observe(
    stopped: &Stopped,
    changes: Vec<FsChange>,
    budget: &ContentBudget,
) -> (Vec<ObservedChange>, u64) {
    // Each layer is opened once for all the reads beneath it.
    let upper = std::fs::File::open(stopped.upper_dir()).ok();
    let lowers: Vec<std::fs::File> = stopped
        .lower_dirs()
        .iter()
        .filter_map(|l| std::fs::File::open(l).ok())
        .collect();
    let mut over = 0;
    let mut kept = |bytes: Option<Vec<u8>>| {
        let bytes = bytes?;
        if !budget.take(bytes.len() as u64) {
            over += 1;
            return None;
        }
        Some(bytes)
    };
    let observed = changes
        .into_iter()
        .map(|change| {
            let path = change.path().to_path_buf();
            let content = match &change {
                FsChange::Created {
                    kind: NodeKind::File,
                    ..
                }
                | FsChange::Modified { .. }
                | FsChange::Renamed { .. } => {
                    kept(upper.as_ref().and_then(|u| read_capped(u, &path)))
                }
                _ => None,
            };
            let old_content = match &change {
                FsChange::Modified { .. } => {
                    kept(lowers.iter().find_map(|l| read_capped(l, &path)))
                }
                _ => None,
            };
            ObservedChange {
                change,
                content,
                old_content,
                writes: Vec::new(),
            }
        })
        .collect();
    (observed, over)
}

/// Stamps each change with the times of the lab events that wrote its path.
/// One pass over the events, then a lookup per change: a run of 65,536 files and their
/// events costs linear time, not their product. Closing a file opened for writing says
/// only that it was open: its time counts when no event says when it was written (a
/// writer through a mapping), else a tool that opened a database file the server wrote at
/// startup would be given the startup's write.
pub(crate) fn stamp(changes: &mut [ObservedChange], events: &[LabEvent]) {
    #[derive(Default)]
    struct Times {
        written: Vec<Duration>,
        closed: Vec<Duration>,
    }
    let mut times: std::collections::HashMap<&Path, Times> = std::collections::HashMap::new();
    for event in events {
        let entry = times.entry(event.path.as_path()).or_default();
        let at = match event.kind {
            FsEventKind::Open | FsEventKind::CloseNoWrite => continue,
            FsEventKind::CloseWrite => &mut entry.closed,
            _ => &mut entry.written,
        };
        if at.len() < MAX_WRITES {
            at.push(event.at());
        }
    }
    for observed in changes {
        observed.writes = match times.remove(observed.change.path()) {
            Some(t) if t.written.is_empty() => t.closed,
            Some(t) => t.written,
            None => Vec::new(),
        };
    }
}

/// Gives a change no lab event timed the time of each block (of a shared run) whose
/// snapshot of the upper layer saw its path written: the send time of the block's first
/// call, the call a run of that block alone gives an untimed change to ([`UNTIMED`]).
/// Nothing when a snapshot was blind, since the change may lie in its gap.
pub(crate) fn stamp_by_snapshots(
    changes: &mut [ObservedChange],
    settles: &[super::vocab::Settled],
    calls: &[CallRecord],
) {
    if settles.is_empty() || settles.iter().any(|s| s.upper_blind) {
        return;
    }
    // The first call made from `index` on (a retry slot not needed is no call).
    let sent = |index: usize| {
        let call = calls.iter().find(|c| c.index >= index)?;
        call.window().map(|(requested, _)| requested)
    };
    // Each block's first call: the one after the previous block's last.
    let mut first = calls.first().map(|c| c.index);
    let mut blocks = Vec::new();
    for settled in settles {
        blocks.push((settled, first.and_then(sent)));
        first = Some(settled.after_call + 1);
    }
    // Each written path with the blocks that wrote it, in order: one lookup per change.
    let mut written: std::collections::HashMap<&Path, Vec<Duration>> = Default::default();
    for (settled, at) in &blocks {
        for path in &settled.upper {
            let times = written.entry(path.as_path()).or_default();
            if let Some(at) = at.filter(|_| times.len() < MAX_WRITES) {
                times.push(at);
            }
        }
    }
    for observed in changes.iter_mut().filter(|o| o.writes.is_empty()) {
        if let Some(times) = written.get(observed.change.path()) {
            observed.writes.clone_from(times);
        }
    }
}

/// What `path` (in the sandbox's view) holds in `layer`, capped; read beneath the layer
/// without following a link the program left there.
fn read_capped(layer: &std::fs::File, path: &Path) -> Option<Vec<u8>> {
    vac_sandbox::read_beneath(layer, path, CONTENT_CAP)
}

/// A subject change that the control run did not explain, with the control's version of
/// the same path when there was one (a log both append to).
#[derive(Debug, Clone)]
pub(crate) struct Attributable<'a> {
    pub(crate) observed: &'a ObservedChange,
    pub(crate) control: Option<&'a ObservedChange>,
}

/// Splits a subject run's changes into attributable ones and those the control run made
/// identically (same class, normalised path and resulting content).
/// Borrowed, not copied: a change holds up to [`CONTENT_CAP`] of content, and a run of
/// thousands of written files would hold it twice.
pub(crate) fn subtract<'a>(
    subject: &'a [ObservedChange],
    control: &'a [ObservedChange],
) -> (Vec<Attributable<'a>>, Vec<&'a ObservedChange>) {
    let mut attributable = Vec::new();
    let mut subtracted = Vec::new();
    // The first control change of each key, as a search in order would find it.
    let mut by_key = std::collections::HashMap::new();
    for change in control {
        by_key.entry(key(&change.change)).or_insert(change);
    }
    for observed in subject {
        let twin = by_key.get(&key(&observed.change)).copied();
        match twin {
            Some(twin) if fingerprint(&twin.change) == fingerprint(&observed.change) => {
                subtracted.push(observed)
            }
            twin => attributable.push(Attributable {
                observed,
                control: twin,
            }),
        }
    }
    (attributable, subtracted)
}

fn key(change: &FsChange) -> (EffectClass, String) {
    (class(change), normalise(change.path()))
}

/// Per-run names (nonces) differ between runs; the rest of a path must match.
pub(crate) fn normalise(path: &Path) -> String {
    normalise_text(&path.to_string_lossy())
}

/// Replaces every per-probe name part with `*`: a `-` followed by the 12 hex digits of a
/// probe's nonce (`notes/draft-<nonce>.md`, `memo-<nonce>`), and, in receipts made before
/// the planted names stopped saying `vac`, the hex digits after `vac-nonce-`.
pub(crate) fn normalise_text(text: &str) -> String {
    const LEGACY: &str = "vac-nonce-";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut at, mut copied) = (0, 0);
    while at < bytes.len() {
        let hex_from = |from: usize| {
            bytes[from..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
                .count()
        };
        let skip = if bytes[at..].starts_with(LEGACY.as_bytes()) {
            Some((at + LEGACY.len(), hex_from(at + LEGACY.len())))
        } else if bytes[at] == b'-' {
            let run = hex_from(at + 1);
            let ends = bytes
                .get(at + 1 + run)
                .is_none_or(|b| !b.is_ascii_alphanumeric());
            (run == NONCE_DIGITS && ends).then_some((at + 1, run))
        } else {
            None
        };
        match skip {
            Some((from, run)) => {
                out.push_str(&text[copied..from]);
                out.push('*');
                at = from + run;
                copied = at;
            }
            None => at += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The hex digits of a probe's nonce (six random bytes).
pub(crate) const NONCE_DIGITS: usize = 12;

/// Whether `text` holds a per-probe name part ([`normalise_text`]).
pub(crate) fn names_a_nonce(text: &str) -> bool {
    normalise_text(text) != text
}

fn fingerprint(change: &FsChange) -> String {
    match change {
        FsChange::Created { kind, digest, .. } => format!(
            "{kind:?}:{}",
            digest.as_ref().map_or("", |d| d.blake3.as_str())
        ),
        FsChange::Modified { new, .. } => new.blake3.clone(),
        FsChange::Renamed { to, digest, .. } => format!("{}:{}", normalise(to), digest.blake3),
        FsChange::ModeChanged { new, .. } => format!("{new:o}"),
        FsChange::OwnerChanged { new, .. } => format!("{new:?}"),
        FsChange::Symlink { target, .. } => target.display().to_string(),
        FsChange::Deleted { .. } | FsChange::DirReplaced { .. } => String::new(),
    }
}

/// The effect class of a change.
pub(crate) fn class(change: &FsChange) -> EffectClass {
    match change {
        FsChange::Created { .. } => EffectClass::Created,
        FsChange::Modified { .. } => EffectClass::Modified,
        FsChange::Deleted { .. } => EffectClass::Deleted,
        FsChange::Renamed { .. } => EffectClass::Renamed,
        FsChange::DirReplaced { .. } => EffectClass::DirReplaced,
        FsChange::ModeChanged { .. } | FsChange::OwnerChanged { .. } => EffectClass::ModeChanged,
        FsChange::Symlink { .. } => EffectClass::Symlink,
    }
}

/// A run's call windows and when its shutdown was requested: what attribution measures
/// an effect's time against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Windows<'a> {
    pub(crate) calls: &'a [CallRecord],
    pub(crate) shutdown: Option<Duration>,
}

impl Windows<'_> {
    /// The call whose window holds an effect at `at`, the call it came after, or the
    /// shutdown it came after.
    pub(crate) fn attribute(&self, at: Duration) -> (Attribution, Basis) {
        if self.shutdown.is_some_and(|shutdown| at >= shutdown) {
            return (Attribution::Shutdown, Basis::AfterShutdown);
        }
        let timed = self.calls.iter().filter_map(|c| {
            let (requested, ended) = c.window()?;
            Some((c.index, requested, ended))
        });
        match timed.rev().find(|(_, requested, _)| *requested <= at) {
            Some((index, _, answered)) if at <= answered => {
                (Attribution::Call(index), Basis::InsideWindow)
            }
            Some((index, _, _)) => (Attribution::AfterResponse(index), Basis::AfterResponse),
            None => (Attribution::Unattributed, Basis::BeforeFirstCall),
        }
    }
}

/// Every distinct attribution of a change's writes. Outside the lab there is no event
/// timing, but the run held only this tool's calls: in a run of one tool such a change can
/// only be that tool's ([`Basis::Untimed`]); a shared run that holds one cannot attribute
/// it (adaptive isolation).
pub(crate) fn attributions(writes: &[Duration], windows: &Windows) -> Vec<(Attribution, Basis)> {
    let mut found: Vec<(Attribution, Basis)> = Vec::new();
    for at in writes {
        let attribution = windows.attribute(*at);
        if !found.iter().any(|(a, _)| *a == attribution.0) {
            found.push(attribution);
        }
    }
    // A write before the first call is startup noise only if another write explains it.
    if found.len() > 1 {
        found.retain(|(a, _)| *a != Attribution::Unattributed);
    }
    if found.is_empty() {
        found.push(match windows.calls.first() {
            Some(first) => (Attribution::Call(first.index), Basis::Untimed),
            None => (Attribution::Unattributed, Basis::NoCall),
        });
    }
    found
}

/// The contracts' view of an attributable change, once per call it is attributed to; a
/// rename also yields the created target.
pub(crate) fn to_effects(item: &Attributable, windows: &Windows, run_id: &str) -> Vec<Effect> {
    let observed = &item.observed;
    let change = &observed.change;
    let existed_before = match change {
        FsChange::Created { .. } => false,
        FsChange::Symlink { previous, .. } => previous.is_some(),
        _ => true,
    };
    let mut effects = Vec::new();
    for (attribution, basis) in attributions(&observed.writes, windows) {
        let mut write = detail(observed, item.control);
        write.origin = Origin {
            run: Some(run_id.to_owned()),
            attribution: Some(basis),
        };
        let detail = Evidence::Write(Box::new(write));
        if let FsChange::Renamed { from, to, .. } = change {
            effects.push(effect(
                EffectClass::Renamed,
                from,
                attribution,
                detail.clone(),
                true,
            ));
            effects.push(effect(EffectClass::Created, to, attribution, detail, false));
        } else {
            effects.push(effect(
                class(change),
                change.path(),
                attribution,
                detail,
                existed_before,
            ));
        }
    }
    effects
}

/// Evidence for one subtracted control change.
pub(crate) fn control_effect(observed: &ObservedChange, run_id: &str) -> Effect {
    let mut write = detail(observed, None);
    write.origin.run = Some(run_id.to_owned());
    effect(
        class(&observed.change),
        observed.change.path(),
        Attribution::Unattributed,
        Evidence::Write(Box::new(write)),
        false,
    )
}

fn effect(
    class: EffectClass,
    path: &Path,
    attribution: Attribution,
    detail: Evidence,
    existed_before: bool,
) -> Effect {
    Effect {
        class,
        path: path.display().to_string(),
        attribution,
        detail,
        existed_before,
    }
}

/// Sizes, hashes and a bytes excerpt; for a file the control also wrote, the excerpt starts
/// where the two contents part. No origin: the caller says which run and why.
pub(crate) fn detail(observed: &ObservedChange, control: Option<&ObservedChange>) -> Write {
    let change = match &observed.change {
        FsChange::Created {
            kind, digest, mode, ..
        } => Change::Created {
            kind: format!("{kind:?}").to_lowercase(),
            mode: format!("{mode:o}"),
            size: digest.as_ref().map(|d| d.size),
            blake3: digest.as_ref().map(|d| d.blake3.clone()),
        },
        FsChange::Modified {
            old,
            new,
            truncated,
            ..
        } => Change::Modified {
            size: new.size,
            blake3: new.blake3.clone(),
            old_size: old.size,
            old_blake3: old.blake3.clone(),
            truncated: *truncated,
        },
        FsChange::Renamed { from, to, digest } => Change::Renamed {
            from: shown(from),
            to: shown(to),
            size: digest.size,
            blake3: digest.blake3.clone(),
        },
        FsChange::Deleted { was, .. } => Change::Deleted {
            was: format!("{was:?}").to_lowercase(),
        },
        FsChange::DirReplaced { .. } => Change::DirReplaced { opaque: true },
        FsChange::ModeChanged { old, new, .. } => Change::ModeChanged {
            old_mode: format!("{old:o}"),
            new_mode: format!("{new:o}"),
        },
        FsChange::OwnerChanged { old, new, .. } => Change::OwnerChanged {
            old_owner: *old,
            new_owner: *new,
        },
        FsChange::Symlink {
            target, previous, ..
        } => Change::Symlink {
            target: shown(target),
            previous: previous.as_deref().map(shown),
        },
    };
    let partial = match &observed.change {
        FsChange::Created {
            digest: Some(d), ..
        }
        | FsChange::Renamed { digest: d, .. } => d.partial,
        FsChange::Modified { old, new, .. } => old.partial || new.partial,
        _ => false,
    };
    let baseline = control
        .and_then(|c| c.content.as_deref())
        .or(observed.old_content.as_deref());
    let (excerpt, excerpt_offset) = match &observed.content {
        Some(content) => {
            let from = baseline.map_or(0, |b| common_prefix(b, content));
            let end = content.len().min(from + EXCERPT);
            let text = String::from_utf8_lossy(&content[from..end]).into_owned();
            (Some(text), Some(from))
        }
        None => (None, None),
    };
    Write {
        origin: Origin::default(),
        change,
        hash_partial: partial.then_some(vac_sandbox::HASH_CAP),
        excerpt,
        excerpt_offset,
        control: control.map(|control| ControlState {
            fingerprint: fingerprint(&control.change),
            size: control.content.as_ref().map(Vec::len),
        }),
        writes_ms: (!observed.writes.is_empty()).then(|| {
            observed
                .writes
                .iter()
                .map(|d| d.as_millis() as u64)
                .collect()
        }),
    }
}

/// A path as evidence shows it (lossy for bytes that are not UTF-8: the event keeps them).
fn shown(path: &Path) -> String {
    path.display().to_string()
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Lab files a subject run read (closed after a read-only open), one effect per file and
/// call. Opens during startup are unattributed, as the control run shows the same.
pub(crate) fn reads(
    reads: &[(PathBuf, Duration)],
    windows: &Windows,
    canaries: &[PathBuf],
    run_id: &str,
) -> Vec<Effect> {
    let mut effects: Vec<Effect> = Vec::new();
    for (path, at) in reads {
        let (attribution, basis) = windows.attribute(*at);
        let shown = path.display().to_string();
        if effects
            .iter()
            .any(|e| e.path == shown && e.attribution == attribution)
        {
            continue;
        }
        let detail = Evidence::Read(Read {
            origin: Origin {
                run: Some(run_id.to_owned()),
                attribution: Some(basis),
            },
            closed_ms: at.as_millis() as u64,
            canary: canaries.contains(path),
            never_read: vac_contracts::never_read(&shown).map(str::to_owned),
        });
        effects.push(Effect {
            class: EffectClass::Read,
            path: shown,
            attribution,
            detail,
            existed_before: true,
        });
    }
    effects
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vac_sandbox::FileDigest;

    fn created(path: &str, content: &[u8]) -> ObservedChange {
        let digest = FileDigest {
            size: content.len() as u64,
            blake3: blake3::hash(content).to_hex().to_string(),
            partial: false,
            hashed: None,
        };
        ObservedChange {
            change: FsChange::Created {
                path: path.into(),
                kind: NodeKind::File,
                digest: Some(digest),
                mode: 0o644,
            },
            content: Some(content.to_vec()),
            old_content: None,
            writes: Vec::new(),
        }
    }

    #[test]
    fn nonces_are_normalised() {
        assert_eq!(
            normalise(Path::new("/lab/work/notes/vac-nonce-12ab.md")),
            "/lab/work/notes/vac-nonce-*.md"
        );
        assert_eq!(normalise(Path::new("/lab/plain")), "/lab/plain");
        assert_eq!(
            normalise_text("notes/draft-0123456789ab-3b.md and memo-0123456789ab"),
            "notes/draft-*-3b.md and memo-*"
        );
        // Only ASCII is matched: text around it may be any UTF-8.
        assert_eq!(normalise_text("忽略-0123456789ab之前"), "忽略-*之前");
        // Not a nonce: too short, too long, upper case, or part of a longer word.
        for plain in [
            "draft-0123456789a.md",
            "chunk-0123456789abc.js",
            "x-0123456789AB",
            "x-0123456789abz",
        ] {
            assert_eq!(normalise_text(plain), plain);
            assert!(!names_a_nonce(plain));
        }
    }

    #[test]
    fn identical_control_changes_are_subtracted_but_a_longer_log_is_not() {
        let control = vec![
            created("/lab/home/log", b"started\n"),
            created("/lab/home/cache", b"c"),
        ];
        let subject = vec![
            created("/lab/home/log", b"started\nread notes/a.md\n"),
            created("/lab/home/cache", b"c"),
        ];
        let (attributable, subtracted) = subtract(&subject, &control);
        assert_eq!(subtracted.len(), 1);
        assert_eq!(attributable.len(), 1);
        let detail = detail(attributable[0].observed, attributable[0].control);
        assert_eq!(detail.excerpt.as_deref(), Some("read notes/a.md\n"));
        assert_eq!(detail.excerpt_offset, Some(8));
    }

    #[test]
    fn nonce_paths_match_across_runs() {
        let control = vec![created("/lab/work/vac-nonce-aaaa", b"x")];
        let subject = vec![created("/lab/work/vac-nonce-bbbb", b"x")];
        assert!(subtract(&subject, &control).0.is_empty());
        let control = vec![created("/home/u/work/draft-aaaaaaaaaaaa.md", b"x")];
        let subject = vec![created("/home/u/work/draft-bbbbbbbbbbbb.md", b"x")];
        assert!(subtract(&subject, &control).0.is_empty());
    }

    fn call(index: usize, requested: u64, answered: u64) -> CallRecord {
        CallRecord {
            index,
            repeat_of: None,
            repeat_state: Vec::new(),
            revised: None,
            answer: None,
            unanswered: None,
            purpose: super::super::vocab::Purpose::Normal,
            tool: "t".into(),
            arguments: Default::default(),
            outcome: Ok(crate::client::CallOutcome {
                request_id: json!(index),
                result: None,
                error: None,
                requested_at: Duration::from_millis(requested),
                answered_at: Duration::from_millis(answered),
                asked: Vec::new(),
            }),
        }
    }

    #[test]
    fn writes_are_attributed_to_the_window_that_holds_them() {
        let calls = [call(3, 100, 200), call(4, 300, 400)];
        let windows = Windows {
            calls: &calls,
            shutdown: Some(Duration::from_millis(800)),
        };
        let at = |ms| windows.attribute(Duration::from_millis(ms)).0;
        assert_eq!(at(150), Attribution::Call(3));
        assert_eq!(at(250), Attribution::AfterResponse(3));
        assert_eq!(at(350), Attribution::Call(4));
        assert_eq!(at(700), Attribution::AfterResponse(4));
        assert_eq!(at(900), Attribution::Shutdown);
        assert_eq!(at(50), Attribution::Unattributed);
    }

    /// A call the session failed under (the server exited or broke the protocol) still
    /// owns what was written while it was pending; receipts older than its timing do not
    /// time it, as before.
    #[test]
    fn a_write_before_the_session_failed_under_a_call_is_that_calls() {
        let mut failed = call(5, 500, 0);
        failed.outcome = Err(crate::probe::vocab::SessionFailed(
            "server closed its stdout during tools/call".into(),
        ));
        failed.unanswered = Some(super::super::vocab::Unanswered {
            requested_at: Duration::from_millis(500),
            failed_at: Duration::from_millis(520),
        });
        let calls = [call(4, 300, 400), failed.clone()];
        let windows = Windows {
            calls: &calls,
            shutdown: None,
        };
        let at = |ms| windows.attribute(Duration::from_millis(ms)).0;
        assert_eq!(at(510), Attribution::Call(5));
        assert_eq!(at(600), Attribution::AfterResponse(5));
        failed.unanswered = None;
        let old = [call(4, 300, 400), failed];
        let windows = Windows {
            calls: &old,
            shutdown: None,
        };
        assert_eq!(
            windows.attribute(Duration::from_millis(510)).0,
            Attribution::AfterResponse(4)
        );
    }

    /// A change outside the watched lab gets the send time of the first call of each block
    /// whose upper-layer snapshot saw it written; a blind snapshot leaves it untimed.
    #[test]
    fn snapshots_time_an_unwatched_change_by_its_block() {
        let calls = [call(3, 100, 200), call(4, 300, 400), call(5, 500, 600)];
        let settled = |after_call, upper: &[&str], blind: bool| {
            let written = (!blind).then(|| upper.iter().map(PathBuf::from).collect());
            super::super::vocab::Settled::new(after_call, true, 0, written)
        };
        let settles = [
            settled(3, &[], false),
            settled(5, &["/opt/app/state.json"], false),
        ];
        let mut changes = vec![created("/opt/app/state.json", b"{}")];
        stamp_by_snapshots(&mut changes, &settles, &calls);
        assert_eq!(changes[0].writes, [Duration::from_millis(300)]);
        let mut blind = vec![created("/opt/app/state.json", b"{}")];
        let settles = [
            settled(3, &[], true),
            settled(5, &["/opt/app/state.json"], false),
        ];
        stamp_by_snapshots(&mut blind, &settles, &calls);
        assert!(blind[0].writes.is_empty());
    }

    /// One timeline of `tests/data/attribution/timelines.json`: the calls (index, sent and
    /// answered, in ms), the shutdown request, the lab events on one changed file (kind, ms)
    /// and the attributions expected of its change.
    #[derive(serde::Deserialize)]
    struct Timeline {
        case: String,
        why: String,
        calls: Vec<(usize, u64, u64)>,
        shutdown: u64,
        events: Vec<(FsEventKind, u64)>,
        expected: Vec<Attribution>,
    }

    /// Effect timelines → attribution, data-driven: opened but not modified, startup,
    /// shutdown, a detached child's write, a mapped writer, an untimed change.
    #[test]
    fn each_timeline_is_attributed_as_its_file_says() {
        let file = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/attribution/timelines.json"
        );
        let timelines: Vec<Timeline> =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        assert!(timelines.len() >= 8);
        let path = "/home/u/work/state.db";
        for t in timelines {
            let calls: Vec<CallRecord> = t.calls.iter().map(|&(i, s, a)| call(i, s, a)).collect();
            let events: Vec<LabEvent> = t
                .events
                .iter()
                .map(|&(kind, ms)| LabEvent {
                    kind,
                    path: PathBuf::from(path),
                    is_dir: false,
                    t_ns: ms * 1_000_000,
                    pid: None,
                })
                .collect();
            let mut changes = vec![created(path, b"x")];
            stamp(&mut changes, &events);
            let windows = Windows {
                calls: &calls,
                shutdown: Some(Duration::from_millis(t.shutdown)),
            };
            let found: Vec<Attribution> = attributions(&changes[0].writes, &windows)
                .into_iter()
                .map(|a| a.0)
                .collect();
            assert_eq!(found, t.expected, "{}: {}", t.case, t.why);
        }
    }

    #[test]
    fn a_log_appended_in_several_calls_names_each_call_and_drops_startup() {
        let calls = [call(3, 100, 200), call(4, 300, 400)];
        let writes: Vec<Duration> = [20, 150, 350, 360].map(Duration::from_millis).to_vec();
        let windows = Windows {
            calls: &calls,
            shutdown: None,
        };
        let found: Vec<Attribution> = attributions(&writes, &windows)
            .into_iter()
            .map(|a| a.0)
            .collect();
        assert_eq!(found, [Attribution::Call(3), Attribution::Call(4)]);
        let outside = attributions(&[], &windows);
        assert_eq!(outside[0].0, Attribution::Call(3));
    }
}
