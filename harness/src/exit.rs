//! The exit codes of `vac`: one table, documented in README.md from here (SPEC §5).

use std::process::ExitCode;

use crate::probe::ProbeReport;

/// How a `vac` command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// No violation confirmed (or: the receipts verify).
    Clean,
    /// A violation was confirmed.
    Violation,
    /// The command line or a contract is wrong; nothing ran.
    Usage,
    /// The sandbox failed or the server could not be audited (the receipts still verify).
    CouldNotRun,
    /// The receipt chain is broken, or a verdict record is not what its evidence gives.
    Broken,
    /// Nothing was confirmed, but some cell errored: no clean bill of health.
    Incomplete,
}

/// Every exit code with its meaning, in the order README.md lists them.
pub const TABLE: [(Exit, u8, &str); 6] = [
    (
        Exit::Clean,
        0,
        "no violation confirmed (or `vac verify`: the receipts verify)",
    ),
    (Exit::Violation, 1, "a violation was confirmed"),
    (
        Exit::Usage,
        2,
        "usage error: bad arguments or a bad contract, before anything runs",
    ),
    (
        Exit::CouldNotRun,
        3,
        "could not run: sandbox failure, or the server could not be audited",
    ),
    (
        Exit::Broken,
        4,
        "the receipt chain is broken, or a verdict record is not what its evidence gives",
    ),
    (
        Exit::Incomplete,
        5,
        "incomplete: no violation confirmed, but some cell errored",
    ),
];

impl Exit {
    /// The process exit code.
    pub fn code(self) -> u8 {
        TABLE
            .iter()
            .find(|(exit, _, _)| *exit == self)
            .map_or(3, |(_, code, _)| *code)
    }

    /// How a probe ends — the same for `vac probe` and `vac report` of its receipts.
    pub fn of(report: &ProbeReport) -> Exit {
        if report.failure.is_some() {
            Exit::CouldNotRun
        } else if report.violation() {
            Exit::Violation
        } else if report.errored() {
            Exit::Incomplete
        } else {
            Exit::Clean
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_documents_exactly_the_codes_of_the_table() {
        let readme = include_str!("../../README.md");
        let section = readme
            .split("### Exit codes")
            .nth(1)
            .expect("an exit code section");
        let documented: Vec<u8> = section
            .lines()
            .take_while(|l| !l.starts_with("## "))
            .filter_map(|l| l.strip_prefix("| ")?.split(' ').next()?.parse().ok())
            .collect();
        let codes: Vec<u8> = TABLE.iter().map(|(_, code, _)| *code).collect();
        assert_eq!(documented, codes);
        for (exit, code, _) in TABLE {
            assert_eq!(exit.code(), code);
        }
    }
}
