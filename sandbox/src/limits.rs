//! Resource limits of one run, and their validation.

use std::time::Duration;

/// What one run may consume. Every field is enforced by the kernel (cgroups, rlimits, the size
/// of the upper layer's tmpfs) except `wall_clock`, which the parent enforces by killing the
/// run's pid namespace.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Limits {
    /// Memory of every process of the run together (cgroup memory controller).
    pub memory_bytes: u64,
    /// Processes and threads of the run together (cgroup pids controller).
    pub pids: u64,
    /// CPU bandwidth in cores (cgroup CPU quota); 0.5 is half of one core.
    pub cpu_cores: f64,
    /// CPU seconds each process may burn (RLIMIT_CPU); `None` (the default) sets none, as
    /// on an ordinary host, where a limit a server can read would tell it is audited (the
    /// cgroup's CPU quota and the wall clock bound the run all the same).
    pub cpu_time: Option<Duration>,
    /// Time from spawn until the whole run is killed.
    pub wall_clock: Duration,
    /// Bytes the run may write anywhere: the size of the tmpfs holding the upper layer.
    pub write_bytes: u64,
    /// Files, directories and links the run may create (inodes of that tmpfs).
    pub write_inodes: u64,
    /// Open descriptors per process (RLIMIT_NOFILE).
    pub open_files: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 1 << 30,
            pids: 256,
            cpu_cores: 1.0,
            cpu_time: None,
            wall_clock: Duration::from_secs(600),
            write_bytes: 256 << 20,
            write_inodes: 65_536,
            open_files: 4_096,
        }
    }
}

/// A limit that makes no sense, named with its value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("limit {field} = {value} is invalid: {reason}")]
pub struct InvalidLimit {
    pub field: &'static str,
    pub value: String,
    pub reason: &'static str,
}

impl Limits {
    /// Checks that every limit lets a small program start and still bounds the run.
    pub fn validate(&self) -> Result<(), InvalidLimit> {
        let bad = |field, value: String, reason| {
            Err(InvalidLimit {
                field,
                value,
                reason,
            })
        };
        if self.memory_bytes < 8 << 20 {
            return bad(
                "memory_bytes",
                self.memory_bytes.to_string(),
                "below 8 MiB no interpreter starts",
            );
        }
        if self.pids < 4 {
            return bad(
                "pids",
                self.pids.to_string(),
                "the sandbox's init and the program need at least 4",
            );
        }
        if !self.cpu_cores.is_finite() || self.cpu_cores < 0.01 || self.cpu_cores > 1024.0 {
            return bad(
                "cpu_cores",
                self.cpu_cores.to_string(),
                "must be between 0.01 and 1024 cores",
            );
        }
        if let Some(cpu_time) = self.cpu_time
            && cpu_time < Duration::from_secs(1)
        {
            return bad(
                "cpu_time",
                format!("{cpu_time:?}"),
                "RLIMIT_CPU counts whole seconds; at least 1 s",
            );
        }
        if self.wall_clock.is_zero() {
            return bad(
                "wall_clock",
                format!("{:?}", self.wall_clock),
                "a run needs some time",
            );
        }
        if self.write_bytes < 1 << 20 {
            return bad(
                "write_bytes",
                self.write_bytes.to_string(),
                "the upper layer needs at least 1 MiB",
            );
        }
        if self.write_inodes < 64 {
            return bad(
                "write_inodes",
                self.write_inodes.to_string(),
                "the lab alone needs dozens of inodes",
            );
        }
        if self.open_files < 16 {
            return bad(
                "open_files",
                self.open_files.to_string(),
                "stdio and a runtime need at least 16",
            );
        }
        Ok(())
    }

    /// The cgroup CPU quota in microseconds for a 100 ms period.
    pub(crate) fn cpu_quota_us(&self) -> u64 {
        (self.cpu_cores * CPU_PERIOD_US as f64).round() as u64
    }
}

pub(crate) const CPU_PERIOD_US: u64 = 100_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        Limits::default().validate().unwrap();
    }

    #[test]
    fn nonsense_limits_name_the_field_and_value() {
        let cases: Vec<(Limits, &str)> = vec![
            (
                Limits {
                    memory_bytes: 0,
                    ..Limits::default()
                },
                "memory_bytes = 0",
            ),
            (
                Limits {
                    pids: 1,
                    ..Limits::default()
                },
                "pids = 1",
            ),
            (
                Limits {
                    cpu_cores: f64::NAN,
                    ..Limits::default()
                },
                "cpu_cores = NaN",
            ),
            (
                Limits {
                    cpu_cores: -1.0,
                    ..Limits::default()
                },
                "cpu_cores = -1",
            ),
            (
                Limits {
                    wall_clock: Duration::ZERO,
                    ..Limits::default()
                },
                "wall_clock = 0ns",
            ),
            (
                Limits {
                    write_bytes: 10,
                    ..Limits::default()
                },
                "write_bytes = 10",
            ),
            (
                Limits {
                    cpu_time: Some(Duration::from_millis(10)),
                    ..Limits::default()
                },
                "cpu_time = 10ms",
            ),
            (
                Limits {
                    write_inodes: 0,
                    ..Limits::default()
                },
                "write_inodes = 0",
            ),
            (
                Limits {
                    open_files: 3,
                    ..Limits::default()
                },
                "open_files = 3",
            ),
        ];
        for (limits, expected) in cases {
            let message = limits.validate().unwrap_err().to_string();
            assert!(
                message.contains(expected),
                "{message:?} does not name {expected:?}"
            );
        }
    }

    #[test]
    fn cpu_quota_scales_with_cores() {
        let limits = Limits {
            cpu_cores: 0.5,
            ..Limits::default()
        };
        assert_eq!(limits.cpu_quota_us(), 50_000);
    }
}
