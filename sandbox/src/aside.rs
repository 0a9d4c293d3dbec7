//! Notification groups and packet sockets closed beside a run's teardown, not in its way.
//!
//! Closing the last descriptor of a fanotify or inotify group makes the kernel destroy its
//! marks and wait for a grace period before the close returns (`fsnotify_destroy_group`
//! waits for the mark reaper's `synchronize_srcu`); closing a packet socket waits for one
//! too (`packet_release` calls `synchronize_net`). Each is 5–25 ms here, and a teardown
//! closed three of them (the access sensor's group, the lab's watch, the sinkhole's
//! capture) on the path from a run's last call to its output. Nothing a run reports waits
//! on them: every event of the run's processes is queued by the time they are reaped, and
//! each reader has read its queue to the end before it lets go. So the last holder hands
//! the descriptor to one thread that closes what it is given, one after another; what it
//! has not closed when vac exits, the kernel closes.

use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;
use std::sync::mpsc::{Sender, channel};

/// `T` (a descriptor whose close waits for a grace period, or what owns one), dropped on
/// the closing thread once this is dropped.
#[derive(Debug)]
pub(crate) struct ClosedAside<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> ClosedAside<T> {
    pub(crate) fn new(group: T) -> ClosedAside<T> {
        ClosedAside(Some(group))
    }
}

impl<T: Send + 'static> Deref for ClosedAside<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_ref().expect("held until dropped")
    }
}

impl<T: Send + 'static> DerefMut for ClosedAside<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.as_mut().expect("held until dropped")
    }
}

impl<T: Send + 'static> Drop for ClosedAside<T> {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            close_aside(Box::new(group));
        }
    }
}

type Closing = Box<dyn Send>;

/// Sends `group` to the closing thread, started on first use; closes it here when there is
/// no such thread (it could not be started).
fn close_aside(group: Closing) {
    static CLOSER: OnceLock<Option<Sender<Closing>>> = OnceLock::new();
    let closer = CLOSER.get_or_init(|| {
        let (sender, receiver) = channel::<Closing>();
        std::thread::Builder::new()
            .name("vac-close".into())
            .spawn(move || receiver.into_iter().for_each(drop))
            .ok()
            .map(|_| sender)
    });
    let unsent = match closer {
        Some(sender) => sender.send(group).err().map(|e| e.0),
        None => Some(group),
    };
    drop(unsent);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is dropped aside is dropped: its `Drop` runs on the closing thread.
    #[test]
    fn a_group_closed_aside_is_closed_on_another_thread() {
        struct Told(Sender<std::thread::ThreadId>);
        impl Drop for Told {
            fn drop(&mut self) {
                let _ = self.0.send(std::thread::current().id());
            }
        }
        let (sender, receiver) = channel();
        drop(ClosedAside::new(Told(sender)));
        let on = receiver.recv().expect("dropped");
        assert_ne!(on, std::thread::current().id());
    }
}
