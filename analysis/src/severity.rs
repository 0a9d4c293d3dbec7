//! How much a confirmed cell matters, per clause: separate from the verdict, which says
//! only whether the tool broke its promise. The scale is GitHub's `security-severity`
//! (0.1–3.9 low, 4.0–6.9 medium, 7.0–8.9 high, 9.0–10.0 critical).

/// One clause's severity and the text of its SARIF rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Severity {
    /// `critical`, `high`, `medium`, `low`; `none` for a cell that is not confirmed.
    pub name: &'static str,
    /// GitHub's `security-severity`, as written (a fixed decimal string).
    pub score: &'static str,
    /// What a confirmed cell of the clause means, in one line.
    pub summary: &'static str,
}

/// The clauses of SPEC §3.6 in report order, with their severities.
pub const CLAUSES: [(&str, Severity); 10] = [
    (
        "fs.write",
        sev(
            "high",
            "7.0",
            "A tool that promised not to write files wrote one.",
        ),
    ),
    (
        "fs.delete",
        sev(
            "high",
            "8.0",
            "A tool that promised not to destroy data deleted or overwrote a file that existed before the call.",
        ),
    ),
    (
        "fs.read",
        sev(
            "high",
            "7.5",
            "A tool read files outside the scope it declared.",
        ),
    ),
    (
        "exec",
        sev("high", "7.5", "A tool ran a program it does not declare."),
    ),
    (
        "net.egress",
        sev("high", "8.5", "A tool reached a host its promises exclude."),
    ),
    (
        "net.listen",
        sev(
            "medium",
            "6.0",
            "A tool opened a listening socket it does not declare.",
        ),
    ),
    (
        "result.secrets",
        sev(
            "critical",
            "9.0",
            "A planted secret reached what the model sees.",
        ),
    ),
    (
        "result.instructions",
        sev(
            "high",
            "8.0",
            "A result carried instructions aimed at the model.",
        ),
    ),
    (
        "manifest.stable",
        sev(
            "high",
            "8.0",
            "The tool set changed after review (a rug pull).",
        ),
    ),
    (
        "idempotent",
        sev(
            "low",
            "3.0",
            "A tool that promised idempotence changed state again on a repeated identical call.",
        ),
    ),
];

const fn sev(name: &'static str, score: &'static str, summary: &'static str) -> Severity {
    Severity {
        name,
        score,
        summary,
    }
}

const UNKNOWN: Severity = sev(
    "medium",
    "5.0",
    "A tool broke a promise of a clause this version of vac does not know.",
);
const NONE: Severity = sev("none", "0.0", "");

/// The severity of a cell: its clause's when confirmed, `none` otherwise.
pub fn of(clause: &str, verdict: &str) -> Severity {
    if verdict != "confirmed" {
        return NONE;
    }
    clause_severity(clause)
}

/// A clause's severity when confirmed.
pub fn clause_severity(clause: &str) -> Severity {
    CLAUSES
        .iter()
        .find(|(name, _)| *name == clause)
        .map_or(UNKNOWN, |(_, s)| *s)
}

/// Position of a clause in report order; unknown clauses after the known, by name.
pub fn clause_rank(clause: &str) -> (usize, &str) {
    let rank = CLAUSES
        .iter()
        .position(|(name, _)| *name == clause)
        .unwrap_or(CLAUSES.len());
    (rank, clause)
}
