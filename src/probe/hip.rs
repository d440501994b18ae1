//! HIP for the probe: ROCm's runtime loaded at run time with libloading
//! (`libamdhip64.so`, never linked): device memory from `hipMalloc`, host↔device copies with
//! `hipMemcpy`, dma-buf export for RDMA registration with `hipMemGetHandleForAddressRange`
//! (`hipMemRangeHandleTypeDmaBufFd`), and the driver's word that a pointer is device memory
//! (`hipPointerGetAttribute(HIP_POINTER_ATTRIBUTE_MEMORY_TYPE)`). Signatures from ROCm's
//! `hip/hip_runtime_api.h`; `hipError_t` is an `int`, 0 for success.

use super::Unavailable;
use super::memory::{Buffer, DmaBuf};
use crate::analysis::probe_report::MemoryKind;
use libloading::{Library, Symbol};
use std::ffi::{CStr, c_char, c_int, c_uint, c_ulonglong, c_void};

/// The sonames tried, newest first (`libamdhip64.so.6` in ROCm 6, `.so.7` in ROCm 7; the
/// unversioned name is the development link).
pub const SONAMES: [&str; 3] = ["libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so"];

/// `hipMemcpyHostToDevice`.
const H2D: c_int = 1;
/// `hipMemcpyDeviceToHost`.
const D2H: c_int = 2;
/// `hipMemRangeHandleTypeDmaBufFd`.
const DMABUF_FD: c_int = 1;
/// `HIP_POINTER_ATTRIBUTE_MEMORY_TYPE`.
const ATTR_MEMORY_TYPE: c_int = 2;

type FnInit = unsafe extern "C" fn(c_uint) -> c_int;
type FnCount = unsafe extern "C" fn(*mut c_int) -> c_int;
type FnBusId = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;
type FnSetDevice = unsafe extern "C" fn(c_int) -> c_int;
type FnMalloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int;
type FnFree = unsafe extern "C" fn(*mut c_void) -> c_int;
type FnMemcpy = unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int;
type FnErrorString = unsafe extern "C" fn(c_int) -> *const c_char;
type FnVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
type FnDmabuf = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, c_int, c_ulonglong) -> c_int;
type FnPtrAttr = unsafe extern "C" fn(*mut c_void, c_int, *mut c_void) -> c_int;

/// An initialised HIP runtime.
pub struct Hip {
    lib: Library,
    count: usize,
    /// `hipRuntimeGetVersion`, e.g. 60342134 (6.3).
    pub runtime_version: i32,
}

/// Opens the HIP runtime: `Unavailable` when libamdhip64.so is absent (no ROCm), an error
/// string when it is present but does not initialise or sees no GPU.
pub fn open() -> Result<Result<Hip, String>, Unavailable> {
    let mut last = String::new();
    let lib = SONAMES.iter().find_map(|n| {
        // SAFETY: loading ROCm's HIP runtime runs its initialisers, which have no
        // preconditions on the calling process.
        match unsafe { Library::new(n) } {
            Ok(l) => Some(l),
            Err(e) => {
                last = e.to_string();
                None
            }
        }
    });
    let Some(lib) = lib else {
        return Err(Unavailable::library(
            "libamdhip64.so",
            "ROCm's HIP runtime (hip-runtime-amd / rocm-hip-runtime); without ROCm there is no AMD GPU memory to probe",
            &last,
        ));
    };
    Ok((|| {
        let mut hip = Hip {
            lib,
            count: 0,
            runtime_version: 0,
        };
        // SAFETY: hipInit takes flags 0 and has no other precondition.
        hip.check("hipInit", unsafe { hip.sym::<FnInit>(b"hipInit\0")?(0) })?;
        let mut v: c_int = 0;
        // SAFETY: v is a valid out-pointer.
        hip.check("hipRuntimeGetVersion", unsafe {
            hip.sym::<FnVersion>(b"hipRuntimeGetVersion\0")?(&mut v)
        })?;
        hip.runtime_version = v;
        let mut n: c_int = 0;
        // SAFETY: n is a valid out-pointer.
        hip.check("hipGetDeviceCount", unsafe {
            hip.sym::<FnCount>(b"hipGetDeviceCount\0")?(&mut n)
        })?;
        hip.count = usize::try_from(n).unwrap_or(0);
        Ok(hip)
    })())
}

impl Hip {
    /// A symbol of the runtime.
    ///
    /// # Safety
    ///
    /// `T` must be the symbol's C signature as `hip_runtime_api.h` declares it.
    unsafe fn sym<T>(&self, name: &[u8]) -> Result<Symbol<'_, T>, String> {
        // SAFETY: the caller's contract on T; the name is NUL-terminated.
        unsafe { self.lib.get::<T>(name) }.map_err(|e| {
            format!(
                "{}: not in this HIP runtime ({e})",
                String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name))
            )
        })
    }

    /// `Ok` for `hipSuccess`, else the call and the runtime's name for the error.
    fn check(&self, what: &str, r: c_int) -> Result<(), String> {
        if r == 0 {
            return Ok(());
        }
        // SAFETY: hipGetErrorString has the declared signature and returns a static string.
        let name = unsafe { self.sym::<FnErrorString>(b"hipGetErrorString\0") }
            .ok()
            .map(|f| {
                // SAFETY: any error code is accepted; the result is a static NUL-terminated
                // string or null.
                let p = unsafe { f(r) };
                if p.is_null() {
                    String::new()
                } else {
                    // SAFETY: non-null, static, NUL-terminated (checked above).
                    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
                }
            })
            .unwrap_or_default();
        Err(format!("{what}: error {r} {name}").trim_end().to_string())
    }

    /// Number of HIP devices (`HIP_VISIBLE_DEVICES`/`ROCR_VISIBLE_DEVICES` apply).
    pub fn count(&self) -> usize {
        self.count
    }

    /// PCI address of a device (`0000:05:00.0`, lower case), from `hipDeviceGetPCIBusId`.
    pub fn pci_bus_id(&self, ordinal: usize) -> Result<String, String> {
        if ordinal >= self.count {
            return Err(format!("no HIP device {ordinal}"));
        }
        let mut b = [0 as c_char; 64];
        // SAFETY: the buffer and its length match; the ordinal is below the device count.
        self.check("hipDeviceGetPCIBusId", unsafe {
            self.sym::<FnBusId>(b"hipDeviceGetPCIBusId\0")?(
                b.as_mut_ptr(),
                b.len() as c_int,
                ordinal as c_int,
            )
        })?;
        b[b.len() - 1] = 0;
        // SAFETY: NUL-terminated, by the runtime and by the line above.
        Ok(unsafe { CStr::from_ptr(b.as_ptr()) }
            .to_string_lossy()
            .to_lowercase())
    }

    fn set_device(&self, ordinal: usize) -> Result<(), String> {
        // SAFETY: the ordinal is checked by the runtime; no other precondition.
        self.check("hipSetDevice", unsafe {
            self.sym::<FnSetDevice>(b"hipSetDevice\0")?(ordinal as c_int)
        })
    }

    /// Allocates `len` bytes of device memory on `ordinal` with `hipMalloc`.
    pub fn alloc(&self, ordinal: usize, len: usize) -> Result<HipBuffer<'_>, String> {
        self.set_device(ordinal)?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: p is a valid out-pointer; the device is current on this thread.
        self.check("hipMalloc", unsafe {
            self.sym::<FnMalloc>(b"hipMalloc\0")?(&mut p, len)
        })?;
        Ok(HipBuffer {
            hip: self,
            ordinal,
            ptr: p,
            len,
            dmabuf: None,
        })
    }
}

/// Device memory from `hipMalloc`, freed on drop (with its dma-buf fd, if exported).
pub struct HipBuffer<'a> {
    hip: &'a Hip,
    ordinal: usize,
    ptr: *mut c_void,
    len: usize,
    dmabuf: Option<DmaBuf>,
}

impl Drop for HipBuffer<'_> {
    fn drop(&mut self) {
        if let Some(d) = self.dmabuf.take() {
            // SAFETY: the fd came from hipMemGetHandleForAddressRange and is closed once.
            unsafe { libc::close(d.fd) };
        }
        let _ = self.hip.set_device(self.ordinal);
        // SAFETY: ptr came from hipMalloc and is freed once; registrations of it ended first
        // (their guards borrowed this buffer).
        if let Ok(f) = unsafe { self.hip.sym::<FnFree>(b"hipFree\0") } {
            // SAFETY: as above.
            let _ = unsafe { f(self.ptr) };
        }
    }
}

impl HipBuffer<'_> {
    /// The device address `offset` bytes in, where `n` bytes from there lie inside the
    /// allocation; `what` (read, write) names the access in the error.
    fn span(&self, offset: usize, n: usize, what: &str) -> Result<*mut c_void, String> {
        match offset.checked_add(n) {
            Some(end) if end <= self.len => Ok(self.ptr.wrapping_byte_add(offset)),
            _ => Err(format!(
                "{what} of {n} bytes at {offset} past {} bytes",
                self.len
            )),
        }
    }
    fn copy(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        n: usize,
        kind: c_int,
    ) -> Result<(), String> {
        self.hip.set_device(self.ordinal)?;
        // SAFETY: the caller passes ranges inside this allocation and a live host slice of n
        // bytes; hipMemcpy is synchronous.
        self.hip.check("hipMemcpy", unsafe {
            self.hip.sym::<FnMemcpy>(b"hipMemcpy\0")?(dst, src, n, kind)
        })
    }
}

impl Buffer for HipBuffer<'_> {
    fn kind(&self) -> MemoryKind {
        MemoryKind::Hip
    }
    fn len(&self) -> usize {
        self.len
    }
    fn addr(&self) -> u64 {
        self.ptr as u64
    }
    fn write_at(&mut self, offset: usize, bytes: &[u8]) -> Result<(), String> {
        let dst = self.span(offset, bytes.len(), "write")?;
        self.copy(dst, bytes.as_ptr().cast(), bytes.len(), H2D)
    }
    fn read_at(&self, offset: usize, out: &mut [u8]) -> Result<(), String> {
        let src = self.span(offset, out.len(), "read")?;
        self.copy(out.as_mut_ptr().cast(), src, out.len(), D2H)
    }
    fn dmabuf(&mut self) -> Result<DmaBuf, String> {
        if let Some(d) = self.dmabuf {
            return Ok(d);
        }
        self.hip.set_device(self.ordinal)?;
        let mut fd: c_int = -1;
        // SAFETY: fd is a valid out-pointer of the handle type's size (an int fd); the range is
        // this whole allocation; flags must be 0.
        self.hip.check("hipMemGetHandleForAddressRange", unsafe {
            self.hip
                .sym::<FnDmabuf>(b"hipMemGetHandleForAddressRange\0")?(
                (&mut fd as *mut c_int).cast(),
                self.ptr,
                self.len,
                DMABUF_FD,
                0,
            )
        })?;
        let d = DmaBuf { fd, offset: 0 };
        self.dmabuf = Some(d);
        Ok(d)
    }
    fn cuda_device(&self) -> Option<i32> {
        i32::try_from(self.ordinal).ok()
    }
    fn is_device_memory(&self) -> Option<bool> {
        let mut t: c_uint = 0;
        // SAFETY: t is a valid out-pointer for the attribute's unsigned value; ptr is this
        // allocation's device pointer.
        let r = unsafe {
            self.hip
                .sym::<FnPtrAttr>(b"hipPointerGetAttribute\0")
                .ok()
                .map(|f| f((&mut t as *mut c_uint).cast(), ATTR_MEMORY_TYPE, self.ptr))
        }?;
        if r != 0 {
            return None;
        }
        // hipMemoryTypeDevice: 2 from ROCm 6 (CUDA's numbering), 1 before.
        let device = if self.hip.runtime_version >= 60_000_000 {
            2
        } else {
            1
        };
        Some(t == device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_rocm_it_says_so() {
        // On a machine without ROCm (CI), opening is Unavailable naming the library; where
        // ROCm is installed, it opens (or says why it cannot initialise).
        match open() {
            Err(u) => {
                assert!(u.message.contains("libamdhip64.so"), "{}", u.message);
                assert!(u.message.contains("ROCm"), "{}", u.message);
            }
            Ok(Ok(h)) => assert!(h.runtime_version > 0),
            Ok(Err(e)) => assert!(!e.is_empty()),
        }
    }
}
