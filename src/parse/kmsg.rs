//! Kernel log text (`dmesg`, `dmesg -T`, `journalctl -k`, `/var/log/kern.log`, an
//! `nvidia-bug-report.log`'s `dmesg:` section) → [`KernelLog`]. Pure: lines in, facts with
//! their lines out. The message forms are the kernel's own printk formats:
//! `drivers/iommu/iommu.c` (`iommu: Default domain type: %s%s`, `Adding to iommu group %d`,
//! before 5.x `iommu: Adding device %s to group %d`), Intel `dmar.c`/`iommu.c` (`DMAR: Intel(R)
//! Virtualization Technology for Directed I/O`, `DMAR: IOMMU enabled`, `DMAR: IOMMU
//! disabled`), AMD `amd/init.c` (`AMD-Vi: Found IOMMU cap …`), `arch/x86/kernel/setup.c`
//! (`Command line: %s`), `init/main.c` (`Kernel command line: %s`), and NVIDIA's `NVRM: Xid
//! (PCI:DDDD:BB:DD): N, …`.

use crate::model::bdf::Bdf;
use crate::model::kmsg::{KernelLog, LogLine, Xid};

/// The heading nvidia-bug-report.sh prints above the `dmesg` output.
const DMESG_HEADING: &str = "dmesg:";

/// Reads the kernel log facts in `text`. Boot facts (command line, default domain, IOMMU
/// enablement, groups) come from the bug report's `dmesg:` section when the text has one (its
/// kernel-log scan may hold older boots), else from the whole text, the last boot's line
/// winning; Xid lines from the whole text.
pub fn parse(text: &str) -> KernelLog {
    let lines: Vec<&str> = text.lines().collect();
    let (start, end) = dmesg_section(&lines).unwrap_or((0, lines.len()));
    let mut k = KernelLog::default();
    for (i, l) in lines.iter().enumerate().take(end).skip(start) {
        boot_fact(&mut k, i + 1, l.trim());
    }
    for (i, l) in lines.iter().enumerate() {
        xid(&mut k, i + 1, l.trim());
    }
    k
}

/// Lines `[start, end)` of the bug report's `dmesg:` section: after its heading up to the
/// script's next `____` separator.
fn dmesg_section(lines: &[&str]) -> Option<(usize, usize)> {
    let h = lines.iter().position(|l| l.trim_end() == DMESG_HEADING)?;
    let end = lines[h + 1..]
        .iter()
        .position(|l| l.starts_with("____"))
        .map_or(lines.len(), |e| h + 1 + e);
    Some((h + 1, end))
}

fn said(line: usize, text: &str) -> LogLine {
    LogLine {
        line,
        text: text.to_string(),
    }
}

/// The message of a log line: what follows the `[ 12.345]` stamp, else the `kernel:` tag of a
/// syslog or journal line, else the line.
fn message(l: &str) -> &str {
    if let Some(r) = l.strip_prefix('[')
        && let Some((_, m)) = r.split_once("] ")
    {
        return m.trim_start();
    }
    if let Some((_, m)) = l.split_once(" kernel: ") {
        let m = m.trim_start();
        if let Some(r) = m.strip_prefix('[')
            && let Some((_, m2)) = r.split_once("] ")
        {
            return m2.trim_start();
        }
        return m;
    }
    l
}

fn boot_fact(k: &mut KernelLog, no: usize, l: &str) {
    let m = message(l);
    if m.starts_with("Linux version ") {
        k.from_boot = true;
    }
    if let Some(c) = m
        .strip_prefix("Command line: ")
        .or_else(|| m.strip_prefix("Kernel command line: "))
    {
        k.cmdline = Some(said(no, c.trim()));
    }
    if let Some(r) = m.strip_prefix("iommu: Default domain type: ") {
        let ty = r.split_whitespace().next().unwrap_or("").to_string();
        if !ty.is_empty() {
            k.default_domain = Some((ty, said(no, l)));
        }
    }
    let intel_on = m.starts_with("DMAR: Intel(R) Virtualization Technology for Directed I/O")
        || m.starts_with("DMAR: IOMMU enabled");
    let amd_on = m.contains("AMD-Vi: Found IOMMU");
    if (intel_on || amd_on) && k.iommu_on.is_none() {
        k.iommu_on = Some(said(no, l));
    }
    if (m.starts_with("DMAR: IOMMU disabled") || m.starts_with("AMD-Vi: AMD IOMMU disabled"))
        && k.iommu_off.is_none()
    {
        k.iommu_off = Some(said(no, l));
    }
    if let Some((dev, group)) = group_line(m) {
        k.groups.retain(|(b, _, _)| *b != dev);
        k.groups.push((dev, group, said(no, l)));
    }
}

/// `pci 0000:01:00.0: Adding to iommu group 5` or `iommu: Adding device 0000:01:00.0 to group 5`.
fn group_line(m: &str) -> Option<(Bdf, u32)> {
    if let Some((before, n)) = m.split_once("Adding to iommu group ") {
        let dev = before
            .split_whitespace()
            .filter_map(|t| t.trim_end_matches(':').parse::<Bdf>().ok())
            .next_back()?;
        return Some((dev, n.trim().parse().ok()?));
    }
    let r = m.strip_prefix("iommu: Adding device ")?;
    let (dev, n) = r.split_once(" to group ")?;
    Some((dev.trim().parse().ok()?, n.trim().parse().ok()?))
}

/// `NVRM: Xid (PCI:0000:03:00): 13, pid=10635, …`: counted per GPU and code.
fn xid(k: &mut KernelLog, no: usize, l: &str) {
    let Some((_, r)) = l.split_once("NVRM: Xid (PCI:") else {
        return;
    };
    let Some((addr, rest)) = r.split_once("): ") else {
        return;
    };
    let Ok(gpu) = format!("{addr}.0").parse::<Bdf>() else {
        return;
    };
    let Some(code) = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse::<u32>().ok())
    else {
        return;
    };
    match k.xids.iter_mut().find(|x| x.gpu == gpu && x.code == code) {
        Some(x) => x.count += 1,
        None => k.xids.push(Xid {
            gpu,
            code,
            count: 1,
            first: said(no, l),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iommu_facts_groups_and_xids() {
        let text = "\
[    0.000000] Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103)
[    0.000000] Command line: BOOT_IMAGE=/vmlinuz-6.8.0-49-generic root=UUID=x ro quiet
[    1.104566] pci 0000:00:00.2: AMD-Vi: Found IOMMU cap 0x40
[    1.230561] iommu: Default domain type: Translated
[    1.230563] iommu: DMA domain TLB invalidation policy: lazy mode
[    1.402104] pci 0000:41:00.0: Adding to iommu group 23
Nov 15 12:43:10 host kernel: [ 7613.977841] NVRM: Xid (PCI:0000:41:00): 79, pid=0, GPU has fallen off the bus.
Nov 15 12:43:11 host kernel: [ 7614.977841] NVRM: Xid (PCI:0000:41:00): 79, pid=0, GPU has fallen off the bus.
";
        let k = parse(text);
        assert!(k.from_boot);
        assert_eq!(k.cmdline.as_ref().unwrap().line, 2);
        let (ty, at) = k.default_domain.as_ref().unwrap();
        assert_eq!((ty.as_str(), at.line), ("Translated", 4));
        assert_eq!(k.iommu_on.as_ref().unwrap().line, 3);
        assert_eq!(k.groups[0].0, "0000:41:00.0".parse().unwrap());
        assert_eq!(k.groups[0].1, 23);
        assert_eq!(k.xids.len(), 1);
        assert_eq!(
            (k.xids[0].code, k.xids[0].count, k.xids[0].first.line),
            (79, 2, 7)
        );
        // An older kernel's group line and a passthrough default set on the command line.
        let k = parse(
            "iommu: Adding device 0000:00:00.0 to group 0\n[ 0.9] iommu: Default domain type: Passthrough (set via kernel command line)\n",
        );
        assert_eq!(k.groups[0].1, 0);
        assert_eq!(k.default_domain.unwrap().0, "Passthrough");
        assert!(!k.from_boot);
        assert!(parse("hello\n").is_empty());
    }

    #[test]
    fn a_bug_reports_dmesg_section_holds_the_boot_facts() {
        // The kernel-log scan above `dmesg:` holds an older boot; only the dmesg section counts.
        let text = "\
  /var/log/kern.log:
Nov 14 host kernel: [    0.000000] Command line: BOOT_IMAGE=/old intel_iommu=on
____________________________________________

dmesg:

[    0.000000] Linux version 5.0.0-36-generic
[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz-5.0.0-36-generic ro quiet
____________________________________________
";
        let k = parse(text);
        assert_eq!(k.cmdline.unwrap().line, 8);
    }
}
