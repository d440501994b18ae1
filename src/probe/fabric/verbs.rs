//! libibverbs loopback: `libibverbs.so.1` is opened at run time; on one device and port, two
//! RC queue pairs are connected to each other (same LID, or the port's own GID on RoCE) and
//! RDMA WRITE/READ run between them, so the NIC reads one buffer and writes the other over
//! its own PCIe link. `ibv_post_send`/`ibv_poll_cq` go through `struct ibv_context_ops`
//! ([`super::verbs_sys`]). Without kernel RDMA (`ENOSYS`) or without the library
//! (`EOPNOTSUPP` from sideway-style loaders; here a load error) the probe says so and stops.

use super::verbs_sys::*;
use super::{Completion, Fabric, Op, OpenError, Posted, RegAttempt, Registered, Transfer};
use crate::probe::Unavailable;
use crate::probe::memory::{Buffer, MemoryKind};
use libloading::Library;
use std::ffi::{CStr, c_int, c_void};
use std::ptr::null_mut;

/// Soname opened at run time.
pub const LIBIBVERBS: &str = "libibverbs.so.1";

struct Lib {
    _lib: Library,
    get_device_list: ibv_get_device_list_fn,
    free_device_list: ibv_free_device_list_fn,
    get_device_name: ibv_get_device_name_fn,
    open_device: ibv_open_device_fn,
    close_device: ibv_close_device_fn,
    query_port: ibv_query_port_fn,
    query_gid: ibv_query_gid_fn,
    alloc_pd: ibv_alloc_pd_fn,
    dealloc_pd: ibv_dealloc_pd_fn,
    reg_mr: ibv_reg_mr_fn,
    reg_mr_iova2:
        Option<unsafe extern "C" fn(*mut ibv_pd, *mut c_void, usize, u64, u32) -> *mut ibv_mr>,
    reg_dmabuf_mr: Option<ibv_reg_dmabuf_mr_fn>,
    dereg_mr: ibv_dereg_mr_fn,
    create_cq: ibv_create_cq_fn,
    destroy_cq: ibv_destroy_cq_fn,
    create_qp: ibv_create_qp_fn,
    modify_qp: ibv_modify_qp_fn,
    destroy_qp: ibv_destroy_qp_fn,
}

impl Lib {
    fn open() -> Result<Lib, Unavailable> {
        // SAFETY: loading libibverbs runs its constructors, which have no preconditions.
        let lib =
            unsafe { Library::new(crate::probe::lib_name(LIBIBVERBS, "PEERPATH_LIBIBVERBS")) }
                .map_err(|e| {
                    Unavailable::library(
                        LIBIBVERBS,
                        "the Debian package libibverbs1 (rdma-core)",
                        &e.to_string(),
                    )
                })?;
        macro_rules! sym {
            ($n:literal, $t:ty) => {
                // SAFETY: the symbol has this C signature since IBVERBS_1.1.
                *unsafe { lib.get::<$t>($n) }.map_err(|e| {
                    Unavailable::library(
                        LIBIBVERBS,
                        "the Debian package libibverbs1 (rdma-core)",
                        &format!("missing symbol: {e}"),
                    )
                })?
            };
        }
        macro_rules! opt {
            ($n:literal, $t:ty) => {
                // SAFETY: as above; absent on old rdma-core.
                unsafe { lib.get::<$t>($n) }.ok().map(|s| *s)
            };
        }
        Ok(Lib {
            get_device_list: sym!(b"ibv_get_device_list\0", ibv_get_device_list_fn),
            free_device_list: sym!(b"ibv_free_device_list\0", ibv_free_device_list_fn),
            get_device_name: sym!(b"ibv_get_device_name\0", ibv_get_device_name_fn),
            open_device: sym!(b"ibv_open_device\0", ibv_open_device_fn),
            close_device: sym!(b"ibv_close_device\0", ibv_close_device_fn),
            query_port: sym!(b"ibv_query_port\0", ibv_query_port_fn),
            query_gid: sym!(b"ibv_query_gid\0", ibv_query_gid_fn),
            alloc_pd: sym!(b"ibv_alloc_pd\0", ibv_alloc_pd_fn),
            dealloc_pd: sym!(b"ibv_dealloc_pd\0", ibv_dealloc_pd_fn),
            reg_mr: sym!(b"ibv_reg_mr\0", ibv_reg_mr_fn),
            reg_mr_iova2: opt!(
                b"ibv_reg_mr_iova2\0",
                unsafe extern "C" fn(*mut ibv_pd, *mut c_void, usize, u64, u32) -> *mut ibv_mr
            ),
            reg_dmabuf_mr: opt!(b"ibv_reg_dmabuf_mr\0", ibv_reg_dmabuf_mr_fn),
            dereg_mr: sym!(b"ibv_dereg_mr\0", ibv_dereg_mr_fn),
            create_cq: sym!(b"ibv_create_cq\0", ibv_create_cq_fn),
            destroy_cq: sym!(b"ibv_destroy_cq\0", ibv_destroy_cq_fn),
            create_qp: sym!(b"ibv_create_qp\0", ibv_create_qp_fn),
            modify_qp: sym!(b"ibv_modify_qp\0", ibv_modify_qp_fn),
            destroy_qp: sym!(b"ibv_destroy_qp\0", ibv_destroy_qp_fn),
            _lib: lib,
        })
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The RDMA devices libibverbs lists, or why there are none (library absent, `ENOSYS`: the
/// kernel has no RDMA support, an empty list: no RDMA device).
pub fn list_devices() -> Result<Vec<String>, Unavailable> {
    let lib = Lib::open()?;
    let mut n: c_int = 0;
    // SAFETY: n is a valid out-pointer; the list is freed below.
    let list = unsafe { (lib.get_device_list)(&mut n) };
    if list.is_null() {
        let e = errno();
        let why = match e {
            libc::ENOSYS => "the kernel has no RDMA support (ibv_get_device_list: ENOSYS, Function not implemented)".to_string(),
            libc::EOPNOTSUPP => "RDMA is not supported here (ibv_get_device_list: EOPNOTSUPP)".to_string(),
            _ => format!("ibv_get_device_list failed: {}", std::io::Error::from_raw_os_error(e)),
        };
        return Err(Unavailable::device(&why));
    }
    let mut out = Vec::new();
    for i in 0..n.max(0) as usize {
        // SAFETY: list has n valid entries.
        let d = unsafe { *list.add(i) };
        if d.is_null() {
            break;
        }
        // SAFETY: d is a device from the list; the name is a C string owned by it.
        let name = unsafe { CStr::from_ptr((lib.get_device_name)(d)) }
            .to_string_lossy()
            .into_owned();
        out.push(name);
    }
    // SAFETY: list came from get_device_list.
    unsafe { (lib.free_device_list)(list) };
    if out.is_empty() {
        return Err(Unavailable::device(
            "libibverbs lists no RDMA device (is the NIC driver, e.g. mlx5_ib, loaded?)",
        ));
    }
    Ok(out)
}

/// A verbs loopback pair on one device and port.
pub struct VerbsFabric {
    lib: Lib,
    ctx: *mut ibv_context,
    pd: *mut ibv_pd,
    cq: *mut ibv_cq,
    qp_a: *mut ibv_qp,
    qp_b: *mut ibv_qp,
    mrs: Vec<Option<(*mut ibv_mr, u64, usize)>>,
    name: String,
    rate_gbytes: Option<f64>,
}

const MAX_WR: usize = 64;

impl VerbsFabric {
    /// Opens `device` (an `ibv_get_device_name` name such as `mlx5_0`), uses `port`, and
    /// connects two RC QPs to each other. `rate_gbps` is the port rate from sysfs.
    pub fn open(device: &str, port: u8, rate_gbps: Option<f64>) -> Result<VerbsFabric, OpenError> {
        let lib = Lib::open().map_err(OpenError::Unavailable)?;
        let mut f = VerbsFabric {
            lib,
            ctx: null_mut(),
            pd: null_mut(),
            cq: null_mut(),
            qp_a: null_mut(),
            qp_b: null_mut(),
            mrs: Vec::new(),
            name: format!("verbs:{device}:{port}"),
            rate_gbytes: rate_gbps.map(|g| g / 8.0),
        };
        // SAFETY: setup only touches objects it creates; Drop releases them.
        unsafe { f.setup(device, port)? };
        Ok(f)
    }

    unsafe fn setup(&mut self, device: &str, port: u8) -> Result<(), OpenError> {
        let failed =
            |what: &str| OpenError::Failed(format!("{what}: {}", std::io::Error::last_os_error()));
        // SAFETY: pointers are checked for null before use; struct layouts are those of
        // rdma-core (tests/probe_layout.rs).
        unsafe {
            let mut n = 0;
            let list = (self.lib.get_device_list)(&mut n);
            if list.is_null() {
                return Err(OpenError::Unavailable(
                    list_devices()
                        .err()
                        .unwrap_or_else(|| Unavailable::device("no RDMA devices")),
                ));
            }
            let mut dev = null_mut();
            for i in 0..n.max(0) as usize {
                let d = *list.add(i);
                if !d.is_null()
                    && CStr::from_ptr((self.lib.get_device_name)(d)).to_bytes() == device.as_bytes()
                {
                    dev = d;
                }
            }
            if !dev.is_null() {
                self.ctx = (self.lib.open_device)(dev);
            }
            (self.lib.free_device_list)(list);
            if dev.is_null() {
                return Err(OpenError::Unavailable(Unavailable::device(&format!(
                    "RDMA device {device} not found by libibverbs"
                ))));
            }
            if self.ctx.is_null() {
                return Err(failed("ibv_open_device"));
            }
            let mut pa: ibv_port_attr = std::mem::zeroed();
            if (self.lib.query_port)(self.ctx, port, &mut pa) != 0 {
                return Err(failed("ibv_query_port"));
            }
            if pa.state != IBV_PORT_ACTIVE {
                return Err(OpenError::Failed(format!(
                    "{device} port {port} is not ACTIVE (state {})",
                    pa.state
                )));
            }
            let roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
            let gid_index = if roce {
                roce_v2_gid_index(device, port).unwrap_or(0)
            } else {
                0
            };
            let mut gid: ibv_gid = std::mem::zeroed();
            if roce && (self.lib.query_gid)(self.ctx, port, gid_index, &mut gid) != 0 {
                return Err(failed("ibv_query_gid"));
            }
            self.pd = (self.lib.alloc_pd)(self.ctx);
            if self.pd.is_null() {
                return Err(failed("ibv_alloc_pd"));
            }
            self.cq =
                (self.lib.create_cq)(self.ctx, (MAX_WR * 4) as c_int, null_mut(), null_mut(), 0);
            if self.cq.is_null() {
                return Err(failed("ibv_create_cq"));
            }
            for qp in [&mut self.qp_a, &mut self.qp_b] {
                let mut ia: ibv_qp_init_attr = std::mem::zeroed();
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
                *qp = (self.lib.create_qp)(self.pd, &mut ia);
                if qp.is_null() {
                    return Err(failed("ibv_create_qp"));
                }
            }
            let access =
                (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) as u32;
            for (me, peer) in [(self.qp_a, self.qp_b), (self.qp_b, self.qp_a)] {
                let mut a: ibv_qp_attr = std::mem::zeroed();
                a.qp_state = IBV_QPS_INIT;
                a.port_num = port;
                a.qp_access_flags = access;
                if (self.lib.modify_qp)(
                    me,
                    &mut a,
                    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                ) != 0
                {
                    return Err(failed("ibv_modify_qp(INIT)"));
                }
                let mut a: ibv_qp_attr = std::mem::zeroed();
                a.qp_state = IBV_QPS_RTR;
                a.path_mtu = if pa.active_mtu == 0 {
                    IBV_MTU_1024
                } else {
                    pa.active_mtu
                };
                a.dest_qp_num = (*peer).qp_num;
                a.max_dest_rd_atomic = 16;
                a.min_rnr_timer = 12;
                a.ah_attr.dlid = pa.lid;
                a.ah_attr.port_num = port;
                if roce {
                    a.ah_attr.is_global = 1;
                    a.ah_attr.grh.dgid = gid;
                    a.ah_attr.grh.sgid_index = gid_index as u8;
                    a.ah_attr.grh.hop_limit = 1;
                }
                let mask = IBV_QP_STATE
                    | IBV_QP_AV
                    | IBV_QP_PATH_MTU
                    | IBV_QP_DEST_QPN
                    | IBV_QP_RQ_PSN
                    | IBV_QP_MAX_DEST_RD_ATOMIC
                    | IBV_QP_MIN_RNR_TIMER;
                if (self.lib.modify_qp)(me, &mut a, mask) != 0 {
                    return Err(failed("ibv_modify_qp(RTR)"));
                }
                let mut a: ibv_qp_attr = std::mem::zeroed();
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
                if (self.lib.modify_qp)(me, &mut a, mask) != 0 {
                    return Err(failed("ibv_modify_qp(RTS)"));
                }
            }
        }
        Ok(())
    }

    fn reg_plain(&mut self, buf: &dyn Buffer, access: c_int) -> Result<*mut ibv_mr, i32> {
        // SAFETY: pd is live; the buffer outlives the registration.
        let mr = unsafe {
            match self.lib.reg_mr_iova2 {
                Some(f) => f(
                    self.pd,
                    buf.addr() as *mut c_void,
                    buf.len(),
                    buf.addr(),
                    access as u32,
                ),
                None => (self.lib.reg_mr)(
                    self.pd,
                    buf.addr() as *mut c_void,
                    buf.len(),
                    access & !IBV_ACCESS_RELAXED_ORDERING,
                ),
            }
        };
        if mr.is_null() { Err(errno()) } else { Ok(mr) }
    }
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

impl Fabric for VerbsFabric {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn line_rate_gbytes(&self) -> Option<f64> {
        self.rate_gbytes
    }
    fn max_outstanding(&self) -> usize {
        MAX_WR
    }
    fn register(&mut self, buf: &mut dyn Buffer) -> Result<Registered, Vec<RegAttempt>> {
        let access = IBV_ACCESS_LOCAL_WRITE
            | IBV_ACCESS_REMOTE_WRITE
            | IBV_ACCESS_REMOTE_READ
            | IBV_ACCESS_RELAXED_ORDERING;
        let mut attempts = Vec::new();
        let mut chosen: Option<(*mut ibv_mr, &str)> = None;
        if buf.kind() == MemoryKind::Cuda {
            match (buf.dmabuf(), self.lib.reg_dmabuf_mr) {
                (Err(why), _) => attempts.push(RegAttempt::failed(
                    "dmabuf",
                    None,
                    &format!("not tried: {why}"),
                )),
                (Ok(_), None) => attempts.push(RegAttempt::failed(
                    "dmabuf",
                    Some(libc::EOPNOTSUPP),
                    "this libibverbs has no ibv_reg_dmabuf_mr (rdma-core < 34)",
                )),
                (Ok(d), Some(f)) => {
                    // SAFETY: pd is live; fd/offset describe the buffer's exported range.
                    let mut mr =
                        unsafe { f(self.pd, d.offset, buf.len(), buf.addr(), d.fd, access) };
                    if mr.is_null() && errno() == libc::EINVAL {
                        // Older stacks reject the optional relaxed-ordering flag here.
                        // SAFETY: as above.
                        mr = unsafe {
                            f(
                                self.pd,
                                d.offset,
                                buf.len(),
                                buf.addr(),
                                d.fd,
                                access & !IBV_ACCESS_RELAXED_ORDERING,
                            )
                        };
                    }
                    if mr.is_null() {
                        attempts.push(RegAttempt::failed(
                            "dmabuf",
                            Some(errno()),
                            "ibv_reg_dmabuf_mr",
                        ));
                    } else {
                        attempts.push(RegAttempt::ok("dmabuf"));
                        chosen = Some((mr, "dmabuf"));
                    }
                }
            }
            // Always try the peer-memory path too, so the report says whether it works.
            match self.reg_plain(buf, access) {
                Ok(mr) => {
                    attempts.push(RegAttempt::ok("peer"));
                    if chosen.is_none() {
                        chosen = Some((mr, "peer"));
                    } else {
                        // SAFETY: mr was just registered and is not used.
                        unsafe { (self.lib.dereg_mr)(mr) };
                    }
                }
                Err(e) => attempts.push(RegAttempt::failed(
                    "peer",
                    Some(e),
                    "ibv_reg_mr on the device pointer",
                )),
            }
        } else {
            match self.reg_plain(buf, access) {
                Ok(mr) => {
                    attempts.push(RegAttempt::ok("host"));
                    chosen = Some((mr, "host"));
                }
                Err(e) => attempts.push(RegAttempt::failed("host", Some(e), "ibv_reg_mr")),
            }
        }
        match chosen {
            Some((mr, method)) => {
                self.mrs.push(Some((mr, buf.addr(), buf.len())));
                Ok(Registered {
                    handle: self.mrs.len() - 1,
                    method: method.into(),
                    attempts,
                })
            }
            None => Err(attempts),
        }
    }
    fn deregister(&mut self, handle: usize) {
        if let Some(slot) = self.mrs.get_mut(handle)
            && let Some((mr, _, _)) = slot.take()
        {
            // SAFETY: mr is a live registration of this fabric.
            unsafe { (self.lib.dereg_mr)(mr) };
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
        let (Some(Some((lmr, laddr, llen))), Some(Some((rmr, raddr, rlen)))) =
            (self.mrs.get(local).copied(), self.mrs.get(remote).copied())
        else {
            return Err("post on an unknown registration".into());
        };
        if local_off + len > llen || remote_off + len > rlen {
            return Err("post past the end of a registered buffer".into());
        }
        let len32 = u32::try_from(len).map_err(|_| "message larger than 4 GiB")?;
        // SAFETY: the MRs are live; the WR and SGE live on the stack for the call only, as
        // ibv_post_send copies them into the send queue.
        unsafe {
            let mut sge = ibv_sge {
                addr: laddr + local_off as u64,
                length: len32,
                lkey: (*lmr).lkey,
            };
            let mut wr: ibv_send_wr = std::mem::zeroed();
            wr.wr_id = wr_id;
            wr.sg_list = &mut sge;
            wr.num_sge = 1;
            wr.opcode = match op {
                Op::Write => IBV_WR_RDMA_WRITE,
                Op::Read => IBV_WR_RDMA_READ,
            };
            wr.send_flags = IBV_SEND_SIGNALED;
            // wr.rdma.remote_addr (u64 at 0) and wr.rdma.rkey (u32 at 8), as in the header.
            let base = wr.wr.as_mut_ptr() as *mut u8;
            std::ptr::write_unaligned(
                base.add(WR_RDMA_REMOTE_ADDR) as *mut u64,
                raddr + remote_off as u64,
            );
            std::ptr::write_unaligned(base.add(WR_RDMA_RKEY) as *mut u32, (*rmr).rkey);
            let mut bad = null_mut();
            let post = (*self.ctx)
                .ops
                .post_send
                .ok_or("post_send missing from ibv_context_ops")?;
            match post(self.qp_a, &mut wr, &mut bad) {
                0 => Ok(Posted::Yes),
                libc::ENOMEM => Ok(Posted::Busy),
                e => Err(format!(
                    "ibv_post_send: {}",
                    std::io::Error::from_raw_os_error(e)
                )),
            }
        }
    }
    fn poll(&mut self, out: &mut Vec<Completion>) -> Result<(), String> {
        // SAFETY: cq is live; wcs has room for 16 entries.
        unsafe {
            let mut wcs: [ibv_wc; 16] = std::mem::zeroed();
            let poll = (*self.ctx)
                .ops
                .poll_cq
                .ok_or("poll_cq missing from ibv_context_ops")?;
            let n = poll(self.cq, 16, wcs.as_mut_ptr());
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
        }
        Ok(())
    }
}

impl Drop for VerbsFabric {
    fn drop(&mut self) {
        // SAFETY: every pointer is null or a live object created by this value, released in
        // dependency order.
        unsafe {
            for qp in [self.qp_a, self.qp_b] {
                if !qp.is_null() {
                    (self.lib.destroy_qp)(qp);
                }
            }
            for (mr, _, _) in self.mrs.drain(..).flatten() {
                (self.lib.dereg_mr)(mr);
            }
            if !self.cq.is_null() {
                (self.lib.destroy_cq)(self.cq);
            }
            if !self.pd.is_null() {
                (self.lib.dealloc_pd)(self.pd);
            }
            if !self.ctx.is_null() {
                (self.lib.close_device)(self.ctx);
            }
        }
    }
}
