//! libfabric loopback: `libfabric.so.1` is opened at run time; a passive endpoint listens on
//! 127.0.0.1 (kernel-chosen port), an `FI_EP_MSG` endpoint connects to it, and the accepted
//! endpoint is the target. Both share one domain, so one registration serves either side.
//! For the probe across two nodes ([`crate::probe::remote`]) the same code opens one side
//! only: [`OfiFabric::listen_on`] + [`OfiFabric::accept`] (the target) in one process,
//! [`OfiFabric::connect_to`] (the initiator) in the other, on a NIC's own address.
//! Everything but `fi_getinfo`/`fi_freeinfo`/`fi_dupinfo`/`fi_fabric`/`fi_strerror`/
//! `fi_version` goes through the ops tables carried in [`super::ofi_sys`].
//!
//! Every pointer this module dereferences or passes is either null-checked output of
//! libfabric held by [`OfiFabric`] until its `Drop`, an ops table of such an object (the
//! provider's, valid while the object is open), or a value built here; the layouts are
//! libfabric 1.17's, checked against the real headers by `tests/probe_layout.rs`.

use super::layout::Zeroable;
use super::ofi_sys::*;
use super::{
    Completion, Fabric, OpenError, Posted, RawRegistration, RegKey, RegTable, RemoteRegion,
    TargetDriver, Transfer,
};
use crate::analysis::probe_report::MemoryKind;
use crate::analysis::probe_report::NicRef;
use crate::analysis::probe_report::{Op, RegAttempt};
use crate::probe::Unavailable;
use crate::probe::memory::Buffer;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Soname opened at run time.
pub const LIBFABRIC: &str = "libfabric.so.1";

dyn_library! {
    /// The exported libfabric entry points.
    struct Lib from LIBFABRIC ("PEERPATH_LIBFABRIC", "the Debian package libfabric1") {
        fi_getinfo: fi_getinfo_fn,
        fi_freeinfo: fi_freeinfo_fn,
        fi_dupinfo: fi_dupinfo_fn,
        fi_fabric: fi_fabric_fn,
        fi_strerror: fi_strerror_fn,
        fi_version: fi_version_fn,
    } optional {}
}

/// `fi_strerror` of a negative return code, with the code.
fn strerror(fi_strerror: fi_strerror_fn, rc: isize) -> String {
    let code = (-rc) as i32;
    // SAFETY: fi_strerror returns a static NUL-terminated string for any code.
    let s = unsafe { CStr::from_ptr(fi_strerror(code)) }
        .to_string_lossy()
        .into_owned();
    format!("{s} (-{code})")
}

impl Lib {
    /// `fi_strerror` of a negative return code, with the code.
    fn err(&self, rc: isize) -> String {
        strerror(self.fi_strerror, rc)
    }

    /// `Ok` for 0, else an `OpenError` naming the call.
    fn check(&self, what: &str, rc: isize) -> Result<(), OpenError> {
        if rc == 0 {
            Ok(())
        } else {
            Err(OpenError::Failed(format!("{what}: {}", self.err(rc))))
        }
    }

    /// The library's API version, capped at the one these layouts describe.
    fn api_version(&self) -> u32 {
        // SAFETY: fi_version has no arguments and no preconditions.
        unsafe { (self.fi_version)() }.min(FI_API_VERSION)
    }
}

/// libfabric's runtime version as `major.minor`, or why it could not be read.
pub fn runtime_version() -> Result<String, Unavailable> {
    let lib = Lib::shared()?;
    // SAFETY: fi_version has no arguments and no preconditions.
    let v = unsafe { (lib.fi_version)() };
    Ok(format!("{}.{}", v >> 16, v & 0xffff))
}

/// An entry of an ops table, or an error naming the call it implements.
fn entry<F>(f: Option<F>, call: &str) -> Result<F, OpenError> {
    f.ok_or_else(|| OpenError::Failed(format!("{call} missing")))
}

/// A C string owned by libfabric, or `None` for null.
///
/// # Safety
///
/// `p` is null or points to a NUL-terminated string that stays valid during the call.
unsafe fn text(p: *const c_char) -> Option<String> {
    // SAFETY: the caller's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Closes a libfabric object through its ops table; ignores null.
///
/// # Safety
///
/// `f` is null or a live libfabric object, closed once, after everything opened on it.
unsafe fn close(f: *mut fid) {
    if f.is_null() {
        return;
    }
    // SAFETY: f is a live object (caller); `ops` is its provider's table.
    if let Some(c) = unsafe { (*(*f).ops).close } {
        // SAFETY: the caller's contract.
        unsafe { c(f) };
    }
}

/// A libfabric loopback pair (see module doc).
pub struct OfiFabric {
    lib: &'static Lib,
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
    mrs: RegTable<*mut fid_mr>,
    /// Peer registrations imported for the two-node probe; handle `REMOTE_BASE + index`.
    remotes: RefCell<Vec<Option<RemoteRegion>>>,
    /// The address `fi_getinfo` is asked about: 127.0.0.1 for the loopback pair, a NIC's own
    /// address (listener) or the peer's (connector) across nodes.
    node: CString,
    /// The connector's own address across nodes (the NIC its bytes leave through), given to
    /// `fi_getinfo` as the source; `None` otherwise.
    source: Option<std::net::Ipv4Addr>,
    next_key: Cell<u64>,
    virt_addr: bool,
    hmem: bool,
    /// Per-operation provider scratch space (`FI_CONTEXT2`): the provider writes a slot from
    /// the post until the operation's completion is read.
    ctx: Box<[UnsafeCell<fi_context2>]>,
    /// The `wr_id` of the operation using each context slot.
    ctx_wr: RefCell<Vec<u64>>,
    /// Context slots no operation is using.
    ctx_free: RefCell<Vec<usize>>,
    provider: String,
    domain_name: Option<String>,
    /// The domain's threading level (`fi_domain_attr.threading` of the listener's `fi_info`).
    threading: u32,
    /// A [`TargetDriver`] of this fabric is alive: `poll` leaves the target's queue to it.
    target_driven: AtomicBool,
}

const CTX_SLOTS: usize = 64;

/// First handle of an imported peer registration (below it: this fabric's own).
const REMOTE_BASE: usize = 1 << 40;

/// What to ask `fi_getinfo` for (besides the caps every probe endpoint needs).
struct InfoQuery<'a> {
    provider: &'a str,
    service: &'a str,
    flags: u64,
    hmem: bool,
}

/// The IPv4 address a connection request came from, when the provider gives it as a
/// `sockaddr_in` (libfabric's tcp provider does).
fn request_ipv4(info: *const fi_info) -> Option<std::net::Ipv4Addr> {
    if info.is_null() {
        return None;
    }
    // SAFETY: info is the live request's info, read before it is freed.
    let i = unsafe { &*info };
    if i.dest_addr.is_null() || i.dest_addrlen < std::mem::size_of::<sockaddr_in>() {
        return None;
    }
    // SAFETY: dest_addr holds dest_addrlen bytes, at least a sockaddr_in.
    let sa = unsafe { std::ptr::read_unaligned(i.dest_addr as *const sockaddr_in) };
    (sa.sin_family == libc::AF_INET as u16)
        .then(|| std::net::Ipv4Addr::from(u32::from_be(sa.sin_addr)))
}

impl OfiFabric {
    /// Opens `provider` on 127.0.0.1 and connects a loopback pair. `memory` says whether
    /// device memory will be registered (then `FI_HMEM` is asked for, and its absence noted).
    /// Whatever was opened before a failure is closed by `Drop`.
    pub fn open(provider: &str, memory: MemoryKind) -> Result<OfiFabric, OpenError> {
        let mut f = OfiFabric::closed(provider, std::net::Ipv4Addr::LOCALHOST)?;
        f.open_fabric(memory.is_device(), "0", FI_SOURCE)?;
        f.eq_s = f.open_eq()?;
        f.eq_c = f.open_eq()?;
        let port = f.listen()?;
        f.open_domain()?;
        f.cq_c = f.open_cq()?;
        f.cq_s = f.open_cq()?;
        f.connect(port)?;
        Ok(f)
    }

    /// The target side of a probe across nodes: a passive endpoint listening on `ip` (a NIC's
    /// own address; the kernel chooses the port, returned), the domain and the target's
    /// queues. [`OfiFabric::accept`] then takes the peer's connection.
    pub fn listen_on(
        provider: &str,
        memory: MemoryKind,
        ip: std::net::Ipv4Addr,
    ) -> Result<(OfiFabric, u16), OpenError> {
        let mut f = OfiFabric::closed(provider, ip)?;
        f.open_fabric(memory.is_device(), "0", FI_SOURCE)?;
        f.eq_s = f.open_eq()?;
        let port = f.listen()?;
        f.open_domain()?;
        f.cq_s = f.open_cq()?;
        Ok((f, port))
    }

    /// Waits (until `timeout`) for the peer's connection request on the listener, accepts it
    /// as the target endpoint, and waits until it is connected. A request from another address
    /// than `from` (the peer's control connection) is rejected (`fi_reject`) and the wait goes
    /// on; the addresses rejected are returned. A request whose address the provider does not
    /// give as a `sockaddr_in` cannot be told apart and is accepted.
    pub fn accept(
        &mut self,
        timeout: Duration,
        from: std::net::Ipv4Addr,
    ) -> Result<Vec<std::net::Ipv4Addr>, OpenError> {
        let deadline = Instant::now() + timeout;
        let mut rejected = Vec::new();
        loop {
            let (which, ev, request) = self.eq_wait(deadline)?;
            if which != 0 || ev != FI_CONNREQ {
                return Err(OpenError::Failed(format!(
                    "expected FI_CONNREQ on the listener, got event {ev} on queue {which}"
                )));
            }
            match request_ipv4(request.info) {
                Some(a) if a != from => {
                    rejected.push(a);
                    // SAFETY: pep is open and listening; `cm` is its provider's table.
                    let cm = unsafe { &*(*self.pep).cm };
                    let reject = entry(cm.reject, "fi_reject");
                    // SAFETY: the request's handle belongs to this pep; its info is owned by
                    // this caller of fi_eq_read and freed once, after the handle is used.
                    unsafe {
                        if let Ok(reject) = reject {
                            reject(self.pep, (*request.info).handle, std::ptr::null(), 0);
                        }
                        (self.lib.fi_freeinfo)(request.info);
                    }
                }
                _ => {
                    self.accept_request(request.info, deadline, false)?;
                    return Ok(rejected);
                }
            }
        }
    }

    /// The initiator side of a probe across nodes: from `source` (this node's NIC address)
    /// connects to the peer's listener at `ip`:`port` (its NIC's address, sent over the
    /// control connection) and waits (until `timeout`) for `FI_CONNECTED`.
    pub fn connect_to(
        provider: &str,
        memory: MemoryKind,
        (source, ip): (std::net::Ipv4Addr, std::net::Ipv4Addr),
        port: u16,
        timeout: Duration,
    ) -> Result<OfiFabric, OpenError> {
        let mut f = OfiFabric::closed(provider, ip)?;
        f.source = Some(source);
        f.open_fabric(memory.is_device(), &port.to_string(), 0)?;
        f.eq_c = f.open_eq()?;
        f.open_domain()?;
        f.cq_c = f.open_cq()?;
        f.ep_c = f.endpoint(f.srv_info, "initiator")?;
        f.bind_enable(f.ep_c, f.eq_c, f.cq_c)?;
        let connect = entry(f.cm(f.ep_c).connect, "fi_connect")?;
        // SAFETY: ep_c is enabled; dest_addr belongs to the live srv_info (asked for the
        // peer's node and service).
        let rc = unsafe { connect(f.ep_c, (*f.srv_info).dest_addr, std::ptr::null(), 0) };
        f.lib.check("fi_connect", rc as isize)?;
        let (which, ev, _) = f.eq_wait(Instant::now() + timeout)?;
        if which != 1 || ev != FI_CONNECTED {
            return Err(OpenError::Failed(format!(
                "expected FI_CONNECTED, got event {ev} on queue {which}"
            )));
        }
        Ok(f)
    }

    /// A fabric with nothing opened yet (every handle null), asking `fi_getinfo` about `ip`.
    fn closed(provider: &str, ip: std::net::Ipv4Addr) -> Result<OfiFabric, OpenError> {
        let lib = Lib::shared().map_err(OpenError::Unavailable)?;
        Ok(OfiFabric {
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
            mrs: RegTable::new(),
            remotes: RefCell::new(Vec::new()),
            node: CString::new(ip.to_string()).unwrap_or_default(),
            source: None,
            next_key: Cell::new(1),
            virt_addr: false,
            hmem: false,
            ctx: (0..CTX_SLOTS)
                .map(|_| UnsafeCell::new(fi_context2::zeroed()))
                .collect(),
            ctx_wr: RefCell::new(vec![0; CTX_SLOTS]),
            ctx_free: RefCell::new((0..CTX_SLOTS).rev().collect()),
            provider: provider.to_string(),
            domain_name: None,
            threading: 0,
            target_driven: AtomicBool::new(false),
        })
    }

    /// `fi_getinfo` for `provider` on the fabric's node address with the caps the probe needs; the error is
    /// libfabric's negative return code.
    fn getinfo(&self, q: &InfoQuery<'_>) -> Result<*mut fi_info, isize> {
        // SAFETY: fi_dupinfo(NULL) allocates hints with every attribute struct allocated.
        let hints = unsafe { (self.lib.fi_dupinfo)(std::ptr::null()) };
        if hints.is_null() {
            return Err(-(libc::ENOMEM as isize));
        }
        let prov = CString::new(q.provider).unwrap_or_default();
        let hmem = if q.hmem { FI_HMEM } else { 0 };
        // SAFETY: hints was just allocated by fi_dupinfo, and is ours until freed below.
        let h = unsafe { &mut *hints };
        h.caps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | hmem;
        h.mode = FI_CONTEXT | FI_CONTEXT2;
        h.addr_format = FI_SOCKADDR_IN;
        // SAFETY: fi_dupinfo(NULL) allocates every attribute struct of the hints.
        let ep = unsafe { &mut *h.ep_attr };
        ep.r#type = FI_EP_MSG;
        // SAFETY: as above.
        let domain = unsafe { &mut *h.domain_attr };
        domain.mr_mode = FI_MR_LOCAL
            | FI_MR_VIRT_ADDR
            | FI_MR_ALLOCATED
            | FI_MR_PROV_KEY
            | if q.hmem { FI_MR_HMEM } else { 0 };
        if let Some(src) = self.source.filter(|_| q.flags & FI_SOURCE == 0) {
            // SAFETY: malloc of a sockaddr_in; fi_freeinfo frees the hints' src_addr with them.
            let sa = unsafe { libc::calloc(1, std::mem::size_of::<sockaddr_in>()) };
            if sa.is_null() {
                // SAFETY: hints came from fi_dupinfo and is freed once.
                unsafe { (self.lib.fi_freeinfo)(hints) };
                return Err(-(libc::ENOMEM as isize));
            }
            // SAFETY: sa is a fresh, zeroed allocation of a sockaddr_in's size and alignment
            // (malloc's alignment covers it).
            unsafe {
                *(sa as *mut sockaddr_in) = sockaddr_in {
                    sin_family: libc::AF_INET as u16,
                    sin_port: 0,
                    sin_addr: u32::from(src).to_be(),
                    sin_zero: [0; 8],
                }
            };
            h.src_addr = sa;
            h.src_addrlen = std::mem::size_of::<sockaddr_in>();
        }
        // SAFETY: as above.
        let fabric = unsafe { &mut *h.fabric_attr };
        // SAFETY: prov is a NUL-terminated string; the copy is malloc'ed, so fi_freeinfo may
        // free it with the hints.
        fabric.prov_name = unsafe { libc::strdup(prov.as_ptr()) };
        let node = self.node.as_c_str();
        let service = CString::new(q.service).unwrap_or_default();
        let mut info = null_mut();
        let version = self.lib.api_version();
        // SAFETY: the strings and hints are valid for the call; info is a valid out-pointer.
        let rc = unsafe {
            (self.lib.fi_getinfo)(
                version,
                node.as_ptr(),
                service.as_ptr(),
                q.flags,
                hints,
                &mut info,
            )
        };
        // SAFETY: hints came from fi_dupinfo and is freed once.
        unsafe { (self.lib.fi_freeinfo)(hints) };
        if rc != 0 {
            return Err(rc as isize);
        }
        Ok(info)
    }

    /// The first side's `fi_info` (with `FI_HMEM` when asked for and offered) and the fabric:
    /// the listener's (`service` "0", `FI_SOURCE`), or the connector's (the peer's port, no
    /// flags) for [`OfiFabric::connect_to`].
    fn open_fabric(&mut self, want_hmem: bool, service: &str, flags: u64) -> Result<(), OpenError> {
        let mut q = InfoQuery {
            provider: &self.provider,
            service,
            flags,
            hmem: want_hmem,
        };
        let srv = match self.getinfo(&q) {
            Ok(i) => i,
            Err(rc) if want_hmem && rc == -(libc::ENODATA as isize) => {
                q.hmem = false;
                self.getinfo(&q).map_err(|rc| self.no_provider(rc))?
            }
            Err(rc) => return Err(self.no_provider(rc)),
        };
        self.hmem = q.hmem;
        self.srv_info = srv;
        // SAFETY: srv is a non-null fi_info from fi_getinfo, held until Drop.
        let info = unsafe { &*srv };
        // SAFETY: libfabric always allocates an fi_info's domain attributes.
        let d = unsafe { &*info.domain_attr };
        // SAFETY: as above, its fabric attributes.
        let f = unsafe { &*info.fabric_attr };
        // SAFETY: names in an fi_info are NUL-terminated strings or null.
        let (domain, provider) = unsafe { (text(d.name), text(f.prov_name)) };
        let mr_mode = d.mr_mode;
        self.threading = d.threading;
        self.virt_addr = mr_mode & FI_MR_VIRT_ADDR != 0 || mr_mode == 1; // FI_MR_BASIC
        self.domain_name = Some(domain.unwrap_or_else(|| "?".into()));
        if let Some(p) = provider {
            self.provider = p;
        }
        // SAFETY: the fabric attributes belong to the live srv_info; fabric is an out-pointer.
        let rc = unsafe { (self.lib.fi_fabric)((*srv).fabric_attr, &mut self.fabric, null_mut()) };
        self.lib.check("fi_fabric", rc as isize)
    }

    /// The fabric's ops table.
    fn fabric_ops(&self) -> &fi_ops_fabric {
        // SAFETY: fabric is open while self is; `ops` is its provider's table.
        unsafe { &*(*self.fabric).ops }
    }

    /// The domain's ops table.
    fn domain_ops(&self) -> &fi_ops_domain {
        // SAFETY: domain is open while self is; `ops` is its provider's table.
        unsafe { &*(*self.domain).ops }
    }

    /// An event queue on the fabric.
    fn open_eq(&self) -> Result<*mut fid_eq, OpenError> {
        let open = entry(self.fabric_ops().eq_open, "fi_eq_open")?;
        let mut attr = fi_eq_attr {
            size: 16,
            flags: 0,
            wait_obj: FI_WAIT_UNSPEC,
            signaling_vector: 0,
            wait_set: null_mut(),
        };
        let mut eq = null_mut();
        // SAFETY: fabric is open; attr and eq are valid for the call.
        let rc = unsafe { open(self.fabric, &mut attr, &mut eq, null_mut()) };
        self.lib.check("fi_eq_open", rc as isize)?;
        Ok(eq)
    }

    /// The passive endpoint, bound to the target's event queue and listening; returns the
    /// port the kernel chose.
    fn listen(&mut self) -> Result<u16, OpenError> {
        let passive = entry(self.fabric_ops().passive_ep, "fi_passive_ep")?;
        // SAFETY: fabric and srv_info are live; pep is an out-pointer.
        let rc = unsafe { passive(self.fabric, self.srv_info, &mut self.pep, null_mut()) };
        self.lib.check("fi_passive_ep", rc as isize)?;
        let pep_fid = self.pep as *mut fid;
        // SAFETY: pep is open; its header's `ops` is the provider's table.
        let fid_ops = unsafe { &*(*pep_fid).ops };
        // SAFETY: as above, for its connection-management table.
        let cm = unsafe { &*(*self.pep).cm };
        let bind = entry(fid_ops.bind, "fi_pep_bind")?;
        // SAFETY: pep and eq_s are open objects of this fabric.
        let rc = unsafe { bind(pep_fid, self.eq_s as *mut fid, 0) };
        self.lib.check("fi_pep_bind", rc as isize)?;
        let listen = entry(cm.listen, "fi_listen")?;
        // SAFETY: pep is open and bound.
        let rc = unsafe { listen(self.pep) };
        self.lib.check("fi_listen", rc as isize)?;
        let getname = entry(cm.getname, "fi_getname")?;
        let mut sa = sockaddr_in::zeroed();
        let mut salen = std::mem::size_of::<sockaddr_in>();
        // SAFETY: sa has room for salen bytes, which the provider updates.
        let rc = unsafe { getname(pep_fid, &mut sa as *mut _ as *mut c_void, &mut salen) };
        self.lib.check("fi_getname", rc as isize)?;
        if sa.sin_family as i32 != libc::AF_INET {
            return Err(OpenError::Failed(format!(
                "listener address family {} is not AF_INET",
                sa.sin_family
            )));
        }
        Ok(u16::from_be(sa.sin_port))
    }

    /// The domain both endpoints share.
    fn open_domain(&mut self) -> Result<(), OpenError> {
        let domain = entry(self.fabric_ops().domain, "fi_domain")?;
        // SAFETY: fabric and srv_info are live; domain is an out-pointer.
        let rc = unsafe { domain(self.fabric, self.srv_info, &mut self.domain, null_mut()) };
        self.lib.check("fi_domain", rc as isize)
    }

    /// A completion queue on the domain, context format, polled (no wait object).
    fn open_cq(&self) -> Result<*mut fid_cq, OpenError> {
        let open = entry(self.domain_ops().cq_open, "fi_cq_open")?;
        let mut attr = fi_cq_attr {
            size: CTX_SLOTS * 2,
            flags: 0,
            format: FI_CQ_FORMAT_CONTEXT,
            wait_obj: FI_WAIT_NONE,
            signaling_vector: 0,
            wait_cond: 0,
            wait_set: null_mut(),
        };
        let mut cq = null_mut();
        // SAFETY: domain is open; attr and cq are valid for the call.
        let rc = unsafe { open(self.domain, &mut attr, &mut cq, null_mut()) };
        self.lib.check("fi_cq_open", rc as isize)?;
        Ok(cq)
    }

    /// An endpoint on the domain for `info` (`what`: initiator or target, for errors).
    fn endpoint(&self, info: *mut fi_info, what: &str) -> Result<*mut fid_ep, OpenError> {
        let open = entry(self.domain_ops().endpoint, "fi_endpoint")?;
        let mut ep = null_mut();
        // SAFETY: domain is open and info is a live fi_info; ep is an out-pointer.
        let rc = unsafe { open(self.domain, info, &mut ep, null_mut()) };
        self.lib
            .check(&format!("fi_endpoint ({what})"), rc as isize)?;
        Ok(ep)
    }

    /// Binds an open endpoint to its event and completion queues and enables it.
    fn bind_enable(
        &self,
        ep: *mut fid_ep,
        eq: *mut fid_eq,
        cq: *mut fid_cq,
    ) -> Result<(), OpenError> {
        let f = ep as *mut fid;
        // SAFETY: ep is open; its header's `ops` is the provider's table.
        let ops = unsafe { &*(*f).ops };
        let bind = entry(ops.bind, "fi_ep_bind")?;
        // SAFETY: ep, eq and cq are open objects of this domain.
        let rc = unsafe { bind(f, eq as *mut fid, 0) };
        self.lib.check("fi_ep_bind(eq)", rc as isize)?;
        // SAFETY: as above.
        let rc = unsafe { bind(f, cq as *mut fid, FI_SEND | FI_RECV) };
        self.lib.check("fi_ep_bind(cq)", rc as isize)?;
        let control = entry(ops.control, "fi_enable")?;
        // SAFETY: ep is open and bound; FI_ENABLE takes no argument.
        let rc = unsafe { control(f, FI_ENABLE, null_mut()) };
        self.lib.check("fi_enable", rc as isize)
    }

    /// The connection-management table of an open endpoint.
    fn cm(&self, ep: *mut fid_ep) -> &fi_ops_cm {
        // SAFETY: ep is an open endpoint of this fabric; `cm` is its provider's table.
        unsafe { &*(*ep).cm }
    }

    /// Connects the initiator to the listener, accepts on the target, and waits until both
    /// sides report `FI_CONNECTED`.
    fn connect(&mut self, port: u16) -> Result<(), OpenError> {
        let q = InfoQuery {
            provider: &self.provider,
            service: &port.to_string(),
            flags: 0,
            hmem: self.hmem,
        };
        self.cli_info = self.getinfo(&q).map_err(|rc| self.no_provider(rc))?;
        self.ep_c = self.endpoint(self.cli_info, "initiator")?;
        self.bind_enable(self.ep_c, self.eq_c, self.cq_c)?;
        let connect = entry(self.cm(self.ep_c).connect, "fi_connect")?;
        // SAFETY: ep_c is enabled; dest_addr belongs to the live cli_info.
        let rc = unsafe { connect(self.ep_c, (*self.cli_info).dest_addr, std::ptr::null(), 0) };
        self.lib.check("fi_connect", rc as isize)?;
        // Server side: wait for the connection request, accept, then both sides connected.
        let deadline = Instant::now() + Duration::from_secs(10);
        let (which, ev, request) = self.eq_wait(deadline)?;
        if which != 0 || ev != FI_CONNREQ {
            return Err(OpenError::Failed(format!(
                "expected FI_CONNREQ on the listener, got event {ev} on queue {which}"
            )));
        }
        self.accept_request(request.info, deadline, true)
    }

    /// Opens the target endpoint for a connection request (`info`, freed here), accepts it and
    /// waits until the target — and, for the loopback pair (`both`), the initiator too — is
    /// connected.
    fn accept_request(
        &mut self,
        info: *mut fi_info,
        deadline: Instant,
        both: bool,
    ) -> Result<(), OpenError> {
        let ep = self.endpoint(info, "target");
        // SAFETY: the request's info is owned by the caller of fi_eq_read and freed once.
        unsafe { (self.lib.fi_freeinfo)(info) };
        self.ep_s = ep?;
        self.bind_enable(self.ep_s, self.eq_s, self.cq_s)?;
        let accept = entry(self.cm(self.ep_s).accept, "fi_accept")?;
        // SAFETY: ep_s is enabled; no connection data is sent.
        let rc = unsafe { accept(self.ep_s, std::ptr::null(), 0) };
        self.lib.check("fi_accept", rc as isize)?;
        let mut connected = [false, !both];
        while !(connected[0] && connected[1]) {
            let (which, ev, _) = self.eq_wait(deadline)?;
            if ev != FI_CONNECTED {
                return Err(OpenError::Failed(format!(
                    "expected FI_CONNECTED, got event {ev} on queue {which}"
                )));
            }
            connected[which] = true;
        }
        Ok(())
    }

    fn no_provider(&self, rc: isize) -> OpenError {
        let provider = &self.provider;
        if rc == -(libc::ENODATA as isize) {
            OpenError::Unavailable(Unavailable::device(&format!(
                "libfabric has no provider '{provider}' offering FI_EP_MSG with FI_RMA on {} (fi_getinfo: {}); \
                 check `fi_info -p {provider} -t FI_EP_MSG -c FI_RMA`",
                self.node.to_string_lossy(),
                self.lib.err(rc)
            )))
        } else {
            OpenError::Failed(format!(
                "fi_getinfo(provider {provider}): {}",
                self.lib.err(rc)
            ))
        }
    }

    /// Reads both event queues until one has an event (reading each drives its side's
    /// connection progress); returns which queue (0: listener/target, 1: initiator).
    fn eq_wait(&self, deadline: Instant) -> Result<(usize, u32, fi_eq_cm_entry), OpenError> {
        let mut buf = [0u64; 64];
        loop {
            for (which, eq) in [self.eq_s, self.eq_c].into_iter().enumerate() {
                if eq.is_null() {
                    continue;
                }
                // SAFETY: eq is open; `ops` is its provider's table.
                let ops = unsafe { &*(*eq).ops };
                let read = entry(ops.read, "fi_eq_read")?;
                let mut ev = 0u32;
                let len = std::mem::size_of_val(&buf);
                // SAFETY: eq is open; buf has room for a cm entry plus connection data.
                let rc = unsafe { read(eq, &mut ev, buf.as_mut_ptr() as *mut c_void, len, 0) };
                if rc > 0 {
                    // SAFETY: for CM events the provider wrote at least a cm entry header,
                    // and buf is 8-byte aligned.
                    let cm = unsafe { std::ptr::read(buf.as_ptr() as *const fi_eq_cm_entry) };
                    return Ok((which, ev, cm));
                }
                if rc == -FI_EAVAIL {
                    let readerr = entry(ops.readerr, "fi_eq_readerr")?;
                    let mut e = fi_eq_err_entry::zeroed();
                    // SAFETY: eq is open; e is a valid out-buffer.
                    unsafe { readerr(eq, &mut e, 0) };
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
                return Err(OpenError::Failed(format!(
                    "the fabric connection on {} did not complete in time",
                    self.node.to_string_lossy()
                )));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Registers `buf` in the domain: `fi_mr_reg` for host memory, `fi_mr_regattr` with
    /// `FI_HMEM_CUDA` on CUDA device `hmem_device`. The error is the errno and its text.
    ///
    /// # Safety
    ///
    /// As [`Fabric::register_raw`]: the buffer must stay allocated and in place until the
    /// returned registration is deregistered.
    unsafe fn reg_with(
        &self,
        buf: &mut dyn Buffer,
        hmem_device: Option<i32>,
    ) -> Result<usize, (Option<i32>, String)> {
        let access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
        let key = self.next_key.get();
        self.next_key.set(key + 1);
        let missing = |call: &str| (None, format!("{call} missing"));
        // SAFETY: domain is open while self is; `mr` is its provider's table.
        let mops = unsafe { &*(*self.domain).mr };
        let dom = self.domain as *mut fid;
        let mut mr: *mut fid_mr = null_mut();
        let rc = match hmem_device {
            None => {
                let reg = mops.reg.ok_or_else(|| missing("fi_mr_reg"))?;
                let addr = buf.addr() as *const c_void;
                // SAFETY: domain is open; the caller keeps the buffer's len bytes alive.
                unsafe { reg(dom, addr, buf.len(), access, 0, key, 0, &mut mr, null_mut()) }
            }
            Some(dev) => {
                let regattr = mops.regattr.ok_or_else(|| missing("fi_mr_regattr"))?;
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
                let mut p = Padded {
                    a: fi_mr_attr::zeroed(),
                    pad: [0; 32],
                };
                p.a.mr_iov = &iov;
                p.a.iov_count = 1;
                p.a.access = access;
                p.a.requested_key = key;
                p.a.iface = FI_HMEM_CUDA;
                p.a.device = dev as u64;
                // SAFETY: domain is open; p and iov outlive the call; the caller keeps the
                // device memory alive.
                unsafe { regattr(dom, &p.a, 0, &mut mr) }
            }
        };
        if rc != 0 || mr.is_null() {
            return Err((Some(-rc), self.lib.err(rc as isize)));
        }
        Ok(self.mrs.insert(mr, buf))
    }

    /// Reads up to 16 completions of `cq` into `entries`: the count, or libfabric's negative
    /// code (`-FI_EAGAIN`: none).
    fn cq_read(&self, cq: *mut fid_cq, entries: &mut [fi_cq_entry; 16]) -> Result<isize, String> {
        // SAFETY: cq is open while self is; `ops` is its provider's table.
        let read = unsafe { (*(*cq).ops).read }.ok_or("fi_cq_read missing")?;
        // SAFETY: cq is open; entries has room for 16 context-format entries.
        Ok(unsafe { read(cq, entries.as_mut_ptr() as *mut c_void, 16) })
    }

    /// The context slot an operation context points to.
    fn slot_of(&self, p: *mut c_void) -> Option<usize> {
        let (base, a) = (self.ctx.as_ptr() as usize, p as usize);
        let sz = std::mem::size_of::<UnsafeCell<fi_context2>>();
        (a >= base && a < base + CTX_SLOTS * sz && (a - base).is_multiple_of(sz))
            .then(|| (a - base) / sz)
    }

    /// Frees a context slot; returns the `wr_id` of its operation.
    fn complete(&self, slot: usize) -> u64 {
        self.ctx_free.borrow_mut().push(slot);
        self.ctx_wr.borrow()[slot]
    }
}

impl Fabric for OfiFabric {
    fn nic(&self) -> NicRef {
        NicRef::ofi(&self.provider, self.domain_name.as_deref())
    }
    fn cannot_register(&self, kind: MemoryKind) -> Option<String> {
        (kind == MemoryKind::Cuda && !self.hmem).then(|| {
            format!(
                "{} offers no FI_HMEM: this libfabric build cannot register GPU memory (it has no CUDA support, and dma-buf registration needs libfabric 1.20); the GPU path was not measured — use a libfabric built with CUDA (EFA's, or --with-cuda)",
                self.nic()
            )
        })
    }
    fn line_rate_gbytes(&self) -> Option<f64> {
        None
    }
    fn max_outstanding(&self) -> usize {
        CTX_SLOTS
    }
    unsafe fn register_raw(
        &self,
        buf: &mut dyn Buffer,
    ) -> Result<RawRegistration, Vec<RegAttempt>> {
        let mut attempts = Vec::new();
        let (method, device, call) = if buf.kind() == MemoryKind::Host {
            ("host", None, "fi_mr_reg")
        } else {
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
                        self.nic()
                    ),
                ));
                return Err(attempts);
            }
            (
                "hmem",
                Some(buf.cuda_device().unwrap_or(0)),
                "fi_mr_regattr(FI_HMEM_CUDA)",
            )
        };
        // SAFETY: the caller's contract (register_raw) covers this registration.
        match unsafe { self.reg_with(buf, device) } {
            Ok(handle) => {
                attempts.push(RegAttempt::ok(method));
                Ok(RawRegistration {
                    handle,
                    method: method.into(),
                    attempts,
                })
            }
            Err((e, s)) => {
                attempts.push(RegAttempt::failed(method, e, &format!("{call}: {s}")));
                Err(attempts)
            }
        }
    }
    fn deregister_raw(&self, handle: usize) {
        if let Some(mr) = self.mrs.remove(handle) {
            // SAFETY: the table held mr as a live registration and gave it up just now.
            unsafe { close(mr as *mut fid) };
        }
    }
    fn post(&self, t: &Transfer<'_>) -> Result<Posted, String> {
        if self.ep_c.is_null() {
            return Err("post on a fabric with no initiator endpoint".into());
        }
        let (l, raddr, key) = self.resolve(t)?;
        // SAFETY: ep_c is open while self is; `rma` is its provider's table.
        let rma = unsafe { &*(*self.ep_c).rma };
        let Some(slot) = self.ctx_free.borrow_mut().pop() else {
            return Ok(Posted::Busy);
        };
        // SAFETY: l is a live registration of this fabric (`resolve`).
        let desc = unsafe { (*l.mr).mem_desc };
        let local = (l.addr + t.local_off as u64) as *mut c_void;
        let context = self.ctx[slot].get() as *mut c_void;
        let rc = match t.op {
            // A WRITE completes once the target has placed the data (FI_DELIVERY_COMPLETE: the
            // tcp provider waits for the target's ack), as an RC WRITE completes on the
            // responder's ack with verbs; fi_write's default would complete as soon as the
            // bytes were handed to the initiator's socket, before they reach the target buffer.
            Op::Write => {
                let Some(f) = rma.writemsg else {
                    self.ctx_free.borrow_mut().push(slot);
                    return Err("fi_writemsg missing".into());
                };
                let iov = iovec {
                    iov_base: local,
                    iov_len: t.len,
                };
                let rma_iov = fi_rma_iov {
                    addr: raddr,
                    len: t.len,
                    key,
                };
                let mut descs = [desc];
                let msg = fi_msg_rma {
                    msg_iov: &iov,
                    desc: descs.as_mut_ptr(),
                    iov_count: 1,
                    addr: 0,
                    rma_iov: &rma_iov,
                    rma_iov_count: 1,
                    context,
                    data: 0,
                };
                // SAFETY: ep_c is connected; msg and what it points to outlive the call (the
                // provider copies the iovecs); both ranges lie inside live registrations whose
                // guards keep the buffers allocated; the context slot was free and is not
                // touched again until its completion is read.
                unsafe { f(self.ep_c, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE) }
            }
            Op::Read => {
                let Some(f) = rma.read else {
                    self.ctx_free.borrow_mut().push(slot);
                    return Err("fi_read missing".into());
                };
                // SAFETY: as for the WRITE above.
                unsafe { f(self.ep_c, local, t.len, desc, 0, raddr, key, context) }
            }
        };
        if rc == 0 {
            self.ctx_wr.borrow_mut()[slot] = t.wr_id;
            Ok(Posted::Yes)
        } else {
            self.ctx_free.borrow_mut().push(slot);
            if rc == -FI_EAGAIN {
                Ok(Posted::Busy)
            } else {
                Err(format!("fi_{}: {}", t.op.as_str(), self.lib.err(rc)))
            }
        }
    }
    fn export(&self, key: &RegKey) -> Option<RemoteRegion> {
        let s = self.mrs.slot(self, key)?;
        // SAFETY: s.mr is a live registration of this fabric (`slot`).
        let rkey = unsafe { (*s.mr).key };
        Some(RemoteRegion {
            addr: if self.virt_addr { s.addr } else { 0 },
            key: rkey,
            len: s.len,
        })
    }
    fn import_remote(&self, region: RemoteRegion) -> Result<usize, String> {
        let mut r = self.remotes.borrow_mut();
        r.push(Some(region));
        Ok(REMOTE_BASE + r.len() - 1)
    }
    fn forget_remote(&self, handle: usize) {
        if let Some(i) = handle.checked_sub(REMOTE_BASE)
            && let Some(slot) = self.remotes.borrow_mut().get_mut(i)
        {
            *slot = None;
        }
    }
    fn target_driver(&self) -> Option<Box<dyn TargetDriver + '_>> {
        if self.cq_s.is_null() || !self.target_may_be_driven_apart() {
            return None;
        }
        // SAFETY: cq_s is open while self is; `ops` is its provider's table.
        let ops = unsafe { &*(*self.cq_s).ops };
        let read = ops.read?;
        // One driver at a time.
        if self.target_driven.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(Box::new(OfiTargetDriver {
            cq: self.cq_s,
            read,
            readerr: ops.readerr,
            fi_strerror: self.lib.fi_strerror,
            driven: &self.target_driven,
        }))
    }
    fn poll(&self, out: &mut Vec<Completion>) -> Result<(), String> {
        let mut entries = [fi_cq_entry {
            op_context: null_mut(),
        }; 16];
        // Drive the target side too (the tcp provider reads the target's socket only while its
        // queue is read), unless a driver thread does.
        if !self.target_driven.load(Ordering::Acquire) && !self.cq_s.is_null() {
            let _ = self.cq_read(self.cq_s, &mut entries)?;
        }
        if self.cq_c.is_null() {
            return Ok(());
        }
        let rc = self.cq_read(self.cq_c, &mut entries)?;
        if rc > 0 {
            for e in &entries[..rc as usize] {
                let s = self
                    .slot_of(e.op_context)
                    .ok_or("completion with an unknown context")?;
                out.push(Completion {
                    wr_id: self.complete(s),
                    status: Ok(()),
                });
            }
        } else if rc == -FI_EAVAIL {
            // SAFETY: cq_c is open while self is; `ops` is its provider's table.
            let readerr = unsafe { (*(*self.cq_c).ops).readerr }.ok_or("fi_cq_readerr missing")?;
            let mut e = fi_cq_err_entry::zeroed();
            // SAFETY: cq_c is open; e is a valid out-buffer.
            unsafe { readerr(self.cq_c, &mut e, 0) };
            let msg = format!(
                "completion error: {} (provider errno {})",
                self.lib.err(-(e.err as isize)),
                e.prov_errno
            );
            let s = self.slot_of(e.op_context).ok_or(msg.clone())?;
            out.push(Completion {
                wr_id: self.complete(s),
                status: Err(msg),
            });
        } else if rc != -FI_EAGAIN {
            return Err(format!("fi_cq_read: {}", self.lib.err(rc)));
        }
        Ok(())
    }
}

impl OfiFabric {
    /// The local registration of a transfer, and the remote address and key its operation
    /// names: a registration of this fabric (the loopback pair) or an imported peer region;
    /// both ranges checked against the registered lengths.
    fn resolve(&self, t: &Transfer<'_>) -> Result<(super::Slot<*mut fid_mr>, u64, u64), String> {
        let remote = t.remote.handle_for(self).filter(|h| *h >= REMOTE_BASE);
        let Some(h) = remote else {
            let (l, r) = self.mrs.resolve(self, t)?;
            let raddr = if self.virt_addr {
                r.addr + t.remote_off as u64
            } else {
                t.remote_off as u64
            };
            // SAFETY: r is a live registration of this fabric (`resolve`).
            return Ok((l, raddr, unsafe { (*r.mr).key }));
        };
        let r = self
            .remotes
            .borrow()
            .get(h - REMOTE_BASE)
            .copied()
            .flatten()
            .ok_or("post on a peer region this fabric does not hold")?;
        let l = self
            .mrs
            .slot(self, t.local)
            .ok_or("post on a registration this fabric does not hold")?;
        if t.local_off.checked_add(t.len).is_none_or(|e| e > l.len)
            || t.remote_off.checked_add(t.len).is_none_or(|e| e > r.len)
        {
            return Err("post past the end of a registered buffer".into());
        }
        Ok((l, r.addr + t.remote_off as u64, r.key))
    }

    /// The libfabric domain opened (`veth0`, `lo` for the tcp provider: the interface).
    pub fn domain_name(&self) -> Option<&str> {
        self.domain_name.as_deref()
    }

    /// Whether the domain lets the target's completion queue be read on one thread while the
    /// initiator's endpoint and queue are used on another (they share no queue or endpoint).
    fn target_may_be_driven_apart(&self) -> bool {
        matches!(
            self.threading,
            FI_THREAD_SAFE | FI_THREAD_FID | FI_THREAD_COMPLETION | FI_THREAD_ENDPOINT
        )
    }
}

/// Reads the target's completion queue in a loop on its own thread: with the `tcp` provider
/// that is what moves the bytes into the target buffer (libfabric 1.17's tcp provider reads an
/// endpoint's socket while that endpoint's completion queue is read), work a remote node would
/// do on its own CPU. Made by [`OfiFabric::target_driver`](Fabric::target_driver).
struct OfiTargetDriver<'f> {
    cq: *mut fid_cq,
    read: unsafe extern "C" fn(*mut fid_cq, *mut c_void, usize) -> isize,
    readerr: Option<unsafe extern "C" fn(*mut fid_cq, *mut fi_cq_err_entry, u64) -> isize>,
    fi_strerror: fi_strerror_fn,
    /// The fabric's flag, cleared when the driver ends.
    driven: &'f AtomicBool,
}

// SAFETY: the driver only calls fi_cq_read/fi_cq_readerr on the target's completion queue,
// from one thread at a time (it is moved, not shared), and while it lives `poll` does not read
// that queue. The domain's threading level, checked before a driver is made, allows that while
// another thread uses the initiator's endpoint and its own queue; the queue stays open while
// the driver lives, as the driver borrows (`'f`) the fabric that closes it in its `Drop`.
unsafe impl Send for OfiTargetDriver<'_> {}

impl TargetDriver for OfiTargetDriver<'_> {
    fn run(self: Box<Self>, stop: &AtomicBool) -> Result<(), String> {
        let mut entries = [fi_cq_entry {
            op_context: null_mut(),
        }; 16];
        while !stop.load(Ordering::Acquire) {
            // SAFETY: cq is open while the borrowed fabric is; entries has room for 16
            // context-format entries.
            let rc = unsafe { (self.read)(self.cq, entries.as_mut_ptr() as *mut c_void, 16) };
            if rc >= 0 || rc == -FI_EAGAIN {
                continue;
            }
            if rc == -FI_EAVAIL {
                let mut e = fi_cq_err_entry::zeroed();
                if let Some(readerr) = self.readerr {
                    // SAFETY: cq is open; e is a valid out-buffer.
                    unsafe { readerr(self.cq, &mut e, 0) };
                }
                return Err(format!(
                    "target side completion error: {} (provider errno {})",
                    strerror(self.fi_strerror, -(e.err as isize)),
                    e.prov_errno
                ));
            }
            return Err(format!(
                "fi_cq_read (target): {}",
                strerror(self.fi_strerror, rc)
            ));
        }
        Ok(())
    }
}

impl Drop for OfiTargetDriver<'_> {
    fn drop(&mut self) {
        self.driven.store(false, Ordering::Release);
    }
}

impl Drop for OfiFabric {
    fn drop(&mut self) {
        // Dependency order: endpoints, listener, registrations (none left while guards
        // borrow the fabric), queues, domain, fabric, then the fi_info structs.
        for ep in [self.ep_c, self.ep_s] {
            if ep.is_null() {
                continue;
            }
            // SAFETY: ep is open; `cm` is its provider's table (null for none).
            let shutdown = unsafe { (*ep).cm.as_ref() }.and_then(|cm| cm.shutdown);
            if let Some(sd) = shutdown {
                // SAFETY: ep is open; shutting down an unconnected endpoint only fails.
                unsafe { sd(ep, 0) };
            }
        }
        for f in [
            self.ep_c as *mut fid,
            self.ep_s as *mut fid,
            self.pep as *mut fid,
        ] {
            // SAFETY: each is null or an object this fabric opened, closed once.
            unsafe { close(f) };
        }
        for mr in self.mrs.drain() {
            // SAFETY: the table held mr as a live registration and gave it up just now.
            unsafe { close(mr as *mut fid) };
        }
        for f in [
            self.cq_c as *mut fid,
            self.cq_s as *mut fid,
            self.eq_c as *mut fid,
            self.eq_s as *mut fid,
            self.domain as *mut fid,
            self.fabric as *mut fid,
        ] {
            // SAFETY: each is null or an object this fabric opened, closed once, after the
            // objects opened on it (above).
            unsafe { close(f) };
        }
        for info in [self.cli_info, self.srv_info] {
            if !info.is_null() {
                // SAFETY: info came from fi_getinfo and is freed once.
                unsafe { (self.lib.fi_freeinfo)(info) };
            }
        }
    }
}
