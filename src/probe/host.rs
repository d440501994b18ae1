//! Host memory for the probe: page-aligned (`posix_memalign` on the page size from
//! `sysconf(_SC_PAGESIZE)`), touched, and pinned with `mlock`; when `RLIMIT_MEMLOCK` refuses,
//! the buffer is still used (RDMA registration pins it anyway) and the refusal is reported.

use super::memory::Buffer;
use crate::analysis::probe_report::MemoryKind;

/// A page-aligned host buffer, freed (and unlocked) on drop.
pub struct HostBuffer {
    ptr: *mut u8,
    len: usize,
    locked: bool,
    notes: Vec<String>,
}

// SAFETY: the pointer is plain memory this value owns alone (no thread affinity, no sharing);
// moving the owner to another thread moves that ownership.
unsafe impl Send for HostBuffer {}

impl HostBuffer {
    /// Allocates `len` bytes, zeroed, aligned to the page size, and tries to `mlock` them.
    pub fn new(len: usize) -> Result<Self, String> {
        if len == 0 {
            return Err("zero-length host buffer".into());
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let page = if page > 0 { page as usize } else { 4096 };
        let mut p: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: p is a valid out-pointer; the page size is a power of two multiple of
        // sizeof(void *).
        let rc = unsafe { libc::posix_memalign(&mut p, page, len) };
        if rc != 0 || p.is_null() {
            return Err(format!(
                "posix_memalign({len} bytes): {}",
                std::io::Error::from_raw_os_error(rc)
            ));
        }
        // SAFETY: p points to len writable bytes.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, len) };
        let mut notes = Vec::new();
        // SAFETY: the range was just allocated.
        let locked = unsafe { libc::mlock(p, len) } == 0;
        if !locked {
            let e = std::io::Error::last_os_error();
            notes.push(format!(
                "host buffer of {len} bytes not pinned: mlock failed ({e}); RLIMIT_MEMLOCK is {}",
                memlock_limit()
            ));
        }
        Ok(HostBuffer {
            ptr: p as *mut u8,
            len,
            locked,
            notes,
        })
    }

    /// Whether `mlock` succeeded.
    pub fn locked(&self) -> bool {
        self.locked
    }

    /// The bytes, for direct access by the CUDA probes.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
}

/// `RLIMIT_MEMLOCK` soft limit, as text.
fn memlock_limit() -> String {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: r is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return "unknown".into();
    }
    if r.rlim_cur == libc::RLIM_INFINITY {
        "unlimited".into()
    } else {
        format!("{} KiB", r.rlim_cur / 1024)
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if self.locked {
            // SAFETY: ptr/len is the range new() locked.
            unsafe { libc::munlock(self.ptr as *const libc::c_void, self.len) };
        }
        // SAFETY: ptr came from posix_memalign in new() and is freed once; registrations of
        // it ended first (their guards borrowed this buffer).
        unsafe { libc::free(self.ptr as *mut libc::c_void) };
    }
}

impl Buffer for HostBuffer {
    fn kind(&self) -> MemoryKind {
        MemoryKind::Host
    }
    fn len(&self) -> usize {
        self.len
    }
    fn addr(&self) -> u64 {
        self.ptr as u64
    }
    fn write_at(&mut self, offset: usize, bytes: &[u8]) -> Result<(), String> {
        if offset.checked_add(bytes.len()).is_none_or(|e| e > self.len) {
            return Err(format!(
                "write of {} bytes at {offset} past {} bytes",
                bytes.len(),
                self.len
            ));
        }
        // SAFETY: bounds checked above; the regions do not overlap (bytes is caller memory).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) };
        Ok(())
    }
    fn read_at(&self, offset: usize, out: &mut [u8]) -> Result<(), String> {
        if offset.checked_add(out.len()).is_none_or(|e| e > self.len) {
            return Err(format!(
                "read of {} bytes at {offset} past {} bytes",
                out.len(),
                self.len
            ));
        }
        // SAFETY: bounds checked above. Volatile-free copy is fine: the NIC finished writing
        // before the completion that precedes any read.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), out.as_mut_ptr(), out.len()) };
        Ok(())
    }
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

/// Pins the calling thread to `cpus` (the NIC's `local_cpulist`) until dropped, so host buffers
/// allocated meanwhile land on the NIC's NUMA node (first touch) and the polling thread runs
/// next to it. Restores the previous affinity on drop.
pub struct CpuPin {
    old: Option<libc::cpu_set_t>,
}

impl CpuPin {
    /// Pins to `cpus`; a no-op (with the reason) when the set is empty or refused.
    pub fn new(cpus: &[u32]) -> (CpuPin, Option<String>) {
        let unpinned = |why: String| (CpuPin { old: None }, Some(why));
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let mut old = empty_cpu_set();
        // SAFETY: old is a valid cpu_set_t of `size` bytes for the kernel to fill.
        if unsafe { libc::sched_getaffinity(0, size, &mut old) } != 0 {
            let e = std::io::Error::last_os_error();
            return unpinned(format!("sched_getaffinity: {e}"));
        }
        let mut set = empty_cpu_set();
        let mut any = false;
        for &c in cpus {
            let c = c as usize;
            // SAFETY: c is below CPU_SETSIZE, the bit count of a cpu_set_t (checked first).
            if c < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(c, &old) } {
                // SAFETY: as above.
                unsafe { libc::CPU_SET(c, &mut set) };
                any = true;
            }
        }
        if !any {
            return unpinned(
                "none of the NIC's local CPUs is available to this process; not pinned".into(),
            );
        }
        // SAFETY: set is a valid cpu_set_t of `size` bytes.
        if unsafe { libc::sched_setaffinity(0, size, &set) } != 0 {
            let e = std::io::Error::last_os_error();
            return unpinned(format!("sched_setaffinity: {e}"));
        }
        (CpuPin { old: Some(old) }, None)
    }
}

/// A CPU set with no CPU in it.
fn empty_cpu_set() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all zero is the empty set (CPU_ZERO).
    unsafe { std::mem::zeroed() }
}

impl Drop for CpuPin {
    fn drop(&mut self) {
        if let Some(old) = self.old.take() {
            // SAFETY: restoring a set obtained from sched_getaffinity.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &old) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::memory::{fill, verify};

    #[test]
    fn host_buffer_is_aligned_and_roundtrips() {
        let mut b = HostBuffer::new(100_000).unwrap();
        assert_eq!(b.addr() % 4096, 0);
        fill(&mut b, 3).unwrap();
        assert_eq!(verify(&b, 0, 100_000, 3, 0).unwrap(), None);
        let mut last = [0u8];
        b.read_at(99_999, &mut last).unwrap();
        b.write_at(99_999, &[last[0] ^ 0xff]).unwrap();
        assert!(verify(&b, 0, 100_000, 3, 0).unwrap().is_some());
        assert!(b.write_at(99_999, &[0, 0]).is_err());
    }
}
