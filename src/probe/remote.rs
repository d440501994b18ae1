//! The probe across two nodes: `peerpath probe --listen PORT` on node B, `--peer HOST:PORT`
//! (once per rail) on node A. Node A writes a pattern from its memory through its NIC into
//! node B's memory through B's NIC and reads it back, per rail, with the same timed loop
//! ([`run::timed_phase`]), pattern and verdicts as the local probe; only the libfabric side is
//! split in two processes ([`OfiFabric::listen_on`] / [`OfiFabric::connect_to`]).
//!
//! The out-of-band control connection is one TCP socket per rail ([`Control`]: whole lines
//! under a deadline, at most [`MAX_LINE`] bytes, each tagged with the shared key — see
//! [`super::control`] for the handshake and the tags, which end every line below):
//!
//! ```text
//! B → A  CHALLENGE peerpath-probe/2 hmac-sha256|none <nonce>
//! A → B  HELLO peerpath-probe/2 <provider> <memory> <buffer bytes> <window ms> <nonce>
//! B → A  RAIL <fabric ip> <fabric port> <domain> <link Mb/s or ->
//!        (B listens on the address A's control connection reached; A connects there from
//!        the address its control connection left from, and refuses any other address)
//! B → A  REGION <addr> <key> <len>          (B accepted and registered its buffer)
//! A → B  FILL <seed>                       B → A  OK
//! A → B  VERIFY <seed> <msg> <used slots>  B → A  VERIFIED | WRONG <slot> <offset>
//! A → B  BYE                               B → A  BYE
//! ```
//!
//! Either side answers `ERROR <text>` instead and closes. The bytes themselves never cross the
//! control connection: B checks what landed in its memory and says so. The listener serves
//! the first connection that proves the key; one that does not (a port scan, a health check,
//! another key, garbage, silence) is logged and closed while the listener keeps waiting, up
//! to `--timeout` in all.

use super::fabric::ofi::OfiFabric;
use super::fabric::{Fabric, OpenError, RegKey, Registration, RemoteRegion, RemoteRegistration};
use super::host::HostBuffer;
use super::memory::{self, Buffer};
use super::run::{self, PhaseSpec};
use super::{Unavailable, interrupted};
use crate::analysis::probe_report::cuda::CudaReport;
use crate::analysis::probe_report::verdict::{self, Verdict};
use crate::analysis::probe_report::{
    CellResult, Direction, MemoryKind, NicRef, Op, PROBE_SCHEMA, ProbeReport,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::control::shown;
pub use super::control::{Control, Key, MAX_LINE, PROTOCOL, Side};

/// Largest buffer a listener registers for a peer, bytes.
pub const MAX_BUFFER: usize = 64 << 20;
/// Longest timed window a listener accepts in `HELLO`, milliseconds (the peer asks at most
/// 3 s); each of its waits for the peer's next request is `--timeout` + twice this + 10 s.
pub const MAX_WINDOW_MS: u64 = 10_000;
/// Handshakes a listener runs at once; a connection beyond them is closed at once.
pub const MAX_HANDSHAKES: usize = 16;
/// Fastest link a listener may name in `RAIL`, Mb/s (10 Tb/s); a rate above it, or 0, is
/// read as unknown.
pub const MAX_LINK_MBPS: u64 = 10_000_000;

/// Options of the listening side (`--listen`).
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// TCP port of the control connection.
    pub port: u16,
    /// Address to accept the control connection on (all by default).
    pub bind: IpAddr,
    /// libfabric provider.
    pub provider: String,
    /// How long to wait for a peer that proves the key (in all), and for each of its requests.
    pub timeout: Duration,
    /// The shared key (or none: `--insecure`).
    pub key: Key,
    /// A fault to inject (debug builds, tests): `Corrupt` flips a byte of the last slot the
    /// peer wrote before it is verified.
    pub fault: Option<run::Fault>,
}

/// What the listening side saw: the peer and each verification it answered.
#[derive(Debug, Clone, Default)]
pub struct ListenSummary {
    /// The peer's control address.
    pub peer: String,
    /// The fabric address offered (`ip:port`) and domain.
    pub fabric: String,
    /// `VERIFY` requests answered `VERIFIED`.
    pub verified: usize,
    /// `VERIFY` requests answered `WRONG` (with the answer).
    pub wrong: Vec<String>,
}

/// Options of the connecting side (`--peer`, once per rail).
#[derive(Debug, Clone)]
pub struct PeerOptions {
    /// The peers' control addresses, `HOST:PORT`, rail 0 first.
    pub peers: Vec<String>,
    /// libfabric provider.
    pub provider: String,
    /// Message sizes.
    pub sizes: Vec<usize>,
    /// Operations in flight per cell.
    pub depth: usize,
    /// Bound on the whole run.
    pub duration: Duration,
    /// Bound on each wait for a peer (connect, each answer as a whole, the fabric connection).
    pub timeout: Duration,
    /// The shared key (or none: `--insecure`).
    pub key: Key,
    /// Show a progress bar.
    pub progress: bool,
}

/// The connecting side's result: the report, and the rails whose peer could not be reached
/// (missing, refused, timed out) — the probe could not run there (exit 3).
#[derive(Debug, Clone)]
pub struct PeerRun {
    /// One `results[]` row per rail × op × size.
    pub report: ProbeReport,
    /// `rail N (HOST:PORT): why` for each rail whose peer was not reached.
    pub unreachable: Vec<String>,
}

/// Parses word `i` of a control line.
fn word<T: std::str::FromStr>(w: &[String], i: usize, what: &str) -> Result<T, String> {
    w.get(i).and_then(|s| s.parse().ok()).ok_or_else(|| {
        format!(
            "control connection: bad {what} in `{}`",
            shown(&w.join(" "))
        )
    })
}

/// The link rate of a network interface in Mb/s, from `/sys/class/net/<ifname>/speed`;
/// `None` when the name is not an interface's or the kernel reports no speed (-1).
fn link_rate_mbps(ifname: &str) -> Option<u64> {
    if ifname.is_empty() || ifname.contains('/') || ifname.starts_with('.') {
        return None;
    }
    let s = std::fs::read_to_string(format!("/sys/class/net/{ifname}/speed")).ok()?;
    s.trim()
        .parse::<i64>()
        .ok()
        .filter(|v| *v > 0)
        .map(|v| v as u64)
}

fn open_err(e: OpenError) -> String {
    e.to_string()
}

/// Waits for one peer on `o.port` that proves the key, serves its rail and returns what it
/// did. `Err(Unavailable)` when no such peer came within the timeout or the fabric cannot open
/// (exit 3); `Err` in the other variant for a session that broke.
pub fn listen(
    o: &ListenOptions,
    log: &mut dyn FnMut(&str),
) -> Result<ListenSummary, Result<Unavailable, String>> {
    let listener = TcpListener::bind((o.bind, o.port)).map_err(|e| {
        Ok(Unavailable::device(&format!(
            "cannot listen on {}:{}: {e}",
            o.bind, o.port
        )))
    })?;
    log(&format!(
        "listening on {}:{} for {:.0} s{}",
        o.bind,
        o.port,
        o.timeout.as_secs_f64(),
        if o.key.is_set() {
            ""
        } else {
            " (--insecure: whoever connects first is served)"
        }
    ));
    listen_on(listener, o, log)
}

/// [`listen`] on a socket already bound.
pub fn listen_on(
    listener: TcpListener,
    o: &ListenOptions,
    log: &mut dyn FnMut(&str),
) -> Result<ListenSummary, Result<Unavailable, String>> {
    let admitted = await_peer(&listener, o, log)?;
    // Nobody else is served: later connections are refused by the kernel.
    drop(listener);
    let Admitted {
        mut control,
        local,
        peer,
        hello,
    } = admitted;
    control.cap = None;
    log(&format!(
        "peer {peer} connected (control) and proved the key"
    ));
    let r = serve(o, &mut control, &hello, (local, peer), log);
    if let Err(e) = &r {
        control.send_error(e);
    }
    r.map_err(Err)
}

/// A control connection whose `HELLO` proved the key.
struct Admitted {
    control: Control,
    local: SocketAddr,
    peer: SocketAddr,
    hello: Vec<String>,
}

/// Accepts connections until one proves the key, each handshake on a thread of its own (at
/// most [`MAX_HANDSHAKES`] at once) bounded by `o.timeout` for its `HELLO` and by the
/// overall deadline: a stranger that closes, sends garbage, the wrong key or nothing at all
/// is logged (escaped) and the wait goes on.
fn await_peer(
    listener: &TcpListener,
    o: &ListenOptions,
    log: &mut dyn FnMut(&str),
) -> Result<Admitted, Result<Unavailable, String>> {
    listener
        .set_nonblocking(true)
        .map_err(|e| Err(e.to_string()))?;
    let deadline = Instant::now() + o.timeout;
    let (tx, rx) = std::sync::mpsc::channel::<Result<Admitted, (SocketAddr, String)>>();
    let (mut busy, mut refused) = (0usize, 0usize);
    loop {
        while let Ok(m) = rx.try_recv() {
            busy -= 1;
            match m {
                Ok(a) => return Ok(a),
                Err((who, why)) => {
                    refused += 1;
                    log(&format!("connection from {who} refused: {}", shown(&why)));
                }
            }
        }
        if Instant::now() >= deadline || interrupted() {
            let also = match refused {
                0 => String::new(),
                n => format!(" ({n} connection(s) that did not prove the key refused)"),
            };
            return Err(Ok(Unavailable::device(&format!(
                "no peer connected to port {} within {:.0} s{also}",
                o.port,
                o.timeout.as_secs_f64()
            ))));
        }
        match listener.accept() {
            Ok((s, who)) if busy >= MAX_HANDSHAKES => {
                drop(s);
                log(&format!(
                    "connection from {who} closed: {MAX_HANDSHAKES} handshakes under way"
                ));
            }
            Ok((s, who)) => {
                busy += 1;
                let (tx, key, wait) = (tx.clone(), o.key.clone(), o.timeout);
                std::thread::spawn(move || {
                    let _ = tx.send(handshake(s, key, wait, deadline).map_err(|e| (who, e)));
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Err(format!("accept: {e}"))),
        }
    }
}

/// The listener's side of one connection's handshake: `CHALLENGE`, then a `HELLO` whose tag
/// proves the key, before `deadline`. A connection that fails is answered `ERROR` and closed.
fn handshake(
    s: TcpStream,
    key: Key,
    wait: Duration,
    deadline: Instant,
) -> Result<Admitted, String> {
    s.set_nonblocking(false).map_err(|e| e.to_string())?;
    let local = s.local_addr().map_err(|e| e.to_string())?;
    let peer = s.peer_addr().map_err(|e| e.to_string())?;
    let mut control = Control::new(s, wait, key, Side::Listener)?;
    control.cap = Some(deadline);
    match control.challenge() {
        Ok(hello) => Ok(Admitted {
            control,
            local,
            peer,
            hello,
        }),
        Err(e) => {
            control.send_error(
                "the handshake failed: this listener serves only a peer that proves its key",
            );
            Err(e)
        }
    }
}

/// The peer's IPv4 address (the only one its fabric connection may come from).
fn peer_ip(peer: SocketAddr) -> Result<Ipv4Addr, String> {
    match peer.ip() {
        IpAddr::V4(a) => Ok(a),
        other => Err(format!("peer {other} is not an IPv4 address")),
    }
}

/// `HELLO`'s buffer length and window once checked against this side and the documented
/// limits ([`MAX_BUFFER`], [`MAX_WINDOW_MS`]).
fn check_hello(this_provider: &str, hello: &[String]) -> Result<(usize, u64), String> {
    let provider: String = word(hello, 2, "provider")?;
    if provider != this_provider {
        return Err(format!(
            "peer asks provider {}, this side runs {this_provider}",
            shown(&provider),
        ));
    }
    if hello.get(3).map(String::as_str) != Some("host") {
        return Err("only host memory is served across nodes (this side)".into());
    }
    let len: u64 = word(hello, 4, "buffer length")?;
    if len == 0 || len > MAX_BUFFER as u64 {
        return Err(format!(
            "buffer of {len} bytes refused (1 B to {MAX_BUFFER} B)"
        ));
    }
    let window_ms: u64 = word(hello, 5, "window")?;
    if window_ms == 0 || window_ms > MAX_WINDOW_MS {
        return Err(format!(
            "window of {window_ms} ms refused (1 to {MAX_WINDOW_MS} ms)"
        ));
    }
    Ok((len as usize, window_ms))
}

/// The seed, message size and used slots of a `VERIFY` request, the size 1 B to the
/// buffer's `len`.
fn verify_request(w: &[String], len: usize) -> Result<(u64, usize, String), String> {
    let seed: u64 = word(w, 1, "seed")?;
    let msg: usize = word(w, 2, "message size")?;
    let used: String = word(w, 3, "slots")?;
    if msg == 0 || msg > len {
        return Err(format!(
            "message of {msg} bytes refused (1 B to the buffer's {len} B)"
        ));
    }
    Ok((seed, msg, used))
}

/// Where slot `s` of `msg`-byte messages starts in a buffer of `len` bytes, refused when the
/// slot does not end inside it (a `VERIFY` naming more used slots than the buffer holds).
fn slot_offset(s: usize, msg: usize, len: usize) -> Result<usize, String> {
    s.checked_mul(msg)
        .filter(|a| a.checked_add(msg).is_some_and(|e| e <= len))
        .ok_or_else(|| format!("slot {s} of {msg} bytes lies past the buffer"))
}

/// Fuzz entry (`crate::fuzzing`, target `control`): `data` as the bytes a listener and a peer
/// read, with and without a key — framed into lines, the peer's first line checked as a
/// `CHALLENGE`, every line's tag checked, and `HELLO`, `RAIL` and `VERIFY` parsed and checked
/// as the sessions do. Never panics, whatever the bytes.
pub fn fuzz_lines(data: &[u8]) {
    let keyed = Key::from_bytes(b"fuzz-key-0123456789abcdef").unwrap_or_else(|_| Key::insecure());
    for (key, me) in [
        (Key::insecure(), Side::Listener),
        (Key::insecure(), Side::Peer),
        (keyed.clone(), Side::Listener),
        (keyed, Side::Peer),
    ] {
        let mut t = super::control::Transcript::new(key, me);
        let mut pending = data.to_vec();
        let mut first = me == Side::Peer;
        while let Some(Ok(line)) = super::control::take_line(&mut pending) {
            if std::mem::take(&mut first) {
                let _ = t.challenged(&line);
                continue;
            }
            let Ok(w) = t.open(&line) else { continue };
            let _ = check_hello("tcp", &w);
            let _ = check_rail(&w, Ipv4Addr::LOCALHOST);
            let _ = verify_request(&w, 4096);
        }
    }
}

/// One rail's session on the listening side (see the module doc for the lines), after the
/// peer's `HELLO` proved the key.
fn serve(
    o: &ListenOptions,
    c: &mut Control,
    hello: &[String],
    (local, peer): (SocketAddr, SocketAddr),
    log: &mut dyn FnMut(&str),
) -> Result<ListenSummary, String> {
    let (len, window_ms) = check_hello(&o.provider, hello)?;
    // Each answer waits at most the peer's warm-up and window plus a stalled transfer.
    c.wait = o.timeout + Duration::from_millis(window_ms * 2) + Duration::from_secs(10);
    let IpAddr::V4(ip) = local.ip() else {
        return Err(format!(
            "control connection reached {local}, not an IPv4 address"
        ));
    };
    let (mut fab, port) =
        OfiFabric::listen_on(&o.provider, MemoryKind::Host, ip).map_err(open_err)?;
    let domain = fab.domain_name().unwrap_or("?").to_string();
    let speed = link_rate_mbps(&domain).map_or("-".to_string(), |v| v.to_string());
    // A debug build's injected fault names another address than the one the peer dialled.
    let named = match o.fault {
        Some(run::Fault::ForgeRail) => Ipv4Addr::LOCALHOST,
        _ => ip,
    };
    c.send(&format!("RAIL {named} {port} {domain} {speed}"))?;
    // Only the peer's address may take the fabric connection (a stranger that finds the
    // port first is rejected and named).
    for a in fab.accept(o.timeout, peer_ip(peer)?).map_err(open_err)? {
        log(&format!(
            "fabric connection request from {a} rejected: not the peer's address"
        ));
    }
    log(&format!("fabric connected on {ip}:{port} ({})", fab.nic()));
    let mut summary = ListenSummary {
        peer: peer.to_string(),
        fabric: format!("{ip}:{port} ({})", fab.nic()),
        ..Default::default()
    };
    let mut buf = HostBuffer::new(len)?;
    let fab = &fab;
    let mut reg = Registration::new(fab, &mut buf).map_err(|a| {
        let d: Vec<String> = a.iter().filter_map(|x| x.detail.clone()).collect();
        format!("host buffer registration failed: {}", d.join("; "))
    })?;
    let r = fab
        .export(reg.key())
        .ok_or("this fabric cannot export a registration")?;
    c.send(&format!("REGION {} {} {}", r.addr, r.key, r.len))?;
    // The target's progress (libfabric tcp moves the bytes while the target's queue is read)
    // on its own thread for the whole session, as this node's CPU would.
    let driver = fab
        .target_driver()
        .ok_or("this provider's target side cannot be driven from a thread of its own")?;
    let stop = AtomicBool::new(false);
    let stop_ref = &stop;
    std::thread::scope(|scope| {
        let h = scope.spawn(move || driver.run(stop_ref));
        let r = session(c, reg.buffer(), o.fault, &mut summary, log);
        stop.store(true, Ordering::Release);
        let t = match h.join() {
            Ok(t) => t,
            Err(_) => Err("the target side's thread panicked".into()),
        };
        r.and(t)
    })?;
    Ok(summary)
}

/// The `FILL`/`VERIFY`/`BYE` requests of one session, answered on `buf` (the registered
/// buffer the peer's operations reach).
fn session(
    c: &mut Control,
    buf: &mut dyn Buffer,
    fault: Option<run::Fault>,
    summary: &mut ListenSummary,
    log: &mut dyn FnMut(&str),
) -> Result<(), String> {
    loop {
        let w = c.recv()?;
        match w.first().map(String::as_str) {
            Some("FILL") => {
                memory::fill(buf, word(&w, 1, "seed")?)?;
                c.send("OK")?;
            }
            Some("VERIFY") => {
                let (seed, msg, used) = verify_request(&w, buf.len())?;
                if fault == Some(run::Fault::Corrupt)
                    && let Some(last) = used.bytes().rposition(|b| b == b'1')
                {
                    let at = last.saturating_mul(msg).saturating_add(msg / 2);
                    let mut b = [0u8];
                    if buf.read_at(at, &mut b).is_ok() {
                        buf.write_at(at, &[b[0] ^ 0x5a])?;
                    }
                }
                let mut answer = "VERIFIED".to_string();
                for (s, _) in used.bytes().enumerate().filter(|(_, b)| *b == b'1') {
                    let at = slot_offset(s, msg, buf.len())?;
                    if let Some(off) = memory::verify(buf, at, msg, seed, at)? {
                        answer = format!("WRONG {s} {off}");
                        break;
                    }
                }
                if answer == "VERIFIED" {
                    summary.verified += 1;
                } else {
                    log(&format!("{msg}-byte messages: {answer}"));
                    summary.wrong.push(answer.clone());
                }
                c.send(&answer)?;
            }
            Some("BYE") => {
                let _ = c.send("BYE");
                return Ok(());
            }
            _ => return Err(format!("unexpected request `{}`", shown(&w.join(" ")))),
        }
    }
}

/// How a rail ended early: its peer was never reached (the probe could not run there), or the
/// session broke after it was.
enum RailEnd {
    Unreachable(String),
    Failed(String),
}

/// What every cell of a rail shares.
struct RailCtx<'a> {
    o: &'a PeerOptions,
    window: Duration,
    buffer_len: usize,
    nic: NicRef,
}

/// Runs the probe on every `--peer` rail in turn. `Err` only when libfabric itself is absent;
/// a rail whose peer is missing, refuses or does not answer in time becomes `not_run` rows
/// naming it, and is listed in [`PeerRun::unreachable`].
pub fn probe_peers(o: &PeerOptions) -> Result<PeerRun, Unavailable> {
    let started = Instant::now();
    super::fabric::ofi::runtime_version()?;
    let cells: Vec<(Op, usize)> = [Op::Write, Op::Read]
        .into_iter()
        .flat_map(|op| o.sizes.iter().map(move |&s| (op, s)))
        .collect();
    let total = (o.peers.len() * cells.len()).max(1);
    let window = (o.duration.mul_f64(0.8) / total as u32)
        .mul_f64(0.7)
        .clamp(Duration::from_millis(100), Duration::from_secs(3));
    let buffer_len = super::plan::buffer_len(&o.sizes, o.depth).min(MAX_BUFFER);
    let bar = if o.progress {
        indicatif::ProgressBar::new(total as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    if let Ok(s) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} cells  {msg}") {
        bar.set_style(s);
    }
    let mut results = Vec::new();
    let mut unreachable = Vec::new();
    let mut notes = Vec::new();
    for (rail, peer) in o.peers.iter().enumerate() {
        let mut nic = NicRef::ofi(&o.provider, None);
        nic.peer = Some(peer.clone());
        nic.rail = Some(rail);
        bar.set_message(nic.to_string());
        let mut ctx = RailCtx {
            o,
            window,
            buffer_len,
            nic,
        };
        let before = results.len();
        let end = run_rail(&mut ctx, &cells, &mut results, &bar);
        let ran = results.len() - before;
        if let Err(end) = end {
            let (v, why) = match end {
                RailEnd::Unreachable(why) => {
                    unreachable.push(format!("rail {rail} ({peer}): {why}"));
                    (Verdict::NotRun, format!("peer {peer} not reached: {why}"))
                }
                RailEnd::Failed(why) => (Verdict::TransferFailed, format!("peer {peer}: {why}")),
            };
            notes.push(format!("rail {rail} ({peer}): {why}"));
            for &(op, size) in &cells[ran.min(cells.len())..] {
                results.push(row(&ctx.nic, op, size, v, why.clone()));
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    notes.push(
        "probe across nodes: host memory only; each rail's bytes went from this node's memory \
         to the peer's and back, verified byte for byte on the side they landed on"
            .into(),
    );
    Ok(PeerRun {
        report: ProbeReport {
            schema: PROBE_SCHEMA.into(),
            fabric: format!("ofi:{} across nodes", o.provider),
            results,
            cuda: CudaReport::unavailable("not run by the probe across nodes"),
            counter_changes: Vec::new(),
            notes,
            interrupted: interrupted(),
            wall_seconds: started.elapsed().as_secs_f64(),
        },
        unreachable,
    })
}

/// A row for a cell of the rail that did not run (or broke), with its verdict and reason.
fn row(nic: &NicRef, op: Op, size: usize, verdict: Verdict, reason: String) -> CellResult {
    CellResult::unmeasured(
        None,
        nic,
        MemoryKind::Host,
        (Direction::HostToHost, op),
        size,
        verdict,
        reason,
    )
}

/// Connects the control socket of `peer`, trying each address it resolves to.
fn dial(peer: &str, timeout: Duration) -> Result<TcpStream, String> {
    let addrs: Vec<SocketAddr> = peer
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {peer}: {e}"))?
        .collect();
    let mut last = format!("{peer} resolves to no address");
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => return Ok(s),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                last = format!(
                    "connection refused by {a} (nothing listening: run `peerpath probe --listen {}` there)",
                    a.port()
                );
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                last = format!("no answer from {a} within {:.0} s", timeout.as_secs_f64());
            }
            Err(e) => last = format!("cannot connect to {a}: {e}"),
        }
    }
    Err(last)
}

/// Dials `peer`, runs the handshake (`CHALLENGE`/`HELLO`) and returns the control
/// connection, the address it left from (this side's NIC of the rail) and the address it
/// reached (the only one the fabric connection may go to).
fn open_control(ctx: &RailCtx<'_>, peer: &str) -> Result<(Control, Ipv4Addr, Ipv4Addr), RailEnd> {
    let o = ctx.o;
    let stream = dial(peer, o.timeout).map_err(RailEnd::Unreachable)?;
    // The NIC the control connection left through is the rail's NIC on this side.
    let ends = (
        stream.local_addr().map(|a| a.ip()),
        stream.peer_addr().map(|a| a.ip()),
    );
    let (source, dialled) = match ends {
        (Ok(IpAddr::V4(s)), Ok(IpAddr::V4(d))) => (s, d),
        other => {
            return Err(RailEnd::Failed(format!(
                "control connection between {other:?}, not IPv4 addresses"
            )));
        }
    };
    let mut c =
        Control::new(stream, o.timeout, o.key.clone(), Side::Peer).map_err(RailEnd::Unreachable)?;
    c.hello(&format!(
        "{} host {} {}",
        o.provider,
        ctx.buffer_len,
        ctx.window.as_millis()
    ))
    .map_err(RailEnd::Unreachable)?;
    Ok((c, source, dialled))
}

/// The fabric address, port and link rate of a `RAIL` line, refused unless the address is
/// the one the control connection `dialled`: a listener cannot send this side's bytes
/// elsewhere. A link rate of 0 or above [`MAX_LINK_MBPS`] is unknown.
fn check_rail(w: &[String], dialled: Ipv4Addr) -> Result<(Ipv4Addr, u16, Option<u64>), String> {
    if w.first().map(String::as_str) != Some("RAIL") {
        return Err(format!("expected RAIL, got `{}`", shown(&w.join(" "))));
    }
    let ip: Ipv4Addr = word(w, 1, "fabric address")?;
    if ip != dialled {
        return Err(format!(
            "the listener names fabric address {ip}, not the address dialled ({dialled}): \
             refused (the fabric connection goes only where the control connection went)"
        ));
    }
    let port: u16 = word(w, 2, "fabric port")?;
    let speed = w
        .get(4)
        .and_then(|s| s.parse().ok())
        .filter(|v| (1..=MAX_LINK_MBPS).contains(v));
    Ok((ip, port, speed))
}

/// One rail: control connection, fabric connection, the peer's region, then every cell.
fn run_rail(
    ctx: &mut RailCtx<'_>,
    cells: &[(Op, usize)],
    results: &mut Vec<CellResult>,
    bar: &indicatif::ProgressBar,
) -> Result<(), RailEnd> {
    let o = ctx.o;
    let peer = ctx.nic.peer.clone().unwrap_or_default();
    let (mut c, source, dialled) = open_control(ctx, &peer)?;
    let failed = RailEnd::Failed;
    let w = c.recv().map_err(RailEnd::Unreachable)?;
    let (ip, port, peer_speed) = check_rail(&w, dialled).map_err(failed)?;
    let fab = OfiFabric::connect_to(&o.provider, MemoryKind::Host, (source, ip), port, o.timeout)
        .map_err(|e| failed(format!("fabric connection to {ip}:{port}: {e}")))?;
    super::install_interrupt_handler();
    let domain = fab.domain_name().map(str::to_string);
    ctx.nic.domain = domain.clone();
    bar.set_message(ctx.nic.to_string());
    let speeds: Vec<u64> = [domain.as_deref().and_then(link_rate_mbps), peer_speed]
        .into_iter()
        .flatten()
        .collect();
    let line_rate = speeds.iter().min().map(|m| *m as f64 / 8000.0);
    let w = c.recv().map_err(failed)?;
    if w.first().map(String::as_str) != Some("REGION") {
        return Err(failed(format!(
            "expected REGION, got `{}`",
            shown(&w.join(" "))
        )));
    }
    let region = RemoteRegion {
        addr: word(&w, 1, "region address").map_err(failed)?,
        key: word(&w, 2, "region key").map_err(failed)?,
        len: word(&w, 3, "region length").map_err(failed)?,
    };
    let remote = RemoteRegistration::new(&fab, region).map_err(failed)?;
    let mut buf = HostBuffer::new(ctx.buffer_len).map_err(failed)?;
    let mut local = Registration::new(&fab, &mut buf).map_err(|a| {
        let d: Vec<String> = a.iter().filter_map(|x| x.detail.clone()).collect();
        failed(format!("host buffer registration failed: {}", d.join("; ")))
    })?;
    let mut seed = 0x5eed_u64 ^ ((ctx.nic.rail.unwrap_or(0) as u64) << 32);
    for &(op, size) in cells {
        if interrupted() {
            return Err(failed("interrupted (Ctrl-C)".into()));
        }
        seed = seed.wrapping_add(1);
        let slots = (ctx.buffer_len.min(region.len) / size)
            .min(fab.max_outstanding())
            .min(o.depth.clamp(1, run::MAX_DEPTH));
        let out = if slots == 0 {
            Err(format!("message of {size} bytes does not fit the buffers"))
        } else {
            let shape = (op, size, slots);
            cell(
                &fab,
                &mut c,
                &mut local,
                remote.key(),
                shape,
                ctx.window,
                seed,
            )
        };
        let mut r = row(&ctx.nic, op, size, Verdict::NotRun, String::new());
        match out {
            Ok((bytes, seconds, wrong)) => {
                let gbps = if seconds > 0.0 {
                    bytes as f64 / seconds / 1e9
                } else {
                    0.0
                };
                let (v, why) = verdict::judge_host(wrong.is_none(), gbps, line_rate);
                r.bytes = bytes;
                r.seconds = seconds;
                r.gbytes_per_s = gbps;
                r.verified = wrong.is_none();
                r.ops_in_flight = slots;
                r.verdict = v;
                r.reason = match wrong {
                    Some(w) => format!("{why}: {w}"),
                    None => why,
                };
            }
            Err(e) => {
                r.verdict = Verdict::TransferFailed;
                r.ops_in_flight = slots;
                r.reason = e;
                results.push(r);
                bar.inc(1);
                // The session cannot be trusted after a failed cell: the rest are not run.
                return Err(failed("an earlier cell of this rail failed".into()));
            }
        }
        results.push(r);
        bar.inc(1);
    }
    let _ = c.send("BYE");
    let _ = c.recv();
    Ok(())
}

/// One cell on the connecting side: the destination filled with the inverse pattern, the
/// source with the pattern, a warm-up of `window / 5` and the timed `window`, then the bytes
/// verified where they landed (the peer for WRITE, here for READ). Returns bytes moved,
/// seconds, and the first wrong byte (`None`: verified).
fn cell(
    fab: &OfiFabric,
    c: &mut Control,
    local: &mut Registration<'_, '_>,
    remote: &RegKey,
    (op, msg, slots): (Op, usize, usize),
    window: Duration,
    seed: u64,
) -> Result<(u64, f64, Option<String>), String> {
    let (remote_seed, local_seed) = match op {
        Op::Write => (!seed, seed),
        Op::Read => (seed, !seed),
    };
    c.send(&format!("FILL {remote_seed}"))?;
    expect(c, "OK")?;
    memory::fill(local.buffer(), local_seed)?;
    let mut used = vec![false; slots];
    let abort = AtomicBool::new(false);
    let spec = PhaseSpec {
        op,
        local: local.key(),
        remote,
        msg,
        len: msg,
        slots,
    };
    run::timed_phase(fab, &spec, window / 5, &mut used, &abort)?;
    let stats = run::timed_phase(fab, &spec, window, &mut used, &abort)?;
    let bytes = stats.ops * msg as u64;
    let wrong = match op {
        Op::Write => {
            let bits: String = used.iter().map(|u| if *u { '1' } else { '0' }).collect();
            c.send(&format!("VERIFY {seed} {} {bits}", msg))?;
            let w = c.recv()?;
            match w.first().map(String::as_str) {
                Some("VERIFIED") => None,
                Some("WRONG") => Some(format!(
                    "at the peer, slot {}: first wrong byte at offset {} of {}",
                    shown(w.get(1).map_or("?", String::as_str)),
                    shown(w.get(2).map_or("?", String::as_str)),
                    msg
                )),
                _ => {
                    return Err(format!(
                        "expected VERIFIED or WRONG, got `{}`",
                        shown(&w.join(" "))
                    ));
                }
            }
        }
        Op::Read => {
            let mut wrong = None;
            for (s, _) in used.iter().enumerate().filter(|(_, u)| **u) {
                let at = s * msg;
                if let Some(off) = memory::verify(local.buffer(), at, msg, seed, at)? {
                    wrong = Some(format!(
                        "slot {s}: first wrong byte at offset {off} of {}",
                        msg
                    ));
                    break;
                }
            }
            wrong
        }
    };
    Ok((bytes, stats.seconds, wrong))
}

/// Reads one line and checks it is `what`.
fn expect(c: &mut Control, what: &str) -> Result<(), String> {
    let w = c.recv()?;
    if w.first().map(String::as_str) == Some(what) {
        Ok(())
    } else {
        Err(format!("expected {what}, got `{}`", shown(&w.join(" "))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn key() -> Key {
        Key::from_bytes(b"remote-test-key-0123456789").unwrap()
    }

    fn options(timeout: Duration) -> ListenOptions {
        ListenOptions {
            port: 0,
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            provider: "tcp".into(),
            timeout,
            key: key(),
            fault: None,
        }
    }

    /// A peer's control connection to `to` with `k`, its `HELLO` naming `words`.
    fn hello(to: SocketAddr, k: Key, words: &str) -> Result<Control, String> {
        let s = TcpStream::connect(to).map_err(|e| e.to_string())?;
        let mut c = Control::new(s, Duration::from_secs(5), k, Side::Peer)?;
        c.hello(words)?;
        Ok(c)
    }

    #[test]
    fn strangers_are_refused_and_the_real_peer_is_served() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap();
        let o = options(Duration::from_secs(8));
        let t = std::thread::spawn(move || {
            // A port scan: connect and close.
            drop(TcpStream::connect(at).unwrap());
            // Garbage with terminal escapes.
            let mut g = TcpStream::connect(at).unwrap();
            g.write_all(b"GET / HTTP/1.0\x1b]0;pwned\x07\n").unwrap();
            // Another key.
            let other = Key::from_bytes(b"not the key of this listener").unwrap();
            let _ = hello(at, other, "tcp host 4096 100");
            // One that says nothing (held open), then the real peer.
            let _silent = TcpStream::connect(at).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            let c = hello(at, key(), "tcp host 4096 100").unwrap();
            std::thread::sleep(Duration::from_millis(500));
            (c, g)
        });
        let mut lines = Vec::new();
        let a = await_peer(&l, &o, &mut |m| lines.push(m.to_string()));
        let a = a.unwrap_or_else(|e| panic!("{e:?} {lines:?}"));
        assert_eq!(
            &a.hello[..6],
            ["HELLO", PROTOCOL, "tcp", "host", "4096", "100"]
        );
        let _ = t.join().unwrap();
        let all = lines.join("\n");
        assert!(lines.len() >= 3, "{all}");
        assert!(all.contains("does not hold this key"), "{all}");
    }

    #[test]
    fn a_huge_window_is_refused_naming_the_limit() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap();
        let o = options(Duration::from_secs(5));
        let t = std::thread::spawn(move || {
            let mut c = hello(at, key(), "tcp host 67108864 18446744073709551615").unwrap();
            c.recv().unwrap_err()
        });
        let t0 = Instant::now();
        let e = listen_on(l, &o, &mut |_| {}).unwrap_err().unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(3));
        assert_eq!(
            e,
            "window of 18446744073709551615 ms refused (1 to 10000 ms)"
        );
        let said = t.join().unwrap();
        assert!(said.contains("refused (1 to 10000 ms)"), "{said}");
        let o = options(Duration::from_secs(5));
        let hello = |w: &str| -> Vec<String> { w.split(' ').map(String::from).collect() };
        let big = hello("HELLO p/2 tcp host 67108865 100 n");
        assert!(
            check_hello(&o.provider, &big)
                .unwrap_err()
                .contains("1 B to 67108864 B")
        );
        let ok = hello("HELLO p/2 tcp host 67108864 10000 n");
        assert_eq!(check_hello(&o.provider, &ok).unwrap(), (64 << 20, 10_000));
    }

    #[test]
    fn a_trickling_peer_ends_the_listener_within_its_timeout() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap();
        let o = options(Duration::from_millis(1500));
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(at).unwrap();
            for b in b"HELLO peerpath-probe/2 tcp host 4096 100 "
                .iter()
                .cycle()
                .take(40)
            {
                if s.write_all(&[*b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let t0 = Instant::now();
        let e = listen_on(l, &o, &mut |_| {}).unwrap_err().unwrap();
        assert!(e.message.contains("no peer connected"), "{e}");
        assert!(
            t0.elapsed() < Duration::from_millis(2500),
            "{:?}",
            t0.elapsed()
        );
    }

    #[test]
    fn a_rail_naming_another_address_is_refused() {
        let dialled = Ipv4Addr::new(10, 40, 0, 1);
        let w = |l: &str| -> Vec<String> { l.split(' ').map(String::from).collect() };
        let (ip, port, speed) = check_rail(&w("RAIL 10.40.0.1 4000 veth0 10000"), dialled).unwrap();
        assert_eq!((ip, port, speed), (dialled, 4000, Some(10000)));
        let e = check_rail(&w("RAIL 127.0.0.1 4000 veth0 10000"), dialled).unwrap_err();
        assert!(
            e.contains("names fabric address 127.0.0.1, not the address dialled (10.40.0.1)"),
            "{e}"
        );
        // A rate of 0 or past 10 Tb/s is unknown, not a line rate to judge against.
        for r in ["0", "18446744073709551615", "-", "x"] {
            let l = format!("RAIL 10.40.0.1 4000 veth0 {r}");
            assert_eq!(check_rail(&w(&l), dialled).unwrap().2, None, "{r}");
        }
        let e = check_rail(&w("REGION 1 2 3"), dialled).unwrap_err();
        assert_eq!(e, "expected RAIL, got `REGION 1 2 3`");
    }

    /// `VERIFY`'s message size is 1 B to the buffer's length; 0 or past it is refused naming
    /// the limit (it sized the slots the listener then reads).
    #[test]
    fn verify_request_message_size_is_bounded_by_the_buffer() {
        let w = |l: &str| -> Vec<String> { l.split(' ').map(String::from).collect() };
        assert_eq!(
            verify_request(&w("VERIFY 7 4096 1101"), 4096).unwrap(),
            (7, 4096, "1101".to_string())
        );
        for msg in ["0", "4097", "18446744073709551615"] {
            let e = verify_request(&w(&format!("VERIFY 7 {msg} 1")), 4096).unwrap_err();
            assert!(e.contains("1 B to the buffer's 4096 B"), "{msg}: {e}");
        }
        assert!(verify_request(&w("VERIFY 7 -1 1"), 4096).is_err());
    }

    /// A `VERIFY` whose used slots reach past the buffer is refused at the first such slot,
    /// never read past it (4 slots of 1 KiB fill a 4 KiB buffer; the fifth, and a slot index
    /// whose offset overflows, lie past it).
    #[test]
    fn verify_slots_past_the_buffer_are_refused() {
        assert_eq!(slot_offset(0, 1024, 4096), Ok(0));
        assert_eq!(slot_offset(3, 1024, 4096), Ok(3072));
        for (s, msg) in [(4, 1024), (1, 4096), (usize::MAX, 2), (2, usize::MAX / 2)] {
            let e = slot_offset(s, msg, 4096).unwrap_err();
            assert!(e.contains("lies past the buffer"), "{s} {msg}: {e}");
        }
    }

    #[test]
    fn a_fabric_connection_from_another_address_is_rejected() {
        let lo = Ipv4Addr::LOCALHOST;
        let Ok((mut fab, port)) = OfiFabric::listen_on("tcp", MemoryKind::Host, lo) else {
            eprintln!("SKIPPED: libfabric's tcp provider is not available");
            return;
        };
        let (stranger, peer) = (Ipv4Addr::new(127, 0, 0, 3), Ipv4Addr::new(127, 0, 0, 2));
        let t = std::thread::spawn(move || {
            let wait = Duration::from_secs(3);
            let s = OfiFabric::connect_to("tcp", MemoryKind::Host, (stranger, lo), port, wait);
            let p = OfiFabric::connect_to("tcp", MemoryKind::Host, (peer, lo), port, wait);
            (
                s.err().map(|e| e.to_string()),
                p.err().map(|e| e.to_string()),
            )
        });
        let rejected = fab.accept(Duration::from_secs(10), peer).unwrap();
        assert_eq!(rejected, [stranger]);
        let (s, p) = t.join().unwrap();
        assert!(s.is_some(), "the stranger was connected");
        assert_eq!(p, None);
    }

    #[test]
    fn words_parse_or_name_the_line() {
        let w: Vec<String> = ["REGION", "4096", "x"].map(String::from).to_vec();
        assert_eq!(word::<u64>(&w, 1, "address").unwrap(), 4096);
        let e = word::<u64>(&w, 2, "key").unwrap_err();
        assert_eq!(e, "control connection: bad key in `REGION 4096 x`");
        assert!(word::<u64>(&w, 5, "length").is_err());
    }

    #[test]
    fn a_refused_peer_says_who_to_start() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let e = dial(&format!("127.0.0.1:{port}"), Duration::from_secs(2)).unwrap_err();
        assert!(e.contains("connection refused"), "{e}");
        assert!(
            e.contains(&format!("peerpath probe --listen {port}")),
            "{e}"
        );
    }

    #[test]
    fn link_rate_names_only_an_interface() {
        assert_eq!(link_rate_mbps("../../etc"), None);
        assert_eq!(link_rate_mbps(""), None);
        assert_eq!(link_rate_mbps("no-such-if0"), None);
    }
}
