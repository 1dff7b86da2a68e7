//! SVG plots of a `bench` run: time against n on log-log axes per
//! algorithm, with the fitted growth exponent in the legend (as seed 000's
//! comparison plot), and a bar chart per cell at the largest n.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

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

/// Writes the plots into `dir` (created if missing); returns their paths.
pub fn write(dir: &Path, rows: &[Row], fits: &[Fit]) -> Result<Vec<PathBuf>, String> {
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
            let path = dir.join(format!("growth-{base}.svg"));
            growth(&path, &title, &in_group, &algs, fits, &workload, &scene, dim)?;
            files.push(path);
        }
        let n = *sizes.last().expect("a group has rows");
        let at_n: Vec<&Row> = in_group.iter().copied().filter(|r| r.n == n).collect();
        let path = dir.join(format!("bars-{base}-n{n}.svg"));
        bars(&path, &format!("{title}, n = {n}"), &at_n)?;
        files.push(path);
    }
    Ok(files)
}

#[allow(clippy::too_many_arguments)]
fn growth(
    path: &Path,
    title: &str,
    rows: &[&Row],
    algs: &[&str],
    fits: &[Fit],
    workload: &str,
    scene: &str,
    dim: u8,
) -> Result<(), String> {
    let positive: Vec<&&Row> = rows.iter().filter(|r| r.median_ms > 0.0).collect();
    let (nmin, nmax) = positive.iter().fold((f64::MAX, 0.0f64), |(a, b), r| (a.min(r.n as f64), b.max(r.n as f64)));
    let (tmin, tmax) = positive.iter().fold((f64::MAX, 0.0f64), |(a, b), r| (a.min(r.median_ms), b.max(r.median_ms)));
    if positive.is_empty() || nmin >= nmax {
        return Ok(());
    }
    let root = SVGBackend::new(path, (960, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((nmin / 1.3..nmax * 1.3).log_scale(), (tmin / 2.0..tmax * 2.0).log_scale())
        .map_err(err)?;
    chart.configure_mesh().x_desc("n (boxes)").y_desc("median time (ms)").draw().map_err(err)?;
    for (i, alg) in algs.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let mut pts: Vec<(f64, f64)> =
            positive.iter().filter(|r| r.algorithm == *alg).map(|r| (r.n as f64, r.median_ms)).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if pts.is_empty() {
            continue;
        }
        let exponent = fits
            .iter()
            .find(|f| f.workload == workload && f.scene == scene && f.dim == dim && f.algorithm == *alg)
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
    root.present().map_err(err)
}

fn bars(path: &Path, title: &str, rows: &[&Row]) -> Result<(), String> {
    let tmax = rows.iter().map(|r| r.median_ms).fold(0.0f64, f64::max).max(1e-6);
    let root = SVGBackend::new(path, (960, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let names: Vec<String> = rows.iter().map(|r| r.algorithm.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((0..rows.len()).into_segmented(), 0.0..tmax * 1.15)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc("median time (ms)")
        .x_labels(rows.len())
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()
        .map_err(err)?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            let color = Palette99::pick(i).to_rgba();
            Rectangle::new([(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), r.median_ms)], color.filled())
        }))
        .map_err(err)?;
    root.present().map_err(err)
}
