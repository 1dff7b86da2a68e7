//! Benchmark support: adapters that run the peer crates on our boxes, so
//! that benchmarks can time them in the same run as broadphase (each pushes
//! the pairs it finds as `(i, j)` with `i < j` into a vector, the same
//! output work broadphase does), a textbook sort-and-sweep baseline, a
//! radix-sort baseline, and a memory-counting allocator.

pub mod alloc;

use broadphase::{Aabb, BroadPhase, PairEvent, Proxy, ProxyId, Scalar};

/// One of broadphase's persistent broad phases driven as the per-frame
/// benchmarks drive it (the `frames` binary, the criterion bench `frames`):
/// every box inserted in one batch, then one update; per frame, the moved
/// boxes' ids looked up and their boxes set in one batch, then one update.
pub struct OurFrames<S: Scalar, const D: usize> {
    pub bp: Box<dyn BroadPhase<S, D>>,
    /// The id of box `i`.
    pub ids: Vec<ProxyId>,
    /// The last update's events.
    pub events: Vec<PairEvent>,
    batch: Vec<(ProxyId, Aabb<S, D>)>,
}

impl<S: Scalar, const D: usize> OurFrames<S, D> {
    pub fn new(mut bp: Box<dyn BroadPhase<S, D>>, boxes: &[Aabb<S, D>]) -> Self {
        let mut ids = Vec::new();
        let proxies: Vec<_> = boxes.iter().map(|b| Proxy::new(*b)).collect();
        bp.insert_batch(&proxies, &mut ids).expect("valid boxes");
        let mut events = Vec::new();
        bp.update(&mut events);
        Self { bp, ids, events, batch: Vec::new() }
    }

    /// One frame: the moves (`(index, new box)`) in one batch, then the
    /// update; returns the pair count.
    pub fn frame(&mut self, moves: &[(u32, Aabb<S, D>)]) -> usize {
        self.batch.clear();
        self.batch.extend(moves.iter().map(|(i, b)| (self.ids[*i as usize], *b)));
        self.bp.set_aabb_batch(&self.batch).expect("live ids");
        self.events.clear();
        self.bp.update(&mut self.events);
        self.bp.pairs().len()
    }
}

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
/// (32-bit key and 32-bit index packed in a `u64`), three passes of 11/11/10
/// bits, or four of 8 bits from 2^19 items on (faster there, as in the
/// library's own sort), with its scratch buffer reused like a workspace.
/// Built as the library's serial sort is (constant digits, `u32` offsets,
/// unchecked stores), and without its skipping of constant digits, so
/// that it is no slower than the sorts it is the floor of.
pub fn radix_sort_keys(items: &mut Vec<u64>, scratch: &mut Vec<u64>) {
    if items.len() >= 1 << 19 {
        lsd::<8, 4>(items, scratch);
    } else {
        lsd::<11, 3>(items, scratch);
    }
}

fn lsd<const BITS: u32, const P: usize>(items: &mut Vec<u64>, scratch: &mut Vec<u64>) {
    let n = items.len();
    assert!(n < u32::MAX as usize);
    scratch.resize(n, 0);
    let mask = (1u64 << BITS) - 1;
    let mut hist = [[0u32; 2048]; P];
    for &x in items.iter() {
        for (p, h) in hist.iter_mut().enumerate() {
            h[((x >> (32 + BITS as usize * p)) & mask) as usize] += 1;
        }
    }
    let mut off = [0u32; 2048];
    for (p, h) in hist.iter().enumerate() {
        let shift = 32 + BITS as usize * p;
        let mut sum = 0;
        for (o, &c) in off.iter_mut().zip(h.iter()) {
            *o = sum;
            sum += c;
        }
        let out = scratch.as_mut_ptr();
        for &x in items.iter() {
            let o = &mut off[((x >> shift) & mask) as usize];
            // SAFETY: the offsets of digit `d` run over its own range of
            // `0..n`, `h[d]` long (the items are those counted), and
            // `scratch` is `n` long.
            unsafe { out.add(*o as usize).write(x) };
            *o += 1;
        }
        std::mem::swap(items, scratch);
    }
}

/// parry's `Bvh` kept across frames, as rapier uses it: moved leaves
/// updated in place (`insert_or_update_partially`, no margin), one `refit`,
/// then the leaf-pair traversal of the tree against itself (all pairs, every
/// frame: parry keeps no pair set). Made by `optimized`, it also runs
/// `optimize_incremental` before the refit, as rapier's `BroadPhaseBvh` does
/// by default (`BvhOptimizationStrategy::SubtreeOptimizer`: a few subtrees
/// rebuilt each frame, so that the tree does not decay as the leaves move);
/// made by `new`, it does not (the definition of the baseline).
macro_rules! parry_frames {
    ($name:ident, $crate_:ident, $d:literal, $vec:ident) => {
        #[doc = concat!("`", stringify!($crate_), "`'s `Bvh` per frame (see the module's notes).")]
        pub struct $name {
            bvh: $crate_::partitioning::Bvh,
            ws: $crate_::partitioning::BvhWorkspace,
            out: Vec<(u32, u32)>,
            optimize: bool,
        }

        impl $name {
            fn leaf(b: &Aabb<f32, $d>) -> $crate_::bounding_volume::Aabb {
                use $crate_::math::$vec;
                $crate_::bounding_volume::Aabb::new($vec::from_array(*b.min()), $vec::from_array(*b.max()))
            }

            /// The tree over `boxes` (leaf `i` is box `i`).
            pub fn new(boxes: &[Aabb<f32, $d>]) -> Self {
                use $crate_::partitioning::{Bvh, BvhBuildStrategy, BvhWorkspace};
                let leaves: Vec<_> = boxes.iter().map(Self::leaf).collect();
                Self {
                    bvh: Bvh::from_leaves(BvhBuildStrategy::Binned, &leaves),
                    ws: BvhWorkspace::default(),
                    out: Vec::new(),
                    optimize: false,
                }
            }

            /// The tree over `boxes`, optimized incrementally every frame
            /// (rapier's default).
            pub fn optimized(boxes: &[Aabb<f32, $d>]) -> Self {
                Self { optimize: true, ..Self::new(boxes) }
            }

            /// One frame: the moved leaves, refit, all pairs; returns the pair count.
            pub fn frame(&mut self, moved: &[(u32, Aabb<f32, $d>)], out: &mut Vec<(u32, u32)>) -> usize {
                for (i, b) in moved {
                    self.bvh.insert_or_update_partially(Self::leaf(b), *i, 0.0);
                }
                if self.optimize {
                    // As rapier: optimize first, then refit (which also
                    // reorders the nodes depth-first).
                    self.bvh.optimize_incremental(&mut self.ws);
                }
                self.bvh.refit(&mut self.ws);
                out.clear();
                self.bvh.traverse_bvtt_single_tree::<false>(&mut self.ws, &mut |a, b| out.push((a.min(b), a.max(b))));
                out.len()
            }
        }

        impl PeerFrames<f32, $d> for $name {
            fn frame(&mut self, moved: &[(u32, Aabb<f32, $d>)]) {
                let mut out = std::mem::take(&mut self.out);
                $name::frame(self, moved, &mut out);
                self.out = out;
            }

            fn pairs(&self, out: &mut Vec<(u32, u32)>) {
                out.extend_from_slice(&self.out);
            }
        }
    };
}

parry_frames!(ParryFrames, parry3d, 3, Vec3);
parry_frames!(ParryFrames2, parry2d, 2, Vec2);

/// The `bvh` crate (0.12, single-threaded build): SAH build, then one
/// overlap traversal per box (keeping the pairs with a larger index; the
/// recursive `traverse`, which allocates its result, since the iterator's
/// fixed 32-deep stack can overflow).
pub fn bvh_pairs<const D: usize>(boxes: &[Aabb<f32, D>], out: &mut Vec<(u32, u32)>) {
    let mut shapes = BvhShape::all(boxes);
    let tree = bvh::bvh::Bvh::build(&mut shapes);
    for (i, s) in shapes.iter().enumerate() {
        for hit in tree.traverse(&s.aabb, &shapes) {
            if hit.index > i as u32 {
                out.push((i as u32, hit.index));
            }
        }
    }
}

/// A box as the `bvh` crate stores it: its bounds, its index, its leaf.
struct BvhShape<const D: usize> {
    aabb: bvh::aabb::Aabb<f32, D>,
    index: u32,
    node: usize,
}

impl<const D: usize> BvhShape<D> {
    fn bounds(b: &Aabb<f32, D>) -> bvh::aabb::Aabb<f32, D> {
        bvh::aabb::Aabb::with_bounds(nalgebra::Point::from(*b.min()), nalgebra::Point::from(*b.max()))
    }

    fn all(boxes: &[Aabb<f32, D>]) -> Vec<Self> {
        boxes.iter().enumerate().map(|(i, b)| Self { aabb: Self::bounds(b), index: i as u32, node: 0 }).collect()
    }
}

impl<const D: usize> bvh::aabb::Bounded<f32, D> for BvhShape<D> {
    fn aabb(&self) -> bvh::aabb::Aabb<f32, D> {
        self.aabb
    }
}

impl<const D: usize> bvh::bounding_hierarchy::BHShape<f32, D> for BvhShape<D> {
    fn set_bh_node_index(&mut self, node: usize) {
        self.node = node;
    }

    fn bh_node_index(&self) -> usize {
        self.node
    }
}

/// A peer kept across frames: the moved boxes go in, the pair set comes
/// out. None of the peers reports begin / end events.
pub trait PeerFrames<S: broadphase::Scalar, const D: usize> {
    /// Applies the moves (`(index, new box)`) and brings the pairs up to date.
    fn frame(&mut self, moved: &[(u32, Aabb<S, D>)]);
    /// The current pairs as `(i, j)`, `i < j`, appended to `out`.
    fn pairs(&self, out: &mut Vec<(u32, u32)>);
}

/// The pair set a user keeps beside a spatial index that answers box
/// queries but keeps no pairs (rstar, bvh): per box, its partners. Each
/// frame the moved boxes' old pairs are dropped and their queries add the
/// new ones, so the cost follows what moved.
pub struct KeptPairs {
    partners: Vec<Vec<u32>>,
    moved: Vec<bool>,
    hits: Vec<u32>,
}

impl KeptPairs {
    /// The pairs of `n` boxes, filled by querying every box.
    pub fn new(n: usize, mut query: impl FnMut(u32, &mut Vec<u32>)) -> Self {
        let mut k = Self { partners: vec![Vec::new(); n], moved: vec![false; n], hits: Vec::new() };
        for i in 0..n as u32 {
            k.hits.clear();
            query(i, &mut k.hits);
            for &j in &k.hits {
                if j > i {
                    k.partners[i as usize].push(j);
                    k.partners[j as usize].push(i);
                }
            }
        }
        k
    }

    /// One frame: `query(i, hits)` lists the boxes that box `i` (already
    /// moved in the index) overlaps.
    pub fn refresh(&mut self, moved: &[u32], mut query: impl FnMut(u32, &mut Vec<u32>)) {
        for &i in moved {
            self.moved[i as usize] = true;
            for j in std::mem::take(&mut self.partners[i as usize]) {
                let list = &mut self.partners[j as usize];
                if let Some(p) = list.iter().position(|&x| x == i) {
                    list.swap_remove(p);
                }
            }
        }
        for &i in moved {
            self.hits.clear();
            query(i, &mut self.hits);
            for &j in &self.hits {
                // A pair of two moved boxes is added by the first of them.
                if j != i && !(self.moved[j as usize] && j < i) {
                    self.partners[i as usize].push(j);
                    self.partners[j as usize].push(i);
                }
            }
        }
        for &i in moved {
            self.moved[i as usize] = false;
        }
    }

    /// The pairs as `(i, j)`, `i < j`.
    pub fn pairs(&self, out: &mut Vec<(u32, u32)>) {
        for (i, list) in self.partners.iter().enumerate() {
            out.extend(list.iter().filter(|&&j| j as usize > i).map(|&j| (i as u32, j)));
        }
    }
}

/// rstar kept across frames: each moved box removed and inserted again,
/// then queried, its pairs kept in a [`KeptPairs`].
pub struct RstarFrames<const D: usize>
where
    [f64; D]: rstar::Point<Scalar = f64>,
{
    tree: rstar::RTree<rstar::primitives::GeomWithData<rstar::primitives::Rectangle<[f64; D]>, u32>>,
    boxes: Vec<Aabb<f64, D>>,
    kept: KeptPairs,
    moved: Vec<u32>,
}

type RstarItem<const D: usize> = rstar::primitives::GeomWithData<rstar::primitives::Rectangle<[f64; D]>, u32>;

fn rstar_item<const D: usize>(b: &Aabb<f64, D>, i: u32) -> RstarItem<D>
where
    [f64; D]: rstar::Point<Scalar = f64>,
{
    rstar::primitives::GeomWithData::new(rstar::primitives::Rectangle::from_corners(*b.min(), *b.max()), i)
}

fn rstar_query<const D: usize>(tree: &rstar::RTree<RstarItem<D>>, b: &Aabb<f64, D>, hits: &mut Vec<u32>)
where
    [f64; D]: rstar::Point<Scalar = f64>,
{
    let env = rstar::AABB::from_corners(*b.min(), *b.max());
    hits.extend(tree.locate_in_envelope_intersecting(env).map(|h| h.data));
}

impl<const D: usize> RstarFrames<D>
where
    [f64; D]: rstar::Point<Scalar = f64>,
{
    /// Bulk load and the first pair set.
    pub fn new(boxes: &[Aabb<f64, D>]) -> Self {
        let items = boxes.iter().enumerate().map(|(i, b)| rstar_item(b, i as u32)).collect();
        let tree = rstar::RTree::bulk_load(items);
        let kept = KeptPairs::new(boxes.len(), |i, hits| rstar_query(&tree, &boxes[i as usize], hits));
        Self { tree, boxes: boxes.to_vec(), kept, moved: Vec::new() }
    }
}

impl<const D: usize> PeerFrames<f64, D> for RstarFrames<D>
where
    [f64; D]: rstar::Point<Scalar = f64>,
{
    fn frame(&mut self, moved: &[(u32, Aabb<f64, D>)]) {
        self.moved.clear();
        for &(i, b) in moved {
            let old = rstar_item(&self.boxes[i as usize], i);
            self.tree.remove(&old).expect("the box is in the tree");
            self.tree.insert(rstar_item(&b, i));
            self.boxes[i as usize] = b;
            self.moved.push(i);
        }
        let (tree, boxes) = (&self.tree, &self.boxes);
        self.kept.refresh(&self.moved, |i, hits| rstar_query(tree, &boxes[i as usize], hits));
    }

    fn pairs(&self, out: &mut Vec<(u32, u32)>) {
        self.kept.pairs(out);
    }
}

/// The `bvh` crate kept across frames: moved boxes re-placed with
/// `update_shapes` (remove and add each leaf), then queried, their pairs
/// kept in a [`KeptPairs`].
pub struct BvhFrames<const D: usize> {
    tree: bvh::bvh::Bvh<f32, D>,
    shapes: Vec<BvhShape<D>>,
    kept: KeptPairs,
    moved: Vec<u32>,
    changed: Vec<usize>,
}

fn bvh_query<const D: usize>(tree: &bvh::bvh::Bvh<f32, D>, shapes: &[BvhShape<D>], i: u32, hits: &mut Vec<u32>) {
    // `traverse`, not `traverse_iterator`: the iterator's fixed stack of 32
    // overflows (panics) on the deeper trees that `update_shapes` grows.
    hits.extend(tree.traverse(&shapes[i as usize].aabb, shapes).into_iter().map(|s| s.index));
}

impl<const D: usize> BvhFrames<D> {
    /// Build and the first pair set.
    pub fn new(boxes: &[Aabb<f32, D>]) -> Self {
        let mut shapes = BvhShape::all(boxes);
        let tree = bvh::bvh::Bvh::build(&mut shapes);
        let kept = KeptPairs::new(boxes.len(), |i, hits| bvh_query(&tree, &shapes, i, hits));
        Self { tree, shapes, kept, moved: Vec::new(), changed: Vec::new() }
    }
}

impl<const D: usize> PeerFrames<f32, D> for BvhFrames<D> {
    fn frame(&mut self, moved: &[(u32, Aabb<f32, D>)]) {
        self.moved.clear();
        self.changed.clear();
        for &(i, b) in moved {
            self.shapes[i as usize].aabb = BvhShape::bounds(&b);
            self.moved.push(i);
            self.changed.push(i as usize);
        }
        self.tree.update_shapes(&self.changed, &mut self.shapes);
        let (tree, shapes) = (&self.tree, &self.shapes);
        self.kept.refresh(&self.moved, |i, hits| bvh_query(tree, shapes, i, hits));
    }

    fn pairs(&self, out: &mut Vec<(u32, u32)>) {
        self.kept.pairs(out);
    }
}

/// broccoli (2D) per frame: it has no update, so the tree is built again
/// over the current boxes and all pairs found.
pub struct BroccoliFrames {
    boxes: Vec<Aabb<f32, 2>>,
    out: Vec<(u32, u32)>,
}

impl BroccoliFrames {
    /// The boxes; the first frame builds the first tree.
    pub fn new(boxes: &[Aabb<f32, 2>]) -> Self {
        let mut out = Vec::new();
        broccoli_pairs(boxes, &mut out);
        Self { boxes: boxes.to_vec(), out }
    }
}

impl PeerFrames<f32, 2> for BroccoliFrames {
    fn frame(&mut self, moved: &[(u32, Aabb<f32, 2>)]) {
        for &(i, b) in moved {
            self.boxes[i as usize] = b;
        }
        self.out.clear();
        broccoli_pairs(&self.boxes, &mut self.out);
    }

    fn pairs(&self, out: &mut Vec<(u32, u32)>) {
        out.extend_from_slice(&self.out);
    }
}
