//! A bound on the input bytes held by loads running at once (`fleet -j N` loads N inputs in
//! parallel, each up to [`super::fsroot::MAX_SNAPSHOT_BYTES`] decompressed): each load takes
//! its bytes from one shared [`ByteBudget`] as it reads them — the file, then every chunk
//! decompressed — and gives them back when it finishes. A load that would overdraw the budget
//! waits, except the oldest load in flight, which always proceeds: the fleet never deadlocks,
//! and the bytes held stay under the budget plus one input.

use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex};

/// The shared budget (see the module doc).
#[derive(Debug)]
pub struct ByteBudget {
    limit: u64,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    used: u64,
    next: u64,
    active: BTreeSet<u64>,
    peak: u64,
}

impl ByteBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(ByteBudget {
            limit,
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        })
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The most bytes held at once so far.
    pub fn peak(&self) -> u64 {
        self.state.lock().map(|s| s.peak).unwrap_or(0)
    }

    /// Starts one load: its charge, in arrival order.
    pub fn start(self: &Arc<Self>) -> Charge {
        let ticket = match self.state.lock() {
            Ok(mut s) => {
                let t = s.next;
                s.next += 1;
                s.active.insert(t);
                t
            }
            Err(_) => u64::MAX,
        };
        Charge {
            budget: Arc::clone(self),
            ticket,
            held: 0,
        }
    }
}

/// The bytes one load holds; given back when dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<ByteBudget>,
    ticket: u64,
    held: u64,
}

impl Charge {
    /// Takes `n` more bytes, waiting while they would overdraw the budget (unless this is the
    /// oldest load in flight).
    pub fn take(&mut self, n: u64) {
        let b = &self.budget;
        let Ok(mut s) = b.state.lock() else { return };
        loop {
            let oldest = s.active.first() == Some(&self.ticket);
            if oldest || s.used + n <= b.limit {
                break;
            }
            s = match b.freed.wait(s) {
                Ok(g) => g,
                Err(_) => return,
            };
        }
        s.used += n;
        s.peak = s.peak.max(s.used);
        self.held += n;
    }

    /// Gives back `n` of the bytes this load took (a copy it dropped before finishing), and
    /// wakes the loads waiting for them.
    pub fn give_back(&mut self, n: u64) {
        let n = n.min(self.held);
        if let Ok(mut s) = self.budget.state.lock() {
            s.used -= n.min(s.used);
        }
        self.held -= n;
        self.budget.freed.notify_all();
    }

    /// Bytes this load holds.
    pub fn held(&self) -> u64 {
        self.held
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Ok(mut s) = self.budget.state.lock() {
            s.used -= self.held.min(s.used);
            s.active.remove(&self.ticket);
        }
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn loads_wait_for_the_budget_and_the_oldest_always_runs() {
        let b = ByteBudget::new(100);
        let mut first = b.start();
        first.take(80);
        // The oldest overdraws without waiting.
        first.take(80);
        assert_eq!(b.peak(), 160);
        let b2 = Arc::clone(&b);
        let waiter = std::thread::spawn(move || {
            let mut second = b2.start();
            second.take(50);
            second.held()
        });
        std::thread::sleep(Duration::from_millis(100));
        assert!(!waiter.is_finished(), "the second load must wait");
        drop(first);
        assert_eq!(waiter.join().unwrap(), 50);
        assert_eq!(b.peak(), 160);
        // Everything was given back.
        let mut c = b.start();
        c.take(100);
        assert_eq!(c.held(), 100);
    }
}
