//! `peerpath matrix` and `peerpath explain`: load a topology, classify, render.

use anyhow::{Result, bail};
use peerpath::analysis::classify::{Classifier, ClassifyOptions, Endpoint};
use peerpath::analysis::nccl::NcclVersion;
use peerpath::model::{Bdf, Topology};
use peerpath::render::matrix;
use std::io::Write;

/// Output formats of `matrix`.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum MatrixFormat {
    /// nvidia-smi-style table with legends.
    Table,
    /// `peerpath.matrix/2` JSON: endpoints, one row of codes per pair (docs/matrix.md).
    Json,
    /// rocm-smi `--showtopo` layout for AMD nodes: weight, hops and link-type tables, NUMA
    /// nodes, then each GPU's class to each NIC (docs/matrix.md).
    RocmSmi,
}

/// Parses `--nccl-version`.
pub fn parse_nccl_version(s: &str) -> Result<NcclVersion, String> {
    s.parse::<NcclVersion>().map_err(|e| e.to_string())
}

/// `peerpath matrix`, written to `out`. The JSON document is streamed: each pair's row (and
/// with `detail`, its words and hops) is computed as it is written, so memory stays flat
/// however many pairs the node has. `fold_vfs` applies to the table, `detail` to JSON.
pub fn run_matrix(
    t: &Topology,
    format: MatrixFormat,
    nccl_version: Option<NcclVersion>,
    fold_vfs: bool,
    detail: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let opts = ClassifyOptions {
        nccl_version: nccl_version.unwrap_or_default(),
    };
    let c = Classifier::new(t, &opts);
    match format {
        MatrixFormat::Table => out.write_all(
            matrix::render_table_with(&c.label_matrix(), matrix::TableOptions { fold_vfs })
                .as_bytes(),
        )?,
        MatrixFormat::RocmSmi => out.write_all(
            peerpath::render::rocm_smi::render(
                &peerpath::analysis::rocm_topo::rocm_topo(&c),
                c.endpoints(),
                &c.matrix_notes(),
            )
            .as_bytes(),
        )?,
        MatrixFormat::Json => {
            let notes = c.matrix_notes();
            // serde_json writes every token (a quote, a colon, an indent) as its own write: into
            // a buffer of a concrete type they are inlined copies, where through `dyn Write` each
            // was a call.
            let mut buf = std::io::BufWriter::with_capacity(1 << 16, &mut *out);
            matrix::write_json(&matrix::doc(&c, &notes, detail), &mut buf)?;
            buf.flush()?;
        }
    }
    Ok(())
}

/// Resolves a command-line name to an endpoint: `0` / `GPU0` (GPU index), `NIC0`, `ACC0`,
/// `NVME0`, a PCI address, an RDMA device name or a netdev name.
pub fn resolve<'a>(eps: &'a [Endpoint], t: &Topology, name: &str) -> Result<(Bdf, String)> {
    let label = |e: &'a Endpoint| (e.bdf, format!("{} ({})", e.name, e.bdf));
    if let Ok(i) = name.parse::<usize>() {
        let gpus: Vec<&Endpoint> = eps.iter().filter(|e| e.name.starts_with("GPU")).collect();
        if let Some(e) = gpus.get(i) {
            return Ok(label(e));
        }
    }
    let upper = name.to_ascii_uppercase();
    if let Some(e) = eps.iter().find(|e| e.name == upper) {
        return Ok(label(e));
    }
    if let Some(e) = eps
        .iter()
        .find(|e| e.rdma.iter().any(|r| r == name) || e.net.iter().any(|n| n == name))
    {
        return Ok(label(e));
    }
    if let Ok(b) = name.parse::<Bdf>() {
        if let Some(e) = eps.iter().find(|e| e.bdf == b) {
            return Ok(label(e));
        }
        if let Some(d) = t.device(&b) {
            return Ok((b, format!("{} ({})", b, d.kind.as_str())));
        }
    }
    // A netdev or RDMA name on a device that is not an endpoint (a VF, an Ethernet port).
    if let Some(d) = t
        .devices
        .iter()
        .find(|d| d.os_devices.iter().any(|o| o.name == name))
    {
        return Ok((d.bdf, format!("{name} ({})", d.bdf)));
    }
    let mut valid: Vec<String> = Vec::new();
    for e in eps {
        let mut s = format!("{} {}", e.name, e.bdf);
        for x in e.rdma.iter().chain(&e.net) {
            s.push(' ');
            s.push_str(x);
        }
        valid.push(s);
    }
    if valid.is_empty() {
        bail!(
            "unknown device {name:?}: this topology has no GPU, accelerator, NIC or NVMe endpoint"
        );
    }
    bail!(
        "unknown device {name:?}; valid names (GPU index, name, PCI address, RDMA device, netdev):\n  {}",
        valid.join("\n  ")
    )
}

/// `peerpath explain A B`.
pub fn run_explain(
    t: &Topology,
    a: &str,
    b: &str,
    nccl_version: Option<NcclVersion>,
    json: bool,
) -> Result<String> {
    let opts = ClassifyOptions {
        nccl_version: nccl_version.unwrap_or_default(),
    };
    let c = Classifier::new(t, &opts);
    let (ba, na) = resolve(c.endpoints(), t, a)?;
    let (bb, nb) = resolve(c.endpoints(), t, b)?;
    let Some(p) = c.pair(&ba, &bb) else {
        bail!("{na} or {nb} is not in the topology");
    };
    if json {
        return Ok(serde_json::to_string_pretty(&p)? + "\n");
    }
    let mut out = matrix::render_explain(&p, &na, &nb);
    let notes = c.notes();
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            out.push_str(&n);
            out.push('\n');
        }
    }
    Ok(out)
}
