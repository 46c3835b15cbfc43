//! The GPU topology as a matrix, the way `nvidia-smi topo -m` shows it, coloured by link class.

use std::fmt::Write;

use cudoctor_snapshot::{LinkClass, Topology};

use super::esc;
use super::plots::open_figure;

/// The GPU-by-GPU matrix of `nvidia-smi topo -m`, coloured by link class.
pub(super) fn topology_svg(t: &Topology) -> String {
    let n = t.gpus.len();
    let cell = 56.0;
    let (left, top) = (64.0, 40.0);
    // Wide enough for the legend below a small matrix.
    let w = (left + cell * n as f64 + 12.0).max(290.0);
    let h = top + cell * n as f64 + 40.0;
    let mut svg = open_figure(w, h, "GPU topology");
    let _ = write!(
        svg,
        "<text x=\"4\" y=\"16\" style=\"font-weight:600\">GPU topology (NVML)</text>"
    );
    for (i, g) in t.gpus.iter().enumerate() {
        let x = left + cell * i as f64 + cell / 2.0;
        let _ = write!(
            svg,
            "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\"><title>{}</title>GPU{}</text>",
            top - 6.0,
            esc(&g.name),
            g.index
        );
        let y = top + cell * i as f64 + cell / 2.0 + 4.0;
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{y:.1}\" text-anchor=\"end\">GPU{}</text>",
            left - 6.0,
            g.index
        );
    }
    for (i, a) in t.gpus.iter().enumerate() {
        for (j, b) in t.gpus.iter().enumerate() {
            let (x, y) = (left + cell * j as f64, top + cell * i as f64);
            let (label, fill, tip) = if i == j {
                ("X".to_string(), "#eceff4", "self".to_string())
            } else {
                match t.pair(a.index, b.index) {
                    Some(p) => {
                        let fill = match p.link_class() {
                            LinkClass::NvLink => "#c8e6c9",
                            LinkClass::Pcie(_) if p.p2p_ok() == Some(false) => "#ffcdd2",
                            LinkClass::Pcie(_) => "#fff3c4",
                            LinkClass::Unknown => "#eeeeee",
                        };
                        let p2p = match p.p2p_ok() {
                            Some(true) => "P2P ok",
                            Some(false) => "no P2P",
                            None => "P2P unknown",
                        };
                        (
                            p.label(),
                            fill,
                            format!("GPU{} - GPU{}: {}, {p2p}", p.a, p.b, p.label()),
                        )
                    }
                    None => ("?".to_string(), "#eeeeee", "unknown".to_string()),
                }
            };
            let _ = write!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{c:.1}\" height=\"{c:.1}\" fill=\"{fill}\" stroke=\"#ffffff\" stroke-width=\"2\"><title>{}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                esc(&tip),
                x + cell / 2.0,
                y + cell / 2.0 + 4.0,
                esc(&label),
                c = cell
            );
        }
    }
    let ly = top + cell * n as f64 + 20.0;
    let legend = [
        ("#c8e6c9", "NVLink"),
        ("#fff3c4", "PCIe, P2P"),
        ("#ffcdd2", "no P2P"),
    ];
    for (k, (fill, name)) in legend.iter().enumerate() {
        let x = 4.0 + 92.0 * k as f64;
        let _ = write!(
            svg,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{fill}\"/><text x=\"{:.1}\" y=\"{ly:.1}\">{name}</text>",
            ly - 10.0,
            x + 16.0
        );
    }
    svg.push_str("</svg><figcaption>Links between GPU pairs, as nvidia-smi topo -m labels them</figcaption></figure>");
    svg
}
