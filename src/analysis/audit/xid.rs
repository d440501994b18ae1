//! `gpu-xid`: NVIDIA Xid lines the kernel log in the input holds (`NVRM: Xid (PCI:DDDD:BB:DD):
//! N, …`), per GPU and code, each citing its first line. Facts: `MachineInfo.kernel_log.xids`
//! ([`crate::model::kmsg`]), read from a bug report's kernel-log sections or a `dmesg` text
//! beside `lspci`. A log is history: the finding says what was logged, not that it is current.

use super::{CheckId, Ctx, Evidence, Finding, Severity, Subject};

/// Xids that point at the hardware, the PCIe link or NVLink rather than at an application
/// (NVIDIA's Xid catalog): 48 double-bit ECC, 62 internal micro-controller halt, 63/64 row
/// remapping, 74 NVLink error, 79 fallen off the bus, 92 high single-bit ECC rate, 94/95
/// contained/uncontained ECC, 119/120 GSP timeouts and errors.
const HARDWARE: [u32; 12] = [48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 154];

/// One finding per GPU with Xid lines: a warning when a hardware or link Xid is among them,
/// info otherwise (13, 31, 43, 45: an application's fault or its cleanup).
pub fn gpu_xid(ctx: &Ctx) -> Vec<Finding> {
    let k = &ctx.topo.machine.kernel_log;
    let mut gpus: Vec<_> = k.xids.iter().map(|x| x.gpu).collect();
    gpus.sort();
    gpus.dedup();
    let mut out = Vec::new();
    for g in gpus {
        let xs: Vec<_> = k.xids.iter().filter(|x| x.gpu == g).collect();
        let hw = xs.iter().any(|x| HARDWARE.contains(&x.code));
        let codes = xs
            .iter()
            .map(|x| format!("Xid {} ({} line(s))", x.code, x.count))
            .collect::<Vec<_>>()
            .join(", ");
        let known = ctx.topo.device(&g).is_some();
        let f = Finding::new(
            CheckId::GpuXid,
            if hw {
                Severity::Warning
            } else {
                Severity::Info
            },
            if known {
                Subject::Device(g)
            } else {
                Subject::Node
            },
            format!(
                "the kernel log holds NVIDIA Xid lines for GPU {g}{}: {codes}{}",
                if known {
                    ""
                } else {
                    " (not among the devices the text lists)"
                },
                if hw {
                    "; among them an Xid that points at the GPU's hardware, its PCIe link or NVLink"
                } else {
                    "; these codes usually come from an application's fault, not the link"
                }
            ),
            if hw {
                "read the lines around each (NVIDIA's Xid catalog); for 79 reseat or check the slot, riser and PCIe AER lines; for ECC and row-remapping Xids run `nvidia-smi -q -d ECC,ROW_REMAPPER` and reset or replace the GPU"
            } else {
                "none for the node; the application that faulted is named by its pid in the lines"
            },
        );
        out.push(f.with_all(xs.iter().map(|x| {
            Evidence::new(
                format!("{} line {}", ctx.topo.source.path, x.first.line),
                x.first.text.clone(),
            )
        })));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::analysis::classify::Classifier;
    use crate::model::kmsg::{LogLine, Xid};

    #[test]
    fn xids_per_gpu_with_their_lines() {
        let mut m = machine();
        let x = |code, line| Xid {
            gpu: b("0000:13:00.0"),
            code,
            count: 2,
            first: LogLine {
                line,
                text: format!("NVRM: Xid (PCI:0000:13:00): {code}, pid=1"),
            },
        };
        m.kernel_log.xids = vec![x(13, 7)];
        let t = topo(hgx(2), m.clone());
        let f = gpu_xid(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert_eq!(f[0].subject, Subject::Device(b("0000:13:00.0")));
        assert!(f[0].evidence[0].path.ends_with("line 7"));
        m.kernel_log.xids.push(x(79, 9));
        let t = topo(hgx(2), m);
        let f = gpu_xid(&Ctx::new(&Classifier::new(&t, &Default::default())));
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(gpu_xid(&Ctx::new(&Classifier::new(&clean(), &Default::default()))).is_empty());
    }
}
