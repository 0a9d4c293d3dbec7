//! Shared by the integration tests, the golden generator and the benchmark:
//! a deterministic sample campaign and the tampering that golden chains apply to it.

// Each test binary uses a different subset, so unused items are expected here and
// `#[expect]` would misfire in the binaries that do use them.
#![allow(dead_code, unreachable_pub)]

pub mod golden;

use std::path::Path;

use serde_json::json;
use vac_receipts::{
    Body, CampaignStart, Clock, Contract, Digest, Direction, Effect, Frame, Host, Limits,
    ReceiptWriter, Role, RunEnd, RunStart, RunStatus, SandboxConfig, SelfTest, SensorStatus,
    SigningKey, Verdict, VerdictKind, WriterOptions,
};

/// The fixed test key golden chains are signed with. Never a real key.
pub fn golden_key() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

/// Another key: the one a forger signs with.
pub fn forger_key() -> SigningKey {
    SigningKey::from_bytes(&[66; 32])
}

/// Deterministic options: fixed clock, small inline cap so that blobs appear.
pub fn fixed_options() -> WriterOptions {
    let limits = Limits {
        inline_max: 96,
        blob_max: 4096,
        run_blob_max: 1 << 20,
    };
    WriterOptions {
        limits,
        clock: Clock::Fixed {
            start: 1_750_000_000_000_000_000,
            step: 1_000_000,
        },
    }
}

pub fn campaign_start() -> CampaignStart {
    CampaignStart {
        vac_version: "0.1.0".into(),
        host: Host {
            hostname: "golden".into(),
            kernel: "6.1.0".into(),
            arch: "x86_64".into(),
        },
        config_hash: Digest::of(b"[campaign]\nseed = 42\n"),
        config: serde_json::Value::Null,
        seed: 42,
    }
}

pub const CONTRACT: &str = "[server]\nname = \"twin\"\n\n[tools.read_note]\nfs.write = []\n";

/// Writes a small but complete campaign, unsealed: contract, a control and a
/// subject run (frames inline, non-UTF-8 and in blobs, self-tests, an effect) and
/// verdicts. The caller seals it or not.
pub fn write_sample(dir: &Path) -> ReceiptWriter {
    let mut w = ReceiptWriter::create(dir, fixed_options(), campaign_start()).expect("create");
    w.append(Body::Contract(Contract::new("twin", CONTRACT)))
        .expect("contract");
    for (run_id, role) in [("control-0", Role::Control), ("subject-0", Role::Subject)] {
        write_run(&mut w, run_id, role);
    }
    for (clause, verdict, reason) in [
        (
            "fs.write",
            VerdictKind::Confirmed,
            "appended to an undeclared audit log",
        ),
        ("exec", VerdictKind::Refuted, "1 call, process sensor live"),
    ] {
        let body = Verdict {
            run_id: "subject-0".into(),
            tool: "read_note".into(),
            clause: clause.into(),
            verdict,
            reason: reason.into(),
            evidence: json!({"calls": [0], "sensors": ["fs", "processes"]}).into(),
        };
        w.append(Body::Verdict(body)).expect("verdict");
    }
    w
}

fn write_run(w: &mut ReceiptWriter, run_id: &str, role: Role) {
    let start = RunStart {
        run_id: run_id.into(),
        target: "fixture --mode dishonest".into(),
        role,
        repetition: 0,
    };
    w.append(Body::RunStart(start)).expect("run start");
    let config = json!({"memory_max": 268435456, "pids_max": 64, "network": "sinkhole"});
    w.append(Body::SandboxConfig(SandboxConfig {
        run_id: run_id.into(),
        config,
    }))
    .expect("config");
    for sensor in ["fs", "processes"] {
        let body = SelfTest {
            run_id: run_id.into(),
            sensor: sensor.into(),
            status: SensorStatus::Live,
            detail: "marker seen".into(),
        };
        w.append(Body::SelfTest(body)).expect("self test");
    }
    let frames: [(Direction, Vec<u8>); 3] = [
        (
            Direction::ToServer,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec(),
        ),
        (
            Direction::Stderr,
            vec![0xff, 0xfe, b'l', b'o', b'g', 0x00, b'\n'],
        ),
        (
            Direction::FromServer,
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"tools\":[{}]}}}}",
                "{\"name\":\"read_note\"},".repeat(8)
            )
            .into_bytes(),
        ),
    ];
    for (i, (direction, bytes)) in frames.into_iter().enumerate() {
        let payload = w.payload(&bytes).expect("payload");
        let frame = Frame {
            run_id: run_id.into(),
            direction,
            t_ns: 1000 * i as u64,
            bytes: payload,
        };
        w.append(Body::Frame(frame)).expect("frame");
    }
    if role == Role::Subject {
        let written = b"2025-01-01 read_note called\n".repeat(8);
        let payload = w.payload(&written).expect("payload");
        let effect = Effect {
            run_id: run_id.into(),
            call: Some(0),
            sensor: "fs".into(),
            class: "fs.write".into(),
            target: "~/.twin/audit.log".into(),
            detail: json!({"size": written.len(), "existed_before": false}),
            payloads: vec![payload],
        };
        w.append(Body::Effect(effect)).expect("effect");
    }
    let end = RunEnd {
        run_id: run_id.into(),
        status: RunStatus::Completed,
        detail: String::new(),
    };
    w.append(Body::RunEnd(end)).expect("run end");
}
