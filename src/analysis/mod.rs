//! Analyses: pure functions of the [`crate::model::Topology`] (plus probe evidence) that judge it.
//! `classify` labels every endpoint pair the way `nvidia-smi topo -m` and NCCL would; `place`
//! plans ranks over those labels; `rails` draws the scale-up boundary; `cores` numbers CPU cores.
//! `audit` checks the node for every known cause of a silent GPUDirect RDMA fallback; `diff`
//! and `fleet` compare nodes by role; `pairing` decides which devices pair up for the picture's
//! rail lines and gres.conf's `Links=`; `nvcx` finds NVIDIA's ConnectX–GPU complexes (Data
//! Direct, inline, NUMA) and the ACS each of their ports needs; `launch` picks the local rank
//! and checks the CPUs before `peerpath launch` binds; `settings` reads the job's NCCL settings
//! as NCCL does and `design` recognises the node's platform and its documented settings.
//! Analyses return data; renderers write their text.

pub mod audit;
pub mod cabling;
pub mod classify;
pub mod cores;
pub mod design;
pub mod diff;
pub mod evidence;
pub mod fleet;
pub mod launch;
pub mod nccl;
pub mod nvcx;
pub mod nvdomain;
pub mod nvlink;
pub mod pairing;
pub mod paths;
pub mod place;
pub mod probe_report;
pub mod rails;
pub mod rocm_topo;
pub mod schedtopo;
pub mod settings;
pub mod storage;

pub mod testkit;
