//! An interactive SVG flame graph of folded stacks, drawn by the `inferno`
//! crate's flame-graph library (the one behind `inferno-flamegraph`,
//! after Brendan Gregg's `flamegraph.pl`): the stacks go to it as they are
//! in memory, with no `perf script` text to write and parse again.

use std::io::{self, Write};

use inferno::flamegraph::{self, Direction, Options, color::Palette};

use super::folded::Folded;

/// The drawing options that matter (inferno's names).
#[derive(Debug, Clone)]
pub struct SvgOptions {
    pub title: String,
    pub subtitle: Option<String>,
    /// A palette: hot (default), mem, io, red, green, blue, aqua, yellow,
    /// purple, orange, wakeup, java, js, perl, python, rust.
    pub colors: String,
    /// Colors by function name (the same function, the same color).
    pub hash: bool,
    /// Stacks merged from the leaf (`--reverse`).
    pub reverse: bool,
    /// Icicle graph: stacks grow down from the top (`--inverted`).
    pub inverted: bool,
    /// Frames narrower than this many pixels are left out.
    pub min_width: f64,
    /// Image width in pixels (default 1200).
    pub width: Option<usize>,
}

impl Default for SvgOptions {
    fn default() -> SvgOptions {
        SvgOptions {
            title: "Flame Graph".into(),
            subtitle: None,
            colors: "hot".into(),
            hash: false,
            reverse: false,
            inverted: false,
            min_width: 0.1,
            width: None,
        }
    }
}

impl SvgOptions {
    /// Checks the palette name.
    pub fn palette(&self) -> Result<(), String> {
        self.colors.parse::<Palette>().map(|_| ())
    }
}

/// Writes the flame graph of `folded` as SVG. No samples draw inferno's
/// "no stack counts found" image (inferno reports that as an error).
pub fn write_svg(folded: &Folded, opts: &SvgOptions, out: impl Write) -> io::Result<()> {
    let mut o = Options::default();
    o.title = opts.title.clone();
    o.subtitle = opts.subtitle.clone();
    o.colors = opts.colors.parse::<Palette>().map_err(io::Error::other)?;
    o.hash = opts.hash;
    o.reverse_stack_order = opts.reverse;
    o.direction = if opts.inverted { Direction::Inverted } else { Direction::Straight };
    o.min_width = opts.min_width;
    o.image_width = opts.width;
    let lines = folded.lines();
    flamegraph::from_lines(&mut o, lines.iter().map(String::as_str), io::BufWriter::with_capacity(1 << 16, out))
}
