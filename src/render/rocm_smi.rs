//! The `rocm-smi --showtopo` layout of an AMD node (`peerpath matrix --format rocm-smi`): the
//! Weight, Hops, Link Type (and, when the input holds xGMI bandwidths, Bandwidth) tables and
//! the Numa Nodes block, spaced exactly as rocm-smi prints them (ROCm/rocm_smi_lib
//! `python_smi_tools/rocm_smi.py`: `printLogSpacer` centres a title in 90 `=`; a table row is
//! `%-6s ` then `%-12s ` per cell; `printLog` writes `GPU[i]\t\t: name: value`), so a script
//! written for rocm-smi's output reads these blocks unchanged. rocm-smi shows no NIC: a block in
//! the same style gives each GPU's class to each NIC (nvidia-smi's PIX/PXB/PHB/NODE/SYS), then
//! the NIC legend and peerpath's notes. Formatting only: [`crate::analysis::rocm_topo`]
//! computes the values.

use crate::analysis::classify::{Endpoint, Label};
use crate::analysis::rocm_topo::{RocmPair, RocmTopo};
use std::fmt::Write;

/// rocm-smi's log width (`appWidth`).
const WIDTH: usize = 90;

/// `printLogSpacer(title)`: the title (made even with one more fill character) centred between
/// runs of `=` to [`WIDTH`].
pub fn spacer(title: &str) -> String {
    let mut t = title.to_string();
    if t.chars().count() % 2 == 1 {
        t.push('=');
    }
    let side = WIDTH.saturating_sub(t.chars().count()) / 2;
    format!("{}{t}{}", "=".repeat(side), "=".repeat(side))
}

/// One table: the header of GPU columns and a row per GPU, cells from `cell(i, j)`.
fn table(
    o: &mut String,
    cols: &[String],
    rows: &[String],
    mut cell: impl FnMut(usize, usize) -> String,
) {
    o.push_str("       ");
    for c in cols {
        let _ = write!(o, "{c:<12} ");
    }
    o.push('\n');
    for (i, r) in rows.iter().enumerate() {
        let _ = write!(o, "{r:<6} ");
        for j in 0..cols.len() {
            let _ = write!(o, "{:<12} ", cell(i, j));
        }
        o.push('\n');
    }
}

fn na<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "N/A".into())
}

/// The rocm-smi layout of `r` over `eps` (the classifier's endpoints), then `notes`.
pub fn render(r: &RocmTopo, eps: &[Endpoint], notes: &[String]) -> String {
    let mut o = String::new();
    o.push_str(&spacer(" peerpath topology (rocm-smi --showtopo layout) "));
    o.push_str("\n\n");
    if r.gpus.is_empty() {
        o.push_str("No GPU in this topology: no rocm-smi tables to print.\n");
    } else {
        let names: Vec<String> = (0..r.gpus.len()).map(|i| format!("GPU{i}")).collect();
        let pair = |i: usize, j: usize| -> Option<RocmPair> { r.pair(i, j) };
        o.push_str(&spacer(" Weight between two GPUs "));
        o.push('\n');
        table(&mut o, &names, &names, |i, j| match pair(i, j) {
            None => "0".into(),
            Some(p) => na(p.weight),
        });
        o.push('\n');
        o.push_str(&spacer(" Hops between two GPUs "));
        o.push('\n');
        table(&mut o, &names, &names, |i, j| match pair(i, j) {
            None => "0".into(),
            Some(p) => na(p.hops),
        });
        o.push('\n');
        o.push_str(&spacer(" Link Type between two GPUs "));
        o.push('\n');
        table(&mut o, &names, &names, |i, j| match pair(i, j) {
            None => "0".into(),
            Some(p) => p.link.as_str().into(),
        });
        o.push('\n');
        let any_bw = (0..names.len())
            .any(|i| (0..names.len()).any(|j| pair(i, j).is_some_and(|p| p.bandwidth.is_some())));
        if any_bw {
            o.push_str(&spacer(" Bandwidth "));
            o.push('\n');
            table(&mut o, &names, &names, |i, j| {
                match pair(i, j).and_then(|p| p.bandwidth) {
                    Some((lo, hi)) => format!("{lo}-{hi}"),
                    None => "N/A".into(),
                }
            });
            o.push_str("Format: min-max; Units: mps\n");
            o.push_str("\"0-0\" min-max bandwidth indicates devices are not connected directly\n");
            o.push('\n');
        }
        o.push_str(&spacer(" Numa Nodes "));
        o.push('\n');
        for (i, n) in r.numa.iter().enumerate() {
            let v = n.map(|n| n.to_string()).unwrap_or_else(|| "-1".into());
            let _ = writeln!(o, "GPU[{i}]\t\t: (Topology) Numa Node: {v}");
            let _ = writeln!(o, "GPU[{i}]\t\t: (Topology) Numa Affinity: {v}");
        }
        if !r.nics.is_empty() {
            o.push_str(&spacer(" Link Type between GPUs and NICs "));
            o.push('\n');
            let cols: Vec<String> = r.nics.iter().map(|&k| eps[k].name.clone()).collect();
            table(&mut o, &cols, &names, |i, k| match r.gpu_nic(i, k) {
                Label::Unknown => "?".into(),
                l => l.to_string(),
            });
            o.push_str("\nNIC Legend:\n\n");
            for &k in &r.nics {
                let e = &eps[k];
                let name = e
                    .rdma
                    .first()
                    .or(e.net.first())
                    .cloned()
                    .unwrap_or_else(|| e.bdf.to_string());
                let _ = writeln!(o, "  {}: {name}", e.name);
            }
        }
    }
    o.push_str(&spacer(" End of peerpath topology "));
    o.push('\n');
    if !notes.is_empty() {
        o.push('\n');
        for n in notes {
            o.push_str(n);
            o.push('\n');
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spacers_are_rocm_smis() {
        // Lines of shared/reference/amd/rocm-smi-showtopo-ms-swift-mi308x-1.txt.
        assert_eq!(
            spacer(" Weight between two GPUs "),
            "================================ Weight between two GPUs ================================="
        );
        assert_eq!(
            spacer(" Numa Nodes "),
            "======================================= Numa Nodes ======================================="
        );
        assert_eq!(
            spacer(" Link Type between two GPUs "),
            "=============================== Link Type between two GPUs ==============================="
        );
    }
}
