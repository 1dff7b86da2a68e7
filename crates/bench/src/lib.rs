//! Benchmark support: adapters that run the peer crates on our boxes, so
//! that benchmarks can time them in the same run as broadphase (each pushes
//! the pairs it finds as `(i, j)` with `i < j` into a vector, the same
//! output work broadphase does), a textbook sort-and-sweep baseline, a
//! radix-sort baseline, and a memory-counting allocator.

pub mod alloc;

use broadphase::Aabb;

/// parry3d 0.31's `Bvh`: binned build, then the leaf-pair traversal of the
/// tree against itself.
pub fn parry3d_pairs(boxes: &[Aabb<f32, 3>], out: &mut Vec<(u32, u32)>) {
    use parry3d::bounding_volume::Aabb as PAabb;
    use parry3d::math::Vec3;
    use parry3d::partitioning::{Bvh, BvhBuildStrategy, BvhWorkspace};
    let leaves: Vec<PAabb> =
        boxes.iter().map(|b| PAabb::new(Vec3::from_array(*b.min()), Vec3::from_array(*b.max()))).collect();
    let bvh = Bvh::from_leaves(BvhBuildStrategy::Binned, &leaves);
    let mut ws = BvhWorkspace::default();
    bvh.traverse_bvtt_single_tree::<false>(&mut ws, &mut |a, b| out.push((a.min(b), a.max(b))));
}

/// parry2d 0.31's `Bvh`, as [`parry3d_pairs`].
pub fn parry2d_pairs(boxes: &[Aabb<f32, 2>], out: &mut Vec<(u32, u32)>) {
    use parry2d::bounding_volume::Aabb as PAabb;
    use parry2d::math::Vec2;
    use parry2d::partitioning::{Bvh, BvhBuildStrategy, BvhWorkspace};
    let leaves: Vec<PAabb> =
        boxes.iter().map(|b| PAabb::new(Vec2::from_array(*b.min()), Vec2::from_array(*b.max()))).collect();
    let bvh = Bvh::from_leaves(BvhBuildStrategy::Binned, &leaves);
    let mut ws = BvhWorkspace::default();
    bvh.traverse_bvtt_single_tree::<false>(&mut ws, &mut |a, b| out.push((a.min(b), a.max(b))));
}

/// rstar 0.14: bulk load, then one envelope query per box (keeping the
/// pairs with a larger index).
pub fn rstar_pairs<const D: usize>(boxes: &[Aabb<f64, D>], out: &mut Vec<(u32, u32)>)
where
    [f64; D]: rstar::Point<Scalar = f64>,
{
    use rstar::primitives::{GeomWithData, Rectangle};
    use rstar::{RTree, AABB};
    let items: Vec<GeomWithData<Rectangle<[f64; D]>, u32>> = boxes
        .iter()
        .enumerate()
        .map(|(i, b)| GeomWithData::new(Rectangle::from_corners(*b.min(), *b.max()), i as u32))
        .collect();
    let tree = RTree::bulk_load(items);
    for (i, b) in boxes.iter().enumerate() {
        let env = AABB::from_corners(*b.min(), *b.max());
        for hit in tree.locate_in_envelope_intersecting(env) {
            if hit.data > i as u32 {
                out.push((i as u32, hit.data));
            }
        }
    }
}

/// broccoli 6.3 (2D only): tree build, then `find_colliding_pairs`.
pub fn broccoli_pairs(boxes: &[Aabb<f32, 2>], out: &mut Vec<(u32, u32)>) {
    use broccoli::axgeom::rect;
    let mut bots: Vec<broccoli::aabb::BBox<f32, u32>> = boxes
        .iter()
        .enumerate()
        .map(|(i, b)| broccoli::bbox(rect(b.min()[0], b.max()[0], b.min()[1], b.max()[1]), i as u32))
        .collect();
    let mut tree = broccoli::Tree::new(&mut bots);
    tree.find_colliding_pairs(|a, b| {
        let (x, y) = (a.inner, b.inner);
        out.push((x.min(y), x.max(y)));
    });
}

/// The floor of any sort-based method: an LSD radix sort of keyed items
/// (32-bit key and 32-bit index packed in a `u64`, three passes of 11/11/10
/// bits), with its scratch buffer reused like a workspace.
pub fn radix_sort_keys(items: &mut Vec<u64>, scratch: &mut Vec<u64>) {
    let n = items.len();
    scratch.resize(n, 0);
    let passes = [(32u32, 11u32), (43, 11), (54, 10)];
    let mut hist = [[0usize; 2048]; 3];
    for &x in items.iter() {
        for (h, &(s, b)) in hist.iter_mut().zip(&passes) {
            h[((x >> s) & ((1 << b) - 1)) as usize] += 1;
        }
    }
    for (h, &(s, b)) in hist.iter().zip(&passes) {
        let mut off = [0usize; 2048];
        let mut sum = 0;
        for (o, &c) in off.iter_mut().zip(h.iter()) {
            *o = sum;
            sum += c;
        }
        for &x in items.iter() {
            let d = ((x >> s) & ((1 << b) - 1)) as usize;
            scratch[off[d]] = x;
            off[d] += 1;
        }
        std::mem::swap(items, scratch);
    }
}

/// parry3d 0.31's `Bvh` kept across frames, as rapier uses it: moved leaves
/// updated in place (`insert_or_update_partially`, no margin), one `refit`,
/// then the leaf-pair traversal of the tree against itself.
pub struct ParryFrames {
    bvh: parry3d::partitioning::Bvh,
    ws: parry3d::partitioning::BvhWorkspace,
}

impl ParryFrames {
    fn leaf(b: &Aabb<f32, 3>) -> parry3d::bounding_volume::Aabb {
        use parry3d::math::Vec3;
        parry3d::bounding_volume::Aabb::new(Vec3::from_array(*b.min()), Vec3::from_array(*b.max()))
    }

    /// The tree over `boxes` (leaf `i` is box `i`).
    pub fn new(boxes: &[Aabb<f32, 3>]) -> Self {
        use parry3d::partitioning::{Bvh, BvhBuildStrategy, BvhWorkspace};
        let leaves: Vec<_> = boxes.iter().map(Self::leaf).collect();
        Self { bvh: Bvh::from_leaves(BvhBuildStrategy::Binned, &leaves), ws: BvhWorkspace::default() }
    }

    /// One frame: the moved leaves, refit, all pairs; returns the pair count.
    pub fn frame(&mut self, moved: &[(u32, Aabb<f32, 3>)], out: &mut Vec<(u32, u32)>) -> usize {
        for (i, b) in moved {
            self.bvh.insert_or_update_partially(Self::leaf(b), *i, 0.0);
        }
        self.bvh.refit(&mut self.ws);
        out.clear();
        self.bvh.traverse_bvtt_single_tree::<false>(&mut self.ws, &mut |a, b| out.push((a.min(b), a.max(b))));
        out.len()
    }
}
