//! The probe's timed loop on its own: `peerpath::probe::run::timed_phase` — the code every
//! probe cell runs — driven over an in-process fabric that moves no bytes and completes every
//! operation on the next poll. What it measures is the loop's own cost per operation (posting,
//! slot bookkeeping, completion handling, the clock read per turn, the `dyn Fabric` calls),
//! which a real fabric adds to its own post and poll cost; it is compared with the time one
//! 64 KiB message takes at 400 Gb/s (65536 × 8 / 400e9 s = 1.31 µs).
//!
//! Run: `cargo bench --bench probe_loop [-- SECONDS]` (default 1 s per depth, after a warm-up of
//! a fifth of that). Output, one line per depth, then the budget line:
//!
//! ```text
//! probe_loop depth=1 ops=41234567 seconds=1.000 ns_per_op=24.3
//! probe_loop budget_400g_64k_ns=1310.7
//! ```

use peerpath::analysis::probe_report::{NicRef, RegAttempt};
use peerpath::probe::fabric::{
    Completion, Fabric, Posted, RawRegistration, Registration, Transfer,
};
use peerpath::probe::host::HostBuffer;
use peerpath::probe::memory::Buffer;
use peerpath::probe::run::{PhaseSpec, timed_phase};
use std::cell::{Cell, RefCell};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A fabric that completes every posted operation on the next poll and moves nothing.
struct NullFabric {
    next_handle: Cell<usize>,
    done: RefCell<Vec<u64>>,
}

impl Fabric for NullFabric {
    fn nic(&self) -> NicRef {
        NicRef::ofi("null", None)
    }
    fn line_rate_gbytes(&self) -> Option<f64> {
        None
    }
    fn max_outstanding(&self) -> usize {
        64
    }
    unsafe fn register_raw(
        &self,
        _buf: &mut dyn Buffer,
    ) -> Result<RawRegistration, Vec<RegAttempt>> {
        let handle = self.next_handle.get();
        self.next_handle.set(handle + 1);
        Ok(RawRegistration {
            handle,
            method: "host".into(),
            attempts: vec![RegAttempt::ok("host")],
        })
    }
    fn deregister_raw(&self, _handle: usize) {}
    fn post(&self, t: &Transfer<'_>) -> Result<Posted, String> {
        self.done.borrow_mut().push(t.wr_id);
        Ok(Posted::Yes)
    }
    fn poll(&self, out: &mut Vec<Completion>) -> Result<(), String> {
        out.extend(self.done.borrow_mut().drain(..).map(|wr_id| Completion {
            wr_id,
            status: Ok(()),
        }));
        Ok(())
    }
}

fn main() {
    // `cargo bench` passes `--bench`; the one number given is the seconds per depth.
    let seconds: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1.0);
    let window = Duration::from_secs_f64(seconds);
    let fab = NullFabric {
        next_handle: Cell::new(0),
        done: RefCell::new(Vec::with_capacity(64)),
    };
    let msg = 65536;
    let mut a = HostBuffer::new(64 * msg).expect("host buffer");
    let mut b = HostBuffer::new(64 * msg).expect("host buffer");
    let ra = Registration::new(&fab, &mut a).expect("registration");
    let rb = Registration::new(&fab, &mut b).expect("registration");
    let abort = AtomicBool::new(false);
    for depth in [1usize, 16, 64] {
        let spec = PhaseSpec {
            op: peerpath::analysis::probe_report::Op::Write,
            local: ra.key(),
            remote: rb.key(),
            msg,
            len: msg,
            slots: depth,
        };
        let mut used = vec![false; depth];
        timed_phase(&fab, &spec, window / 5, &mut used, &abort).expect("warm-up");
        let s = timed_phase(&fab, &spec, window, &mut used, &abort).expect("timed phase");
        println!(
            "probe_loop depth={depth} ops={} seconds={:.3} ns_per_op={:.1}",
            s.ops,
            s.seconds,
            s.seconds * 1e9 / s.ops.max(1) as f64
        );
    }
    println!(
        "probe_loop budget_400g_64k_ns={:.1}",
        65536.0 * 8.0 / 400e9 * 1e9
    );
}
