//! RDMA netlink messages (`NETLINK_RDMA`, the kernel's "nldev" client, as `rdma dev` and
//! libibverbs use it): the dump request for every RDMA device and the parse of its replies
//! into `(index, name)` pairs. The index is the kernel's `ib_device` index
//! (`RDMA_NLDEV_ATTR_DEV_INDEX`), allocated cyclically when the device registers, so it gives
//! the registration order. Layout from `include/uapi/linux/netlink.h` and
//! `include/uapi/rdma/rdma_netlink.h`; integers are in host byte order, as netlink's are.

/// `RDMA_NL_NLDEV` (the nldev client of the RDMA netlink family).
const RDMA_NL_NLDEV: u16 = 5;
/// `RDMA_NLDEV_CMD_GET`.
const RDMA_NLDEV_CMD_GET: u16 = 1;
/// `RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET)`: the message type of the request and
/// of each device's reply.
pub const NLDEV_GET: u16 = (RDMA_NL_NLDEV << 10) + RDMA_NLDEV_CMD_GET;
/// `RDMA_NLDEV_ATTR_DEV_INDEX` (u32).
const ATTR_DEV_INDEX: u16 = 1;
/// `RDMA_NLDEV_ATTR_DEV_NAME` (NUL-terminated string).
const ATTR_DEV_NAME: u16 = 2;
/// `NLMSG_ERROR`.
const NLMSG_ERROR: u16 = 2;
/// `NLMSG_DONE`.
const NLMSG_DONE: u16 = 3;
/// `NLM_F_REQUEST | NLM_F_DUMP` (`NLM_F_ROOT | NLM_F_MATCH`).
const REQUEST_DUMP: u16 = 0x1 | 0x300;
/// Size of `struct nlmsghdr`.
const HDR: usize = 16;

/// The dump request for every RDMA device (`rdma dev show`): a bare `nlmsghdr`.
pub fn dump_request(seq: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR);
    v.extend_from_slice(&(HDR as u32).to_ne_bytes());
    v.extend_from_slice(&NLDEV_GET.to_ne_bytes());
    v.extend_from_slice(&REQUEST_DUMP.to_ne_bytes());
    v.extend_from_slice(&seq.to_ne_bytes());
    v.extend_from_slice(&0u32.to_ne_bytes());
    v
}

fn align4(n: usize) -> usize {
    n.saturating_add(3) & !3
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// One device reply's attributes: its index and name, when both are present.
fn device(attrs: &[u8]) -> Result<Option<(u32, String)>, String> {
    let (mut index, mut name) = (None, None);
    let mut at = 0;
    while at + 4 <= attrs.len() {
        let len = u16_at(attrs, at).unwrap_or(0) as usize;
        let ty = u16_at(attrs, at + 2).unwrap_or(0) & 0x3fff;
        if len < 4 || at + len > attrs.len() {
            return Err(format!("attribute at byte {at} has length {len}"));
        }
        let data = &attrs[at + 4..at + len];
        match ty {
            ATTR_DEV_INDEX => index = u32_at(data, 0),
            ATTR_DEV_NAME => {
                let end = data.iter().position(|&c| c == 0).unwrap_or(data.len());
                name = Some(
                    std::str::from_utf8(&data[..end])
                        .map_err(|_| "device name is not UTF-8".to_string())?
                        .to_string(),
                );
            }
            _ => {}
        }
        at += align4(len);
    }
    Ok(index.zip(name))
}

/// Parses one datagram of replies, appending each device's `(index, name)`. Returns whether
/// the dump is complete (`NLMSG_DONE` seen). A kernel error reply (`NLMSG_ERROR` with a
/// non-zero code: no RDMA support, permission) and malformed bytes are errors.
pub fn parse_replies(buf: &[u8], out: &mut Vec<(u32, String)>) -> Result<bool, String> {
    let mut at = 0;
    while at + HDR <= buf.len() {
        let len = u32_at(buf, at).unwrap_or(0) as usize;
        let ty = u16_at(buf, at + 4).unwrap_or(0);
        if len < HDR || at + len > buf.len() {
            return Err(format!("netlink message at byte {at} has length {len}"));
        }
        let body = &buf[at + HDR..at + len];
        match ty {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let code = u32_at(body, 0).map(|c| c as i32).unwrap_or(-1);
                if code != 0 {
                    return Err(format!("kernel answered error {}", -code));
                }
            }
            NLDEV_GET => {
                if let Some(d) = device(body)? {
                    out.push(d);
                }
            }
            _ => {}
        }
        at += align4(len);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(ty: u16, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(data);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    fn msg(ty: u16, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((HDR + body.len()) as u32).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(&2u16.to_ne_bytes());
        v.extend_from_slice(&[0; 8]);
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn request_and_replies() {
        let r = dump_request(7);
        assert_eq!(r.len(), 16);
        assert_eq!(u16_at(&r, 4), Some(5121));
        let mut buf = Vec::new();
        for (i, n) in [(3u32, "mlx5_0"), (11, "mlx5_bond_0")] {
            let mut body = attr(ATTR_DEV_INDEX, &i.to_ne_bytes());
            body.extend(attr(ATTR_DEV_NAME, format!("{n}\0").as_bytes()));
            body.extend(attr(4, &[1, 0, 0, 0]));
            buf.extend(msg(NLDEV_GET, &body));
        }
        let mut out = Vec::new();
        assert_eq!(parse_replies(&buf, &mut out), Ok(false));
        assert_eq!(
            out,
            [(3, "mlx5_0".to_string()), (11, "mlx5_bond_0".to_string())]
        );
        assert_eq!(parse_replies(&msg(NLMSG_DONE, &[0; 4]), &mut out), Ok(true));
    }

    #[test]
    fn errors_not_panics() {
        let mut out = Vec::new();
        let e = msg(NLMSG_ERROR, &(-93i32).to_ne_bytes());
        assert_eq!(
            parse_replies(&e, &mut out),
            Err("kernel answered error 93".into())
        );
        let mut bad = msg(NLDEV_GET, &attr(ATTR_DEV_NAME, b"x\0"));
        bad[HDR] = 200; // attribute longer than the message
        assert!(parse_replies(&bad, &mut out).is_err());
        let mut short = msg(NLDEV_GET, &[]);
        short[0] = 200;
        assert!(parse_replies(&short, &mut out).is_err());
        assert_eq!(parse_replies(&[1, 2, 3], &mut out), Ok(false));
    }
}
