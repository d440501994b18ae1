//! libfabric ABI carried by hand (API 1.17, Debian 12's `libfabric-dev`): the structs the probe
//! reads or passes, the ops tables behind libfabric's `static inline` calls (`fi_domain`,
//! `fi_endpoint`, `fi_mr_reg`, `fi_write`, `fi_read`, `fi_cq_read`, …), and the constants.
//! Checked against the real headers by `tests/probe_layout.rs`.
#![allow(non_camel_case_types)]

use super::layout::{CLayout, LayoutEntry, c_constants, c_struct};
use std::ffi::{c_char, c_int, c_void};

/// `FI_VERSION(1, 17)`: the API version these layouts describe.
pub const FI_API_VERSION: u32 = (1 << 16) | 17;
/// `FI_MSG` (libfabric 1.17 headers).
pub const FI_MSG: u64 = 1 << 1;
/// `FI_RMA` (libfabric 1.17 headers).
pub const FI_RMA: u64 = 1 << 2;
/// `FI_READ` (libfabric 1.17 headers).
pub const FI_READ: u64 = 1 << 8;
/// `FI_WRITE` (libfabric 1.17 headers).
pub const FI_WRITE: u64 = 1 << 9;
/// `FI_RECV` (libfabric 1.17 headers).
pub const FI_RECV: u64 = 1 << 10;
/// `FI_SEND` (libfabric 1.17 headers).
pub const FI_SEND: u64 = 1 << 11;
/// `FI_REMOTE_READ` (libfabric 1.17 headers).
pub const FI_REMOTE_READ: u64 = 1 << 12;
/// `FI_REMOTE_WRITE` (libfabric 1.17 headers).
pub const FI_REMOTE_WRITE: u64 = 1 << 13;
/// `FI_HMEM` (libfabric 1.17 headers).
pub const FI_HMEM: u64 = 1 << 47;
/// `FI_SOURCE` (libfabric 1.17 headers).
pub const FI_SOURCE: u64 = 1 << 57;
/// `FI_CONTEXT` (libfabric 1.17 headers).
pub const FI_CONTEXT: u64 = 1 << 59;
/// `FI_CONTEXT2` (libfabric 1.17 headers).
pub const FI_CONTEXT2: u64 = 1 << 52;
/// `FI_MR_LOCAL` (libfabric 1.17 headers).
pub const FI_MR_LOCAL: c_int = 1 << 2;
/// `FI_MR_VIRT_ADDR` (libfabric 1.17 headers).
pub const FI_MR_VIRT_ADDR: c_int = 1 << 4;
/// `FI_MR_ALLOCATED` (libfabric 1.17 headers).
pub const FI_MR_ALLOCATED: c_int = 1 << 5;
/// `FI_MR_PROV_KEY` (libfabric 1.17 headers).
pub const FI_MR_PROV_KEY: c_int = 1 << 6;
/// `FI_MR_ENDPOINT` (libfabric 1.17 headers).
pub const FI_MR_ENDPOINT: c_int = 1 << 9;
/// `FI_MR_HMEM` (libfabric 1.17 headers).
pub const FI_MR_HMEM: c_int = 1 << 10;
/// `FI_EP_MSG` (libfabric 1.17 headers).
pub const FI_EP_MSG: u32 = 1;
/// `FI_SOCKADDR_IN` (libfabric 1.17 headers).
pub const FI_SOCKADDR_IN: u32 = 2;
/// `FI_CQ_FORMAT_CONTEXT` (libfabric 1.17 headers).
pub const FI_CQ_FORMAT_CONTEXT: u32 = 1;
/// `FI_WAIT_NONE` (libfabric 1.17 headers).
pub const FI_WAIT_NONE: u32 = 0;
/// `FI_WAIT_UNSPEC` (libfabric 1.17 headers).
pub const FI_WAIT_UNSPEC: u32 = 1;
/// `FI_CONNREQ` (libfabric 1.17 headers).
pub const FI_CONNREQ: u32 = 1;
/// `FI_CONNECTED` (libfabric 1.17 headers).
pub const FI_CONNECTED: u32 = 2;
/// `FI_SHUTDOWN` (libfabric 1.17 headers).
pub const FI_SHUTDOWN: u32 = 3;
/// `FI_ENABLE` (libfabric 1.17 headers).
pub const FI_ENABLE: c_int = 6;
/// `FI_HMEM_SYSTEM` (libfabric 1.17 headers).
pub const FI_HMEM_SYSTEM: u32 = 0;
/// `FI_HMEM_CUDA` (libfabric 1.17 headers).
pub const FI_HMEM_CUDA: u32 = 1;
/// `FI_EAGAIN` (libfabric 1.17 headers).
pub const FI_EAGAIN: isize = 11;
/// `FI_EAVAIL` (libfabric 1.17 headers).
pub const FI_EAVAIL: isize = 259;
/// `FI_ADDR_UNSPEC` (libfabric 1.17 headers).
pub const FI_ADDR_UNSPEC: u64 = u64::MAX;
/// `FI_COMPLETION` (libfabric 1.17 headers): the operation generates a completion.
pub const FI_COMPLETION: u64 = 1 << 24;
/// `FI_DELIVERY_COMPLETE` (libfabric 1.17 headers): the completion is reported once the data
/// has been placed in the target's memory (the tcp provider waits for the target's ack).
pub const FI_DELIVERY_COMPLETE: u64 = 1 << 28;
/// `FI_THREAD_SAFE` (`enum fi_threading`, libfabric 1.17 headers).
pub const FI_THREAD_SAFE: u32 = 1;
/// `FI_THREAD_FID` (`enum fi_threading`, libfabric 1.17 headers).
pub const FI_THREAD_FID: u32 = 2;
/// `FI_THREAD_COMPLETION` (`enum fi_threading`, libfabric 1.17 headers).
pub const FI_THREAD_COMPLETION: u32 = 4;
/// `FI_THREAD_ENDPOINT` (`enum fi_threading`, libfabric 1.17 headers).
pub const FI_THREAD_ENDPOINT: u32 = 5;

/// Signature of `fi_getinfo` (libfabric 1.17 headers).
pub type fi_getinfo_fn = unsafe extern "C" fn(
    u32,
    *const c_char,
    *const c_char,
    u64,
    *const fi_info,
    *mut *mut fi_info,
) -> c_int;
/// Signature of `fi_freeinfo` (libfabric 1.17 headers).
pub type fi_freeinfo_fn = unsafe extern "C" fn(*mut fi_info);
/// Signature of `fi_dupinfo` (libfabric 1.17 headers).
pub type fi_dupinfo_fn = unsafe extern "C" fn(*const fi_info) -> *mut fi_info;
/// Signature of `fi_fabric` (libfabric 1.17 headers).
pub type fi_fabric_fn =
    unsafe extern "C" fn(*mut fi_fabric_attr, *mut *mut fid_fabric, *mut c_void) -> c_int;
/// Signature of `fi_strerror` (libfabric 1.17 headers).
pub type fi_strerror_fn = unsafe extern "C" fn(c_int) -> *const c_char;
/// Signature of `fi_version` (libfabric 1.17 headers).
pub type fi_version_fn = unsafe extern "C" fn() -> u32;

type Unused = *const c_void;

c_struct! {
    /// `struct fid`: the header of every libfabric object.
    "struct fid" => pub struct fid {
        pub fclass: usize,
        pub context: *mut c_void,
        pub ops: *mut fi_ops,
    }
}
c_struct! {
    /// `struct fi_ops`: close/bind/control of every object.
    "struct fi_ops" => pub struct fi_ops {
        pub size: usize,
        pub close: Option<unsafe extern "C" fn(*mut fid) -> c_int>,
        pub bind: Option<unsafe extern "C" fn(*mut fid, *mut fid, u64) -> c_int>,
        pub control: Option<unsafe extern "C" fn(*mut fid, c_int, *mut c_void) -> c_int>,
        pub ops_open: Unused,
        pub tostr: Unused,
        pub ops_set: Unused,
    }
}
c_struct! {
    /// `struct fi_info`.
    "struct fi_info" => pub struct fi_info {
        pub next: *mut fi_info,
        pub caps: u64,
        pub mode: u64,
        pub addr_format: u32,
        pub src_addrlen: usize,
        pub dest_addrlen: usize,
        pub src_addr: *mut c_void,
        pub dest_addr: *mut c_void,
        pub handle: *mut fid,
        pub tx_attr: *mut c_void,
        pub rx_attr: *mut c_void,
        pub ep_attr: *mut fi_ep_attr,
        pub domain_attr: *mut fi_domain_attr,
        pub fabric_attr: *mut fi_fabric_attr,
        pub nic: *mut c_void,
    }
}
c_struct! {
    /// `struct fi_ep_attr`.
    "struct fi_ep_attr" => pub struct fi_ep_attr {
        pub r#type: u32,
        pub protocol: u32,
        pub protocol_version: u32,
        pub max_msg_size: usize,
        pub msg_prefix_size: usize,
        pub max_order_raw_size: usize,
        pub max_order_war_size: usize,
        pub max_order_waw_size: usize,
        pub mem_tag_format: u64,
        pub tx_ctx_cnt: usize,
        pub rx_ctx_cnt: usize,
        pub auth_key_size: usize,
        pub auth_key: *mut u8,
    }
}
c_struct! {
    /// `struct fi_domain_attr` (the prefix up to `mr_key_size` is what the probe reads).
    "struct fi_domain_attr" => pub struct fi_domain_attr {
        pub domain: *mut fid_domain,
        pub name: *mut c_char,
        pub threading: u32,
        pub control_progress: u32,
        pub data_progress: u32,
        pub resource_mgmt: u32,
        pub av_type: u32,
        pub mr_mode: c_int,
        pub mr_key_size: usize,
        pub cq_data_size: usize,
        pub cq_cnt: usize,
        pub ep_cnt: usize,
        pub tx_ctx_cnt: usize,
        pub rx_ctx_cnt: usize,
        pub max_ep_tx_ctx: usize,
        pub max_ep_rx_ctx: usize,
        pub max_ep_stx_ctx: usize,
        pub max_ep_srx_ctx: usize,
        pub cntr_cnt: usize,
        pub mr_iov_limit: usize,
        pub caps: u64,
        pub mode: u64,
        pub auth_key: *mut u8,
        pub auth_key_size: usize,
        pub max_err_data: usize,
        pub mr_cnt: usize,
        pub tclass: u32,
    }
}
c_struct! {
    /// `struct fi_fabric_attr`.
    "struct fi_fabric_attr" => pub struct fi_fabric_attr {
        pub fabric: *mut fid_fabric,
        pub name: *mut c_char,
        pub prov_name: *mut c_char,
        pub prov_version: u32,
        pub api_version: u32,
    }
}
c_struct! {
    /// `struct fi_ops_fabric`: `fi_domain`, `fi_passive_ep`, `fi_eq_open`.
    "struct fi_ops_fabric" => pub struct fi_ops_fabric {
        pub size: usize,
        pub domain: Option<unsafe extern "C" fn(*mut fid_fabric, *mut fi_info, *mut *mut fid_domain, *mut c_void) -> c_int>,
        pub passive_ep: Option<unsafe extern "C" fn(*mut fid_fabric, *mut fi_info, *mut *mut fid_pep, *mut c_void) -> c_int>,
        pub eq_open: Option<unsafe extern "C" fn(*mut fid_fabric, *mut fi_eq_attr, *mut *mut fid_eq, *mut c_void) -> c_int>,
        pub wait_open: Unused,
        pub trywait: Unused,
        pub domain2: Unused,
    }
}
c_struct! {
    /// `struct fid_fabric`.
    "struct fid_fabric" => pub struct fid_fabric {
        pub fid: fid,
        pub ops: *mut fi_ops_fabric,
        pub api_version: u32,
    }
}
c_struct! {
    /// `struct fi_ops_domain`: `fi_cq_open`, `fi_endpoint`.
    "struct fi_ops_domain" => pub struct fi_ops_domain {
        pub size: usize,
        pub av_open: Unused,
        pub cq_open: Option<unsafe extern "C" fn(*mut fid_domain, *mut fi_cq_attr, *mut *mut fid_cq, *mut c_void) -> c_int>,
        pub endpoint: Option<unsafe extern "C" fn(*mut fid_domain, *mut fi_info, *mut *mut fid_ep, *mut c_void) -> c_int>,
        pub scalable_ep: Unused,
        pub cntr_open: Unused,
        pub poll_open: Unused,
        pub stx_ctx: Unused,
        pub srx_ctx: Unused,
        pub query_atomic: Unused,
        pub query_collective: Unused,
        pub endpoint2: Unused,
    }
}
c_struct! {
    /// `struct fi_ops_mr`: `fi_mr_reg`, `fi_mr_regattr`.
    "struct fi_ops_mr" => pub struct fi_ops_mr {
        pub size: usize,
        pub reg: Option<unsafe extern "C" fn(*mut fid, *const c_void, usize, u64, u64, u64, u64, *mut *mut fid_mr, *mut c_void) -> c_int>,
        pub regv: Unused,
        pub regattr: Option<unsafe extern "C" fn(*mut fid, *const fi_mr_attr, u64, *mut *mut fid_mr) -> c_int>,
    }
}
c_struct! {
    /// `struct fid_domain`.
    "struct fid_domain" => pub struct fid_domain {
        pub fid: fid,
        pub ops: *mut fi_ops_domain,
        pub mr: *mut fi_ops_mr,
    }
}
c_struct! {
    /// `struct fid_mr`: `fi_mr_desc` and `fi_mr_key` read these fields.
    "struct fid_mr" => pub struct fid_mr {
        pub fid: fid,
        pub mem_desc: *mut c_void,
        pub key: u64,
    }
}
c_struct! {
    /// `struct iovec` as `fi_mr_attr` points to it.
    "struct iovec" => pub struct iovec {
        pub iov_base: *mut c_void,
        pub iov_len: usize,
    }
}
c_struct! {
    /// `struct fi_mr_attr` (1.17: no dma-buf member; that arrived in 1.20).
    "struct fi_mr_attr" => pub struct fi_mr_attr {
        pub mr_iov: *const iovec,
        pub iov_count: usize,
        pub access: u64,
        pub offset: u64,
        pub requested_key: u64,
        pub context: *mut c_void,
        pub auth_key_size: usize,
        pub auth_key: *mut u8,
        pub iface: u32,
        pub device: u64,
    }
}
c_struct! {
    /// `struct fi_ops_ep`.
    "struct fi_ops_ep" => pub struct fi_ops_ep {
        pub size: usize,
        pub cancel: Unused,
        pub getopt: Unused,
        pub setopt: Unused,
        pub tx_ctx: Unused,
        pub rx_ctx: Unused,
        pub rx_size_left: Unused,
        pub tx_size_left: Unused,
    }
}
c_struct! {
    /// `struct fi_ops_cm`: `fi_getname`, `fi_connect`, `fi_listen`, `fi_accept`, `fi_reject`,
    /// `fi_shutdown`.
    "struct fi_ops_cm" => pub struct fi_ops_cm {
        pub size: usize,
        pub setname: Unused,
        pub getname: Option<unsafe extern "C" fn(*mut fid, *mut c_void, *mut usize) -> c_int>,
        pub getpeer: Unused,
        pub connect: Option<unsafe extern "C" fn(*mut fid_ep, *const c_void, *const c_void, usize) -> c_int>,
        pub listen: Option<unsafe extern "C" fn(*mut fid_pep) -> c_int>,
        pub accept: Option<unsafe extern "C" fn(*mut fid_ep, *const c_void, usize) -> c_int>,
        pub reject: Option<unsafe extern "C" fn(*mut fid_pep, *mut fid, *const c_void, usize) -> c_int>,
        pub shutdown: Option<unsafe extern "C" fn(*mut fid_ep, u64) -> c_int>,
        pub join: Unused,
    }
}
/// `fi_read`/`fi_write` signature: `(ep, buf, len, desc, addr, remote_addr, key, context)`.
pub type fi_rma_fn = unsafe extern "C" fn(
    *mut fid_ep,
    *mut c_void,
    usize,
    *mut c_void,
    u64,
    u64,
    u64,
    *mut c_void,
) -> isize;
c_struct! {
    /// `struct fi_ops_rma`: `fi_read`, `fi_write`, `fi_writemsg`.
    "struct fi_ops_rma" => pub struct fi_ops_rma {
        pub size: usize,
        pub read: Option<fi_rma_fn>,
        pub readv: Unused,
        pub readmsg: Unused,
        pub write: Option<fi_rma_fn>,
        pub writev: Unused,
        pub writemsg: Option<fi_rma_msg_fn>,
        pub inject: Unused,
        pub writedata: Unused,
        pub injectdata: Unused,
    }
}
c_struct! {
    /// `struct fi_rma_iov`: one range of the target's registered memory.
    "struct fi_rma_iov" => pub struct fi_rma_iov {
        pub addr: u64,
        pub len: usize,
        pub key: u64,
    }
}
c_struct! {
    /// `struct fi_msg_rma`: an RMA operation as `fi_writemsg` takes it.
    "struct fi_msg_rma" => pub struct fi_msg_rma {
        pub msg_iov: *const iovec,
        pub desc: *mut *mut c_void,
        pub iov_count: usize,
        pub addr: u64,
        pub rma_iov: *const fi_rma_iov,
        pub rma_iov_count: usize,
        pub context: *mut c_void,
        pub data: u64,
    }
}
/// Signature of `fi_writemsg` as its ops-table entry (libfabric 1.17 headers).
pub type fi_rma_msg_fn = unsafe extern "C" fn(*mut fid_ep, *const fi_msg_rma, u64) -> isize;
c_struct! {
    /// `struct fid_ep`.
    "struct fid_ep" => pub struct fid_ep {
        pub fid: fid,
        pub ops: *mut fi_ops_ep,
        pub cm: *mut fi_ops_cm,
        pub msg: Unused,
        pub rma: *mut fi_ops_rma,
        pub tagged: Unused,
        pub atomic: Unused,
        pub collective: Unused,
    }
}
c_struct! {
    /// `struct fid_pep`.
    "struct fid_pep" => pub struct fid_pep {
        pub fid: fid,
        pub ops: *mut fi_ops_ep,
        pub cm: *mut fi_ops_cm,
    }
}
c_struct! {
    /// `struct fi_eq_attr`.
    "struct fi_eq_attr" => pub struct fi_eq_attr {
        pub size: usize,
        pub flags: u64,
        pub wait_obj: u32,
        pub signaling_vector: c_int,
        pub wait_set: *mut c_void,
    }
}
c_struct! {
    /// `struct fi_ops_eq`: `fi_eq_read`, `fi_eq_readerr`.
    "struct fi_ops_eq" => pub struct fi_ops_eq {
        pub size: usize,
        pub read: Option<unsafe extern "C" fn(*mut fid_eq, *mut u32, *mut c_void, usize, u64) -> isize>,
        pub readerr: Option<unsafe extern "C" fn(*mut fid_eq, *mut fi_eq_err_entry, u64) -> isize>,
        pub write: Unused,
        pub sread: Unused,
        pub strerror: Unused,
    }
}
c_struct! {
    /// `struct fid_eq`.
    "struct fid_eq" => pub struct fid_eq {
        pub fid: fid,
        pub ops: *mut fi_ops_eq,
    }
}
c_struct! {
    /// `struct fi_eq_cm_entry` (header; connection data follows).
    "struct fi_eq_cm_entry" => pub struct fi_eq_cm_entry {
        pub fid: *mut fid,
        pub info: *mut fi_info,
    }
}
c_struct! {
    /// `struct fi_eq_err_entry`.
    "struct fi_eq_err_entry" => pub struct fi_eq_err_entry {
        pub fid: *mut fid,
        pub context: *mut c_void,
        pub data: u64,
        pub err: c_int,
        pub prov_errno: c_int,
        pub err_data: *mut c_void,
        pub err_data_size: usize,
    }
}
c_struct! {
    /// `struct fi_cq_attr`.
    "struct fi_cq_attr" => pub struct fi_cq_attr {
        pub size: usize,
        pub flags: u64,
        pub format: u32,
        pub wait_obj: u32,
        pub signaling_vector: c_int,
        pub wait_cond: u32,
        pub wait_set: *mut c_void,
    }
}
c_struct! {
    /// `struct fi_ops_cq`: `fi_cq_read`, `fi_cq_readerr`.
    "struct fi_ops_cq" => pub struct fi_ops_cq {
        pub size: usize,
        pub read: Option<unsafe extern "C" fn(*mut fid_cq, *mut c_void, usize) -> isize>,
        pub readfrom: Unused,
        pub readerr: Option<unsafe extern "C" fn(*mut fid_cq, *mut fi_cq_err_entry, u64) -> isize>,
        pub sread: Unused,
        pub sreadfrom: Unused,
        pub signal: Unused,
        pub strerror: Unused,
    }
}
c_struct! {
    /// `struct fid_cq`.
    "struct fid_cq" => pub struct fid_cq {
        pub fid: fid,
        pub ops: *mut fi_ops_cq,
    }
}
c_struct! {
    /// `struct fi_cq_entry` (`FI_CQ_FORMAT_CONTEXT`).
    "struct fi_cq_entry" => pub struct fi_cq_entry {
        pub op_context: *mut c_void,
    }
}
c_struct! {
    /// `struct fi_cq_err_entry`.
    "struct fi_cq_err_entry" => pub struct fi_cq_err_entry {
        pub op_context: *mut c_void,
        pub flags: u64,
        pub len: usize,
        pub buf: *mut c_void,
        pub data: u64,
        pub tag: u64,
        pub olen: usize,
        pub err: c_int,
        pub prov_errno: c_int,
        pub err_data: *mut c_void,
        pub err_data_size: usize,
    }
}
c_struct! {
    /// `struct fi_context2`: per-operation provider scratch space (mode `FI_CONTEXT2`).
    "struct fi_context2" => pub struct fi_context2 {
        pub internal: [*mut c_void; 8],
    }
}
c_struct! {
    /// `struct sockaddr_in` (`FI_SOCKADDR_IN` addresses).
    "struct sockaddr_in" => pub struct sockaddr_in {
        pub sin_family: u16,
        pub sin_port: u16,
        pub sin_addr: u32,
        pub sin_zero: [u8; 8],
    }
}

/// Layout entries for every struct and constant above.
pub fn layout_entries() -> Vec<LayoutEntry> {
    let mut v = Vec::new();
    fid::c_layout(&mut v);
    fi_ops::c_layout(&mut v);
    fi_info::c_layout(&mut v);
    fi_ep_attr::c_layout(&mut v);
    fi_domain_attr::c_layout(&mut v);
    fi_fabric_attr::c_layout(&mut v);
    fi_ops_fabric::c_layout(&mut v);
    fid_fabric::c_layout(&mut v);
    fi_ops_domain::c_layout(&mut v);
    fi_ops_mr::c_layout(&mut v);
    fid_domain::c_layout(&mut v);
    fid_mr::c_layout(&mut v);
    iovec::c_layout(&mut v);
    fi_mr_attr::c_layout(&mut v);
    fi_ops_ep::c_layout(&mut v);
    fi_ops_cm::c_layout(&mut v);
    fi_ops_rma::c_layout(&mut v);
    fi_rma_iov::c_layout(&mut v);
    fi_msg_rma::c_layout(&mut v);
    fid_ep::c_layout(&mut v);
    fid_pep::c_layout(&mut v);
    fi_eq_attr::c_layout(&mut v);
    fi_ops_eq::c_layout(&mut v);
    fid_eq::c_layout(&mut v);
    fi_eq_cm_entry::c_layout(&mut v);
    fi_eq_err_entry::c_layout(&mut v);
    fi_cq_attr::c_layout(&mut v);
    fi_ops_cq::c_layout(&mut v);
    fid_cq::c_layout(&mut v);
    fi_cq_entry::c_layout(&mut v);
    fi_cq_err_entry::c_layout(&mut v);
    fi_context2::c_layout(&mut v);
    sockaddr_in::c_layout(&mut v);
    v.push(LayoutEntry::constant(
        "FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)",
        FI_API_VERSION as u64,
    ));
    // FI_TRANSMIT is FI_SEND's alias for binding a CQ's transmit side.
    v.push(LayoutEntry::constant("FI_TRANSMIT", FI_SEND));
    v.push(LayoutEntry::constant("AF_INET", libc::AF_INET as u64));
    c_constants!(v;
        FI_MSG, FI_RMA, FI_READ, FI_WRITE, FI_RECV, FI_SEND, FI_REMOTE_READ, FI_REMOTE_WRITE,
        FI_HMEM, FI_SOURCE, FI_CONTEXT, FI_CONTEXT2, FI_MR_LOCAL, FI_MR_VIRT_ADDR,
        FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_ENDPOINT, FI_MR_HMEM, FI_EP_MSG, FI_SOCKADDR_IN,
        FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_CONNREQ, FI_CONNECTED,
        FI_SHUTDOWN, FI_ENABLE, FI_HMEM_SYSTEM, FI_HMEM_CUDA, FI_EAGAIN, FI_EAVAIL,
        FI_ADDR_UNSPEC, FI_COMPLETION, FI_DELIVERY_COMPLETE, FI_THREAD_SAFE, FI_THREAD_FID,
        FI_THREAD_COMPLETION, FI_THREAD_ENDPOINT,
    );
    v
}
