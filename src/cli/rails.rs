//! `peerpath rails`: the scale-up boundary and the fabric ports that leave it.

use crate::InputArgs;
use anyhow::Result;
use clap::{Args, ValueEnum};
use peerpath::analysis::place::NodeView;
use peerpath::analysis::rails;
use peerpath::render;

/// Output formats of `rails`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum RailsFormat {
    /// Tables.
    Text,
    /// `peerpath.rails/1` JSON.
    Json,
}

/// Arguments of `rails`.
#[derive(Args)]
pub struct RailsArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Multiply the plant for this many identical nodes (a rack or pod).
    #[arg(long, value_name = "N", default_value_t = 1)]
    nodes: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: RailsFormat,
}

/// Runs `rails`; exit code 1 when the node is not rail-optimised.
pub fn run(a: RailsArgs) -> Result<u8> {
    let topo = crate::load(&a.input)?;
    let view = NodeView::new(&topo);
    let r = rails::build(&topo, &view, a.nodes);
    match a.format {
        RailsFormat::Text => super::print_text(&render::rails::render_text(&r)),
        RailsFormat::Json => {
            super::print_document(&(serde_json::to_string_pretty(&r)? + "\n"), true)
        }
    }
    Ok(if r.rail_optimised { 0 } else { 1 })
}
