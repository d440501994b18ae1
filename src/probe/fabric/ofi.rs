//! libfabric loopback: `libfabric.so.1` is opened at run time; a passive endpoint listens on
//! 127.0.0.1 (kernel-chosen port), an `FI_EP_MSG` endpoint connects to it, and the accepted
//! endpoint is the target. Both share one domain, so one registration serves either side.
//! Everything but `fi_getinfo`/`fi_freeinfo`/`fi_dupinfo`/`fi_fabric`/`fi_strerror`/
//! `fi_version` goes through the ops tables carried in [`super::ofi_sys`].

use super::ofi_sys::*;
use super::{Completion, Fabric, Op, OpenError, Posted, RegAttempt, Registered, Transfer};
use crate::probe::Unavailable;
use crate::probe::memory::{Buffer, MemoryKind};
use libloading::Library;
use std::ffi::{CStr, CString, c_void};
use std::ptr::null_mut;
use std::time::{Duration, Instant};

/// Soname opened at run time.
pub const LIBFABRIC: &str = "libfabric.so.1";

/// The exported libfabric entry points.
struct Lib {
    _lib: Library,
    getinfo: fi_getinfo_fn,
    freeinfo: fi_freeinfo_fn,
    dupinfo: fi_dupinfo_fn,
    fabric: fi_fabric_fn,
    strerror: fi_strerror_fn,
    version: fi_version_fn,
}

impl Lib {
    fn open() -> Result<Lib, Unavailable> {
        // SAFETY: loading libfabric runs its constructors, which have no preconditions.
        let lib = unsafe { Library::new(crate::probe::lib_name(LIBFABRIC, "PEERPATH_LIBFABRIC")) }
            .map_err(|e| {
                Unavailable::library(LIBFABRIC, "the Debian package libfabric1", &e.to_string())
            })?;
        macro_rules! sym {
            ($n:literal, $t:ty) => {
                // SAFETY: the symbol has this C signature in every libfabric 1.x.
                *unsafe { lib.get::<$t>($n) }.map_err(|e| {
                    Unavailable::library(
                        LIBFABRIC,
                        "the Debian package libfabric1",
                        &format!("missing symbol: {e}"),
                    )
                })?
            };
        }
        Ok(Lib {
            getinfo: sym!(b"fi_getinfo\0", fi_getinfo_fn),
            freeinfo: sym!(b"fi_freeinfo\0", fi_freeinfo_fn),
            dupinfo: sym!(b"fi_dupinfo\0", fi_dupinfo_fn),
            fabric: sym!(b"fi_fabric\0", fi_fabric_fn),
            strerror: sym!(b"fi_strerror\0", fi_strerror_fn),
            version: sym!(b"fi_version\0", fi_version_fn),
            _lib: lib,
        })
    }

    fn err(&self, rc: isize) -> String {
        let code = (-rc) as i32;
        // SAFETY: fi_strerror returns a static string for any code.
        let s = unsafe { CStr::from_ptr((self.strerror)(code)) }
            .to_string_lossy()
            .into_owned();
        format!("{s} (-{code})")
    }
}

/// libfabric's runtime version as `major.minor`, or why it could not be read.
pub fn runtime_version() -> Result<String, Unavailable> {
    let lib = Lib::open()?;
    // SAFETY: fi_version has no arguments.
    let v = unsafe { (lib.version)() };
    Ok(format!("{}.{}", v >> 16, v & 0xffff))
}

struct Mr {
    mr: *mut fid_mr,
    addr: u64,
    len: usize,
}

/// A libfabric loopback pair (see module doc).
pub struct OfiFabric {
    lib: Lib,
    srv_info: *mut fi_info,
    cli_info: *mut fi_info,
    fabric: *mut fid_fabric,
    domain: *mut fid_domain,
    eq_s: *mut fid_eq,
    eq_c: *mut fid_eq,
    pep: *mut fid_pep,
    cq_c: *mut fid_cq,
    cq_s: *mut fid_cq,
    ep_c: *mut fid_ep,
    ep_s: *mut fid_ep,
    mrs: Vec<Option<Mr>>,
    next_key: u64,
    virt_addr: bool,
    prov_key: bool,
    hmem: bool,
    ctx: Box<[fi_context2]>,
    ctx_wr: Vec<u64>,
    ctx_free: Vec<usize>,
    name: String,
}

/// Closes a libfabric object through its ops table; ignores null.
unsafe fn close(f: *mut fid) {
    if !f.is_null() {
        // SAFETY: f is a live libfabric object; close is always present.
        unsafe {
            if let Some(c) = (*(*f).ops).close {
                c(f);
            }
        }
    }
}

const CTX_SLOTS: usize = 64;

impl OfiFabric {
    /// Opens `provider` on 127.0.0.1 and connects a loopback pair. `memory` says whether
    /// device memory will be registered (then `FI_HMEM` is asked for, and its absence noted).
    pub fn open(provider: &str, memory: MemoryKind) -> Result<OfiFabric, OpenError> {
        let lib = Lib::open().map_err(OpenError::Unavailable)?;
        let mut f = OfiFabric {
            lib,
            srv_info: null_mut(),
            cli_info: null_mut(),
            fabric: null_mut(),
            domain: null_mut(),
            eq_s: null_mut(),
            eq_c: null_mut(),
            pep: null_mut(),
            cq_c: null_mut(),
            cq_s: null_mut(),
            ep_c: null_mut(),
            ep_s: null_mut(),
            mrs: Vec::new(),
            next_key: 1,
            virt_addr: false,
            prov_key: false,
            hmem: false,
            // SAFETY: fi_context2 is plain pointers; all-zero is its initial state.
            ctx: vec![unsafe { std::mem::zeroed::<fi_context2>() }; CTX_SLOTS].into_boxed_slice(),
            ctx_wr: vec![0; CTX_SLOTS],
            ctx_free: (0..CTX_SLOTS).rev().collect(),
            name: format!("ofi:{provider}"),
        };
        // SAFETY: setup() only touches objects it creates; Drop closes whatever was made.
        unsafe { f.setup(provider, memory)? };
        Ok(f)
    }

    unsafe fn getinfo(
        &self,
        provider: &str,
        node: &str,
        service: &str,
        flags: u64,
        hmem: bool,
    ) -> Result<*mut fi_info, isize> {
        // SAFETY: hints come from fi_dupinfo(NULL) (libfabric's own allocation, all attrs
        // allocated); strings put into it are strdup'ed so fi_freeinfo may free them.
        unsafe {
            let hints = (self.lib.dupinfo)(std::ptr::null());
            if hints.is_null() {
                return Err(-(libc::ENOMEM as isize));
            }
            (*hints).caps = FI_RMA
                | FI_READ
                | FI_WRITE
                | FI_REMOTE_READ
                | FI_REMOTE_WRITE
                | if hmem { FI_HMEM } else { 0 };
            (*hints).mode = FI_CONTEXT | FI_CONTEXT2;
            (*hints).addr_format = FI_SOCKADDR_IN;
            (*(*hints).ep_attr).r#type = FI_EP_MSG;
            (*(*hints).domain_attr).mr_mode = FI_MR_LOCAL
                | FI_MR_VIRT_ADDR
                | FI_MR_ALLOCATED
                | FI_MR_PROV_KEY
                | if hmem { FI_MR_HMEM } else { 0 };
            let prov = CString::new(provider).unwrap_or_default();
            (*(*hints).fabric_attr).prov_name = libc::strdup(prov.as_ptr());
            let node = CString::new(node).unwrap_or_default();
            let service = CString::new(service).unwrap_or_default();
            let mut info = null_mut();
            let version = (self.lib.version)().min(FI_API_VERSION);
            let rc = (self.lib.getinfo)(
                version,
                node.as_ptr(),
                service.as_ptr(),
                flags,
                hints,
                &mut info,
            );
            (self.lib.freeinfo)(hints);
            if rc != 0 {
                return Err(rc as isize);
            }
            Ok(info)
        }
    }

    unsafe fn setup(&mut self, provider: &str, memory: MemoryKind) -> Result<(), OpenError> {
        let fail = |what: &str, rc: isize, lib: &Lib| {
            OpenError::Failed(format!("{what}: {}", lib.err(rc)))
        };
        // SAFETY: every pointer dereferenced below was returned non-null by libfabric and the
        // ops tables are those of libfabric API 1.17 (checked by tests/probe_layout.rs).
        unsafe {
            let want_hmem = memory == MemoryKind::Cuda;
            let mut hmem = want_hmem;
            let srv = match self.getinfo(provider, "127.0.0.1", "0", FI_SOURCE, hmem) {
                Ok(i) => i,
                Err(rc) if want_hmem && rc == -(libc::ENODATA as isize) => {
                    hmem = false;
                    self.getinfo(provider, "127.0.0.1", "0", FI_SOURCE, false)
                        .map_err(|rc| self.no_provider(provider, rc))?
                }
                Err(rc) => return Err(self.no_provider(provider, rc)),
            };
            self.hmem = hmem;
            self.srv_info = srv;
            let dattr = (*srv).domain_attr;
            let mr_mode = (*dattr).mr_mode;
            self.virt_addr = mr_mode & FI_MR_VIRT_ADDR != 0 || mr_mode == 1; // FI_MR_BASIC
            self.prov_key = mr_mode & FI_MR_PROV_KEY != 0 || mr_mode == 1;
            let dname = if (*dattr).name.is_null() {
                "?".into()
            } else {
                CStr::from_ptr((*dattr).name).to_string_lossy().into_owned()
            };
            let pname = CStr::from_ptr((*(*srv).fabric_attr).prov_name)
                .to_string_lossy()
                .into_owned();
            self.name = format!("ofi:{pname}:{dname}");

            let rc = (self.lib.fabric)((*srv).fabric_attr, &mut self.fabric, null_mut());
            if rc != 0 {
                return Err(fail("fi_fabric", rc as isize, &self.lib));
            }
            let fops = &*(*self.fabric).ops;
            let mut eq_attr = fi_eq_attr {
                size: 16,
                flags: 0,
                wait_obj: FI_WAIT_UNSPEC,
                signaling_vector: 0,
                wait_set: null_mut(),
            };
            for eq in [&mut self.eq_s, &mut self.eq_c] {
                let rc = (fops
                    .eq_open
                    .ok_or_else(|| OpenError::Failed("fi_eq_open missing".into()))?)(
                    self.fabric,
                    &mut eq_attr,
                    eq,
                    null_mut(),
                );
                if rc != 0 {
                    return Err(fail("fi_eq_open", rc as isize, &self.lib));
                }
            }
            let rc = (fops
                .passive_ep
                .ok_or_else(|| OpenError::Failed("fi_passive_ep missing".into()))?)(
                self.fabric,
                srv,
                &mut self.pep,
                null_mut(),
            );
            if rc != 0 {
                return Err(fail("fi_passive_ep", rc as isize, &self.lib));
            }
            let pep_fid = self.pep as *mut fid;
            let rc = ((*(*pep_fid).ops)
                .bind
                .ok_or_else(|| OpenError::Failed("fi_pep_bind missing".into()))?)(
                pep_fid,
                self.eq_s as *mut fid,
                0,
            );
            if rc != 0 {
                return Err(fail("fi_pep_bind", rc as isize, &self.lib));
            }
            let cm = &*(*self.pep).cm;
            let rc = (cm
                .listen
                .ok_or_else(|| OpenError::Failed("fi_listen missing".into()))?)(
                self.pep
            );
            if rc != 0 {
                return Err(fail("fi_listen", rc as isize, &self.lib));
            }
            let mut sa: sockaddr_in = std::mem::zeroed();
            let mut salen = std::mem::size_of::<sockaddr_in>();
            let rc = (cm
                .getname
                .ok_or_else(|| OpenError::Failed("fi_getname missing".into()))?)(
                pep_fid,
                &mut sa as *mut _ as *mut c_void,
                &mut salen,
            );
            if rc != 0 {
                return Err(fail("fi_getname", rc as isize, &self.lib));
            }
            if sa.sin_family as i32 != libc::AF_INET {
                return Err(OpenError::Failed(format!(
                    "listener address family {} is not AF_INET",
                    sa.sin_family
                )));
            }
            let port = u16::from_be(sa.sin_port);

            let rc = ((*(*self.fabric).ops)
                .domain
                .ok_or_else(|| OpenError::Failed("fi_domain missing".into()))?)(
                self.fabric,
                srv,
                &mut self.domain,
                null_mut(),
            );
            if rc != 0 {
                return Err(fail("fi_domain", rc as isize, &self.lib));
            }
            let dops = &*(*self.domain).ops;
            let tx_size = CTX_SLOTS * 2;
            for cq in [&mut self.cq_c, &mut self.cq_s] {
                let mut a = fi_cq_attr {
                    size: tx_size,
                    flags: 0,
                    format: FI_CQ_FORMAT_CONTEXT,
                    wait_obj: FI_WAIT_NONE,
                    signaling_vector: 0,
                    wait_cond: 0,
                    wait_set: null_mut(),
                };
                let rc = (dops
                    .cq_open
                    .ok_or_else(|| OpenError::Failed("fi_cq_open missing".into()))?)(
                    self.domain,
                    &mut a,
                    cq,
                    null_mut(),
                );
                if rc != 0 {
                    return Err(fail("fi_cq_open", rc as isize, &self.lib));
                }
            }
            let cli = self
                .getinfo(provider, "127.0.0.1", &port.to_string(), 0, hmem)
                .map_err(|rc| self.no_provider(provider, rc))?;
            self.cli_info = cli;
            let endpoint = dops
                .endpoint
                .ok_or_else(|| OpenError::Failed("fi_endpoint missing".into()))?;
            let rc = endpoint(self.domain, cli, &mut self.ep_c, null_mut());
            if rc != 0 {
                return Err(fail("fi_endpoint (initiator)", rc as isize, &self.lib));
            }
            self.bind_enable(self.ep_c, self.eq_c, self.cq_c)?;
            let cm_c = &*(*self.ep_c).cm;
            let rc = (cm_c
                .connect
                .ok_or_else(|| OpenError::Failed("fi_connect missing".into()))?)(
                self.ep_c,
                (*cli).dest_addr,
                std::ptr::null(),
                0,
            );
            if rc != 0 {
                return Err(fail("fi_connect", rc as isize, &self.lib));
            }
            // Server side: wait for the connection request, accept, then both sides connected.
            let deadline = Instant::now() + Duration::from_secs(10);
            let (which, ev, entry) = self.eq_wait(deadline)?;
            if which != 0 || ev != FI_CONNREQ {
                return Err(OpenError::Failed(format!(
                    "expected FI_CONNREQ on the listener, got event {ev} on queue {which}"
                )));
            }
            let rc = endpoint(self.domain, entry.info, &mut self.ep_s, null_mut());
            (self.lib.freeinfo)(entry.info);
            if rc != 0 {
                return Err(fail("fi_endpoint (target)", rc as isize, &self.lib));
            }
            self.bind_enable(self.ep_s, self.eq_s, self.cq_s)?;
            let cm_s = &*(*self.ep_s).cm;
            let rc = (cm_s
                .accept
                .ok_or_else(|| OpenError::Failed("fi_accept missing".into()))?)(
                self.ep_s,
                std::ptr::null(),
                0,
            );
            if rc != 0 {
                return Err(fail("fi_accept", rc as isize, &self.lib));
            }
            let mut connected = [false; 2];
            while !(connected[0] && connected[1]) {
                let (which, ev, _) = self.eq_wait(deadline)?;
                if ev != FI_CONNECTED {
                    return Err(OpenError::Failed(format!(
                        "expected FI_CONNECTED, got event {ev} on queue {which}"
                    )));
                }
                connected[which] = true;
            }
        }
        Ok(())
    }

    fn no_provider(&self, provider: &str, rc: isize) -> OpenError {
        if rc == -(libc::ENODATA as isize) {
            OpenError::Unavailable(Unavailable::device(&format!(
                "libfabric has no provider '{provider}' offering FI_EP_MSG with FI_RMA on 127.0.0.1 (fi_getinfo: {}); \
                 check `fi_info -p {provider} -t FI_EP_MSG -c FI_RMA`",
                self.lib.err(rc)
            )))
        } else {
            OpenError::Failed(format!(
                "fi_getinfo(provider {provider}): {}",
                self.lib.err(rc)
            ))
        }
    }

    unsafe fn bind_enable(
        &self,
        ep: *mut fid_ep,
        eq: *mut fid_eq,
        cq: *mut fid_cq,
    ) -> Result<(), OpenError> {
        // SAFETY: ep/eq/cq are live objects of this domain.
        unsafe {
            let f = ep as *mut fid;
            let ops = &*(*f).ops;
            let bind = ops
                .bind
                .ok_or_else(|| OpenError::Failed("fi_ep_bind missing".into()))?;
            let rc = bind(f, eq as *mut fid, 0);
            if rc != 0 {
                return Err(OpenError::Failed(format!(
                    "fi_ep_bind(eq): {}",
                    self.lib.err(rc as isize)
                )));
            }
            let rc = bind(f, cq as *mut fid, FI_SEND | FI_RECV);
            if rc != 0 {
                return Err(OpenError::Failed(format!(
                    "fi_ep_bind(cq): {}",
                    self.lib.err(rc as isize)
                )));
            }
            let control = ops
                .control
                .ok_or_else(|| OpenError::Failed("fi_enable missing".into()))?;
            let rc = control(f, FI_ENABLE, null_mut());
            if rc != 0 {
                return Err(OpenError::Failed(format!(
                    "fi_enable: {}",
                    self.lib.err(rc as isize)
                )));
            }
        }
        Ok(())
    }

    /// Reads both event queues until one has an event (reading each drives its side's
    /// connection progress); returns which queue (0: listener/target, 1: initiator).
    unsafe fn eq_wait(&self, deadline: Instant) -> Result<(usize, u32, fi_eq_cm_entry), OpenError> {
        let mut buf = [0u64; 64];
        loop {
            for (which, eq) in [self.eq_s, self.eq_c].into_iter().enumerate() {
                let mut ev = 0u32;
                // SAFETY: eq is live; buf is large enough for a cm entry plus connection data.
                let rc = unsafe {
                    ((*(*eq).ops)
                        .read
                        .ok_or_else(|| OpenError::Failed("fi_eq_read missing".into()))?)(
                        eq,
                        &mut ev,
                        buf.as_mut_ptr() as *mut c_void,
                        std::mem::size_of_val(&buf),
                        0,
                    )
                };
                if rc > 0 {
                    // SAFETY: the provider wrote at least a cm entry header for CM events.
                    let entry = unsafe { std::ptr::read(buf.as_ptr() as *const fi_eq_cm_entry) };
                    return Ok((which, ev, entry));
                }
                if rc == -FI_EAVAIL {
                    // SAFETY: zeroed error entry is a valid out-buffer.
                    let mut e: fi_eq_err_entry = unsafe { std::mem::zeroed() };
                    unsafe {
                        ((*(*eq).ops)
                            .readerr
                            .ok_or_else(|| OpenError::Failed("fi_eq_readerr missing".into()))?)(
                            eq, &mut e, 0,
                        )
                    };
                    return Err(OpenError::Failed(format!(
                        "connection event error: {} (provider errno {})",
                        self.lib.err(-(e.err as isize)),
                        e.prov_errno
                    )));
                }
                if rc != -FI_EAGAIN {
                    return Err(OpenError::Failed(format!(
                        "fi_eq_read: {}",
                        self.lib.err(rc)
                    )));
                }
            }
            if Instant::now() > deadline || crate::probe::interrupted() {
                return Err(OpenError::Failed(
                    "loopback connection did not complete within 10 s".into(),
                ));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    unsafe fn reg_with(
        &mut self,
        buf: &mut dyn Buffer,
        hmem_device: Option<i32>,
    ) -> Result<usize, (Option<i32>, String)> {
        let access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
        let key = self.next_key;
        self.next_key += 1;
        let mut mr: *mut fid_mr = null_mut();
        // SAFETY: domain is live; the buffer outlives the registration (the caller
        // deregisters before dropping it).
        let rc = unsafe {
            let mops = &*(*self.domain).mr;
            match hmem_device {
                None => (mops.reg.ok_or((None, "fi_mr_reg missing".to_string()))?)(
                    self.domain as *mut fid,
                    buf.addr() as *const c_void,
                    buf.len(),
                    access,
                    0,
                    key,
                    0,
                    &mut mr,
                    null_mut(),
                ),
                Some(dev) => {
                    let iov = iovec {
                        iov_base: buf.addr() as *mut c_void,
                        iov_len: buf.len(),
                    };
                    // Padded: newer libfabric versions append members to fi_mr_attr.
                    #[repr(C)]
                    struct Padded {
                        a: fi_mr_attr,
                        pad: [u64; 32],
                    }
                    let mut p: Padded = std::mem::zeroed();
                    p.a.mr_iov = &iov;
                    p.a.iov_count = 1;
                    p.a.access = access;
                    p.a.requested_key = key;
                    p.a.iface = FI_HMEM_CUDA;
                    p.a.device = dev as u64;
                    (mops
                        .regattr
                        .ok_or((None, "fi_mr_regattr missing".to_string()))?)(
                        self.domain as *mut fid,
                        &p.a,
                        0,
                        &mut mr,
                    )
                }
            }
        };
        if rc != 0 || mr.is_null() {
            return Err((Some(-rc), self.lib.err(rc as isize)));
        }
        self.mrs.push(Some(Mr {
            mr,
            addr: buf.addr(),
            len: buf.len(),
        }));
        Ok(self.mrs.len() - 1)
    }
}

impl Fabric for OfiFabric {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn line_rate_gbytes(&self) -> Option<f64> {
        None
    }
    fn max_outstanding(&self) -> usize {
        CTX_SLOTS
    }
    fn register(&mut self, buf: &mut dyn Buffer) -> Result<Registered, Vec<RegAttempt>> {
        let mut attempts = Vec::new();
        if buf.kind() == MemoryKind::Host {
            // SAFETY: see reg_with.
            return match unsafe { self.reg_with(buf, None) } {
                Ok(h) => {
                    attempts.push(RegAttempt::ok("host"));
                    Ok(Registered {
                        handle: h,
                        method: "host".into(),
                        attempts,
                    })
                }
                Err((e, s)) => {
                    attempts.push(RegAttempt::failed("host", e, &format!("fi_mr_reg: {s}")));
                    Err(attempts)
                }
            };
        }
        attempts.push(RegAttempt::failed(
            "dmabuf",
            None,
            "not tried: libfabric API 1.17 has no dma-buf registration (FI_MR_DMABUF arrived in libfabric 1.20)",
        ));
        if !self.hmem {
            attempts.push(RegAttempt::failed(
                "hmem",
                Some(libc::EOPNOTSUPP),
                &format!(
                    "{} does not offer FI_HMEM (this libfabric build has no CUDA support)",
                    self.name
                ),
            ));
            return Err(attempts);
        }
        // SAFETY: see reg_with.
        let dev = buf.cuda_device().unwrap_or(0);
        match unsafe { self.reg_with(buf, Some(dev)) } {
            Ok(h) => {
                attempts.push(RegAttempt::ok("hmem"));
                Ok(Registered {
                    handle: h,
                    method: "hmem".into(),
                    attempts,
                })
            }
            Err((e, s)) => {
                attempts.push(RegAttempt::failed(
                    "hmem",
                    e,
                    &format!("fi_mr_regattr(FI_HMEM_CUDA): {s}"),
                ));
                Err(attempts)
            }
        }
    }
    fn deregister(&mut self, handle: usize) {
        if let Some(slot) = self.mrs.get_mut(handle)
            && let Some(m) = slot.take()
        {
            // SAFETY: m.mr is a live registration made by this fabric.
            unsafe { close(m.mr as *mut fid) };
        }
    }
    fn post(&mut self, t: &Transfer) -> Result<Posted, String> {
        let Transfer {
            op,
            local,
            local_off,
            remote,
            remote_off,
            len,
            wr_id,
        } = *t;
        let (Some(Some(l)), Some(Some(r))) = (self.mrs.get(local), self.mrs.get(remote)) else {
            return Err("post on an unknown registration".into());
        };
        if local_off + len > l.len || remote_off + len > r.len {
            return Err("post past the end of a registered buffer".into());
        }
        let Some(slot) = self.ctx_free.pop() else {
            return Ok(Posted::Busy);
        };
        // SAFETY: the registrations are live; the context slot stays valid until its
        // completion is read (it is only reused after that).
        let rc = unsafe {
            let rma = &*(*self.ep_c).rma;
            let f = match op {
                Op::Write => rma.write,
                Op::Read => rma.read,
            }
            .ok_or("fi_write/fi_read missing")?;
            let raddr = if self.virt_addr {
                r.addr + remote_off as u64
            } else {
                remote_off as u64
            };
            f(
                self.ep_c,
                (l.addr + local_off as u64) as *mut c_void,
                len,
                (*l.mr).mem_desc,
                0,
                raddr,
                (*r.mr).key,
                &mut self.ctx[slot] as *mut fi_context2 as *mut c_void,
            )
        };
        if rc == 0 {
            self.ctx_wr[slot] = wr_id;
            Ok(Posted::Yes)
        } else {
            self.ctx_free.push(slot);
            if rc == -FI_EAGAIN {
                Ok(Posted::Busy)
            } else {
                Err(format!("fi_{}: {}", op.as_str(), self.lib.err(rc)))
            }
        }
    }
    fn poll(&mut self, out: &mut Vec<Completion>) -> Result<(), String> {
        let base = self.ctx.as_ptr() as usize;
        let slot_of = |p: *mut c_void| -> Option<usize> {
            let a = p as usize;
            let sz = std::mem::size_of::<fi_context2>();
            (a >= base && a < base + CTX_SLOTS * sz && (a - base).is_multiple_of(sz))
                .then(|| (a - base) / sz)
        };
        let mut entries = [fi_cq_entry {
            op_context: null_mut(),
        }; 16];
        // SAFETY: the CQs are live; entries has room for 16 context-format entries.
        unsafe {
            // Drive the target side too (a no-op with automatic progress).
            let _ = ((*(*self.cq_s).ops).read.ok_or("fi_cq_read missing")?)(
                self.cq_s,
                entries.as_mut_ptr() as *mut c_void,
                16,
            );
            let rc = ((*(*self.cq_c).ops).read.ok_or("fi_cq_read missing")?)(
                self.cq_c,
                entries.as_mut_ptr() as *mut c_void,
                16,
            );
            if rc > 0 {
                for e in &entries[..rc as usize] {
                    let s = slot_of(e.op_context).ok_or("completion with an unknown context")?;
                    self.ctx_free.push(s);
                    out.push(Completion {
                        wr_id: self.ctx_wr[s],
                        status: Ok(()),
                    });
                }
            } else if rc == -FI_EAVAIL {
                let mut e: fi_cq_err_entry = std::mem::zeroed();
                ((*(*self.cq_c).ops).readerr.ok_or("fi_cq_readerr missing")?)(self.cq_c, &mut e, 0);
                let msg = format!(
                    "completion error: {} (provider errno {})",
                    self.lib.err(-(e.err as isize)),
                    e.prov_errno
                );
                match slot_of(e.op_context) {
                    Some(s) => {
                        self.ctx_free.push(s);
                        out.push(Completion {
                            wr_id: self.ctx_wr[s],
                            status: Err(msg),
                        });
                    }
                    None => return Err(msg),
                }
            } else if rc != -FI_EAGAIN {
                return Err(format!("fi_cq_read: {}", self.lib.err(rc)));
            }
        }
        Ok(())
    }
}

impl Drop for OfiFabric {
    fn drop(&mut self) {
        // SAFETY: every pointer is null or a live object created by this value; closing in
        // dependency order (endpoints, listener, registrations, queues, domain, fabric).
        unsafe {
            for ep in [self.ep_c, self.ep_s] {
                if !ep.is_null()
                    && !(*ep).cm.is_null()
                    && let Some(sd) = (*(*ep).cm).shutdown
                {
                    sd(ep, 0);
                }
            }
            close(self.ep_c as *mut fid);
            close(self.ep_s as *mut fid);
            close(self.pep as *mut fid);
            for m in self.mrs.drain(..).flatten() {
                close(m.mr as *mut fid);
            }
            close(self.cq_c as *mut fid);
            close(self.cq_s as *mut fid);
            close(self.eq_c as *mut fid);
            close(self.eq_s as *mut fid);
            close(self.domain as *mut fid);
            close(self.fabric as *mut fid);
            if !self.cli_info.is_null() {
                (self.lib.freeinfo)(self.cli_info);
            }
            if !self.srv_info.is_null() {
                (self.lib.freeinfo)(self.srv_info);
            }
        }
    }
}
