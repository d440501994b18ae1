//! `peerpath report -o FILE.svg|.png|.html`: classifies and audits the node, lays out its
//! picture once and writes it as SVG, PNG (rendered in-process) or a self-contained HTML report.

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use peerpath::analysis::audit::{self, AuditOptions, profile};
use peerpath::analysis::classify::{Classifier, ClassifyOptions};
use peerpath::analysis::probe_report::measured::ProbeEvidence;
use peerpath::model::Topology;
use peerpath::render::{html, layout, png, svg};
use std::path::{Path, PathBuf};

/// Output format of `report`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ReportFormat {
    /// SVG picture.
    Svg,
    /// PNG picture (needs the DejaVu Sans Mono font, package fonts-dejavu-core).
    Png,
    /// Self-contained HTML: picture, GPU selector, matrix, findings, probe results.
    Html,
}

/// Arguments of `peerpath report`.
#[derive(Args, Clone)]
pub struct ReportArgs {
    /// Output file; the format follows its extension (.svg, .png, .html) unless --format is given.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Output format (default: from the output file's extension).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Probe result (`peerpath probe --format json`): folded into the audit and, in HTML,
    /// listed.
    #[arg(long, value_name = "FILE")]
    pub evidence: Option<PathBuf>,
    /// Expected layout for the audit: a built-in name or a TOML file (see `peerpath audit`).
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// Font file for PNG output (default: DejaVu Sans Mono from the system's font directory).
    #[arg(long, value_name = "FILE")]
    pub font: Option<PathBuf>,
    /// The fabric's own map (as `peerpath rails --fabric-map`): the HTML report draws each
    /// adapter's cable against its rail, this node's layout standing for every host. Given
    /// twice (an earlier and a later map), the port counters that climbed between them.
    #[arg(long, value_name = "FILE|DIR")]
    pub fabric_map: Vec<PathBuf>,
    /// PNG pixels per SVG unit.
    #[arg(long, default_value_t = 1.5)]
    pub scale: f32,
}

/// The format a file name asks for.
pub fn format_of(path: &Path) -> Result<ReportFormat> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => Ok(ReportFormat::Svg),
        Some("png") => Ok(ReportFormat::Png),
        Some("html") | Some("htm") => Ok(ReportFormat::Html),
        _ => bail!(
            "cannot tell the format of {}: name it .svg, .png or .html, or pass --format",
            path.display()
        ),
    }
}

/// Writes the report; returns the exit code (0).
pub fn run(topo: &Topology, a: &ReportArgs) -> Result<u8> {
    let format = match a.format {
        Some(f) => f,
        None => format_of(&a.output)?,
    };
    // Resolve the font before any work, so a missing font fails fast.
    let fonts = if format == ReportFormat::Png {
        png::find_fonts(a.font.as_deref())?
    } else {
        Vec::new()
    };
    let profile = match &a.profile {
        Some(p) => Some(profile::Profile::resolve(p)?),
        None => None,
    };
    let (evidence, probe_doc) = match &a.evidence {
        Some(p) => {
            let text = peerpath::sources::fsroot::input::read_input_text(
                p,
                peerpath::sources::fsroot::input::MAX_SIDE_FILE_BYTES,
            )
            .with_context(|| format!("cannot read evidence {}", p.display()))?;
            let name = p.display().to_string();
            (
                Some(ProbeEvidence::parse(&name, &text)?),
                Some(html::ProbeDoc::parse(&name, &text)?),
            )
        }
        None => (None, None),
    };
    let side = peerpath::sources::fabric::LldpSide::Host;
    let (fabric_map, before) = match a.fabric_map.as_slice() {
        [] => (None, None),
        [p] => (Some(p), None),
        [b, p] => (Some(p), Some(b)),
        _ => anyhow::bail!(
            "--fabric-map is given once, or twice (an earlier and a later map of one fabric)"
        ),
    };
    let cabling = match fabric_map {
        Some(p) => {
            let mut map = peerpath::sources::fabric::load_map(p, side)?;
            if let Some(b) = before {
                let old = peerpath::sources::fabric::load_map(b, side)?;
                let rises = peerpath::analysis::cabling::counters::between(&old, &map);
                map.counters.extend(rises);
            }
            let cl = peerpath::analysis::classify::Classifier::new(topo, &Default::default());
            let rails = peerpath::analysis::rails::build_from(&cl, 1);
            let layout = peerpath::analysis::cabling::NodeLayout::from_rails(
                topo,
                &rails,
                None,
                topo.source.path.clone(),
            );
            // A node with no GPU on a rail: the map judged alone, as `rails --fabric-map`.
            let layouts = if layout.adapters.iter().any(|x| x.rail.is_some()) {
                vec![layout]
            } else {
                Vec::new()
            };
            Some((
                p.display().to_string(),
                peerpath::analysis::cabling::judge(&map, &layouts),
            ))
        }
        None => None,
    };
    let classifier = Classifier::new(topo, &ClassifyOptions::default());
    let report = audit::run(
        topo,
        &AuditOptions {
            profile,
            evidence,
            ..Default::default()
        },
    );
    let lay = layout::build(&layout::Inputs {
        topo,
        classifier: &classifier,
        audit: &report,
        pair_labels: format == ReportFormat::Svg,
    });
    let bytes = match format {
        ReportFormat::Svg => svg::render(&lay).into_bytes(),
        ReportFormat::Png => {
            // The pixels do not depend on the boxes' `data-*` attributes: the page's form of the
            // picture, without the boxes × GPUs labels.
            let (bytes, note) = png::render_fitted(&svg::render_for_page(&lay), &fonts, a.scale)?;
            if let Some(n) = note {
                super::say(&format!("peerpath: warning: {n}"));
            }
            bytes
        }
        ReportFormat::Html => {
            let eps = classifier.endpoints();
            let cells = classifier.pair_cells(&html::page_rows(eps));
            html::render(&html::HtmlInputs {
                layout: &lay,
                endpoints: eps,
                notes: &classifier.matrix_notes(),
                cells: &cells,
                audit: &report,
                probe: probe_doc.as_ref(),
                cabling: cabling.as_ref().map(|(n, c)| (n.as_str(), c)),
            })
            .into_bytes()
        }
    };
    peerpath::output::write_output(&a.output, &bytes)?;
    Ok(0)
}
