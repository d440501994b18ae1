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
    let child = Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    // Output is collected as it comes (a full pipe must not stall the command).
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            // The one child this test started, by its id.
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("peerpath {args:?} did not finish in 20 s (blocked on a read?)");
        }
    }
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

/// `evidence` on a file it read nothing from says so and exits 3, also beside a file it did
/// read (that gave "NO PROBLEM SHOWN", exit 0); an empty file and prose alike.
#[test]
fn evidence_says_which_input_it_read_nothing_from() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("good.log");
    std::fs::write(
        &good,
        "h1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n",
    )
    .unwrap();
    let prose = d.path().join("prose.txt");
    std::fs::write(&prose, "the job ran fine, bandwidth looked good\n").unwrap();
    let empty = d.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    let o = peerpath(&["evidence", good.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for other in [&prose, &empty] {
        let o = peerpath(&["evidence", good.to_str().unwrap(), other.to_str().unwrap()]);
        let out = String::from_utf8_lossy(&o.stdout);
        let head = out.lines().next().unwrap_or("");
        assert_eq!(o.status.code(), Some(3), "{out}");
        assert!(
            head.starts_with("NOTHING READ from 1 of 2 inputs: "),
            "{head}"
        );
        assert!(head.contains(other.to_str().unwrap()), "{head}");
        let o = peerpath(&["evidence", other.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(3));
        assert!(String::from_utf8_lossy(&o.stdout).starts_with("NOTHING READ: "));
    }
}

/// `evidence` on 10,000 ranks (20,000 lines) is linear: a rank lookup inside the loop over
/// ranks made it quadratic (14.7 s here in a debug build under load 7; 0.6 s after).
#[test]
fn evidence_on_ten_thousand_ranks_is_linear() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("big.log");
    let n = 10_000;
    let mut text = String::new();
    for r in 0..n {
        let (host, pid) = (format!("node{}", r / 8), 1000 + r);
        text.push_str(&format!(
            "{host}:{pid}:{} [{}] NCCL INFO Channel 00/0 : {r}[81000] -> {}[81000] [send] via NET/IB/1/GDRDMA\n",
            pid + 1,
            r % 8,
            (r + 1) % n
        ));
        text.push_str(&format!(
            "{host}:{pid}:{} [{}] NCCL INFO comm 0x72a6b00 rank {r} nranks {n} cudaDev {} busId 81000 - Init COMPLETE\n",
            pid + 1,
            r % 8,
            r % 8
        ));
    }
    std::fs::write(&log, text).unwrap();
    let start = Instant::now();
    let o = peerpath(&["evidence", log.to_str().unwrap()]);
    let took = start.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("GDR used on {n}")),
        "{}",
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or("")
    );
    assert!(took < Duration::from_secs(8), "{took:?}");
}

/// A fleet directory with a planted `zz -> /`: that entry is reported unreadable (it made this
/// machine a node), as is a FIFO; a link to a file inside the directory is read.
#[test]
fn fleet_reads_only_files_and_directories_under_the_given_path() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(HWLOC_XML),
        dir.join("a.xml"),
    )
    .unwrap();
    std::os::unix::fs::symlink("/", dir.join("zz")).unwrap();
    std::os::unix::fs::symlink("a.xml", dir.join("b.xml")).unwrap();
    fifo(&dir.join("pipe"));
    let o = peerpath(&["fleet", dir.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.starts_with("2 node(s), 1 group(s)"), "{out}");
    assert!(out.contains("2 unreadable input(s)"), "{out}");
    assert!(out.contains("zz: a link out of"), "{out}");
    assert!(out.contains("pipe: a named pipe (FIFO)"), "{out}");
}

/// `fixture -o DIR` with a planted `DIR/sys -> elsewhere`: refused naming the link, nothing
/// written elsewhere (the tree was written through the link). Writing a tree over itself is
/// `output::tests::the_directory_writer_never_follows_a_planted_link` and `tests/synth_cli.rs`.
#[test]
fn fixture_output_never_writes_through_a_planted_link() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("tree");
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("sys")).unwrap();
    let o = peerpath(&["fixture", "hgx-h100", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a symbolic link"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// A bus link reaching its device through a chain of 100 links is "too many levels of
/// symbolic links", not "vanished or access denied".
#[test]
fn a_long_link_chain_is_said_to_be_one() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let dev = root.join("sys/devices/pci0000:00/0000:00:01.0");
    std::fs::create_dir_all(&dev).unwrap();
    for (f, v) in [
        ("class", "0x020000"),
        ("vendor", "0x15b3"),
        ("device", "0x1021"),
    ] {
        std::fs::write(dev.join(f), format!("{v}\n")).unwrap();
    }
    let chain = root.join("chain");
    std::fs::create_dir_all(&chain).unwrap();
    std::os::unix::fs::symlink("../sys/devices/pci0000:00/0000:00:01.0", chain.join("l100"))
        .unwrap();
    for i in 1..100 {
        std::os::unix::fs::symlink(format!("l{}", i + 1), chain.join(format!("l{i}"))).unwrap();
    }
    let bus = root.join("sys/bus/pci/devices");
    std::fs::create_dir_all(&bus).unwrap();
    std::os::unix::fs::symlink("../../../../chain/l1", bus.join("0000:00:01.0")).unwrap();
    let o = peerpath(&["scan", "-i", root.to_str().unwrap(), "--format", "json"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("too many levels of symbolic links"),
        "{out}{}",
        stderr(&o)
    );
    assert!(!out.contains("vanished"), "{out}");
}

/// An attribute over the 1 MiB read of a sysfs file (a 2 MiB sparse `numa_node`) is warned as
/// not read, never parsed from its first MiB.
#[test]
fn an_oversized_attribute_is_said_not_cut() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let dev = root.join("sys/devices/pci0000:00/0000:00:01.0");
    std::fs::create_dir_all(&dev).unwrap();
    for (f, v) in [
        ("class", "0x020000"),
        ("vendor", "0x15b3"),
        ("device", "0x1021"),
    ] {
        std::fs::write(dev.join(f), format!("{v}\n")).unwrap();
    }
    sparse(&dev.join("numa_node"), 2 << 20);
    let bus = root.join("sys/bus/pci/devices");
    std::fs::create_dir_all(&bus).unwrap();
    std::os::unix::fs::symlink(
        "../../../devices/pci0000:00/0000:00:01.0",
        bus.join("0000:00:01.0"),
    )
    .unwrap();
    let o = peerpath(&["scan", "-i", root.to_str().unwrap(), "--format", "json"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        out.contains("numa_node") && out.contains("larger than the 1 MiB peerpath reads"),
        "{out}"
    );
}
