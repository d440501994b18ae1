//! The title and notes at the top of the picture, wrapped to its final width; everything else
//! is placed from the top margin and moved down below them at the end.
//!
//! Data: the topology's source path, CPU model, device counts and hypervisor evidence; its
//! source's limitations and the matrix's notes; the rail pairs' origin in words.

use super::{FONT, LINE, Layout, MARGIN, Rect, TextLine, fit, plural, text_width, wrap};
use crate::model::{Device, DeviceKind};

/// The header's lines before wrapping: (text, bold, font size).
pub(super) fn lines(
    inp: &super::Inputs,
    notes: &[String],
    pairs_source: &str,
) -> Vec<(String, bool, f32)> {
    let t = inp.topo;
    let m = &t.machine;
    let mut title = format!("peerpath report — {}", t.source.path);
    if let Some(model) = &m.cpu_model {
        title.push_str(&format!(" — {model}"));
    }
    let count = |k| t.of_kind(k).filter(|d: &&Device| !d.is_vf()).count();
    let mut sub = format!(
        "{}, {}, {}, {} NVMe, {}, {}",
        plural(count(DeviceKind::Gpu), "GPU", "GPUs"),
        plural(
            count(DeviceKind::Accelerator),
            "accelerator",
            "accelerators"
        ),
        plural(count(DeviceKind::Nic), "NIC", "NICs"),
        count(DeviceKind::Nvme),
        plural(t.switches.len(), "switch", "switches"),
        plural(t.numa_nodes.len(), "NUMA node", "NUMA nodes")
    );
    if !m.hypervisor.is_empty() {
        sub.push_str(&format!(
            " — virtual machine ({}): the PCI tree may be synthetic",
            m.hypervisor[0].1
        ));
    }
    // The matrix notes name the host and carry the source's limitations (input limit …).
    std::iter::once((title, true, FONT + 2.0))
        .chain(std::iter::once((sub, false, FONT)))
        .chain(notes.iter().map(|n| (format!("Note: {n}"), false, FONT)))
        .chain(std::iter::once((pairs_source.to_string(), false, FONT)))
        .collect()
}

/// The header lines wrapped to a picture `width` px wide (continuation lines indented), and the
/// bottom of the last line's slot: where the header ends.
pub(super) fn wrap_to(lines: Vec<(String, bool, f32)>, width: f32) -> (Vec<TextLine>, f32) {
    let mut header = Vec::new();
    let mut hy = MARGIN;
    for (text, bold, size) in lines {
        let room = ((width - 2.0 * MARGIN) / text_width(1, size)).floor() as usize;
        for (k, part) in wrap(&text, room).into_iter().enumerate() {
            hy += LINE + 2.0;
            header.push(TextLine {
                x: if k == 0 { MARGIN } else { MARGIN + 16.0 },
                y: hy - 3.0,
                text: if k == 0 {
                    part
                } else {
                    fit(&part, room.saturating_sub(3))
                },
                size,
                bold,
            });
        }
    }
    (header, hy)
}

/// Moves everything but the header `dy` px down.
pub(super) fn move_below(l: &mut Layout, dy: f32) {
    let down = |r: &mut Rect| r.y += dy;
    for b in l.boxes.iter_mut() {
        down(&mut b.rect);
        for t in b.lines.iter_mut() {
            t.y += dy;
        }
        for g in b.badges.iter_mut() {
            down(&mut g.rect);
        }
        if let Some(r) = b.select_slot.as_mut() {
            down(r);
        }
    }
    for c in l.connectors.iter_mut() {
        for p in c.points.iter_mut() {
            p.1 += dy;
        }
        down(&mut c.label_rect);
    }
    down(&mut l.legend_rect);
    l.legend_title.y += dy;
    for item in l.legend.iter_mut() {
        down(&mut item.swatch);
        item.text.y += dy;
    }
}
