//! The probe's shared vocabulary: the data every stage passes on, owned by none of them.
//! Data only: these modules import nothing of the stages, so the stages' imports run one
//! way (plan → run → event/record → observe → grade → report).

mod calls;
mod lab;
mod output;
mod seen;

pub(crate) use calls::{KitFile, Revised};
pub use calls::{PlannedCall, Plants, Purpose};
pub(crate) use lab::{Canary, LabRecord};
pub(crate) use output::{
    CallRecord, Manifests, PathStates, Reading, Role, RunFailure, RunOutput, SensorReadings,
    SessionFailed, Settled, Unanswered, judged,
};
pub(crate) use seen::{
    ConnectSeen, DatagramSeen, DnsSeen, ExecSeen, LabEvent, Lost, NetSeen, ObservedChange,
};
