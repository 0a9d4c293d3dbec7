//! Memory, pids and CPU limits through cgroups, v1 or v2 behind one type.
//!
//! cgroup v2 is used where its root offers the memory and pids controllers. Many kernels (this
//! project's CI among them) mount v2 without them and keep the controllers on v1 hierarchies,
//! so [`CgroupRoots::detect`] falls back to the v1 `memory`, `pids` and `cpu` mounts. Every
//! path comes from the root given to `detect`, so unit tests run on a temporary directory.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::limits::{CPU_PERIOD_US, Limits};

/// Where the controllers of this host live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupRoots {
    /// A unified hierarchy with memory, pids and cpu controllers.
    V2 { root: PathBuf },
    /// One hierarchy per controller.
    V1 {
        memory: PathBuf,
        pids: PathBuf,
        cpu: PathBuf,
    },
}

/// A cgroup operation that failed, with the file it touched.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("no cgroup hierarchy under {root} offers the memory and pids controllers")]
    Unavailable { root: PathBuf },
    #[error("cannot write {value:?} to {path}")]
    Write {
        path: PathBuf,
        value: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot create cgroup {path}")]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot remove cgroup {path}")]
    Remove {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

const GROUP_PARENT: &str = "vac";

impl CgroupRoots {
    /// Finds the controllers under `root` (normally `/sys/fs/cgroup`).
    pub fn detect(root: &Path) -> Result<Self, CgroupError> {
        for unified in [root.to_path_buf(), root.join("unified")] {
            if let Ok(controllers) = fs::read_to_string(unified.join("cgroup.controllers")) {
                let has = |name| controllers.split_whitespace().any(|c| c == name);
                if has("memory") && has("pids") && has("cpu") {
                    return Ok(CgroupRoots::V2 { root: unified });
                }
            }
        }
        let cpu = ["cpu", "cpu,cpuacct"]
            .iter()
            .map(|n| root.join(n))
            .find(|p| p.join("cpu.cfs_quota_us").exists());
        let (memory, pids) = (root.join("memory"), root.join("pids"));
        match cpu {
            Some(cpu)
                if memory.join("memory.limit_in_bytes").exists()
                    && pids.join("cgroup.procs").exists() =>
            {
                Ok(CgroupRoots::V1 { memory, pids, cpu })
            }
            _ => Err(CgroupError::Unavailable {
                root: root.to_path_buf(),
            }),
        }
    }

    /// The existing group `vac/<name>`, e.g. one a crashed run left behind, to remove it.
    pub fn existing(&self, name: &str) -> Cgroup {
        match self {
            CgroupRoots::V2 { root } => Cgroup {
                dirs: vec![root.join(GROUP_PARENT).join(name)],
                unified: true,
            },
            CgroupRoots::V1 { memory, pids, cpu } => Cgroup {
                dirs: [memory, pids, cpu]
                    .iter()
                    .map(|r| r.join(GROUP_PARENT).join(name))
                    .collect(),
                unified: false,
            },
        }
    }

    /// Creates the cgroup `vac/<name>` with `limits` applied.
    pub fn create(&self, name: &str, limits: &Limits) -> Result<Cgroup, CgroupError> {
        let quota = format!("{}", limits.cpu_quota_us());
        let group = match self {
            CgroupRoots::V2 { root } => {
                write(&root.join("cgroup.subtree_control"), "+memory +pids +cpu")?;
                let parent = make_dir(&root.join(GROUP_PARENT))?;
                write(&parent.join("cgroup.subtree_control"), "+memory +pids +cpu")?;
                let dir = make_dir(&parent.join(name))?;
                let group = Cgroup {
                    dirs: vec![dir.clone()],
                    unified: true,
                };
                group.configure(&[
                    (dir.join("memory.max"), limits.memory_bytes.to_string()),
                    (dir.join("memory.swap.max"), "0".to_string()),
                    (dir.join("pids.max"), limits.pids.to_string()),
                    (dir.join("cpu.max"), format!("{quota} {CPU_PERIOD_US}")),
                ])?;
                group
            }
            CgroupRoots::V1 { memory, pids, cpu } => {
                let dirs: Vec<PathBuf> = [memory, pids, cpu]
                    .iter()
                    .map(|root| {
                        make_dir(&root.join(GROUP_PARENT)).and_then(|p| make_dir(&p.join(name)))
                    })
                    .collect::<Result<_, _>>()?;
                let group = Cgroup {
                    dirs: dirs.clone(),
                    unified: false,
                };
                group.configure(&[
                    (
                        dirs[0].join("memory.limit_in_bytes"),
                        limits.memory_bytes.to_string(),
                    ),
                    (dirs[1].join("pids.max"), limits.pids.to_string()),
                    (dirs[2].join("cpu.cfs_period_us"), CPU_PERIOD_US.to_string()),
                    (dirs[2].join("cpu.cfs_quota_us"), quota),
                ])?;
                group
            }
        };
        Ok(group)
    }
}

/// One run's cgroup: a directory per hierarchy (one on v2, three on v1).
#[derive(Debug)]
pub struct Cgroup {
    dirs: Vec<PathBuf>,
    unified: bool,
}

impl Cgroup {
    fn configure(&self, settings: &[(PathBuf, String)]) -> Result<(), CgroupError> {
        let result = settings
            .iter()
            .try_for_each(|(path, value)| write(path, value));
        if result.is_err() {
            // A half-configured group must not stay behind.
            let _ = self.remove();
        }
        result
    }

    /// The `cgroup.procs` files a process writes its pid into to join every hierarchy.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    /// Pids currently in the group (host view).
    pub fn pids(&self) -> Result<Vec<i32>, CgroupError> {
        let path = self.dirs[0].join("cgroup.procs");
        let text =
            fs::read_to_string(&path).map_err(|source| CgroupError::Read { path, source })?;
        Ok(text.lines().filter_map(|l| l.trim().parse().ok()).collect())
    }

    /// How often a fork failed because the pids limit was reached.
    pub fn pids_limit_hits(&self) -> Result<u64, CgroupError> {
        let dir = if self.unified {
            &self.dirs[0]
        } else {
            &self.dirs[1]
        };
        let path = dir.join("pids.events");
        let text =
            fs::read_to_string(&path).map_err(|source| CgroupError::Read { path, source })?;
        Ok(text
            .lines()
            .find_map(|l| l.strip_prefix("max ").and_then(|n| n.trim().parse().ok()))
            .unwrap_or(0))
    }

    /// How often the memory limit was hit (v1 failcnt, v2 `max` events).
    pub fn memory_limit_hits(&self) -> Result<u64, CgroupError> {
        let path = if self.unified {
            self.dirs[0].join("memory.events")
        } else {
            self.dirs[0].join("memory.failcnt")
        };
        let text =
            fs::read_to_string(&path).map_err(|source| CgroupError::Read { path, source })?;
        let value = if self.unified {
            text.lines()
                .find_map(|l| l.strip_prefix("max ").map(str::to_string))
        } else {
            Some(text)
        };
        Ok(value.and_then(|v| v.trim().parse().ok()).unwrap_or(0))
    }

    /// Removes the group's directories. The group must be empty.
    pub fn remove(&self) -> Result<(), CgroupError> {
        let mut first_error = None;
        for dir in &self.dirs {
            match fs::remove_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(source) => {
                    first_error.get_or_insert(CgroupError::Remove {
                        path: dir.clone(),
                        source,
                    });
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

fn make_dir(path: &Path) -> Result<PathBuf, CgroupError> {
    match fs::create_dir(path) {
        Ok(()) => Ok(path.to_path_buf()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(path.to_path_buf()),
        Err(source) => Err(CgroupError::Create {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    fs::write(path, value).map_err(|source| CgroupError::Write {
        path: path.to_path_buf(),
        value: value.to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_v1(root: &Path) {
        // The v1 root of the pids hierarchy has no pids.max of its own.
        for (dir, file) in [
            ("memory", "memory.limit_in_bytes"),
            ("pids", "cgroup.procs"),
            ("cpu", "cpu.cfs_quota_us"),
        ] {
            fs::create_dir_all(root.join(dir)).unwrap();
            fs::write(root.join(dir).join(file), "").unwrap();
        }
        fs::create_dir_all(root.join("unified")).unwrap();
        fs::write(root.join("unified/cgroup.controllers"), "").unwrap();
    }

    #[test]
    fn detect_falls_back_to_v1_when_unified_lacks_controllers() {
        let tmp = tempfile::tempdir().unwrap();
        fake_v1(tmp.path());
        let roots = CgroupRoots::detect(tmp.path()).unwrap();
        assert!(matches!(roots, CgroupRoots::V1 { .. }), "{roots:?}");
    }

    #[test]
    fn detect_prefers_v2_with_controllers() {
        let tmp = tempfile::tempdir().unwrap();
        fake_v1(tmp.path());
        fs::write(
            tmp.path().join("unified/cgroup.controllers"),
            "cpuset cpu io memory pids",
        )
        .unwrap();
        let roots = CgroupRoots::detect(tmp.path()).unwrap();
        assert_eq!(
            roots,
            CgroupRoots::V2 {
                root: tmp.path().join("unified")
            }
        );
    }

    #[test]
    fn detect_names_the_root_when_nothing_is_there() {
        let tmp = tempfile::tempdir().unwrap();
        let error = CgroupRoots::detect(tmp.path()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&tmp.path().display().to_string())
        );
    }

    #[test]
    fn v1_create_writes_every_limit() {
        let tmp = tempfile::tempdir().unwrap();
        fake_v1(tmp.path());
        let roots = CgroupRoots::detect(tmp.path()).unwrap();
        let limits = Limits {
            memory_bytes: 64 << 20,
            pids: 32,
            cpu_cores: 0.5,
            ..Limits::default()
        };
        let group = roots.create("run-1", &limits).unwrap();
        let read = |p: &str| fs::read_to_string(tmp.path().join(p)).unwrap();
        assert_eq!(
            read("memory/vac/run-1/memory.limit_in_bytes"),
            (64u64 << 20).to_string()
        );
        assert_eq!(read("pids/vac/run-1/pids.max"), "32");
        assert_eq!(read("cpu/vac/run-1/cpu.cfs_quota_us"), "50000");
        assert_eq!(group.procs_files().len(), 3);
    }

    #[test]
    fn v2_create_enables_controllers_and_writes_limits() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("cgroup.controllers"), "memory pids cpu").unwrap();
        let roots = CgroupRoots::detect(tmp.path()).unwrap();
        let limits = Limits {
            pids: 10,
            cpu_cores: 2.0,
            ..Limits::default()
        };
        let group = roots.create("run-2", &limits).unwrap();
        let read = |p: &str| fs::read_to_string(tmp.path().join(p)).unwrap();
        assert_eq!(read("cgroup.subtree_control"), "+memory +pids +cpu");
        assert_eq!(read("vac/run-2/pids.max"), "10");
        assert_eq!(read("vac/run-2/cpu.max"), "200000 100000");
        assert_eq!(
            group.procs_files(),
            vec![tmp.path().join("vac/run-2/cgroup.procs")]
        );
    }

    #[test]
    fn limit_hit_counters_parse() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("cgroup.controllers"), "memory pids cpu").unwrap();
        let group = CgroupRoots::detect(tmp.path())
            .unwrap()
            .create("r", &Limits::default())
            .unwrap();
        fs::write(tmp.path().join("vac/r/pids.events"), "max 17\n").unwrap();
        fs::write(
            tmp.path().join("vac/r/memory.events"),
            "low 0\nhigh 0\nmax 3\noom 1\n",
        )
        .unwrap();
        assert_eq!(group.pids_limit_hits().unwrap(), 17);
        assert_eq!(group.memory_limit_hits().unwrap(), 3);
    }
}
