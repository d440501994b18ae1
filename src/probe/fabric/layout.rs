//! Struct layouts and constants carried by hand for the run-time-loaded C libraries
//! (libibverbs, libfabric), and the table that lets a test compare every one of them with the
//! real headers (`tests/probe_layout.rs` compiles a C program printing the same expressions).
//!
//! The values here come from Debian 12's `libibverbs-dev` 44 (`<infiniband/verbs.h>`) and
//! `libfabric-dev` 1.17 (`<rdma/fabric.h>`, `fi_domain.h`, `fi_endpoint.h`, `fi_eq.h`,
//! `fi_cm.h`, `fi_rma.h`, `fi_errno.h`); nothing is generated at build time.

/// One C expression (`sizeof(struct ibv_mr)`, `offsetof(struct ibv_mr, lkey)`, `FI_RMA`) and
/// the value the Rust side assumes for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutEntry {
    /// C expression, evaluated by the layout test as `(unsigned long long)(expr)`.
    pub expr: String,
    /// The Rust value.
    pub value: u64,
}

impl LayoutEntry {
    /// `sizeof(<ctype>)`.
    pub fn size(ctype: &str, v: usize) -> Self {
        LayoutEntry {
            expr: format!("sizeof({ctype})"),
            value: v as u64,
        }
    }
    /// `offsetof(<ctype>, <field>)`.
    pub fn offset(ctype: &str, field: &str, v: usize) -> Self {
        LayoutEntry {
            expr: format!("offsetof({ctype}, {field})"),
            value: v as u64,
        }
    }
    /// A constant.
    pub fn constant(name: &str, v: u64) -> Self {
        LayoutEntry {
            expr: name.to_string(),
            value: v,
        }
    }
}

/// A `#[repr(C)]` C struct for which all-zero bytes are a valid value, as C code initialises
/// it with `memset(&x, 0, sizeof x)` or `= {0}` before filling the members it needs.
///
/// # Safety
///
/// Implement only for `#[repr(C)]` types whose every field is an integer, a raw pointer, an
/// `Option` of a function pointer, an array of these, one of libc's plain-data pthread types,
/// or another `Zeroable` type. [`c_struct!`] implements it; its structs hold nothing else.
pub unsafe trait Zeroable: Sized {
    /// The all-zero value.
    fn zeroed() -> Self {
        // SAFETY: the trait's contract: all-zero bytes are a valid value of `Self`.
        unsafe { std::mem::zeroed() }
    }
}

/// A `#[repr(C)]` mirror of a C struct that can list its size and field offsets.
pub trait CLayout {
    /// Appends `sizeof` and one `offsetof` per field.
    fn c_layout(out: &mut Vec<LayoutEntry>);
}

/// Declares a `#[repr(C)]` struct mirroring a C struct, its [`CLayout`] entries (the size and
/// every field's offset, named as in C: Rust field names are the C member names), and
/// [`Zeroable`]. Fields may only be integers, raw pointers, `Option`s of function pointers,
/// arrays of these, libc pthread types, or other `c_struct!` types.
macro_rules! c_struct {
    ($(#[$m:meta])* $cname:literal => pub struct $name:ident { $( pub $field:ident : $ty:ty ),* $(,)? }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy)]
        #[allow(missing_docs)]
        pub struct $name { $( pub $field: $ty ),* }
        // SAFETY: c_struct! fields are restricted to types whose all-zero bytes are a valid
        // value (see the macro's documentation).
        unsafe impl $crate::probe::fabric::layout::Zeroable for $name {}
        impl $crate::probe::fabric::layout::CLayout for $name {
            fn c_layout(out: &mut Vec<$crate::probe::fabric::layout::LayoutEntry>) {
                out.push($crate::probe::fabric::layout::LayoutEntry::size($cname, std::mem::size_of::<$name>()));
                $( out.push($crate::probe::fabric::layout::LayoutEntry::offset(
                    $cname, stringify!($field).trim_start_matches("r#"), std::mem::offset_of!($name, $field))); )*
            }
        }
    };
}
pub(crate) use c_struct;

/// Appends a [`LayoutEntry::constant`] per Rust constant, named as in C (the Rust constants
/// carry the C names).
macro_rules! c_constants {
    ($out:expr; $($name:ident),* $(,)?) => {
        $( $out.push($crate::probe::fabric::layout::LayoutEntry::constant(
            stringify!($name), $name as u64)); )*
    };
}
pub(crate) use c_constants;

/// Every layout entry the probe relies on: libibverbs and libfabric structs and constants.
pub fn all_entries() -> Vec<LayoutEntry> {
    let mut v = super::verbs_sys::layout_entries();
    v.extend(super::ofi_sys::layout_entries());
    v
}
