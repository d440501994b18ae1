//! The control connection of the probe across nodes (`peerpath-probe/2`, driven by
//! [`super::remote`]): one TCP socket per rail carrying text lines, each read bounded as a
//! whole (a deadline per line, not per byte: a peer trickling one byte a second is cut off at
//! the deadline) and at most [`MAX_LINE`] bytes, and — unless both sides run `--insecure` —
//! authenticated with a shared key:
//!
//! ```text
//! B → A  CHALLENGE peerpath-probe/2 hmac-sha256 <nonce: 64 hex digits>   (untagged)
//! A → B  HELLO peerpath-probe/2 … <tag>        B checks the tag: A holds the key
//! B → A  RAIL … <tag>                          A checks the tag: B holds the key
//! …      every later line ends with its tag
//! ```
//!
//! A line's tag is HMAC-SHA256(key, `peerpath-probe/2` ‖ the SHA-256 of the transcript so
//! far), hex: the transcript is every line of the session up to and including this one (the
//! challenge first, each line with the side that sent it and its length), so a tag proves the
//! key, is fresh for the listener's random nonce (and for the peer's, carried in `HELLO`), and
//! binds every earlier line and the order of all of them — a line replayed, dropped or moved
//! breaks every later tag. Tags are compared in constant time ([`hmac::Mac::verify_slice`]).
//! With `--insecure` on both sides the challenge names `none` and every tag is `-`. `ERROR
//! <text>` lines are never tagged (a side that cannot prove the key can still say why it
//! stops); their text is the other side's and never trusted: every message here that quotes
//! the other side cuts it to 200 characters ([`shown`]), and the command line escapes every
//! such message for the terminal or log it reaches (`render::escape::one_line`).

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// The control protocol's name and version: the second word of `CHALLENGE` and `HELLO`.
/// Version 2 added the key, the tags and the deadlines; a `peerpath-probe/1` side is refused.
pub const PROTOCOL: &str = "peerpath-probe/2";
/// Longest control line accepted, bytes (its newline included).
pub const MAX_LINE: usize = 512;
/// Fewest bytes a key may hold.
pub const MIN_KEY: usize = 16;
/// Most bytes read from a `--key-file`.
pub const MAX_KEY: usize = 4096;
/// The environment variable a key is read from when no `--key-file` is given.
pub const KEY_ENV: &str = "PEERPATH_PROBE_KEY";
/// Bytes of the listener's random nonce and of the peer's.
pub const NONCE: usize = 32;

/// The shared secret both sides of a probe hold, or none (`--insecure`). Its bytes are never
/// printed (`Debug` says only how long it is).
#[derive(Clone)]
pub struct Key(Option<Vec<u8>>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(k) => write!(f, "Key({} bytes)", k.len()),
            None => write!(f, "Key(none: --insecure)"),
        }
    }
}

impl Key {
    /// No key: the control connection is neither authenticated nor checked (`--insecure`).
    pub fn insecure() -> Key {
        Key(None)
    }

    /// A key from bytes given directly (tests); refused under [`MIN_KEY`] bytes.
    pub fn from_bytes(b: &[u8]) -> Result<Key, String> {
        if b.len() < MIN_KEY {
            return Err(format!(
                "the probe key holds {} byte(s); at least {MIN_KEY} are needed \
                 (e.g. `head -c 32 /dev/urandom | base64`)",
                b.len()
            ));
        }
        Ok(Key(Some(b.to_vec())))
    }

    /// The key of `peerpath probe --listen|--peer`: the bytes of `key_file` (one trailing
    /// newline dropped; the file must be readable by its owner only), else the value of
    /// [`KEY_ENV`], else none — which is refused unless `insecure`. `insecure` with a key
    /// given is refused too: the two sides would not agree.
    pub fn resolve(key_file: Option<&Path>, insecure: bool) -> Result<Key, String> {
        let env = std::env::var_os(KEY_ENV).filter(|v| !v.is_empty());
        if insecure {
            if key_file.is_some() || env.is_some() {
                return Err(format!(
                    "--insecure given with a key (--key-file or {KEY_ENV}): choose one"
                ));
            }
            return Ok(Key::insecure());
        }
        if let Some(p) = key_file {
            return Key::from_file(p);
        }
        if let Some(v) = env {
            use std::os::unix::ffi::OsStrExt;
            return Key::from_bytes(v.as_bytes()).map_err(|e| format!("{KEY_ENV}: {e}"));
        }
        Err(format!(
            "no key for the control connection: pass --key-file PATH (the same secret on both \
             nodes) or set {KEY_ENV}; --insecure runs without one (trusted networks only)"
        ))
    }

    fn from_file(p: &Path) -> Result<Key, String> {
        use std::os::unix::fs::MetadataExt;
        let shown = shown(&p.display().to_string());
        let f = std::fs::File::open(p).map_err(|e| format!("--key-file {shown}: {e}"))?;
        let meta = f
            .metadata()
            .map_err(|e| format!("--key-file {shown}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("--key-file {shown}: not a regular file"));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "--key-file {shown}: readable or writable by others (mode {:o}): `chmod 600` it",
                meta.mode() & 0o777
            ));
        }
        let mut b = Vec::new();
        f.take(MAX_KEY as u64 + 1)
            .read_to_end(&mut b)
            .map_err(|e| format!("--key-file {shown}: {e}"))?;
        if b.len() > MAX_KEY {
            return Err(format!("--key-file {shown}: longer than {MAX_KEY} bytes"));
        }
        if b.ends_with(b"\n") {
            b.pop();
            if b.ends_with(b"\r") {
                b.pop();
            }
        }
        Key::from_bytes(&b).map_err(|e| format!("--key-file {shown}: {e}"))
    }

    /// Whether there is a key (the session is authenticated).
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }
}

/// Which side sent a line (part of what each tag covers).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Side {
    /// The `--listen` side (B).
    Listener,
    /// The `--peer` side (A).
    Peer,
}

impl Side {
    fn byte(self) -> u8 {
        match self {
            Side::Listener => b'L',
            Side::Peer => b'P',
        }
    }
    fn other(self) -> Side {
        match self {
            Side::Listener => Side::Peer,
            Side::Peer => Side::Listener,
        }
    }
}

/// A control connection: whole lines under a deadline, tagged and checked with the key.
pub struct Control {
    stream: TcpStream,
    pending: Vec<u8>,
    /// Bound on each line read, as a whole.
    pub wait: Duration,
    /// A time no read may pass whatever `wait` says (the listener's wait for a valid peer).
    pub cap: Option<Instant>,
    t: Transcript,
}

/// One session's transcript on one side: the key, the side, and the hash of every line so
/// far. It tags the lines this side sends ([`Transcript::seal`]) and checks the other side's
/// ([`Transcript::open`]); no I/O (the fuzz target `control` drives it with bytes).
pub struct Transcript {
    key: Key,
    me: Side,
    hash: Sha256,
}

impl Transcript {
    /// An empty transcript of side `me` under `key`.
    pub fn new(key: Key, me: Side) -> Transcript {
        Transcript {
            key,
            me,
            hash: Sha256::new(),
        }
    }

    /// Adds a line sent by `by`; its tag's MAC (none without a key).
    fn absorb(&mut self, by: Side, payload: &str) -> Option<Hmac<Sha256>> {
        step(&mut self.hash, &self.key, by, payload)
    }

    /// `payload` as this side sends it: with its tag (`-` without a key).
    pub fn seal(&mut self, payload: &str) -> String {
        let tag = match self.absorb(self.me, payload) {
            Some(mac) => hex(&mac.finalize().into_bytes()),
            None => "-".into(),
        };
        format!("{payload} {tag}")
    }

    /// The peer's check of the listener's `CHALLENGE` line: the protocol, the nonce, and both
    /// sides agreeing on having a key; the line is added to the transcript.
    pub fn challenged(&mut self, line: &str) -> Result<(), String> {
        if let Some(text) = line.strip_prefix("ERROR") {
            return Err(format!("the other side: {}", shown(text.trim())));
        }
        let w: Vec<&str> = line.split(' ').collect();
        if w.first() != Some(&"CHALLENGE") || w.get(1) != Some(&PROTOCOL) || w.len() != 4 {
            return Err(format!(
                "expected `CHALLENGE {PROTOCOL}` (is the listener peerpath with the same \
                 protocol?), got `{}`",
                shown(line)
            ));
        }
        match (w[2], self.key.is_set()) {
            ("hmac-sha256", true) | ("none", false) => {}
            ("none", true) => {
                return Err(
                    "the listener runs without a key (--insecure), this side has \
                            one: refused"
                        .into(),
                );
            }
            ("hmac-sha256", false) => {
                return Err("the listener requires a key: pass the same --key-file (or \
                            PEERPATH_PROBE_KEY) on this side"
                    .into());
            }
            (m, _) => return Err(format!("unknown authentication `{}`", shown(m))),
        }
        if unhex(w[3]).is_none_or(|n| n.len() != NONCE) {
            return Err(format!("a challenge nonce of {} characters", w[3].len()));
        }
        self.absorb(Side::Listener, line);
        Ok(())
    }

    /// The words of a line from the other side once its tag is checked; an `ERROR` line
    /// becomes `Err` with its text.
    pub fn open(&mut self, line: &str) -> Result<Vec<String>, String> {
        if let Some(text) = line.strip_prefix("ERROR") {
            return Err(format!("the other side: {}", shown(text.trim())));
        }
        let Some((payload, tag)) = line.rsplit_once(' ') else {
            return Err(format!(
                "control connection: an untagged line `{}`",
                shown(line)
            ));
        };
        let by = self.me.other();
        match (self.absorb(by, payload), tag) {
            (None, "-") => {}
            (None, _) => {
                return Err(
                    "control connection: the other side tags its lines (it has a key), \
                     this side runs --insecure"
                        .into(),
                );
            }
            (Some(_), "-") => {
                return Err("control connection: the other side runs without a key \
                     (--insecure), this side has one: refused"
                    .into());
            }
            (Some(mac), t) => {
                let ok = unhex(t).is_some_and(|t| mac.verify_slice(&t).is_ok());
                if !ok {
                    return Err(format!(
                        "control connection: bad tag on `{}`: the other side does not hold \
                         this key (or the line was altered)",
                        shown(payload)
                    ));
                }
            }
        }
        Ok(payload.split_whitespace().map(str::to_string).collect())
    }
}

/// The first whole line waiting in `pending`, taken out of it without its newline: `None`
/// while no newline has come and fewer than [`MAX_LINE`] bytes wait; `Err` for a line of
/// [`MAX_LINE`] bytes or more, or one that is not UTF-8.
pub fn take_line(pending: &mut Vec<u8>) -> Option<Result<String, String>> {
    match memchr::memchr(b'\n', pending) {
        Some(i) if i < MAX_LINE => {
            let mut line: Vec<u8> = pending.drain(..=i).collect();
            line.pop();
            Some(
                String::from_utf8(line)
                    .map_err(|_| "control connection: a line that is not UTF-8".to_string()),
            )
        }
        None if pending.len() < MAX_LINE => None,
        _ => Some(Err(format!(
            "control connection: line longer than {MAX_LINE} bytes"
        ))),
    }
}

/// `s` (text from the other side) cut to 200 characters. It is still the other side's text:
/// the sink that shows it escapes it (the command line: `render::escape::one_line`).
pub fn shown(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Adds a line sent by `by` to `transcript` (the side, the length, the bytes) and returns the
/// MAC of the transcript so far under `key` (none without a key).
fn step(transcript: &mut Sha256, key: &Key, by: Side, payload: &str) -> Option<Hmac<Sha256>> {
    transcript.update([by.byte()]);
    transcript.update((payload.len() as u32).to_be_bytes());
    transcript.update(payload.as_bytes());
    let key = key.0.as_ref()?;
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).ok()?;
    mac.update(PROTOCOL.as_bytes());
    mac.update(&transcript.clone().finalize());
    Some(mac)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

impl Control {
    /// A control connection over `s` as side `me`, each line bounded by `wait`.
    pub fn new(s: TcpStream, wait: Duration, key: Key, me: Side) -> Result<Control, String> {
        s.set_write_timeout(Some(wait)).map_err(|e| e.to_string())?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Control {
            stream: s,
            pending: Vec::new(),
            wait,
            cap: None,
            t: Transcript::new(key, me),
        })
    }

    /// The socket (its addresses).
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    fn write_line(&mut self, line: &str) -> Result<(), String> {
        self.stream
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|e| format!("control connection: cannot send: {e}"))
    }

    /// Sends `payload` with its tag.
    pub fn send(&mut self, payload: &str) -> Result<(), String> {
        let line = self.t.seal(payload);
        self.write_line(&line)
    }

    /// Sends `ERROR <text>` (untagged), `text` on one line and at most 400 characters.
    pub fn send_error(&mut self, text: &str) {
        let t: String = text.replace(['\n', '\r'], " ").chars().take(400).collect();
        let _ = self.write_line(&format!("ERROR {t}"));
    }

    /// The deadline of the next line: `wait` from now, never past `cap`.
    fn deadline(&self) -> Instant {
        let d = Instant::now() + self.wait;
        self.cap.map_or(d, |c| c.min(d))
    }

    /// The next whole line (without its newline), read before the deadline.
    fn read_line(&mut self) -> Result<String, String> {
        let deadline = self.deadline();
        loop {
            if let Some(line) = take_line(&mut self.pending) {
                return line;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "control connection: no answer in time (a whole line is due within {:.0} s)",
                    self.wait.as_secs_f64()
                ));
            }
            let t = left.max(Duration::from_millis(1));
            self.stream
                .set_read_timeout(Some(t))
                .map_err(|e| e.to_string())?;
            let mut chunk = [0u8; MAX_LINE];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err("control connection closed by the other side".into()),
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(format!("control connection: {e}")),
            }
        }
    }

    /// The next line's words, its tag checked ([`Transcript::open`]); an `ERROR` line from
    /// the other side becomes `Err` with its text.
    pub fn recv(&mut self) -> Result<Vec<String>, String> {
        let line = self.read_line()?;
        self.t.open(&line)
    }

    /// The listener's opening: sends `CHALLENGE` with a fresh random nonce and returns the
    /// peer's `HELLO` words once its tag proves the key.
    pub fn challenge(&mut self) -> Result<Vec<String>, String> {
        let mut nonce = [0u8; NONCE];
        getrandom::fill(&mut nonce).map_err(|e| format!("no random nonce: {e}"))?;
        let mode = if self.t.key.is_set() {
            "hmac-sha256"
        } else {
            "none"
        };
        let line = format!("CHALLENGE {PROTOCOL} {mode} {}", hex(&nonce));
        self.t.absorb(Side::Listener, &line);
        self.write_line(&line)?;
        let hello = self.recv()?;
        if hello.first().map(String::as_str) != Some("HELLO")
            || hello.get(1).map(String::as_str) != Some(PROTOCOL)
        {
            return Err(format!(
                "expected `HELLO {PROTOCOL}`, got `{}`",
                shown(&hello.join(" "))
            ));
        }
        Ok(hello)
    }

    /// The peer's opening: reads the listener's `CHALLENGE`, checks that both sides agree on
    /// the protocol and on having a key, and sends `HELLO <PROTOCOL> <words> <nonce> <tag>`.
    /// The listener proves the key with the tag of its next line.
    pub fn hello(&mut self, words: &str) -> Result<(), String> {
        let line = self.read_line()?;
        self.t.challenged(&line)?;
        let mut nonce = [0u8; NONCE];
        getrandom::fill(&mut nonce).map_err(|e| format!("no random nonce: {e}"))?;
        self.send(&format!("HELLO {PROTOCOL} {words} {}", hex(&nonce)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn key() -> Key {
        Key::from_bytes(b"0123456789abcdef-test").unwrap()
    }

    /// A connected pair: (listener side, peer side) with the given keys.
    fn pair(wait: Duration, kl: Key, kp: Key) -> (Control, Control) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (
            Control::new(b, wait, kl, Side::Listener).unwrap(),
            Control::new(a, wait, kp, Side::Peer).unwrap(),
        )
    }

    fn raw_pair(wait: Duration, k: Key, me: Side) -> (Control, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (Control::new(a, wait, k, me).unwrap(), b)
    }

    #[test]
    fn both_sides_with_the_key_talk_and_every_line_is_checked() {
        let (mut l, mut p) = pair(Duration::from_secs(5), key(), key());
        let t = std::thread::spawn(move || {
            p.hello("tcp host 4096 100").unwrap();
            let w = p.recv().unwrap();
            p.send("FILL 7").unwrap();
            (w, p)
        });
        let hello = l.challenge().unwrap();
        assert_eq!(
            &hello[..6],
            ["HELLO", PROTOCOL, "tcp", "host", "4096", "100"]
        );
        l.send("RAIL 10.0.0.1 4000 eth0 -").unwrap();
        assert_eq!(l.recv().unwrap(), ["FILL", "7"]);
        let (w, _p) = t.join().unwrap();
        assert_eq!(w, ["RAIL", "10.0.0.1", "4000", "eth0", "-"]);
    }

    #[test]
    fn a_peer_with_another_key_is_refused_and_so_is_a_listener() {
        let other = Key::from_bytes(b"another key of 16+ bytes").unwrap();
        let (mut l, mut p) = pair(Duration::from_secs(5), key(), other.clone());
        let t = std::thread::spawn(move || p.hello("tcp host 4096 100"));
        let e = l.challenge().unwrap_err();
        assert!(e.contains("does not hold this key"), "{e}");
        t.join().unwrap().unwrap();
        // The impostor listener: the peer refuses its first tagged line.
        let (mut l, mut p) = pair(Duration::from_secs(5), other, key());
        let t = std::thread::spawn(move || {
            let _ = l.challenge();
            l.send("RAIL 10.9.9.9 4000 eth0 -").unwrap();
        });
        p.hello("tcp host 4096 100").unwrap();
        let e = p.recv().unwrap_err();
        assert!(e.contains("does not hold this key"), "{e}");
        t.join().unwrap();
    }

    #[test]
    fn key_and_insecure_sides_refuse_each_other() {
        let (mut l, mut p) = pair(Duration::from_secs(5), Key::insecure(), key());
        let t = std::thread::spawn(move || p.hello("tcp host 1 1"));
        let _ = l.challenge();
        let e = t.join().unwrap().unwrap_err();
        assert!(e.contains("runs without a key"), "{e}");
        let (mut l, mut p) = pair(Duration::from_secs(2), key(), Key::insecure());
        let t = std::thread::spawn(move || p.hello("tcp host 1 1"));
        let _ = l.challenge();
        let e = t.join().unwrap().unwrap_err();
        assert!(e.contains("requires a key"), "{e}");
    }

    #[test]
    fn a_replayed_or_altered_line_breaks_the_tags() {
        let (mut l, mut p) = pair(Duration::from_secs(5), key(), key());
        let t = std::thread::spawn(move || {
            p.hello("tcp host 4096 100").unwrap();
            p.recv().unwrap();
            p
        });
        l.challenge().unwrap();
        l.send("RAIL 10.0.0.1 4000 eth0 -").unwrap();
        let mut p = t.join().unwrap();
        // The same line again with the tag it had when first sent (a replay): refused.
        let line = "REGION 0 1 4096";
        let mut snap = l.t.hash.clone();
        let tag = step(&mut snap, &key(), Side::Listener, line).unwrap();
        let tag = hex(&tag.finalize().into_bytes());
        l.send(line).unwrap();
        assert_eq!(p.recv().unwrap(), ["REGION", "0", "1", "4096"]);
        let mut raw = l.stream().try_clone().unwrap();
        raw.write_all(format!("{line} {tag}\n").as_bytes()).unwrap();
        let e = p.recv().unwrap_err();
        assert!(e.contains("bad tag"), "{e}");
        // An altered line with a valid-looking tag: refused.
        raw.write_all(format!("REGION 0 1 8192 {tag}\n").as_bytes())
            .unwrap();
        assert!(p.recv().unwrap_err().contains("bad tag"));
    }

    #[test]
    fn a_trickle_ends_at_the_deadline_of_the_whole_line() {
        let (mut c, mut raw) = raw_pair(Duration::from_millis(600), Key::insecure(), Side::Peer);
        let t = std::thread::spawn(move || {
            for _ in 0..20 {
                if raw.write_all(b"R").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let t0 = Instant::now();
        let e = c.recv().unwrap_err();
        assert!(e.contains("no answer in time"), "{e}");
        assert!(
            t0.elapsed() < Duration::from_millis(1200),
            "{:?}",
            t0.elapsed()
        );
        t.join().unwrap();
    }

    #[test]
    fn lines_are_bounded_and_errors_named() {
        let (mut c, mut raw) = raw_pair(Duration::from_secs(5), Key::insecure(), Side::Peer);
        raw.write_all(b"RAIL 10.0.0.1 4000 eth0 - -\nERROR no buffer\n")
            .unwrap();
        assert_eq!(c.recv().unwrap(), ["RAIL", "10.0.0.1", "4000", "eth0", "-"]);
        assert_eq!(c.recv().unwrap_err(), "the other side: no buffer");
        let long = format!("ERROR {}\n", "y".repeat(400));
        raw.write_all(long.as_bytes()).unwrap();
        assert_eq!(c.recv().unwrap_err().chars().count(), 16 + 200 + 1);
        raw.write_all(&[b'x'; MAX_LINE + 10]).unwrap();
        let e = c.recv().unwrap_err();
        assert!(e.contains("longer than 512 bytes"), "{e}");
        let (mut c, raw) = raw_pair(Duration::from_secs(5), Key::insecure(), Side::Peer);
        drop(raw);
        assert_eq!(
            c.recv().unwrap_err(),
            "control connection closed by the other side"
        );
    }

    #[test]
    fn keys_come_from_a_private_file_or_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("key");
        std::fs::write(&p, "0123456789abcdef0123\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Key::resolve(Some(&p), false).unwrap_err();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let k = Key::resolve(Some(&p), false).unwrap();
        assert_eq!(k.0.as_deref(), Some(&b"0123456789abcdef0123"[..]));
        assert_eq!(format!("{k:?}"), "Key(20 bytes)");
        assert!(Key::resolve(Some(&p), true).is_err());
        std::fs::write(&p, "short").unwrap();
        assert!(
            Key::resolve(Some(&p), false)
                .unwrap_err()
                .contains("at least 16")
        );
    }
}
