//! The kernel's mount tables: `/proc/self/mountinfo` (proc(5): `ID PARENT MAJ:MIN ROOT
//! MOUNT_POINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPER_OPTIONS`) and `/proc/mounts`
//! (fstab(5) form: `SOURCE MOUNT_POINT FSTYPE OPTIONS 0 0`). Fields are separated by single
//! spaces; the kernel writes a space, tab, newline or backslash inside a field as a
//! three-digit octal escape (`\040`, `\011`, `\012`, `\134`, `fs/proc_namespace.c` `mangle`),
//! decoded here. A line that does not follow the grammar is refused with its line number, the
//! others are kept.

use super::{LineRefusals, Reason, Refusal};
use crate::model::storage::Mount;

/// Decodes the kernel's octal escapes (`\040` → space); a backslash not followed by three
/// octal digits stays as it is.
pub fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (u32::from(b[i + 1] - b'0') << 6)
                | (u32::from(b[i + 2] - b'0') << 3)
                | u32::from(b[i + 3] - b'0');
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses `/proc/self/mountinfo`.
pub fn mountinfo(text: &str) -> (Vec<Mount>, LineRefusals) {
    let mut out = Vec::new();
    let mut bad = LineRefusals::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match mountinfo_line(line) {
            Some(m) => out.push(m),
            None => bad.push(n + 1, || Refusal::of(line.as_bytes(), Reason::NotMountLine)),
        }
    }
    (out, bad)
}

fn mountinfo_line(line: &str) -> Option<Mount> {
    let f: Vec<&str> = line.split(' ').collect();
    // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS, then optional fields up to "-".
    if f.len() < 10 {
        return None;
    }
    f[0].parse::<u64>().ok()?;
    f[1].parse::<u64>().ok()?;
    let (maj, min) = f[2].split_once(':')?;
    maj.parse::<u32>().ok()?;
    min.parse::<u32>().ok()?;
    let sep = f[6..].iter().position(|x| *x == "-")? + 6;
    let rest = &f[sep + 1..];
    if rest.len() < 3 {
        return None;
    }
    Some(Mount {
        mount_point: unescape(f[4]),
        fs_type: unescape(rest[0]),
        source: unescape(rest[1]),
        options: unescape(f[5]),
        super_options: unescape(rest[2]),
        dev: Some(f[2].to_string()),
        ..Default::default()
    })
}

/// Parses `/proc/mounts` (no device numbers; the per-superblock options are the same field).
pub fn mounts(text: &str) -> (Vec<Mount>, LineRefusals) {
    let mut out = Vec::new();
    let mut bad = LineRefusals::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() != 6 || f[4].parse::<u32>().is_err() || f[5].parse::<u32>().is_err() {
            bad.push(n + 1, || Refusal::of(line.as_bytes(), Reason::NotMountLine));
            continue;
        }
        out.push(Mount {
            source: unescape(f[0]),
            mount_point: unescape(f[1]),
            fs_type: unescape(f[2]),
            options: unescape(f[3]),
            super_options: unescape(f[3]),
            ..Default::default()
        });
    }
    (out, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc5_example_and_escapes() {
        // The example of proc(5), then a mount point with a space and a tab, an NFS over RDMA
        // mount and a Lustre client mount as the kernel prints them.
        let t = "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n\
                 120 29 259:1 / /data\\040set\\011a rw,relatime shared:60 - xfs /dev/nvme0n1p1 rw,attr2,inode64\n\
                 130 29 0:52 / /mnt/vast rw,relatime shared:70 - nfs 10.0.0.5:/export rw,vers=3,proto=rdma,port=20049\n\
                 140 29 0:61 / /lustre rw,flock - lustre 10.1.0.1@o2ib:/fs rw,flock,lazystatfs\n";
        let (m, bad) = mountinfo(t);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].mount_point, "/mnt2");
        assert_eq!(m[0].fs_type, "ext3");
        assert_eq!(m[0].source, "/dev/root");
        assert_eq!(m[0].dev.as_deref(), Some("98:0"));
        assert_eq!(m[0].option("errors"), Some("continue"));
        assert_eq!(m[0].option("noatime"), Some(""));
        assert_eq!(m[1].mount_point, "/data set\ta");
        assert_eq!(m[2].option("proto"), Some("rdma"));
        assert_eq!(m[3].fs_type, "lustre");
    }

    #[test]
    fn no_optional_fields_and_bad_lines() {
        let t = "22 1 8:1 / / rw - ext4 /dev/sda1 rw\nnot a line\n23 22 0:5 / /proc rw -\n";
        let (m, bad) = mountinfo(t);
        assert_eq!(m.len(), 1);
        assert_eq!(bad.count, 2);
        assert_eq!(bad.first[0].0, 2);
        assert_eq!(bad.first[1].0, 3);
    }

    #[test]
    fn proc_mounts() {
        let t = "/dev/nvme0n1p1 /data\\134x xfs rw,relatime 0 0\nbroken line\n";
        let (m, bad) = mounts(t);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].mount_point, "/data\\x");
        assert_eq!(m[0].dev, None);
        assert_eq!(bad.count, 1);
    }

    /// Issue 41: a million bad lines are counted, and only the first few kept.
    #[test]
    fn bad_lines_are_counted_not_all_kept() {
        let t = "x\n".repeat(100_000);
        let (m, bad) = mountinfo(&t);
        assert!(m.is_empty());
        assert_eq!(bad.count, 100_000);
        assert_eq!(bad.first.len(), crate::parse::MAX_LINE_REFUSALS);
        assert_eq!(bad.more(), 100_000 - crate::parse::MAX_LINE_REFUSALS);
    }

    #[test]
    fn unescape_edges() {
        assert_eq!(unescape("a\\040b"), "a b");
        assert_eq!(unescape("trail\\04"), "trail\\04");
        assert_eq!(unescape("\\999"), "\\999");
        assert_eq!(unescape("\\"), "\\");
    }
}
