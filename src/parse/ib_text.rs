//! RDMA device names and port states in operator text beside `lspci` output: `ibdev2netdev`
//! (`-v` adds each device's PCI address), `ibstat` (`CA 'mlx5_0'` blocks), `ibv_devinfo`
//! (`hca_id:` blocks) and the NIC legend of `nvidia-smi topo -m` (`NIC0: mlx5_0`). Text in,
//! devices out; `sources::lspci` attaches them to PCI functions.

/// One port as the text states it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Port {
    /// Port number.
    pub port: u32,
    /// Logical state as the kernel numbers it (`4`, `ACTIVE`).
    pub state: Option<(u32, String)>,
    /// Physical state (`5`, `LinkUp`).
    pub phys_state: Option<(u32, String)>,
    /// Rate in Gb/s (`ibstat` `Rate:`).
    pub rate_gbps: Option<f64>,
    /// `InfiniBand` or `Ethernet`.
    pub link_layer: Option<String>,
}

/// One RDMA device named in the text.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IbDevice {
    /// `mlx5_0`.
    pub name: String,
    /// Its PCI address, where the text gives it (`ibdev2netdev -v`).
    pub pci: Option<String>,
    /// Netdev (`ibdev2netdev`: `==> ib0`).
    pub netdev: Option<String>,
    /// Ports with their states.
    pub ports: Vec<Port>,
    /// Which tool's text named it (`ibstat`, `ibv_devinfo`, `ibdev2netdev`, `nvidia-smi topo -m`).
    pub from: &'static str,
    /// 1-based line.
    pub line: usize,
}

fn state_num(word: &str) -> Option<u32> {
    Some(match word.to_ascii_uppercase().as_str() {
        "DOWN" => 1,
        "INIT" | "INITIALIZING" => 2,
        "ARMED" => 3,
        "ACTIVE" => 4,
        "ACTIVE_DEFER" => 5,
        _ => return None,
    })
}

fn phys_num(word: &str) -> Option<u32> {
    Some(match word {
        "Sleep" | "SLEEP" => 1,
        "Polling" | "POLLING" => 2,
        "Disabled" | "DISABLED" => 3,
        "LinkUp" | "LINK_UP" => 5,
        "LinkErrorRecovery" | "LINK_ERROR_RECOVERY" => 6,
        _ => return None,
    })
}

/// A plausible RDMA device name: letters, digits and `_`, starting with a letter.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.as_bytes()[0].is_ascii_alphabetic()
        && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The natural order of device names (`mlx5_2` before `mlx5_10`).
pub fn natural_key(name: &str) -> (String, u64) {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    (stem.to_string(), name[stem.len()..].parse().unwrap_or(0))
}

/// Every RDMA device the text names, once per name (the first mention with a PCI address or
/// ports wins over a bare legend entry). Each line is tried as each tool's form in turn.
pub fn parse(text: &str) -> Vec<IbDevice> {
    let mut r = Reader::default();
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        let t = raw.trim();
        let _ = r.device_header(no, t)
            || r.legend(no, t)
            || r.ibdev2netdev(no, t)
            || r.port_header(t)
            || r.port_field(t);
    }
    r.out
}

/// The state of [`parse`] across lines: the devices, and the device and port whose block is
/// being read.
#[derive(Default)]
struct Reader {
    out: Vec<IbDevice>,
    cur: Option<usize>,
    port: Option<usize>,
}

impl Reader {
    /// Adds a device, or merges it into the one of that name; its index.
    fn add(&mut self, d: IbDevice) -> usize {
        let out = &mut self.out;
        match out.iter().position(|x| x.name == d.name) {
            Some(i) => {
                let x = &mut out[i];
                if x.pci.is_none() {
                    x.pci = d.pci;
                }
                if x.netdev.is_none() {
                    x.netdev = d.netdev;
                }
                // A block with ports is where the states are read: it names the source.
                if matches!(d.from, "ibstat" | "ibv_devinfo") {
                    x.from = d.from;
                    x.line = d.line;
                }
                i
            }
            None => {
                out.push(d);
                out.len() - 1
            }
        }
    }

    /// ibstat `CA 'mlx5_0'`, ibv_devinfo `hca_id:\tmlx5_0`: a device's block starts.
    fn device_header(&mut self, no: usize, t: &str) -> bool {
        let found = if let Some(n) = t.strip_prefix("CA '").and_then(|r| r.strip_suffix('\''))
            && is_name(n)
        {
            Some((n, "ibstat"))
        } else if let Some(n) = t.strip_prefix("hca_id:").map(str::trim)
            && is_name(n)
        {
            Some((n, "ibv_devinfo"))
        } else {
            None
        };
        let Some((n, from)) = found else {
            return false;
        };
        let d = IbDevice {
            name: n.into(),
            from,
            line: no,
            ..IbDevice::default()
        };
        self.cur = Some(self.add(d));
        self.port = None;
        true
    }

    /// nvidia-smi topo -m legend: `NIC0: mlx5_0`.
    fn legend(&mut self, no: usize, t: &str) -> bool {
        if let Some((k, v)) = t.split_once(": ")
            && k.strip_prefix("NIC")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
            && is_name(v.trim())
        {
            self.add(IbDevice {
                name: v.trim().into(),
                from: "nvidia-smi topo -m",
                line: no,
                ..IbDevice::default()
            });
            self.cur = None;
            return true;
        }
        false
    }

    /// ibdev2netdev: `[PCI ]mlx5_0 [(…) … ]port 1 ==> ib0 (Up)`; any line with the arrow is
    /// taken, read or not.
    fn ibdev2netdev(&mut self, no: usize, t: &str) -> bool {
        let Some((left, right)) = t.split_once(" ==> ") else {
            return false;
        };
        let toks: Vec<&str> = left.split_whitespace().collect();
        let (pci, name) = match toks.as_slice() {
            [p, n, ..] if p.matches(':').count() == 2 && p.contains('.') => {
                (Some(p.to_string()), *n)
            }
            [n, ..] => (None, *n),
            [] => return true,
        };
        if !is_name(name) {
            return true;
        }
        let portno = left
            .rsplit_once("port ")
            .and_then(|(_, p)| p.split_whitespace().next())
            .and_then(|p| p.parse().ok());
        let netdev = right.split_whitespace().next().map(str::to_string);
        let i = self.add(IbDevice {
            name: name.into(),
            pci,
            netdev,
            from: "ibdev2netdev",
            line: no,
            ..IbDevice::default()
        });
        let out = &mut self.out;
        if let Some(p) = portno
            && !out[i].ports.iter().any(|x| x.port == p)
        {
            // ibdev2netdev says the netdev's operstate, not the port's: kept as unknown
            // state unless `-v` printed `(ACTIVE)`/`(DOWN)` before the arrow.
            let st = left
                .rsplit_once('(')
                .and_then(|(_, r)| r.strip_suffix(')'))
                .and_then(|w| state_num(w).map(|n| (n, w.to_ascii_uppercase())));
            out[i].ports.push(Port {
                port: p,
                state: st,
                ..Port::default()
            });
        }
        self.cur = None;
        true
    }

    /// Port headers inside a device's block: `Port 1:` (ibstat), `port:\t1` (ibv_devinfo).
    fn port_header(&mut self, t: &str) -> bool {
        let Some(ci) = self.cur else { return false };
        let port_no = t
            .strip_prefix("Port ")
            .and_then(|r| r.strip_suffix(':'))
            .or_else(|| t.strip_prefix("port:").map(str::trim))
            .and_then(|n| n.parse::<u32>().ok());
        let Some(p) = port_no else { return false };
        self.out[ci].ports.push(Port {
            port: p,
            ..Port::default()
        });
        self.port = Some(self.out[ci].ports.len() - 1);
        true
    }

    /// A field of the port being read: state, physical state, rate, link layer.
    fn port_field(&mut self, t: &str) -> bool {
        let (Some(ci), Some(pi)) = (self.cur, self.port) else {
            return false;
        };
        let Some((k, v)) = t.split_once(':') else {
            return false;
        };
        let v = v.trim();
        let p = &mut self.out[ci].ports[pi];
        match k.trim() {
            // ibstat `State: Active`; ibv_devinfo `state: PORT_ACTIVE (4)`.
            "State" | "state" => {
                let w = v.split_whitespace().next().unwrap_or("");
                let w = w.strip_prefix("PORT_").unwrap_or(w);
                p.state = state_num(w).map(|n| (n, w.to_ascii_uppercase()));
            }
            "Physical state" | "phys_state" => {
                let w = v.split_whitespace().next().unwrap_or("");
                p.phys_state = phys_num(w).map(|n| (n, w.to_string()));
            }
            "Rate" => p.rate_gbps = v.parse().ok(),
            "Link layer" | "link_layer" => p.link_layer = Some(v.to_string()),
            _ => {}
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ibstat_ibv_devinfo_ibdev2netdev_and_legend() {
        let t = "CA 'mlx5_1'\n\tCA type: MT4125\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 100\n\t\tLink layer: Ethernet\n\
                 hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_DOWN (1)\n\t\t\tphys_state:\t\tDISABLED (3)\n\t\t\tlink_layer:\t\tEthernet\n\
                 0000:19:00.0 mlx5_2 (MT4129 - MCX75310AAS-NEAT) NVIDIA ConnectX-7 fw 28.39.1002 port 1 (ACTIVE) ==> ibp25s0 (Up)\n\
                 mlx5_3 port 1 ==> ib3 (Down)\n\
                   NIC0: mlx5_0\n";
        let d = parse(t);
        let names: Vec<&str> = d.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["mlx5_1", "mlx5_0", "mlx5_2", "mlx5_3"]);
        assert_eq!(d[0].ports[0].state, Some((4, "ACTIVE".into())));
        assert_eq!(d[0].ports[0].rate_gbps, Some(100.0));
        assert_eq!(d[1].ports[0].state, Some((1, "DOWN".into())));
        assert_eq!(d[1].ports[0].phys_state, Some((3, "DISABLED".into())));
        assert_eq!(d[1].ports[0].link_layer.as_deref(), Some("Ethernet"));
        assert_eq!(d[2].pci.as_deref(), Some("0000:19:00.0"));
        assert_eq!(d[2].netdev.as_deref(), Some("ibp25s0"));
        assert_eq!(d[2].ports[0].state, Some((4, "ACTIVE".into())));
        assert_eq!(d[3].ports[0].state, None);
    }
}
