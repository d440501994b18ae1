//! The scheduler's topology ([`SchedTopo`]) as the schedulers read it: Slurm's `topology.conf`
//! for `topology/tree` ([`tree_conf`]) and `topology/block` ([`block_conf`]), Slurm 25.05+'s
//! `topology.yaml` holding both ([`topology_yaml`]), and Kubernetes node labels as a `kubectl
//! label` script ([`k8s_script`]) with a Kueue `Topology` object ([`kueue_topology`]).
//!
//! Data: the analysis only; every name from the map is either a host name the analysis
//! checked ([`crate::analysis::schedtopo::name_ok`]), a switch name made here (`su01`,
//! `sg1`, `fabric`), or text in a `#` comment written through [`escape::one_line`].

use super::escape::{self, one_line};
use super::nfd::{dns_subdomain_ok, name_ok};
use crate::analysis::schedtopo::{BlockBasis, SchedTopo, SwitchRef};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Names in Slurm's hostlist form: names ending in digits sharing a prefix and a digit count
/// are written `prefix[01-04,07]` (Slurm's `hostlist_ranged_string`), any other name bare;
/// comma-separated. Names are ones [`crate::analysis::schedtopo::name_ok`] accepts.
pub fn hostlist(names: &[String]) -> String {
    let mut ranged: BTreeMap<(&str, usize), Vec<u64>> = BTreeMap::new();
    let mut bare: Vec<&str> = Vec::new();
    for n in names {
        let digits = n.bytes().rev().take_while(u8::is_ascii_digit).count();
        let (prefix, num) = n.split_at(n.len() - digits);
        match num.parse::<u64>() {
            Ok(v) if !prefix.is_empty() && digits <= 18 => {
                ranged.entry((prefix, digits)).or_default().push(v)
            }
            _ => bare.push(n),
        }
    }
    let mut parts: Vec<String> = bare.iter().map(|s| s.to_string()).collect();
    for ((prefix, width), mut nums) in ranged {
        nums.sort_unstable();
        nums.dedup();
        if nums.len() == 1 {
            parts.push(format!("{prefix}{:0width$}", nums[0]));
            continue;
        }
        let mut spans: Vec<String> = Vec::new();
        let mut i = 0;
        while i < nums.len() {
            let mut j = i;
            while j + 1 < nums.len() && nums[j + 1] == nums[j] + 1 {
                j += 1;
            }
            spans.push(if i == j {
                format!("{:0width$}", nums[i])
            } else {
                format!("{:0width$}-{:0width$}", nums[i], nums[j])
            });
            i = j + 1;
        }
        parts.push(format!("{prefix}[{}]", spans.join(",")));
    }
    parts.sort();
    parts.join(",")
}

/// Switches in words for a comment: `name (guid)`, the first `max`, then how many more.
fn switches_words(s: &[SwitchRef], max: usize) -> String {
    let mut w: Vec<String> = s
        .iter()
        .take(max)
        .map(|x| match &x.guid {
            Some(g) if !x.name.contains(g.as_str()) => format!("{} ({g})", x.name),
            _ => x.name.clone(),
        })
        .collect();
    if s.len() > max {
        w.push(format!("and {} more", s.len() - max));
    }
    one_line(&w.join(", ")).into_owned()
}

/// The header every Slurm file starts with: what was read, left out and faulty, as comments.
fn header(t: &SchedTopo, what: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# {what}");
    let _ = writeln!(
        o,
        "# written by peerpath from the {} map: {} GPU node(s) in {} scalable unit(s)",
        one_line(&t.producer),
        t.hosts,
        t.units.len()
    );
    for c in comments(t) {
        let _ = writeln!(o, "# {c}");
    }
    o
}

/// What the map held that the files leave out, and the faults, one line each (for `#`
/// comments and standard error): every name through [`one_line`].
pub fn comments(t: &SchedTopo) -> Vec<String> {
    let mut v = Vec::new();
    for f in &t.faults {
        v.push(format!(
            "FAULT {}: {}{} [{}]",
            one_line(&f.host),
            one_line(&f.detail),
            if f.excluded {
                " (left out: --exclude-faulty)"
            } else {
                " (kept; --exclude-faulty leaves it out)"
            },
            one_line(&f.evidence.join("; "))
        ));
    }
    for u in &t.units {
        for m in &u.missing {
            v.push(format!(
                "{} stays in {} with a cable missing: it does not reach {}",
                one_line(&m.host),
                u.name,
                one_line(&m.leaves.join(", "))
            ));
        }
    }
    for n in &t.not_gpu_nodes {
        v.push(format!(
            "not a GPU node, left out: {} ({})",
            one_line(&n.host),
            one_line(&n.why)
        ));
    }
    for n in &t.not_rail {
        v.push(format!(
            "not a GPU rail, left out of the tree: {} {} on {} ({})",
            one_line(&n.host),
            one_line(&n.adapter),
            one_line(&n.leaf),
            one_line(&n.why)
        ));
    }
    for n in &t.refused_names {
        v.push(format!(
            "left out: host name {} cannot stand in a scheduler's files (only [A-Za-z0-9._-])",
            one_line(&format!("{n:?}"))
        ));
    }
    for n in &t.placeholder_names {
        v.push(format!(
            "left out: host name {} is a placeholder, not a host's name (its adapters' node descriptions were set before the host had its name: set them, e.g. restart rdma-ndd, and map again)",
            one_line(&format!("{n:?}"))
        ));
    }
    if t.unnamed_adapters > 0 {
        v.push(format!(
            "{} adapter(s) carry the firmware's default description (no host name): their hosts cannot be named, left out",
            t.unnamed_adapters
        ));
    }
    if t.aggregation_nodes > 0 {
        v.push(format!(
            "{} SHARP aggregation node(s): not hosts",
            t.aggregation_nodes
        ));
    }
    if !t.domains_span_units.is_empty() {
        v.push(format!(
            "{} host(s) are in NVLink domains that span scalable units",
            t.domains_span_units.len()
        ));
    }
    v.extend(
        t.limitations
            .iter()
            .map(|l| format!("note: {}", one_line(l))),
    );
    v
}

/// The tree's switches: `(name, comment, key, value)` with key `Nodes` or `Switches`, leaves
/// first, then spine groups, then the top.
fn tree_lines(t: &SchedTopo) -> Vec<(String, String, &'static str, String)> {
    let mut out = Vec::new();
    for u in &t.units {
        let comment = format!(
            "{}: {} host(s) reaching {} rail leaf/leaves: {}",
            u.name,
            u.hosts.len(),
            u.leaves.len(),
            switches_words(&u.leaves, 16)
        );
        out.push((u.name.clone(), comment, "Nodes", hostlist(&u.hosts)));
    }
    for g in &t.spine_groups {
        let names: Vec<String> = g.units.iter().map(|&u| t.units[u].name.clone()).collect();
        let comment = format!(
            "{}: spines {}",
            g.name,
            if g.spines.is_empty() {
                "none in the map".to_string()
            } else {
                switches_words(&g.spines, 16)
            }
        );
        out.push((g.name.clone(), comment, "Switches", hostlist(&names)));
    }
    let (children, comment) = if t.spine_groups.is_empty() {
        let names: Vec<String> = t.units.iter().map(|u| u.name.clone()).collect();
        let sp = if t.top_spines.is_empty() {
            "no spine in the map: one switch over all so jobs may span units".to_string()
        } else {
            format!("spines {}", switches_words(&t.top_spines, 16))
        };
        (names, format!("{}: over every unit; {sp}", t.top))
    } else {
        let names: Vec<String> = t.spine_groups.iter().map(|g| g.name.clone()).collect();
        (names, format!("{}: over every spine group", t.top))
    };
    out.push((t.top.clone(), comment, "Switches", hostlist(&children)));
    out
}

/// `topology.conf` for `topology/tree` (`topology.conf(5)`): one `SwitchName=… Nodes=…` line
/// per scalable unit, spine groups above them when units reach different spines, one switch
/// over all; a comment before each line names the leaves (and GUIDs) it stands for.
pub fn tree_conf(t: &SchedTopo) -> String {
    let mut o = header(
        t,
        "Slurm topology.conf for TopologyPlugin=topology/tree (topology.conf(5))",
    );
    for (name, comment, key, value) in tree_lines(t) {
        let _ = writeln!(o, "# {comment}");
        let _ = writeln!(o, "SwitchName={name} {key}={value}");
    }
    o
}

/// `topology.conf` for `topology/block`: one `BlockName=… Nodes=…` per block (adjacent in
/// unit order) and `BlockSizes=`.
pub fn block_conf(t: &SchedTopo) -> String {
    let mut o = header(
        t,
        "Slurm topology.conf for TopologyPlugin=topology/block (topology.conf(5))",
    );
    let _ = writeln!(o, "# {}", basis_words(t));
    for b in &t.blocks {
        let _ = writeln!(
            o,
            "# {}: {} host(s), {}",
            b.name,
            b.hosts.len(),
            one_line(&b.stands_for)
        );
        let _ = writeln!(o, "BlockName={} Nodes={}", b.name, hostlist(&b.hosts));
    }
    let sizes: Vec<String> = t.block_sizes.iter().map(|s| s.to_string()).collect();
    let _ = writeln!(o, "BlockSizes={}", sizes.join(","));
    o
}

fn basis_words(t: &SchedTopo) -> String {
    let what = match t.block_basis {
        BlockBasis::NvlinkDomain => "one block per NVLink domain",
        BlockBasis::ScalableUnit => {
            "one block per scalable unit (the inputs show no NVLink domain for every host)"
        }
    };
    format!(
        "{what}; BlockSizes: the smallest block ({} nodes), then power-of-two multiples",
        t.block_sizes.first().copied().unwrap_or(0)
    )
}

/// Slurm 25.05+'s `topology.yaml` (`topology.yaml(5)`): a `tree` topology (named `tree`)
/// and a `block` topology (named `block`), `default` picks which one is `cluster_default`.
pub fn topology_yaml(t: &SchedTopo, block_default: bool) -> String {
    let mut o = header(t, "Slurm topology.yaml (Slurm 25.05+, topology.yaml(5))");
    let _ = writeln!(o, "- topology: tree");
    let _ = writeln!(o, "  cluster_default: {}", !block_default);
    let _ = writeln!(o, "  tree:");
    let _ = writeln!(o, "    switches:");
    for (name, comment, key, value) in tree_lines(t) {
        let _ = writeln!(o, "    # {comment}");
        let _ = writeln!(o, "    - switch: {name}");
        let k = if key == "Nodes" { "nodes" } else { "children" };
        let _ = writeln!(o, "      {k}: {}", escape::yaml_str(&value));
    }
    let _ = writeln!(o, "- topology: block");
    let _ = writeln!(o, "  cluster_default: {block_default}");
    let _ = writeln!(o, "  # {}", basis_words(t));
    let _ = writeln!(o, "  block:");
    let _ = writeln!(o, "    block_sizes:");
    for s in &t.block_sizes {
        let _ = writeln!(o, "    - {s}");
    }
    let _ = writeln!(o, "    blocks:");
    for b in &t.blocks {
        let _ = writeln!(o, "    # {}", one_line(&b.stands_for));
        let _ = writeln!(o, "    - block: {}", b.name);
        let _ = writeln!(o, "      nodes: {}", escape::yaml_str(&hostlist(&b.hosts)));
    }
    o
}

/// Kubernetes label keys: `<prefix>N` for fabric tier N (0 nearest the node) and the NVLink
/// domain's key.
#[derive(Debug, Clone)]
pub struct LabelKeys {
    /// Fabric tier key prefix (`fabric.topograph.run/tier-`, as NVIDIA topograph's k8s
    /// engine writes).
    pub tier_prefix: String,
    /// NVLink domain key (`accelerator.topograph.run/domain`).
    pub domain: String,
}

/// topograph's fabric tier key prefix.
pub const DEFAULT_TIER_PREFIX: &str = "fabric.topograph.run/tier-";
/// topograph's accelerator (NVLink) domain key.
pub const DEFAULT_DOMAIN_KEY: &str = "accelerator.topograph.run/domain";

/// Checks a label key as the API server does (`IsQualifiedName`: an optional DNS-subdomain
/// prefix and `/`, a name of ≤ 63 `[A-Za-z0-9._-]` alphanumeric at both ends).
pub fn check_key(key: &str) -> anyhow::Result<()> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if prefix.is_some_and(|p| p.is_empty() || !dns_subdomain_ok(p)) || !name_ok(name, 63) {
        anyhow::bail!(
            "label key {} is not a Kubernetes qualified name (an optional DNS-subdomain prefix and '/', then ≤ 63 characters of [A-Za-z0-9._-], alphanumeric at both ends)",
            escape::for_terminal(&format!("{key:?}"))
        );
    }
    Ok(())
}

/// The fabric tier keys, nearest first, and each tier's value per unit.
fn tiers(t: &SchedTopo, k: &LabelKeys) -> Vec<(String, Vec<String>)> {
    let mut tiers = vec![(
        format!("{}0", k.tier_prefix),
        t.units.iter().map(|u| u.name.clone()).collect(),
    )];
    if !t.spine_groups.is_empty() {
        tiers.push((
            format!("{}1", k.tier_prefix),
            t.units
                .iter()
                .map(|u| {
                    u.spine_group
                        .map_or(String::new(), |g| t.spine_groups[g].name.clone())
                })
                .collect(),
        ));
    }
    tiers.push((
        format!("{}{}", k.tier_prefix, tiers.len()),
        vec![t.top.clone(); t.units.len()],
    ));
    tiers
}

/// A label value for an NVLink domain id: the id when it is a valid label value, else `h`
/// and 16 hex digits of its FNV-1a hash (said in the script).
pub fn domain_value(id: &str) -> (String, bool) {
    if name_ok(id, 63) {
        return (id.to_string(), false);
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (format!("h{h:016x}"), true)
}

/// A `kubectl label` script setting each node's tier labels (and NVLink domain), then
/// applying the Kueue `Topology` object. Node names are the map's, lower-cased as kubelet
/// registers them; a name that is no DNS subdomain then is left out (said).
pub fn k8s_script(t: &SchedTopo, k: &LabelKeys, domains: &BTreeMap<String, String>) -> String {
    let mut o = String::from("#!/bin/sh\n");
    o.push_str("# Kubernetes topology labels written by peerpath (export --format k8s-topology)\n");
    for c in comments(t) {
        let _ = writeln!(o, "# {c}");
    }
    o.push_str("set -eu\n");
    let tiers = tiers(t, k);
    for (ui, u) in t.units.iter().enumerate() {
        for h in &u.hosts {
            let node = h.to_ascii_lowercase();
            if !dns_subdomain_ok(&node) {
                let _ = writeln!(
                    o,
                    "# left out: {} is not a Kubernetes node name",
                    one_line(&node)
                );
                continue;
            }
            let mut line = format!(
                "kubectl label node --overwrite {}",
                escape::shell_word(&node)
            );
            for (key, values) in &tiers {
                if !values[ui].is_empty() {
                    let _ = write!(
                        line,
                        " {}",
                        escape::shell_word(&format!("{key}={}", values[ui]))
                    );
                }
            }
            if let Some(d) = domains.get(h) {
                let (v, hashed) = domain_value(d);
                if hashed {
                    let _ = writeln!(
                        o,
                        "# {}: NVLink domain {} is no label value, written as its hash {v}",
                        one_line(&node),
                        one_line(&format!("{d:?}"))
                    );
                }
                let _ = write!(
                    line,
                    " {}",
                    escape::shell_word(&format!("{}={v}", k.domain))
                );
            }
            o.push_str(&line);
            o.push('\n');
        }
    }
    o.push_str("kubectl apply -f - <<'PEERPATH_KUEUE_TOPOLOGY'\n");
    o.push_str(&kueue_topology(t, k, domains));
    o.push_str("PEERPATH_KUEUE_TOPOLOGY\n");
    o
}

/// A Kueue `Topology` (`kueue.x-k8s.io/v1beta1`): `spec.levels[].nodeLabel`, broadest first:
/// the fabric tiers from the top down, the NVLink domain where every domain lies inside one
/// unit, then `kubernetes.io/hostname`.
pub fn kueue_topology(t: &SchedTopo, k: &LabelKeys, domains: &BTreeMap<String, String>) -> String {
    let mut o = String::new();
    o.push_str("apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata:\n  name: peerpath-fabric\nspec:\n  levels:\n");
    for (key, _) in tiers(t, k).iter().rev() {
        let _ = writeln!(o, "  - nodeLabel: {}", escape::yaml_str(key));
    }
    if !domains.is_empty() && t.block_basis == BlockBasis::NvlinkDomain {
        if t.domains_span_units.is_empty() {
            let _ = writeln!(o, "  - nodeLabel: {}", escape::yaml_str(&k.domain));
        } else {
            o.push_str("  # the NVLink domain level is left out: some domains span units\n");
        }
    }
    o.push_str("  - nodeLabel: \"kubernetes.io/hostname\"\n");
    o
}
