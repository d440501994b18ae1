//! Compares the decoded pixels of two PNG files (8-bit RGB or RGBA, read with the `png` crate):
//! `cargo run --release --example png_diff -- A.png B.png` prints how many pixels differ, in
//! how many rows, and the largest difference in one channel (RGB is compared as opaque RGBA).
//! Used to check that a change to the PNG report's drawing or encoding keeps its pixels
//! (docs/performance.md, issue 54).

use std::process::ExitCode;

/// Width, height and RGBA bytes of a PNG file.
fn decode(path: &str) -> Result<(u32, u32, Vec<u8>), String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut dec = png::Decoder::new(std::io::BufReader::new(f));
    dec.set_transformations(png::Transformations::EXPAND);
    let mut r = dec.read_info().map_err(|e| format!("{path}: {e}"))?;
    let size = r.output_buffer_size().ok_or(format!("{path}: too large"))?;
    let mut buf = vec![0; size];
    let info = r.next_frame(&mut buf).map_err(|e| format!("{path}: {e}"))?;
    buf.truncate(info.buffer_size());
    let rgba = match (info.color_type, info.bit_depth) {
        (png::ColorType::Rgba, png::BitDepth::Eight) => buf,
        (png::ColorType::Rgb, png::BitDepth::Eight) => buf
            .chunks_exact(3)
            .flat_map(|c| [c[0], c[1], c[2], 255])
            .collect(),
        other => return Err(format!("{path}: {other:?} is not 8-bit RGB(A)")),
    };
    Ok((info.width, info.height, rgba))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [a, b] = args.as_slice() else {
        eprintln!("usage: png_diff A.png B.png");
        return ExitCode::from(2);
    };
    let ((wa, ha, pa), (wb, hb, pb)) = match (decode(a), decode(b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("png_diff: {e}");
            return ExitCode::from(2);
        }
    };
    if (wa, ha) != (wb, hb) {
        println!("sizes differ: {wa}x{ha} and {wb}x{hb}");
        return ExitCode::from(1);
    }
    let row = wa as usize * 4;
    let (mut pixels, mut rows, mut worst) = (0u64, 0u64, 0u8);
    for (ra, rb) in pa.chunks_exact(row).zip(pb.chunks_exact(row)) {
        let before = pixels;
        for (x, y) in ra.chunks_exact(4).zip(rb.chunks_exact(4)) {
            let d = x
                .iter()
                .zip(y)
                .map(|(p, q)| p.abs_diff(*q))
                .max()
                .unwrap_or(0);
            if d > 0 {
                pixels += 1;
                worst = worst.max(d);
            }
        }
        rows += u64::from(pixels > before);
    }
    println!(
        "{pixels} of {} pixels differ, in {rows} rows, by at most {worst} in one channel",
        u64::from(wa) * u64::from(ha)
    );
    ExitCode::from(u8::from(pixels > 0))
}
