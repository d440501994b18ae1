//! Cross-checks of synthesized trees with the real tools, run on the same directory:
//! `lspci -A linux-sysfs` (tree shape, bridge bus ranges, LnkSta, ACSCtl, the unprivileged
//! view) and `lstopo-no-graphics`/`hwloc-calc --if fsroot` (same PCI functions, NUMA
//! locality). A missing tool fails the test when `CI` is set, otherwise it is skipped with a note.

use peerpath::model::bdf::Bdf;
use peerpath::synth::{self, Spec, WriteOptions, layouts};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Runs a tool; `None` (after a note, or a panic under CI) when it is not installed.
fn run(tool: &str, args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    run_full(tool, args, env).map(|(out, _)| out)
}

/// Like [`run`], also returning stderr.
fn run_full(tool: &str, args: &[&str], env: &[(&str, &str)]) -> Option<(String, String)> {
    let mut c = Command::new(tool);
    c.args(args).env("LANG", "C").env("LC_ALL", "C");
    for (k, v) in env {
        c.env(k, v);
    }
    match c.output() {
        Ok(o) => {
            assert!(
                o.status.success(),
                "{tool} {args:?} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some((
                String::from_utf8_lossy(&o.stdout).into_owned(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::env::var_os("CI").is_some() {
                panic!("{tool} is not installed (CI is set; .ci/run installs pciutils and hwloc)");
            }
            eprintln!("note: {tool} not installed; skipping this cross-check");
            None
        }
        Err(e) => panic!("cannot run {tool}: {e}"),
    }
}

fn write(spec: &Spec, opts: WriteOptions) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    synth::write_tree(spec, dir.path(), &opts).unwrap();
    dir
}

fn lspci(root: &Path, args: &[&str]) -> Option<String> {
    let sysfs = format!("sysfs.path={}", root.join("sys/bus/pci").display());
    let mut a = vec!["-A", "linux-sysfs", "-O", sysfs.as_str()];
    a.extend_from_slice(args);
    run("lspci", &a, &[])
}

/// Parent of every function from `lspci -PP -D` (`0000:15:01.0/16:00.0/17:00.0 …`).
fn lspci_parents(out: &str) -> BTreeMap<Bdf, Option<Bdf>> {
    let mut m = BTreeMap::new();
    for line in out.lines() {
        let Some(path) = line.split_whitespace().next() else {
            continue;
        };
        let parts: Vec<&str> = path.split('/').collect();
        let domain = &parts[0][..4];
        let full = |p: &str| -> Bdf {
            if p.len() > 8 {
                p.parse().unwrap()
            } else {
                format!("{domain}:{p}").parse().unwrap()
            }
        };
        let me = full(parts[parts.len() - 1]);
        let parent = (parts.len() >= 2).then(|| full(parts[parts.len() - 2]));
        m.insert(me, parent);
    }
    m
}

/// Every `DD.F-[SS-UU]` / `DD.F-[SS]` bridge label in `lspci -t` output, as (dev.fn, sec, sub).
fn lspci_tree_bridges(out: &str) -> BTreeSet<(String, u8, u8)> {
    let mut set = BTreeSet::new();
    for (i, _) in out.match_indices("-[") {
        // Host-bridge labels are "[DDDD:BB]" preceded by '+' or '\\', not by "DD.F".
        if i < 4 || !out.is_char_boundary(i - 4) {
            continue;
        }
        let devfn = &out[i - 4..i];
        if !(devfn.as_bytes()[2] == b'.' && devfn[..2].chars().all(|c| c.is_ascii_hexdigit())) {
            continue;
        }
        let rest = &out[i + 2..];
        let Some(end) = rest.find(']') else { continue };
        let r = &rest[..end];
        let (a, z) = r.split_once('-').unwrap_or((r, r));
        if let (Ok(a), Ok(z)) = (u8::from_str_radix(a, 16), u8::from_str_radix(z, 16)) {
            set.insert((devfn.to_string(), a, z));
        }
    }
    set
}

fn spec_bridges(spec: &Spec, root: &Path) -> BTreeSet<(String, u8, u8)> {
    spec.functions
        .iter()
        .filter(|f| f.role.is_bridge())
        .map(|f| {
            let dev = root.join("sys/bus/pci/devices").join(f.bdf.to_string());
            let rd = |n: &str| {
                std::fs::read_to_string(dev.join(n))
                    .unwrap()
                    .trim()
                    .parse::<u8>()
                    .unwrap()
            };
            (
                format!("{:02x}.{:x}", f.bdf.device, f.bdf.function),
                rd("secondary_bus_number"),
                rd("subordinate_bus_number"),
            )
        })
        .collect()
}

fn check_lspci_shape(spec: &Spec, root: &Path) {
    let Some(pp) = lspci(root, &["-PP", "-D"]) else {
        return;
    };
    let got = lspci_parents(&pp);
    let want: BTreeMap<Bdf, Option<Bdf>> =
        spec.functions.iter().map(|f| (f.bdf, f.parent)).collect();
    assert_eq!(
        got, want,
        "{}: lspci -PP parents differ from the spec",
        spec.name
    );
    let Some(tree) = lspci(root, &["-tv"]) else {
        return;
    };
    assert_eq!(
        lspci_tree_bridges(&tree),
        spec_bridges(spec, root),
        "{}: lspci -tv bridge ranges\n{tree}",
        spec.name
    );
    for hb in &spec.host_bridges {
        assert!(
            tree.contains(&format!("[{:04x}:{:02x}]", hb.domain, hb.bus)),
            "{}: host bridge {:02x} missing\n{tree}",
            spec.name,
            hb.bus
        );
    }
}

/// `busid=` of every PCI object lstopo reports (`--whole-io -v --no-collapse`).
fn lstopo_busids(root: &Path) -> Option<BTreeSet<Bdf>> {
    let r = root.to_str().unwrap();
    let out = run(
        "lstopo-no-graphics",
        &[
            "--if",
            "fsroot",
            "-i",
            r,
            "--whole-io",
            "-v",
            "--no-collapse",
            "--of",
            "console",
            "-",
        ],
        &[],
    )?;
    Some(
        out.match_indices("busid=")
            .filter_map(|(i, _)| {
                out[i + 6..]
                    .split_whitespace()
                    .next()
                    .and_then(|s| s.trim_end_matches(')').parse().ok())
            })
            .collect(),
    )
}

fn check_lstopo(spec: &Spec, root: &Path) {
    let Some(got) = lstopo_busids(root) else {
        return;
    };
    let want: BTreeSet<Bdf> = spec.functions.iter().map(|f| f.bdf).collect();
    assert_eq!(
        got, want,
        "{}: lstopo's PCI functions differ from the spec",
        spec.name
    );
}

/// NUMA node(s) hwloc attaches a PCI function to (`hwloc-calc -I numa pci=BDF`).
fn hwloc_numa(root: &Path, b: Bdf) -> Option<String> {
    let r = root.to_str().unwrap();
    let q = format!("pci={b}");
    run(
        "hwloc-calc",
        &["--if", "fsroot", "-i", r, "-I", "numa", &q],
        &[],
    )
    .map(|s| s.trim().to_string())
}

#[test]
fn lspci_and_lstopo_read_every_layout() {
    for spec in [
        layouts::hgx_h100(),
        layouts::dgx_a100(),
        layouts::vm_flat(),
        layouts::virtio_vm(),
        layouts::misplaced_nic(),
        layouts::many_vfs(12),
        layouts::h200_bond(),
        layouts::hgx_h100_13nic(),
        layouts::hgx_h100_field(),
        layouts::hgx_b300(),
        layouts::gb300_tray(),
    ] {
        let dir = write(&spec, WriteOptions::default());
        check_lspci_shape(&spec, dir.path());
        check_lstopo(&spec, dir.path());
    }
}

#[test]
fn hwloc_places_devices_on_their_numa_nodes() {
    let spec = layouts::dgx_a100();
    let dir = write(&spec, WriteOptions::default());
    for i in 0..8 {
        let want = spec
            .numa_of(spec.function(layouts::dgx_gpu(i)).unwrap())
            .to_string();
        let Some(got) = hwloc_numa(dir.path(), layouts::dgx_gpu(i)) else {
            return;
        };
        assert_eq!(got, want, "GPU{i}");
        assert_eq!(
            hwloc_numa(dir.path(), layouts::dgx_nic(i)).unwrap(),
            want,
            "mlx5_{i}"
        );
    }
    let spec = layouts::misplaced_nic();
    let dir = write(&spec, WriteOptions::default());
    assert_eq!(hwloc_numa(dir.path(), layouts::hgx_gpu(3)).unwrap(), "0");
    assert_eq!(hwloc_numa(dir.path(), layouts::MISPLACED_NIC).unwrap(), "1");
}

#[test]
fn lspci_vvv_shows_link_and_acs_faults() {
    let gpu0 = layouts::hgx_gpu(0);
    let dsp = layouts::hgx_gpu_port(0);
    let healthy_dsp = layouts::hgx_gpu_port(1);
    let mut spec = layouts::with_acs_redirect(layouts::hgx_h100(), dsp).unwrap();
    spec = layouts::with_link_width(spec, gpu0, 8).unwrap();
    let dir = write(&spec, WriteOptions::default());
    let Some(g) = lspci(dir.path(), &["-vvv", "-s", &gpu0.to_string()]) else {
        return;
    };
    let lnksta = g
        .lines()
        .find(|l| l.trim_start().starts_with("LnkSta:"))
        .expect("LnkSta line");
    assert!(
        lnksta.contains("Speed 32GT/s") && lnksta.contains("Width x8"),
        "{lnksta}"
    );
    let lnkcap = g
        .lines()
        .find(|l| l.trim_start().starts_with("LnkCap:"))
        .expect("LnkCap line");
    assert!(lnkcap.contains("Width x16"), "{lnkcap}");
    assert!(g.contains("Kernel driver in use: nvidia"), "{g}");
    let p = lspci(dir.path(), &["-vvv", "-s", &dsp.to_string()]).unwrap();
    let acs = p
        .lines()
        .find(|l| l.trim_start().starts_with("ACSCtl:"))
        .expect("ACSCtl line");
    for on in [
        "SrcValid+",
        "ReqRedir+",
        "CmpltRedir+",
        "UpstreamFwd+",
        "EgressCtrl-",
        "TransBlk-",
    ] {
        assert!(acs.contains(on), "{on} in {acs}");
    }
    assert!(p.contains("Downstream Port"), "{p}");
    let h = lspci(dir.path(), &["-vvv", "-s", &healthy_dsp.to_string()]).unwrap();
    let acs = h
        .lines()
        .find(|l| l.trim_start().starts_with("ACSCtl:"))
        .expect("ACSCtl line");
    assert!(
        acs.contains("ReqRedir-") && acs.contains("CmpltRedir-"),
        "{acs}"
    );
    // Slot on the NIC's port.
    let n = lspci(
        dir.path(),
        &["-vvv", "-s", &layouts::hgx_nic_port(0).to_string()],
    )
    .unwrap();
    assert!(n.contains("Slot #10"), "{n}");
}

#[test]
fn unprivileged_tree_looks_unprivileged_to_lspci() {
    let spec = layouts::hgx_h100();
    let dir = write(&spec, WriteOptions { unprivileged: true });
    let dsp = layouts::hgx_gpu_port(0);
    let Some(p) = lspci(dir.path(), &["-vvv", "-s", &dsp.to_string()]) else {
        return;
    };
    assert!(p.contains("<access denied>"), "{p}");
    assert!(!p.contains("ACSCtl"), "{p}");
    check_lspci_shape(&spec, dir.path());
    check_lstopo(&spec, dir.path());
}

#[test]
fn lspci_and_lstopo_read_the_amd_layouts() {
    for spec in [layouts::mi300x_8gpu(), layouts::mi300a_4apu()] {
        let dir = write(&spec, WriteOptions::default());
        check_lspci_shape(&spec, dir.path());
        check_lstopo(&spec, dir.path());
    }
}
