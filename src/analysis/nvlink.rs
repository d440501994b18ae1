//! NVLink counts between GPUs as Slurm's `gres.conf` `Links=` holds them, decided here so that
//! the gres renderer only formats the cells.
//!
//! Data: the topology's NVLinks (from NVML: `nvmlDeviceGetNvLinkRemotePciInfo` per link,
//! tallied per peer; a `None` peer is the NVSwitch fabric, or `<nvlink>` in an XML source).

use crate::model::{Device, Topology};

/// What counts as an NVLink between two GPUs that reach each other only through NVSwitches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NvSwitchLinks {
    /// 0, as Slurm's `AutoDetect=nvml` writes (it counts only GPU-to-GPU links).
    #[default]
    Slurm,
    /// The smaller of the two GPUs' link counts into the fabric (what PyTorch's NVLink mesh
    /// detection does).
    Fabric,
}

/// NVLink count between GPUs `a` and `b` per the policy: the direct links (the larger of the
/// two directions' tallies, as each end may report them), plus under [`NvSwitchLinks::Fabric`]
/// the smaller of their fabric link counts. `None` when NVLink state is not visible.
pub fn link_count(t: &Topology, a: &Device, b: &Device, policy: NvSwitchLinks) -> Option<u32> {
    if !t.nvlink_visible {
        return None;
    }
    let direct: u32 = t
        .nvlinks
        .iter()
        .filter(|l| (l.a == a.bdf && l.b == Some(b.bdf)) || (l.a == b.bdf && l.b == Some(a.bdf)))
        .map(|l| l.count)
        .max()
        .unwrap_or(0);
    let fabric = |g: &Device| -> u32 {
        t.nvlinks
            .iter()
            .filter(|l| l.a == g.bdf && l.b.is_none())
            .map(|l| l.count)
            .sum()
    };
    Some(match policy {
        NvSwitchLinks::Slurm => direct,
        NvSwitchLinks::Fabric => direct + fabric(a).min(fabric(b)),
    })
}

/// One position of a GPU's NVLink row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvLinkCell {
    /// The GPU itself.
    Itself,
    /// The number of links to that GPU (0: none).
    Links(u32),
}

/// GPU `g`'s NVLink row over `gpus` (Slurm's `Links=` matrix row): per GPU, [`NvLinkCell::Itself`]
/// or its [`link_count`]. `None` when a count is needed and NVLink state is not visible.
pub fn nvlink_row(
    t: &Topology,
    gpus: &[&Device],
    g: &Device,
    policy: NvSwitchLinks,
) -> Option<Vec<NvLinkCell>> {
    gpus.iter()
        .map(|h| {
            if h.bdf == g.bdf {
                Some(NvLinkCell::Itself)
            } else {
                link_count(t, g, h, policy).map(NvLinkCell::Links)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testkit::TopoBuilder;

    /// Two GPUs with no NVLink data.
    fn node() -> Topology {
        let mut b = TopoBuilder::new(&["0-7"]);
        b.gpu("0000:13:00.0", None, Some(0));
        b.gpu("0000:15:00.0", None, Some(0));
        b.build()
    }

    #[test]
    fn nvlink_rows_follow_the_policy() {
        let gpu = |t: &Topology, a: &str| t.device(&a.parse().unwrap()).unwrap().clone();
        let t = node();
        let (g0, g1) = (gpu(&t, "0000:13:00.0"), gpu(&t, "0000:15:00.0"));
        assert_eq!(
            nvlink_row(&t, &[&g0, &g1], &g0, NvSwitchLinks::Slurm),
            None,
            "NVLink state unknown"
        );
        assert_eq!(
            nvlink_row(&t, &[&g0], &g0, NvSwitchLinks::Slurm),
            Some(vec![NvLinkCell::Itself]),
            "a lone GPU needs no NVLink state"
        );
        let mut b = TopoBuilder::new(&["0-7"]);
        b.gpu("0000:13:00.0", None, Some(0));
        b.gpu("0000:15:00.0", None, Some(0));
        b.nvlink("0000:13:00.0", Some("0000:15:00.0"), 4, Some(4));
        b.nvlink("0000:15:00.0", Some("0000:13:00.0"), 4, Some(4));
        b.nvlink("0000:13:00.0", None, 12, Some(4));
        b.nvlink("0000:15:00.0", None, 18, Some(4));
        let t = b.build();
        let (g0, g1) = (gpu(&t, "0000:13:00.0"), gpu(&t, "0000:15:00.0"));
        let row = |p| nvlink_row(&t, &[&g0, &g1], &g0, p);
        assert_eq!(
            row(NvSwitchLinks::Slurm),
            Some(vec![NvLinkCell::Itself, NvLinkCell::Links(4)]),
            "both ends' reports of one bundle count once"
        );
        assert_eq!(
            row(NvSwitchLinks::Fabric),
            Some(vec![NvLinkCell::Itself, NvLinkCell::Links(16)])
        );
    }
}
