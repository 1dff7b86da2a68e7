//! `broadphase pairs FILE`.

use std::io::{Read, Write};
use std::time::Instant;

use broadphase::{Aabb, Pair, PairFinder, Report, Scalar};

use crate::csv::{self, Boxes};
use crate::{with_threads, PairsArgs};

pub fn run(a: &PairsArgs) -> Result<(), String> {
    let t0 = Instant::now();
    let input = read_input(&a.file)?;
    let boxes = csv::parse(&input, a.threads != 1).map_err(|e| {
        if a.file.as_os_str() == "-" {
            format!("<stdin>: {e}")
        } else {
            format!("{}: {e}", a.file.display())
        }
    })?;
    drop(input);
    let read = t0.elapsed();
    let finder = PairFinder::new(a.algorithm).parallel(a.threads != 1);
    let t1 = Instant::now();
    let (report, mut pairs) = match &boxes {
        Boxes::Two(b, ids) => with_threads(a.threads, || find(&finder, b, ids))?,
        Boxes::Three(b, ids) => with_threads(a.threads, || find(&finder, b, ids))?,
    }
    .map_err(|e| e.to_string())?;
    let found = t1.elapsed();
    let t2 = Instant::now();
    if a.sorted {
        pairs.sort_unstable();
    }
    let sorted = t2.elapsed();
    let t3 = Instant::now();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let written = if a.count { writeln!(out, "{}", pairs.len()) } else { write_pairs(&pairs, &mut out) }
        .and_then(|_| out.flush());
    if let Err(e) = written {
        // A closed pipe (`| head`) is not an error worth a message.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(format!("writing the pairs: {e}"));
        }
    }
    if a.stats {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        eprintln!(
            "boxes: {} ({}D)\nalgorithm: {} (asked: {})\nthreads: {}\npairs: {}\nread: {:.3} ms\nfind: {:.3} ms ({:.1} ns/box)\nsort: {:.3} ms\nwrite: {:.3} ms",
            boxes.len(),
            boxes.dim(),
            report.algorithm,
            a.algorithm,
            if a.threads == 0 { rayon::current_num_threads() } else { a.threads },
            pairs.len(),
            ms(read),
            ms(found),
            found.as_secs_f64() * 1e9 / boxes.len().max(1) as f64,
            ms(sorted),
            ms(t3.elapsed()),
        );
    }
    Ok(())
}

fn read_input(path: &std::path::Path) -> Result<Vec<u8>, String> {
    if path.as_os_str() == "-" {
        let mut v = Vec::new();
        std::io::stdin().lock().read_to_end(&mut v).map_err(|e| format!("<stdin>: {e}"))?;
        Ok(v)
    } else {
        std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// The pairs as `(id_a, id_b)` with `id_a < id_b`.
fn find<S: Scalar, const D: usize>(
    finder: &PairFinder,
    boxes: &[Aabb<S, D>],
    ids: &[i64],
) -> Result<(Report, Vec<(i64, i64)>), broadphase::FindError> {
    let mut pairs: Vec<Pair> = Vec::new();
    let report = finder.find_into(boxes, &mut pairs)?;
    let out = pairs
        .iter()
        .map(|p| {
            let (x, y) = (ids[p.a() as usize], ids[p.b() as usize]);
            (x.min(y), x.max(y))
        })
        .collect();
    Ok((report, out))
}

fn write_pairs(pairs: &[(i64, i64)], out: &mut impl Write) -> std::io::Result<()> {
    let mut a = itoa::Buffer::new();
    let mut b = itoa::Buffer::new();
    let mut line = Vec::with_capacity(48);
    for &(x, y) in pairs {
        line.clear();
        line.extend_from_slice(a.format(x).as_bytes());
        line.push(b',');
        line.extend_from_slice(b.format(y).as_bytes());
        line.push(b'\n');
        out.write_all(&line)?;
    }
    Ok(())
}
