//! The report commands' behaviour around their outputs: the HTML page from
//! a template (and perf's message and status without one), gecko without
//! `--save-only`, perf's spellings of `report`, the scripts' option checks,
//! an idle CPU's pid as the scripts see it.
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

/// A cpu-clock recording built by hand: two samples of an idle CPU (pid
/// and tid -1) and one of tid 7, no callchains, no comm records.
fn idle_samples() -> Vec<u8> {
    use pstitch::perf_data::attr::sample_type as st;
    use pstitch::perf_data::bytes::Endian;
    use pstitch::perf_data::record::kind;
    use pstitch::perf_data::writer::{AttrEntry, FileWriter, Put, cpu_clock_attr};
    let p = Put(Endian::Little);
    let attr = cpu_clock_attr(Endian::Little, 1000, st::IP | st::TID | st::TIME | st::PERIOD);
    let mut data = Vec::new();
    for (i, tid) in [u32::MAX, 7, u32::MAX].into_iter().enumerate() {
        p.header(&mut data, kind::SAMPLE, 2, 40);
        p.u64(&mut data, 0x400000);
        p.u32(&mut data, tid);
        p.u32(&mut data, tid);
        p.u64(&mut data, 1_000_000_000 + i as u64 * 1_000_000);
        p.u64(&mut data, 1000);
    }
    FileWriter { endian: Endian::Little, attrs: vec![AttrEntry { raw: attr, ids: vec![1] }], data, features: vec![] }.to_bytes()
}

/// perf's Python engine hands a script the sample's pid and tid unsigned:
/// an idle CPU's -1 is 4294967295 in the folded root, the flame graph's
/// process node and gecko's thread, while its comm is `:-1`. The expected
/// values are perf-ref's outputs for this file.
#[test]
fn idle_pid_as_the_scripts_see_it() {
    let dir = scratch();
    std::fs::write(dir.join("perf.data"), idle_samples()).expect("write perf.data");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_pstitch")).current_dir(&dir).env("PERF_BUILDID_DIR", "/nonexistent").args(args).output().expect("run pstitch");
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let folded = run(&["script", "report", "stackcollapse", "-i", "perf.data", "--", "--include-pid", "--include-tid"]);
    assert_eq!(folded, ":-1-4294967295/4294967295 2\n:7-7/7 1\n");
    run(&["script", "report", "flamegraph", "-i", "perf.data", "--", "--format=json", "--output=stacks.json"]);
    let stacks = std::fs::read_to_string(dir.join("stacks.json")).expect("stacks.json");
    let stacks: serde_json::Value = serde_json::from_str(&stacks).expect("stacks.json is JSON");
    let perf = r#"{"n": "all", "l": "root", "v": 0, "c": [{"n": ":-1 (4294967295)", "l": "", "v": 2, "c": []}, {"n": ":7 (7)", "l": "", "v": 1, "c": []}]}"#;
    assert_eq!(stacks, serde_json::from_str::<serde_json::Value>(perf).unwrap());
    run(&["script", "report", "gecko", "-i", "perf.data", "--save-only", "gecko.json"]);
    let gecko: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("gecko.json")).expect("gecko.json")).expect("gecko JSON");
    let threads: Vec<(u64, u64, &str)> = gecko["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .map(|t| (t["tid"].as_u64().unwrap_or(0), t["pid"].as_u64().unwrap_or(0), t["name"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(threads, [(4294967295, 4294967295, ":-1"), (7, 7, ":7")]);
    std::fs::remove_dir_all(&dir).expect("remove scratch");
}
