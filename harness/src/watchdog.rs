//! The wall-time budget's backstop. A probe's timeout ends it only where it waits; work that
//! never yields (grading a hostile server's evidence, a teardown stuck in the kernel,
//! printing) would outlast it, so a thread of its own ends vac once the budget and
//! [`GRACE`] are spent: exit 5, and a message that says whether the receipts were sealed.
//! Nothing stays on the host when it does: the run mounts are in vac's own mount namespace,
//! and the servers die with their lifeline.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::exit::Exit;

/// How long past its wall-time budget vac's own work may go on before the watchdog ends it.
pub const GRACE: Duration = Duration::from_secs(30);

/// A started watchdog: told when the probe has returned (its receipts sealed), so that its
/// message, if it fires, says so.
#[derive(Debug, Clone)]
pub struct Watchdog {
    sealed: Arc<AtomicBool>,
}

impl Watchdog {
    /// Starts the watchdog of a probe with budget `wall` writing receipts into `dir`. Without
    /// a thread for it, only the probe's own timeout holds the budget (logged).
    pub fn start(wall: Duration, dir: PathBuf) -> Watchdog {
        let sealed = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&sealed);
        let spawned = std::thread::Builder::new()
            .name("vac-watchdog".into())
            .spawn(move || {
                std::thread::sleep(wall + GRACE);
                let receipts = match seen.load(Ordering::SeqCst) {
                    true => "are sealed; its report was not all written",
                    false => "are not sealed",
                };
                eprintln!(
                    "vac: the probe's wall-time budget of {}s ran out and vac's own work went on {}s past it: ended, and the receipts in {} {receipts}",
                    wall.as_secs(),
                    GRACE.as_secs(),
                    dir.display()
                );
                std::process::exit(i32::from(Exit::Incomplete.code()));
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "no watchdog: only the probe's own timeout holds its budget");
        }
        Watchdog { sealed }
    }

    /// The probe returned: its receipts are sealed, what is left is printing its report.
    pub fn sealed(&self) {
        self.sealed.store(true, Ordering::SeqCst);
    }
}
