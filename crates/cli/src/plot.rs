//! Plots of a `bench` run, each as SVG and PNG: time against n on log-log
//! axes per algorithm, with the fitted growth exponent in the legend (as
//! seed 000's comparison plot), and a bar chart per cell at the largest n.
//! Text is set in DejaVu Sans, embedded in the binary (the `dejavu` crate),
//! so PNGs render the same on machines without fonts.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::bench::{Fit, Row};

/// A file-name-safe form of a label.
fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect()
}

/// The (workload, scene, dim) groups of the rows, in first-seen order.
fn groups(rows: &[Row]) -> Vec<(String, String, u8)> {
    let mut out: Vec<(String, String, u8)> = Vec::new();
    for r in rows {
        let g = (r.workload.clone(), r.scene.clone(), r.dim);
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

fn err(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

/// Registers the embedded font as plotters' "sans-serif" (once).
fn register_font() -> Result<(), String> {
    static RESULT: OnceLock<Result<(), String>> = OnceLock::new();
    RESULT
        .get_or_init(|| {
            plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
                .map_err(|_| "plot: the embedded font did not load".to_string())
        })
        .clone()
}

/// Image sizes in pixels.
const GROWTH_SIZE: (u32, u32) = (960, 640);
const BARS_SIZE: (u32, u32) = (960, 560);

/// One growth plot: the rows of a (workload, scene, dim) group.
struct Growth<'a> {
    title: &'a str,
    rows: &'a [&'a Row],
    algs: &'a [&'a str],
    fits: &'a [Fit],
    workload: &'a str,
    scene: &'a str,
    dim: u8,
}

/// Writes the plots into `dir` (created if missing); returns their paths.
pub fn write(dir: &Path, rows: &[Row], fits: &[Fit]) -> Result<Vec<PathBuf>, String> {
    register_font()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for (workload, scene, dim) in groups(rows) {
        let in_group: Vec<&Row> =
            rows.iter().filter(|r| r.workload == workload && r.scene == scene && r.dim == dim).collect();
        let mut algs: Vec<&str> = Vec::new();
        for r in &in_group {
            if !algs.contains(&r.algorithm.as_str()) {
                algs.push(&r.algorithm);
            }
        }
        let title = format!("{workload}, {scene}, {dim}D");
        let base = slug(&format!("{workload}-{scene}-{dim}d"));
        let sizes: Vec<usize> = {
            let mut v: Vec<usize> = in_group.iter().map(|r| r.n).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        if sizes.len() >= 2 {
            let g =
                Growth { title: &title, rows: &in_group, algs: &algs, fits, workload: &workload, scene: &scene, dim };
            let svg = dir.join(format!("growth-{base}.svg"));
            let png = svg.with_extension("png");
            if growth(SVGBackend::new(&svg, GROWTH_SIZE).into_drawing_area(), &g)? {
                growth(BitMapBackend::new(&png, GROWTH_SIZE).into_drawing_area(), &g)?;
                files.extend([svg, png]);
            }
        }
        let n = *sizes.last().expect("a group has rows");
        let at_n: Vec<&Row> = in_group.iter().copied().filter(|r| r.n == n).collect();
        let caption = format!("{title}, n = {n}");
        let svg = dir.join(format!("bars-{base}-n{n}.svg"));
        let png = svg.with_extension("png");
        bars(SVGBackend::new(&svg, BARS_SIZE).into_drawing_area(), &caption, &at_n)?;
        bars(BitMapBackend::new(&png, BARS_SIZE).into_drawing_area(), &caption, &at_n)?;
        files.extend([svg, png]);
    }
    Ok(files)
}

/// Draws a growth plot; false (nothing drawn) when the rows span no range.
fn growth<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, g: &Growth<'_>) -> Result<bool, String> {
    let positive: Vec<&&Row> = g.rows.iter().filter(|r| r.median_ms > 0.0).collect();
    let (nmin, nmax) = positive.iter().fold((f64::MAX, 0.0f64), |(a, b), r| (a.min(r.n as f64), b.max(r.n as f64)));
    let (tmin, tmax) = positive.iter().fold((f64::MAX, 0.0f64), |(a, b), r| (a.min(r.median_ms), b.max(r.median_ms)));
    if positive.is_empty() || nmin >= nmax {
        return Ok(false);
    }
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(g.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (nmin / 1.3..nmax * 1.3).log_scale(),
            (10f64.powf((tmin / 2.0).log10().floor())..tmax * 3.0).log_scale(),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("n (boxes)")
        .y_desc("median time (ms)")
        .x_label_formatter(&decade)
        .y_label_formatter(&decade)
        .draw()
        .map_err(err)?;
    for (i, alg) in g.algs.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let mut pts: Vec<(f64, f64)> =
            positive.iter().filter(|r| r.algorithm == *alg).map(|r| (r.n as f64, r.median_ms)).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if pts.is_empty() {
            continue;
        }
        let exponent = g
            .fits
            .iter()
            .find(|f| f.workload == g.workload && f.scene == g.scene && f.dim == g.dim && f.algorithm == *alg)
            .map_or(String::new(), |f| format!(" (n^{:.2})", f.exponent));
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(err)?
            .label(format!("{alg}{exponent}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled()))).map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(true)
}

/// Tick labels of a log axis: powers of ten only, written short.
fn decade(v: &f64) -> String {
    let e = v.log10();
    if (e - e.round()).abs() > 1e-6 {
        return String::new();
    }
    let e = e.round() as i32;
    match e {
        0..=3 => format!("{}", 10f64.powi(e)),
        -3..=-1 => format!("{}", 10f64.powi(e)),
        _ => format!("1e{e}"),
    }
}

/// Horizontal bars of median time on a log axis, one per algorithm, each
/// labelled with its time.
fn bars<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, rows: &[&Row]) -> Result<(), String> {
    let positive: Vec<&&Row> = rows.iter().filter(|r| r.median_ms > 0.0).collect();
    if positive.is_empty() {
        return Ok(());
    }
    let tmax = positive.iter().map(|r| r.median_ms).fold(0.0f64, f64::max);
    let tmin = positive.iter().map(|r| r.median_ms).fold(f64::MAX, f64::min);
    let (lo, hi) = (10f64.powf((tmin / 2.0).log10().floor()), 10f64.powf((tmax * 4.0).log10().ceil()));
    root.fill(&WHITE).map_err(err)?;
    let names: Vec<String> = positive.iter().map(|r| r.algorithm.clone()).collect();
    let last = positive.len() - 1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(200)
        .build_cartesian_2d((lo..hi).log_scale(), (0..last).into_segmented())
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("median time (ms), log scale")
        .x_label_formatter(&decade)
        .y_labels(positive.len())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(positive.iter().enumerate().map(|(i, r)| {
            let color = Palette99::pick(i).to_rgba();
            let mut bar = Rectangle::new(
                [(lo, SegmentValue::Exact(i)), (r.median_ms, SegmentValue::Exact(i + 1))],
                color.filled(),
            );
            bar.set_margin(4, 4, 0, 0);
            bar
        }))
        .map_err(err)?;
    chart
        .draw_series(positive.iter().enumerate().map(|(i, r)| {
            Text::new(
                format!(" {:.3} ms", r.median_ms),
                (r.median_ms, SegmentValue::CenterOf(i)),
                TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
            )
        }))
        .map_err(err)?;
    root.present().map_err(err)
}
