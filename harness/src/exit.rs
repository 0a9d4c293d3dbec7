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
        "incomplete: no violation confirmed, but some cell errored or a budget left tools uncalled",
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

    /// The exit whose code this is; `None` for a code the table does not hold.
    pub fn from_code(code: u8) -> Option<Exit> {
        TABLE
            .iter()
            .find(|(_, c, _)| *c == code)
            .map(|(exit, _, _)| *exit)
    }

    /// How a campaign ends — the same for `vac campaign run`, `resume`, `merge` and `vac
    /// report` of its directory — from how each of its probes ended: 1 if any confirmed a
    /// violation; else 5 if any did not end clean (it could not run, timed out, or has an
    /// errored cell: a target that could not be audited is never a clean bill); else 0.
    pub fn of_campaign(members: impl IntoIterator<Item = Exit>) -> Exit {
        let mut exit = Exit::Clean;
        for member in members {
            match member {
                Exit::Violation => return Exit::Violation,
                Exit::Clean => {}
                _ => exit = Exit::Incomplete,
            }
        }
        exit
    }

    /// How a probe ends — the same for `vac probe` and `vac report` of its receipts: a
    /// violation confirmed is 1 whatever else; an errored cell, or a tool a budget left
    /// uncalled (a server of 3,000 tools whose 200th writes `~/.ssh`), is 5, never a clean 0.
    pub fn of(report: &ProbeReport) -> Exit {
        if report.failure.is_some() {
            Exit::CouldNotRun
        } else if report.violation() {
            Exit::Violation
        } else if report.errored() || report.not_called_for_budget() > 0 {
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
    fn a_campaign_ends_as_its_worst_probe_and_a_target_that_could_not_run_is_never_clean() {
        use Exit::*;
        let cases: [(&[Exit], Exit); 6] = [
            (&[], Clean),
            (&[Clean, Clean], Clean),
            (&[Clean, CouldNotRun], Incomplete),
            (&[CouldNotRun], Incomplete),
            (&[Incomplete, Violation, CouldNotRun], Violation),
            (&[Broken, Clean], Incomplete),
        ];
        for (members, expected) in cases {
            assert_eq!(
                Exit::of_campaign(members.iter().copied()),
                expected,
                "{members:?}"
            );
        }
        for (exit, code, _) in TABLE {
            assert_eq!(Exit::from_code(code), Some(exit));
        }
        assert_eq!(Exit::from_code(9), None);
    }

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
