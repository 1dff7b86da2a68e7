//! Bad input to the library: typed errors, never a panic, nothing appended.

use broadphase::{aabbs_from_bounds, Aabb, AabbError, Algorithm, Bound, BoxError, FindError, Pair, PairFinder};

#[test]
fn invalid_boxes_are_rejected_with_the_box_and_axis() {
    let err = aabbs_from_bounds([([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), ([0.0, 0.0, 5.0], [1.0, 1.0, 4.0])]).unwrap_err();
    assert_eq!(err, BoxError { index: 1, error: AabbError::Inverted { axis: 2, min: 5.0, max: 4.0 } });
    assert_eq!(err.to_string(), "box 1: axis 2: min 5 is greater than max 4");
    assert_eq!(Aabb::<f32, 2>::point([f32::NAN, 0.0]), Err(AabbError::Nan { axis: 0, bound: Bound::Min }));
    assert!(matches!(
        Aabb::<f64, 3>::new([0.0; 3], [1.0, f64::INFINITY, 1.0]),
        Err(AabbError::Infinite { axis: 1, bound: Bound::Max, .. })
    ));
}

#[test]
fn bad_settings_are_typed_errors() {
    assert!(matches!(
        PairFinder::new(Algorithm::Grid).cell_size(f64::NAN),
        Err(FindError::InvalidParameter { name: "cell size", .. })
    ));
    assert!(PairFinder::new(Algorithm::Grid).cell_size(0.0).is_err());
    assert!(PairFinder::new(Algorithm::Grid).cell_size(-1.0).is_err());
    assert!(PairFinder::new(Algorithm::Grid).cell_size(f64::INFINITY).is_err());
    assert!(PairFinder::new(Algorithm::BoxIntersect).cutoff(1).is_err());
    assert!("quadtree".parse::<Algorithm>().is_err());
    for a in Algorithm::ALL {
        assert_eq!(a.name().parse::<Algorithm>(), Ok(a));
    }
}

#[test]
fn a_rejected_search_appends_nothing() {
    let boxes = vec![Aabb::<f64, 2>::new([0.0, 0.0], [1.0, 1.0]).unwrap(); 3];
    let mut out = vec![Pair::new(7, 9).unwrap()];
    let err = PairFinder::new(Algorithm::SortAndSweep).sweep_axis(2).find_into(&boxes, &mut out).unwrap_err();
    assert_eq!(err, FindError::AxisOutOfRange { axis: 2, dim: 2 });
    assert_eq!(out, vec![Pair::new(7, 9).unwrap()]);
    let four: Vec<Aabb<f64, 4>> = vec![Aabb::new([0.0; 4], [1.0; 4]).unwrap(); 2];
    assert_eq!(PairFinder::default().find(&four), Err(FindError::UnsupportedDimension { dim: 4 }));
    let mut cross = Vec::new();
    assert!(PairFinder::default().find_bipartite_into(&four, &four, &mut cross).is_err());
    assert!(cross.is_empty());
}

#[test]
fn fixed_sweep_axis_and_every_dimension_work() {
    let boxes: Vec<Aabb<f32, 3>> = (0..50)
        .map(|i| {
            let x = (i % 7) as f32;
            Aabb::new([x, (i / 7) as f32, 0.0], [x + 1.0, (i / 7) as f32 + 1.0, 1.0]).unwrap()
        })
        .collect();
    let expect = {
        let mut p = PairFinder::new(Algorithm::BruteForce).find(&boxes).unwrap();
        p.sort();
        p
    };
    for axis in 0..3 {
        let mut p = PairFinder::new(Algorithm::SortAndSweep).sweep_axis(axis).find(&boxes).unwrap();
        p.sort();
        assert_eq!(p, expect, "axis {axis}");
    }
}
