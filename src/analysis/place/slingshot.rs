//! What a rank whose NIC is an HPE Slingshot (Cassini) adapter is given for its NIC.
//!
//! On Slingshot neither `NCCL_IB_HCA` nor `UCX_NET_DEVICES` selects anything: NCCL and RCCL reach
//! a Cassini through the aws-ofi-nccl net plugin over libfabric's `cxi` provider (HPE's
//! shs-ccl-docs `nccl/nccl_tuning_guide.md`: `NCCL_NET="AWS Libfabric"`), and that plugin reads
//! no NIC list (aws/aws-ofi-nccl `include/nccl_ofi_param.h` has none; NCCL_IB_HCA is read only
//! by NCCL's own IB transport); UCX has no transport for CXI devices (openucx/ucx `src/uct`: ib,
//! tcp, ugni, sm, cuda, rocm, ze, gaudi). What the stack reads for a process's NIC is libfabric's
//! `FI_CXI_DEVICE_NAME` (ofiwg/libfabric `prov/cxi/src/cxip_info.c`, parameter `device_name`;
//! `prov/cxi/src/cxip_if.c` `cxip_query_if_list` skips every CXI device the value does not
//! name), a comma list of CXI device names `cxi0`–`cxi99` (any other token makes the provider
//! ignore the whole value: `cxip_env_validate_device_token`). Data: the NIC's PCI vendor and
//! RDMA device names from the model (sysfs `/sys/class/cxi/cxi<N>`, hwloc XML, NCCL XML).

use std::collections::BTreeMap;

/// The libfabric variable that restricts the cxi provider to the CXI devices it names.
pub(super) const FI_CXI_DEVICE_NAME: &str = "FI_CXI_DEVICE_NAME";

/// Whether `name` is a CXI device name as the cxi provider accepts it in
/// `FI_CXI_DEVICE_NAME`: `cxi` and a decimal index 0–99 without a leading zero
/// (`cxip_env_validate_device_token`).
pub(super) fn is_cxi_device_name(name: &str) -> bool {
    let Some(n) = name.strip_prefix("cxi") else {
        return false;
    };
    !n.is_empty()
        && n.len() <= 2
        && n.bytes().all(|b| b.is_ascii_digit())
        && !(n.len() == 2 && n.starts_with('0'))
}

/// The NIC variable of a rank on a Cassini NIC whose device names are `names`: sets
/// `FI_CXI_DEVICE_NAME` to its CXI device when the input names one, and returns the lines that
/// say what the rank's environment leaves out and why (shown in every output of the plan).
pub(super) fn cassini_env(names: &[String], env: &mut BTreeMap<String, String>) -> Vec<String> {
    let not_read = "NCCL_IB_HCA and UCX_NET_DEVICES left out: on Slingshot NCCL/RCCL use the aws-ofi-nccl plugin over libfabric's cxi provider, which reads neither, and UCX has no transport for CXI devices";
    match names.iter().find(|n| is_cxi_device_name(n)) {
        Some(cxi) => {
            env.insert(FI_CXI_DEVICE_NAME.to_string(), cxi.clone());
            let mut line = format!(
                "{FI_CXI_DEVICE_NAME}={cxi} restricts libfabric's cxi provider (aws-ofi-nccl, MPI over libfabric) to this rank's Cassini NIC; {not_read}"
            );
            // The provider keeps a device when its name is a substring of the value
            // (`strstr` in cxip_query_if_list): `cxi1x` also admits `cxi1`.
            if cxi.len() == 5 {
                line.push_str(&format!(
                    "; the provider matches names as substrings, so {cxi} also admits {}",
                    &cxi[..4]
                ));
            }
            vec![line]
        }
        None => vec![format!(
            "{FI_CXI_DEVICE_NAME} left out: the input names this Cassini NIC {} (in hwloc XML before 2.14 its Ethernet netdev), not its CXI device (cxi<N>, /sys/class/cxi), so NCCL picks the NIC from the PCI paths aws-ofi-nccl reports; {not_read}",
            if names.is_empty() {
                "by no device".to_string()
            } else {
                names.join(", ")
            }
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cxi_names_as_the_provider_validates_them() {
        for ok in ["cxi0", "cxi9", "cxi10", "cxi99"] {
            assert!(is_cxi_device_name(ok), "{ok}");
        }
        for bad in [
            "cxi", "cxi00", "cxi05", "cxi100", "hsi0", "hsn0", "cxi1a", "xcxi0",
        ] {
            assert!(!is_cxi_device_name(bad), "{bad}");
        }
    }

    #[test]
    fn cxi_device_exported_else_nothing_with_the_reason() {
        let mut env = BTreeMap::new();
        let l = cassini_env(&["cxi3".into()], &mut env);
        assert_eq!(
            env.get(FI_CXI_DEVICE_NAME).map(String::as_str),
            Some("cxi3")
        );
        assert_eq!(env.len(), 1);
        assert!(
            l[0].contains("NCCL_IB_HCA and UCX_NET_DEVICES left out"),
            "{l:?}"
        );
        let mut env = BTreeMap::new();
        let l = cassini_env(&["hsi0".into()], &mut env);
        assert!(env.is_empty(), "{env:?}");
        assert!(l[0].starts_with("FI_CXI_DEVICE_NAME left out"), "{l:?}");
        assert!(l[0].contains("hsi0"), "{l:?}");
        let mut env = BTreeMap::new();
        let l = cassini_env(&["cxi12".into()], &mut env);
        assert!(l[0].contains("cxi12 also admits cxi1"), "{l:?}");
    }
}
