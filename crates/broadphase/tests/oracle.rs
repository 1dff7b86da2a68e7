//! The oracle sample: box sets whose pairs were computed by an independent
//! library (box-intersect, cross-checked with brute force and an R-tree).
//! Every algorithm must reproduce them exactly.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use broadphase::{Aabb, Pair};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/oracle")
}

/// Reads `id,min...,max...` rows; returns the boxes and their ids.
fn read_boxes<const D: usize>(name: &str) -> (Vec<Aabb<f64, D>>, Vec<u64>) {
    let text = std::fs::read_to_string(data_dir().join(format!("{name}.csv"))).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert_eq!(header.split(',').count(), 1 + 2 * D, "{name}: header {header}");
    let mut boxes = Vec::new();
    let mut ids = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split(',').collect();
        ids.push(f[0].parse().unwrap());
        let v: Vec<f64> = f[1..].iter().map(|x| x.parse().unwrap()).collect();
        boxes.push(Aabb::new(core::array::from_fn(|k| v[k]), core::array::from_fn(|k| v[D + k])).unwrap());
    }
    (boxes, ids)
}

/// The expected pairs, as indices into the box list.
fn read_pairs(name: &str, ids: &[u64]) -> Vec<Pair> {
    let index: HashMap<u64, u32> = ids.iter().enumerate().map(|(i, &id)| (id, i as u32)).collect();
    let text = std::fs::read_to_string(data_dir().join(format!("{name}.pairs"))).unwrap();
    let mut pairs: Vec<Pair> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (a, b) = l.split_once(',').unwrap();
            Pair::new(index[&a.parse().unwrap()], index[&b.parse().unwrap()]).unwrap()
        })
        .collect();
    pairs.sort_unstable();
    pairs
}

fn names(dim: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(&format!("_{dim}.csv")).map(|s| format!("{s}_{dim}"))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn oracle_2d() {
    let names = names("2d");
    assert_eq!(names.len(), 6, "{names:?}");
    for name in names {
        let (boxes, ids) = read_boxes::<2>(&name);
        let expect = read_pairs(&name, &ids);
        assert_eq!(common::reference(&boxes), expect, "{name}: brute force disagrees with the oracle");
        common::check_complete_against(&boxes, &expect, &name);
    }
}

#[test]
fn oracle_3d() {
    let names = names("3d");
    assert_eq!(names.len(), 6, "{names:?}");
    for name in names {
        let (boxes, ids) = read_boxes::<3>(&name);
        let expect = read_pairs(&name, &ids);
        assert_eq!(common::reference(&boxes), expect, "{name}: brute force disagrees with the oracle");
        common::check_complete_against(&boxes, &expect, &name);
    }
}
