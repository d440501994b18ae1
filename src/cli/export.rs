//! `peerpath export`: scheduler and monitoring files (gres.conf, NFD, DRA, NCCL XML, .prom, DOT).

use crate::InputArgs;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use peerpath::analysis::audit::{self, AuditOptions};
use peerpath::analysis::classify::{Classifier, ClassifyOptions};
use peerpath::analysis::cores::CoreMap;
use peerpath::analysis::paths::Paths;
use peerpath::analysis::place::NodeView;
use peerpath::analysis::rails;
use peerpath::model::Bdf;
use peerpath::render::{dot, dra, gres, nccl_xml, nfd, prom};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// Export formats.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ExportFormat {
    /// Slurm gres.conf lines.
    Gres,
    /// Node Feature Discovery features.d file.
    Nfd,
    /// Kubernetes DRA `resource.k8s.io/v1` ResourceSlice (YAML; --json for JSON).
    Dra,
    /// NCCL_TOPO_FILE XML.
    NcclXml,
    /// node_exporter textfile (.prom).
    Prom,
    /// Graphviz DOT.
    Dot,
    /// Slurm topology.conf from --fabric-map (topology/tree; --slurm-plugin block for
    /// topology/block).
    SlurmTopology,
    /// Slurm 25.05+ topology.yaml from --fabric-map: the tree and block topologies, the
    /// --slurm-plugin one marked cluster_default.
    SlurmTopologyYaml,
    /// Kubernetes topology labels from --fabric-map: a `kubectl label` script that also applies
    /// the Kueue Topology.
    K8sTopology,
    /// The Kueue `Topology` object (kueue.x-k8s.io/v1beta1) alone, from --fabric-map.
    KueueTopology,
}

/// Which Slurm topology plugin `slurm-topology` writes for (and `slurm-topology-yaml` marks
/// `cluster_default`).
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SlurmPlugin {
    /// topology/tree: switches over scalable units.
    Tree,
    /// topology/block: blocks per NVLink domain, else per scalable unit.
    Block,
}

/// NVSwitch policy for gres.conf `Links=`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum NvSwitchPolicy {
    /// 0, as Slurm's AutoDetect=nvml writes.
    Slurm,
    /// The smaller of the two GPUs' fabric link counts.
    Fabric,
}

/// Arguments of `export`.
#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Output format: what to write.
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// Write to this file instead of standard output (a regular file is replaced atomically;
    /// a pipe or device is written through; see docs/bad-input.md).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// gres: NodeName= to put on each line. dra: spec.nodeName and the pool name (default: this
    /// machine's host name when reading the live machine; required for a snapshot or file).
    #[arg(long, value_name = "NAME")]
    node_name: Option<String>,
    /// dra: spec.driver, a DNS subdomain you own.
    #[arg(long, value_name = "DOMAIN", default_value = dra::DEFAULT_DRIVER)]
    driver: String,
    /// dra: write JSON instead of YAML.
    #[arg(long)]
    json: bool,
    /// gres: Type= for the GPUs (e.g. h100).
    #[arg(long, value_name = "TYPE")]
    gpu_type: Option<String>,
    /// gres: Links= value for GPUs joined only through NVSwitches.
    #[arg(long, value_enum, default_value = "slurm")]
    nvswitch_links: NvSwitchPolicy,
    /// nfd: label prefix.
    #[arg(long, default_value = nfd::DEFAULT_PREFIX)]
    prefix: String,
    /// nfd: seconds until the labels expire.
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400)]
    ttl: u64,
    /// nccl-xml: only cpu/pci elements (let NCCL find GPUs, NVLinks and NICs itself).
    #[arg(long)]
    skeleton: bool,
    /// nccl-xml: CPU architecture when the CPU vendor does not tell it (x86_64, arm64, ppc64).
    #[arg(long, value_name = "ARCH")]
    arch: Option<String>,
    /// nccl-xml (VM case): GPU=NIC pairs that share a PCIe switch on the host, written under
    /// synthetic switches; repeat or comma-separate.
    #[arg(long = "pair", value_name = "GPU_BDF=NIC_BDF", value_delimiter = ',')]
    pairs: Vec<String>,
    #[command(flatten)]
    sched: super::export_sched::SchedArgs,
}

fn parse_pair(s: &str) -> Result<(Bdf, Bdf)> {
    let (g, n) = s
        .split_once('=')
        .with_context(|| format!("--pair {s:?}: expected GPU_BDF=NIC_BDF"))?;
    Ok((
        g.trim().parse().with_context(|| format!("--pair {s:?}"))?,
        n.trim().parse().with_context(|| format!("--pair {s:?}"))?,
    ))
}

/// The live machine's Kubernetes node name: the kernel host name, lower-cased as kubelet does.
fn live_node_name() -> Result<String> {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .context("cannot read /proc/sys/kernel/hostname for the node name; pass --node-name")?;
    Ok(h.trim().to_ascii_lowercase())
}

/// Runs `export`.
pub fn run(a: ExportArgs) -> Result<u8> {
    if a.json && a.format != ExportFormat::Dra {
        anyhow::bail!("--json applies to --format dra only");
    }
    if super::export_sched::is_sched(a.format) {
        let text = super::export_sched::render(&a.input, &a.sched, a.format)?;
        return write(&a.output, &text, false);
    }
    let topo = crate::load(&a.input)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let text = match a.format {
        ExportFormat::Gres => {
            use peerpath::render::escape::gres_value;
            if let Some(n) = &a.node_name {
                gres_value("--node-name", n)?;
            }
            if let Some(t) = &a.gpu_type {
                gres_value("--gpu-type", t)?;
            }
            let o = gres::GresOptions {
                node_name: a.node_name,
                gpu_type: a.gpu_type,
                nvswitch: match a.nvswitch_links {
                    NvSwitchPolicy::Slurm => gres::NvSwitchLinks::Slurm,
                    NvSwitchPolicy::Fabric => gres::NvSwitchLinks::Fabric,
                },
            };
            gres::render(&topo, &CoreMap::from_topology(&topo), &o)
        }
        ExportFormat::Nfd => {
            let cl = Classifier::new(&topo, &ClassifyOptions::default());
            let r = rails::build_from(&cl, 1);
            nfd::render(
                &topo,
                &r,
                &nfd::NfdOptions {
                    prefix: a.prefix,
                    expiry_unix: now + a.ttl,
                    gdr: audit::run_with(&cl, &AuditOptions::default()).gdr_ready(),
                },
            )?
        }
        ExportFormat::Dra => {
            let cl = Classifier::new(&topo, &ClassifyOptions::default());
            let (view, r) = rails::build_view_from(&cl, 1);
            let node_name = match a.node_name {
                Some(n) => n,
                None if a.input.input.is_none() => live_node_name()?,
                None => anyhow::bail!(
                    "--node-name NAME is needed: {} does not record the Kubernetes node name",
                    topo.source.path
                ),
            };
            dra::render(
                cl.paths(),
                &view,
                &r,
                &dra::DraOptions {
                    driver: a.driver,
                    node_name,
                    json: a.json,
                },
            )?
        }
        ExportFormat::NcclXml => {
            let pairs = a
                .pairs
                .iter()
                .map(|s| parse_pair(s))
                .collect::<Result<Vec<_>>>()?;
            nccl_xml::render(
                &topo,
                &nccl_xml::NcclXmlOptions {
                    skeleton: a.skeleton,
                    arch: a.arch,
                    pairs,
                },
            )?
        }
        ExportFormat::Prom => {
            let cl = Classifier::new(&topo, &ClassifyOptions::default());
            let view = NodeView::from_classifier(&cl);
            let r = rails::build(&topo, &view, 1);
            let report = audit::run_with(&cl, &AuditOptions::default());
            prom::render(
                cl.paths(),
                &view,
                &r,
                &prom::PromInputs {
                    now_unix: now,
                    audit: Some(&report),
                    fingerprint: Some(peerpath::analysis::fleet::fingerprint(&topo)),
                },
            )
        }
        ExportFormat::Dot => dot::render(&Paths::new(&topo)),
        ExportFormat::SlurmTopology
        | ExportFormat::SlurmTopologyYaml
        | ExportFormat::K8sTopology
        | ExportFormat::KueueTopology => {
            anyhow::bail!("the scheduler topology formats are written from --fabric-map above")
        }
    };
    write(&a.output, &text, matches!(a.format, ExportFormat::Dra))
}

fn write(output: &Option<PathBuf>, text: &str, json_like: bool) -> Result<u8> {
    match output {
        Some(p) => {
            peerpath::output::write_output(p, text.as_bytes())?;
        }
        None => super::print_document(text, json_like),
    }
    Ok(0)
}
