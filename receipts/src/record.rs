//! The record envelope and its canonical form: one JSON object per line,
//! `{"v":…,"seq":…,"prev":…,"ts":…,"kind":…,"body":{…}}`, fields in that order.

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::body::{
    CampaignStart, Contract, Effect, Event, Frame, Member, Plan, RunEnd, RunStart, SandboxConfig,
    Seal, SelfTest, Verdict,
};
use crate::digest::Digest;
use crate::payload::Payload;

/// The format version this crate writes and the only one it reads.
pub const FORMAT_VERSION: u32 = 1;

/// Why one line is not a record of this format.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("not a receipt record")]
    NotARecord(#[source] serde_json::Error),
    #[error("not a receipt record: no format version field `v`")]
    NoVersion,
    #[error("unknown format version {found} (this reader knows version {FORMAT_VERSION})")]
    UnknownVersion { found: u64 },
    #[error("malformed record envelope")]
    Envelope(#[source] serde_json::Error),
    #[error("unknown record kind {kind:?}")]
    UnknownKind { kind: String },
    #[error("malformed {kind} body")]
    Body {
        kind: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("record is not in canonical form (re-serialising it gives different bytes)")]
    NotCanonical,
}

/// The closed set of record kinds of format version 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    CampaignStart,
    Contract,
    RunStart,
    SandboxConfig,
    Frame,
    SelfTest,
    Effect,
    Verdict,
    RunEnd,
    Seal,
    Plan,
    Event,
    Member,
}

const KINDS: [(Kind, &str); 13] = [
    (Kind::CampaignStart, "campaign_start"),
    (Kind::Contract, "contract"),
    (Kind::RunStart, "run_start"),
    (Kind::SandboxConfig, "sandbox_config"),
    (Kind::Frame, "frame"),
    (Kind::SelfTest, "self_test"),
    (Kind::Effect, "effect"),
    (Kind::Verdict, "verdict"),
    (Kind::RunEnd, "run_end"),
    (Kind::Seal, "seal"),
    (Kind::Plan, "plan"),
    (Kind::Event, "event"),
    (Kind::Member, "member"),
];

impl Kind {
    /// The name written in the `kind` field.
    pub fn as_str(self) -> &'static str {
        KINDS
            .iter()
            .find(|(kind, _)| *kind == self)
            .map_or("", |(_, name)| name)
    }

    /// The kind written as `name`, if this version has one.
    pub fn from_name(name: &str) -> Option<Kind> {
        KINDS
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(kind, _)| *kind)
    }
}

/// A typed record body; its variant is the record's kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    CampaignStart(CampaignStart),
    Contract(Contract),
    RunStart(RunStart),
    SandboxConfig(SandboxConfig),
    Frame(Frame),
    SelfTest(SelfTest),
    Effect(Effect),
    Verdict(Verdict),
    RunEnd(RunEnd),
    Seal(Seal),
    Plan(Plan),
    Event(Event),
    Member(Member),
}

impl Body {
    /// This body's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Body::CampaignStart(_) => Kind::CampaignStart,
            Body::Contract(_) => Kind::Contract,
            Body::RunStart(_) => Kind::RunStart,
            Body::SandboxConfig(_) => Kind::SandboxConfig,
            Body::Frame(_) => Kind::Frame,
            Body::SelfTest(_) => Kind::SelfTest,
            Body::Effect(_) => Kind::Effect,
            Body::Verdict(_) => Kind::Verdict,
            Body::RunEnd(_) => Kind::RunEnd,
            Body::Seal(_) => Kind::Seal,
            Body::Plan(_) => Kind::Plan,
            Body::Event(_) => Kind::Event,
            Body::Member(_) => Kind::Member,
        }
    }

    /// The payloads this body carries (the ones whose blobs verification reads).
    pub fn payloads(&self) -> Vec<&Payload> {
        match self {
            Body::Frame(frame) => vec![&frame.bytes],
            Body::Effect(effect) => effect.payloads.iter().collect(),
            Body::Event(event) => event.payloads.iter().collect(),
            _ => Vec::new(),
        }
    }

    /// True when the free-form values this body keeps as text are in canonical form
    /// (serialising the record writes them back as they are, so this is checked apart).
    fn free_form_canonical(&self) -> bool {
        match self {
            Body::Event(event) => event.event.is_canonical(),
            Body::Verdict(verdict) => verdict.evidence.is_canonical(),
            _ => true,
        }
    }

    /// What is wrong with this body on its own, if anything.
    pub(crate) fn defect(&self) -> Option<String> {
        if let Body::Contract(contract) = self {
            let actual = Digest::of(contract.text.as_bytes());
            if actual != contract.blake3 {
                return Some(format!(
                    "contract {:?} text hashes to {actual}, record says {}",
                    contract.name, contract.blake3
                ));
            }
        }
        self.payloads().into_iter().find_map(Payload::defect)
    }

    fn serialize_into<S: SerializeStruct>(&self, s: &mut S) -> Result<(), S::Error> {
        match self {
            Body::CampaignStart(b) => s.serialize_field("body", b),
            Body::Contract(b) => s.serialize_field("body", b),
            Body::RunStart(b) => s.serialize_field("body", b),
            Body::SandboxConfig(b) => s.serialize_field("body", b),
            Body::Frame(b) => s.serialize_field("body", b),
            Body::SelfTest(b) => s.serialize_field("body", b),
            Body::Effect(b) => s.serialize_field("body", b),
            Body::Verdict(b) => s.serialize_field("body", b),
            Body::RunEnd(b) => s.serialize_field("body", b),
            Body::Seal(b) => s.serialize_field("body", b),
            Body::Plan(b) => s.serialize_field("body", b),
            Body::Event(b) => s.serialize_field("body", b),
            Body::Member(b) => s.serialize_field("body", b),
        }
    }

    fn parse(kind: Kind, raw: &RawValue) -> Result<Body, serde_json::Error> {
        Body::parse_text(kind, raw.get())
    }

    /// True when serialising this body gives exactly `bytes`.
    fn writes_as(&self, bytes: &[u8]) -> bool {
        match self {
            Body::CampaignStart(b) => writes_as(b, bytes),
            Body::Contract(b) => writes_as(b, bytes),
            Body::RunStart(b) => writes_as(b, bytes),
            Body::SandboxConfig(b) => writes_as(b, bytes),
            Body::Frame(b) => writes_as(b, bytes),
            Body::SelfTest(b) => writes_as(b, bytes),
            Body::Effect(b) => writes_as(b, bytes),
            Body::Verdict(b) => writes_as(b, bytes),
            Body::RunEnd(b) => writes_as(b, bytes),
            Body::Seal(b) => writes_as(b, bytes),
            Body::Plan(b) => writes_as(b, bytes),
            Body::Event(b) => writes_as(b, bytes),
            Body::Member(b) => writes_as(b, bytes),
        }
    }

    fn parse_text(kind: Kind, text: &str) -> Result<Body, serde_json::Error> {
        Ok(match kind {
            Kind::CampaignStart => Body::CampaignStart(serde_json::from_str(text)?),
            Kind::Contract => Body::Contract(serde_json::from_str(text)?),
            Kind::RunStart => Body::RunStart(serde_json::from_str(text)?),
            Kind::SandboxConfig => Body::SandboxConfig(serde_json::from_str(text)?),
            Kind::Frame => Body::Frame(serde_json::from_str(text)?),
            Kind::SelfTest => Body::SelfTest(serde_json::from_str(text)?),
            Kind::Effect => Body::Effect(serde_json::from_str(text)?),
            Kind::Verdict => Body::Verdict(serde_json::from_str(text)?),
            Kind::RunEnd => Body::RunEnd(serde_json::from_str(text)?),
            Kind::Seal => Body::Seal(serde_json::from_str(text)?),
            Kind::Plan => Body::Plan(serde_json::from_str(text)?),
            Kind::Event => Body::Event(serde_json::from_str(text)?),
            Kind::Member => Body::Member(serde_json::from_str(text)?),
        })
    }
}

/// One record: the envelope and its typed body.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Format version; always [`FORMAT_VERSION`] for records this crate reads.
    pub v: u32,
    /// Position in the log, from 0, without gaps.
    pub seq: u64,
    /// blake3 of the previous line's exact bytes; zeros for the first record.
    pub prev: Digest,
    /// Wall-clock time of writing, nanoseconds since the Unix epoch (UTC).
    pub ts: u64,
    pub body: Body,
}

impl Serialize for Record {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Record", 6)?;
        s.serialize_field("v", &self.v)?;
        s.serialize_field("seq", &self.seq)?;
        s.serialize_field("prev", &self.prev)?;
        s.serialize_field("ts", &self.ts)?;
        s.serialize_field("kind", self.body.kind().as_str())?;
        self.body.serialize_into(&mut s)?;
        s.end()
    }
}

/// True when serialising `value` gives exactly `bytes`; stops at the first byte that
/// differs, without building the text.
fn writes_as<T: Serialize + ?Sized>(value: &T, bytes: &[u8]) -> bool {
    struct Compare<'a>(&'a [u8]);
    impl std::io::Write for Compare<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            match self.0.strip_prefix(buf) {
                Some(rest) => {
                    self.0 = rest;
                    Ok(buf.len())
                }
                None => Err(std::io::ErrorKind::InvalidData.into()),
            }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut rest = Compare(bytes);
    serde_json::to_writer(&mut rest, value).is_ok() && rest.0.is_empty()
}

/// An event body spelt `{"run_id":"…","event":…}` with a run id free of escapes and an
/// event value the scan finds canonical: exactly what serialising the parsed body writes,
/// so it needs no further check. Anything else (payloads, escapes, floats) is `None` and
/// read by serde instead.
fn quick_event(kind: Kind, body: &str) -> Option<crate::body::Event> {
    if kind != Kind::Event {
        return None;
    }
    let rest = body.as_bytes().strip_prefix(br#"{"run_id":""#)?;
    let end = rest
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    if rest[end] != b'"' {
        return None;
    }
    let run_id = std::str::from_utf8(&rest[..end]).ok()?;
    let value = rest[end + 1..].strip_prefix(br#","event":"#)?;
    let len = crate::json::canonical_prefix(value)?;
    if &value[len..] != b"}" {
        return None;
    }
    // The scan has accepted the value whole: valid JSON, not parsed again; and a slice
    // of `body` between ASCII delimiters, so already UTF-8.
    let start = body.len() - value.len();
    let event = crate::json::Json::from_scanned(body.get(start..start + len)?);
    Some(crate::body::Event {
        run_id: run_id.to_string(),
        event,
        payloads: Vec::new(),
    })
}

/// A `u64` as serde_json writes one (no sign, no leading zero), and the bytes after it.
fn canonical_u64(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let (number, rest) = bytes.split_at(digits);
    if digits == 0 || (digits > 1 && number[0] == b'0') {
        return None;
    }
    let value = number.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })?;
    Some((value, rest))
}

#[derive(Deserialize)]
struct VersionProbe {
    v: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[serde(rename = "v")]
    _v: u32,
    seq: u64,
    prev: Digest,
    ts: u64,
    kind: &'a str,
    #[serde(borrow)]
    body: &'a RawValue,
}

impl Record {
    /// The canonical bytes of this record: its line without the newline.
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = Vec::with_capacity(256);
        self.write_line(&mut line);
        line
    }

    /// Replaces the contents of `out` with the canonical bytes of this record.
    pub(crate) fn write_line(&self, out: &mut Vec<u8>) {
        out.clear();
        // Serialising plain structs, strings, integers and `Value`s into a Vec cannot
        // fail; should it ever, the empty line fails every later check.
        if serde_json::to_writer(&mut *out, self).is_err() {
            out.clear();
        }
    }

    /// Parses one line (without its newline), refusing anything but the canonical form.
    pub fn from_line(line: &[u8]) -> Result<Record, RecordError> {
        // Nearly every line is canonical: read its envelope by its fixed shape and check
        // only the body. Anything the quick reading does not accept is read again in full,
        // which gives the precise error (or finds the line canonical after all).
        if let Some(record) = Record::from_canonical_envelope(line) {
            return Ok(record);
        }
        Record::from_line_in_full(line)
    }

    /// The record of `line` when its envelope is spelt exactly as written,
    /// `{"v":1,"seq":…,"prev":"…","ts":…,"kind":"…","body":…}`, and its body is canonical.
    fn from_canonical_envelope(line: &[u8]) -> Option<Record> {
        let rest = line.strip_prefix(br#"{"v":1,"seq":"#)?;
        let (seq, rest) = canonical_u64(rest)?;
        let rest = rest.strip_prefix(br#","prev":""#)?;
        let prev = Digest::from_hex(std::str::from_utf8(rest.get(..64)?).ok()?)?;
        let rest = rest[64..].strip_prefix(br#"","ts":"#)?;
        let (ts, rest) = canonical_u64(rest)?;
        let rest = rest.strip_prefix(br#","kind":""#)?;
        let end = rest.iter().position(|&b| b == b'"')?;
        let kind = Kind::from_name(std::str::from_utf8(&rest[..end]).ok()?)?;
        let body = rest[end + 1..]
            .strip_prefix(br#","body":"#)?
            .strip_suffix(b"}")?;
        let body = std::str::from_utf8(body).ok()?;
        // Nearly every record is an event: read it by its fixed shape when it has it,
        // which settles its canonical form on the way.
        let parsed = match quick_event(kind, body) {
            Some(event) => Body::Event(event),
            None => {
                let parsed = Body::parse_text(kind, body).ok()?;
                if !(parsed.free_form_canonical() && parsed.writes_as(body.as_bytes())) {
                    return None;
                }
                parsed
            }
        };
        Some(Record {
            v: FORMAT_VERSION,
            seq,
            prev,
            ts,
            body: parsed,
        })
    }

    /// Parses one line in full: its version, its envelope as JSON, its body, and then the
    /// canonical check by writing the record again.
    fn from_line_in_full(line: &[u8]) -> Result<Record, RecordError> {
        // Canonical lines start with the version; anything else is probed for a clear error.
        if !line.starts_with(br#"{"v":1,"#) {
            let probe: VersionProbe =
                serde_json::from_slice(line).map_err(RecordError::NotARecord)?;
            match probe.v {
                None => return Err(RecordError::NoVersion),
                Some(found) if found != u64::from(FORMAT_VERSION) => {
                    return Err(RecordError::UnknownVersion { found });
                }
                Some(_) => {}
            }
        }
        let envelope: Envelope<'_> = serde_json::from_slice(line).map_err(RecordError::Envelope)?;
        let kind = Kind::from_name(envelope.kind).ok_or_else(|| RecordError::UnknownKind {
            kind: envelope.kind.to_owned(),
        })?;
        let body = Body::parse(kind, envelope.body).map_err(|source| RecordError::Body {
            kind: kind.as_str(),
            source,
        })?;
        let record = Record {
            v: FORMAT_VERSION,
            seq: envelope.seq,
            prev: envelope.prev,
            ts: envelope.ts,
            body,
        };
        if !record.body.free_form_canonical() || !writes_as(&record, line) {
            return Err(RecordError::NotCanonical);
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{Host, RunStatus};

    fn run_end() -> Record {
        let body = RunEnd {
            run_id: "r1".into(),
            status: RunStatus::Completed,
            detail: String::new(),
        };
        Record {
            v: FORMAT_VERSION,
            seq: 3,
            prev: Digest::ZERO,
            ts: 7,
            body: Body::RunEnd(body),
        }
    }

    #[test]
    fn canonical_line_has_fixed_field_order() {
        let line = String::from_utf8(run_end().to_line()).expect("utf-8");
        let zeros = "0".repeat(64);
        assert_eq!(
            line,
            format!(
                r#"{{"v":1,"seq":3,"prev":"{zeros}","ts":7,"kind":"run_end","body":{{"run_id":"r1","status":"completed","detail":""}}}}"#
            )
        );
        assert_eq!(
            Record::from_line(line.as_bytes()).expect("parses"),
            run_end()
        );
    }

    /// The quick reading of the envelope and the full one agree: on the canonical line,
    /// and on every spelling of it that differs in one place, which both refuse.
    #[test]
    fn the_quick_envelope_reading_agrees_with_the_full_one() {
        let event = Record {
            v: FORMAT_VERSION,
            seq: 12,
            prev: Digest::of(b"x"),
            ts: 1_700_000_000_000_000_000,
            body: Body::Event(crate::body::Event {
                run_id: "r\"1".into(),
                event: serde_json::json!({"type": "dns", "name": "a.invalid.", "t_ns": 5}).into(),
                payloads: Vec::new(),
            }),
        };
        let mut plain = event.clone();
        if let Body::Event(e) = &mut plain.body {
            e.run_id = "r1".into();
        }
        // The plain one takes the quick reading of an event body, the escaped one does not.
        let body = |record: &Record| {
            let line = String::from_utf8(record.to_line()).unwrap();
            let (_, body) = line.split_once(",\"body\":").unwrap();
            body.strip_suffix('}').unwrap().to_string()
        };
        assert!(quick_event(Kind::Event, &body(&plain)).is_some());
        assert!(quick_event(Kind::Event, &body(&event)).is_none());
        for record in [run_end(), event, plain] {
            let line = String::from_utf8(record.to_line()).expect("utf-8");
            assert_eq!(
                Record::from_canonical_envelope(line.as_bytes()),
                Some(record.clone())
            );
            assert_eq!(
                Record::from_line_in_full(line.as_bytes()).ok(),
                Some(record.clone())
            );
            let hex = record.prev.to_string();
            let variants = [
                line.replacen(",\"seq\":", ",\"seq\":0", 1),
                line.replacen(",\"seq\":", ", \"seq\":", 1),
                line.replacen(&hex, &hex.to_uppercase(), 1),
                line.replacen("\"kind\":", "\"kind\" :", 1),
                line.replacen(",\"body\":{", ",\"body\":{ ", 1),
                line.replacen("\"ts\":", "\"ts\":0", 1),
                format!("{line} "),
                line.replacen("\"name\":\"a.invalid.\",\"t_ns\"", "\"t_ns\"", 1)
                    .replacen(
                        "\"type\":\"dns\"",
                        "\"type\":\"dns\",\"name\":\"a.invalid.\"",
                        1,
                    ),
                line.replacen("\"type\":", "\"type\": ", 1),
                line.replacen("\"t_ns\":5", "\"t_ns\":05", 1),
                line.replacen("\"t_ns\":5", "\"t_ns\":5e0", 1),
                line.replacen("}}}", "},\"payloads\":[]}}", 1),
                line.replacen("\"run_id\":\"r1\"", "\"run_id\":\"r\\u0031\"", 1),
            ];
            for variant in variants.iter().filter(|v| **v != line) {
                let quick = Record::from_canonical_envelope(variant.as_bytes());
                let full = Record::from_line(variant.as_bytes());
                assert!(quick.is_none(), "the quick reading refuses {variant}");
                assert!(full.is_err(), "the full reading refuses {variant}");
            }
        }
    }

    #[test]
    fn every_kind_name_round_trips() {
        for (kind, name) in KINDS {
            assert_eq!(kind.as_str(), name);
            assert_eq!(Kind::from_name(name), Some(kind));
        }
    }

    #[test]
    fn whitespace_or_reordering_is_not_canonical() {
        let line = String::from_utf8(run_end().to_line()).expect("utf-8");
        let spaced = line.replacen("\"seq\":3", "\"seq\": 3", 1);
        assert!(matches!(
            Record::from_line(spaced.as_bytes()),
            Err(RecordError::NotCanonical)
        ));
    }

    #[test]
    fn versions_and_garbage_are_told_apart() {
        let future = r#"{"v":2,"seq":0,"anything":"else"}"#;
        assert!(matches!(
            Record::from_line(future.as_bytes()),
            Err(RecordError::UnknownVersion { found: 2 })
        ));
        assert!(matches!(
            Record::from_line(b"\x89PNG"),
            Err(RecordError::NotARecord(_))
        ));
        assert!(matches!(
            Record::from_line(br#"{"seq":0}"#),
            Err(RecordError::NoVersion)
        ));
    }

    #[test]
    fn contract_hash_is_checked() {
        let mut contract = Contract::new("honest", "[tools]\n");
        assert_eq!(Body::Contract(contract.clone()).defect(), None);
        contract.text.push(' ');
        assert!(Body::Contract(contract).defect().is_some());
        let host = Host {
            hostname: "h".into(),
            kernel: "k".into(),
            arch: "a".into(),
        };
        let start = CampaignStart {
            vac_version: "0".into(),
            host,
            config_hash: Digest::ZERO,
            config: serde_json::Value::Null,
            seed: 1,
        };
        assert_eq!(Body::CampaignStart(start).defect(), None);
    }
}
