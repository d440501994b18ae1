# Writes the seed corpora of the `sosreport` and `bug_report` fuzz targets (issue 53) from the real
# text in fixtures/bundles/ (sources: fixtures/bundles/README.md): bug reports cut at the
# script's own section separator into pieces of at most 4 KiB (long sections: first, middle
# and last piece), one piece gzipped as the script writes the log; sosreport member sets (each
# member cut at a line end: ~4 KiB in all) in the
# target's `\n@@<letter>` form, and one real xz tar as `sos report` lays it out.
# Run from the repository root: python3 fuzz/seeds-support-archives.py
import os, re, gzip, io, tarfile, lzma
B='fixtures/bundles/'
def rd(n): return open(B+n,'rb').read()
def fence_blocks(md):
    # code blocks of a Markdown page, in order
    return [m.group(1) for m in re.finditer(rb'```[^\n]*\n(.*?)```', md, re.S)]
out='fuzz/corpus/bug_report/'; os.makedirs(out, exist_ok=True)
SEP=b'____________________________________________\n'
LIMIT=4*1024
for name,short in [('nvidia-bug-report-2017-4x1080ti-2xpex8747.EXCERPT.log','nvbr-2017'),
                   ('nvidia-bug-report-2019-4x-rtx2080ti-supermicro-x10drg.EXCERPT.log','nvbr-2019')]:
    data=rd(name)
    secs=[s for s in data.split(SEP)]
    secs=[SEP+s for s in secs if s.strip()]
    chunks=[]; cur=b''
    for s in secs:
        if len(s)>LIMIT:
            if cur: chunks.append(cur); cur=b''
            lines=s.splitlines(keepends=True)
            head=b''.join(lines[:3]); piece=head
            pieces=[]
            for l in lines[3:]:
                if len(piece)+len(l)>LIMIT:
                    pieces.append(piece); piece=head
                piece+=l
            pieces.append(piece)
            # the first, a middle and the last piece of a long section
            keep=[pieces[0]] + ([pieces[len(pieces)//2]] if len(pieces)>2 else []) + ([pieces[-1]] if len(pieces)>1 else [])
            chunks+=keep
        elif len(cur)+len(s)>LIMIT:
            chunks.append(cur); cur=s
        else:
            cur+=s
    if cur: chunks.append(cur)
    for i,c in enumerate(chunks):
        open(f'{out}{short}-part{i:02d}','wb').write(c)
    # as the script writes it: nvidia-bug-report.log.gz
    open(f"{out}{short}-part01.log.gz","wb").write(gzip.compress(chunks[1],mtime=0))
# sosreport member sets: "\n@@" + letter selects the member (src/fuzzing.rs SUPPORT_MEMBERS)
M=dict(nnvv='a',tv='b',xxxx='c',ibstat='d',devinfo='e',numactl='f',lsmod='g',dmesg='h',cmdline='i',hardware='j',ib='k',boot='l',sysctl='m')
def cut(b, n):
    # at most n bytes, ended at a line end: a seed of at most ~4 KiB in all, as libFuzzer's
    # default -max_len, so a million executions fit in a loaded hour
    if len(b) <= n: return b
    i = b.rfind(b'\n', 0, n)
    return b[:i+1] if i > 0 else b[:n]
def member_set(parts):
    parts=[(k, cut(v, 2400 if k in ('nnvv','hardware') else 900)) for k,v in parts]
    first=parts[0][1]; rest=b''.join(b'\n@@'+M[k].encode()+v for k,v in parts[1:])
    assert parts[0][0]=='nnvv'
    return first+rest
out2='fuzz/corpus/sosreport/'; os.makedirs(out2, exist_ok=True)
br17=rd('nvidia-bug-report-2017-4x1080ti-2xpex8747.EXCERPT.log')
secs17=br17.split(SEP)
def sec(data, start):
    for s in data.split(SEP):
        if s.lstrip().startswith(start): return s
    raise SystemExit(start)
cmdline=sec(br17,b'*** /proc/cmdline').split(b'\n',3)[3]
dmesg=sec(br17,b'dmesg:')[:6000]
br19=rd('nvidia-bug-report-2019-4x-rtx2080ti-supermicro-x10drg.EXCERPT.log')
modules=sec(br19,b'*** /proc/modules').split(b'\n',3)[3][:4000]
l2=rd('l2fwd-nv-issue-6-cx6dx.lspci-vv+ibstat.EXCERPT.md')
lspci_part,ib_part=l2.split(b'[... cut ...]')
open(out2+'l2fwd-cx6dx-ibstat','wb').write(member_set([('nnvv',lspci_part),('ibstat',ib_part),('cmdline',cmdline)]))
hw=rd('hwloc-issue-653-a100-sxm4-40gb.lspci-vvv-nn.EXCERPT.md')
tv=rd('nccl-issue-246-v100-pcie-cx5-sriov-vf.lspci-tv.EXCERPT.md')
open(out2+'a100-tv-dmesg-lsmod','wb').write(member_set([('nnvv',hw),('tv',tv),('dmesg',dmesg),('lsmod',modules),('cmdline',cmdline),('sysctl',b'kernel.numa_balancing = 1\n')]))
rocm=rd('rocm-issue-4793-2x-mi50-x11sra.lspci-vvv-nn.EXCERPT.md')
open(out2+'supportconfig-mi50','wb').write(member_set([('nnvv',b''),('hardware',rocm),('boot',cmdline)]))
pug=rd('stelline-puget-wrx90-2x-rtx6000ada-cx7.lspci-tv+vvv+topo.md')
blocks=fence_blocks(pug)
open(out2+'puget-wrx90-tv-vvv','wb').write(member_set([('nnvv',blocks[2][:12000]),('tv',blocks[0]),('numactl',blocks[1])]))
# a real archive as sos writes it: xz tar under sosreport-HOST-DATE/
buf=io.BytesIO()
with tarfile.open(fileobj=buf,mode='w',format=tarfile.GNU_FORMAT) as t:
    for p,b in [('sos_commands/pci/lspci_-nnvv',lspci_part),('sos_commands/infiniband/ibstat',ib_part),('proc/cmdline',cmdline)]:
        ti=tarfile.TarInfo('sosreport-l2fwd-2022-05-25/'+p); ti.size=len(b); ti.mode=0o644; ti.mtime=0
        t.addfile(ti,io.BytesIO(b))
open(out2+'l2fwd-cx6dx.tar.xz','wb').write(lzma.compress(buf.getvalue(),preset=1))
open(out2+'l2fwd-cx6dx.tar','wb').write(buf.getvalue())
