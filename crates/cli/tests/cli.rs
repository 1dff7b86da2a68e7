//! The `broadphase` binary: output on the oracle sample for every
//! algorithm, the options, and a clear failure for each kind of bad input.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_broadphase"))
}

fn oracle_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../broadphase/tests/data/oracle")
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = bin();
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().expect("run broadphase");
    if let Some(input) = stdin {
        // The program may exit before reading (a usage error): a broken pipe
        // here is not a failure of the test.
        let _ = child.stdin.take().unwrap().write_all(input);
    }
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

const ALGORITHMS: [&str; 6] = ["auto", "brute", "sort-and-sweep", "grid", "bvh", "box-intersect"];

#[test]
fn oracle_sample_through_the_cli() {
    let mut names: Vec<String> = std::fs::read_dir(oracle_dir())
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().unwrap().strip_suffix(".csv").map(String::from))
        .collect();
    names.sort();
    assert_eq!(names.len(), 12);
    for name in &names {
        let csv = oracle_dir().join(format!("{name}.csv"));
        let expect = std::fs::read_to_string(oracle_dir().join(format!("{name}.pairs"))).unwrap();
        for alg in ALGORITHMS {
            for threads in ["1", "2"] {
                let o =
                    run(&["pairs", csv.to_str().unwrap(), "--algorithm", alg, "--sorted", "--threads", threads], None);
                assert!(o.status.success(), "{name} {alg}: {}", stderr(&o));
                assert!(stdout(&o) == expect, "{name} {alg} threads={threads}: output differs from the oracle");
            }
        }
        // Unsorted output is the same set.
        let o = run(&["pairs", csv.to_str().unwrap()], None);
        let text = stdout(&o);
        let mut got: Vec<&str> = text.lines().collect();
        got.sort_by_key(|l| {
            let (a, b) = l.split_once(',').unwrap();
            (a.parse::<i64>().unwrap(), b.parse::<i64>().unwrap())
        });
        let want: Vec<&str> = expect.lines().collect();
        assert_eq!(got, want, "{name} unsorted");
    }
}

#[test]
fn count_stats_and_stdin() {
    let input = b"id,min_x,min_y,max_x,max_y\r\n10,0,0,1,1\r\n3,1,1,2,2\r\n7,5,5,6,6";
    let o = run(&["pairs", "-", "--count", "--stats"], Some(input));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "1\n");
    let err = stderr(&o);
    assert!(err.contains("boxes: 3 (2D)") && err.contains("pairs: 1") && err.contains("find:"), "{err}");
    let o = run(&["pairs", "-"], Some(input));
    assert_eq!(stdout(&o), "3,10\n");
}

#[test]
fn header_only_is_zero_pairs() {
    for h in ["id,min_x,min_y,max_x,max_y\n", "id,min_x,min_y,min_z,max_x,max_y,max_z"] {
        let o = run(&["pairs", "-"], Some(h.as_bytes()));
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), "");
        let o = run(&["pairs", "-", "--count"], Some(h.as_bytes()));
        assert_eq!(stdout(&o), "0\n");
    }
}

#[test]
fn bad_input_fails_cleanly() {
    let h = "id,min_x,min_y,max_x,max_y\n";
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "empty input"),
        ("1,0,0,1,1\n".into(), "line 1: missing header"),
        ("id,x0,y0,x1,y1\n1,0,0,1,1\n".into(), "line 1: unknown header"),
        (format!("{h}1,0,0,1,x\n"), "line 2: column max_y: `x` is not a number"),
        (format!("{h}1,0,0,1,1\n2,nan,0,1,1\n"), "line 3: column min_x: `nan` is NaN"),
        (format!("{h}1,0,0,inf,1\n"), "line 2: column max_x: `inf` is infinite"),
        (format!("{h}1,-inf,0,1,1\n"), "line 2: column min_x: `-inf` is infinite"),
        (format!("{h}1,0,0,1e400,1\n"), "line 2: column max_x: `1e400` overflows to infinity"),
        (format!("{h}1,2,0,1,1\n"), "line 2: min_x 2 is greater than max_x 1"),
        (format!("{h}1,0,0,1\n"), "line 2: expected 5 fields, found 4"),
        (format!("{h}1,0,0,1,1,2\n"), "line 2: expected 5 fields, found 6"),
        (format!("{h}1,0,0,1,1,\n"), "line 2: expected 5 fields, found 6 (trailing comma?)"),
        (format!("{h}1,0,0,1,1\n1,0,0,1,1\n"), "line 3: duplicate id 1 (first on line 2)"),
        (format!("{h}x,0,0,1,1\n"), "line 2: column id: `x` is not an integer id"),
        (format!("{h}1,0,0,1,1\n\n2,0,0,1,1\n"), "line 3: empty line"),
        (format!("{h}1,,0,1,1\n"), "line 2: column min_x: empty value"),
    ];
    for (input, message) in cases {
        let o = run(&["pairs", "-"], Some(input.as_bytes()));
        assert!(!o.status.success(), "{input:?} was accepted");
        assert_eq!(o.status.code(), Some(1), "{input:?}");
        assert!(stdout(&o).is_empty(), "{input:?} printed {:?}", stdout(&o));
        let err = stderr(&o);
        assert!(err.contains(message), "{input:?}: expected {message:?} in {err:?}");
        assert!(!err.contains("panicked"), "{input:?} panicked: {err}");
    }
    let o = run(&["pairs", "/nonexistent/boxes.csv"], None);
    assert!(!o.status.success() && stderr(&o).contains("/nonexistent/boxes.csv"));
    let o = run(&["pairs", "-", "--algorithm", "quadtree"], Some(h.as_bytes()));
    assert!(!o.status.success() && stderr(&o).contains("unknown algorithm"));
}

#[test]
fn scene_files_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    for dim in ["2", "3"] {
        let path = dir.path().join(format!("s{dim}.csv"));
        let o = run(&["scene", "guillotine", "--n", "500", "--dim", dim, "-o", path.to_str().unwrap()], None);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut counts = Vec::new();
        for alg in ALGORITHMS {
            let o = run(&["pairs", path.to_str().unwrap(), "--count", "--algorithm", alg], None);
            assert!(o.status.success(), "{}", stderr(&o));
            counts.push(stdout(&o));
        }
        assert!(counts.windows(2).all(|w| w[0] == w[1]), "{counts:?}");
        assert_ne!(counts[0], "0\n");
    }
}

#[test]
fn compare_runs_and_agrees() {
    let o = run(&["compare", "--n", "2000", "--scene", "uniform,sticks", "--repeat", "1"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text.matches("all 6 algorithms found the same").count(), 2, "{text}");
}

#[test]
fn bench_runs_checks_and_writes_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, json) = (dir.path().join("b.csv"), dir.path().join("b.json"));
    let o = run(
        &[
            "bench",
            "--quick",
            "--n",
            "300,3000",
            "--dim",
            "2",
            "--motion",
            "still,10%,jitter,rain,bullet",
            "--csv",
            csv.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--plot",
            dir.path().join("plots").to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("every algorithm found the same pairs in every cell"), "{text}");
    assert!(text.contains("growth exponents"), "{text}");
    // One header and a row per (cell, algorithm).
    let table = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("workload,scene,dim,scalar,n,algorithm,median_ms"));
    assert!(lines.len() > 20, "{table}");
    assert!(lines.iter().any(|l| l.starts_with("frames 100% jitter,uniform,2,f64,3000,hash-grid,")));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["agree"], true);
    assert_eq!(report["rows"].as_array().unwrap().len(), lines.len() - 1);
    assert!(!report["fits"].as_array().unwrap().is_empty());
    // A growth plot per workload with the exponents in its legend, and a bar
    // chart per workload at the largest size.
    let plots: Vec<_> = std::fs::read_dir(dir.path().join("plots")).unwrap().map(|e| e.unwrap().path()).collect();
    let growth = plots.iter().find(|p| p.ends_with("growth-one-shot-uniform-2d.svg")).expect("growth plot");
    let svg = std::fs::read_to_string(growth).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("grid (n^"), "{svg}");
    assert!(plots.iter().any(|p| p.ends_with("bars-one-shot-uniform-2d-n3000.svg")), "{plots:?}");
    // Each plot also as PNG, text rendered with the embedded font.
    let png = std::fs::read(growth.with_extension("png")).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000, "{} bytes", png.len());
    assert_eq!(plots.len(), 24, "{plots:?}");
    assert!(lines.iter().any(|l| l.starts_with("frames 100% rain,uniform,2,f64,3000,dynamic-tree,")));
    assert!(lines.iter().any(|l| l.starts_with("frames bullet,uniform,2,f64,3000,multi-sap,")));
}

#[test]
fn bench_runs_only_the_chosen_algorithms() {
    let o = run(
        &["bench", "--quick", "--n", "500", "--algorithms", "grid,dynamic-tree", "--peers", "none", "--motion", "10%"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("0x")).collect();
    assert_eq!(rows.len(), 2, "one grid row and one tree row: {text}");
    assert!(rows[0].trim_start().starts_with("grid "), "{text}");
    assert!(rows[1].trim_start().starts_with("dynamic-tree "), "{text}");
    assert!(!text.contains("(peer)"), "{text}");
    assert!(text.contains("every algorithm found the same pairs in every cell"), "{text}");
}

#[test]
fn bench_runs_pulses() {
    // Busy frames (above the share that takes the one-shot path) between
    // calm ones: both paths in turn, checked against each other.
    let o = run(&["bench", "--quick", "--n", "3000", "--peers", "none", "--motion", "pulse,pulse40%/5%/3"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("pulse 30%/10% every 2"), "{text}");
    assert!(text.contains("pulse 40%/5% every 3"), "{text}");
    assert!(text.contains("every algorithm found the same pairs in every cell"), "{text}");
}

#[test]
fn bench_rejects_bad_arguments() {
    for args in [
        &["bench", "--n", "1e6..1e3"][..],
        &["bench", "--workload", "nonsense"],
        &["bench", "--motion", "150%"],
        &["bench", "--motion", "pulse10%/30%"],
        &["bench", "--motion", "pulse30%/10%/0"],
        &["bench", "--motion", "pulse30%"],
        &["bench", "--scene", "nowhere"],
        &["bench", "--algorithms", "grid,nope"],
        &["bench", "--peers", "parry,nope"],
    ] {
        let o = run(args, None);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(stdout(&o).is_empty() || !stdout(&o).contains("rows in"), "{args:?}");
        assert!(!stderr(&o).is_empty(), "{args:?}");
    }
}
