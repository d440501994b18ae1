//! The verdict on one GPU whose best rail NIC gives it no GPUDirect RDMA, or gives it only
//! because a setting admits the path: [`judge_gpu`] runs its steps in order (unknown, the
//! transport off, GDR on, a setting that turns it off, staged in a VM, then the node's
//! arrangement), over one [`GpuCase`].

use super::arrangement::{Arrangement, DesignWhy, Placement, location, target};
use super::judged::{Judged, Judgement};
use super::nccl_settings::setting_evidence;
use super::{Ctx, Evidence, RemedyClass, Severity};
use crate::analysis::classify::Label;
use crate::analysis::classify::topo_file::FileJudgement;
use crate::analysis::design::Design;
use crate::analysis::nccl::NcclPath;
use crate::analysis::settings::Effective;
use crate::model::Device;

/// The audit's judgement of one GPU whose best rail NIC gives it no GPUDirect RDMA, or gives
/// it only because a setting admits the path.
pub(super) struct GpuVerdict {
    pub(super) class: RemedyClass,
    pub(super) severity: Severity,
    /// What NCCL does on the pair and why (the end of the summary).
    pub(super) words: String,
    pub(super) remedy: String,
    pub(super) evidence: Vec<Evidence>,
    /// The NIC to move, when misplaced (index into `Ctx::nics`).
    pub(super) move_nic: Option<usize>,
}

/// A verdict that moves no NIC.
fn verdict(
    class: RemedyClass,
    severity: Severity,
    words: String,
    remedy: String,
    evidence: Vec<Evidence>,
) -> GpuVerdict {
    GpuVerdict {
        class,
        severity,
        words,
        remedy,
        evidence,
        move_nic: None,
    }
}

/// What every step of [`judge_gpu`] reads: the GPU, its best rail NIC, their judgement, the
/// effective settings and the GDR level that applies to the pair.
struct GpuCase<'c, 'v, 'a> {
    ctx: &'c Ctx<'a>,
    gi: usize,
    g: &'a Device,
    n: &'a Device,
    j: Judgement,
    judged: &'c Judged<'v, 'a>,
    arrangement: &'c Arrangement,
    design: Option<&'c Design>,
    st: &'c Effective,
    lib: &'static str,
    /// The GPU reaches its CPU over NVLink-C2C.
    gpu_c2c: bool,
    /// The level that applies before any setting, and what decided it.
    fallback: NcclPath,
    level_words: String,
    /// The GDR-level settings (taken by the verdict that returns).
    evidence: Vec<Evidence>,
}

/// Judges GPU `gi` against rail NIC `ni` (its best): unknown, GDR admitted by a setting, a
/// setting that turns GDR off, a misplaced adapter or the node's design (module docs).
pub(super) fn judge_gpu(
    ctx: &Ctx,
    gi: usize,
    ni: usize,
    judged: &Judged,
    arrangement: &Arrangement,
    design: Option<&Design>,
) -> GpuVerdict {
    let mut c = GpuCase::new(ctx, gi, ni, judged, arrangement, design);
    if let Some(v) = c.unknown() {
        return v;
    }
    if let Some(x) = c.st.transport_off(c.n) {
        return verdict(
            RemedyClass::Setting,
            Severity::Error,
            format!(
                "{}: {} does not drive this NIC over RDMA (NET/Socket), so no GPUDirect RDMA on any path",
                x.described(),
                c.lib
            ),
            format!("unset {} (set in {})", x.name, x.source),
            vec![setting_evidence(x)],
        );
    }
    if let Some(v) = c.gdr_on() {
        return v;
    }
    if let Some(v) = c.file_off() {
        return v;
    }
    if let Some(v) = c.setting_off() {
        return v;
    }
    let staged = format!(
        "{} does not use GPUDirect RDMA beyond {} ({}): it stages this GPU's traffic through host memory",
        c.lib,
        c.shown(c.st.gdr_level_or(c.fallback)),
        c.level_words
    );
    if ctx.virtualized {
        return c.staged_in_vm(staged);
    }
    c.by_arrangement(staged)
}

impl<'c, 'v, 'a> GpuCase<'c, 'v, 'a> {
    /// Reads the pair's facts and the GDR level that applies to it.
    fn new(
        ctx: &'c Ctx<'a>,
        gi: usize,
        ni: usize,
        judged: &'c Judged<'v, 'a>,
        arrangement: &'c Arrangement,
        design: Option<&'c Design>,
    ) -> Self {
        let (g, n, j) = (ctx.gpus[gi], ctx.nics[ni], judged.at(gi, ni));
        let st = ctx.cl.settings();
        let gpu_c2c = ctx
            .paths()
            .index(&g.bdf)
            .and_then(|i| ctx.paths().c2c(i))
            .is_some();
        let (fallback, fallback_words) = ctx.cl.default_gdr_level(&g.bdf, &n.bdf);
        let mut c = GpuCase {
            ctx,
            gi,
            g,
            n,
            j,
            judged,
            arrangement,
            design,
            st,
            lib: ctx.cl.library(),
            gpu_c2c,
            fallback,
            level_words: String::new(),
            evidence: st
                .gdr_level
                .iter()
                .map(|a| setting_evidence(&a.setting))
                .collect(),
        };
        c.level_words = st.gdr_level_words(c.shown(fallback), &fallback_words);
        c
    }

    /// P2C admits what PXB admits unless the GPU reaches its CPU over C2C: say PXB there.
    fn shown(&self, p: NcclPath) -> NcclPath {
        if p == NcclPath::P2c && !self.gpu_c2c {
            NcclPath::Pxb
        } else {
            p
        }
    }

    /// The recognised design's evidence.
    fn design_ev(&self) -> Vec<Evidence> {
        self.design
            .map(|d| {
                d.evidence
                    .iter()
                    .map(|(p, r)| Evidence::new(p.clone(), r.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A verdict carrying the GDR-level settings as its evidence.
    fn with_evidence(
        &mut self,
        class: RemedyClass,
        severity: Severity,
        words: String,
        remedy: String,
    ) -> GpuVerdict {
        verdict(
            class,
            severity,
            words,
            remedy,
            std::mem::take(&mut self.evidence),
        )
    }

    /// Whether NCCL uses GDR cannot be decided: POWER's NVLink to the CPU, an unknown path
    /// class, or RCCL's Rome rule without the CPU model.
    fn unknown(&mut self) -> Option<GpuVerdict> {
        let (g, n, j) = (self.g, self.n, self.j);
        // On POWER8/9 an NVIDIA GPU can reach the CPU over NVLink, a link no input here can
        // represent: the PCIe label may not be the route NCCL takes.
        if power_cpu(&self.ctx.topo.machine) && g.vendor_id == Some(0x10de) {
            return Some(self.with_evidence(
                RemedyClass::Unknown,
                Severity::Unknown,
                "on this POWER CPU the GPU may reach the CPU over NVLink, which this input cannot show, so whether NCCL uses GPUDirect RDMA is unknown from the PCIe path alone".into(),
                "run `peerpath probe` on the node, or read the job's NCCL log (`peerpath evidence`), to see whether GDR is used".into(),
            ));
        }
        if let Some(v) = self.file_unknown() {
            return Some(v);
        }
        if j.label == Label::Unknown {
            return Some(self.with_evidence(
                RemedyClass::Unknown,
                Severity::Unknown,
                "the input cannot decide the path class, so whether NCCL uses GPUDirect RDMA is unknown".into(),
                "audit the live machine or a `peerpath capture` snapshot".into(),
            ));
        }
        if !j.gdr && self.st.gdr_level.is_none() && self.ctx.cl.rccl_rome_undecided(&g.bdf, &n.bdf)
        {
            return Some(self.with_evidence(
                RemedyClass::Unknown,
                Severity::Unknown,
                "RCCL's Rome rule (ncclTopoCheckGdr) admits this pair at PHB on an AMD Rome-class CPU, and the CPU model is not visible in this input, so whether RCCL uses GPUDirect RDMA here is unknown".into(),
                "audit the live machine or a `peerpath capture` snapshot (its /proc/cpuinfo names the CPU), or run RCCL with NCCL_NET_GDR_LEVEL=PHB".into(),
            ));
        }
        None
    }

    /// GDR on across the host bridge: yet the NIC misplaced, the VM's view read through the
    /// plugin's own file, or admitted by the level.
    fn gdr_on(&mut self) -> Option<GpuVerdict> {
        let (ctx, g, n, j, lib) = (self.ctx, self.g, self.n, self.j, self.lib);
        let level_words = &self.level_words;
        if !j.gdr {
            return None;
        }
        if let Some(FileJudgement::Decided {
            path, words, tree, ..
        }) = ctx.cl.topo_file_pair(&g.bdf, &n.bdf)
        {
            let words = format!(
                "judged on NCCL_TOPO_FILE={path}, as NCCL will: {words}; the level admits {} ({level_words}), so {lib} uses GPUDirect RDMA on this pair (the node's own tree has them {}: {tree} to {lib} without the file)",
                j.nccl_path,
                j.word()
            );
            let ev = self.file_evidence(path);
            self.evidence.extend(ev);
            return Some(self.with_evidence(
                RemedyClass::None,
                Severity::Info,
                words,
                "none while the file describes this machine type".into(),
            ));
        }
        if !j.local()
            && !ctx.virtualized
            && let Placement::Misplaced { nic: k } = self.arrangement.placement(self.gi)
        {
            let words = format!(
                "{level_words} admits {} so {lib} uses GPUDirect RDMA across the host bridge, but the NIC is misplaced",
                j.nccl_path
            );
            let evidence = std::mem::take(&mut self.evidence);
            return Some(misplaced(ctx, g, k, self.judged, words, evidence));
        }
        if let Some(file) = ctx.cl.plugin_file_words(&g.bdf, &n.bdf) {
            // The VM hides the switch; the plugin's own file is NCCL's tree for this pair.
            let words = format!(
                "that is the VM's view: {lib} reads {file}, so the pair is {} to {lib}, which its level admits ({level_words}): GPUDirect RDMA on",
                j.nccl_path
            );
            let ev = self.design_ev();
            self.evidence.extend(ev);
            return Some(self.with_evidence(
                RemedyClass::None,
                Severity::Info,
                words,
                "none: the plugin sets NCCL_TOPO_FILE itself on this instance type (a job that sets its own NCCL_TOPO_FILE replaces it)".into(),
            ));
        }
        let mut words = format!(
            "{level_words}: it admits {}, so {lib} uses GPUDirect RDMA on this pair",
            j.nccl_path
        );
        if let Some(d) = self.design {
            words.push_str(&format!(" (by design on this {}: {})", d.name, d.note));
            let ev = self.design_ev();
            self.evidence.extend(ev);
        }
        Some(self.with_evidence(
            RemedyClass::None,
            Severity::Info,
            words,
            "none; GDR across the host bridge pays where it is faster than staging through host memory: `peerpath probe` (or ib_write_bw --use_cuda) on this pair shows it".into(),
        ))
    }

    /// The job's `NCCL_TOPO_FILE` could not be read, or places this pair where its tree is not
    /// joined to the node's: NCCL's path for it is unknown.
    fn file_unknown(&mut self) -> Option<GpuVerdict> {
        let (ctx, g, n, j, lib) = (self.ctx, self.g, self.n, self.j, self.lib);
        let (path, why) = match ctx.cl.topo_file_pair(&g.bdf, &n.bdf)? {
            FileJudgement::Unreadable { path, why } => (
                path,
                format!(
                    "it could not be read here ({why}), so the tree {lib} judges this pair on is unknown"
                ),
            ),
            FileJudgement::Unknown { path, why } => (path, why.to_string()),
            FileJudgement::Decided { .. } => return None,
        };
        let words = format!(
            "{lib} reads NCCL_TOPO_FILE={path}: {why}; whether it uses GPUDirect RDMA here is unknown (the node's own tree has them {}: {})",
            j.word(),
            j.nccl_path
        );
        let ev = self.file_evidence(path);
        self.evidence.extend(ev);
        Some(self.with_evidence(
            RemedyClass::Unknown,
            Severity::Unknown,
            words,
            "run the audit where the job's file is readable (NCCL reads it as the job's user), or read the job's NCCL log (`peerpath evidence`)".into(),
        ))
    }

    /// The job's `NCCL_TOPO_FILE` keeps GDR off on a pair the node's own tree would give it.
    fn file_off(&mut self) -> Option<GpuVerdict> {
        let (ctx, g, n, j, lib) = (self.ctx, self.g, self.n, self.j, self.lib);
        let Some(FileJudgement::Decided {
            path,
            words,
            tree,
            tree_gdr: true,
            ..
        }) = ctx.cl.topo_file_pair(&g.bdf, &n.bdf)
        else {
            return None;
        };
        if j.gdr {
            return None;
        }
        let words = format!(
            "judged on NCCL_TOPO_FILE={path}, as NCCL will: {words}, beyond {} ({}), so {lib} stages this GPU's traffic through host memory; the node's own tree has them {} ({tree}), where {lib} would use GPUDirect RDMA",
            self.shown(self.st.gdr_level_or(self.fallback)),
            self.level_words,
            j.word()
        );
        let ev = self.file_evidence(path);
        self.evidence.extend(ev);
        Some(self.with_evidence(
            RemedyClass::Setting,
            Severity::Error,
            words,
            "use the topology file made for this machine type, or unset NCCL_TOPO_FILE".into(),
        ))
    }

    /// Where the job names its topology file (the setting), and the file.
    fn file_evidence(&self, path: &str) -> Vec<Evidence> {
        let mut ev: Vec<Evidence> = self.st.topo_file.iter().map(setting_evidence).collect();
        if ev.is_empty() {
            ev.push(Evidence::new("env NCCL_TOPO_FILE", path));
        }
        ev
    }

    /// A setting keeps GDR off on a path the release's own rule admits, or a setting NCCL
    /// does not read as written, whose meaning would admit it.
    fn setting_off(&self) -> Option<GpuVerdict> {
        let (st, j) = (self.st, self.j);
        let v = st.version;
        // The release's own rule without any GDR setting: does it admit this path?
        let bare = Effective {
            version: v,
            ..Default::default()
        };
        let bare_level = if self.fallback == NcclPath::Phb {
            self.fallback
        } else {
            bare.default_gdr_level()
        };
        if bare.gdr_allows(j.nccl_path, bare_level, self.gpu_c2c) {
            let culprit = st.gdr_level.as_ref().map(|a| &a.setting).or(st
                .gdr_c2c
                .as_ref()
                .filter(|a| !a.value)
                .map(|a| &a.setting));
            if let Some(x) = culprit {
                return Some(verdict(
                    RemedyClass::Setting,
                    Severity::Error,
                    format!(
                        "{} turns GPUDirect RDMA off on this {} path, which NCCL {v}'s default ({}) admits",
                        x.described(),
                        j.nccl_path,
                        self.shown(bare_level)
                    ),
                    format!(
                        "unset {} (set in {}), or raise it to at least {}",
                        x.name, x.source, j.nccl_path
                    ),
                    vec![setting_evidence(x)],
                ));
            }
        }
        // A setting NCCL does not read as written, whose meaning would admit the path.
        for m in &st.misread {
            let Some(meant) = m.meant.as_deref() else {
                continue;
            };
            let Some(lv) = meant
                .strip_prefix("NCCL_NET_GDR_LEVEL=")
                .and_then(|x| crate::analysis::settings::read_level(x, v))
            else {
                continue;
            };
            if st.gdr_allows(j.nccl_path, lv, self.gpu_c2c) {
                return Some(verdict(
                    RemedyClass::Setting,
                    Severity::Error,
                    format!(
                        "{}: {}; so GPUDirect RDMA stays off on this {} path, which `{meant}` would admit",
                        m.setting.described(),
                        m.why,
                        j.nccl_path
                    ),
                    format!("write `{meant}` in {}", m.setting.source),
                    vec![setting_evidence(&m.setting)],
                ));
            }
        }
        None
    }

    /// Staged in a VM, whose PCIe tree may not be the host's.
    fn staged_in_vm(&mut self, staged: String) -> GpuVerdict {
        let (ctx, n) = (self.ctx, self.n);
        let n_name = ctx.name(&n.bdf);
        let mut words = format!("{staged}; this is a VM, whose PCIe tree may not be the host's");
        let mut remedy = format!(
            "run `peerpath probe` and audit with --evidence; on the host, place NIC {n_name} (guest view: {}) behind the GPU's PCIe switch",
            location(ctx, n)
        );
        if let Some(d) = self.design {
            if let Some(h) = d.hides_tree {
                words.push_str(&format!(" ({}: {h})", d.name));
            }
            for s in &d.settings {
                remedy = format!(
                    "{} documents {} for this design ({}; {}); {remedy}",
                    s.who, s.setting, s.note, s.source
                );
            }
            let ev = self.design_ev();
            self.evidence.extend(ev);
        }
        self.with_evidence(RemedyClass::Design, Severity::Warning, words, remedy)
    }

    /// Staged on bare metal: the arrangement says whether moving a NIC helps (misplaced),
    /// cannot tell (free port unknown), or nothing does (the design).
    fn by_arrangement(&mut self, staged: String) -> GpuVerdict {
        let (ctx, g) = (self.ctx, self.g);
        match self.arrangement.placement(self.gi) {
            Placement::Misplaced { nic: k } => {
                let evidence = std::mem::take(&mut self.evidence);
                misplaced(ctx, g, k, self.judged, staged, evidence)
            }
            Placement::FreePortUnknown { nic: k, switch } => {
                let m = ctx.nics[k];
                self.with_evidence(
                    RemedyClass::Unknown,
                    Severity::Unknown,
                    format!(
                        "{staged}; whether a NIC can move under its switch (upstream port {switch}) is unknown: this input ({}) does not list empty switch ports",
                        ctx.topo.source.kind
                    ),
                    format!(
                        "check the switch for a free slot (`lspci -tv` on the node, or audit a `peerpath capture` snapshot); if it has one, move NIC {} — now at {} — there",
                        ctx.name(&m.bdf),
                        location(ctx, m)
                    ),
                )
            }
            Placement::Design(why) => {
                let mut words = format!(
                    "{staged}; no arrangement of this node's adapters does better: {}",
                    why.words(&g.bdf)
                );
                let mut remedy = None;
                if let Some(d) = self.design {
                    words.push_str(&format!("; by design on this {}: {}", d.name, d.note));
                    let ev = self.design_ev();
                    self.evidence.extend(ev);
                    remedy = self.design_remedy(d);
                }
                let remedy = remedy.unwrap_or_else(|| self.no_move_remedy(&why));
                self.with_evidence(RemedyClass::Design, Severity::Warning, words, remedy)
            }
        }
    }

    /// The recognised design's documented setting, as the remedy of a GPU staged by design.
    fn design_remedy(&self, d: &Design) -> Option<String> {
        let j = self.j;
        let admits: Vec<_> = d
            .settings
            .iter()
            .filter(|s| {
                s.gdr_level()
                    .is_some_and(|lv| self.st.gdr_allows(j.nccl_path, lv, self.gpu_c2c))
            })
            .collect();
        let others: Vec<_> = d
            .settings
            .iter()
            .filter(|s| s.gdr_level().is_some())
            .collect();
        if let Some(s) = admits.first() {
            Some(format!(
                "set {}, as {} documents for this design ({}; {}): it admits this {} path",
                s.setting, s.who, s.note, s.source, j.nccl_path
            ))
        } else if let Some(s) = others.first() {
            Some(format!(
                "none that moves a card: {} (documented by {}) admits GPUs on a NIC's own CPU, and this GPU is {} from its best NIC, so its traffic stays staged by design",
                s.setting,
                s.who,
                j.word()
            ))
        } else {
            d.settings.first().map(|s| {
                format!(
                    "none that moves a card; {} documents {} for this design ({}; {})",
                    s.who, s.setting, s.note, s.source
                )
            })
        }
    }

    /// The remedy of a GPU staged by design when no recognised design documents one.
    fn no_move_remedy(&self, why: &DesignWhy) -> String {
        let j = self.j;
        if matches!(why, DesignWhy::NoSpareNic { .. }) {
            format!(
                "none that moves a card (each NIC serves its own switch's GPUs); adding an RDMA NIC {} gives this GPU one within PXB",
                target(self.ctx, self.g)
            )
        } else if j.nccl_path == NcclPath::Phb {
            "none that moves a card; NCCL_NET_GDR_LEVEL=PHB lets NCCL use GPUDirect RDMA across the host bridge (NCCL's PHB covers nvidia-smi's NODE): set it where `peerpath probe` (or ib_write_bw --use_cuda) shows it faster than staging".to_string()
        } else {
            format!(
                "none that moves a card: the GPU is {} from every NIC (across NUMA nodes or CPUs), where GPUDirect RDMA is rarely faster than staging; a NIC on this GPU's own NUMA node would change it",
                j.word()
            )
        }
    }
}

/// The verdict of a GPU whose NIC is misplaced: rail NIC `k` can move under its switch.
fn misplaced(
    ctx: &Ctx,
    g: &Device,
    k: usize,
    judged: &Judged,
    what: String,
    evidence: Vec<Evidence>,
) -> GpuVerdict {
    let m = ctx.nics[k];
    let serves = judged.any_local(k);
    let remedy = format!(
        "move NIC {} — now at {}{} — {}",
        ctx.name(&m.bdf),
        location(ctx, m),
        if serves {
            ", beside another NIC that keeps serving its switch's GPUs"
        } else {
            ", where no GPU can use it"
        },
        target(ctx, g)
    );
    GpuVerdict {
        class: RemedyClass::Misplaced,
        severity: Severity::Error,
        words: format!(
            "{what}; moving one of this node's own NICs under the GPU's switch gives it one within PXB"
        ),
        remedy,
        evidence,
        move_nic: Some(k),
    }
}

/// Whether the CPU is an IBM POWER (`/proc/cpuinfo` `cpu`/`model name`, hwloc `CPUModel`
/// `POWER9, altivec supported`), whose NVIDIA GPUs can attach to the CPU over NVLink.
pub fn power_cpu(m: &crate::model::MachineInfo) -> bool {
    m.cpu_model
        .as_deref()
        .is_some_and(|s| s.starts_with("POWER"))
        || m.cpu_vendor.as_deref() == Some("IBM")
}
