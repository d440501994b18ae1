//! Issue 41, round three of hostile inputs, through the command line: every file argument read
//! through the one bounded reader (a FIFO, a device or a 2 GiB sparse file refused by what it
//! is, never waited on or read into memory), `evidence` saying when it read nothing, fleet
//! directories read without following links out of them, and `fixture -o DIR` never writing
//! through a link planted in DIR. Inputs are generated (sparse files, FIFOs): nothing big is
//! committed and each case runs in milliseconds.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const HWLOC_XML: &str = "fixtures/hwloc/32em64t-2n8c2t-pci-normalio.xml";

/// Runs peerpath with a deadline (a read that blocks on a FIFO must fail the test, not hang
/// it).
fn peerpath(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("peerpath {args:?} did not finish in 20 s (blocked on a read?)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn fifo(p: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// A sparse file of `len` bytes: no disk used, but a whole-file read would fill memory.
fn sparse(p: &Path, len: u64) {
    std::fs::File::create(p).unwrap().set_len(len).unwrap();
}

#[test]
fn evidence_and_rdma_topo_refuse_fifos_devices_and_huge_files_without_reading_them() {
    let d = tempfile::tempdir().unwrap();
    let pipe = d.path().join("nccl.log");
    fifo(&pipe);
    let big = d.path().join("big.log");
    sparse(&big, 2 << 30);
    for (file, says) in [
        (pipe.to_str().unwrap(), "named pipe"),
        ("/dev/zero", "character device"),
        (big.to_str().unwrap(), "2147483648 bytes"),
    ] {
        let o = peerpath(&["evidence", file]);
        assert_eq!(o.status.code(), Some(2), "evidence {file}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "evidence {file}: {}", stderr(&o));
        let o = peerpath(&["scan", "-i", HWLOC_XML, "--rdma-topo", file]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "--rdma-topo {file}: {}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains(says),
            "--rdma-topo {file}: {}",
            stderr(&o)
        );
    }
}
