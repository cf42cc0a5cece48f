//! The report commands' behaviour around their outputs: the HTML page from
//! a template (and perf's message and status without one), gecko without
//! `--save-only`, perf's spellings of `report`, the scripts' option checks.
//! What they compute is checked against perf in tests/golden_reports.rs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn case() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/c-threads")
}

fn scratch() -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("pstitch-report-cli-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// `pstitch script <report...>` on the c-threads recording, run in `cwd`.
fn report(cwd: &Path, report: &[&str], rest: &[&str]) -> Output {
    let c = case();
    let (data, symfs, kallsyms) = (c.join("perf.data"), c.join("symfs"), c.join("kallsyms"));
    Command::new(env!("CARGO_BIN_EXE_pstitch"))
        .current_dir(cwd)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .arg("script")
        .args(report)
        .arg("-i")
        .arg(&data)
        .arg(format!("--symfs={}", symfs.display()))
        .arg(format!("--kallsyms={}", kallsyms.display()))
        .args(rest)
        .output()
        .expect("run pstitch")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The template's markers are replaced by the options and the tree, as
/// the script does; the file is named on stdout.
#[test]
fn html_fills_the_template() {
    let dir = scratch();
    let template = dir.join("template.html");
    std::fs::write(&template, "<p>before</p>\nvar stacks = [/** @flamegraph_json **/];\nvar options = [/** @options_json **/];\n").unwrap();
    let page = dir.join("page.html");
    let json = dir.join("stacks.json");
    let out = report(&dir, &["report", "flamegraph"], &["--", "--template", template.to_str().unwrap(), "--colorscheme", "orange", "--output", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("dumping data to {}\n", page.display()));
    let j = report(&dir, &["report", "flamegraph"], &["--", "--format=json", &format!("--output={}", json.display())]);
    assert!(j.status.success());
    let page = std::fs::read_to_string(&page).unwrap();
    let stacks = std::fs::read_to_string(&json).unwrap();
    assert!(page.starts_with("<p>before</p>\nvar stacks = ["));
    assert!(page.contains(&format!("var stacks = [{stacks}];")), "the tree in place");
    let options = page.split("var options = [").nth(1).and_then(|r| r.split("];").next()).expect("options");
    let options: serde_json::Value = serde_json::from_str(options).expect("options JSON");
    assert_eq!(options["colorscheme"], "orange");
    assert!(options["context"].as_str().unwrap().contains("# ========\n# captured on"), "the header as context: {options}");
}

/// Without a template perf warns and (asking on a terminal it does not
/// have) ends with status 134; --allow-download gets perf's minimal page.
#[test]
fn html_without_a_template() {
    let dir = scratch();
    let missing = dir.join("no-such-template.html");
    let out = report(&dir, &["report", "flamegraph"], &["--", "--template", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(134));
    let err = text(&out.stderr);
    assert!(err.starts_with(&format!("Warning: Flame Graph template '{}'\ndoes not exist. To avoid this please install a package such as the\njs-d3-flame-graph or libjs-d3-flame-graph", missing.display())), "{err}");
    assert!(!dir.join("flamegraph.html").exists());
    let out = report(&dir, &["report", "flamegraph"], &["--", "--template", missing.to_str().unwrap(), "--allow-download"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(dir.join("flamegraph.html")).expect("flamegraph.html");
    assert!(page.contains("d3-flamegraph.min.js") && page.contains(r#"const stacks = [{"n": "all", "l": "root""#), "{}", &page[..400]);
}

/// Without --save-only the profile goes to gecko_profile.json and pstitch
/// says how to open it.
#[test]
fn gecko_without_save_only() {
    let dir = scratch();
    let out = report(&dir, &["report", "gecko"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "[ perf gecko: Captured and wrote into gecko_profile.json ]\n");
    assert!(text(&out.stderr).contains("https://profiler.firefox.com/"));
    let profile: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("gecko_profile.json")).unwrap()).unwrap();
    assert_eq!(profile["threads"].as_array().map(Vec::len), Some(3));
    // Options after `--` as well.
    let out = report(&dir, &["report", "gecko"], &["--", "--user-color", "blue", "--save-only", "p.json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let profile: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("p.json")).unwrap()).unwrap();
    assert_eq!(profile["meta"]["categories"][0]["color"], "blue");
}

/// perf takes any prefix of `report` longer than two letters.
#[test]
fn report_spellings_and_checks() {
    let dir = scratch();
    let full = report(&dir, &["report", "stackcollapse"], &[]);
    assert!(full.status.success());
    assert!(!full.stdout.is_empty());
    for r in ["rep", "repo", "repor"] {
        assert_eq!(report(&dir, &[r, "stackcollapse"], &[]).stdout, full.stdout, "{r}");
    }
    let bad = report(&dir, &["report", "stackcollapse"], &["--", "--no-comm", "--include-tid"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("requesting tid but not comm is invalid"));
    let unknown = report(&dir, &["report", "nosuch"], &[]);
    assert_eq!(unknown.status.code(), Some(2));
}
