//! cuFile (GPUDirect Storage's library, `libcufile.so.0`) loaded at run time with libloading,
//! never linked: from the loader's path (`LD_LIBRARY_PATH`, ld.so.cache), CUDA's
//! (`/usr/local/cuda/lib64`, `/usr/local/cuda/targets/<arch>-linux/lib`) or the wheel's
//! `site-packages/nvidia/cufile/lib` (`nvidia-cufile-cu12`) or `site-packages/nvidia/cu13/lib`
//! (`nvidia-cufile` for CUDA 13), for every Python found on `PATH`, in a virtualenv or under
//! `/usr`, `/usr/local`, `/opt/conda`. Types and calls follow `cufile.h` of GDS 1.x
//! (`CUfileDrvProps_t`, `CUfileDescr_t`, `CUfileError_t`).

use super::Unavailable;
use std::ffi::{c_int, c_long, c_uint, c_void};
use std::path::{Path, PathBuf};

/// `CUfileError_t`: cuFile's status and, for `CU_FILE_CUDA_DRIVER_ERROR`, the CUDA result.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CuFileError {
    /// `CUfileOpError`: 0 is success, errors are `5000 + n`.
    pub err: c_int,
    /// `CUresult` when `err` is `CU_FILE_CUDA_DRIVER_ERROR`.
    pub cu_err: c_int,
}

/// The `nvfs` part of `CUfileDrvProps_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct NvfsProps {
    /// nvidia-fs major version.
    pub major_version: c_uint,
    /// nvidia-fs minor version.
    pub minor_version: c_uint,
    /// Poll-mode threshold, KiB.
    pub poll_thresh_size: usize,
    /// Largest direct IO, KiB.
    pub max_direct_io_size: usize,
    /// `CUfileDriverStatusFlags_t` bits: which targets the direct path supports.
    pub dstatusflags: c_uint,
    /// `CUfileDriverControlFlags_t` bits: poll mode (0), compat mode allowed (1).
    pub dcontrolflags: c_uint,
}

/// `CUfileDrvProps_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DrvProps {
    /// nvidia-fs properties.
    pub nvfs: NvfsProps,
    /// `CUfileFeatureFlags_t` bits.
    pub fflags: c_uint,
    /// Bounce-buffer memory per GPU, KiB.
    pub max_device_cache_size: c_uint,
    /// Bounce buffer size, KiB.
    pub per_buffer_cache_size: c_uint,
    /// Pinnable memory per GPU, KiB.
    pub max_device_pinned_mem_size: c_uint,
    /// Batch size.
    pub max_batch_io_size: c_uint,
    /// Batch timeout, ms.
    pub max_batch_io_timeout_msecs: c_uint,
}

/// `CU_FILE_NVME_SUPPORTED` in `dstatusflags`.
pub const NVME_SUPPORTED: u32 = 4;
/// `CU_FILE_NVME_P2P_SUPPORTED` in `dstatusflags`.
pub const NVME_P2P_SUPPORTED: u32 = 11;
/// `CU_FILE_ALLOW_COMPAT_MODE` in `dcontrolflags`.
pub const ALLOW_COMPAT_MODE: u32 = 1;
/// `CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE` (`CUFileBoolConfigParameter_t`).
pub const PARAM_ALLOW_COMPAT_MODE: c_int = 1;
/// `CUFILE_PARAM_FORCE_COMPAT_MODE`.
pub const PARAM_FORCE_COMPAT_MODE: c_int = 2;
/// `CUFILE_PARAM_USE_PCIP2PDMA`.
pub const PARAM_USE_PCIP2PDMA: c_int = 7;

#[repr(C)]
#[derive(Clone, Copy)]
union DescrHandle {
    fd: c_int,
    handle: *mut c_void,
}

/// `CUfileDescr_t` with `CU_FILE_HANDLE_TYPE_OPAQUE_FD` (1).
#[repr(C)]
struct Descr {
    kind: c_int,
    handle: DescrHandle,
    fs_ops: *const c_void,
}

/// The name of a `CUfileOpError` (`cufile.h`'s `CUFILE_OP` list), with its number.
pub fn error_name(err: c_int) -> String {
    let name = match err.abs() - 5000 {
        -5000 => "CU_FILE_SUCCESS",
        1 => "CU_FILE_DRIVER_NOT_INITIALIZED (nvidia-fs driver is not loaded)",
        2 => "CU_FILE_DRIVER_INVALID_PROPS",
        3 => "CU_FILE_DRIVER_UNSUPPORTED_LIMIT",
        4 => "CU_FILE_DRIVER_VERSION_MISMATCH",
        5 => "CU_FILE_DRIVER_VERSION_READ_ERROR",
        6 => "CU_FILE_DRIVER_CLOSING",
        7 => "CU_FILE_PLATFORM_NOT_SUPPORTED",
        8 => "CU_FILE_IO_NOT_SUPPORTED (GPUDirect Storage not supported on current file)",
        9 => "CU_FILE_DEVICE_NOT_SUPPORTED",
        10 => "CU_FILE_NVFS_DRIVER_ERROR",
        11 => "CU_FILE_CUDA_DRIVER_ERROR",
        12 => "CU_FILE_CUDA_POINTER_INVALID",
        13 => "CU_FILE_CUDA_MEMORY_TYPE_INVALID",
        14 => "CU_FILE_CUDA_POINTER_RANGE_ERROR",
        15 => "CU_FILE_CUDA_CONTEXT_MISMATCH",
        16 => "CU_FILE_INVALID_MAPPING_SIZE",
        17 => "CU_FILE_INVALID_MAPPING_RANGE",
        18 => "CU_FILE_INVALID_FILE_TYPE",
        19 => "CU_FILE_INVALID_FILE_OPEN_FLAG",
        20 => "CU_FILE_DIO_NOT_SET",
        22 => "CU_FILE_INVALID_VALUE",
        23 => "CU_FILE_MEMORY_ALREADY_REGISTERED",
        24 => "CU_FILE_MEMORY_NOT_REGISTERED",
        25 => "CU_FILE_PERMISSION_DENIED",
        26 => "CU_FILE_DRIVER_ALREADY_OPEN",
        27 => "CU_FILE_HANDLE_NOT_REGISTERED",
        28 => "CU_FILE_HANDLE_ALREADY_REGISTERED",
        29 => "CU_FILE_DEVICE_NOT_FOUND",
        30 => "CU_FILE_INTERNAL_ERROR",
        31 => "CU_FILE_GETNEWFD_FAILED",
        33 => "CU_FILE_NVFS_SETUP_ERROR",
        34 => "CU_FILE_IO_DISABLED (disabled by config on current file)",
        36 => "CU_FILE_GPU_MEMORY_PINNING_FAILED",
        _ => "unknown cuFile error",
    };
    format!("{name} ({err})")
}

fn status(what: &str, e: CuFileError) -> Result<(), String> {
    if e.err == 0 {
        Ok(())
    } else if e.err.abs() == 5011 {
        Err(format!(
            "{what}: {} (CUresult {})",
            error_name(e.err),
            e.cu_err
        ))
    } else {
        Err(format!("{what}: {}", error_name(e.err)))
    }
}

type FnVoid = unsafe extern "C" fn() -> CuFileError;
type FnProps = unsafe extern "C" fn(*mut DrvProps) -> CuFileError;
type FnHandleRegister = unsafe extern "C" fn(*mut *mut c_void, *mut Descr) -> CuFileError;
type FnHandleDeregister = unsafe extern "C" fn(*mut c_void);
type FnBufRegister = unsafe extern "C" fn(*const c_void, usize, c_int) -> CuFileError;
type FnBufDeregister = unsafe extern "C" fn(*const c_void) -> CuFileError;
type FnRead = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, i64, i64) -> isize;
type FnGetVersion = unsafe extern "C" fn(*mut c_int) -> CuFileError;
type FnGetBool = unsafe extern "C" fn(c_int, *mut bool) -> CuFileError;
type FnSetBool = unsafe extern "C" fn(c_int, bool) -> CuFileError;
type FnUseCount = unsafe extern "C" fn() -> c_long;

/// The loaded library and the calls the probe makes.
pub struct CuFile {
    _lib: libloading::Library,
    /// Where it was loaded from.
    pub path: String,
    driver_open: FnVoid,
    driver_close: FnVoid,
    get_properties: FnProps,
    handle_register: FnHandleRegister,
    handle_deregister: FnHandleDeregister,
    buf_register: FnBufRegister,
    buf_deregister: FnBufDeregister,
    read: FnRead,
    get_version: Option<FnGetVersion>,
    get_bool: Option<FnGetBool>,
    set_bool: Option<FnSetBool>,
    _use_count: Option<FnUseCount>,
}

/// Where libcufile may lie: the sonames first (the loader's own search), then CUDA's and the
/// wheel's directories, `extra` (a `--cufile` path) before all.
pub fn candidates(extra: Option<&Path>) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = extra.map(Path::to_path_buf).into_iter().collect();
    v.push("libcufile.so.0".into());
    v.push("libcufile.so".into());
    let arch = std::env::consts::ARCH;
    for d in [
        "/usr/local/cuda/lib64".to_string(),
        format!("/usr/local/cuda/targets/{arch}-linux/lib"),
    ] {
        v.push(Path::new(&d).join("libcufile.so.0"));
    }
    // nvidia-cufile-cu12 installs nvidia/cufile/lib; nvidia-cufile (CUDA 13) nvidia/cu13/lib.
    for sp in site_packages() {
        for sub in ["nvidia/cufile/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"] {
            v.push(sp.join(sub).join("libcufile.so.0"));
        }
    }
    v
}

/// `site-packages`/`dist-packages` directories of the Pythons this process can see: a
/// virtualenv (`VIRTUAL_ENV`, `CONDA_PREFIX`), each `python3*` on `PATH` (its prefix), and the
/// usual system prefixes.
fn site_packages() -> Vec<PathBuf> {
    let mut prefixes: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(p) = std::env::var_os(var) {
            prefixes.push(p.into());
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("python3").exists()
                && let Some(prefix) = dir.parent()
            {
                prefixes.push(prefix.to_path_buf());
            }
        }
    }
    for p in ["/usr/local", "/usr", "/opt/conda"] {
        prefixes.push(p.into());
    }
    if let Some(h) = std::env::var_os("HOME") {
        prefixes.push(Path::new(&h).join(".local"));
    }
    let mut out = Vec::new();
    for prefix in prefixes {
        let lib = prefix.join("lib");
        let Ok(rd) = std::fs::read_dir(&lib) else {
            continue;
        };
        let mut pys: Vec<PathBuf> = rd
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .map(|e| e.path())
            .collect();
        pys.sort();
        for py in pys {
            for sub in ["site-packages", "dist-packages"] {
                let d = py.join(sub);
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
        let deb = lib.join("python3/dist-packages");
        if !out.contains(&deb) {
            out.push(deb);
        }
    }
    out
}

/// Resolves a symbol as a function pointer of type `T`.
///
/// # Safety
///
/// `T` must be the symbol's C signature (from `cufile.h`).
unsafe fn sym<T: Copy>(lib: &libloading::Library, name: &[u8]) -> Result<T, String> {
    // SAFETY: the caller's contract: T is the symbol's type.
    unsafe { lib.get::<T>(name) }
        .map(|s| *s)
        .map_err(|e| format!("{}: {e}", String::from_utf8_lossy(name)))
}

impl CuFile {
    /// Loads the first candidate that opens and exports the calls the probe needs.
    pub fn load(extra: Option<&Path>) -> Result<CuFile, Unavailable> {
        let mut tried = Vec::new();
        for c in candidates(extra) {
            let bare = c.components().count() == 1;
            if !bare && !c.exists() {
                continue;
            }
            // SAFETY: loading libcufile runs its initialisers, which only set up the library's
            // own state (it opens the NVIDIA driver lazily, on cuFileDriverOpen).
            let lib = match unsafe { libloading::Library::new(&c) } {
                Ok(l) => l,
                Err(e) => {
                    tried.push(format!("{}: {e}", c.display()));
                    continue;
                }
            };
            match Self::bind(lib, c.display().to_string()) {
                Ok(f) => return Ok(f),
                Err(e) => tried.push(format!("{}: {e}", c.display())),
            }
        }
        Err(Unavailable::library(
            "libcufile.so.0",
            "CUDA's GPUDirect Storage package (libcufile, part of the CUDA toolkit or nvidia-gds) or the nvidia-cufile Python wheel (give its path with --cufile)",
            &if tried.is_empty() {
                "not found".to_string()
            } else {
                tried.join("; ")
            },
        ))
    }

    fn bind(lib: libloading::Library, path: String) -> Result<CuFile, String> {
        // SAFETY: every type below is the C signature of the symbol in cufile.h (GDS 1.x);
        // cuFileDriverClose is exported as cuFileDriverClose_v2 by the header's #define.
        unsafe {
            Ok(CuFile {
                driver_open: sym(&lib, b"cuFileDriverOpen\0")?,
                driver_close: sym(&lib, b"cuFileDriverClose_v2\0")
                    .or_else(|_| sym(&lib, b"cuFileDriverClose\0"))?,
                get_properties: sym(&lib, b"cuFileDriverGetProperties\0")?,
                handle_register: sym(&lib, b"cuFileHandleRegister\0")?,
                handle_deregister: sym(&lib, b"cuFileHandleDeregister\0")?,
                buf_register: sym(&lib, b"cuFileBufRegister\0")?,
                buf_deregister: sym(&lib, b"cuFileBufDeregister\0")?,
                read: sym(&lib, b"cuFileRead\0")?,
                get_version: sym(&lib, b"cuFileGetVersion\0").ok(),
                get_bool: sym(&lib, b"cuFileGetParameterBool\0").ok(),
                set_bool: sym(&lib, b"cuFileSetParameterBool\0").ok(),
                _use_count: sym(&lib, b"cuFileUseCount\0").ok(),
                _lib: lib,
                path,
            })
        }
    }

    /// `cuFileGetVersion` (GDS ≥ 1.9), e.g. 1150.
    pub fn version(&self) -> Option<i32> {
        let f = self.get_version?;
        let mut v = 0;
        // SAFETY: v is a valid out-pointer.
        let e = unsafe { f(&mut v) };
        (e.err == 0).then_some(v)
    }

    /// `cuFileGetParameterBool` (GDS ≥ 1.14): the staged value before the driver opens, the
    /// running one after.
    pub fn get_bool(&self, param: c_int) -> Option<bool> {
        let f = self.get_bool?;
        let mut v = false;
        // SAFETY: v is a valid out-pointer; param is a CUFileBoolConfigParameter_t value.
        let e = unsafe { f(param, &mut v) };
        (e.err == 0).then_some(v)
    }

    /// `cuFileSetParameterBool` (GDS ≥ 1.14; only while the driver is closed). `Err` when the
    /// library lacks the call or refuses.
    pub fn set_bool(&self, param: c_int, v: bool) -> Result<(), String> {
        let f = self
            .set_bool
            .ok_or("cuFileSetParameterBool not exported (GDS older than 1.14)")?;
        // SAFETY: param is a CUFileBoolConfigParameter_t value.
        status("cuFileSetParameterBool", unsafe { f(param, v) })
    }

    /// `cuFileDriverOpen`.
    pub fn open(&self) -> Result<(), String> {
        // SAFETY: no arguments; may be called again after a close.
        status("cuFileDriverOpen", unsafe { (self.driver_open)() })
    }

    /// `cuFileDriverClose`.
    pub fn close(&self) -> Result<(), String> {
        // SAFETY: no arguments; every handle and buffer registration was released first (their
        // guards borrow this value and are dropped before the caller closes).
        status("cuFileDriverClose", unsafe { (self.driver_close)() })
    }

    /// `cuFileDriverGetProperties` (the driver must be open).
    pub fn properties(&self) -> Result<DrvProps, String> {
        let mut p = DrvProps::default();
        // SAFETY: p is a valid out-pointer of the header's CUfileDrvProps_t layout.
        status("cuFileDriverGetProperties", unsafe {
            (self.get_properties)(&mut p)
        })?;
        Ok(p)
    }

    /// `cuFileHandleRegister` of an open file descriptor.
    pub fn register(&self, fd: c_int) -> Result<FileHandle<'_>, String> {
        let mut d = Descr {
            kind: 1,
            handle: DescrHandle {
                handle: std::ptr::null_mut(),
            },
            fs_ops: std::ptr::null(),
        };
        d.handle.fd = fd;
        let mut h: *mut c_void = std::ptr::null_mut();
        // SAFETY: h and d are valid; d describes a Linux fd (type 1) with no fs_ops; the fd
        // stays open while the handle lives (the caller's File outlives the FileHandle).
        status("cuFileHandleRegister", unsafe {
            (self.handle_register)(&mut h, &mut d)
        })?;
        Ok(FileHandle { cf: self, h })
    }

    /// `cuFileBufRegister` of `len` bytes of device memory at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr..ptr+len` is a live `cuMemAlloc` allocation that outlives the returned guard.
    pub unsafe fn register_buffer(&self, ptr: u64, len: usize) -> Result<BufReg<'_>, String> {
        // SAFETY: the caller's contract.
        status("cuFileBufRegister", unsafe {
            (self.buf_register)(ptr as *const c_void, len, 0)
        })?;
        Ok(BufReg { cf: self, ptr })
    }
}

/// A registered file, deregistered on drop.
pub struct FileHandle<'a> {
    cf: &'a CuFile,
    h: *mut c_void,
}

impl FileHandle<'_> {
    /// `cuFileRead` of `len` bytes at `offset` into device memory at `dev` (registered or
    /// not); returns the bytes read.
    ///
    /// # Safety
    ///
    /// `dev..dev+len` is live device memory of the current CUDA context.
    pub unsafe fn read(&self, dev: u64, len: usize, offset: i64) -> Result<usize, String> {
        // SAFETY: the caller's contract; the handle is registered.
        let n = unsafe { (self.cf.read)(self.h, dev as *mut c_void, len, offset, 0) };
        if n < 0 {
            // cuFileRead returns -1 with errno, or the negated CUfileOpError.
            let n = n as c_int;
            if n == -1 {
                Err(format!("cuFileRead: {}", std::io::Error::last_os_error()))
            } else {
                Err(format!("cuFileRead: {}", error_name(n)))
            }
        } else {
            Ok(n as usize)
        }
    }
}

impl Drop for FileHandle<'_> {
    fn drop(&mut self) {
        // SAFETY: h came from cuFileHandleRegister and is deregistered once.
        unsafe { (self.cf.handle_deregister)(self.h) };
    }
}

/// A registered device buffer, deregistered on drop.
pub struct BufReg<'a> {
    cf: &'a CuFile,
    ptr: u64,
}

impl Drop for BufReg<'_> {
    fn drop(&mut self) {
        // SAFETY: ptr was registered by cuFileBufRegister and is deregistered once, before the
        // allocation is freed (the caller's contract on register_buffer).
        let _ = unsafe { (self.cf.buf_deregister)(self.ptr as *const c_void) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_cufile_h() {
        // CUfileDrvProps_t on LP64: nvfs {u32 u32 size_t size_t u32 u32} = 32 bytes, then six
        // u32 = 56 bytes; CUfileDescr_t: int, union {int, void*} at 8, pointer at 16 = 24.
        assert_eq!(std::mem::size_of::<NvfsProps>(), 32);
        assert_eq!(std::mem::size_of::<DrvProps>(), 56);
        assert_eq!(std::mem::size_of::<Descr>(), 24);
        assert_eq!(std::mem::size_of::<CuFileError>(), 8);
    }

    #[test]
    fn error_names() {
        assert!(error_name(5008).starts_with("CU_FILE_IO_NOT_SUPPORTED"));
        assert!(error_name(-5001).starts_with("CU_FILE_DRIVER_NOT_INITIALIZED"));
        assert!(error_name(0).starts_with("CU_FILE_SUCCESS"));
        assert!(error_name(5999).starts_with("unknown"));
    }

    #[test]
    fn the_wheel_directory_is_searched() {
        let c = candidates(Some(Path::new("/opt/x/libcufile.so.0")));
        assert_eq!(c[0], Path::new("/opt/x/libcufile.so.0"));
        assert!(
            c.iter()
                .any(|p| p.ends_with("nvidia/cufile/lib/libcufile.so.0"))
        );
    }
}
