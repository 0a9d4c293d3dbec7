//! What a run showed the model, as effects: canary tokens and instructions in the results
//! of its calls, and changes of tools/list after review (SPEC §3.6 `result.secrets`,
//! `result.instructions`, `manifest.stable`); and the protocol sensor's status.
//!
//! The detectors are in `vac_contracts::detect`; this module applies them to a run and attributes
//! what they find: a result's findings to the call that returned it, a manifest change to
//! the last call of the run it was seen in (the one that preceded it), owned by the tool
//! whose entry changed.

use serde_json::{Value, json};
use vac_contracts::evidence::{
    Between, CredentialShown, Evidence, InstructionsShown, Origin, SecretShown, SelfTestEvidence,
    SensorFacts, Shown,
};
use vac_contracts::{Attribution, Effect, EffectClass, SensorState};

use super::vocab::LabRecord;
use super::vocab::{CallRecord, Role, RunOutput};
use crate::client::CallError;
use vac_contracts::detect::{
    Drift, credentials_in_result, excerpt, instructions_in_result, manifest_drift, reordered_only,
    secrets_in_result,
};

const EXCERPT: usize = 200;

/// The protocol effects of one subject run, measured against the control's manifest.
pub(crate) fn effects(
    subject: &RunOutput,
    control: &RunOutput,
    planted: &LabRecord,
) -> Vec<Effect> {
    let tokens = planted.tokens();
    let mut effects = Vec::new();
    for call in &subject.calls {
        for (source, shown) in shown_all(call) {
            // A result's evidence keeps the shape published receipts were graded with; what a
            // server asked the model says which request it came in.
            let base = Shown {
                origin: run_origin(&subject.id),
                call: Some(call.index),
                tool: Some(call.tool.clone()),
                source: (source != RESULT).then(|| source.to_owned()),
                entry: None,
            };
            effects.extend(findings(&shown, &base, (planted, &tokens), call.index));
        }
    }
    let (reviewed, launched) = (listed(control), listed(subject));
    if let Some(Ok(later)) = &subject.later_tools
        && let Value::Array(later) = &**later
    {
        let last = subject.calls.last().map(|c| c.index);
        // Within the session every change is the server's doing, tied to the block it
        // followed where a shared run listed the tools between blocks, else to the last
        // call; across launches a text that differs only by the order of its items (a set
        // printed in hash order) is nondeterminism, not a rug pull.
        let mut listings: Vec<(&[Value], Option<usize>)> = subject
            .settles
            .iter()
            .filter_map(|s| match s.tools.as_deref() {
                Some(Value::Array(tools)) => Some((tools.as_slice(), Some(s.after_call))),
                _ => None,
            })
            .collect();
        listings.push((later.as_slice(), last));
        let mut drifts: Vec<(Drift, Between, Option<usize>)> = Vec::new();
        let mut before = launched;
        for (after, call) in listings {
            drifts.extend(
                manifest_drift(before, after)
                    .into_iter()
                    .map(|d| (d, Between::WithinSession, call)),
            );
            before = after;
        }
        for drift in manifest_drift(reviewed, launched) {
            let known = drifts.iter().any(|(d, _, _)| d.tool == drift.tool);
            if !known && !reordered_only(reviewed, launched, &drift.tool) {
                drifts.push((drift, Between::AcrossLaunches, last));
            }
        }
        for (drift, between, call) in drifts {
            let mut seen = drift.evidence(between, subject.list_changed);
            seen.origin = run_origin(&subject.id);
            seen.after_call = Some(call);
            let detail = Evidence::Drift(Box::new(seen));
            let attribution = call.map_or(Attribution::Unattributed, Attribution::Call);
            effects.push(Effect {
                class: EffectClass::ManifestChanged,
                path: drift.tool.clone(),
                attribution,
                detail,
                existed_before: false,
            });
        }
    }
    effects
}

/// What one text shown to the model holds, as effects of call `index` with `base` in their
/// detail: canary tokens and secrets (`result.secrets`), instruction-like text
/// (`result.instructions`).
fn findings(
    shown: &Value,
    base: &Shown,
    (planted, tokens): (&LabRecord, &[String]),
    index: usize,
) -> Vec<Effect> {
    let mut effects = Vec::new();
    let mut canary_strings = Vec::new();
    for finding in secrets_in_result(shown, tokens) {
        canary_strings.push(finding.pointer.clone());
        let name = planted
            .canaries
            .iter()
            .find(|c| c.token == finding.token)
            .map_or(finding.token.as_str(), |c| c.name.as_str());
        let detail = Evidence::Secret(Box::new(SecretShown {
            shown: base.clone(),
            excerpt: text_at(shown, &finding.pointer),
            token: finding.token.clone(),
            pointer: finding.pointer,
            encoding: finding.encoding.as_str().to_owned(),
            in_key: finding.in_key,
        }));
        effects.push(effect(EffectClass::SecretInResult, name, index, detail));
    }
    // A real secret's evidence names its format and where it was, never its text. A
    // string that holds a canary is the canary's finding: what else it holds in a
    // secret's format came from the same planted file.
    let credentials = credentials_in_result(shown, tokens)
        .into_iter()
        .filter(|f| !canary_strings.contains(&f.pointer));
    for finding in credentials {
        let detail = Evidence::Credential(Box::new(CredentialShown {
            shown: base.clone(),
            rule: finding.rule.to_owned(),
            pointer: finding.pointer,
            redacted: finding.redacted,
        }));
        effects.push(effect(
            EffectClass::SecretInResult,
            finding.rule,
            index,
            detail,
        ));
    }
    for finding in instructions_in_result(shown) {
        let label = finding
            .hits
            .first()
            .map_or("instructions", |h| h.signal.as_str());
        let detail = Evidence::Instructions(Box::new(InstructionsShown {
            shown: base.clone(),
            ..finding.evidence()
        }));
        effects.push(effect(
            EffectClass::InstructionInResult,
            label,
            index,
            detail,
        ));
    }
    effects
}

/// What the server's prompts and resources showed, as effects of its own row's one call
/// `index` (SPEC §3.6): canaries, secrets and instructions in the control's listing and in
/// what reading each entry returned; and each entry whose listing changed — within a
/// subject run's session, after its calls, or across launches from the control's (a
/// change only of its items' order across launches is nondeterminism). One effect per
/// entry and kind of change: every subject run sees the same rug pull.
/// What the server asked the model or the user outside any call (sampling, elicitation) in
/// `runs`, as effects of its row (`row`, graded as call `index`): a request is no call's,
/// and what it carries reaches the model all the same.
pub(crate) fn asked_effects(runs: &[&RunOutput], planted: &LabRecord, index: usize) -> Vec<Effect> {
    let tokens = planted.tokens();
    let mut effects = Vec::new();
    for run in runs {
        for asked in &run.asked {
            let base = Shown {
                origin: run_origin(&run.id),
                source: Some(asked.source().to_owned()),
                ..Shown::default()
            };
            effects.extend(findings(&asked.params, &base, (planted, &tokens), index));
        }
    }
    effects
}

pub(crate) fn surface_effects(
    control: &RunOutput,
    later: &[&RunOutput],
    planted: &LabRecord,
    row: &str,
    index: usize,
) -> Vec<Effect> {
    let Some(reviewed) = &control.surface else {
        return Vec::new();
    };
    let tokens = planted.tokens();
    let mut effects = Vec::new();
    let listing = Shown {
        origin: run_origin(&control.id),
        source: Some("listing".into()),
        ..Shown::default()
    };
    effects.extend(findings(
        &reviewed.entries,
        &listing,
        (planted, &tokens),
        index,
    ));
    for read in &control.surface_reads {
        let base = Shown {
            origin: run_origin(&control.id),
            source: Some(read.method.clone()),
            entry: Some(read.entry.clone()),
            ..Shown::default()
        };
        if let Some(result) = &read.result {
            effects.extend(findings(result, &base, (planted, &tokens), index));
        }
    }
    let mut seen: Vec<(String, Between)> = Vec::new();
    for run in later {
        let Some(launched) = &run.surface else {
            continue;
        };
        let mut drifts: Vec<(Drift, Between)> = Vec::new();
        if let Some(after) = &run.later_surface {
            let (launched, after) = (launched.comparable(after), after.comparable(launched));
            drifts.extend(
                manifest_drift(&launched, &after)
                    .into_iter()
                    .map(|d| (d, Between::WithinSession)),
            );
        }
        let (before, now) = (reviewed.comparable(launched), launched.comparable(reviewed));
        drifts.extend(
            manifest_drift(&before, &now)
                .into_iter()
                .filter(|d| !reordered_only(&before, &now, &d.tool))
                .map(|d| (d, Between::AcrossLaunches)),
        );
        for (drift, between) in drifts {
            let key = (drift.tool.clone(), between);
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let mut seen = drift.evidence(between, run.list_changed);
            seen.origin = run_origin(&run.id);
            seen.entry = Some(drift.tool.clone());
            let detail = Evidence::Drift(Box::new(seen));
            effects.push(Effect {
                class: EffectClass::ManifestChanged,
                path: row.to_owned(),
                attribution: Attribution::Call(index),
                detail,
                existed_before: false,
            });
        }
    }
    effects
}

/// The tools whose entries `relaunch` listed otherwise than `control`, as manifest
/// changes of no call (`between: across_launches`, with the relaunch's run id).
pub(crate) fn relaunch_effects(relaunch: &RunOutput, control: &RunOutput) -> Vec<Effect> {
    if relaunch.tools.is_none() {
        return Vec::new();
    }
    let (reviewed, launched) = (listed(control), listed(relaunch));
    manifest_drift(reviewed, launched)
        .into_iter()
        .filter(|drift| !reordered_only(reviewed, launched, &drift.tool))
        .map(|drift| {
            let mut seen = drift.evidence(Between::AcrossLaunches, relaunch.list_changed);
            seen.origin = run_origin(&relaunch.id);
            seen.relaunch = Some(true);
            let detail = Evidence::Drift(Box::new(seen));
            Effect {
                class: EffectClass::ManifestChanged,
                path: drift.tool.clone(),
                attribution: Attribution::Unattributed,
                detail,
                existed_before: false,
            }
        })
        .collect()
}

/// The tools/list a run got after its handshake, as JSON entries.
fn listed(run: &RunOutput) -> &[Value] {
    run.tools
        .as_ref()
        .and_then(|t| t.raw.as_array())
        .map_or(&[][..], Vec::as_slice)
}

/// The protocol sensor of one run: live when every frame was recorded and, for a subject
/// run, the session still answered tools/list after the calls (so every result was read
/// whole and the manifest compared); failed when the session broke or that tools/list
/// failed; blind when the frame log's cap dropped frames (the receipts miss some of what
/// the model saw). A call that timed out while the session survived leaves it live: that
/// tool's cells are errored by the run's error instead.
pub(crate) fn protocol_state(output: &RunOutput) -> (SensorState, SelfTestEvidence) {
    let stats = &output.frame_stats;
    let detail = |says: String| SelfTestEvidence {
        run: Some(output.id.clone()),
        self_test: says,
        facts: SensorFacts::Protocol {
            frames: stats.frames_seen,
            frames_dropped: stats.frames_dropped,
            tools_list_changed: output.list_changed,
        },
    };
    let relisted = match (&output.role, &output.later_tools) {
        (Role::Control | Role::Relaunch, _) => Ok("the handshake and tools/list were answered"),
        (Role::Subject, Some(Ok(_))) => Ok("tools/list answered again after the calls"),
        (Role::Subject, Some(Err(error))) => Err(error.clone()),
        (Role::Subject, None) => Err("the session ended before the calls were made".into()),
    };
    let failure = output.failure.as_ref().map(|f| f.detail.clone());
    match (relisted, failure) {
        (Err(error), failure) => {
            let reason = failure.map_or(error.clone(), |f| format!("{f}; {error}"));
            (
                SensorState::Failed {
                    reason: reason.clone(),
                },
                detail(reason),
            )
        }
        (Ok(_), Some(failure)) if output.role == Role::Control => (
            SensorState::Failed {
                reason: failure.clone(),
            },
            detail(failure),
        ),
        (Ok(_), _) if stats.frames_dropped > 0 => {
            let reason = format!(
                "{} frames ({} bytes) dropped past the frame log's cap",
                stats.frames_dropped, stats.bytes_dropped
            );
            (
                SensorState::Blind {
                    reason: reason.clone(),
                },
                detail(reason),
            )
        }
        (Ok(says), _) => (
            SensorState::Live,
            detail(format!("every frame recorded; {says}")),
        ),
    }
}

/// The source of what a call returned, beside the requests it made of the client.
const RESULT: &str = "result";

/// Everything of a call that reaches the model or the user, with where it came from: what
/// [`shown`] says, then each request the server made while the call was pending
/// (`sampling/createMessage` messages are what the server wants the model to read).
fn shown_all(call: &CallRecord) -> Vec<(&'static str, Value)> {
    let mut all: Vec<(&'static str, Value)> =
        shown(call).map(|v| (RESULT, v)).into_iter().collect();
    if let Ok(outcome) = &call.outcome {
        for asked in &outcome.asked {
            all.push((asked.source(), asked.params.clone()));
        }
    }
    all
}

/// What the model saw of a call: its result, or the JSON-RPC error in its place.
pub(crate) fn shown(call: &CallRecord) -> Option<Value> {
    let outcome = call.outcome.as_ref().ok()?;
    if let Some(result) = &outcome.result {
        return Some(result.clone());
    }
    match &outcome.error {
        Some(CallError::Rpc {
            code,
            message,
            data,
        }) => Some(json!({"error": {"code": code, "message": message, "data": data}})),
        _ => None,
    }
}

fn effect(class: EffectClass, path: &str, call: usize, detail: Evidence) -> Effect {
    Effect {
        class,
        path: path.to_owned(),
        attribution: Attribution::Call(call),
        detail,
        existed_before: false,
    }
}

fn text_at(value: &Value, pointer: &str) -> Option<String> {
    Some(excerpt(value.pointer(pointer)?.as_str()?, EXCERPT))
}

/// Evidence of run `id`, with no attribution basis (what a run showed is its call's).
fn run_origin(id: &str) -> Origin {
    Origin {
        run: Some(id.to_owned()),
        attribution: None,
    }
}
