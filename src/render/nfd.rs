//! A Node Feature Discovery local feature file (`/etc/kubernetes/node-feature-discovery/
//! features.d/peerpath`).
//!
//! Data: the rails report ([`Rails`]: rail alignment, worst rail path, NVLink domains), the
//! audit's GDR verdict ([`GdrReadiness`], from [`crate::analysis::audit::Report::gdr_ready`]),
//! device counts from the topology. Format rules (shared/reference/ecosystem.md §1.3): one
//! `<prefix>/<name>=<value>` per line, `#` comments, a `# +expiry-time=<RFC3339>` directive
//! applying to the lines after it; label names ≤ 63 characters and values ≤ 63 characters of
//! `[A-Za-z0-9._-]`, starting and ending alphanumeric (values may be empty); the prefix a DNS
//! subdomain ≤ 253 characters outside `kubernetes.io`, except NFD's own `feature.node.
//! kubernetes.io` and `profile.node.kubernetes.io` namespaces. Every label is checked before it
//! is written ([`check_label`], NFD's `validate.Label`); `tests/consumer_nfd.rs` parses the file
//! with NFD's local-source rules.

use crate::analysis::audit::GdrReadiness;
use crate::analysis::rails::Rails;
use crate::model::{DeviceKind, Topology};
use anyhow::{Result, bail};
use std::fmt::Write;

/// Default label prefix.
pub const DEFAULT_PREFIX: &str = "peerpath.io";

/// Options of the NFD export.
#[derive(Debug, Clone)]
pub struct NfdOptions {
    /// Label namespace (`peerpath.io`).
    pub prefix: String,
    /// Unix time the labels expire at.
    pub expiry_unix: u64,
    /// The audit's GDR verdict (`gdr-ready=true|false|unknown`).
    pub gdr: GdrReadiness,
}

/// A Kubernetes label name or value (≤ `max` characters of `[A-Za-z0-9._-]`, alphanumeric at
/// both ends: apimachinery's `IsQualifiedName`/`IsValidLabelValue`).
pub fn name_ok(s: &str, max: usize) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= max
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Namespaces under `kubernetes.io` that NFD allows (`FeatureLabelNs`, `ProfileLabelNs` in
/// NFD's `api/nfd/v1alpha1/annotations_labels.go`), with their sub-namespaces.
pub const NFD_ALLOWED_K8S_NS: [&str; 2] =
    ["feature.node.kubernetes.io", "profile.node.kubernetes.io"];

/// A DNS-1123 subdomain as Kubernetes checks it (`IsDNS1123Subdomain`): at most 253 characters,
/// dot-separated labels of `[a-z0-9-]` that start and end alphanumeric.
pub fn dns_subdomain_ok(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|p| {
            let b = p.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// Whether NFD accepts labels in namespace `ns`: `kubernetes.io` and its subdomains are denied
/// except `feature.node.kubernetes.io`, `profile.node.kubernetes.io` and their subdomains
/// (NFD `pkg/apis/nfd/validate/validate.go`, `Label`).
pub fn nfd_namespace_ok(ns: &str) -> bool {
    let k8s = ns == "kubernetes.io" || ns.ends_with(".kubernetes.io");
    !k8s || NFD_ALLOWED_K8S_NS
        .iter()
        .any(|a| ns == *a || ns.ends_with(&format!(".{a}")))
}

/// Checks a label the way NFD validates it before it reaches the node (`validate.Label`: the key
/// a Kubernetes qualified name with a DNS-subdomain prefix, the namespace allowed, the value a
/// valid label value); `Err` says which rule fails.
pub fn check_label(prefix: &str, name: &str, value: &str) -> Result<()> {
    if prefix.is_empty() {
        bail!("label {name:?} has no prefix: NFD refuses unprefixed keys");
    }
    if !dns_subdomain_ok(prefix) {
        bail!(
            "label prefix {prefix:?} is not a DNS subdomain (≤ 253 characters, dot-separated [a-z0-9-] labels starting and ending alphanumeric)"
        );
    }
    if !nfd_namespace_ok(prefix) {
        bail!(
            "label prefix {prefix:?} is reserved: NFD denies kubernetes.io and its subdomains except feature.node.kubernetes.io and profile.node.kubernetes.io (and their subdomains)"
        );
    }
    if !name_ok(name, 63) {
        bail!(
            "label name {name:?} breaks the rules (≤ 63 chars of [A-Za-z0-9._-], alphanumeric at both ends)"
        );
    }
    if !value.is_empty() && !name_ok(value, 63) {
        bail!(
            "label value {value:?} for {name} breaks the rules (≤ 63 chars of [A-Za-z0-9._-], alphanumeric at both ends)"
        );
    }
    Ok(())
}

/// RFC 3339 UTC time (`2030-01-01T00:00:00Z`) from Unix seconds.
pub fn rfc3339(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The labels, as (name, value) pairs, in output order.
pub fn labels(t: &Topology, r: &Rails, gdr: &GdrReadiness) -> Vec<(String, String)> {
    let rdma_nics = t
        .of_kind(DeviceKind::Nic)
        .filter(|d| d.rdma_names().next().is_some())
        .count();
    // The worst path of a GPU to its NIC, for GPUDirect RDMA: without an RDMA NIC there is no
    // such path (the placement may still name an Ethernet NIC for sockets), so `none`.
    let worst = r
        .gpu_nic
        .iter()
        .filter(|_| rdma_nics > 0)
        .map(|p| p.path.as_str())
        .max_by_key(|l| label_order(l))
        .map(|l| {
            if l == "?" {
                "unknown".to_string()
            } else {
                l.to_string()
            }
        })
        .unwrap_or_else(|| "none".to_string());
    let nvl_domains = r.domains.iter().filter(|d| d.nvlink).count();
    let tf = |b: bool| if b { "true" } else { "false" }.to_string();
    let mut v = vec![
        (
            "gpu-count".to_string(),
            t.of_kind(DeviceKind::Gpu).count().to_string(),
        ),
        ("rdma-nic-count".to_string(), rdma_nics.to_string()),
        ("rail-aligned".to_string(), tf(r.rail_optimised)),
        ("worst-gpu-nic".to_string(), worst),
        (
            "gdr-ready".to_string(),
            gdr.ready.map(tf).unwrap_or_else(|| "unknown".to_string()),
        ),
        ("numa-nodes".to_string(), t.numa_nodes.len().to_string()),
        ("nvlink-visible".to_string(), tf(t.nvlink_visible)),
    ];
    if t.nvlink_visible {
        v.push(("nvlink-domains".to_string(), nvl_domains.to_string()));
    }
    // AMD nodes: whether xGMI was visible and its hives (KFD `hive_id`s of the GPUs).
    if t.devices.iter().any(crate::model::amd::is_amd_gpu) {
        v.push(("xgmi-visible".to_string(), tf(t.xgmi_visible)));
        if t.xgmi_visible {
            v.push(("xgmi-hives".to_string(), xgmi_hives(t).to_string()));
        }
    }
    if let Some(speed) = r.ports.first().map(|p| p.speed.clone())
        && r.ports.iter().all(|p| p.speed == speed)
    {
        v.push(("rail-speed".to_string(), speed));
    }
    v
}

/// xGMI hives of a topology: connected sets of its xGMI links with more than one GPU.
pub fn xgmi_hives(t: &Topology) -> usize {
    let mut groups: Vec<std::collections::BTreeSet<crate::model::Bdf>> = Vec::new();
    for l in &t.xgmi {
        let hit: Vec<usize> = (0..groups.len())
            .filter(|&k| groups[k].contains(&l.a) || groups[k].contains(&l.b))
            .collect();
        let mut merged: std::collections::BTreeSet<crate::model::Bdf> = [l.a, l.b].into();
        for &k in hit.iter().rev() {
            merged.extend(groups.remove(k));
        }
        groups.push(merged);
    }
    groups.len()
}

/// Order of path labels from best to worst, for "worst" (`?` last).
fn label_order(l: &str) -> u32 {
    match l {
        "PIX" | "XGMI" => 1,
        "PXB" => 2,
        "PHB" => 3,
        "NODE" => 4,
        "SYS" => 5,
        _ => 6,
    }
}

/// Renders the features.d file; fails if any label would break NFD's rules.
pub fn render(t: &Topology, r: &Rails, o: &NfdOptions) -> Result<String> {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# NFD local features written by peerpath from {} ({})",
        t.source.path, t.source.kind
    );
    let _ = writeln!(
        s,
        "# install as /etc/kubernetes/node-feature-discovery/features.d/peerpath; regenerate before expiry"
    );
    let _ = writeln!(s, "# +expiry-time={}", rfc3339(o.expiry_unix));
    for (name, value) in labels(t, r, &o.gdr) {
        check_label(&o.prefix, &name, &value)?;
        let _ = writeln!(s, "{}/{name}={value}", o.prefix);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_893_456_000), "2030-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400 + 3661), "2000-02-29T01:01:01Z");
    }

    #[test]
    fn label_rules() {
        assert!(check_label("peerpath.io", "rail-aligned", "true").is_ok());
        assert!(check_label("peerpath.io", "x", "").is_ok());
        assert!(check_label("peerpath.io", "-bad", "true").is_err());
        assert!(check_label("peerpath.io", "ok", "0000:18:00.0").is_err());
        assert!(check_label("peerpath.io", &"a".repeat(64), "1").is_err());
        assert!(check_label("node.kubernetes.io", "a", "1").is_err());
        assert!(check_label("kubernetes.io", "a", "1").is_err());
        assert!(check_label("feature.node.kubernetes.io", "a", "1").is_ok());
        assert!(check_label("gpu.feature.node.kubernetes.io", "a", "1").is_ok());
        assert!(check_label("profile.node.kubernetes.io", "a", "1").is_ok());
        assert!(check_label("xfeature.node.kubernetes.io", "a", "1").is_err());
        assert!(check_label("Peerpath.io", "a", "1").is_err());
        assert!(check_label("", "a", "1").is_err());
        // No per-label length limit in IsDNS1123Subdomain, only the total.
        assert!(check_label(&format!("{}.io", "a".repeat(70)), "a", "1").is_ok());
    }
}
