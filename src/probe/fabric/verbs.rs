//! libibverbs loopback: `libibverbs.so.1` is opened at run time; on one device and port, two
//! RC queue pairs are connected to each other (same LID, or the port's own GID on RoCE) and
//! RDMA WRITE/READ run between them, so the NIC reads one buffer and writes the other over
//! its own PCIe link. `ibv_post_send`/`ibv_poll_cq` go through `struct ibv_context_ops`
//! ([`super::verbs_sys`]). Without kernel RDMA (`ENOSYS`) or without the library (a load
//! error) the probe says so and stops.
//!
//! Every pointer this module dereferences or passes is either null-checked output of
//! libibverbs held by [`VerbsFabric`] until its `Drop`, or a value built here; the struct
//! layouts are rdma-core's, checked against the real header by `tests/probe_layout.rs`.

use super::layout::Zeroable;
use super::verbs_sys::*;
use super::{Completion, Fabric, OpenError, Posted, RawRegistration, RegTable, Transfer};
use crate::analysis::probe_report::NicRef;
use crate::analysis::probe_report::{Op, RegAttempt};
use crate::probe::Unavailable;
use crate::probe::memory::Buffer;
use std::ffi::{CStr, c_int, c_void};
use std::ptr::null_mut;

/// Soname opened at run time.
pub const LIBIBVERBS: &str = "libibverbs.so.1";

dyn_library! {
    /// The libibverbs entry points the probe calls (posting and polling go through the
    /// context's ops table instead: they are `static inline` in the header).
    struct Lib from LIBIBVERBS ("PEERPATH_LIBIBVERBS", "the Debian package libibverbs1 (rdma-core)") {
        ibv_get_device_list: ibv_get_device_list_fn,
        ibv_free_device_list: ibv_free_device_list_fn,
        ibv_get_device_name: ibv_get_device_name_fn,
        ibv_open_device: ibv_open_device_fn,
        ibv_close_device: ibv_close_device_fn,
        ibv_query_port: ibv_query_port_fn,
        ibv_query_gid: ibv_query_gid_fn,
        ibv_alloc_pd: ibv_alloc_pd_fn,
        ibv_dealloc_pd: ibv_dealloc_pd_fn,
        ibv_reg_mr: ibv_reg_mr_fn,
        ibv_dereg_mr: ibv_dereg_mr_fn,
        ibv_create_cq: ibv_create_cq_fn,
        ibv_destroy_cq: ibv_destroy_cq_fn,
        ibv_create_qp: ibv_create_qp_fn,
        ibv_modify_qp: ibv_modify_qp_fn,
        ibv_destroy_qp: ibv_destroy_qp_fn,
    } optional {
        ibv_reg_mr_iova2: ibv_reg_mr_iova2_fn,
        ibv_reg_dmabuf_mr: ibv_reg_dmabuf_mr_fn,
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `ibv_get_device_list`'s result, freed on drop.
struct DeviceList<'l> {
    lib: &'l Lib,
    list: *mut *mut c_void,
    n: usize,
}

impl<'l> DeviceList<'l> {
    /// The list, or the errno of a failure (`ENOSYS`: the kernel has no RDMA support).
    fn get(lib: &'l Lib) -> Result<Self, i32> {
        let mut n: c_int = 0;
        // SAFETY: n is a valid out-pointer; the list is freed by Drop.
        let list = unsafe { (lib.ibv_get_device_list)(&mut n) };
        if list.is_null() {
            return Err(errno());
        }
        Ok(DeviceList {
            lib,
            list,
            n: n.max(0) as usize,
        })
    }

    /// The devices, up to the first null entry.
    fn devices(&self) -> impl Iterator<Item = *mut c_void> + '_ {
        // SAFETY: the list is live and holds `n` entries (rdma-core null-terminates it).
        let all = unsafe { std::slice::from_raw_parts(self.list, self.n) };
        all.iter().copied().take_while(|d| !d.is_null())
    }

    /// A device's name (`mlx5_0`).
    fn name(&self, d: *mut c_void) -> String {
        // SAFETY: d is a device of this live list; the name is a NUL-terminated string it owns.
        unsafe { CStr::from_ptr((self.lib.ibv_get_device_name)(d)) }
            .to_string_lossy()
            .into_owned()
    }
}

impl Drop for DeviceList<'_> {
    fn drop(&mut self) {
        // SAFETY: the list came from ibv_get_device_list and is freed once; contexts opened on
        // its devices stay valid.
        unsafe { (self.lib.ibv_free_device_list)(self.list) };
    }
}

/// Why `ibv_get_device_list` failed, in words.
fn no_devices(e: i32) -> Unavailable {
    Unavailable::device(&match e {
        libc::ENOSYS => {
            "the kernel has no RDMA support (ibv_get_device_list: ENOSYS, Function not implemented)"
                .to_string()
        }
        libc::EOPNOTSUPP => {
            "RDMA is not supported here (ibv_get_device_list: EOPNOTSUPP)".to_string()
        }
        _ => format!(
            "ibv_get_device_list failed: {}",
            std::io::Error::from_raw_os_error(e)
        ),
    })
}

/// The RDMA devices libibverbs lists, or why there are none (library absent, `ENOSYS`: the
/// kernel has no RDMA support, an empty list: no RDMA device).
pub fn list_devices() -> Result<Vec<String>, Unavailable> {
    let lib = Lib::shared()?;
    let list = DeviceList::get(lib).map_err(no_devices)?;
    let out: Vec<String> = list.devices().map(|d| list.name(d)).collect();
    if out.is_empty() {
        return Err(Unavailable::device(
            "libibverbs lists no RDMA device (is the NIC driver, e.g. mlx5_ib, loaded?)",
        ));
    }
    Ok(out)
}

/// A verbs loopback pair on one device and port.
pub struct VerbsFabric {
    lib: &'static Lib,
    ctx: *mut ibv_context,
    pd: *mut ibv_pd,
    cq: *mut ibv_cq,
    qp_a: *mut ibv_qp,
    qp_b: *mut ibv_qp,
    mrs: RegTable<*mut ibv_mr>,
    device: String,
    port: u8,
    rate_gbytes: Option<f64>,
}

const MAX_WR: usize = 64;

/// The port's addressing, for connecting the two queue pairs.
struct PortAddr {
    attr: ibv_port_attr,
    /// RoCE: the GID to address (`None` on InfiniBand: the LID is used).
    gid: Option<(ibv_gid, i32)>,
}

impl VerbsFabric {
    /// Opens `device` (an `ibv_get_device_name` name such as `mlx5_0`), uses `port`, and
    /// connects two RC QPs to each other. `rate_gbps` is the port rate from sysfs. Whatever
    /// was created before a failure is released by `Drop`.
    pub fn open(device: &str, port: u8, rate_gbps: Option<f64>) -> Result<VerbsFabric, OpenError> {
        let lib = Lib::shared().map_err(OpenError::Unavailable)?;
        let mut f = VerbsFabric {
            lib,
            ctx: null_mut(),
            pd: null_mut(),
            cq: null_mut(),
            qp_a: null_mut(),
            qp_b: null_mut(),
            mrs: RegTable::new(),
            device: device.to_string(),
            port,
            rate_gbytes: rate_gbps.map(|g| g / 8.0),
        };
        f.ctx = f.open_context()?;
        let addr = f.port_addr()?;
        // SAFETY: ctx is the live context opened above.
        f.pd = unsafe { (f.lib.ibv_alloc_pd)(f.ctx) };
        if f.pd.is_null() {
            return Err(failed("ibv_alloc_pd"));
        }
        let cqe = (MAX_WR * 4) as c_int;
        // SAFETY: ctx is live; no completion channel or context is attached.
        f.cq = unsafe { (f.lib.ibv_create_cq)(f.ctx, cqe, null_mut(), null_mut(), 0) };
        if f.cq.is_null() {
            return Err(failed("ibv_create_cq"));
        }
        f.qp_a = f.create_qp()?;
        f.qp_b = f.create_qp()?;
        f.connect(f.qp_a, f.qp_b, &addr)?;
        f.connect(f.qp_b, f.qp_a, &addr)?;
        Ok(f)
    }

    /// Opens the device by name.
    fn open_context(&self) -> Result<*mut ibv_context, OpenError> {
        let list = DeviceList::get(self.lib).map_err(|e| OpenError::Unavailable(no_devices(e)))?;
        let Some(dev) = list.devices().find(|&d| list.name(d) == self.device) else {
            return Err(OpenError::Unavailable(Unavailable::device(&format!(
                "RDMA device {} not found by libibverbs",
                self.device
            ))));
        };
        // SAFETY: dev is a device of the live list.
        let ctx = unsafe { (self.lib.ibv_open_device)(dev) };
        if ctx.is_null() {
            return Err(failed("ibv_open_device"));
        }
        Ok(ctx)
    }

    /// The port's attributes (it must be ACTIVE) and, on RoCE, its RoCE v2 GID.
    fn port_addr(&self) -> Result<PortAddr, OpenError> {
        let mut attr = ibv_port_attr::zeroed();
        // SAFETY: ctx is live; attr is a valid out-pointer of the header's layout.
        if unsafe { (self.lib.ibv_query_port)(self.ctx, self.port, &mut attr) } != 0 {
            return Err(failed("ibv_query_port"));
        }
        if attr.state != IBV_PORT_ACTIVE {
            return Err(OpenError::Failed(format!(
                "{} port {} is not ACTIVE (state {})",
                self.device, self.port, attr.state
            )));
        }
        if attr.link_layer != IBV_LINK_LAYER_ETHERNET {
            return Ok(PortAddr { attr, gid: None });
        }
        let index = roce_v2_gid_index(&self.device, self.port).unwrap_or(0);
        let mut gid = ibv_gid::zeroed();
        // SAFETY: ctx is live; gid is a valid out-pointer.
        if unsafe { (self.lib.ibv_query_gid)(self.ctx, self.port, index, &mut gid) } != 0 {
            return Err(failed("ibv_query_gid"));
        }
        Ok(PortAddr {
            attr,
            gid: Some((gid, index)),
        })
    }

    /// An RC queue pair on the shared CQ.
    fn create_qp(&self) -> Result<*mut ibv_qp, OpenError> {
        let mut ia = ibv_qp_init_attr::zeroed();
        ia.send_cq = self.cq;
        ia.recv_cq = self.cq;
        ia.cap = ibv_qp_cap {
            max_send_wr: (MAX_WR * 2) as u32,
            max_recv_wr: 1,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        ia.qp_type = IBV_QPT_RC;
        // SAFETY: pd and cq are live; ia is fully initialised.
        let qp = unsafe { (self.lib.ibv_create_qp)(self.pd, &mut ia) };
        if qp.is_null() {
            return Err(failed("ibv_create_qp"));
        }
        Ok(qp)
    }

    /// Moves `me` through INIT, RTR (addressed to `peer` on the same port) and RTS.
    fn connect(
        &self,
        me: *mut ibv_qp,
        peer: *mut ibv_qp,
        port: &PortAddr,
    ) -> Result<(), OpenError> {
        let modify = |a: &mut ibv_qp_attr, mask: c_int, what: &str| {
            // SAFETY: me is a live QP of this fabric; a is a valid attribute struct.
            if unsafe { (self.lib.ibv_modify_qp)(me, a, mask) } != 0 {
                return Err(failed(what));
            }
            Ok(())
        };
        let mut a = ibv_qp_attr::zeroed();
        a.qp_state = IBV_QPS_INIT;
        a.port_num = self.port;
        a.qp_access_flags =
            (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) as u32;
        let mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
        modify(&mut a, mask, "ibv_modify_qp(INIT)")?;

        let mut a = ibv_qp_attr::zeroed();
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = match port.attr.active_mtu {
            0 => IBV_MTU_1024,
            m => m,
        };
        // SAFETY: peer is a live QP of this fabric.
        a.dest_qp_num = unsafe { (*peer).qp_num };
        a.max_dest_rd_atomic = 16;
        a.min_rnr_timer = 12;
        a.ah_attr.dlid = port.attr.lid;
        a.ah_attr.port_num = self.port;
        if let Some((gid, index)) = port.gid {
            a.ah_attr.is_global = 1;
            a.ah_attr.grh.dgid = gid;
            a.ah_attr.grh.sgid_index = index as u8;
            a.ah_attr.grh.hop_limit = 1;
        }
        let mask = IBV_QP_STATE
            | IBV_QP_AV
            | IBV_QP_PATH_MTU
            | IBV_QP_DEST_QPN
            | IBV_QP_RQ_PSN
            | IBV_QP_MAX_DEST_RD_ATOMIC
            | IBV_QP_MIN_RNR_TIMER;
        modify(&mut a, mask, "ibv_modify_qp(RTR)")?;

        let mut a = ibv_qp_attr::zeroed();
        a.qp_state = IBV_QPS_RTS;
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 16;
        let mask = IBV_QP_STATE
            | IBV_QP_TIMEOUT
            | IBV_QP_RETRY_CNT
            | IBV_QP_RNR_RETRY
            | IBV_QP_SQ_PSN
            | IBV_QP_MAX_QP_RD_ATOMIC;
        modify(&mut a, mask, "ibv_modify_qp(RTS)")
    }

    /// `ibv_reg_mr` (through `ibv_reg_mr_iova2` when present, which takes relaxed ordering)
    /// on the buffer's address: host memory, or a device pointer a peer-memory client claims.
    ///
    /// # Safety
    ///
    /// As [`Fabric::register_raw`]: the buffer must stay allocated and in place until the
    /// returned registration is deregistered.
    unsafe fn reg_plain(&self, buf: &dyn Buffer, access: c_int) -> Result<*mut ibv_mr, i32> {
        let addr = buf.addr() as *mut c_void;
        let mr = match self.lib.ibv_reg_mr_iova2 {
            // SAFETY: pd is live; the caller keeps the buffer's len bytes at addr alive.
            Some(f) => unsafe { f(self.pd, addr, buf.len(), buf.addr(), access as u32) },
            // SAFETY: as above.
            None => unsafe {
                (self.lib.ibv_reg_mr)(
                    self.pd,
                    addr,
                    buf.len(),
                    access & !IBV_ACCESS_RELAXED_ORDERING,
                )
            },
        };
        if mr.is_null() { Err(errno()) } else { Ok(mr) }
    }

    /// `ibv_reg_dmabuf_mr` on the buffer's dma-buf export (retried without relaxed ordering,
    /// which older stacks reject with `EINVAL`).
    ///
    /// # Safety
    ///
    /// As [`Fabric::register_raw`].
    unsafe fn reg_dmabuf(
        &self,
        buf: &mut dyn Buffer,
        access: c_int,
    ) -> Result<*mut ibv_mr, RegAttempt> {
        let d = buf
            .dmabuf()
            .map_err(|why| RegAttempt::failed("dmabuf", None, &format!("not tried: {why}")))?;
        let Some(f) = self.lib.ibv_reg_dmabuf_mr else {
            return Err(RegAttempt::failed(
                "dmabuf",
                Some(libc::EOPNOTSUPP),
                "this libibverbs has no ibv_reg_dmabuf_mr (rdma-core < 34)",
            ));
        };
        let reg = |access| {
            // SAFETY: pd is live; fd and offset describe the buffer's exported range, which
            // the caller keeps alive.
            unsafe { f(self.pd, d.offset, buf.len(), buf.addr(), d.fd, access) }
        };
        let mut mr = reg(access);
        if mr.is_null() && errno() == libc::EINVAL {
            mr = reg(access & !IBV_ACCESS_RELAXED_ORDERING);
        }
        if mr.is_null() {
            return Err(RegAttempt::failed(
                "dmabuf",
                Some(errno()),
                "ibv_reg_dmabuf_mr",
            ));
        }
        Ok(mr)
    }

    /// Releases a registration.
    ///
    /// # Safety
    ///
    /// `mr` is a live registration of this fabric, released once.
    unsafe fn dereg(&self, mr: *mut ibv_mr) {
        // SAFETY: the caller's contract.
        unsafe { (self.lib.ibv_dereg_mr)(mr) };
    }
}

/// An `OpenError::Failed` for a call that set errno.
fn failed(what: &str) -> OpenError {
    OpenError::Failed(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// The first RoCE v2 GID index of a port with an IPv4-mapped address, from sysfs
/// (`ports/<p>/gid_attrs/types/<i>` and `ports/<p>/gids/<i>`).
fn roce_v2_gid_index(device: &str, port: u8) -> Option<i32> {
    let base = format!("/sys/class/infiniband/{device}/ports/{port}");
    for i in 0..256 {
        let t = std::fs::read_to_string(format!("{base}/gid_attrs/types/{i}")).ok();
        let g = std::fs::read_to_string(format!("{base}/gids/{i}")).ok()?;
        if t.as_deref().map(str::trim) == Some("RoCE v2")
            && g.trim().starts_with("0000:0000:0000:0000:0000:ffff:")
        {
            return Some(i);
        }
    }
    None
}

/// The `wr.rdma` member of `struct ibv_send_wr` (`remote_addr` at 0, `rkey` at 8), as the
/// union's 32 bytes.
fn rdma_wr(remote_addr: u64, rkey: u32) -> [u64; 4] {
    let mut bytes = [0u8; 32];
    bytes[WR_RDMA_REMOTE_ADDR..WR_RDMA_REMOTE_ADDR + 8].copy_from_slice(&remote_addr.to_ne_bytes());
    bytes[WR_RDMA_RKEY..WR_RDMA_RKEY + 4].copy_from_slice(&rkey.to_ne_bytes());
    let mut out = [0u64; 4];
    for (w, b) in out.iter_mut().zip(bytes.chunks_exact(8)) {
        *w = u64::from_ne_bytes(b.try_into().unwrap_or_default());
    }
    out
}

impl Fabric for VerbsFabric {
    fn nic(&self) -> NicRef {
        NicRef::verbs(&self.device, self.port.into(), None)
    }
    fn line_rate_gbytes(&self) -> Option<f64> {
        self.rate_gbytes
    }
    fn max_outstanding(&self) -> usize {
        MAX_WR
    }
    unsafe fn register_raw(
        &self,
        buf: &mut dyn Buffer,
    ) -> Result<RawRegistration, Vec<RegAttempt>> {
        let access = IBV_ACCESS_LOCAL_WRITE
            | IBV_ACCESS_REMOTE_WRITE
            | IBV_ACCESS_REMOTE_READ
            | IBV_ACCESS_RELAXED_ORDERING;
        let mut attempts = Vec::new();
        let mut chosen: Option<(*mut ibv_mr, &str)> = None;
        let plain = if buf.kind().is_device() {
            // SAFETY: the caller's contract (register_raw) covers this registration.
            match unsafe { self.reg_dmabuf(buf, access) } {
                Ok(mr) => {
                    attempts.push(RegAttempt::ok("dmabuf"));
                    chosen = Some((mr, "dmabuf"));
                }
                Err(a) => attempts.push(a),
            }
            // Always try the peer-memory path too, so the report says whether it works.
            ("peer", "ibv_reg_mr on the device pointer")
        } else {
            ("host", "ibv_reg_mr")
        };
        // SAFETY: as above.
        match unsafe { self.reg_plain(buf, access) } {
            Ok(mr) => {
                attempts.push(RegAttempt::ok(plain.0));
                match chosen {
                    // SAFETY: mr was just registered, is not recorded anywhere, and is
                    // released once.
                    Some(_) => unsafe { self.dereg(mr) },
                    None => chosen = Some((mr, plain.0)),
                }
            }
            Err(e) => attempts.push(RegAttempt::failed(plain.0, Some(e), plain.1)),
        }
        match chosen {
            Some((mr, method)) => Ok(RawRegistration {
                handle: self.mrs.insert(mr, buf),
                method: method.into(),
                attempts,
            }),
            None => Err(attempts),
        }
    }
    fn deregister_raw(&self, handle: usize) {
        if let Some(mr) = self.mrs.remove(handle) {
            // SAFETY: the table held mr as a live registration and gave it up just now.
            unsafe { self.dereg(mr) };
        }
    }
    fn post(&self, t: &Transfer<'_>) -> Result<Posted, String> {
        let (l, r) = self.mrs.resolve(self, t)?;
        let len = u32::try_from(t.len).map_err(|_| "message larger than 4 GiB")?;
        // SAFETY: both MRs are live registrations of this fabric (`resolve`).
        let (lkey, rkey) = unsafe { ((*l.mr).lkey, (*r.mr).rkey) };
        let mut sge = ibv_sge {
            addr: l.addr + t.local_off as u64,
            length: len,
            lkey,
        };
        let mut wr = ibv_send_wr::zeroed();
        wr.wr_id = t.wr_id;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        wr.opcode = match t.op {
            Op::Write => IBV_WR_RDMA_WRITE,
            Op::Read => IBV_WR_RDMA_READ,
        };
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr = rdma_wr(r.addr + t.remote_off as u64, rkey);
        // SAFETY: ctx is live while the fabric is; `ops` is its dispatch table.
        let post =
            unsafe { (*self.ctx).ops.post_send }.ok_or("post_send missing from ibv_context_ops")?;
        let mut bad = null_mut();
        // SAFETY: qp_a is live; wr and sge outlive the call, which copies them into the send
        // queue; both ranges lie inside live registrations (`resolve`), whose guards keep the
        // buffers allocated.
        match unsafe { post(self.qp_a, &mut wr, &mut bad) } {
            0 => Ok(Posted::Yes),
            libc::ENOMEM => Ok(Posted::Busy),
            e => Err(format!(
                "ibv_post_send: {}",
                std::io::Error::from_raw_os_error(e)
            )),
        }
    }
    fn poll(&self, out: &mut Vec<Completion>) -> Result<(), String> {
        let mut wcs = [ibv_wc::zeroed(); 16];
        // SAFETY: ctx is live while the fabric is; `ops` is its dispatch table.
        let poll =
            unsafe { (*self.ctx).ops.poll_cq }.ok_or("poll_cq missing from ibv_context_ops")?;
        // SAFETY: cq is live; wcs has room for the 16 entries asked for.
        let n = unsafe { poll(self.cq, 16, wcs.as_mut_ptr()) };
        if n < 0 {
            return Err(format!("ibv_poll_cq returned {n}"));
        }
        for wc in &wcs[..n as usize] {
            let status = if wc.status == IBV_WC_SUCCESS {
                Ok(())
            } else {
                Err(format!(
                    "work completion status {} (vendor error {:#x}){}",
                    wc.status,
                    wc.vendor_err,
                    if wc.status == 4 {
                        ": local protection error, often ACS/IOMMU redirecting peer-to-peer traffic"
                    } else {
                        ""
                    }
                ))
            };
            out.push(Completion {
                wr_id: wc.wr_id,
                status,
            });
        }
        Ok(())
    }
}

impl Drop for VerbsFabric {
    fn drop(&mut self) {
        // Dependency order: queue pairs, registrations (none left while guards borrow the
        // fabric), completion queue, protection domain, context. Null means never created.
        for qp in [self.qp_a, self.qp_b] {
            if !qp.is_null() {
                // SAFETY: qp was created by this fabric and is destroyed once.
                unsafe { (self.lib.ibv_destroy_qp)(qp) };
            }
        }
        for mr in self.mrs.drain() {
            // SAFETY: the table held mr as a live registration and gave it up just now.
            unsafe { self.dereg(mr) };
        }
        if !self.cq.is_null() {
            // SAFETY: cq was created by this fabric, no QP uses it any more; destroyed once.
            unsafe { (self.lib.ibv_destroy_cq)(self.cq) };
        }
        if !self.pd.is_null() {
            // SAFETY: pd was allocated by this fabric and nothing in it is left.
            unsafe { (self.lib.ibv_dealloc_pd)(self.pd) };
        }
        if !self.ctx.is_null() {
            // SAFETY: ctx was opened by this fabric and everything made in it is released.
            unsafe { (self.lib.ibv_close_device)(self.ctx) };
        }
    }
}
