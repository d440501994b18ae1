//! perftest bandwidth output (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`; linux-rdma/perftest
//! `perftest_parameters.c`, `cuda_memory.c`): the command line when shown, the CUDA lines of
//! `--use_cuda`/`--use_cuda_bus_id` (`initializing CUDA`, `CUDA device %d: PCIe address is
//! %02X:%02X`, `Picking device No. %d`, `device name = [%s]`), the `%s BW Test` banner and its
//! settings (`Device : mlx5_0`, `Link type`, `Number of qps`, …), perftest's own `WARNING:`
//! lines, and the result table (`#bytes #iterations BW peak[Gb/sec|MiB/sec] BW average[…]
//! MsgRate[Mpps]`). Each command, banner or `Starting RDMA client` line after a table starts a
//! new run. Pure: fragments in, runs out.

use super::nccl_log::Fragment;
use super::text::{is_uint, shell_prompt};
use serde::Serialize;

/// Where the run's buffers lived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PerfMemory {
    /// Host memory: the command has no `--use_cuda*`, or the banner came without CUDA
    /// initialisation before it.
    Host {
        /// How that is known.
        basis: String,
    },
    /// GPU memory (`--use_cuda`, `--use_cuda_bus_id`, CUDA lines printed).
    Cuda {
        /// CUDA device index (`Picking device No. N`, `--use_cuda=N`).
        #[serde(skip_serializing_if = "Option::is_none")]
        device: Option<u32>,
        /// `CUDA device N: PCIe address is BB:DD` of the picked device, or `--use_cuda_bus_id`.
        #[serde(skip_serializing_if = "Option::is_none")]
        pci: Option<String>,
        /// `device name = [NAME]`.
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// `--use_cuda_dmabuf`.
        dmabuf: bool,
    },
    /// Not shown (text before the banner is missing).
    Unknown,
}

/// One row of the result table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PerfRow {
    /// Message size, bytes.
    pub bytes: u64,
    /// Iterations.
    pub iterations: u64,
    /// Peak bandwidth, Gb/s (converted from MiB/s when the table is in MiB/s).
    pub peak_gbps: f64,
    /// Average bandwidth, Gb/s.
    pub avg_gbps: f64,
}

/// One perftest run (server or client side).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerfRun {
    /// 1-based line where it starts.
    pub line: usize,
    /// Host from a shell prompt before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The command line, when shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The tool (`ib_write_bw`), from the command or `Starting RDMA client '…'`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The banner's test (`RDMA_Write`, `RDMA_Read`, `Send`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// `server` (printed `Waiting for client to connect`) or `client`; `None` when not shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// `Device : mlx5_0` (or the `-d` of the command).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// `Link type : IB|Ethernet`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_type: Option<String>,
    /// `Number of qps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qps: Option<u32>,
    /// `PCIe relax order : ON|OFF`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relaxed_order: Option<String>,
    /// Buffers on GPU or host.
    pub memory: PerfMemory,
    /// perftest's own `WARNING:` lines.
    pub warnings: Vec<String>,
    /// The table's unit as printed (`Gb/sec`, `MiB/sec`, `MB/sec`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Result rows.
    pub rows: Vec<PerfRow>,
    /// The last line read as part of this run (its table's last row or closing dashes): the
    /// lines from `line` to here are perftest's output.
    #[serde(skip)]
    pub end_line: usize,
}

impl PerfRun {
    fn new(line: usize) -> Self {
        PerfRun {
            line,
            host: None,
            command: None,
            tool: None,
            test: None,
            role: None,
            device: None,
            link_type: None,
            qps: None,
            relaxed_order: None,
            memory: PerfMemory::Unknown,
            warnings: Vec::new(),
            unit: None,
            rows: Vec::new(),
            end_line: line,
        }
    }

    /// The highest peak of any row, Gb/s.
    pub fn peak_gbps(&self) -> Option<f64> {
        self.rows.iter().map(|r| r.peak_gbps).reduce(f64::max)
    }

    /// The average at the largest message size, Gb/s.
    pub fn large_avg_gbps(&self) -> Option<f64> {
        self.rows.iter().max_by_key(|r| r.bytes).map(|r| r.avg_gbps)
    }

    /// Whether it is a GPU-memory run.
    pub fn on_gpu(&self) -> bool {
        matches!(self.memory, PerfMemory::Cuda { .. })
    }
}

/// perftest tools.
const TOOLS: [&str; 6] = [
    "ib_write_bw",
    "ib_read_bw",
    "ib_send_bw",
    "ib_atomic_bw",
    "raw_ethernet_bw",
    "ib_write_lat",
];

/// Every perftest run in an input, and table lines that could not be read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Perftest {
    /// Runs with a table, in input order.
    pub runs: Vec<PerfRun>,
    /// Rows that could not be read: (line, text).
    pub refused: Vec<(usize, String)>,
}

/// The value after `key :` in a settings line (` Device         : mlx5_0`), which may hold two
/// settings separated by tabs.
fn setting<'a>(t: &'a str, key: &str) -> Option<&'a str> {
    for part in t.split('\t').filter(|p| !p.trim().is_empty()) {
        let (k, v) = part.split_once(':')?;
        if k.trim() == key {
            return Some(v.trim());
        }
    }
    None
}

/// Parses the fragments of an input: each line dispatched to the form it has ([`Reader::line`]).
pub fn parse(fragments: &[Fragment]) -> Perftest {
    let mut r = Reader::default();
    for f in fragments {
        r.line(f);
    }
    r.finish_run();
    r.out
}

/// The state of [`parse`] across lines: the runs read, the run being read, whether its table
/// is open, the host of the last shell prompt.
#[derive(Default)]
struct Reader {
    out: Perftest,
    cur: Option<PerfRun>,
    in_table: bool,
    last_host: Option<String>,
}

impl Reader {
    /// Ends the run being read (kept when it has rows).
    fn finish_run(&mut self) {
        if let Some(r) = self.cur.take()
            && !r.rows.is_empty()
        {
            self.out.runs.push(r);
        }
    }

    /// Whether the run being read has rows (a new banner starts another run).
    fn run_started(&self) -> bool {
        self.cur.as_ref().is_some_and(|r| !r.rows.is_empty())
    }

    /// The run being read, started at line `no` on the last host when there is none.
    fn run(&mut self, no: usize) -> &mut PerfRun {
        self.cur.get_or_insert_with(|| {
            let mut r = PerfRun::new(no);
            r.host = self.last_host.clone();
            r
        })
    }

    /// One line, by its form.
    fn line(&mut self, f: &Fragment) {
        let t = f.text.trim_end();
        let tt = t.trim();
        if tt.is_empty() {
            return;
        }
        let (host, cmd) = match shell_prompt(tt) {
            Some((h, c)) => (Some(h.to_string()), c),
            None => (None, tt),
        };
        if host.is_some() {
            self.last_host = host.clone();
        }
        let tool = cmd
            .split_whitespace()
            .next()
            .map(|w| w.rsplit('/').next().unwrap_or(w))
            .filter(|w| TOOLS.contains(w));
        if let Some(tool) = tool {
            self.command(f.no, tool, host, cmd);
        } else if let Some(r) = tt.strip_prefix("Starting RDMA client '") {
            self.client(f.no, r);
        } else if tt.contains("Waiting for client to connect") {
            if self.run_started() {
                self.finish_run();
            }
            self.run(f.no).role = Some("server".into());
        } else if tt == "initializing CUDA" {
            self.cuda_init(f.no);
        } else if self.cuda_device(tt) {
        } else if let Some(test) = tt.strip_suffix(" BW Test") {
            self.test_banner(f.no, test);
        } else if let Some(w) = tt.strip_prefix("WARNING:") {
            if let Some(r) = self.cur.as_mut() {
                r.warnings.push(w.trim().to_string());
            }
        } else {
            self.settings(t);
            if tt.starts_with("#bytes") && tt.contains("BW average") {
                self.table_header(f.no, tt);
            } else if self.in_table {
                self.table_line(f.no, tt);
            }
        }
    }

    /// A perftest command line: a new run, with its device and memory from the flags.
    fn command(&mut self, no: usize, tool: &str, host: Option<String>, cmd: &str) {
        self.finish_run();
        self.in_table = false;
        let mut r = PerfRun::new(no);
        r.host = host.or_else(|| self.last_host.clone());
        r.command = Some(cmd.chars().take(400).collect());
        r.tool = Some(tool.to_string());
        let toks: Vec<&str> = cmd.split_whitespace().collect();
        for (i, w) in toks.iter().enumerate() {
            let val = |flag: &str| -> Option<String> {
                w.strip_prefix(flag)
                    .and_then(|v| v.strip_prefix('='))
                    .map(str::to_string)
                    .or_else(|| {
                        (*w == flag)
                            .then(|| toks.get(i + 1).map(|s| s.to_string()))
                            .flatten()
                    })
            };
            if let Some(d) = val("-d").or_else(|| val("--ib-dev")) {
                r.device = Some(d);
            }
            if let Some(c) = val("--use_cuda") {
                r.memory = PerfMemory::Cuda {
                    device: c.parse().ok(),
                    pci: None,
                    name: None,
                    dmabuf: toks.contains(&"--use_cuda_dmabuf"),
                };
            } else if let Some(b) = val("--use_cuda_bus_id") {
                r.memory = PerfMemory::Cuda {
                    device: None,
                    pci: Some(b),
                    name: None,
                    dmabuf: toks.contains(&"--use_cuda_dmabuf"),
                };
            }
        }
        if r.memory == PerfMemory::Unknown {
            r.memory = PerfMemory::Host {
                basis: "the command has no --use_cuda".into(),
            };
        }
        self.cur = Some(r);
    }

    /// `Starting RDMA client '<tool>' … for <device>`: a new client run.
    fn client(&mut self, no: usize, r: &str) {
        self.finish_run();
        self.in_table = false;
        let mut run = PerfRun::new(no);
        run.host = self.last_host.clone();
        let (tool, rest) = r.split_once('\'').unwrap_or((r, ""));
        run.tool = Some(tool.to_string());
        run.role = Some("client".into());
        run.device = rest
            .split_whitespace()
            .skip_while(|w| *w != "for")
            .nth(1)
            .map(str::to_string);
        self.cur = Some(run);
    }

    /// `initializing CUDA`: the run's memory is a GPU's.
    fn cuda_init(&mut self, no: usize) {
        if self.run_started() {
            self.finish_run();
        }
        let r = self.run(no);
        if !matches!(r.memory, PerfMemory::Cuda { .. }) {
            r.memory = PerfMemory::Cuda {
                device: None,
                pci: None,
                name: None,
                dmabuf: false,
            };
        }
    }

    /// The GPU of a CUDA run: the device picked, its PCIe address, its name; whether the line
    /// was one of these.
    fn cuda_device(&mut self, tt: &str) -> bool {
        let Some(PerfMemory::Cuda {
            device, pci, name, ..
        }) = self.cur.as_mut().map(|r| &mut r.memory)
        else {
            return false;
        };
        if let Some(n) = tt.strip_prefix("Picking device No. ") {
            *device = n.trim().parse().ok();
            return true;
        }
        if let Some(rest) = tt.strip_prefix("CUDA device ")
            && let Some((n, addr)) = rest.split_once(": PCIe address is ")
        {
            // Kept for the device picked (or the first when none was picked yet).
            if device.is_none_or(|d| n.trim().parse() == Ok(d)) && pci.is_none() {
                *pci = Some(addr.trim().to_string());
            }
            return true;
        }
        if let Some((_, nm)) = tt.split_once("device name = [") {
            *name = Some(nm.trim_end_matches(']').to_string());
            return true;
        }
        false
    }

    /// `<test> BW Test`: the run's test (a new run when the current one has one).
    fn test_banner(&mut self, no: usize, test: &str) {
        if self.run_started() || self.cur.as_ref().is_some_and(|r| r.test.is_some()) {
            self.finish_run();
        }
        let r = self.run(no);
        r.test = Some(test.trim().to_string());
        if r.memory == PerfMemory::Unknown {
            r.memory = PerfMemory::Host {
                basis: "no CUDA initialisation was printed before the test banner".into(),
            };
        }
        self.in_table = false;
    }

    /// The settings block (`Device`, `Link type`, `Number of qps`, `PCIe relax order`).
    fn settings(&mut self, t: &str) {
        if let Some(r) = self.cur.as_mut() {
            if let Some(d) = setting(t, "Device") {
                r.device = Some(d.to_string());
            }
            if let Some(v) = setting(t, "Link type") {
                r.link_type = Some(v.to_string());
            }
            if let Some(v) = setting(t, "Number of qps") {
                r.qps = v.parse().ok();
            }
            if let Some(v) = setting(t, "PCIe relax order") {
                r.relaxed_order = Some(v.to_string());
            }
        }
    }

    /// `#bytes … BW average[unit] …`: the table opens (a new run when this one has rows).
    fn table_header(&mut self, no: usize, tt: &str) {
        let unit = tt
            .split_once("BW average[")
            .and_then(|(_, u)| u.split_once(']'))
            .map(|(u, _)| u.to_string());
        let r = self.cur.get_or_insert_with(|| {
            let mut r = PerfRun::new(no);
            r.host = self.last_host.clone();
            r
        });
        if !r.rows.is_empty() {
            let mut next = PerfRun::new(no);
            next.host = r.host.clone();
            std::mem::swap(r, &mut next);
            self.out.runs.push(next);
        }
        r.unit = unit;
        self.in_table = true;
    }

    /// A line of an open table: a row (or refused when cut or not finite), a rule, or the
    /// table's end.
    fn table_line(&mut self, no: usize, tt: &str) {
        let toks: Vec<&str> = tt.split_whitespace().collect();
        if toks.first().is_some_and(|w| is_uint(w)) {
            let to_gbps = match self.cur.as_ref().and_then(|r| r.unit.as_deref()) {
                Some("Gb/sec") => 1.0,
                // MiB/s (and the older MB/sec, also 2^20 bytes) to Gb/s.
                Some(_) => 1048576.0 * 8.0 / 1e9,
                None => 1.0,
            };
            let nums: Vec<f64> = toks.iter().filter_map(|w| w.parse().ok()).collect();
            if toks.iter().any(|w| crate::parse::text::non_finite(w)) {
                self.out.refused.push((no, tt.chars().take(160).collect()));
                return;
            }
            // Five fields: the average (fourth) is whole even if the line was cut after it.
            if let Some(r) = self.cur.as_mut() {
                r.end_line = no;
            }
            if nums.len() >= 5 && toks.len() >= 5 {
                if let Some(r) = self.cur.as_mut() {
                    r.rows.push(PerfRow {
                        bytes: nums[0] as u64,
                        iterations: nums[1] as u64,
                        peak_gbps: nums[2] * to_gbps,
                        avg_gbps: nums[3] * to_gbps,
                    });
                }
            } else {
                self.out.refused.push((no, tt.chars().take(160).collect()));
            }
            return;
        }
        if tt.starts_with("---") {
            if let Some(r) = self.cur.as_mut() {
                r.end_line = no;
            }
            return;
        }
        self.in_table = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::nccl_log::whole_line_fragments;

    #[test]
    fn host_and_cuda_runs() {
        let s = "ib_write_bw -d mlx5_5 -F -R --report_gbits --use_cuda=0\n\
initializing CUDA\nListing all CUDA devices in system:\nCUDA device 0: PCIe address is 82:00\n\nPicking device No. 0\n[pid = 18, dev = 0] device name = [Tesla T4]\n\
---------------------------------------------------------------------------------------\n                    RDMA_Write BW Test\n Dual-port       : OFF\t\tDevice         : mlx5_5\n Number of qps   : 1\t\tTransport type : IB\n PCIe relax order: ON\n WARNING: CPU is not PCIe relaxed ordering compliant.\n Link type       : Ethernet\n\
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536      5000             10.68              10.50  \t\t   0.020033\n\
---------------------------------------------------------------------------------------\n\
[root@pod-1 /]# ib_write_bw -a -F --report_gbits\n                    RDMA_Write BW Test\n Dual-port       : OFF\t\tDevice         : mlx5_0\n #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n 2          5000           0.060665            0.059098            3.693631\n 8388608    5000             11728.0              11728.0  \t\t   0.001466\n";
        let p = parse(&whole_line_fragments(s));
        assert_eq!(p.runs.len(), 2, "{p:#?}");
        let g = &p.runs[0];
        assert_eq!(g.device.as_deref(), Some("mlx5_5"));
        assert_eq!(g.test.as_deref(), Some("RDMA_Write"));
        assert_eq!(
            g.memory,
            PerfMemory::Cuda {
                device: Some(0),
                pci: Some("82:00".into()),
                name: Some("Tesla T4".into()),
                dmabuf: false
            }
        );
        assert_eq!(g.warnings, ["CPU is not PCIe relaxed ordering compliant."]);
        assert_eq!(g.link_type.as_deref(), Some("Ethernet"));
        assert_eq!(g.large_avg_gbps(), Some(10.50));
        let h = &p.runs[1];
        assert_eq!(h.host.as_deref(), Some("pod-1"));
        assert!(!h.on_gpu());
        assert_eq!(h.rows.len(), 2);
        // 11728 MiB/s = 98.38 Gb/s.
        assert!((h.large_avg_gbps().unwrap() - 98.38).abs() < 0.01);
    }

    #[test]
    fn a_cut_row_is_refused() {
        let s = "                    RDMA_Write BW Test\n #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536      5000             92.56\n 131072      5000             92.56              92.56  \t\t   0.0";
        let p = parse(&whole_line_fragments(s));
        assert_eq!(p.runs.len(), 1);
        assert_eq!(p.runs[0].rows.len(), 1, "only the whole row is read");
        assert_eq!(p.refused.len(), 1);
    }
}
