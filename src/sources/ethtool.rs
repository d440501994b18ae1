//! The live machine only: the link modes each network interface supports, through the
//! `SIOCETHTOOL` ioctl's `ETHTOOL_GLINKSETTINGS` command (Linux ≥ 4.6), which the kernel
//! answers without privileges (it is in `dev_ethtool`'s list of commands that need no
//! `CAP_NET_ADMIN`). This is what `ethtool <if>` prints as "Supported link modes"; the fastest
//! one is the port's SKU speed, so a 25 Gb/s port on a 25 Gb/s ConnectX-6 Lx card is not taken
//! for a degraded 50 Gb/s one.
//!
//! Snapshots, XML and JSON inputs never call this: the fact is then unknown, and the audit says
//! so. Every failure (no such interface, a driver without `get_link_ksettings`, a kernel
//! without the command, a sandbox refusing the socket) leaves the fact unknown.
//!
//! Unsafe code (two `libc` calls) is held to a `SAFETY:` comment on every block.
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

use crate::model::{OsDeviceKind, Topology};

/// `SIOCETHTOOL` (`include/uapi/linux/sockios.h`).
const SIOCETHTOOL: libc::c_ulong = 0x8946;
/// `ETHTOOL_GLINKSETTINGS` (`include/uapi/linux/ethtool.h`).
const ETHTOOL_GLINKSETTINGS: u32 = 0x4c;
/// Size of `struct ethtool_link_settings` before its `link_mode_masks[]` (bytes).
const HEADER_BYTES: usize = 48;
/// Offset of `link_mode_masks_nwords` (an `__s8`) in that structure.
const NWORDS_OFFSET: usize = 15;
/// The kernel's bound on `link_mode_masks_nwords` (an `__s8`).
const MAX_NWORDS: usize = 127;

/// Speed in Mb/s of each `ETHTOOL_LINK_MODE_*_BIT` (enum `ethtool_link_mode_bit_indices`,
/// Linux 6.14), `0` for bits that are no speed (autoneg, port types, pause, FEC).
pub const LINK_MODE_MBPS: [u32; 125] = {
    let mut t = [0u32; 125];
    let ranges: [(usize, usize, u32); 36] = [
        (0, 1, 10),
        (2, 3, 100),
        (4, 5, 1_000),
        (12, 12, 10_000),
        (15, 15, 2_500),
        (17, 17, 1_000),
        (18, 19, 10_000),
        (21, 22, 20_000),
        (23, 26, 40_000),
        (27, 30, 56_000),
        (31, 33, 25_000),
        (34, 35, 50_000),
        (36, 39, 100_000),
        (40, 40, 50_000),
        (41, 41, 1_000),
        (42, 46, 10_000),
        (47, 47, 2_500),
        (48, 48, 5_000),
        (52, 56, 50_000),
        (57, 61, 100_000),
        (62, 66, 200_000),
        (67, 67, 100),
        (68, 68, 1_000),
        (69, 73, 400_000),
        (75, 79, 100_000),
        (80, 84, 200_000),
        (85, 89, 400_000),
        (90, 91, 100),
        (92, 92, 10),
        (93, 98, 800_000),
        (99, 101, 10),
        (102, 102, 10),
        (103, 108, 200_000),
        (109, 114, 400_000),
        (115, 120, 800_000),
        (121, 124, 1_600_000),
    ];
    // Bits that carry no speed stay 0: 6–11, 13, 14, 16, 20, 49–51, 74.
    let mut i = 0;
    while i < ranges.len() {
        let (a, b, v) = ranges[i];
        let mut k = a;
        while k <= b {
            t[k] = v;
            k += 1;
        }
        i += 1;
    }
    t
};

/// The fastest speed (Mb/s) among the set bits of a `map_supported` mask (32-bit words, least
/// significant first); `None` when no set bit is a speed (an empty mask: IPoIB, virtual
/// interfaces). Bits beyond the table (a newer kernel's modes) are ignored.
pub fn fastest_mode_mbps(words: &[u32]) -> Option<u64> {
    let mut best = 0u32;
    for (w, &word) in words.iter().enumerate() {
        for bit in 0..32 {
            if word & (1 << bit) != 0 {
                let i = w * 32 + bit;
                if let Some(&s) = LINK_MODE_MBPS.get(i) {
                    best = best.max(s);
                }
            }
        }
    }
    (best > 0).then_some(best as u64)
}

/// `struct ifreq` with the `ifr_data` member of its union (40 bytes on 64-bit Linux).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 24 - std::mem::size_of::<*mut libc::c_void>()],
}

/// An `AF_INET` datagram socket, closed on drop: the handle `SIOCETHTOOL` is issued on.
struct Socket(libc::c_int);

impl Socket {
    fn open() -> Option<Socket> {
        // SAFETY: socket(2) takes no pointers; a negative return is checked.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        (fd >= 0).then_some(Socket(fd))
    }

    /// One `SIOCETHTOOL` request on interface `name` with `buf` as `ifr_data`; `false` when the
    /// kernel refuses it.
    fn ethtool(&self, name: &str, buf: &mut [u32]) -> bool {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
            return false;
        }
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            data: buf.as_mut_ptr().cast(),
            _pad: [0; 24 - std::mem::size_of::<*mut libc::c_void>()],
        };
        req.name[..bytes.len()].copy_from_slice(bytes);
        // SAFETY: `req` is a valid `struct ifreq` naming a NUL-terminated interface and
        // pointing at `buf`, which outlives the call; `buf` holds at least the header and the
        // three masks of the `link_mode_masks_nwords` it announces (checked by the caller), so
        // the kernel's copy_to_user stays inside it.
        let rc = unsafe { libc::ioctl(self.0, SIOCETHTOOL as _, &mut req as *mut IfReq) };
        rc == 0
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe {
            libc::close(self.0);
        }
    }
}

fn set_header(buf: &mut [u32], nwords: i8) {
    buf.iter_mut().for_each(|w| *w = 0);
    buf[0] = ETHTOOL_GLINKSETTINGS;
    // link_mode_masks_nwords is byte 15 of the header: word 3, byte 3 (native byte order).
    let mut w = buf[NWORDS_OFFSET / 4].to_ne_bytes();
    w[NWORDS_OFFSET % 4] = nwords as u8;
    buf[NWORDS_OFFSET / 4] = u32::from_ne_bytes(w);
}

fn get_nwords(buf: &[u32]) -> i8 {
    buf[NWORDS_OFFSET / 4].to_ne_bytes()[NWORDS_OFFSET % 4] as i8
}

/// The `map_supported` words of one interface: the kernel's two-step handshake (ask with 0
/// words, it answers with minus the number it needs, ask again with that many).
fn supported_words(sock: &Socket, ifname: &str) -> Option<Vec<u32>> {
    let mut buf = vec![0u32; HEADER_BYTES / 4 + 3 * MAX_NWORDS];
    set_header(&mut buf, 0);
    if !sock.ethtool(ifname, &mut buf) {
        return None;
    }
    let n = get_nwords(&buf);
    if n >= 0 || (-(n as i32)) as usize > MAX_NWORDS {
        return None;
    }
    let n = (-(n as i32)) as usize;
    set_header(&mut buf, n as i8);
    if !sock.ethtool(ifname, &mut buf) || get_nwords(&buf) as i32 != n as i32 {
        return None;
    }
    let start = HEADER_BYTES / 4;
    Some(buf[start..start + n].to_vec())
}

/// Fills [`crate::model::OsDevice::link_modes_max_mbps`] of every netdev from the running
/// kernel. Returns how many interfaces answered; failures leave the fact unknown.
pub fn enrich(topo: &mut Topology) -> usize {
    let Some(sock) = Socket::open() else {
        return 0;
    };
    let mut answered = 0;
    for d in &mut topo.devices {
        for od in d
            .os_devices
            .iter_mut()
            .filter(|o| o.kind == OsDeviceKind::Net)
        {
            if let Some(words) = supported_words(&sock, &od.name) {
                answered += 1;
                od.link_modes_max_mbps = fastest_mode_mbps(&words);
            }
        }
    }
    answered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fastest_mode_of_masks() {
        // ConnectX-6 Lx 25G SKU: 1000baseKX (17), 10000baseKR (19), 25000baseCR/KR/SR (31–33).
        let mut w = [0u32; 4];
        for b in [17usize, 19, 31, 32, 33, 6, 13] {
            w[b / 32] |= 1 << (b % 32);
        }
        assert_eq!(fastest_mode_mbps(&w), Some(25_000));
        // A 50G SKU adds 50000baseCR2 (34) and 50000baseKR (52).
        w[1] |= 1 << (34 - 32);
        w[1] |= 1 << (52 - 32);
        assert_eq!(fastest_mode_mbps(&w), Some(50_000));
        // 400G (CR4, bit 89) and 800G (CR8, bit 93).
        let mut x = [0u32; 4];
        x[89 / 32] |= 1 << (89 % 32);
        assert_eq!(fastest_mode_mbps(&x), Some(400_000));
        x[93 / 32] |= 1 << (93 % 32);
        assert_eq!(fastest_mode_mbps(&x), Some(800_000));
        // Empty (IPoIB) and speed-less bits only: unknown.
        assert_eq!(fastest_mode_mbps(&[0, 0, 0]), None);
        assert_eq!(fastest_mode_mbps(&[1 << 6 | 1 << 13]), None);
        // A bit beyond the table (a newer kernel) is ignored, not a panic.
        assert_eq!(fastest_mode_mbps(&[0, 0, 0, 0, 0x8000_0000]), None);
    }

    #[test]
    fn table_matches_the_kernel_enum_at_known_bits() {
        assert_eq!(LINK_MODE_MBPS[5], 1_000); // 1000baseT_Full
        assert_eq!(LINK_MODE_MBPS[38], 100_000); // 100000baseCR4_Full
        assert_eq!(LINK_MODE_MBPS[66], 200_000); // 200000baseCR4_Full
        assert_eq!(LINK_MODE_MBPS[73], 400_000); // 400000baseCR8_Full
        assert_eq!(LINK_MODE_MBPS[74], 0); // FEC_LLRS
        assert_eq!(LINK_MODE_MBPS[120], 800_000); // 800000baseVR4_Full
        assert_eq!(LINK_MODE_MBPS[124], 1_600_000); // 1600000baseDR8_2_Full
    }

    #[test]
    fn header_round_trip_and_bad_names() {
        let mut b = vec![0u32; HEADER_BYTES / 4 + 3];
        set_header(&mut b, -3);
        assert_eq!(b[0], ETHTOOL_GLINKSETTINGS);
        assert_eq!(get_nwords(&b), -3);
        // Names the kernel would not accept are refused before any ioctl.
        if let Some(s) = Socket::open() {
            assert!(!s.ethtool("", &mut b));
            assert!(!s.ethtool("a-name-far-too-long-for-ifnamsiz", &mut b));
            assert!(!s.ethtool("lo\0x", &mut b));
            // Loopback has no link settings (or none with speeds): never a panic.
            let _ = supported_words(&s, "lo");
        }
    }
}
