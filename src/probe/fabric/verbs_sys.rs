//! libibverbs ABI carried by hand (rdma-core 44, Debian 12's `libibverbs-dev`), as NCCL does:
//! the structs the probe passes or reads, `struct ibv_context_ops` (behind the `static inline`
//! `ibv_post_send` and `ibv_poll_cq`), and the constants. Checked against the real header by
//! `tests/probe_layout.rs`.
#![allow(non_camel_case_types)]

use super::layout::{CLayout, LayoutEntry, c_constants, c_struct};
use std::ffi::{c_char, c_int, c_uint, c_void};

/// `IBV_ACCESS_LOCAL_WRITE` (<infiniband/verbs.h>).
pub const IBV_ACCESS_LOCAL_WRITE: c_int = 1;
/// `IBV_ACCESS_REMOTE_WRITE` (<infiniband/verbs.h>).
pub const IBV_ACCESS_REMOTE_WRITE: c_int = 1 << 1;
/// `IBV_ACCESS_REMOTE_READ` (<infiniband/verbs.h>).
pub const IBV_ACCESS_REMOTE_READ: c_int = 1 << 2;
/// `IBV_ACCESS_RELAXED_ORDERING` (<infiniband/verbs.h>).
pub const IBV_ACCESS_RELAXED_ORDERING: c_int = 1 << 20;
/// `IBV_QPT_RC` (<infiniband/verbs.h>).
pub const IBV_QPT_RC: u32 = 2;
/// `IBV_QPS_INIT` (<infiniband/verbs.h>).
pub const IBV_QPS_INIT: u32 = 1;
/// `IBV_QPS_RTR` (<infiniband/verbs.h>).
pub const IBV_QPS_RTR: u32 = 2;
/// `IBV_QPS_RTS` (<infiniband/verbs.h>).
pub const IBV_QPS_RTS: u32 = 3;
/// `IBV_MTU_1024` (<infiniband/verbs.h>).
pub const IBV_MTU_1024: u32 = 3;
/// `IBV_QP_STATE` (<infiniband/verbs.h>).
pub const IBV_QP_STATE: c_int = 1;
/// `IBV_QP_ACCESS_FLAGS` (<infiniband/verbs.h>).
pub const IBV_QP_ACCESS_FLAGS: c_int = 1 << 3;
/// `IBV_QP_PKEY_INDEX` (<infiniband/verbs.h>).
pub const IBV_QP_PKEY_INDEX: c_int = 1 << 4;
/// `IBV_QP_PORT` (<infiniband/verbs.h>).
pub const IBV_QP_PORT: c_int = 1 << 5;
/// `IBV_QP_AV` (<infiniband/verbs.h>).
pub const IBV_QP_AV: c_int = 1 << 7;
/// `IBV_QP_PATH_MTU` (<infiniband/verbs.h>).
pub const IBV_QP_PATH_MTU: c_int = 1 << 8;
/// `IBV_QP_TIMEOUT` (<infiniband/verbs.h>).
pub const IBV_QP_TIMEOUT: c_int = 1 << 9;
/// `IBV_QP_RETRY_CNT` (<infiniband/verbs.h>).
pub const IBV_QP_RETRY_CNT: c_int = 1 << 10;
/// `IBV_QP_RNR_RETRY` (<infiniband/verbs.h>).
pub const IBV_QP_RNR_RETRY: c_int = 1 << 11;
/// `IBV_QP_RQ_PSN` (<infiniband/verbs.h>).
pub const IBV_QP_RQ_PSN: c_int = 1 << 12;
/// `IBV_QP_MAX_QP_RD_ATOMIC` (<infiniband/verbs.h>).
pub const IBV_QP_MAX_QP_RD_ATOMIC: c_int = 1 << 13;
/// `IBV_QP_MIN_RNR_TIMER` (<infiniband/verbs.h>).
pub const IBV_QP_MIN_RNR_TIMER: c_int = 1 << 15;
/// `IBV_QP_SQ_PSN` (<infiniband/verbs.h>).
pub const IBV_QP_SQ_PSN: c_int = 1 << 16;
/// `IBV_QP_MAX_DEST_RD_ATOMIC` (<infiniband/verbs.h>).
pub const IBV_QP_MAX_DEST_RD_ATOMIC: c_int = 1 << 17;
/// `IBV_QP_DEST_QPN` (<infiniband/verbs.h>).
pub const IBV_QP_DEST_QPN: c_int = 1 << 20;
/// `IBV_WR_RDMA_WRITE` (<infiniband/verbs.h>).
pub const IBV_WR_RDMA_WRITE: u32 = 0;
/// `IBV_WR_RDMA_READ` (<infiniband/verbs.h>).
pub const IBV_WR_RDMA_READ: u32 = 4;
/// `IBV_SEND_SIGNALED` (<infiniband/verbs.h>).
pub const IBV_SEND_SIGNALED: c_uint = 1 << 1;
/// `IBV_WC_SUCCESS` (<infiniband/verbs.h>).
pub const IBV_WC_SUCCESS: u32 = 0;
/// `IBV_PORT_ACTIVE` (<infiniband/verbs.h>).
pub const IBV_PORT_ACTIVE: u32 = 4;
/// `IBV_LINK_LAYER_ETHERNET` (<infiniband/verbs.h>).
pub const IBV_LINK_LAYER_ETHERNET: u8 = 2;

/// Signature of `ibv_get_device_list` (<infiniband/verbs.h>).
pub type ibv_get_device_list_fn = unsafe extern "C" fn(*mut c_int) -> *mut *mut c_void;
/// Signature of `ibv_free_device_list` (<infiniband/verbs.h>).
pub type ibv_free_device_list_fn = unsafe extern "C" fn(*mut *mut c_void);
/// Signature of `ibv_get_device_name` (<infiniband/verbs.h>).
pub type ibv_get_device_name_fn = unsafe extern "C" fn(*mut c_void) -> *const c_char;
/// Signature of `ibv_open_device` (<infiniband/verbs.h>).
pub type ibv_open_device_fn = unsafe extern "C" fn(*mut c_void) -> *mut ibv_context;
/// Signature of `ibv_close_device` (<infiniband/verbs.h>).
pub type ibv_close_device_fn = unsafe extern "C" fn(*mut ibv_context) -> c_int;
/// Signature of `ibv_query_port` (<infiniband/verbs.h>).
pub type ibv_query_port_fn =
    unsafe extern "C" fn(*mut ibv_context, u8, *mut ibv_port_attr) -> c_int;
/// Signature of `ibv_query_gid` (<infiniband/verbs.h>).
pub type ibv_query_gid_fn =
    unsafe extern "C" fn(*mut ibv_context, u8, c_int, *mut ibv_gid) -> c_int;
/// Signature of `ibv_alloc_pd` (<infiniband/verbs.h>).
pub type ibv_alloc_pd_fn = unsafe extern "C" fn(*mut ibv_context) -> *mut ibv_pd;
/// Signature of `ibv_dealloc_pd` (<infiniband/verbs.h>).
pub type ibv_dealloc_pd_fn = unsafe extern "C" fn(*mut ibv_pd) -> c_int;
/// Signature of `ibv_reg_mr` (<infiniband/verbs.h>).
pub type ibv_reg_mr_fn =
    unsafe extern "C" fn(*mut ibv_pd, *mut c_void, usize, c_int) -> *mut ibv_mr;
/// Signature of `ibv_reg_dmabuf_mr` (<infiniband/verbs.h>).
pub type ibv_reg_dmabuf_mr_fn =
    unsafe extern "C" fn(*mut ibv_pd, u64, usize, u64, c_int, c_int) -> *mut ibv_mr;
/// Signature of `ibv_reg_mr_iova2` (<infiniband/verbs.h>, rdma-core ≥ 29).
pub type ibv_reg_mr_iova2_fn =
    unsafe extern "C" fn(*mut ibv_pd, *mut c_void, usize, u64, c_uint) -> *mut ibv_mr;
/// Signature of `ibv_dereg_mr` (<infiniband/verbs.h>).
pub type ibv_dereg_mr_fn = unsafe extern "C" fn(*mut ibv_mr) -> c_int;
/// Signature of `ibv_create_cq` (<infiniband/verbs.h>).
pub type ibv_create_cq_fn =
    unsafe extern "C" fn(*mut ibv_context, c_int, *mut c_void, *mut c_void, c_int) -> *mut ibv_cq;
/// Signature of `ibv_destroy_cq` (<infiniband/verbs.h>).
pub type ibv_destroy_cq_fn = unsafe extern "C" fn(*mut ibv_cq) -> c_int;
/// Signature of `ibv_create_qp` (<infiniband/verbs.h>).
pub type ibv_create_qp_fn = unsafe extern "C" fn(*mut ibv_pd, *mut ibv_qp_init_attr) -> *mut ibv_qp;
/// Signature of `ibv_modify_qp` (<infiniband/verbs.h>).
pub type ibv_modify_qp_fn = unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int) -> c_int;
/// Signature of `ibv_destroy_qp` (<infiniband/verbs.h>).
pub type ibv_destroy_qp_fn = unsafe extern "C" fn(*mut ibv_qp) -> c_int;

type Unused = *const c_void;

c_struct! {
    /// `union ibv_gid`, as its 8-byte-aligned `global` view.
    "union ibv_gid" => pub struct ibv_gid {
        pub raw: [u64; 2],
    }
}
c_struct! {
    /// `struct ibv_context_ops`: `poll_cq` and `post_send` are what the inline wrappers call.
    "struct ibv_context_ops" => pub struct ibv_context_ops {
        pub _compat_query_device: Unused,
        pub _compat_query_port: Unused,
        pub _compat_alloc_pd: Unused,
        pub _compat_dealloc_pd: Unused,
        pub _compat_reg_mr: Unused,
        pub _compat_rereg_mr: Unused,
        pub _compat_dereg_mr: Unused,
        pub alloc_mw: Unused,
        pub bind_mw: Unused,
        pub dealloc_mw: Unused,
        pub _compat_create_cq: Unused,
        pub poll_cq: Option<unsafe extern "C" fn(*mut ibv_cq, c_int, *mut ibv_wc) -> c_int>,
        pub req_notify_cq: Unused,
        pub _compat_cq_event: Unused,
        pub _compat_resize_cq: Unused,
        pub _compat_destroy_cq: Unused,
        pub _compat_create_srq: Unused,
        pub _compat_modify_srq: Unused,
        pub _compat_query_srq: Unused,
        pub _compat_destroy_srq: Unused,
        pub post_srq_recv: Unused,
        pub _compat_create_qp: Unused,
        pub _compat_query_qp: Unused,
        pub _compat_modify_qp: Unused,
        pub _compat_destroy_qp: Unused,
        pub post_send: Option<unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int>,
        pub post_recv: Unused,
        pub _compat_create_ah: Unused,
        pub _compat_destroy_ah: Unused,
        pub _compat_attach_mcast: Unused,
        pub _compat_detach_mcast: Unused,
        pub _compat_async_event: Unused,
    }
}
c_struct! {
    /// `struct ibv_context`.
    "struct ibv_context" => pub struct ibv_context {
        pub device: *mut c_void,
        pub ops: ibv_context_ops,
        pub cmd_fd: c_int,
        pub async_fd: c_int,
        pub num_comp_vectors: c_int,
        pub mutex: libc::pthread_mutex_t,
        pub abi_compat: *mut c_void,
    }
}
c_struct! {
    /// `struct ibv_pd`.
    "struct ibv_pd" => pub struct ibv_pd {
        pub context: *mut ibv_context,
        pub handle: u32,
    }
}
c_struct! {
    /// `struct ibv_mr`: `lkey`/`rkey` go into work requests.
    "struct ibv_mr" => pub struct ibv_mr {
        pub context: *mut ibv_context,
        pub pd: *mut ibv_pd,
        pub addr: *mut c_void,
        pub length: usize,
        pub handle: u32,
        pub lkey: u32,
        pub rkey: u32,
    }
}
c_struct! {
    /// `struct ibv_cq`.
    "struct ibv_cq" => pub struct ibv_cq {
        pub context: *mut ibv_context,
        pub channel: *mut c_void,
        pub cq_context: *mut c_void,
        pub handle: u32,
        pub cqe: c_int,
        pub mutex: libc::pthread_mutex_t,
        pub cond: libc::pthread_cond_t,
        pub comp_events_completed: u32,
        pub async_events_completed: u32,
    }
}
c_struct! {
    /// `struct ibv_qp`: `qp_num` is exchanged between the loopback pair.
    "struct ibv_qp" => pub struct ibv_qp {
        pub context: *mut ibv_context,
        pub qp_context: *mut c_void,
        pub pd: *mut ibv_pd,
        pub send_cq: *mut ibv_cq,
        pub recv_cq: *mut ibv_cq,
        pub srq: *mut c_void,
        pub handle: u32,
        pub qp_num: u32,
        pub state: u32,
        pub qp_type: u32,
        pub mutex: libc::pthread_mutex_t,
        pub cond: libc::pthread_cond_t,
        pub events_completed: u32,
    }
}
c_struct! {
    /// `struct ibv_qp_cap`.
    "struct ibv_qp_cap" => pub struct ibv_qp_cap {
        pub max_send_wr: u32,
        pub max_recv_wr: u32,
        pub max_send_sge: u32,
        pub max_recv_sge: u32,
        pub max_inline_data: u32,
    }
}
c_struct! {
    /// `struct ibv_qp_init_attr`.
    "struct ibv_qp_init_attr" => pub struct ibv_qp_init_attr {
        pub qp_context: *mut c_void,
        pub send_cq: *mut ibv_cq,
        pub recv_cq: *mut ibv_cq,
        pub srq: *mut c_void,
        pub cap: ibv_qp_cap,
        pub qp_type: u32,
        pub sq_sig_all: c_int,
    }
}
c_struct! {
    /// `struct ibv_global_route`.
    "struct ibv_global_route" => pub struct ibv_global_route {
        pub dgid: ibv_gid,
        pub flow_label: u32,
        pub sgid_index: u8,
        pub hop_limit: u8,
        pub traffic_class: u8,
    }
}
c_struct! {
    /// `struct ibv_ah_attr`.
    "struct ibv_ah_attr" => pub struct ibv_ah_attr {
        pub grh: ibv_global_route,
        pub dlid: u16,
        pub sl: u8,
        pub src_path_bits: u8,
        pub static_rate: u8,
        pub is_global: u8,
        pub port_num: u8,
    }
}
c_struct! {
    /// `struct ibv_qp_attr`.
    "struct ibv_qp_attr" => pub struct ibv_qp_attr {
        pub qp_state: u32,
        pub cur_qp_state: u32,
        pub path_mtu: u32,
        pub path_mig_state: u32,
        pub qkey: u32,
        pub rq_psn: u32,
        pub sq_psn: u32,
        pub dest_qp_num: u32,
        pub qp_access_flags: c_uint,
        pub cap: ibv_qp_cap,
        pub ah_attr: ibv_ah_attr,
        pub alt_ah_attr: ibv_ah_attr,
        pub pkey_index: u16,
        pub alt_pkey_index: u16,
        pub en_sqd_async_notify: u8,
        pub sq_draining: u8,
        pub max_rd_atomic: u8,
        pub max_dest_rd_atomic: u8,
        pub min_rnr_timer: u8,
        pub port_num: u8,
        pub timeout: u8,
        pub retry_cnt: u8,
        pub rnr_retry: u8,
        pub alt_port_num: u8,
        pub alt_timeout: u8,
        pub rate_limit: u32,
    }
}
c_struct! {
    /// `struct ibv_sge`.
    "struct ibv_sge" => pub struct ibv_sge {
        pub addr: u64,
        pub length: u32,
        pub lkey: u32,
    }
}
c_struct! {
    /// `struct ibv_send_wr`. The `wr` union is carried as its largest member's size; the probe
    /// writes `wr.rdma.remote_addr` (offset 0) and `wr.rdma.rkey` (offset 8) into it.
    "struct ibv_send_wr" => pub struct ibv_send_wr {
        pub wr_id: u64,
        pub next: *mut ibv_send_wr,
        pub sg_list: *mut ibv_sge,
        pub num_sge: c_int,
        pub opcode: u32,
        pub send_flags: c_uint,
        pub imm_data: u32,
        pub wr: [u64; 4],
        pub qp_type: u32,
        pub bind_mw: [u64; 6],
    }
}
c_struct! {
    /// `struct ibv_wc`.
    "struct ibv_wc" => pub struct ibv_wc {
        pub wr_id: u64,
        pub status: u32,
        pub opcode: u32,
        pub vendor_err: u32,
        pub byte_len: u32,
        pub imm_data: u32,
        pub qp_num: u32,
        pub src_qp: u32,
        pub wc_flags: c_uint,
        pub pkey_index: u16,
        pub slid: u16,
        pub sl: u8,
        pub dlid_path_bits: u8,
    }
}
c_struct! {
    /// `struct ibv_port_attr` (the exported `ibv_query_port` fills its compat prefix).
    "struct ibv_port_attr" => pub struct ibv_port_attr {
        pub state: u32,
        pub max_mtu: u32,
        pub active_mtu: u32,
        pub gid_tbl_len: c_int,
        pub port_cap_flags: u32,
        pub max_msg_sz: u32,
        pub bad_pkey_cntr: u32,
        pub qkey_viol_cntr: u32,
        pub pkey_tbl_len: u16,
        pub lid: u16,
        pub sm_lid: u16,
        pub lmc: u8,
        pub max_vl_num: u8,
        pub sm_sl: u8,
        pub subnet_timeout: u8,
        pub init_type_reply: u8,
        pub active_width: u8,
        pub active_speed: u8,
        pub phys_state: u8,
        pub link_layer: u8,
        pub flags: u8,
        pub port_cap_flags2: u16,
    }
}

/// Offset of `wr.rdma.remote_addr` inside [`ibv_send_wr::wr`].
pub const WR_RDMA_REMOTE_ADDR: usize = 0;
/// Offset of `wr.rdma.rkey` inside [`ibv_send_wr::wr`].
pub const WR_RDMA_RKEY: usize = 8;

/// Layout entries for every struct and constant above.
pub fn layout_entries() -> Vec<LayoutEntry> {
    let mut v = Vec::new();
    ibv_gid::c_layout(&mut v);
    v.retain(|e| !e.expr.starts_with("offsetof(union ibv_gid"));
    v.push(LayoutEntry::offset(
        "union ibv_gid",
        "global.subnet_prefix",
        0,
    ));
    v.push(LayoutEntry::offset(
        "union ibv_gid",
        "global.interface_id",
        8,
    ));
    v.push(LayoutEntry::constant(
        "__alignof__(union ibv_gid)",
        std::mem::align_of::<ibv_gid>() as u64,
    ));
    ibv_context_ops::c_layout(&mut v);
    ibv_context::c_layout(&mut v);
    ibv_pd::c_layout(&mut v);
    ibv_mr::c_layout(&mut v);
    ibv_cq::c_layout(&mut v);
    ibv_qp::c_layout(&mut v);
    ibv_qp_cap::c_layout(&mut v);
    ibv_qp_init_attr::c_layout(&mut v);
    ibv_global_route::c_layout(&mut v);
    ibv_ah_attr::c_layout(&mut v);
    ibv_qp_attr::c_layout(&mut v);
    ibv_sge::c_layout(&mut v);
    ibv_send_wr::c_layout(&mut v);
    let wr = std::mem::offset_of!(ibv_send_wr, wr);
    v.push(LayoutEntry::offset(
        "struct ibv_send_wr",
        "wr.rdma.remote_addr",
        wr + WR_RDMA_REMOTE_ADDR,
    ));
    v.push(LayoutEntry::offset(
        "struct ibv_send_wr",
        "wr.rdma.rkey",
        wr + WR_RDMA_RKEY,
    ));
    v.push(LayoutEntry::constant(
        "sizeof(((struct ibv_send_wr *)0)->wr)",
        std::mem::size_of::<[u64; 4]>() as u64,
    ));
    ibv_wc::c_layout(&mut v);
    ibv_port_attr::c_layout(&mut v);
    c_constants!(v;
        IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ,
        IBV_ACCESS_RELAXED_ORDERING, IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
        IBV_MTU_1024, IBV_QP_STATE, IBV_QP_ACCESS_FLAGS, IBV_QP_PKEY_INDEX, IBV_QP_PORT,
        IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY,
        IBV_QP_RQ_PSN, IBV_QP_MAX_QP_RD_ATOMIC, IBV_QP_MIN_RNR_TIMER, IBV_QP_SQ_PSN,
        IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_DEST_QPN, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
        IBV_SEND_SIGNALED, IBV_WC_SUCCESS, IBV_PORT_ACTIVE, IBV_LINK_LAYER_ETHERNET,
    );
    v
}
