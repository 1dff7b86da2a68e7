//! `broadphase bench`: timed runs of every algorithm on chosen scenes and
//! sizes, one-shot and per frame, with a check that all found the same
//! pairs, fitted growth exponents, and CSV / JSON output.
//!
//! Timing: each (workload, scene, size) cell runs its algorithms one after
//! another; a one-shot algorithm runs once untimed, then repeats until
//! `--repeat` runs or the `--seconds` budget is spent (at least one run), and reports
//! the median with the fastest and slowest run; a persistent algorithm
//! reports the median frame of `--frames` frames after a warm-up, with the
//! 10th and 90th percentiles.

use std::time::Instant;

use broadphase::persistent::{BruteForce, DynamicTree, HashGrid, IncrementalSap, MultiSap};
use broadphase::{Aabb, Algorithm, BroadPhase, Pair, PairEvent, PairFinder, Proxy, ProxyId, Scalar, Workspace};
use broadphase_scenes::motion::{Motion, Mover};
use broadphase_scenes::{to_f32, Scene};
use serde::Serialize;

use crate::{with_threads, BenchArgs};

/// One measured cell of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub workload: String,
    pub scene: String,
    pub dim: u8,
    pub scalar: &'static str,
    pub n: usize,
    pub algorithm: String,
    pub median_ms: f64,
    pub low_ms: f64,
    pub high_ms: f64,
    /// The mean (per-frame costs that spike, such as re-fattening bursts,
    /// show here and not in the median).
    pub mean_ms: f64,
    pub runs: usize,
    pub pairs: usize,
    pub ns_per_box: f64,
    pub bytes_per_box: f64,
    pub pair_hash: String,
    /// What the algorithm lacks or how it was driven (peers); empty for ours.
    pub note: String,
}

/// Where rows are measured: workload, scene, dimension, scalar and size.
#[derive(Clone)]
pub struct Cell {
    pub workload: String,
    pub scene: String,
    pub dim: u8,
    pub scalar: &'static str,
    pub n: usize,
}

/// Which spread a row reports beside the median.
#[derive(Clone, Copy)]
pub enum Spread {
    /// The fastest and slowest run (a few runs).
    Range,
    /// The 10th and 90th percentiles (many frames).
    Deciles,
}

impl Row {
    /// A row from sorted times (seconds), its pairs, bytes held (NaN: not
    /// measured) and pair-set hash; printed as it is made.
    pub fn new(
        cell: &Cell,
        algorithm: impl Into<String>,
        times: &[f64],
        spread: Spread,
        pairs: usize,
        bytes: f64,
        hash: u64,
    ) -> Self {
        let median = times[times.len() / 2];
        let (low, high) = match spread {
            Spread::Range => (times[0], times[times.len() - 1]),
            Spread::Deciles => (percentile(times, 0.1), percentile(times, 0.9)),
        };
        let n = cell.n.max(1) as f64;
        let row = Row {
            workload: cell.workload.clone(),
            scene: cell.scene.clone(),
            dim: cell.dim,
            scalar: cell.scalar,
            n: cell.n,
            algorithm: algorithm.into(),
            median_ms: median * 1e3,
            low_ms: low * 1e3,
            high_ms: high * 1e3,
            mean_ms: times.iter().sum::<f64>() / times.len() as f64 * 1e3,
            runs: times.len(),
            pairs,
            ns_per_box: median * 1e9 / n,
            bytes_per_box: bytes / n,
            pair_hash: format!("{hash:#018x}"),
            note: String::new(),
        };
        print_row(&row);
        row
    }
}

/// Calls `run` (which returns the seconds it measured) once untimed, then
/// until `--repeat` runs or the `--seconds` budget is spent (at least one
/// timed run); returns the times sorted.
pub fn time_runs(a: &BenchArgs, mut run: impl FnMut() -> f64) -> Vec<f64> {
    run(); // page faults of working memory and output, cold caches
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < a.repeat as usize && (times.is_empty() || start.elapsed().as_secs_f64() < a.seconds) {
        times.push(run());
    }
    times.sort_by(f64::total_cmp);
    times
}

/// A fitted power law `time ≈ c · n^exponent` over the sizes of a series.
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    pub workload: String,
    pub scene: String,
    pub dim: u8,
    pub algorithm: String,
    pub exponent: f64,
    pub points: usize,
}

/// An order-independent hash of a pair set given as pairs of box indices.
pub fn pair_hash(pairs: impl Iterator<Item = (u32, u32)>) -> u64 {
    pairs.fold(0u64, |h, (a, b)| {
        let (a, b) = if a < b { (a, b) } else { (b, a) };
        let mut z = ((a as u64) << 32 | b as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        h.wrapping_add(z ^ (z >> 31))
    })
}

/// The hash of a broad phase's pairs as pairs of box indices: `ids[i]` is
/// box `i`'s proxy, and `extra` names one more proxy and its index.
fn box_pair_hash(pairs: &[broadphase::ProxyPair], ids: &[ProxyId], extra: Option<(ProxyId, u32)>) -> u64 {
    let slots = ids.iter().map(|id| id.index() as usize + 1).max().unwrap_or(0);
    let mut box_of = vec![u32::MAX; slots.max(extra.map_or(0, |(x, _)| x.index() as usize + 1))];
    for (i, id) in ids.iter().enumerate() {
        box_of[id.index() as usize] = i as u32;
    }
    let index = |id: ProxyId| match extra {
        Some((x, i)) if x == id => i,
        _ => box_of[id.index() as usize],
    };
    pair_hash(pairs.iter().map(|p| (index(p.a()), index(p.b()))))
}

/// Parses sizes: `1e3..1e6` (every decade), `1e4,1e5`, or one size.
pub fn parse_sizes(spec: &str) -> Result<Vec<usize>, String> {
    if let Some((a, b)) = spec.split_once("..") {
        let (lo, hi) = (crate::parse_count(a)?, crate::parse_count(b)?);
        if lo == 0 || lo > hi {
            return Err(format!("`{spec}`: expected a range like 1e3..1e6"));
        }
        let mut out = Vec::new();
        let mut n = lo;
        while n <= hi {
            out.push(n);
            n = n.checked_mul(10).ok_or("size range too large")?;
        }
        return Ok(out);
    }
    spec.split(',').map(crate::parse_count).collect()
}

/// A per-frame workload: a motion model over the scene, or a bullet (one
/// small fast box) crossing the scene made static.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Workload {
    Move(Motion),
    Bullet,
}

/// Parses a per-frame workload: a motion, or `bullet`.
pub fn parse_workload(s: &str, speed: f64) -> Result<Workload, String> {
    if s == "bullet" {
        Ok(Workload::Bullet)
    } else {
        parse_motion(s, speed).map(Workload::Move)
    }
}

/// Parses a motion: `still`, `1%`, `10%`, `100%`, `jitter` (100% in random
/// directions), `jitterN%`, `rain` (100% falling, wrapping to the top),
/// `rainN%`, or `pulse` (30% moving every other frame, 10% of the boxes
/// between), `pulseA%/B%` (A% and B%, every other frame) or `pulseA%/B%/P`
/// (A% every P-th frame).
pub fn parse_motion(s: &str, speed: f64) -> Result<Motion, String> {
    let pct = |t: &str| -> Result<f64, String> {
        let v: f64 = t.trim_end_matches('%').parse().map_err(|_| format!("`{s}` is not a motion"))?;
        if (0.0..=100.0).contains(&v) {
            Ok(v / 100.0)
        } else {
            Err(format!("`{s}`: a share between 0% and 100%"))
        }
    };
    Ok(match s {
        "still" => Motion::Steady { fraction: 0.0, speed },
        "jitter" => Motion::Jitter { fraction: 1.0, speed },
        "rain" => Motion::Rain { fraction: 1.0, speed },
        "pulse" => Motion::Pulse { fraction: 0.3, calm: 0.1, period: 2, speed },
        _ if s.starts_with("pulse") => {
            let parts: Vec<&str> = s["pulse".len()..].split('/').collect();
            let (busy, calm, period) = match parts[..] {
                [a, b] => (pct(a)?, pct(b)?, 2),
                [a, b, p] => (
                    pct(a)?,
                    pct(b)?,
                    p.parse()
                        .ok()
                        .filter(|&p: &u32| p >= 1)
                        .ok_or_else(|| format!("`{s}`: a period of 1 or more frames"))?,
                ),
                _ => return Err(format!("`{s}`: pulse, pulseA%/B% or pulseA%/B%/P")),
            };
            if calm > busy {
                return Err(format!("`{s}`: the calm share is at most the busy one"));
            }
            Motion::Pulse { fraction: busy, calm, period, speed }
        }
        _ => match (s.strip_prefix("jitter"), s.strip_prefix("rain")) {
            (Some(p), _) => Motion::Jitter { fraction: pct(p)?, speed },
            (_, Some(p)) => Motion::Rain { fraction: pct(p)?, speed },
            _ => Motion::Steady { fraction: pct(s)?, speed },
        },
    })
}

fn motion_name(m: &Motion) -> String {
    match m {
        Motion::Steady { fraction, .. } if *fraction == 0.0 => "still".into(),
        Motion::Steady { fraction, .. } => format!("{}% moving", fraction * 100.0),
        Motion::Jitter { fraction, .. } => format!("{}% jitter", fraction * 100.0),
        Motion::Rain { fraction, .. } => format!("{}% rain", fraction * 100.0),
        Motion::Pulse { fraction, calm, period, .. } => {
            format!("pulse {}%/{}% every {period}", fraction * 100.0, calm * 100.0)
        }
    }
}

/// A constructor of a persistent broad phase.
type Make<S, const D: usize> = fn() -> Box<dyn BroadPhase<S, D>>;

/// Every persistent algorithm, by name.
fn makers<S: Scalar, const D: usize>() -> [(&'static str, Make<S, D>); 5] {
    [
        ("hash-grid", || Box::new(HashGrid::<S, D>::default())),
        ("dynamic-tree", || Box::new(DynamicTree::<S, D>::default())),
        ("multi-sap", || Box::new(MultiSap::<S, D>::default())),
        ("incremental-sap", || Box::new(IncrementalSap::<S, D>::default())),
        ("brute", || Box::new(BruteForce::<S, D>::default())),
    ]
}

/// Brute force is left out above these sizes (it would take minutes).
const BRUTE_MAX: usize = 20_000;
const BRUTE_FRAMES_MAX: usize = 5_000;
/// Incremental SAP frames with much motion are slow in dense 3D worlds.
const SAP_FRAMES_MAX: usize = 100_000;

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn print_header() {
    println!(
        "  {:<26} {:>10} {:>10} {:>10} {:>10} {:>5} {:>10} {:>8} {:>8}  {:<18}",
        "algorithm", "median ms", "low ms", "high ms", "mean ms", "runs", "pairs", "ns/box", "B/box", "pair-set hash"
    );
}

fn print_row(r: &Row) {
    // Peers' memory is not measured: a dash.
    let bytes = if r.bytes_per_box.is_finite() { format!("{:.1}", r.bytes_per_box) } else { "-".into() };
    println!(
        "  {:<26} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>5} {:>10} {:>8.1} {:>8}  {:<18}",
        r.algorithm, r.median_ms, r.low_ms, r.high_ms, r.mean_ms, r.runs, r.pairs, r.ns_per_box, bytes, r.pair_hash
    );
}

struct Ctx<'a> {
    a: &'a BenchArgs,
    rows: Vec<Row>,
    agree: bool,
}

impl Ctx<'_> {
    fn check(&mut self, what: &str, rows: &[Row]) {
        let first = rows.first().map(|r| (r.pairs, r.pair_hash.clone()));
        if rows.iter().all(|r| Some((r.pairs, r.pair_hash.clone())) == first) {
            if let Some((p, _)) = first {
                println!("  all {} agree on the {p} pairs of {what}\n", rows.len());
            }
        } else {
            self.agree = false;
            println!("  MISMATCH: the algorithms found different pair sets for {what}\n");
        }
    }

    fn oneshot<S: Scalar, const D: usize>(&mut self, scene: Scene, boxes: &[Aabb<S, D>], scalar: &'static str) {
        let a = self.a;
        let n = boxes.len();
        println!("one-shot: scene {scene}, {D}D {scalar}, n = {n}");
        print_header();
        let at = Cell { workload: "one-shot".into(), scene: scene.to_string(), dim: D as u8, scalar, n };
        let mut cell = Vec::new();
        for alg in Algorithm::ALL {
            if (alg == Algorithm::BruteForce && n > BRUTE_MAX) || !a.wants(alg.name()) {
                continue;
            }
            let finder = PairFinder::new(alg).parallel(a.threads != 1);
            let (mut ws, mut out) = (Workspace::new(), Vec::<Pair>::new());
            // One pool for all the runs of a cell (see `with_threads`).
            let times = with_threads(a.threads, || {
                time_runs(a, || {
                    out.clear();
                    let t = Instant::now();
                    finder.find_with(&mut ws, boxes, &mut out).expect("valid sizes");
                    t.elapsed().as_secs_f64()
                })
            })
            .expect("thread pool");
            let bytes = ws.memory() + out.capacity() * core::mem::size_of::<Pair>();
            let hash = pair_hash(out.iter().map(|p| (p.a(), p.b())));
            cell.push(Row::new(&at, alg.name(), &times, Spread::Range, out.len(), bytes as f64, hash));
        }
        self.check("this cell", &cell);
        self.rows.extend(cell);
    }

    /// A small box crossing the scene (all static) along the diagonal of its
    /// bounds, `14 × speed` per frame: the cost should follow the bullet's
    /// neighbourhood, not the number of static boxes.
    fn bullet<S: Scalar, const D: usize>(&mut self, scene: Scene, boxes: &[Aabb<S, D>], scalar: &'static str) {
        let a = self.a;
        let n = boxes.len();
        let step = 14.0 * a.speed;
        println!(
            "per frame: scene {scene} made static, {D}D {scalar}, n = {n}, a bullet crossing it {step:.2} per frame"
        );
        print_header();
        let place = Cell { workload: "frames bullet".into(), scene: scene.to_string(), dim: D as u8, scalar, n };
        let (mut lo, mut hi) = ([f64::INFINITY; D], [f64::NEG_INFINITY; D]);
        for b in boxes {
            for k in 0..D {
                lo[k] = lo[k].min(b.min()[k].to_f64());
                hi[k] = hi[k].max(b.max()[k].to_f64());
            }
        }
        let diag = (0..D).map(|k| (hi[k] - lo[k]).powi(2)).sum::<f64>().sqrt().max(1e-9);
        let at = |f: usize| {
            // Back and forth along the diagonal.
            let t = (f as f64 * step / diag) % 2.0;
            let t = if t > 1.0 { 2.0 - t } else { t };
            let c: [f64; D] = core::array::from_fn(|k| lo[k] + t * (hi[k] - lo[k]));
            Aabb::new(c.map(|v| S::from_f64(v - 0.1)), c.map(|v| S::from_f64(v + 0.1))).expect("finite")
        };
        let mut cell = Vec::new();
        let total = a.warmup + a.frames;
        for (name, make) in makers::<S, D>() {
            if (name == "brute" && n > BRUTE_FRAMES_MAX) || !a.wants(name) {
                continue;
            }
            let mut bp = make();
            let proxies: Vec<_> = boxes.iter().map(|b| Proxy::new(*b).kind(broadphase::BodyKind::Static)).collect();
            let mut ids = Vec::new();
            bp.insert_batch(&proxies, &mut ids).expect("room for the scene");
            let bullet = bp.insert(Proxy::new(at(0))).expect("room");
            let mut events = Vec::new();
            bp.update(&mut events);
            let mut times = Vec::new();
            for f in 1..=total {
                bp.set_aabb(bullet, at(f)).expect("live");
                let t = Instant::now();
                events.clear();
                bp.update(&mut events);
                if f > a.warmup {
                    times.push(t.elapsed().as_secs_f64());
                }
            }
            times.sort_by(f64::total_cmp);
            let hash = box_pair_hash(bp.pairs(), &ids, Some((bullet, n as u32)));
            let bytes = bp.memory() as f64;
            cell.push(Row::new(&place, name, &times, Spread::Deciles, bp.pairs().len(), bytes, hash));
        }
        // The reference: the boxes the bullet's last position meets.
        let last = at(total);
        let reference: Vec<(u32, u32)> =
            boxes.iter().enumerate().filter(|(_, b)| b.overlaps(&last)).map(|(i, _)| (i as u32, n as u32)).collect();
        let ref_hash = format!("{:#018x}", pair_hash(reference.iter().copied()));
        if cell.iter().any(|r| r.pair_hash != ref_hash) {
            self.agree = false;
            println!("  MISMATCH with a direct test of the bullet's last box ({} pairs)", reference.len());
        }
        self.check("the bullet's last frame (and a direct test of it)", &cell);
        self.rows.extend(cell);
    }

    fn frames<S: Scalar, const D: usize>(
        &mut self,
        scene: Scene,
        boxes: &[Aabb<S, D>],
        motion: Motion,
        scalar: &'static str,
    ) {
        let a = self.a;
        let n = boxes.len();
        let mname = motion_name(&motion);
        println!("per frame: scene {scene}, {D}D {scalar}, n = {n}, {mname} {} per frame", a.speed);
        print_header();
        let at = Cell { workload: format!("frames {mname}"), scene: scene.to_string(), dim: D as u8, scalar, n };
        let fraction = motion.fraction();
        let mut cell = Vec::new();
        // Every algorithm replays the same frames (same seed).
        let mut final_boxes: Vec<Aabb<S, D>> = Vec::new();
        for (name, make) in makers::<S, D>() {
            if (name == "brute" && n > BRUTE_FRAMES_MAX)
                || (name == "incremental-sap" && D == 3 && fraction > 0.01 && n > SAP_FRAMES_MAX / 10)
                || (name == "incremental-sap" && n > SAP_FRAMES_MAX)
                || !a.wants(name)
            {
                continue;
            }
            let mut bp = make();
            let proxies: Vec<_> = boxes.iter().map(|b| Proxy::new(*b)).collect();
            let mut ids: Vec<ProxyId> = Vec::new();
            bp.insert_batch(&proxies, &mut ids).expect("room for the scene");
            let mut events: Vec<PairEvent> = Vec::new();
            bp.update(&mut events);
            let mut mover = Mover::new(boxes.to_vec(), motion, a.seed ^ 0x5eed);
            let (mut moves, mut batch) = (Vec::new(), Vec::new());
            let mut times = Vec::new();
            for f in 0..a.warmup + a.frames {
                mover.step(&mut moves);
                batch.clear();
                batch.extend(moves.iter().map(|(i, b)| (ids[*i as usize], *b)));
                let t = Instant::now();
                bp.set_aabb_batch(&batch).expect("live ids");
                events.clear();
                bp.update(&mut events);
                if f >= a.warmup {
                    times.push(t.elapsed().as_secs_f64());
                }
            }
            times.sort_by(f64::total_cmp);
            if final_boxes.is_empty() {
                final_boxes = mover.boxes().to_vec();
            }
            // Hash the final pairs by box index, comparable across algorithms.
            let hash = box_pair_hash(bp.pairs(), &ids, None);
            let bytes = bp.memory() as f64;
            cell.push(Row::new(&at, name, &times, Spread::Deciles, bp.pairs().len(), bytes, hash));
        }
        // The one-shot search over the final boxes is the reference.
        let reference = PairFinder::new(Algorithm::Auto).find(&final_boxes).expect("valid sizes");
        let ref_hash = format!("{:#018x}", pair_hash(reference.iter().map(|p| (p.a(), p.b()))));
        if cell.iter().any(|r| r.pair_hash != ref_hash || r.pairs != reference.len()) {
            self.agree = false;
            println!("  MISMATCH with the one-shot search over the final boxes ({} pairs)", reference.len());
        }
        self.check("the final frame (and the one-shot search over it)", &cell);
        self.rows.extend(cell);
    }
}

/// The best of ours against the best peer in one cell.
#[derive(Clone, Debug, Serialize)]
pub struct Versus {
    pub workload: String,
    pub scene: String,
    pub dim: u8,
    pub n: usize,
    pub ours: String,
    pub ours_ms: f64,
    pub peer: String,
    pub peer_ms: f64,
    /// How many times faster ours is (peer time over ours).
    pub ratio: f64,
    /// The same for the mean times of the two rows.
    pub mean_ratio: f64,
}

/// Per cell with peer rows: our fastest row against the fastest peer's.
/// Frames where nothing moves are left out: no one has work to do there
/// (tens of nanoseconds, timer noise).
fn versus(rows: &[Row]) -> Vec<Versus> {
    let mut cells: Vec<(String, String, u8, usize)> = Vec::new();
    for r in rows.iter().filter(|r| r.workload != "frames still") {
        let c = (r.workload.clone(), r.scene.clone(), r.dim, r.n);
        if !cells.contains(&c) {
            cells.push(c);
        }
    }
    let best = |it: &mut dyn Iterator<Item = &Row>| it.min_by(|a, b| a.median_ms.total_cmp(&b.median_ms)).cloned();
    cells
        .into_iter()
        .filter_map(|(w, s, d, n)| {
            let here = || rows.iter().filter(|r| r.workload == w && r.scene == s && r.dim == d && r.n == n);
            let ours = best(&mut here().filter(|r| !r.algorithm.ends_with("(peer)")))?;
            let peer = best(&mut here().filter(|r| r.algorithm.ends_with("(peer)")))?;
            Some(Versus {
                workload: w,
                scene: s,
                dim: d,
                n,
                ratio: peer.median_ms / ours.median_ms.max(1e-12),
                mean_ratio: peer.mean_ms / ours.mean_ms.max(1e-12),
                ours: ours.algorithm,
                ours_ms: ours.median_ms,
                peer: peer.algorithm,
                peer_ms: peer.median_ms,
            })
        })
        .collect()
}

/// A CSV field, quoted when it needs to be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Least-squares slope of `ln t` against `ln n`.
fn exponent(points: &[(usize, f64)]) -> f64 {
    let k = points.len() as f64;
    let (mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0);
    for &(n, t) in points {
        let (x, y) = ((n as f64).ln(), t.max(1e-12).ln());
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    (k * sxy - sx * sy) / (k * sxx - sx * sx)
}

fn fits(rows: &[Row]) -> Vec<Fit> {
    let mut keys: Vec<(String, String, u8, String)> =
        rows.iter().map(|r| (r.workload.clone(), r.scene.clone(), r.dim, r.algorithm.clone())).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|(w, s, d, alg)| {
            let pts: Vec<(usize, f64)> = rows
                .iter()
                .filter(|r| r.workload == w && r.scene == s && r.dim == d && r.algorithm == alg)
                .map(|r| (r.n, r.median_ms))
                .collect();
            let distinct = pts.iter().map(|p| p.0).collect::<std::collections::BTreeSet<_>>().len();
            (distinct >= 2).then(|| Fit {
                workload: w,
                scene: s,
                dim: d,
                algorithm: alg,
                exponent: exponent(&pts),
                points: pts.len(),
            })
        })
        .collect()
}

pub fn run(a: &BenchArgs) -> Result<(), String> {
    let scenes: Vec<Scene> = if a.scene.iter().any(|s| s == "all") {
        Scene::ALL.to_vec()
    } else {
        a.scene.iter().map(|s| s.parse::<Scene>().map_err(|e| e.to_string())).collect::<Result<_, _>>()?
    };
    let sizes = parse_sizes(&a.n)?;
    let motions: Vec<Workload> = a.motion.iter().map(|m| parse_workload(m, a.speed)).collect::<Result<_, _>>()?;
    let (oneshot, frames) = match a.workload.as_str() {
        "all" => (true, true),
        "oneshot" | "one-shot" => (true, false),
        "frames" => (false, true),
        w => return Err(format!("unknown workload `{w}` (oneshot, frames or all)")),
    };
    let started = Instant::now();
    let mut ctx = Ctx { a, rows: Vec::new(), agree: true };
    // A progress bar on standard error (hidden when it is not a terminal).
    let progress = indicatif::ProgressBar::new((scenes.len() * sizes.len()) as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} cells {msg}")
            .expect("a valid template"),
    );
    for &scene in &scenes {
        for &n in &sizes {
            progress.set_message(format!("{scene}, n = {n}"));
            macro_rules! cell {
                ($d:literal, $peers:ident, $frames:ident) => {{
                    let b64 = scene.generate::<$d>(n, a.seed);
                    // With --f32 ours run on f32 copies (rounded outward);
                    // the peers get those same values (as f64 for the f64
                    // peers), so every contender sees the same boxes.
                    let b32 = if a.f32 { to_f32(&b64) } else { Vec::new() };
                    let scalar = if a.f32 { "f32" } else { "f64" };
                    #[cfg(feature = "peers")]
                    let peer_boxes: Vec<Aabb<f64, $d>> = if a.f32 {
                        b32.iter()
                            .map(|b| {
                                Aabb::new(b.min().map(f64::from), b.max().map(f64::from)).expect("a valid f32 box")
                            })
                            .collect()
                    } else {
                        b64.clone()
                    };
                    if oneshot {
                        if a.f32 {
                            ctx.oneshot(scene, &b32, scalar);
                        } else {
                            ctx.oneshot(scene, &b64, scalar);
                        }
                        #[cfg(feature = "peers")]
                        {
                            // Our pairs of this cell: those of its last row,
                            // or (none of ours ran) a search now.
                            let ours = match ctx.rows.last() {
                                Some(r)
                                    if r.workload == "one-shot"
                                        && r.scene == scene.name()
                                        && r.dim == $d
                                        && r.scalar == scalar
                                        && r.n == b64.len() =>
                                {
                                    u64::from_str_radix(r.pair_hash.trim_start_matches("0x"), 16).unwrap_or(0)
                                }
                                _ => {
                                    let p = PairFinder::new(Algorithm::Auto).find(&peer_boxes).expect("valid sizes");
                                    pair_hash(p.iter().map(|p| (p.a(), p.b())))
                                }
                            };
                            let (rows, agree) = crate::peers::$peers(a, scene.name(), &peer_boxes, ours);
                            ctx.agree &= agree;
                            ctx.rows.extend(rows);
                            println!();
                        }
                    }
                    if frames && n <= a.frames_max {
                        for &w in &motions {
                            let m = match w {
                                Workload::Move(m) => m,
                                Workload::Bullet => {
                                    if a.f32 {
                                        ctx.bullet(scene, &b32, scalar);
                                    } else {
                                        ctx.bullet(scene, &b64, scalar);
                                    }
                                    continue;
                                }
                            };
                            if a.f32 {
                                ctx.frames(scene, &b32, m, scalar);
                            } else {
                                ctx.frames(scene, &b64, m, scalar);
                            }
                            #[cfg(feature = "peers")]
                            {
                                let at = Cell {
                                    workload: format!("frames {}", motion_name(&m)),
                                    scene: scene.to_string(),
                                    dim: $d,
                                    scalar,
                                    n,
                                };
                                let (rows, ok) = crate::peers::$frames(a, &at, &peer_boxes, m);
                                ctx.agree &= ok;
                                ctx.rows.extend(rows);
                                println!();
                            }
                        }
                    }
                }};
            }
            match a.dim {
                2 => cell!(2, oneshot2, frames2),
                _ => cell!(3, oneshot3, frames3),
            }
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    let fits = fits(&ctx.rows);
    if !fits.is_empty() {
        println!("growth exponents (least squares of ln time against ln n):");
        for f in &fits {
            println!(
                "  {:<24} {:<14} {}D {:<26} {:>6.3}  ({} sizes)",
                f.workload, f.scene, f.dim, f.algorithm, f.exponent, f.points
            );
        }
        println!();
    }
    let versus = versus(&ctx.rows);
    if !versus.is_empty() {
        println!(
            "versus the peers (our fastest against the fastest peer in each cell, by median; ratio = peer time / ours, \
             of the medians and of the means):"
        );
        for v in &versus {
            println!(
                "  {:<20} {:<14} {}D n = {:<8} {:<16} {:>10.4} ms  {:<22} {:>10.4} ms  {:>7.2}x  (means {:.2}x)",
                v.workload, v.scene, v.dim, v.n, v.ours, v.ours_ms, v.peer, v.peer_ms, v.ratio, v.mean_ratio
            );
        }
        println!();
    }
    if let Some(path) = &a.csv {
        let mut out = String::from(
            "workload,scene,dim,scalar,n,algorithm,median_ms,low_ms,high_ms,mean_ms,runs,pairs,ns_per_box,bytes_per_box,pair_hash,note\n",
        );
        for r in &ctx.rows {
            out.push_str(&format!(
                "{},{},{},{},{},{},{:.6},{:.6},{:.6},{:.6},{},{},{:.3},{:.3},{},{}\n",
                r.workload,
                r.scene,
                r.dim,
                r.scalar,
                r.n,
                r.algorithm,
                r.median_ms,
                r.low_ms,
                r.high_ms,
                r.mean_ms,
                r.runs,
                r.pairs,
                r.ns_per_box,
                r.bytes_per_box,
                r.pair_hash,
                csv_field(&r.note)
            ));
        }
        std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &a.json {
        #[derive(Serialize)]
        struct Report<'r> {
            rows: &'r [Row],
            fits: &'r [Fit],
            versus: &'r [Versus],
            agree: bool,
            seconds: f64,
        }
        let report = Report {
            rows: &ctx.rows,
            fits: &fits,
            versus: &versus,
            agree: ctx.agree,
            seconds: started.elapsed().as_secs_f64(),
        };
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(dir) = &a.plot {
        let files = crate::plot::write(dir, &ctx.rows, &fits)?;
        println!("{} plots in {}", files.len(), dir.display());
    }
    println!(
        "{} rows in {:.1} s; {}",
        ctx.rows.len(),
        started.elapsed().as_secs_f64(),
        if ctx.agree { "every algorithm found the same pairs in every cell" } else { "MISMATCHES (see above)" }
    );
    if ctx.agree {
        Ok(())
    } else {
        Err("the algorithms disagree (see above)".into())
    }
}
