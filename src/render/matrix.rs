//! The `nvidia-smi topo -m`-style matrix, its JSON document (`peerpath.matrix/2`), and the
//! hop-by-hop explanation of one pair. Renders [`crate::analysis::classify`] results; computes
//! nothing of its own.

use crate::analysis::classify::{
    Classifier, Endpoint, Label, LabelMatrix, NcclPath, NcclVersion, PairClass, PairStream,
    PairSummary,
};
use crate::model::linkfmt;
use crate::model::{DeviceKind, LinkInfo};
use comfy_table::{Table, presets};
use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};
use std::io;

/// Version tag of the matrix JSON document. `/2`: pairs are rows of short codes (no words, no
/// hops); `/1` carried every pair's reason, NCCL rules and hop list (docs/json.md).
pub const MATRIX_SCHEMA: &str = "peerpath.matrix/2";

/// The legend exactly as current `nvidia-smi topo -m` prints it (classification.md §1.2),
/// from `Legend:` to its last line.
pub const NVIDIA_SMI_LEGEND: &str = "Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
";

/// The fields of each row of [`MatrixDoc::pairs`], in order (the document's `pair_fields`).
/// `a`, `b`, `pxn_via`: indices into `endpoints`; `label`: the nvidia-smi cell; `nccl_path`,
/// `gdr`, `p2p`, `pxn_via`: NCCL's decision; `bottleneck_gbytes_per_s`: the path's slowest
/// link. All from [`Classifier::summaries`].
pub const PAIR_FIELDS: [&str; 8] = [
    "a",
    "b",
    "label",
    "nccl_path",
    "gdr",
    "p2p",
    "pxn_via",
    "bottleneck_gbytes_per_s",
];

/// The matrix JSON document (`peerpath matrix --format json`): the endpoints once, then one
/// row of short codes per pair, so it grows with the pairs and not with their words. Built from
/// a [`Classifier`] by [`doc`]; written by [`write_json`].
#[derive(Debug, Serialize)]
pub struct MatrixDoc<'a, 't, P = PairRows<'a, 't>> {
    /// Always [`MATRIX_SCHEMA`].
    pub schema: &'static str,
    /// The NCCL version whose rules decided `nccl_path`, `gdr`, `p2p` and `pxn_via`
    /// ([`crate::analysis::classify::ClassifyOptions::nccl_version`]).
    pub nccl_version: String,
    /// Each NCCL path type and the `PATH_*` number that version prints for it (null where the
    /// type did not exist yet), to decode log lines such as `distance 7 > 4`
    /// ([`NcclPath::code`]).
    pub nccl_path_codes: PathCodes,
    /// Endpoints in matrix order, with nvidia-smi's affinity columns (`cpus`, `numa_node`,
    /// `gpu_numa_id`) ([`Classifier::endpoints`]).
    pub endpoints: &'a [Endpoint],
    /// Always [`PAIR_FIELDS`].
    pub pair_fields: [&'static str; 8],
    /// One row per classified pair, in [`Classifier::pair_indices`] order ([`PairRows`]; a
    /// benchmark may give the same rows computed ahead, `benches/matrix_bound.rs`).
    pub pairs: P,
    /// With `--detail`: every pair again, in the same order, with its words and hops (the
    /// object `peerpath explain --format json` prints; [`Classifier::pairs`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<PairStream<'a, 't>>,
    /// Matrix-wide notes ([`Classifier::matrix_notes`]).
    pub notes: &'a [String],
}

/// [`NcclPath::ALL`] with the `PATH_*` number of each in one NCCL version, written as a JSON
/// object in NCCL's order.
#[derive(Debug, Clone, Copy)]
pub struct PathCodes(pub NcclVersion);

impl Serialize for PathCodes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(NcclPath::ALL.iter().map(|p| (p.as_str(), p.code(self.0))))
    }
}

/// The pairs of a classification as rows of [`PAIR_FIELDS`], each computed from
/// [`Classifier::summaries`] as it is written: nothing per pair is allocated or held.
pub struct PairRows<'a, 't>(pub &'a Classifier<'t>);

/// One row of [`PairRows`], in [`PAIR_FIELDS`] order ([`pair_row`]).
pub type PairRow = (
    usize,
    usize,
    Label,
    NcclPath,
    bool,
    bool,
    Option<usize>,
    Option<f64>,
);

impl Serialize for PairRows<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let cl = self.0;
        s.collect_seq(cl.summaries().map(|(i, j, p)| pair_row(cl, i, j, &p)))
    }
}

/// The row of the pair of endpoints `i` < `j` whose summary is `p` (an item of
/// [`Classifier::summaries`]): the one place a row's values are chosen.
pub fn pair_row(cl: &Classifier<'_>, i: usize, j: usize, p: &PairSummary) -> PairRow {
    (
        i,
        j,
        p.label,
        p.nccl_path,
        p.gdr,
        p.p2p,
        p.pxn_via.and_then(|g| cl.endpoint_index(&g)),
        p.bottleneck_gbytes_per_s,
    )
}

impl std::fmt::Debug for PairRows<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PairRows({} endpoints)", self.0.endpoints().len())
    }
}

/// The JSON document of a classification (`notes`: [`Classifier::matrix_notes`]); with
/// `detail`, each pair's words and hops follow the rows.
pub fn doc<'a, 't>(cl: &'a Classifier<'t>, notes: &'a [String], detail: bool) -> MatrixDoc<'a, 't> {
    let mut d = doc_with_rows(cl, notes, PairRows(cl));
    d.detail = detail.then_some(PairStream(cl));
    d
}

/// [`doc`] without `--detail`, its rows given (`rows` must serialize as [`PairRows`] of the
/// same classifier does: a benchmark's rows computed ahead, to time the writer alone).
pub fn doc_with_rows<'a, 't, P: Serialize>(
    cl: &'a Classifier<'t>,
    notes: &'a [String],
    rows: P,
) -> MatrixDoc<'a, 't, P> {
    MatrixDoc {
        schema: MATRIX_SCHEMA,
        nccl_version: cl.options().nccl_version.to_string(),
        nccl_path_codes: PathCodes(cl.options().nccl_version),
        endpoints: cl.endpoints(),
        pair_fields: PAIR_FIELDS,
        pairs: rows,
        detail: None,
        notes,
    }
}

/// Writes the document followed by a newline: pretty-printed down to its members' elements,
/// and each element (an endpoint, a pair row, a detail object) compact on one line, so a row
/// costs its values and a line break, not an indented line per value.
pub fn write_json<W: io::Write, P: Serialize>(
    d: &MatrixDoc<'_, '_, P>,
    mut w: W,
) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut w, RowsFormatter::default());
    d.serialize(&mut ser)?;
    w.write_all(b"\n").map_err(serde_json::Error::io)
}

/// serde_json's pretty layout for containers up to [`ROW_DEPTH`] levels deep (the document
/// and its members), the compact layout inside them.
#[derive(Default)]
struct RowsFormatter {
    pretty: PrettyFormatter<'static>,
    /// Containers open around the value being written.
    depth: usize,
}

/// The document is level 1, its arrays level 2, their elements (rows) level 3.
const ROW_DEPTH: usize = 2;

impl RowsFormatter {
    fn in_row(&self) -> bool {
        self.depth > ROW_DEPTH
    }
}

impl Formatter for RowsFormatter {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        if self.in_row() {
            w.write_all(b"[")
        } else {
            self.pretty.begin_array(w)
        }
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let r = if self.in_row() {
            w.write_all(b"]")
        } else {
            self.pretty.end_array(w)
        };
        self.depth -= 1;
        r
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if !self.in_row() {
            self.pretty.begin_array_value(w, first)
        } else if first {
            Ok(())
        } else {
            w.write_all(b",")
        }
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.in_row() {
            Ok(())
        } else {
            self.pretty.end_array_value(w)
        }
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        if self.in_row() {
            w.write_all(b"{")
        } else {
            self.pretty.begin_object(w)
        }
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let r = if self.in_row() {
            w.write_all(b"}")
        } else {
            self.pretty.end_object(w)
        };
        self.depth -= 1;
        r
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if !self.in_row() {
            self.pretty.begin_object_key(w, first)
        } else if first {
            Ok(())
        } else {
            w.write_all(b",")
        }
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.in_row() {
            w.write_all(b":")
        } else {
            self.pretty.begin_object_value(w)
        }
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.in_row() {
            Ok(())
        } else {
            self.pretty.end_object_value(w)
        }
    }
}

/// Options of the text table.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableOptions {
    /// Leave SR-IOV virtual functions out of the rows and columns (their NIC numbers stay
    /// nvidia-smi's: the remaining columns keep their names, and a note lists the folded ones).
    pub fold_vfs: bool,
}

/// The nvidia-smi-style text with default options ([`render_table_with`]).
pub fn render_table(m: &LabelMatrix) -> String {
    render_table_with(m, TableOptions::default())
}

/// The text of `nvidia-smi topo -m` as current drivers print it to a file or pipe, so scripts
/// written for nvidia-smi parse it unchanged: a header row of tab-separated column names
/// starting with an empty cell (`\tGPU0\t…\tNIC0\t…\tCPU Affinity\tNUMA Affinity\tGPU NUMA
/// ID`); one row per GPU starting at column 0 (`GPU0\t X \tNV18\t…`) with its CPU list, NUMA
/// node and GPU-memory NUMA node (`N/A` where nvidia-smi prints it); one row per NIC with the
/// affinity cells empty; a blank line, the `Legend:` block verbatim, the `NIC Legend:` block
/// (`  NIC0: mlx5_0`). Everything peerpath adds (NVLink not visible, NIC numbering rebuilt,
/// `?` cells, accelerators, folded VFs, the NCCL view) goes in notes after a blank line below
/// the legends, never into a cell. Accelerators are not columns (nvidia-smi has none): their
/// labels are listed in the notes.
pub fn render_table_with(m: &LabelMatrix, opts: TableOptions) -> String {
    let in_table = |e: &Endpoint| {
        matches!(e.kind, DeviceKind::Gpu | DeviceKind::Nic)
            && !(opts.fold_vfs && e.physfn.is_some())
    };
    let rows: Vec<usize> = (0..m.endpoints.len())
        .filter(|&i| in_table(&m.endpoints[i]))
        .collect();
    let eps: Vec<&Endpoint> = rows.iter().map(|&i| &m.endpoints[i]).collect();
    let accs: Vec<usize> = (0..m.endpoints.len())
        .filter(|&i| m.endpoints[i].kind == DeviceKind::Accelerator)
        .collect();
    if eps.is_empty() && accs.is_empty() {
        let mut out =
            String::from("No GPU, accelerator or NIC in this topology: no matrix to print.\n");
        for n in &m.notes {
            out.push_str(n);
            out.push('\n');
        }
        return out;
    }
    let mut out = String::new();
    let mut any_unknown = false;
    if !eps.is_empty() {
        for e in &eps {
            out.push('\t');
            out.push_str(&e.name);
        }
        out.push_str("\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n");
        for &i in &rows {
            let a = &m.endpoints[i];
            out.push_str(&a.name);
            for &j in &rows {
                out.push('\t');
                if i == j {
                    out.push_str(" X ");
                } else {
                    let cell = m.label(i, j);
                    any_unknown |= cell == Label::Unknown;
                    out.push_str(&cell.to_string());
                }
            }
            if a.kind == DeviceKind::Gpu {
                let na = || "N/A".to_string();
                out.push('\t');
                out.push_str(&a.cpus.clone().unwrap_or_else(na));
                out.push('\t');
                out.push_str(&a.numa_node.map(|n| n.to_string()).unwrap_or_else(na));
                out.push_str("\t\t");
                out.push_str(&a.gpu_numa_id.map(|n| n.to_string()).unwrap_or_else(na));
            } else {
                out.push_str("\t\t\t\t");
            }
            out.push('\n');
        }
        out.push('\n');
        out.push_str(NVIDIA_SMI_LEGEND);
        let nics: Vec<&&Endpoint> = eps.iter().filter(|e| e.kind == DeviceKind::Nic).collect();
        if !nics.is_empty() {
            out.push_str("\nNIC Legend:\n\n");
            for e in nics {
                let name = match (e.rdma.first(), e.net.first()) {
                    (Some(r), _) => r.clone(),
                    (None, Some(n)) => n.clone(),
                    (None, None) => e.bdf.to_string(),
                };
                out.push_str(&format!("  {}: {name}\n", e.name));
            }
        }
    }
    let mut notes: Vec<String> = Vec::new();
    if any_unknown {
        notes.push(
            "? = not decidable from the input (NUMA node unknown); see `peerpath explain`".into(),
        );
    }
    if opts.fold_vfs {
        let folded: Vec<String> = m
            .endpoints
            .iter()
            .filter(|e| e.kind == DeviceKind::Nic && e.physfn.is_some())
            .map(|e| {
                format!(
                    "{} ({})",
                    e.name,
                    e.rdma.first().cloned().unwrap_or_default()
                )
            })
            .collect();
        if !folded.is_empty() {
            notes.push(format!(
                "SR-IOV virtual functions folded (--fold-vfs): {}",
                folded.join(", ")
            ));
        }
    }
    for &k in &accs {
        let a = &m.endpoints[k];
        let cells: Vec<String> = accs
            .iter()
            .chain(&rows)
            .filter(|&&j| j != k)
            .map(|&j| format!("{} {}", m.endpoints[j].name, m.label(k, j)))
            .collect();
        let na = || "N/A".to_string();
        notes.push(format!(
            "{} ({}, accelerator, CPUs {}, NUMA {}; not a column of nvidia-smi's matrix): {}",
            a.name,
            a.bdf,
            a.cpus.clone().unwrap_or_else(na),
            a.numa_node.map(|n| n.to_string()).unwrap_or_else(na),
            if cells.is_empty() {
                "nothing to pair with".to_string()
            } else {
                cells.join(", ")
            }
        ));
    }
    notes.extend(m.notes.iter().cloned());
    if !notes.is_empty() {
        out.push('\n');
        for n in &notes {
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
        "\n{}: {}\n  why: {}\n",
        if p.nccl.library == "RCCL" {
            "label (nvidia-smi's classes, rocm-smi's XGMI)"
        } else {
            "nvidia-smi label"
        },
        p.label,
        p.reason
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
        "\n{} {}: path {}{code}; GDR {gdr}; P2P {p2p}\n",
        n.library, n.version, n.path
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
