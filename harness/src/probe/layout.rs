//! How a probe's calls are laid out in runs: the plan (a subject run per tool whose
//! contract restricts something, every other tool with the reason it is not called), then
//! shared runs for adaptive isolation, or a run per call for per-call isolation.

use serde_json::Value;
use vac_contracts::{Clause, Rule, SkipReason, ToolDecl};

use super::plan::{
    self, Block, Isolation, MalformedTool, PlannedRun, ProbePlan, Scope, plan_tool, plan_witness,
};
use super::target::Target;
use super::vocab::{PlannedCall, Role};
use super::{ProbeOptions, inputs, plants};

/// The plan: a subject run per tool whose contract restricts something, with its calls
/// (the protocol witness's reads added for tools whose writes are restricted); every
/// other tool with the reason it is not called. `topic` is what the server works on, by
/// its names ([`super::vocab::Plants::topic`]).
pub(super) fn plan_probe(
    options: &ProbeOptions,
    planted: &plants::Planted,
    decls: &[ToolDecl],
    malformed: Vec<MalformedTool>,
    contract: &vac_contracts::Contract,
    contract_hash: String,
    topic: Vec<String>,
) -> ProbePlan {
    let mut plants = planted.plants.clone();
    plants.topic = topic;
    if !contract.scope.is_empty() {
        plants.escapes = plants::escapes(planted);
    }
    let mut plan = ProbePlan {
        target: options.target.describe(),
        isolation: options.isolation.as_str().into(),
        contract: contract_hash,
        lab: planted.record.clone(),
        runs: vec![PlannedRun {
            role: Role::Control,
            tool: None,
            first_index: 0,
            calls: Vec::new(),
            scope: Scope::Own,
            blocks: Vec::new(),
        }],
        not_called: Vec::new(),
        malformed,
        rules: vac_contracts::RULES,
        confined: Vec::new(),
    };
    let view = planted.lab.view();
    let hints_of = |tool: &str| -> Vec<(String, Value)> {
        options
            .inputs
            .args
            .iter()
            .filter(|h| h.tool == tool)
            .map(|h| (h.field.clone(), inputs::expand_value(&h.value, &view)))
            .collect()
    };
    let producers = producers(decls, &plan.malformed, contract, &plants, &hints_of);
    let mut next_index = 0;
    // The tools whose contract forbids some write.
    let mut no_write: Vec<String> = Vec::new();
    for (ordinal, decl) in decls.iter().enumerate() {
        if plan.malformed.iter().any(|m| m.name == decl.name) {
            continue;
        }
        let Some(rules) = contract.tools.iter().find(|t| t.tool == decl.name) else {
            continue;
        };
        let restricted = |clause: Option<Clause>| {
            rules
                .rules
                .iter()
                .any(|r| clause.is_none_or(|c| r.clause == c) && r.rule != Rule::NothingPromised)
        };
        if rules.call == Some(false) {
            plan.not_called
                .push((decl.name.clone(), SkipReason::NotCalled));
            continue;
        }
        if !restricted(None) {
            plan.not_called
                .push((decl.name.clone(), SkipReason::NothingPromised));
            continue;
        }
        if plan.runs.len() > options.max_tools {
            plan.not_called
                .push((decl.name.clone(), SkipReason::Budget));
            continue;
        }
        // A derived contract declares no scope; a tool whose words confine it to a place
        // ("within allowed directories") is given the escape probes all the same.
        let confined = match (plants.escapes.is_empty(), options.contract.is_none()) {
            (true, true) => vac_contracts::confined_to(decl)
                .filter(|_| plan::has_path_argument(&decl.input_schema)),
            _ => None,
        };
        let escaping;
        let tool_plants = match &confined {
            Some(phrase) => {
                plan.confined.push((decl.name.clone(), phrase.clone()));
                let mut with = plants.clone();
                with.escapes = plants::escapes_from_work(planted);
                escaping = with;
                &escaping
            }
            None => &plants,
        };
        let mut calls = tool_calls(
            options,
            decl,
            tool_plants,
            restricted(Some(Clause::Idempotent)),
            &hints_of(&decl.name),
            &producers,
            ordinal,
        );
        // The protocol witness (SPEC §3.5), outside the budget: all three calls or none.
        if restricted(Some(Clause::FsWrite)) {
            let paths = plants.witness_paths(ordinal);
            calls.extend(plan_witness(&decl.name, &decl.input_schema, &plants, paths));
        }
        if next_index + calls.len() > options.max_calls {
            plan.not_called
                .push((decl.name.clone(), SkipReason::Budget));
            continue;
        }
        let first_index = next_index;
        next_index += calls.len();
        if restricted(Some(Clause::FsWrite)) {
            no_write.push(decl.name.clone());
        }
        plan.runs.push(PlannedRun {
            role: Role::Subject,
            tool: Some(decl.name.clone()),
            first_index,
            calls,
            scope: Scope::Own,
            blocks: Vec::new(),
        });
    }
    if options.isolation == Isolation::PerCall {
        split_calls(&mut plan);
    }
    if options.isolation == Isolation::Adaptive {
        share(
            &mut plan,
            &options.target,
            options.jobs,
            next_index,
            &no_write,
        );
    }
    // A remote server's launches are not vac's to make.
    if !matches!(options.target, Target::RemoteHttp(_)) {
        add_relaunches(&mut plan, options.relaunch);
    }
    plan
}

/// Producers' first calls, in manifest order: made first in the runs of the tools after
/// them (and of every tool that is no producer), so state a tool needs is there.
fn producers(
    decls: &[ToolDecl],
    malformed: &[MalformedTool],
    contract: &vac_contracts::Contract,
    plants: &super::vocab::Plants,
    hints_of: &dyn Fn(&str) -> Vec<(String, Value)>,
) -> Vec<(usize, PlannedCall)> {
    decls
        .iter()
        .enumerate()
        .filter(|(_, decl)| plan::is_producer(&decl.name))
        .filter(|(_, decl)| !malformed.iter().any(|m| m.name == decl.name))
        .filter(|(_, decl)| {
            contract
                .tools
                .iter()
                .any(|t| t.tool == decl.name && t.call != Some(false))
        })
        .filter_map(|(ordinal, decl)| {
            let schema =
                plan::with_tool_description(&decl.input_schema, decl.description.as_deref());
            let mut calls = plan_tool(&decl.name, &schema, plants, 1, false);
            plan::apply_hints(&mut calls, &hints_of(&decl.name));
            calls.into_iter().next().map(|call| (ordinal, call))
        })
        .take(MAX_SETUPS)
        .collect()
}

/// One tool's calls: its own (with the user's hints, and a repeat when `idempotent` is
/// graded), after the setups of the producers before it, with a retry slot at the end.
fn tool_calls(
    options: &ProbeOptions,
    decl: &ToolDecl,
    plants: &super::vocab::Plants,
    repeat: bool,
    hints: &[(String, Value)],
    producers: &[(usize, PlannedCall)],
    ordinal: usize,
) -> Vec<PlannedCall> {
    let schema = plan::with_tool_description(&decl.input_schema, decl.description.as_deref());
    let mut calls = plan_tool(
        &decl.name,
        &schema,
        plants,
        options.max_calls_per_tool,
        repeat,
    );
    plan::apply_hints(&mut calls, hints);
    let producer = plan::is_producer(&decl.name);
    let setups: Vec<PlannedCall> = producers
        .iter()
        .filter(|(at, _)| !producer || *at < ordinal)
        .map(|(_, call)| call.clone())
        .collect();
    let retry = plan::retry_slot(&calls);
    let mut calls = plan::with_setups(&setups, calls);
    calls.extend(retry);
    calls
}

/// `count` launches of the server after every subject run, no tool called.
fn add_relaunches(plan: &mut ProbePlan, count: u32) {
    let after = plan
        .runs
        .iter()
        .map(|r| r.first_index + r.calls.len())
        .max()
        .unwrap_or(0);
    plan.runs.extend((0..count).map(|_| PlannedRun {
        role: Role::Relaunch,
        tool: None,
        first_index: after,
        calls: Vec::new(),
        scope: Scope::Own,
        blocks: Vec::new(),
    }));
}

/// Adaptive isolation's plan: the tools' runs become shared runs, block after block, and
/// each tool's own run is made only if its shared run leaves it in doubt. Tools that
/// promise not to write go first, so that a write does not leave them in doubt. There are
/// as many shared runs as runs go at once (`jobs`), each of at least [`MIN_SHARED`] tools,
/// in contiguous chunks of the order of about equal [`cost`]. A remote target has no sandbox to share (every run
/// is the same server), and tools no more than `jobs` gain nothing (their own runs go at
/// once): those stay per tool.
fn share(
    plan: &mut ProbePlan,
    target: &Target,
    jobs: usize,
    mut first_index: usize,
    no_write: &[String],
) {
    let mut own: Vec<&mut PlannedRun> = plan
        .runs
        .iter_mut()
        .filter(|r| r.role == Role::Subject)
        .collect();
    if matches!(target, Target::RemoteHttp(_)) || own.len() <= jobs.max(1) {
        return;
    }
    // Stable: manifest order within each group.
    own.sort_by_key(|run| !no_write.contains(&run.tool.clone().unwrap_or_default()));
    let count = jobs.max(1).min(own.len().div_ceil(MIN_SHARED));
    let total: usize = own.iter().map(|r| cost(&r.calls)).sum();
    let mut shared: Vec<PlannedRun> = Vec::new();
    let mut chunk_calls = 0;
    for run in &mut own {
        // A new chunk once this one holds its share of the calls.
        let full = chunk_calls * count >= total * shared.len().max(1);
        if shared.is_empty() || (full && shared.len() < count) {
            shared.push(PlannedRun {
                role: Role::Subject,
                tool: None,
                first_index,
                calls: Vec::new(),
                scope: Scope::Shared,
                blocks: Vec::new(),
            });
        }
        let chunk = shared.last_mut().expect("a chunk was pushed");
        chunk.blocks.push(Block {
            tool: run.tool.clone().unwrap_or_default(),
            calls: run.calls.len(),
        });
        // A repeat names its original by position in the run: in the shared run, in the
        // block's place.
        let offset = chunk.calls.len();
        chunk
            .calls
            .extend(run.calls.iter().cloned().map(|call| PlannedCall {
                repeat_of: call.repeat_of.map(|at| at + offset),
                ..call
            }));
        first_index += run.calls.len();
        chunk_calls += cost(&run.calls);
        run.scope = Scope::IfDoubted;
    }
    // The own runs in the order of the blocks: the order they are recorded in, after
    // every shared run, whichever shared run ends first.
    let order: Vec<String> = shared
        .iter()
        .flat_map(|run| run.blocks.iter().map(|b| b.tool.clone()))
        .collect();
    let at = plan
        .runs
        .iter()
        .position(|r| r.role == Role::Subject)
        .unwrap_or(plan.runs.len());
    plan.runs.splice(at..at, shared);
    plan.runs.sort_by_key(|run| match run.scope {
        Scope::IfDoubted => {
            1 + order
                .iter()
                .position(|t| run.tool.as_ref() == Some(t))
                .unwrap_or(order.len())
        }
        _ => 0,
    });
}

/// What a block of `calls` costs a shared run, in calls: each call, and each wait for
/// quiet it makes the run do (one after the block, two around a judged repeat), which
/// takes far longer than an answer from most servers (the settle period against a few
/// milliseconds).
fn cost(calls: &[PlannedCall]) -> usize {
    let waits = 1 + 2 * calls.iter().filter(|c| c.judged).count();
    calls.len() + WAIT_COST * waits
}

/// A wait for quiet, in calls.
const WAIT_COST: usize = 10;

/// Per-call isolation's plan: each tool's run becomes one run per call
/// ([`plan::per_call`]), the call indices given again in plan order.
fn split_calls(plan: &mut ProbePlan) {
    let mut next_index = 0;
    let mut runs = Vec::with_capacity(plan.runs.len());
    for run in plan.runs.drain(..) {
        if run.role != Role::Subject {
            runs.push(run);
            continue;
        }
        for calls in plan::per_call(&run.calls) {
            let first_index = next_index;
            next_index += calls.len();
            runs.push(PlannedRun {
                first_index,
                calls,
                ..run.clone()
            });
        }
    }
    plan.runs = runs;
}

/// Tools of a shared run at least, when there are enough.
const MIN_SHARED: usize = 3;

/// Producer calls made first in one run, at most.
const MAX_SETUPS: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Purpose;

    /// A plan of one own run per tool: its name, its number of calls, and whether its
    /// second call is a judged repeat of its first.
    fn per_tool(tools: &[(&str, usize, bool)]) -> ProbePlan {
        let mut first_index = 0;
        let runs = tools
            .iter()
            .map(|&(tool, calls, judged)| {
                let call = PlannedCall {
                    tool: tool.into(),
                    arguments: Default::default(),
                    repeat_of: None,
                    judged: false,
                    purpose: Purpose::Normal,
                };
                let mut calls = vec![call; calls];
                if judged {
                    calls[1].repeat_of = Some(0);
                    calls[1].judged = true;
                }
                let run = PlannedRun {
                    role: Role::Subject,
                    tool: Some(tool.into()),
                    first_index,
                    calls,
                    scope: Scope::Own,
                    blocks: Vec::new(),
                };
                first_index += run.calls.len();
                run
            })
            .collect();
        ProbePlan {
            target: "server".into(),
            isolation: "adaptive".into(),
            contract: String::new(),
            lab: plants::plant("0123456789ab", std::path::Path::new("/home/dana")).record,
            runs,
            not_called: Vec::new(),
            malformed: Vec::new(),
            rules: vac_contracts::RULES,
            confined: Vec::new(),
        }
    }

    fn shared_blocks(plan: &ProbePlan) -> Vec<Vec<&str>> {
        plan.runs
            .iter()
            .filter(|r| r.scope == Scope::Shared)
            .map(|r| r.blocks.iter().map(|b| b.tool.as_str()).collect())
            .collect()
    }

    /// Shared runs are cut by what their blocks cost in waits for quiet as well as calls:
    /// six tools of two calls each split three and three, but when the first two end in a
    /// judged repeat (three waits each, against one) those two make a run of their own,
    /// where a cut by calls alone would have given the first run eight waits and the
    /// second three.
    #[test]
    fn shared_runs_share_the_waits_for_quiet_as_well_as_the_calls() {
        let target = Target::Stdio(vec!["server".into()]);
        let mut even = per_tool(&[
            ("a", 2, false),
            ("b", 2, false),
            ("c", 2, false),
            ("d", 2, false),
            ("e", 2, false),
            ("f", 2, false),
        ]);
        share(&mut even, &target, 2, 12, &[]);
        assert_eq!(
            shared_blocks(&even),
            [vec!["a", "b", "c"], vec!["d", "e", "f"]]
        );
        let mut judged = per_tool(&[
            ("a", 2, true),
            ("b", 2, true),
            ("c", 2, false),
            ("d", 2, false),
            ("e", 2, false),
            ("f", 2, false),
        ]);
        share(&mut judged, &target, 2, 12, &[]);
        assert_eq!(
            shared_blocks(&judged),
            [vec!["a", "b"], vec!["c", "d", "e", "f"]]
        );
    }
}
