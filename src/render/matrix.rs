//! The `nvidia-smi topo -m`-style matrix, its JSON document (`peerpath.matrix/1`), and the
//! hop-by-hop explanation of one pair. Renders [`crate::analysis::classify`] results; computes
//! nothing of its own.

use crate::analysis::classify::{
    Classifier, Endpoint, Label, LabelMatrix, Matrix, PairClass, PairStream,
};
use crate::model::linkfmt;
use crate::model::{DeviceKind, LinkInfo};
use comfy_table::{CellAlignment, Table, presets};
use serde::Serialize;

/// Version tag of the matrix JSON document.
pub const MATRIX_SCHEMA: &str = "peerpath.matrix/1";

/// The legend exactly as current `nvidia-smi topo -m` prints it (classification.md §1.2).
pub const NVIDIA_SMI_LEGEND: &str = "Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
";

/// The matrix JSON document: `schema`, `endpoints`, `pairs`, `notes`. `P` is the pairs: a
/// [`Matrix`]'s slice, or a [`PairStream`] that words each pair as it is written.
#[derive(Debug, Serialize)]
pub struct MatrixDoc<'a, P: Serialize = &'a [PairClass]> {
    /// Always [`MATRIX_SCHEMA`].
    pub schema: &'static str,
    /// Endpoints in matrix order.
    pub endpoints: &'a [Endpoint],
    /// Classified pairs.
    pub pairs: P,
    /// Matrix-wide notes.
    pub notes: &'a [String],
}

/// The JSON document of a matrix.
pub fn doc(m: &Matrix) -> MatrixDoc<'_> {
    MatrixDoc {
        schema: MATRIX_SCHEMA,
        endpoints: &m.endpoints,
        pairs: &m.pairs,
        notes: &m.notes,
    }
}

/// The same document straight from a classification (`notes`: [`Classifier::notes`]), its
/// pairs worded one at a time while it is serialized.
pub fn doc_streamed<'a, 't>(
    cl: &'a Classifier<'t>,
    notes: &'a [String],
) -> MatrixDoc<'a, PairStream<'a, 't>> {
    MatrixDoc {
        schema: MATRIX_SCHEMA,
        endpoints: cl.endpoints(),
        pairs: PairStream(cl),
        notes,
    }
}

fn in_table(e: &Endpoint) -> bool {
    matches!(
        e.kind,
        DeviceKind::Gpu | DeviceKind::Accelerator | DeviceKind::Nic
    )
}

/// The nvidia-smi-style text: a row and a column per GPU, accelerator and NIC, then `CPU
/// Affinity` and `NUMA Affinity` (compute rows only), the legend, the NIC legend and the notes.
pub fn render_table(m: &LabelMatrix) -> String {
    let rows: Vec<usize> = (0..m.endpoints.len())
        .filter(|&i| in_table(&m.endpoints[i]))
        .collect();
    let eps: Vec<&Endpoint> = rows.iter().map(|&i| &m.endpoints[i]).collect();
    if eps.is_empty() {
        let mut out =
            String::from("No GPU, accelerator or NIC in this topology: no matrix to print.\n");
        for n in &m.notes {
            out.push_str(n);
            out.push('\n');
        }
        return out;
    }
    let mut t = Table::new();
    t.load_style(presets::NOTHING);
    t.force_no_tty();
    let mut header: Vec<String> = vec![String::new()];
    header.extend(eps.iter().map(|e| e.name.clone()));
    header.push("CPU Affinity".into());
    header.push("NUMA Affinity".into());
    t.set_header(header);
    let mut any_unknown = false;
    for &i in &rows {
        let a = &m.endpoints[i];
        let mut row = vec![a.name.clone()];
        for &j in &rows {
            let cell = if i == j { Label::X } else { m.label(i, j) };
            any_unknown |= cell == Label::Unknown;
            row.push(cell.to_string());
        }
        if a.kind.is_compute() {
            row.push(a.cpus.clone().unwrap_or_else(|| "N/A".into()));
            row.push(
                a.numa_node
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "N/A".into()),
            );
        } else {
            row.push(String::new());
            row.push(String::new());
        }
        t.add_row(row);
    }
    for (i, c) in t.column_iter_mut().enumerate() {
        if i > 0 && i <= eps.len() {
            c.set_cell_alignment(CellAlignment::Center);
        }
    }
    let mut out = String::new();
    for line in t.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push('\n');
    out.push_str(NVIDIA_SMI_LEGEND);
    if any_unknown {
        out.push_str(
            "  ?    = Not decidable from the input (NUMA node unknown); see `peerpath explain`\n",
        );
    }
    let nics: Vec<&&Endpoint> = eps.iter().filter(|e| e.kind == DeviceKind::Nic).collect();
    if !nics.is_empty() {
        out.push_str("\nNIC Legend:\n\n");
        for e in nics {
            let name = match (e.rdma.first(), e.net.first()) {
                (Some(r), _) => r.clone(),
                (None, Some(n)) => format!("{n} ({}, no RDMA device)", e.bdf),
                (None, None) => format!("{} (no RDMA device or netdev)", e.bdf),
            };
            out.push_str(&format!("  {}: {name}\n", e.name));
        }
    }
    let accs: Vec<&&Endpoint> = eps
        .iter()
        .filter(|e| e.kind == DeviceKind::Accelerator)
        .collect();
    if !accs.is_empty() {
        out.push_str("\nAccelerator Legend:\n\n");
        for e in accs {
            out.push_str(&format!("  {}: {}\n", e.name, e.bdf));
        }
    }
    if !m.notes.is_empty() {
        out.push('\n');
        for n in &m.notes {
            out.push_str(n);
            out.push('\n');
        }
    }
    out
}

fn link_text(l: &Option<LinkInfo>) -> String {
    match l {
        None => String::new(),
        Some(l) => {
            let cur = format!(
                "{} x{}",
                linkfmt::speed(l.current_gts),
                l.current_width
                    .map(|w| w.to_string())
                    .unwrap_or_else(|| "?".into())
            );
            let max = format!(
                "{} x{}",
                linkfmt::speed(l.max_gts),
                l.max_width
                    .map(|w| w.to_string())
                    .unwrap_or_else(|| "?".into())
            );
            format!("{cur} (max {max})")
        }
    }
}

/// The explanation of one pair: names, the hops with their links (current/max) and bandwidth,
/// the label and its reason, the bottleneck, and NCCL's decision with its rules.
pub fn render_explain(p: &PairClass, name_a: &str, name_b: &str) -> String {
    let mut out = format!("{name_a} ↔ {name_b}\n\nPath:\n");
    let mut t = Table::new();
    t.load_style(presets::NOTHING);
    t.force_no_tty();
    t.set_header(vec![
        "#",
        "node",
        "kind",
        "link in (current, max)",
        "GB/s",
        "note",
    ]);
    for (i, h) in p.hops.iter().enumerate() {
        t.add_row(vec![
            i.to_string(),
            h.node.clone(),
            h.kind.clone(),
            link_text(&h.link),
            h.gbytes_per_s.map(|g| format!("{g}")).unwrap_or_default(),
            h.note.clone().unwrap_or_default(),
        ]);
    }
    for line in t.lines() {
        out.push_str("  ");
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "\nnvidia-smi label: {}\n  why: {}\n",
        p.label, p.reason
    ));
    match (p.bottleneck_gbytes_per_s, p.bottleneck_hop) {
        (Some(g), Some(i)) => {
            let h = &p.hops[i];
            out.push_str(&format!(
                "\nBottleneck: {g} GB/s at hop {i} ({} {}){}\n",
                h.node,
                h.kind,
                h.note
                    .as_deref()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default()
            ));
        }
        _ => out.push_str("\nBottleneck: unknown (no link speed on the path is known)\n"),
    }
    out.push_str("  (NCCL's model figures: effective PCIe per-lane rates, NVLink per-link and inter-CPU rates)\n");
    let n = &p.nccl;
    let onoff = |b: bool| if b { "on" } else { "off" };
    let gdr = if n.scope == "gpu-nic" {
        onoff(n.gdr)
    } else {
        "n/a"
    };
    let p2p = if n.scope == "gpu-gpu" {
        onoff(n.p2p)
    } else {
        "n/a"
    };
    let code = n
        .path_code
        .map(|c| format!(" (code {c})"))
        .unwrap_or_default();
    out.push_str(&format!(
        "\nNCCL {}: path {}{code}; GDR {gdr}; P2P {p2p}\n",
        n.version, n.path
    ));
    if let Some(v) = n.pxn_via {
        out.push_str(&format!(
            "  sends (GPU→NIC) go PXN through the GPU at {v}\n"
        ));
    }
    for r in &n.rules {
        out.push_str(&format!("  - {r}\n"));
    }
    out
}
