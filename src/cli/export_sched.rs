//! `peerpath export --format slurm-topology|slurm-topology-yaml|k8s-topology|kueue-topology`:
//! the cluster's network topology for its scheduler, from the fabric's map (`--fabric-map`)
//! and, with `-i`, the node layout (a capture, or a directory of captures named by host).
//! Faults and what was left out go to standard error as well as into the file's comments.

use super::export::{ExportFormat, SlurmPlugin};
use crate::InputArgs;
use anyhow::{Result, bail};
use clap::Args;
use peerpath::analysis::nvdomain;
use peerpath::analysis::schedtopo::{self, SchedOptions};
use peerpath::render::schedtopo as out;
use peerpath::sources;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Arguments of the scheduler topology formats.
#[derive(Args)]
pub struct SchedArgs {
    /// slurm-topology, slurm-topology-yaml, k8s-topology, kueue-topology: the fabric's own map
    /// (`ibnetdiscover`, `iblinkinfo`, `ibdiagnet2.db_csv`, or a directory of `lldpctl -f json`
    /// files, one per host), as `rails --fabric-map` reads it. Given twice (two ibdiagnet runs
    /// of one fabric, the earlier first, as `rails` takes them), the topology is the later's.
    #[arg(long, value_name = "FILE|DIR")]
    fabric_map: Vec<PathBuf>,
    /// slurm-topology: the plugin to write for; slurm-topology-yaml: the topology marked
    /// cluster_default.
    #[arg(long, value_enum, default_value = "tree")]
    slurm_plugin: SlurmPlugin,
    /// Leave hosts whose cables break their scalable unit (crossed, wrong rail, another unit's
    /// leaf, two adapters on one leaf) out of the files (they are named either way).
    #[arg(long)]
    exclude_faulty: bool,
    /// An adapter name (as the map names it: `mlx5_8`) that is no GPU rail (storage,
    /// management): left out of the tree; repeat or comma-separate.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    exclude_adapter: Vec<String>,
    /// k8s-topology, kueue-topology: fabric tier label key prefix (tier 0 is the scalable unit).
    #[arg(long, value_name = "PREFIX", default_value = out::DEFAULT_TIER_PREFIX)]
    tier_label_prefix: String,
    /// k8s-topology, kueue-topology: NVLink domain label key.
    #[arg(long, value_name = "KEY", default_value = out::DEFAULT_DOMAIN_KEY)]
    domain_label: String,
}

/// What `-i` gives: the node layouts (none where they show no GPU on a rail, with why), each
/// captured host's NVLink domain (NVML's fabric cluster UUID and clique, as
/// [`nvdomain::host_domain`] judges it), and what could not be told about domains.
type FromCaptures = (
    Vec<peerpath::analysis::cabling::NodeLayout>,
    Option<String>,
    BTreeMap<String, String>,
    Vec<String>,
);

fn from_captures(input: &InputArgs) -> Result<FromCaptures> {
    let caps = super::rails::captures(input)?;
    let layouts = caps
        .iter()
        .map(|(h, src, t)| super::rails::layout_of(t, h.clone(), src.clone()))
        .collect();
    let (layouts, alone) = super::rails::railed(layouts, "the node layout of -i");
    let dm = nvdomain::domains(
        caps.iter()
            .filter_map(|(h, _, t)| h.as_deref().map(|h| (h, t))),
    );
    let domains: BTreeMap<String, String> = dm
        .hosts
        .iter()
        .filter_map(|(h, _)| dm.domain_of(h).map(|d| (h.clone(), d.to_string())))
        .collect();
    let mut said = Vec::new();
    for (h, groups) in dm.disagreeing() {
        said.push(format!(
            "{h}: its GPUs are in {} NVLink domains: no domain taken",
            groups.len()
        ));
    }
    for (h, why) in dm.unknown() {
        said.push(format!("{h}: NVLink domain unknown ({why})"));
    }
    let none = dm.without_domain().count();
    if none > 0 {
        said.push(format!("{none} captured host(s) in no NVLink domain"));
    }
    if !domains.is_empty() && domains.len() < dm.hosts.len() {
        said.push(format!(
            "NVLink domains known for {} of {} captured host(s): blocks are the scalable units unless every host in the tree has one",
            domains.len(),
            dm.hosts.len()
        ));
    }
    Ok((layouts, alone, domains, said))
}

/// Whether `f` is one of the scheduler topology formats.
pub fn is_sched(f: ExportFormat) -> bool {
    matches!(
        f,
        ExportFormat::SlurmTopology
            | ExportFormat::SlurmTopologyYaml
            | ExportFormat::K8sTopology
            | ExportFormat::KueueTopology
    )
}

/// Builds the topology and renders it; says the faults and what was left out on stderr.
pub fn render(input: &InputArgs, a: &SchedArgs, f: ExportFormat) -> Result<String> {
    let Some(map_path) = a.fabric_map.last() else {
        bail!(
            "--fabric-map MAP is needed: the scheduler's topology is read from the fabric's own map"
        );
    };
    if a.fabric_map.len() > 1 {
        eprintln!(
            "peerpath: {} fabric maps given: the topology is written from the last, {} (the earlier ones only date error counters, which a scheduler's topology does not carry)",
            a.fabric_map.len(),
            peerpath::render::escape::one_line(&map_path.display().to_string())
        );
    }
    let keys = out::LabelKeys {
        tier_prefix: a.tier_label_prefix.clone(),
        domain: a.domain_label.clone(),
    };
    if matches!(f, ExportFormat::K8sTopology | ExportFormat::KueueTopology) {
        out::check_key(&format!("{}0", keys.tier_prefix))?;
        out::check_key(&keys.domain)?;
    }
    let map = sources::fabric::load_map(map_path, sources::fabric::LldpSide::Host)?;
    // The node layout comes from -i only: export runs where the files are kept (a head node),
    // whose own hardware says nothing about the cluster's nodes.
    let (layouts, alone, domains, said) = match input.input {
        Some(_) => from_captures(input)?,
        None => (
            Vec::new(),
            Some("no -i: judged from the map alone (give -i, a capture or a directory of captures named by host, to tell GPU rails from storage adapters and read each host's NVLink domain)".to_string()),
            BTreeMap::new(),
            Vec::new(),
        ),
    };
    let o = SchedOptions {
        exclude_faulty: a.exclude_faulty,
        exclude_adapters: a.exclude_adapter.clone(),
        domains,
    };
    let mut t = schedtopo::build(&map, &layouts, &o);
    t.limitations.splice(0..0, alone.into_iter().chain(said));
    if t.units.is_empty() {
        bail!(
            "no GPU node in {} that a scheduler's file can name: nothing to write",
            map_path.display()
        );
    }
    for f in &t.faults {
        super::say(&format!(
            "peerpath: FAULT {}: {}{}",
            f.host,
            f.detail,
            if f.excluded { " (left out)" } else { "" }
        ));
    }
    let left = t.not_gpu_nodes.len()
        + t.not_rail.len()
        + t.refused_names.len()
        + t.placeholder_names.len();
    if left > 0 || t.unnamed_adapters > 0 {
        super::say(&format!(
            "peerpath: {} host(s) in {} scalable unit(s); left out: {} not GPU node(s), {} non-rail adapter(s), {} unusable name(s), {} placeholder name(s) (localhost), {} adapter(s) with no host name (the file's comments name them)",
            t.hosts,
            t.units.len(),
            t.not_gpu_nodes.len(),
            t.not_rail.len(),
            t.refused_names.len(),
            t.placeholder_names.len(),
            t.unnamed_adapters
        ));
    }
    let block = a.slurm_plugin == SlurmPlugin::Block;
    Ok(match f {
        ExportFormat::SlurmTopology if block => out::block_conf(&t),
        ExportFormat::SlurmTopology => out::tree_conf(&t),
        ExportFormat::SlurmTopologyYaml => out::topology_yaml(&t, block),
        ExportFormat::K8sTopology => out::k8s_script(&t, &keys, &o.domains),
        _ => out::kueue_topology(&t, &keys, &o.domains),
    })
}
