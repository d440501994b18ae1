//! CUDA for the probe, through cudarc's run-time-loaded driver API (`libcuda.so.1`, never
//! linked): device memory from `cuMemAlloc` (never managed memory), dma-buf export with
//! `cuMemGetHandleForAddressRange`, and the copy probes that need no NIC — pinned host↔device
//! bandwidth per GPU, device↔device with and without peer access, dma-buf support.
//!
//! `is_culib_present()` is checked before any other call (cudarc panics when the library is
//! missing); every driver call is additionally wrapped in `catch_unwind` (a symbol missing
//! from an old driver also panics inside cudarc).

use super::Unavailable;
use super::memory::{Buffer, DmaBuf};
use crate::analysis::probe_report::MemoryKind;
use crate::analysis::probe_report::cuda::{CudaDevice, CudaPeer, CudaReport};
use cudarc::driver::sys;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// Runs `f`, turning a cudarc panic (missing library or symbol) into an error.
fn guard<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            Err(format!("{what}: CUDA driver call failed to load: {msg}"))
        }
    }
}

fn check(what: &str, r: sys::CUresult) -> Result<(), String> {
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut p: *const c_char = std::ptr::null();
    // SAFETY: p is a valid out-pointer.
    let found = unsafe { sys::cuGetErrorString(r, &mut p) } == sys::CUresult::CUDA_SUCCESS;
    let name = if found && !p.is_null() {
        // SAFETY: the driver set p to a static NUL-terminated string.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    } else {
        String::new()
    };
    Err(format!("{what}: {r:?} {name}").trim_end().to_string())
}

/// Makes `ctx` current on this thread.
///
/// # Safety
///
/// `ctx` is a primary context retained by a live [`Cuda`].
unsafe fn set_current(ctx: sys::CUcontext) -> Result<(), String> {
    guard("cuCtxSetCurrent", || {
        // SAFETY: the caller's contract.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })
    })
}

/// An initialised CUDA driver.
pub struct Cuda {
    /// Devices by ordinal: `(device handle, primary context)`.
    devices: Vec<(sys::CUdevice, sys::CUcontext)>,
    /// `cuDriverGetVersion`, e.g. 12080.
    pub driver_version: i32,
}

/// Opens the driver: `Unavailable` when libcuda.so.1 is absent, an error string when it is
/// present but does not initialise.
pub fn open() -> Result<Result<Cuda, String>, Unavailable> {
    // SAFETY: is_culib_present only tries to dlopen the library.
    if !unsafe { sys::is_culib_present() } {
        return Err(Unavailable::library(
            "libcuda.so.1",
            "the NVIDIA driver (Debian: libcuda1, part of nvidia-driver; no CUDA toolkit needed)",
            "not found",
        ));
    }
    Ok(guard("cuInit", || {
        // SAFETY: no preconditions (flags must be 0).
        check("cuInit", unsafe { sys::cuInit(0) })?;
        let (mut v, mut n) = (0, 0);
        // SAFETY: v is a valid out-pointer.
        check("cuDriverGetVersion", unsafe {
            sys::cuDriverGetVersion(&mut v)
        })?;
        // SAFETY: n is a valid out-pointer.
        check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) })?;
        // Built as the devices are retained, so Drop releases exactly those on an early error.
        let mut cuda = Cuda {
            devices: Vec::new(),
            driver_version: v,
        };
        for i in 0..n {
            let mut d = 0;
            // SAFETY: d is a valid out-pointer; i is below the device count.
            check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut d, i) })?;
            let mut ctx = std::ptr::null_mut();
            // SAFETY: ctx is a valid out-pointer; d is a device handle from cuDeviceGet.
            let r = unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, d) };
            check("cuDevicePrimaryCtxRetain", r)?;
            cuda.devices.push((d, ctx));
        }
        Ok(cuda)
    }))
}

/// The plan's view of the driver: its devices and their `cuDeviceGetPCIBusId` addresses.
impl super::memory::CudaGpus for Cuda {
    fn count(&self) -> usize {
        Cuda::count(self)
    }
    fn pci_bus_id(&self, ordinal: usize) -> Result<String, String> {
        Cuda::pci_bus_id(self, ordinal)
    }
}

impl Drop for Cuda {
    fn drop(&mut self) {
        for (d, _) in &self.devices {
            let _ = guard("release", || {
                // SAFETY: each primary context was retained once in open() and is released once.
                check("release", unsafe { sys::cuDevicePrimaryCtxRelease_v2(*d) })
            });
        }
    }
}

impl Cuda {
    /// Number of CUDA devices.
    pub fn count(&self) -> usize {
        self.devices.len()
    }

    fn ctx(&self, ordinal: usize) -> Result<sys::CUcontext, String> {
        let (_, c) = self
            .devices
            .get(ordinal)
            .ok_or_else(|| format!("no CUDA device {ordinal}"))?;
        // SAFETY: c is a primary context this value retained.
        unsafe { set_current(*c) }?;
        Ok(*c)
    }

    /// A string the driver writes into a caller's buffer (`cuDeviceGetPCIBusId`,
    /// `cuDeviceGetName`): `call(buffer, length, device)`.
    fn device_text(
        &self,
        ordinal: usize,
        what: &str,
        call: unsafe fn(*mut c_char, c_int, sys::CUdevice) -> sys::CUresult,
    ) -> Result<String, String> {
        let (d, _) = *self.devices.get(ordinal).ok_or("no such device")?;
        guard(what, || {
            let mut b = [0 as c_char; 128];
            // SAFETY: the buffer and the length passed match; d is a device handle.
            check(what, unsafe { call(b.as_mut_ptr(), b.len() as c_int, d) })?;
            b[b.len() - 1] = 0;
            // SAFETY: NUL-terminated: by the driver, and at the end by the line above.
            Ok(unsafe { CStr::from_ptr(b.as_ptr()) }
                .to_string_lossy()
                .into_owned())
        })
    }

    /// PCI address of a device (`0000:17:00.0`, lower case), from `cuDeviceGetPCIBusId`.
    pub fn pci_bus_id(&self, ordinal: usize) -> Result<String, String> {
        self.device_text(ordinal, "cuDeviceGetPCIBusId", sys::cuDeviceGetPCIBusId)
            .map(|s| s.to_lowercase())
    }

    fn name(&self, ordinal: usize) -> Result<String, String> {
        self.device_text(ordinal, "cuDeviceGetName", sys::cuDeviceGetName)
    }

    fn attr(&self, ordinal: usize, a: sys::CUdevice_attribute) -> Result<i32, String> {
        let (d, _) = *self.devices.get(ordinal).ok_or("no such device")?;
        guard("cuDeviceGetAttribute", || {
            let mut v: c_int = 0;
            // SAFETY: v is a valid out-pointer; d is a device handle.
            check("cuDeviceGetAttribute", unsafe {
                sys::cuDeviceGetAttribute(&mut v, a, d)
            })?;
            Ok(v)
        })
    }

    /// Allocates `len` bytes of device memory on `ordinal` with `cuMemAlloc`.
    pub fn alloc(&self, ordinal: usize, len: usize) -> Result<CudaBuffer<'_>, String> {
        let ctx = self.ctx(ordinal)?;
        guard("cuMemAlloc", || {
            let mut p: sys::CUdeviceptr = 0;
            // SAFETY: p is a valid out-pointer; the device's context is current.
            check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut p, len) })?;
            Ok(CudaBuffer {
                cuda: self,
                ordinal,
                ctx,
                ptr: p,
                len,
                dmabuf: None,
            })
        })
    }
}

/// Device memory from `cuMemAlloc`, freed on drop (with its dma-buf fd, if exported).
pub struct CudaBuffer<'a> {
    cuda: &'a Cuda,
    ordinal: usize,
    ctx: sys::CUcontext,
    ptr: sys::CUdeviceptr,
    len: usize,
    dmabuf: Option<DmaBuf>,
}

impl Drop for CudaBuffer<'_> {
    fn drop(&mut self) {
        if let Some(d) = self.dmabuf.take() {
            // SAFETY: the fd came from cuMemGetHandleForAddressRange and is closed once.
            unsafe { libc::close(d.fd) };
        }
        let ptr = self.ptr;
        // SAFETY: ctx is the primary context `self.cuda` retained.
        let _ = unsafe { set_current(self.ctx) }.and_then(|_| {
            guard("cuMemFree", || {
                // SAFETY: ptr was allocated in this context and is freed once; registrations
                // of it ended first (their guards borrowed this buffer).
                check("cuMemFree", unsafe { sys::cuMemFree_v2(ptr) })
            })
        });
    }
}

impl Buffer for CudaBuffer<'_> {
    fn kind(&self) -> MemoryKind {
        MemoryKind::Cuda
    }
    fn len(&self) -> usize {
        self.len
    }
    fn addr(&self) -> u64 {
        self.ptr
    }
    fn write_at(&mut self, offset: usize, bytes: &[u8]) -> Result<(), String> {
        if offset.checked_add(bytes.len()).is_none_or(|e| e > self.len) {
            return Err("write past the end of device buffer".into());
        }
        let dst = self.ptr + offset as u64;
        // SAFETY: ctx is the primary context `self.cuda` retained.
        unsafe { set_current(self.ctx) }?;
        guard("cuMemcpyHtoD", || {
            let src = bytes.as_ptr() as *const c_void;
            // SAFETY: the range lies inside this allocation (checked above); src is a live
            // host slice of that length; the copy is synchronous.
            check("cuMemcpyHtoD", unsafe {
                sys::cuMemcpyHtoD_v2(dst, src, bytes.len())
            })
        })
    }
    fn read_at(&self, offset: usize, out: &mut [u8]) -> Result<(), String> {
        if offset.checked_add(out.len()).is_none_or(|e| e > self.len) {
            return Err("read past the end of device buffer".into());
        }
        let src = self.ptr + offset as u64;
        // SAFETY: ctx is the primary context `self.cuda` retained.
        unsafe { set_current(self.ctx) }?;
        guard("cuMemcpyDtoH", || {
            let dst = out.as_mut_ptr() as *mut c_void;
            // SAFETY: the range lies inside this allocation (checked above); dst is a live
            // host slice of that length; the copy is synchronous.
            check("cuMemcpyDtoH", unsafe {
                sys::cuMemcpyDtoH_v2(dst, src, out.len())
            })
        })
    }
    fn dmabuf(&mut self) -> Result<DmaBuf, String> {
        if let Some(d) = self.dmabuf {
            return Ok(d);
        }
        let supported = self.cuda.attr(
            self.ordinal,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
        )?;
        if supported == 0 {
            return Err("DMA-BUF is not supported on this GPU (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0: proprietary kernel module, old driver, or non-coherent platform)".into());
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        let start = self.ptr & !(page - 1);
        let end = (self.ptr + self.len as u64).div_ceil(page) * page;
        let ptr = self.ptr;
        // SAFETY: ctx is the primary context `self.cuda` retained.
        unsafe { set_current(self.ctx) }?;
        let fd = guard("cuMemGetHandleForAddressRange", || {
            let mut fd: c_int = -1;
            let kind = sys::CUmemRangeHandleType::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD;
            let out = &mut fd as *mut c_int as *mut c_void;
            // SAFETY: out points to an int, what a DMA_BUF_FD handle is; the range covers
            // this allocation, page-aligned as the driver requires.
            check("cuMemGetHandleForAddressRange", unsafe {
                sys::cuMemGetHandleForAddressRange(out, start, (end - start) as usize, kind, 0)
            })?;
            Ok(fd)
        })?;
        let d = DmaBuf {
            fd,
            offset: ptr - start,
        };
        self.dmabuf = Some(d);
        Ok(d)
    }
    fn cuda_device(&self) -> Option<i32> {
        Some(self.ordinal as i32)
    }
    fn is_device_memory(&self) -> Option<bool> {
        let ptr = self.ptr;
        // SAFETY: ctx is the primary context `self.cuda` retained.
        unsafe { set_current(self.ctx) }.ok()?;
        guard("cuPointerGetAttribute", || {
            let mut t: u32 = 0;
            let out = &mut t as *mut u32 as *mut c_void;
            let attr = sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
            // SAFETY: MEMORY_TYPE writes one unsigned int to out.
            check("cuPointerGetAttribute", unsafe {
                sys::cuPointerGetAttribute(out, attr, ptr)
            })?;
            Ok(t == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32)
        })
        .ok()
    }
}

/// Splits measurement results into values and error texts.
fn split(rs: [&Result<f64, String>; 2], errors: &mut Vec<String>) -> [Option<f64>; 2] {
    rs.map(|r| match r {
        Ok(v) => Some(*v),
        Err(e) => {
            if !errors.contains(e) {
                errors.push(e.clone());
            }
            None
        }
    })
}

impl CudaReport {
    /// A report that says why the probes could not run.
    pub fn unavailable(reason: &str) -> Self {
        CudaReport {
            available: false,
            reason: Some(reason.into()),
            driver_version: None,
            devices: Vec::new(),
            peers: Vec::new(),
        }
    }
}

/// Times repeated copies of `bytes` for about `window`; GB/s.
fn time_copies(
    window: Duration,
    bytes: usize,
    mut copy: impl FnMut() -> Result<(), String>,
) -> Result<f64, String> {
    copy()?; // warm-up
    let t0 = Instant::now();
    let mut n = 0u64;
    while t0.elapsed() < window || n == 0 {
        copy()?;
        n += 1;
        if super::interrupted() {
            break;
        }
    }
    let s = t0.elapsed().as_secs_f64();
    Ok((n as f64 * bytes as f64) / s / 1e9)
}

/// Runs the CUDA probes within about `budget`.
pub fn probes(budget: Duration) -> CudaReport {
    let cuda = match open() {
        Err(u) => return CudaReport::unavailable(&u.message),
        Ok(Err(e)) => {
            return CudaReport::unavailable(&format!("CUDA driver present but not usable: {e}"));
        }
        Ok(Ok(c)) => c,
    };
    let n = cuda.count();
    if n == 0 {
        let mut r = CudaReport::unavailable("the CUDA driver sees no GPU");
        r.driver_version = Some(cuda.driver_version);
        return r;
    }
    let cells = n * 2 + n * n.saturating_sub(1) * 2;
    let window =
        (budget / cells.max(1) as u32).clamp(Duration::from_millis(50), Duration::from_secs(2));
    const BYTES: usize = 64 << 20;
    let mut devices = Vec::new();
    for i in 0..n {
        let flag = |a| cuda.attr(i, a).ok().map(|v| v != 0);
        let dma_buf_supported =
            flag(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
        let dma_buf_export = cuda
            .alloc(i, 2 << 20)
            .and_then(|mut b| b.dmabuf().map(|_| ()));
        let (h2d, d2h) = match (cuda.alloc(i, BYTES), pinned(BYTES)) {
            (Ok(dev), Ok(host)) => {
                let (ctx, d, h) = (dev.ctx, dev.ptr, host.0);
                // SAFETY: ctx is the primary context `cuda` retained.
                let set = move || unsafe { set_current(ctx) };
                let h2d = time_copies(window, BYTES, || {
                    set()?;
                    guard("cuMemcpyHtoD", || {
                        // SAFETY: dev and host are both BYTES long and alive in this arm.
                        check("cuMemcpyHtoD", unsafe { sys::cuMemcpyHtoD_v2(d, h, BYTES) })
                    })
                });
                let d2h = time_copies(window, BYTES, || {
                    set()?;
                    guard("cuMemcpyDtoH", || {
                        // SAFETY: as above.
                        check("cuMemcpyDtoH", unsafe { sys::cuMemcpyDtoH_v2(h, d, BYTES) })
                    })
                });
                (h2d, d2h)
            }
            (Err(e), _) | (_, Err(e)) => (Err(e.clone()), Err(e)),
        };
        let mut errors = Vec::new();
        let [h2d, d2h] = split([&h2d, &d2h], &mut errors);
        devices.push(CudaDevice {
            ordinal: i,
            name: cuda.name(i).ok(),
            pci_bus_id: cuda.pci_bus_id(i).ok(),
            dma_buf_supported,
            dma_buf_export: dma_buf_export.is_ok(),
            dma_buf_export_error: dma_buf_export.err(),
            gpudirect_rdma_supported: flag(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
            ),
            h2d_gbytes_per_s: h2d,
            d2h_gbytes_per_s: d2h,
            errors,
        });
        if super::interrupted() {
            break;
        }
    }
    let mut peers = Vec::new();
    for s in 0..n {
        for d in 0..n {
            if s == d || super::interrupted() {
                continue;
            }
            peers.push(peer_probe(&cuda, s, d, window, BYTES));
        }
    }
    CudaReport {
        available: true,
        reason: None,
        driver_version: Some(cuda.driver_version),
        devices,
        peers,
    }
}

/// Pinned host memory from `cuMemHostAlloc` (page-locked, not managed), freed on drop.
struct Pinned(*mut c_void);

impl Drop for Pinned {
    fn drop(&mut self) {
        let p = self.0;
        let _ = guard("cuMemFreeHost", || {
            // SAFETY: p came from cuMemHostAlloc and is freed once.
            check("cuMemFreeHost", unsafe { sys::cuMemFreeHost(p) })
        });
    }
}

fn pinned(len: usize) -> Result<Pinned, String> {
    guard("cuMemHostAlloc", || {
        let mut p = std::ptr::null_mut();
        // SAFETY: p is a valid out-pointer; flags 0: plain page-locked host memory.
        check("cuMemHostAlloc", unsafe {
            sys::cuMemHostAlloc(&mut p, len, 0)
        })?;
        Ok(Pinned(p))
    })
}

fn peer_probe(cuda: &Cuda, s: usize, d: usize, window: Duration, bytes: usize) -> CudaPeer {
    let can = guard("cuDeviceCanAccessPeer", || {
        let mut v = 0;
        let (dd, sd) = (cuda.devices[d].0, cuda.devices[s].0);
        // SAFETY: v is a valid out-pointer; both are device handles.
        check("cuDeviceCanAccessPeer", unsafe {
            sys::cuDeviceCanAccessPeer(&mut v, dd, sd)
        })?;
        Ok(v != 0)
    })
    .ok();
    let bufs = cuda
        .alloc(s, bytes)
        .and_then(|a| Ok((a, cuda.alloc(d, bytes)?)));
    let (without, with) = match bufs {
        Err(e) => (Err(e.clone()), Err(e)),
        Ok((a, b)) => {
            let (sc, dc, sp, dp) = (a.ctx, b.ctx, a.ptr, b.ptr);
            let copy = || {
                guard("cuMemcpyPeer", || {
                    // SAFETY: a and b are both `bytes` long, alive in this arm, in the
                    // contexts given.
                    check("cuMemcpyPeer", unsafe {
                        sys::cuMemcpyPeer(dp, dc, sp, sc, bytes)
                    })?;
                    // SAFETY: no preconditions; waits for the copy, to time it.
                    check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
                })
            };
            let without = time_copies(window, bytes, copy);
            let with = if can == Some(true) {
                // SAFETY: dc is the primary context `cuda` retained.
                let en = unsafe { set_current(dc) }.and_then(|_| {
                    guard("cuCtxEnablePeerAccess", || {
                        // SAFETY: sc is a live context; access from the current one to it.
                        check("cuCtxEnablePeerAccess", unsafe {
                            sys::cuCtxEnablePeerAccess(sc, 0)
                        })
                    })
                });
                let r = en.and_then(|_| time_copies(window, bytes, copy));
                // Undo what was enabled; an error when it was not is harmless.
                // SAFETY: dc is the primary context `cuda` retained.
                let _ = unsafe { set_current(dc) }.and_then(|_| {
                    guard("cuCtxDisablePeerAccess", || {
                        // SAFETY: sc is a live context.
                        check("cuCtxDisablePeerAccess", unsafe {
                            sys::cuCtxDisablePeerAccess(sc)
                        })
                    })
                });
                r
            } else {
                Err(
                    "peer access not possible between these GPUs (cuDeviceCanAccessPeer = 0)"
                        .into(),
                )
            };
            (without, with)
        }
    };
    let mut errors = Vec::new();
    let [without, with] = split([&without, &with], &mut errors);
    CudaPeer {
        src: s,
        dst: d,
        can_access_peer: can,
        without_peer_gbytes_per_s: without,
        with_peer_gbytes_per_s: with,
        errors,
    }
}
