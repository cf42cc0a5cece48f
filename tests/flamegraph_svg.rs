//! `pstitch flamegraph`: the SVG holds the frames of the recording's folded
//! stacks, its options change what they should, and a real browser
//! (Debian's headless Chromium) draws it.
//!
//! The browser test needs `/usr/bin/chromium` (`apt-get install chromium`;
//! .ci/run installs it). Without it the test fails, unless
//! `PSTITCH_SKIP_BROWSER=1` is set, when it says it was skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn case() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/c-threads")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pstitch-flamegraph-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

/// Runs pstitch on the c-threads recording with `args`; its stdout.
fn pstitch(args: &[&str]) -> Vec<u8> {
    let c = case();
    let out = Command::new(env!("CARGO_BIN_EXE_pstitch"))
        .current_dir(&c)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .args(args)
        .output()
        .expect("run pstitch");
    assert!(out.status.success(), "pstitch {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn svg(extra: &[&str]) -> String {
    let mut args = vec!["flamegraph", "-i", "perf.data", "--symfs=symfs", "--kallsyms=kallsyms", "-o", "-"];
    args.extend_from_slice(extra);
    String::from_utf8(pstitch(&args)).expect("SVG is UTF-8")
}

/// Samples per function name, summed over the stacks it is in (counted
/// once per stack), from perf's folded stacks.
fn function_samples() -> (BTreeMap<String, u64>, u64) {
    let folded = pstitch(&["script", "report", "stackcollapse", "-i", "perf.data", "--symfs=symfs", "--kallsyms=kallsyms"]);
    let (mut m, mut total) = (BTreeMap::new(), 0);
    for line in String::from_utf8_lossy(&folded).lines() {
        let (stack, n) = line.rsplit_once(' ').expect("folded line");
        let n: u64 = n.parse().expect("count");
        total += n;
        let mut seen = std::collections::BTreeSet::new();
        for f in stack.split(';') {
            if seen.insert(f) {
                *m.entry(f.to_string()).or_default() += n;
            }
        }
    }
    (m, total)
}

/// The frames' tooltips: `name (N samples, P%)`.
fn titles(svg: &str) -> Vec<String> {
    svg.split("<title>").skip(1).filter_map(|t| t.split_once("</title>").map(|(a, _)| a.to_string())).collect()
}

/// Every function with at least 2% of the samples has a frame, and the
/// root frame counts them all.
#[test]
fn svg_has_the_frames() {
    let s = svg(&[]);
    assert!(s.starts_with("<?xml"), "an SVG document");
    let t = titles(&s);
    let (functions, total) = function_samples();
    assert!(t.iter().any(|x| x.starts_with(&format!("all ({total} samples"))), "root frame of {total} samples in {:?}", &t[..3.min(t.len())]);
    let mut checked = 0;
    for (f, n) in functions.iter().filter(|(_, n)| **n * 50 >= total) {
        let name = f.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        assert!(t.iter().any(|x| x.starts_with(&format!("{name} ("))), "no frame for {f} ({n} of {total} samples)");
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} functions checked");
    assert!(t.iter().any(|x| x.starts_with("run_stages (")));
    assert!(s.contains("<script"), "interactive (inferno's JavaScript)");
}

/// Title, subtitle, width, minimum frame width, inverted and reversed
/// graphs.
#[test]
fn svg_options() {
    let s = svg(&["--title", "cwork under test", "--width", "800"]);
    assert!(s.contains("cwork under test"));
    assert!(s.contains(r#"width="800""#), "width 800");
    let inverted = svg(&["--inverted"]);
    assert!(inverted.contains(">Icicle Graph</text>"), "an icicle graph's default title");
    // The root frame ("all") at the top of an icicle graph, at the bottom
    // of a flame graph.
    let root_y = |svg: &str| -> f64 {
        let g = svg.split("<g>").find(|g| g.contains("<title>all (")).expect("root frame");
        g.split(r#" y=""#).nth(1).and_then(|r| r.split('"').next()).and_then(|y| y.parse().ok()).expect("root y")
    };
    assert!(root_y(&inverted) < root_y(&svg(&[])), "inverted: the root on top");
    // Reversed, the leaves are at the bottom: a leaf function that is
    // never a caller becomes a child of a comm frame's root-level merge.
    let normal = titles(&svg(&[]));
    let reversed = titles(&svg(&["--reverse"]));
    assert_ne!(normal, reversed);
    assert_eq!(normal.len() > 10, reversed.len() > 10);
    // A minimum width leaves out the narrower frames; a subtitle shows.
    let wide = titles(&svg(&["--min-width", "100", "--subtitle", "only the wide ones"]));
    assert!(wide.len() < normal.len() && !wide.is_empty(), "--min-width 100: {} frames of {}", wide.len(), normal.len());
    assert!(svg(&["--subtitle", "only the wide ones"]).contains("only the wide ones"));
    let colors = svg(&["--colors", "blue"]);
    assert!(colors.contains("rgb("), "frames colored");
    let bad = Command::new(env!("CARGO_BIN_EXE_pstitch"))
        .current_dir(case())
        .args(["flamegraph", "-i", "perf.data", "--colors", "no-such-palette", "-o", "-"])
        .output()
        .expect("run pstitch");
    assert_eq!(bad.status.code(), Some(2), "unknown palette is a usage error");
}

/// What Chromium is run with: headless, no sandbox (root), nothing fetched.
fn chromium(args: &[&str]) -> Option<std::process::Output> {
    let bin = Path::new("/usr/bin/chromium");
    if !bin.exists() {
        if std::env::var_os("PSTITCH_SKIP_BROWSER").is_some() {
            eprintln!("SKIPPED: no /usr/bin/chromium (PSTITCH_SKIP_BROWSER is set)");
            return None;
        }
        panic!("the browser test needs Debian's chromium (apt-get install chromium), or PSTITCH_SKIP_BROWSER=1 to skip it");
    }
    let profile = scratch(&format!("chromium-profile-{}", args.len()));
    let out = Command::new("timeout")
        .arg("120")
        .arg(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("run chromium");
    Some(out)
}

/// The RGB pixels of a PNG.
fn decode_png(path: &Path) -> (usize, usize, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).expect("screenshot")));
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    let step = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected PNG color type {other:?}"),
    };
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let px = buf[..info.buffer_size()].chunks(step).map(|p| [p[0], p[1], p[2]]).collect();
    (info.width as usize, info.height as usize, px)
}

/// Chromium draws the SVG: the DOM after its scripts ran has the frames,
/// and the screenshot is mostly flame colors (inferno's "hot" palette:
/// red, at most some green, little blue), in tall enough a picture.
#[test]
fn browser_renders_the_frames() {
    let file = scratch("flame.svg");
    let s = svg(&[]);
    std::fs::write(&file, &s).expect("write SVG");
    let height: usize = s
        .split_once(r#"height=""#)
        .and_then(|(_, r)| r.split_once('"'))
        .and_then(|(h, _)| h.parse().ok())
        .expect("SVG height");
    let url = format!("file://{}", file.display());
    let Some(dom) = chromium(&["--dump-dom", &url]) else { return };
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("run_stages"), "the DOM has the frames:\n{}", &dom[..dom.len().min(2000)]);
    assert!(dom.contains(r#"id="frames""#), "inferno's frame group");

    let shot = scratch("flame.png");
    let Some(out) = chromium(&[&format!("--screenshot={}", shot.display()), &format!("--window-size=1200,{height}"), &url]) else { return };
    assert!(shot.exists(), "no screenshot: {}", String::from_utf8_lossy(&out.stderr));
    let (w, h, px) = decode_png(&shot);
    assert_eq!((w, h), (1200, height), "screenshot size");
    let flame = px.iter().filter(|[r, g, b]| *r >= 200 && *g < 235 && *b < 60).count();
    assert!(flame * 100 >= px.len() * 15, "flame-colored pixels: {flame} of {}", px.len());
    // Frame labels are drawn: dark text pixels on the frames.
    let dark = px.iter().filter(|[r, g, b]| *r < 60 && *g < 60 && *b < 60).count();
    assert!(dark * 1000 >= px.len() * 5, "text pixels: {dark} of {}", px.len());
}
