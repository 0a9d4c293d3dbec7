//! `vac campaign pack DIR`: every sealed probe directory under a campaign (or any tree of
//! receipt directories) packed at rest with [`vac_receipts::pack`]. A campaign packs each
//! probe as it ends; this packs what an older vac, or a crash before packing, left plain.

use std::path::{Path, PathBuf};

use vac_receipts::{PackError, Packed};

use super::RunError;
use super::lock::WriterLock;

/// What packing a tree did.
#[derive(Debug, Default)]
pub struct PackSummary {
    /// Probe directories packed now or found packed.
    pub probes: usize,
    pub packed: Packed,
    /// Probe directories left plain because their log is not sealed.
    pub unsealed: Vec<PathBuf>,
}

/// Packs every sealed receipt directory below `dir` (not `dir`'s own log: a campaign's
/// chain stays plain, small and appendable), holding the campaign's writer lock.
pub fn pack_probes(dir: &Path) -> Result<PackSummary, RunError> {
    let _writer = WriterLock::take(dir, false)?;
    let mut summary = PackSummary::default();
    let mut dirs = Vec::new();
    receipt_dirs_below(dir, &mut dirs).map_err(|e| RunError::Io {
        dir: dir.to_path_buf(),
        detail: format!("cannot list {}: {e}", dir.display()),
    })?;
    for probe in dirs {
        match vac_receipts::pack(&probe) {
            Ok(packed) => {
                summary.probes += 1;
                summary.packed += packed;
            }
            Err(PackError::NotSealed { .. }) => summary.unsealed.push(probe),
            Err(error) => {
                return Err(RunError::Io {
                    dir: probe.clone(),
                    detail: error.to_string(),
                });
            }
        }
    }
    Ok(summary)
}

/// The receipt directories strictly below `dir`, in path order (a receipt directory's own
/// `blobs/` is not searched).
fn receipt_dirs_below(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    children.sort();
    for child in children {
        if !child.is_dir() || child.file_name().is_some_and(|n| n == "blobs") {
            continue;
        }
        if vac_receipts::is_receipt_dir(&child) {
            out.push(child.clone());
        }
        receipt_dirs_below(&child, out)?;
    }
    Ok(())
}
