//! From runs to the contracts' `Observation`: calls, attributable effects (what the model
//! was shown among them, `shown.rs`; what the protocol witness saw, `witness.rs`), the
//! control's subtracted effects, sensor self-tests and run errors.

use serde_json::Value;
use vac_contracts::evidence::{Failure, SelfTestEvidence, SensorFacts};
use vac_contracts::{Basis, Call, Observation, RunError, Sensor, SensorState, SensorStatus};

use super::effects;
use super::vocab::LabRecord;
use super::vocab::{Reading, RunOutput};
use super::{sensed, shown, witness};

/// An observation holding the control run's sensors and the planted canaries whose read
/// is graded: not the files a framework loads from the working directory by convention
/// (`vac_contracts::LOADED_BY_CONVENTION`), whose read is profiled and whose value leaving
/// is graded as any canary's.
pub(crate) fn start(control: &RunOutput, planted: &LabRecord) -> Observation {
    let mut observation = Observation {
        canaries: planted
            .canary_paths()
            .iter()
            .filter(|p| vac_contracts::loaded_by_convention(p, &planted.work).is_none())
            .map(|p| p.display().to_string())
            .collect(),
        ..Observation::default()
    };
    observation.sensors.extend(sensors(control));
    observation
}

/// Adds the server's own row (`row`, the contract's name for it): the control run and the
/// relaunches, where no tool is called, as one call at `index` that every effect of those
/// runs belongs to — what the server did while it started and stopped. Subject runs still
/// subtract the control's effects as background; here they are graded, by the universal
/// limits alone. What its prompts and resources showed, and how their listing changed in
/// the `later` runs, are the row's too.
pub(crate) fn launch(
    observation: &mut Observation,
    launches: &[&RunOutput],
    later: &[&RunOutput],
    planted: &LabRecord,
    row: &str,
    index: usize,
) {
    let Some(control) = launches.first() else {
        return;
    };
    observation
        .effects
        .extend(shown::surface_effects(control, later, planted, row, index));
    let every_run: Vec<&RunOutput> = launches.iter().chain(later).copied().collect();
    observation
        .effects
        .extend(shown::asked_effects(&every_run, planted, index));
    observation.calls.push(Call {
        index,
        tool: row.to_owned(),
        arguments: Value::Null,
        ok: control.failure.is_none(),
        error: control.failure.as_ref().map(|f| f.detail.clone()),
        repeat_of: None,
        left_unchanged: Vec::new(),
    });
    let windows = effects::Windows {
        calls: &[],
        shutdown: None,
    };
    for (launch, run) in launches.iter().enumerate() {
        let mut found = Vec::new();
        let (changes, _) = effects::subtract(&run.changes, &[]);
        for item in &changes {
            found.extend(effects::to_effects(item, &windows, &run.id));
        }
        found.extend(effects::reads(
            &run.reads(),
            &windows,
            &planted.canary_paths(),
            &run.id,
        ));
        found.extend(sensed_effects(run, None, &windows, planted));
        let basis = Basis::Launch(launch as u32);
        for mut effect in found {
            effect.attribution = vac_contracts::Attribution::Call(index);
            if let Some(origin) = effect.detail.origin_mut() {
                origin.attribution = Some(basis);
            }
            observation.effects.push(effect);
        }
    }
}

/// Adds one subject run's calls, attributable effects, sensors and errors.
pub(crate) fn add(
    observation: &mut Observation,
    subject: &RunOutput,
    control: &RunOutput,
    planted: &LabRecord,
) {
    add_part(observation, subject, control, planted, None);
}

/// Adds the blocks of a shared run that adaptive isolation grades on it (each the indices
/// of one tool's calls): their calls, the effects attributed to them, their protocol
/// witness, and the run's sensors. Effects no call owns (before the first call, after the
/// shutdown request) are listed as from any run.
pub(crate) fn add_blocks(
    observation: &mut Observation,
    shared: &RunOutput,
    control: &RunOutput,
    planted: &LabRecord,
    blocks: &[&[usize]],
) {
    add_part(observation, shared, control, planted, Some(blocks));
}

fn add_part(
    observation: &mut Observation,
    subject: &RunOutput,
    control: &RunOutput,
    planted: &LabRecord,
    blocks: Option<&[&[usize]]>,
) {
    let kept = |index: usize| blocks.is_none_or(|b| b.iter().any(|calls| calls.contains(&index)));
    let effects_from = observation.effects.len();
    for call in subject.calls.iter().filter(|c| kept(c.index)) {
        // A call did its job only if its answer does: a JSON-RPC error, an `isError`
        // result and an error told in text are the tool refusing, and must not back a
        // `refuted` (`vac_contracts::answer`).
        let answer = call.answer();
        let ok = answer.succeeded();
        let error = match &call.outcome {
            Err(error) => Some(error.0.clone()),
            Ok(outcome) => match &outcome.error {
                Some(error) => Some(error.to_string()),
                None if ok => None,
                None => Some(refusal_text(answer, outcome.result.as_ref())),
            },
        };
        observation.calls.push(Call {
            index: call.index,
            tool: call.tool.clone(),
            arguments: Value::Object(call.arguments.clone()),
            ok,
            error,
            repeat_of: call.repeat_of,
            left_unchanged: call.left_unchanged(),
        });
    }
    let windows = effects::Windows {
        calls: &subject.calls,
        shutdown: subject.shutdown,
    };
    let (attributable, subtracted) = effects::subtract(&subject.changes, &control.changes);
    for item in &attributable {
        observation
            .effects
            .extend(effects::to_effects(item, &windows, &subject.id));
    }
    let canaries = planted.canary_paths();
    observation.effects.extend(effects::reads(
        &subject.reads(),
        &windows,
        &canaries,
        &subject.id,
    ));
    observation
        .effects
        .extend(sensed_effects(subject, Some(control), &windows, planted));
    observation
        .effects
        .extend(shown::effects(subject, control, planted));
    // A contained server's working directory is the lab's: the flip's path as the globs
    // see it. A remote server's is unknown: the path stays as it was named.
    let cwd = (!subject.remote).then_some(planted.work.as_path());
    let mut witnessed: Vec<Vec<super::vocab::CallRecord>> = match blocks {
        None => vec![subject.calls.clone()],
        Some(blocks) => blocks
            .iter()
            .map(|calls| {
                let of_block = subject.calls.iter().filter(|c| calls.contains(&c.index));
                of_block.cloned().collect()
            })
            .collect(),
    };
    // Effects of calls not graded on this run are another run's to show.
    let mut added = observation.effects.split_off(effects_from);
    added.retain(|effect| effect.attribution.call_index().is_none_or(kept));
    observation.effects.extend(added);
    for calls in witnessed.drain(..) {
        if let Some(found) = witness::assess(&calls, &subject.id, cwd) {
            observation.sensors.push(found.status);
            observation.effects.extend(found.effect);
        }
    }
    // The control's changes are the same for every subject run: list each once.
    for effect in subtracted
        .iter()
        .map(|o| effects::control_effect(o, &control.id))
    {
        let known = observation
            .control_subtracted
            .iter()
            .any(|e| e.path == effect.path && e.class == effect.class);
        if !known {
            observation.control_subtracted.push(effect);
        }
    }
    // A run's self-tests back the cells of the tools graded on it, not other tools' (a
    // sensor that failed in one tool's run spoils only that tool's cells): a tool's own
    // run, or each tool of the blocks graded on a shared run; a run of every tool, all.
    let graded_on: Vec<Option<String>> = match blocks {
        Some(blocks) => subject
            .calls
            .iter()
            .filter(|c| blocks.iter().any(|b| b.contains(&c.index)))
            .map(|c| Some(c.tool.clone()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        None => vec![subject.tool.clone()],
    };
    let statuses = sensors(subject);
    for tool in graded_on {
        observation
            .sensors
            .extend(statuses.iter().cloned().map(|mut status| {
                status.tool = status.tool.or_else(|| tool.clone());
                status
            }));
    }
    // A shared run is graded on only when it did not fail (adaptive isolation).
    if blocks.is_none() {
        observation.errors.extend(run_error(subject));
    }
}

/// A failed run's error, for the cells of its tool (or every cell, for a run of all).
fn run_error(run: &RunOutput) -> Option<RunError> {
    let failure = run.failure.as_ref()?;
    Some(RunError {
        tool: run.tool.clone(),
        kind: failure.kind,
        detail: Failure::Run {
            run: run.id.clone(),
            detail: match &run.retried {
                Some(first) => format!(
                    "{} (the second start; the first: {})",
                    failure.detail, first.detail
                ),
                None => failure.detail.clone(),
            },
        },
    })
}

/// One sensor's reading of a run, given the planted tokens.
type Sense = fn(&RunOutput, &[String]) -> Vec<sensed::Sensed>;

/// What the process and network sensors saw of `run` (execs, connections, lookups,
/// datagrams, listeners), less what `background` also saw, attributed by `windows`.
fn sensed_effects(
    run: &RunOutput,
    background: Option<&RunOutput>,
    windows: &effects::Windows,
    planted: &LabRecord,
) -> Vec<vac_contracts::Effect> {
    let tokens = planted.sent_tokens();
    let kinds: [Sense; 3] = [
        |run, _| sensed::execs(&run.execs),
        |run, tokens| sensed::network(&run.net, tokens),
        |run, _| sensed::listens(&run.listens),
    ];
    let mut found = Vec::new();
    for sense in kinds {
        let seen = background.map_or_else(Vec::new, |b| sense(b, &tokens));
        found.extend(sensed::effects(
            &sense(run, &tokens),
            &seen,
            windows,
            &run.id,
        ));
    }
    found
}

fn sensors(output: &RunOutput) -> Vec<SensorStatus> {
    let (procs_dropped, net_dropped) = sensed::dropped(&output.lost);
    let readings = &output.sensors;
    let mut statuses: Vec<SensorStatus> = [
        (Sensor::FsWrites, &readings.fs_writes, None),
        (Sensor::FsEvents, &readings.fs_events, None),
        (Sensor::Processes, &readings.processes, Some(procs_dropped)),
        (Sensor::Network, &readings.network, Some(net_dropped)),
    ]
    .into_iter()
    .map(|(sensor, reading, dropped)| {
        let (status, self_test) = state(reading);
        let over_budget = output.lost.contents_over_budget;
        let contents_over_budget =
            (sensor == Sensor::FsWrites && over_budget > 0).then_some(over_budget);
        SensorStatus {
            sensor,
            status,
            detail: SelfTestEvidence {
                run: Some(output.id.clone()),
                self_test,
                facts: SensorFacts::Sandbox {
                    dropped,
                    contents_over_budget,
                },
            },
            tool: None,
        }
    })
    .collect();
    let (status, detail) = shown::protocol_state(output);
    statuses.push(SensorStatus {
        sensor: Sensor::Protocol,
        status,
        detail,
        tool: None,
    });
    statuses
}

/// A recorded self-test as the contracts' sensor state, and its detail.
fn state(reading: &Reading) -> (SensorState, String) {
    match reading {
        Reading::Live(detail) => (SensorState::Live, detail.clone()),
        Reading::Blind(reason) => (
            SensorState::Blind {
                reason: reason.clone(),
            },
            reason.clone(),
        ),
        Reading::Absent(reason) => (SensorState::CapabilityAbsent, reason.clone()),
        Reading::Failed(reason) => (
            SensorState::Failed {
                reason: reason.clone(),
            },
            reason.clone(),
        ),
    }
}

/// The text of an `isError: true` tool result (its first text content, cut), if it is one.
/// A refused result's first text, named by how it refused: `isError: …` or
/// `told_error: …`.
fn refusal_text(answer: vac_contracts::Answer, result: Option<&Value>) -> String {
    let text = result
        .and_then(|r| super::revise::texts(r).next())
        .unwrap_or("");
    let how = match answer {
        vac_contracts::Answer::ToolError => "isError",
        other => other.as_str(),
    };
    format!("{how}: {}", text.chars().take(200).collect::<String>())
}
