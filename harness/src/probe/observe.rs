//! From runs to the contracts' `Observation`: calls, attributable effects (what the model
//! was shown among them, `shown.rs`; what the protocol witness saw, `witness.rs`), the
//! control's subtracted effects, sensor self-tests and run errors.

use serde_json::{Value, json};
use vac_contracts::{Call, Observation, RunError, Sensor, SensorState, SensorStatus};

use super::effects;
use super::plants::Planted;
use super::run::{Reading, RunOutput};
use super::target::REMOTE;
use super::{sensed, shown, witness};

/// An observation holding the control run's sensors and the planted canaries.
pub(crate) fn start(control: &RunOutput, planted: &Planted) -> Observation {
    let mut observation = Observation {
        canaries: planted
            .canary_paths()
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        ..Observation::default()
    };
    observation.sensors.extend(sensors(control));
    observation
}

/// Adds one subject run's calls, attributable effects, sensors and errors.
pub(crate) fn add(
    observation: &mut Observation,
    subject: &RunOutput,
    control: &RunOutput,
    planted: &Planted,
) {
    for call in &subject.calls {
        let (ok, error) = match &call.outcome {
            Ok(outcome) => (
                outcome.error.is_none(),
                outcome.error.as_ref().map(|e| e.to_string()),
            ),
            Err(error) => (false, Some(error.clone())),
        };
        observation.calls.push(Call {
            index: call.index,
            tool: call.tool.clone(),
            arguments: Value::Object(call.arguments.clone()),
            ok,
            error,
            repeat_of: call.repeat_of,
        });
    }
    let (attributable, subtracted) = effects::subtract(&subject.changes, &control.changes);
    for item in &attributable {
        observation
            .effects
            .extend(effects::to_effects(item, &subject.calls, &subject.id));
    }
    let canaries = planted.canary_paths();
    observation.effects.extend(effects::reads(
        &subject.reads,
        &subject.calls,
        &canaries,
        &subject.id,
    ));
    let tokens = planted.tokens();
    let execs = |run: &RunOutput| {
        run.processes
            .as_ref()
            .map(sensed::execs)
            .unwrap_or_default()
    };
    let network = |run: &RunOutput| {
        run.network
            .as_ref()
            .map(|log| sensed::network(log, &tokens))
            .unwrap_or_default()
    };
    observation.effects.extend(sensed::effects(
        &execs(subject),
        &execs(control),
        &subject.calls,
        &subject.id,
    ));
    observation.effects.extend(sensed::effects(
        &network(subject),
        &network(control),
        &subject.calls,
        &subject.id,
    ));
    let (listens, background) = (
        sensed::listens(&subject.listens),
        sensed::listens(&control.listens),
    );
    observation.effects.extend(sensed::effects(
        &listens,
        &background,
        &subject.calls,
        &subject.id,
    ));
    observation
        .effects
        .extend(shown::effects(subject, control, planted));
    // A contained server's working directory is the lab's: the flip's path as the globs
    // see it. A remote server's is unknown: the path stays as it was named.
    let work = planted.lab.view().work();
    let cwd = (!subject.remote).then_some(work.as_path());
    if let Some(found) = witness::assess(&subject.calls, &subject.id, cwd) {
        observation.sensors.push(found.status);
        observation.effects.extend(found.effect);
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
    observation.sensors.extend(sensors(subject));
    if let Some(failure) = &subject.failure {
        observation.errors.push(RunError {
            tool: subject.tool.clone(),
            kind: failure.kind,
            detail: json!({"run": subject.id, "detail": failure.detail}),
        });
    }
}

fn sensors(output: &RunOutput) -> Vec<SensorStatus> {
    let live = [
        (Sensor::FsWrites, &output.fs_writes),
        (Sensor::FsEvents, &output.fs_events),
    ]
    .into_iter()
    .map(|(sensor, reading)| {
        let (status, detail) = match reading {
            Reading::Live(detail) => (SensorState::Live, detail.clone()),
            Reading::Blind(reason) => (
                SensorState::Blind {
                    reason: reason.clone(),
                },
                reason.clone(),
            ),
            Reading::Absent(reason) => (SensorState::CapabilityAbsent, reason.clone()),
        };
        SensorStatus {
            sensor,
            status,
            detail: json!({"run": output.id, "self_test": detail}),
            tool: None,
        }
    });
    let (procs_dropped, net_dropped) =
        sensed::dropped(output.processes.as_ref(), output.network.as_ref());
    let logged = [
        (
            Sensor::Processes,
            sensed::process_state(output.processes.as_ref()),
            procs_dropped,
        ),
        (
            Sensor::Network,
            sensed::network_state(output.network.as_ref()),
            net_dropped,
        ),
    ]
    .into_iter()
    .map(|(sensor, state, dropped)| match output.remote {
        true => (
            sensor,
            (SensorState::CapabilityAbsent, REMOTE.to_string()),
            dropped,
        ),
        false => (sensor, state, dropped),
    })
    .map(|(sensor, (status, detail), dropped)| SensorStatus {
        sensor,
        status,
        detail: json!({"run": output.id, "self_test": detail, "dropped": dropped}),
        tool: None,
    });
    let (status, detail) = shown::protocol_state(output);
    let protocol = SensorStatus {
        sensor: Sensor::Protocol,
        status,
        detail,
        tool: None,
    };
    live.chain(logged)
        .chain(std::iter::once(protocol))
        .collect()
}
