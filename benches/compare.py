#!/usr/bin/env python3
"""Whole-process benchmark of the commands users run, each beside its peer tool, as ratios:

1. `peerpath scan` vs `lstopo-no-graphics --whole-io` (and lspci -tv, and the I/O floor: a
   minimal C reader doing exactly the file operations peerpath's scan did, from strace) on the
   137-device real snapshot; paired runs in alternating order, medians.
2. `peerpath matrix` and `peerpath audit` vs `peerpath scan` on the synthesized 1,054-function
   node (`peerpath fixture scaling-1024`: 248 GPUs, 248 NICs), whole processes, medians; and
   `peerpath matrix --format json` against `peerpath scan --format json` in time and in bytes
   written (issue 28: at most 3x the time, 10x the bytes).
3. `peerpath probe` over libfabric tcp on 127.0.0.1 vs `fi_pingpong -p tcp` at the same message
   size (benches/probe_tcp.sh), like for like (one operation in flight) and at the probe's
   default depth.

The last lines print the three ratios together, each with the command that produced it.

usage: benches/compare.py [--runs N] [--fixture TARBALL] [--peerpath BIN] [--no-probe] [--node-only]
`--node-only` runs part 2 alone (it needs only peerpath).
Needs: lstopo-no-graphics (hwloc), lspci (pciutils), strace, gcc, fi_pingpong (libfabric-bin).
Build peerpath with `cargo build --release` first.
"""
import argparse, os, random, re, resource, shutil, statistics, subprocess, sys, tarfile, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def run(cmd, env=None):
    # posix_spawn (vfork semantics): the child's peak RSS does not include a copy of Python's.
    devnull = os.open(os.devnull, os.O_WRONLY)
    t0 = time.perf_counter()
    pid = os.posix_spawnp(cmd[0], cmd, env or os.environ,
                          file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, ru = os.wait4(pid, 0)
    os.close(devnull)
    dt = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed: {' '.join(cmd)}")
    return dt, ru.ru_maxrss  # seconds, KiB


def floor_ops(peerpath, root, workdir):
    trace = os.path.join(workdir, "trace")
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat,openat2,readlinkat,readlink,getdents64",
                    "-o", trace, peerpath, "scan", "-i", root, "--format", "json"],
                   stdout=subprocess.DEVNULL, check=True)
    # The scan opens every file relative to a descriptor of the input root (openat2
    # RESOLVE_IN_ROOT) and reads links relative to a device's directory descriptor: each
    # descriptor is mapped back to its absolute path, so the floor replays the same files.
    fds, ops = {}, []
    open_re = re.compile(r'\bopen(?:at2?)?\((?:(AT_FDCWD|\d+), )?"([^"]+)", ([^)]*)\) = (\d+)')
    rl_re = re.compile(r'readlink(?:at)?\((?:(AT_FDCWD|\d+), )?"([^"]+)",.* = \d+')
    skip = ("/etc/ld.so", "/lib", "/usr/lib", "/proc/self", "/sys/devices/system/cpu", "/dev/")

    def absolute(dirfd, name):
        if name.startswith("/") or dirfd in (None, "AT_FDCWD"):
            return name
        return os.path.normpath(os.path.join(fds.get(dirfd, "?"), name))

    for line in open(trace):
        m = open_re.search(line)
        if m:
            path = absolute(m.group(1), m.group(2))
            fds[m.group(4)] = path
            if not path.startswith(skip) and path != root:
                kind = "d" if "O_DIRECTORY" in m.group(3) else "f"
                ops.append(f"{kind} {path}")
            continue
        m = rl_re.search(line)
        if m:
            path = absolute(m.group(1), m.group(2))
            if not path.startswith(skip):
                ops.append(f"l {path}")
    path = os.path.join(workdir, "ops")
    with open(path, "w") as f:
        f.write("\n".join(ops) + "\n")
    return path, len(ops)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--fixture", default=os.path.join(REPO, "fixtures/hwloc/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"))
    ap.add_argument("--peerpath", default=os.path.join(REPO, "target/release/peerpath"))
    ap.add_argument("--no-probe", action="store_true", help="skip the probe comparison")
    ap.add_argument("--no-scaling", action="store_true", help="skip the 256..16384 scan scaling")
    ap.add_argument("--node-only", action="store_true",
                    help="only the 1,054-function node (part 2): needs no peer tool")
    a = ap.parse_args()
    summary = []
    work = tempfile.mkdtemp(prefix="peerpath-bench-")
    if a.node_only:
        env = dict(os.environ, LANG="C", LC_ALL="C")
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        try:
            summary += node_1024(a.peerpath, work, env, a.runs)
        finally:
            shutil.rmtree(work)
        print(f"\nthe node's ratios (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}):")
        for line in summary:
            print("  " + line)
        return
    with tarfile.open(a.fixture) as t:
        t.extractall(work, filter="tar") if hasattr(tarfile, "data_filter") else t.extractall(work)
    root = next(os.path.join(work, d) for d in os.listdir(work) if os.path.isdir(os.path.join(work, d, "sys")))
    floor_bin = os.path.join(work, "floor")
    subprocess.run(["gcc", "-O2", "-o", floor_bin, os.path.join(HERE, "floor.c")], check=True)
    rss_bin = os.path.join(work, "rss")
    subprocess.run(["gcc", "-O2", "-o", rss_bin, os.path.join(HERE, "rss.c")], check=True)
    ops, nops = floor_ops(a.peerpath, root, work)
    env = dict(os.environ, LANG="C", LC_ALL="C")
    cmds = {
        "peerpath": [a.peerpath, "scan", "-i", root, "--format", "json"],
        "lstopo": ["lstopo-no-graphics", "--if", "fsroot", "-i", root, "--whole-io"],
        "lspci": ["lspci", "-A", "linux-sysfs", "-O", f"sysfs.path={root}/sys/bus/pci", "-tv"],
        "floor": [floor_bin, ops],
    }
    ndev = len(os.listdir(os.path.join(root, "sys/bus/pci/devices")))
    times = {k: [] for k in cmds}
    rss = {k: 0 for k in cmds}
    for k, c in cmds.items():  # warm the page cache
        run(c, env)
    for _ in range(a.runs):
        order = list(cmds)
        random.shuffle(order)
        for k in order:
            dt, _ = run(cmds[k], env)
            times[k].append(dt)
    for k, c in cmds.items():
        out = subprocess.run([rss_bin] + c, capture_output=True, text=True, env=env)
        rss[k] = int(out.stdout.strip() or 0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"input: {a.fixture} ({ndev} PCI devices), {a.runs} paired runs, floor = {nops} file operations")
    print(f"{'command':<10} {'median ms':>10} {'peak RSS KiB':>13}")
    for k in cmds:
        print(f"{k:<10} {med[k]*1000:>10.2f} {rss[k]:>13}")
    print(f"peerpath / lstopo = {med['peerpath']/med['lstopo']:.3f}")
    print(f"peerpath / lspci  = {med['peerpath']/med['lspci']:.3f}")
    print(f"peerpath / floor  = {med['peerpath']/med['floor']:.3f}")
    summary.append(f"1. scan / lstopo = {med['peerpath']/med['lstopo']:.2f} "
                   f"({med['peerpath']*1000:.1f} ms vs {med['lstopo']*1000:.1f} ms; "
                   f"{' '.join(cmds['peerpath'][1:])} vs lstopo-no-graphics --whole-io, {ndev} devices)")
    if not a.no_scaling:
        scaling(a.peerpath, rss_bin, work, env, max(5, a.runs // 2))
    end_to_end(a.peerpath, env, max(5, a.runs // 2))
    summary += node_1024(a.peerpath, work, env, max(5, a.runs // 3))
    if not a.no_probe:
        summary += probe(a.peerpath)
    print(f"\nthe three ratios (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}):")
    for line in summary:
        print("  " + line)


def median_time(cmd, env, runs):
    run(cmd, env)
    return statistics.median(run(cmd, env)[0] for _ in range(runs))


def scaling(peerpath, rss_bin, work, env, runs):
    """Scan time and peak RSS on synthesized trees of growing size."""
    print("\nscaling (peerpath scan --format json on synthesized trees):")
    print(f"{'devices':>8} {'median ms':>10} {'peak RSS KiB':>13}")
    base = None
    for n in (256, 1024, 4096, 16384):
        root = os.path.join(work, f"scaling-{n}")
        subprocess.run([peerpath, "fixture", f"scaling-{n}", "-o", root], check=True, stdout=subprocess.DEVNULL)
        cmd = [peerpath, "scan", "-i", root, "--format", "json"]
        t = median_time(cmd, env, runs)
        m = int(subprocess.run([rss_bin] + cmd, capture_output=True, text=True, env=env).stdout.strip() or 0)
        ndev = len(os.listdir(os.path.join(root, "sys/bus/pci/devices")))
        print(f"{ndev:>8} {t*1000:>10.2f} {m:>13}")
        if n == 1024:
            base = t
        if n == 16384 and base:
            print(f"16x devices (1024 -> 16384): {t/base:.2f}x time (target <= 18x)")


def end_to_end(peerpath, env, runs):
    """Whole commands on the HGX-like snapshot."""
    fx = os.path.join(REPO, "fixtures/synth/hgx-h100.tar.gz")
    print(f"\nend to end on {os.path.relpath(fx, REPO)}:")
    for args in (["scan"], ["matrix"], ["audit"], ["place", "--ranks", "8"]):
        cmd = [peerpath] + args + ["-i", fx]
        try:
            t = median_time(cmd, env, runs)
        except SystemExit:
            t = median_time_any(cmd, env, runs)
        print(f"  {' '.join(args):<18} {t*1000:>8.2f} ms")


def node_1024(peerpath, work, env, runs):
    """matrix, audit and place against scan of the same 1,054-function tree, paired."""
    root = os.path.join(work, "scaling-1024")
    if not os.path.isdir(root):
        subprocess.run([peerpath, "fixture", "scaling-1024", "-o", root], check=True, stdout=subprocess.DEVNULL)
    cmds = {
        "scan --format json": ["scan", "--format", "json"],
        "matrix": ["matrix"],
        "audit": ["audit"],
        "place --ranks 8": ["place", "--ranks", "8"],
        "matrix --format json": ["matrix", "--format", "json"],
    }
    times = {k: [] for k in cmds}
    for _ in range(runs):
        order = list(cmds)
        random.shuffle(order)
        for k in order:
            cmd = [peerpath] + cmds[k][:1] + ["-i", root] + cmds[k][1:]
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["scan --format json"]
    print(f"\n1,054-function node (peerpath fixture scaling-1024), {runs} paired runs:")
    for k, t in med.items():
        lo, hi = min(times[k]), max(times[k])
        print(f"  {k:<22} {t*1000:>8.1f} ms  {t/base:5.2f}x scan  (min {lo*1000:.1f}, max {hi*1000:.1f})")
    size = {k: len(subprocess.run([peerpath] + cmds[k][:1] + ["-i", root] + cmds[k][1:],
                                  capture_output=True, env=env).stdout)
            for k in ("scan --format json", "matrix --format json")}
    jt, js = med["matrix --format json"] / base, size["matrix --format json"] / size["scan --format json"]
    print(f"  bytes written: scan --format json {size['scan --format json']:,}, "
          f"matrix --format json {size['matrix --format json']:,} ({js:.2f}x)")
    return [f"2. matrix / scan = {med['matrix']/base:.2f}, audit / scan = {med['audit']/base:.2f} "
            f"({med['matrix']*1000:.0f} ms, {med['audit']*1000:.0f} ms vs {base*1000:.0f} ms; "
            f"peerpath matrix|audit|scan --format json -i <scaling-1024>)",
            f"   matrix --format json / scan --format json = {jt:.2f} in time "
            f"({med['matrix --format json']*1000:.0f} vs {base*1000:.0f} ms; goal <= 3), "
            f"{js:.2f} in bytes ({size['matrix --format json']/1e6:.2f} vs "
            f"{size['scan --format json']/1e6:.2f} MB; goal <= 10)"]


def probe(peerpath):
    """benches/probe_tcp.sh: the probe vs fi_pingpong over libfabric tcp on 127.0.0.1."""
    script = os.path.join(HERE, "probe_tcp.sh")
    sizes = ["65536", "1048576"]
    env = dict(os.environ, PEERPATH=peerpath)
    print(f"\nprobe vs fi_pingpong (benches/probe_tcp.sh {' '.join(sizes)}):")
    r = subprocess.run(["bash", script] + sizes, capture_output=True, text=True, env=env)
    print(r.stdout.rstrip())
    if r.returncode != 0:
        print(r.stderr.rstrip())
        return [f"3. probe / fi_pingpong: not measured (probe_tcp.sh exited {r.returncode})"]
    out = []
    loop = []
    budget = None
    for line in r.stdout.splitlines():
        f = line.split()
        # MEDIAN: the medians of probe_tcp.sh's paired rounds (RESULT lines are single rounds).
        if not f or f[0] not in ("MEDIAN", "LOOP"):
            continue
        kv = dict(x.split("=", 1) for x in f[1:] if "=" in x)
        if f[0] == "LOOP":
            if "budget_400g_64k_ns" in kv:
                budget = kv["budget_400g_64k_ns"]
            elif "ns_per_op" in kv:
                loop.append(f"{float(kv['ns_per_op']):.0f} ns at depth {kv['depth']}")
            continue
        n = kv.get("depth", "16")
        out.append(
            f"3. probe / fi_pingpong at {kv['size']} B, like for like (depth 1): "
            f"write {float(kv['ratio_d1_write']):.2f}, read {float(kv['ratio_d1_read']):.2f}; "
            f"depth {n}: write {float(kv['ratio_dN_write']):.2f}, read {float(kv['ratio_dN_read']):.2f} "
            f"(pingpong {float(kv['pingpong_gbps']):.2f} GB/s; medians of {kv['runs']} paired rounds, "
            f"busy {float(kv['busy_pct']):.0f} %; benches/probe_tcp.sh {' '.join(sizes)})")
    if loop:
        out.append(f"   probe loop per operation over a fabric that completes at once: {', '.join(loop)} "
                   f"(400 Gb/s at 64 KiB allows {budget or '1310.7'} ns; cargo bench --bench probe_loop)")
    return out or ["3. probe / fi_pingpong: probe_tcp.sh printed no MEDIAN line"]


def median_time_any(cmd, env, runs):
    """Like median_time, accepting a non-zero exit (audit exits 1 on findings)."""
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


if __name__ == "__main__":
    main()
