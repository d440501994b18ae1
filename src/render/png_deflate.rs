//! One PNG image stream (IDAT) compressed in pieces on several threads: the picture's strips
//! ([`super::png`]) are filtered and deflated independently, each piece ending on a byte
//! boundary (a sync flush: an empty stored block), and the pieces are joined in order into one
//! zlib stream (RFC 1950: a 2-byte header, the deflate blocks, the Adler-32 of all filtered
//! bytes), as pigz does for gzip. A piece's back-references stay inside its own strip, so every
//! piece decodes after any other; the Adler-32 of the whole is combined from the pieces'.
//!
//! Filter: `Up` (PNG specification, 9.2) for every row whose row above is in the same piece,
//! `None` for each piece's first row, so that no piece depends on pixels another thread drew.

use anyhow::{Context, Result};
use resvg::tiny_skia::PremultipliedColorU8;

/// The zlib compression level (1 = fastest). At 4,114 functions, level 1 writes a larger file
/// than level 3 but deflate was the largest single cost of the PNG.
pub const LEVEL: u32 = 1;

/// One strip's rows, filtered and deflated, and what joining needs to know of them.
pub struct Piece {
    /// Raw deflate blocks (no zlib header): non-final ones ending in a sync flush, or the final
    /// block when the piece is the last.
    pub deflated: Vec<u8>,
    /// Adler-32 of the piece's filtered bytes.
    pub adler: u32,
    /// How many filtered bytes the piece holds.
    pub len: u64,
}

/// Filters and deflates the rows of `pixels` (premultiplied RGBA, `width` pixels a row) as
/// demultiplied RGBA, `last` when no piece follows.
pub fn piece(pixels: &[PremultipliedColorU8], width: usize, last: bool) -> Result<Piece> {
    use flate2::{Compress, Compression, FlushCompress};
    let mut z = Compress::new(Compression::new(LEVEL), false);
    let mut out = Vec::with_capacity(pixels.len() / 4);
    let mut adler = Adler::new();
    let mut row = vec![0u8; 1 + width * 4];
    let mut above: Vec<u8> = Vec::new();
    let mut here = vec![0u8; width * 4];
    let rows = pixels.chunks_exact(width.max(1));
    let n = rows.len();
    for (i, px) in rows.enumerate() {
        for (d, p) in here.chunks_exact_mut(4).zip(px) {
            let c = p.demultiply();
            d.copy_from_slice(&[c.red(), c.green(), c.blue(), c.alpha()]);
        }
        if above.is_empty() {
            row[0] = 0;
            row[1..].copy_from_slice(&here);
        } else {
            row[0] = 2;
            for ((r, h), a) in row[1..].iter_mut().zip(&here).zip(&above) {
                *r = h.wrapping_sub(*a);
            }
        }
        std::mem::swap(&mut above, &mut here);
        here.resize(width * 4, 0);
        adler.update(&row);
        let flush = match (i + 1 == n, last) {
            (false, _) => FlushCompress::None,
            (true, false) => FlushCompress::Sync,
            (true, true) => FlushCompress::Finish,
        };
        deflate(&mut z, &row, &mut out, flush)?;
    }
    if n == 0 && last {
        deflate(&mut z, &[], &mut out, FlushCompress::Finish)?;
    }
    Ok(Piece {
        deflated: out,
        adler: adler.value(),
        len: adler.len,
    })
}

/// Feeds `input` to the compressor until it has taken all of it (and, with a flush, written
/// everything out), appending what it writes to `out`. The compressor writes into a small
/// buffer: `compress_vec` would zero all of `out`'s spare room on every call.
fn deflate(
    z: &mut flate2::Compress,
    input: &[u8],
    out: &mut Vec<u8>,
    flush: flate2::FlushCompress,
) -> Result<()> {
    let mut buf = [0u8; 16 << 10];
    let mut at = 0;
    loop {
        let (before_in, before_out) = (z.total_in(), z.total_out());
        let status = z
            .compress(&input[at..], &mut buf, flush)
            .context("compressing the PNG")?;
        at += (z.total_in() - before_in) as usize;
        let wrote = (z.total_out() - before_out) as usize;
        out.extend_from_slice(&buf[..wrote]);
        let done = match flush {
            flate2::FlushCompress::Finish => status == flate2::Status::StreamEnd,
            // All input taken and the buffer not filled: the flush is complete.
            _ => at == input.len() && wrote < buf.len(),
        };
        if done {
            return Ok(());
        }
    }
}

/// Joins pieces into one zlib stream: [`Joiner::HEADER`], each piece's bytes in order, then
/// [`Joiner::trailer`].
#[derive(Default)]
pub struct Joiner {
    adler: Adler,
}

impl Joiner {
    /// The zlib header (deflate, 32 KiB window, "fastest" level hint; RFC 1950, 2.2).
    pub const HEADER: [u8; 2] = [0x78, 0x01];

    /// A joiner before any piece.
    pub fn new() -> Joiner {
        Joiner::default()
    }

    /// Takes the next piece's checksum into account.
    pub fn add(&mut self, p: &Piece) {
        self.adler = Adler::combine(self.adler, p.adler, p.len);
    }

    /// The stream's trailer: the Adler-32 of every piece's bytes, big-endian.
    pub fn trailer(&self) -> [u8; 4] {
        self.adler.value().to_be_bytes()
    }
}

/// Adler-32 (RFC 1950, 8.2) as it runs: `a` and `b` modulo 65521, and the bytes seen.
#[derive(Clone, Copy)]
struct Adler {
    a: u32,
    b: u32,
    len: u64,
}

const BASE: u32 = 65521;

impl Default for Adler {
    fn default() -> Adler {
        Adler::new()
    }
}

impl Adler {
    fn new() -> Adler {
        Adler { a: 1, b: 0, len: 0 }
    }

    fn update(&mut self, data: &[u8]) {
        // 5552 bytes is the most that can be summed before `b` could overflow 32 bits.
        for chunk in data.chunks(5552) {
            for &x in chunk {
                self.a += u32::from(x);
                self.b += self.a;
            }
            self.a %= BASE;
            self.b %= BASE;
        }
        self.len += data.len() as u64;
    }

    fn value(self) -> u32 {
        (self.b << 16) | self.a
    }

    /// The checksum of `first`'s bytes followed by `len` bytes whose checksum is `second`
    /// (zlib's `adler32_combine`): a = a1 + a2 - 1, b = b1 + b2 + len·(a1 - 1), modulo BASE.
    fn combine(first: Adler, second: u32, len: u64) -> Adler {
        let (a2, b2) = (u64::from(second & 0xffff), u64::from(second >> 16));
        let (a1, b1) = (u64::from(first.a), u64::from(first.b));
        let base = u64::from(BASE);
        let rem = len % base;
        let a = (a1 + a2 + base - 1) % base;
        let b = (b1 + b2 + rem * ((a1 + base - 1) % base)) % base;
        Adler {
            a: a as u32,
            b: b as u32,
            len: first.len + len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resvg::tiny_skia::ColorU8;

    #[test]
    fn combined_checksums_equal_the_whole_ones() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7919 % 251) as u8).collect();
        let mut whole = Adler::new();
        whole.update(&data);
        let mut joined = Adler::new();
        for part in data.chunks(33_333) {
            let mut p = Adler::new();
            p.update(part);
            joined = Adler::combine(joined, p.value(), p.len);
        }
        assert_eq!(joined.value(), whole.value());
        assert_eq!(joined.len, whole.len);
        // The known value for "Wikipedia" (RFC 1950's example in most references).
        let mut w = Adler::new();
        w.update(b"Wikipedia");
        assert_eq!(w.value(), 0x11E6_0398);
    }

    #[test]
    fn joined_pieces_inflate_to_the_filtered_rows() {
        use std::io::Read as _;
        let (width, height) = (37usize, 50usize);
        let pixels: Vec<PremultipliedColorU8> = (0..width * height)
            .map(|i| {
                let v = (i * 31 % 256) as u8;
                ColorU8::from_rgba(v, v / 2, 255 - v, if i % 3 == 0 { 128 } else { 255 })
                    .premultiply()
            })
            .collect();
        let pieces: Vec<Piece> = pixels
            .chunks(width * 17)
            .enumerate()
            .map(|(i, p)| piece(p, width, (i + 1) * 17 >= height).unwrap())
            .collect();
        let mut j = Joiner::new();
        let mut stream = Joiner::HEADER.to_vec();
        for p in &pieces {
            j.add(p);
            stream.extend_from_slice(&p.deflated);
        }
        stream.extend_from_slice(&j.trailer());
        let mut got = Vec::new();
        flate2::read::ZlibDecoder::new(&stream[..])
            .read_to_end(&mut got)
            .expect("one valid zlib stream, checksum included");
        // Each piece's first row unfiltered, the others `Up`.
        assert_eq!(got.len(), height * (1 + width * 4));
        let filters: Vec<u8> = got.chunks(1 + width * 4).map(|r| r[0]).collect();
        let firsts: Vec<usize> = (0..height).filter(|&r| filters[r] == 0).collect();
        assert_eq!(firsts, vec![0, 17, 34]);
        assert!(filters.iter().all(|&f| f == 0 || f == 2));
    }
}
