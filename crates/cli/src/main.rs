//! `broadphase`: exact broad-phase pair finding from the command line.

mod bench;
mod compare;
mod csv;
mod pairs;
#[cfg(feature = "peers")]
mod peers;
mod plot;

use std::path::PathBuf;
use std::process::ExitCode;

use broadphase::Algorithm;
use broadphase_scenes::Scene;
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "broadphase",
    version,
    about = "Exact broad-phase collision detection: every overlapping pair of boxes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print every overlapping pair of the boxes in a CSV file.
    Pairs(PairsArgs),
    /// Run every algorithm on generated scenes and compare their times and results.
    Compare(CompareArgs),
    /// Benchmark every algorithm, one-shot and per frame, on chosen scenes and sizes.
    Bench(BenchArgs),
    /// Write a generated scene as a CSV box file.
    Scene(SceneArgs),
}

/// Reads `id,min_x,min_y,max_x,max_y` (2D) or
/// `id,min_x,min_y,min_z,max_x,max_y,max_z` (3D) and prints `id_a,id_b`
/// (id_a < id_b) for every overlapping pair. Boxes are closed: touching
/// boxes overlap.
#[derive(Args)]
pub struct PairsArgs {
    /// The box file, or `-` for standard input.
    file: PathBuf,
    /// auto, brute, sort-and-sweep, grid, bvh or box-intersect.
    #[arg(long, short, default_value = "auto")]
    algorithm: Algorithm,
    /// Print the pairs in ascending order.
    #[arg(long)]
    sorted: bool,
    /// Print only the number of pairs.
    #[arg(long)]
    count: bool,
    /// Print timings and counts on standard error.
    #[arg(long)]
    stats: bool,
    /// Worker threads: 0 for all cores, 1 for the single-threaded algorithms.
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

/// Generates scenes, runs the chosen algorithms on each (single-threaded
/// unless --threads says otherwise), checks that all found the same pairs,
/// and prints the median time of each.
#[derive(Args)]
pub struct CompareArgs {
    /// Scenes, comma-separated: uniform, clustered, heavy-tailed, shared-x,
    /// sticks, lattice, guillotine, degenerate, duplicates, or `all`.
    #[arg(long, default_value = "uniform", value_delimiter = ',')]
    scene: Vec<String>,
    /// Number of boxes (`100000`, `1e5` and `100k` are all accepted).
    #[arg(long, default_value = "1e5", value_parser = parse_count)]
    n: usize,
    /// Dimension: 2 or 3.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=3))]
    dim: u8,
    /// Algorithms, comma-separated, or `all` (brute force only up to 20000 boxes).
    #[arg(long, default_value = "all", value_delimiter = ',')]
    algorithm: Vec<String>,
    /// Worker threads for the threaded variants (1: single-threaded).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Runs per algorithm; the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Scene seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Use f32 boxes (rounded outward) instead of f64.
    #[arg(long)]
    f32: bool,
}

/// Times every algorithm on generated scenes: one-shot pair finding, and
/// persistent broad phases per frame under a motion model. Checks that all
/// found the same pairs in every cell, fits how the time grows with n, and
/// can write the table as CSV and JSON.
#[derive(Args, Clone)]
pub struct BenchArgs {
    /// Workloads: `oneshot`, `frames` or `all`.
    #[arg(long, default_value = "all")]
    workload: String,
    /// Scenes, comma-separated, or `all`.
    #[arg(long, default_value = "uniform", value_delimiter = ',')]
    scene: Vec<String>,
    /// Sizes: a decade range `1e3..1e6`, a list `1e4,1e5`, or one size.
    #[arg(long, default_value = "1e3..1e6")]
    n: String,
    /// Dimension: 2 or 3.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=3))]
    dim: u8,
    /// Our algorithms to run, comma-separated, or `all`: one-shot `auto`,
    /// `brute`, `sort-and-sweep`, `grid`, `bvh`, `box-intersect`; per frame
    /// `hash-grid`, `dynamic-tree`, `multi-sap`, `incremental-sap`, `brute`.
    #[arg(long, default_value = "all", value_delimiter = ',')]
    algorithms: Vec<String>,
    /// Peer crates to run (builds with the `peers` feature), comma-separated:
    /// `parry`, `rstar`, `bvh` (the crate), `broccoli` (2D); `all` or `none`.
    #[arg(long, default_value = "all", value_delimiter = ',')]
    peers: Vec<String>,
    /// Worker threads for the threaded one-shot variants (1: single-threaded).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Most runs per one-shot algorithm (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Time budget per one-shot algorithm and cell, in seconds (at least one run).
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Per-frame workloads: motions `still`, `1%`, `10%`, `100%`, `jitter`,
    /// `jitterN%`, `rain`, `rainN%` (falling along the last axis, wrapping
    /// to the top), `pulse`, `pulseA%/B%`, `pulseA%/B%/P` (A% moving every
    /// P-th frame, default 30% every 2nd; B% of the boxes, default 10%, on
    /// the others), or `bullet` (a small box crossing the scene made static).
    #[arg(long, default_value = "still,1%,10%,100%,bullet", value_delimiter = ',')]
    motion: Vec<String>,
    /// Step per frame of a moving box, in box units.
    #[arg(long, default_value_t = 0.05)]
    speed: f64,
    /// Timed frames per persistent algorithm.
    #[arg(long, default_value_t = 30)]
    frames: usize,
    /// Frames run before timing (fat boxes and caches settle).
    #[arg(long, default_value_t = 20)]
    warmup: usize,
    /// Largest size of the per-frame workload.
    #[arg(long, default_value = "1e5", value_parser = parse_count)]
    frames_max: usize,
    /// Scene seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Use f32 boxes (rounded outward) instead of f64.
    #[arg(long)]
    f32: bool,
    /// A short run: sizes 1e3..1e4, 3 runs, 10 frames.
    #[arg(long)]
    quick: bool,
    /// Write the table as CSV to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the table and the fits as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw SVG plots into this folder: time against n (log-log, with the
    /// fitted exponents) and a bar chart per cell at the largest n.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// Names `--algorithms` accepts.
const OUR_ALGORITHMS: [&str; 10] = [
    "auto",
    "brute",
    "sort-and-sweep",
    "grid",
    "bvh",
    "box-intersect",
    "hash-grid",
    "dynamic-tree",
    "multi-sap",
    "incremental-sap",
];
/// Names `--peers` accepts (each picks the peers whose name starts with it).
const PEERS: [&str; 4] = ["parry", "rstar", "bvh", "broccoli"];

impl BenchArgs {
    /// Checks the names given to `--algorithms` and `--peers`.
    fn check_names(&self) -> Result<(), String> {
        for x in &self.algorithms {
            if x != "all" && !OUR_ALGORITHMS.contains(&x.as_str()) {
                return Err(format!("unknown algorithm `{x}` (all, {})", OUR_ALGORITHMS.join(", ")));
            }
        }
        for x in &self.peers {
            if x != "all" && x != "none" && !PEERS.contains(&x.as_str()) {
                return Err(format!("unknown peer `{x}` (all, none, {})", PEERS.join(", ")));
            }
        }
        Ok(())
    }

    /// Whether our algorithm `name` is to run.
    pub fn wants(&self, name: &str) -> bool {
        self.algorithms.iter().any(|x| x == "all" || x == name)
    }

    /// Whether the peer `name` (as its rows call it) is to run.
    #[cfg_attr(not(feature = "peers"), allow(dead_code))]
    pub fn wants_peer(&self, name: &str) -> bool {
        let name = name.to_lowercase();
        self.peers.iter().any(|x| x == "all" || (x != "none" && name.starts_with(x.as_str())))
    }

    /// The arguments with `--quick` applied.
    fn resolved(&self) -> Self {
        let mut a = self.clone();
        if a.quick {
            if a.n == "1e3..1e6" {
                a.n = "1e3..1e4".into();
            }
            a.repeat = a.repeat.min(3);
            a.frames = a.frames.min(10);
            a.warmup = a.warmup.min(10);
            a.seconds = a.seconds.min(0.2);
        }
        a
    }
}

/// Writes a generated scene as a CSV box file.
#[derive(Args)]
pub struct SceneArgs {
    /// The scene's name.
    scene: Scene,
    /// Number of boxes (`1e5` and `100k` are accepted).
    #[arg(long, default_value = "1e4", value_parser = parse_count)]
    n: usize,
    /// Dimension: 2 or 3.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=3))]
    dim: u8,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output file (default: standard output).
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// Parses a count written as `100000`, `1e5`, `2.5e4` or `100k` / `1m`.
fn parse_count(s: &str) -> Result<usize, String> {
    let (num, mult) = match s.strip_suffix(['k', 'K']) {
        Some(x) => (x, 1e3),
        None => match s.strip_suffix(['m', 'M']) {
            Some(x) => (x, 1e6),
            None => (s, 1.0),
        },
    };
    let v: f64 = num.parse().map_err(|_| format!("`{s}` is not a count"))?;
    let v = v * mult;
    if !((0.0..=4e9).contains(&v) && v.fract() == 0.0) {
        return Err(format!("`{s}` is not a whole number of boxes between 0 and 4e9"));
    }
    Ok(v as usize)
}

/// Runs `f` in a pool of `threads` workers (0: all cores), or on the
/// calling thread for 1 (every caller then runs the single-threaded
/// searches, which need no pool). Callers that time searches call this once
/// around all their runs: a search run on a thread just spawned starts with
/// cold caches (the grid on 1e3 boxes timed 0.126 ms that way, 0.058 ms on
/// the calling thread, as the peers run).
pub fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    if threads == 1 {
        return Ok(f());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| format!("cannot start {threads} threads: {e}"))?;
    Ok(pool.install(f))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Pairs(a) => pairs::run(&a),
        Command::Compare(a) => compare::run(&a),
        Command::Bench(a) => a.check_names().and_then(|()| bench::run(&a.resolved())),
        Command::Scene(a) => scene(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("broadphase: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn scene(a: &SceneArgs) -> Result<(), String> {
    let mut buf = Vec::new();
    let w = &mut buf;
    let r = if a.dim == 2 {
        csv::write(&a.scene.generate::<2>(a.n, a.seed), w)
    } else {
        csv::write(&a.scene.generate::<3>(a.n, a.seed), w)
    };
    r.map_err(|e| e.to_string())?;
    match &a.output {
        Some(path) => std::fs::write(path, &buf).map_err(|e| format!("{}: {e}", path.display())),
        None => {
            use std::io::Write;
            std::io::stdout().lock().write_all(&buf).map_err(|e| e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_count;

    #[test]
    fn counts() {
        assert_eq!(parse_count("1e5"), Ok(100_000));
        assert_eq!(parse_count("100k"), Ok(100_000));
        assert_eq!(parse_count("2.5e3"), Ok(2500));
        assert_eq!(parse_count("1m"), Ok(1_000_000));
        assert_eq!(parse_count("12"), Ok(12));
        assert!(parse_count("1.5").is_err());
        assert!(parse_count("-3").is_err());
        assert!(parse_count("x").is_err());
    }
}
