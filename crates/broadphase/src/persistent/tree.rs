//! Dynamic AABB trees over fat boxes (Bullet's dbvt, Box2D's dynamic tree).
//!
//! # Idea
//!
//! Proxies are leaves of binary trees of boxes. A leaf holds a *fat* box: the
//! exact box grown by a margin and stretched along the last displacement
//! (predicted motion), so a proxy moving steadily stays inside it for many
//! frames. As in the grid, pairs whose fat boxes overlap are tracked by the
//! engine and flagged by the exact test; a proxy that moves within its fat
//! box touches no tree and finds no new pair. Only a proxy that leaves its fat
//! box is re-inserted (the move buffer is the engine's list of moved
//! proxies), and only re-inserted, inserted and re-filtered proxies query the
//! trees for candidates.
//!
//! Static proxies live in their own tree, which moving proxies query but
//! which never queries itself (static–static pairs are never reported), so a
//! large static world costs nothing per frame beyond the queries of the
//! proxies that move through it. A proxy is first held by its exact box
//! and gets its margin when it first leaves it (a static one, never: it is
//! re-inserted by its exact box), so the proxies of a world that never move
//! track no pair beyond those they are in.
//!
//! # Insertion
//!
//! A leaf descends from the root towards the child whose box grows the least
//! in surface area (the SAH-guided descent of Box2D), stopping where making
//! it a sibling is cheaper than descending. On the way back up, AVL-style
//! rotations keep the height logarithmic. A rebuild (after a frame in which
//! most proxies changed) builds both trees top-down instead, splitting at the
//! median centre of the widest axis: O(n log n) and a good tree. A batch of
//! arrivals at least half a tree's size rebuilds that tree by the Morton
//! codes of the centres (a radix sort, then splits at the middle of each
//! range's octree cell): faster to build, a little slower to query.
//!
//! Box2D v3 instead enlarges a moved leaf in place and rebuilds the marked
//! part of its moving tree once per step; built and measured here
//! (`crates/bench/results-2026-11-24.md`), it was slower on every workload
//! tried, since most proxies of the moving tree stay still and the rebuilt
//! part joins subtrees of every size: the trees re-insert.

use super::engine::morton_order;
use super::engine::{sealed::IndexImpl, Frame};
use super::marks::Marks;
use super::pairs::NIL;
use super::query::{reach, Headings, Region};
use super::store::{State, Store};
use crate::mem::HugeVec;
use crate::sort::payload;
use crate::{Aabb, BodyKind, Scalar};

/// The default margin, as a fraction of the typical box extent.
pub const DEFAULT_MARGIN: f64 = 0.1;
/// How many updates of its displacement a moving proxy's fat box
/// anticipates, by default (8 measured better than 4 in `frames`: fewer
/// re-fattenings for a few more tracked pairs along the motion).
pub const DEFAULT_PREDICT: f64 = 8.0;

/// Batches of arrivals at least this large (and half the tree's size) are
/// placed by a top-down build instead of one insertion each (under Miri,
/// 16, as the engine's `ONESHOT_MIN`).
const BULK_MIN: usize = if cfg!(miri) { 16 } else { 256 };

#[derive(Clone, Copy, Debug)]
struct Node<S: Scalar, const D: usize> {
    aabb: Aabb<S, D>,
    parent: u32,
    /// Children, or `[NIL, slot]` for a leaf.
    child: [u32; 2],
    height: u32,
}

impl<S: Scalar, const D: usize> Node<S, D> {
    #[inline]
    fn is_leaf(&self) -> bool {
        self.child[0] == NIL
    }
}

/// One binary tree of boxes.
#[derive(Clone, Debug)]
struct Tree<S: Scalar, const D: usize> {
    nodes: HugeVec<Node<S, D>>,
    root: u32,
    free: Vec<u32>,
    leaves: usize,
}

impl<S: Scalar, const D: usize> Default for Tree<S, D> {
    fn default() -> Self {
        Self { nodes: HugeVec::new(), root: NIL, free: Vec::new(), leaves: 0 }
    }
}

impl<S: Scalar, const D: usize> Tree<S, D> {
    fn alloc(&mut self, node: Node<S, D>) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() as u32 - 1
            }
        }
    }

    fn clear(&mut self) {
        self.nodes.clear();
        self.free.clear();
        self.root = NIL;
        self.leaves = 0;
    }

    #[inline]
    fn n(&self, i: u32) -> &Node<S, D> {
        &self.nodes[i as usize]
    }

    #[inline]
    fn nm(&mut self, i: u32) -> &mut Node<S, D> {
        &mut self.nodes[i as usize]
    }

    /// Inserts a leaf for `slot`; returns its node.
    fn insert(&mut self, slot: u32, aabb: Aabb<S, D>) -> u32 {
        self.leaves += 1;
        let leaf = self.alloc(Node { aabb, parent: NIL, child: [NIL, slot], height: 0 });
        if self.root == NIL {
            self.root = leaf;
            return leaf;
        }
        // Descend while a child is a cheaper place than here.
        let mut i = self.root;
        while !self.n(i).is_leaf() {
            let node = *self.n(i);
            let area = node.aabb.half_area();
            let combined = node.aabb.union(&aabb).half_area();
            let here = 2.0 * combined;
            let inherit = 2.0 * (combined - area);
            let cost = |c: u32| {
                let c = self.n(c);
                let grown = aabb.union(&c.aabb).half_area();
                inherit + if c.is_leaf() { grown } else { grown - c.aabb.half_area() }
            };
            let (c0, c1) = (cost(node.child[0]), cost(node.child[1]));
            if here < c0 && here < c1 {
                break;
            }
            i = if c0 <= c1 { node.child[0] } else { node.child[1] };
        }
        let sibling = i;
        let old_parent = self.n(sibling).parent;
        let parent = self.alloc(Node {
            aabb: aabb.union(&self.n(sibling).aabb),
            parent: old_parent,
            child: [sibling, leaf],
            height: self.n(sibling).height + 1,
        });
        self.nm(sibling).parent = parent;
        self.nm(leaf).parent = parent;
        if old_parent == NIL {
            self.root = parent;
        } else {
            let p = self.nm(old_parent);
            let side = usize::from(p.child[0] != sibling);
            p.child[side] = parent;
        }
        self.refit_up(parent);
        leaf
    }

    /// Frees node `i` (no children and no slot: a free node tells no leaf).
    fn release(&mut self, i: u32) {
        self.nm(i).child = [NIL, NIL];
        self.free.push(i);
    }

    /// Removes a leaf.
    fn remove(&mut self, leaf: u32) {
        self.leaves -= 1;
        if leaf == self.root {
            self.release(leaf);
            self.root = NIL;
            return;
        }
        let parent = self.n(leaf).parent;
        let p = *self.n(parent);
        let sibling = if p.child[0] == leaf { p.child[1] } else { p.child[0] };
        self.release(leaf);
        self.release(parent);
        let grand = p.parent;
        self.nm(sibling).parent = grand;
        if grand == NIL {
            self.root = sibling;
        } else {
            let g = self.nm(grand);
            let side = usize::from(g.child[0] != parent);
            g.child[side] = sibling;
            self.refit_up(grand);
        }
    }

    /// Walks from `i` to the root, rebalancing and refitting.
    fn refit_up(&mut self, mut i: u32) {
        while i != NIL {
            i = self.balance(i);
            let [a, b] = self.n(i).child;
            let (na, nb) = (*self.n(a), *self.n(b));
            let node = self.nm(i);
            node.height = 1 + na.height.max(nb.height);
            node.aabb = na.aabb.union(&nb.aabb);
            i = node.parent;
        }
    }

    /// An AVL rotation at `a` if its children's heights differ by more than
    /// one; returns the node now at `a`'s place.
    ///
    /// ```text
    ///        a                c            (the taller child c rises; of
    ///      /   \            /   \           its children, the taller one
    ///     b     c    ->    a     f          stays with it, the other goes
    ///          / \        / \               down to a)
    ///         f   g      b   g
    /// ```
    fn balance(&mut self, a: u32) -> u32 {
        let na = *self.n(a);
        if na.is_leaf() || na.height < 2 {
            return a;
        }
        let [b, c] = na.child;
        let diff = self.n(c).height as i64 - self.n(b).height as i64;
        if diff.abs() <= 1 {
            return a;
        }
        // `up` is the taller child, `keep` the other child of `a`; `side` is
        // where `up` hangs under `a`.
        let (up, keep, side) = if diff > 0 { (c, b, 1) } else { (b, c, 0) };
        let [f, g] = self.n(up).child;
        let (tall, short) = if self.n(f).height > self.n(g).height { (f, g) } else { (g, f) };
        // `up` takes `a`'s place.
        let parent = na.parent;
        self.nm(up).parent = parent;
        if parent == NIL {
            self.root = up;
        } else {
            let p = self.nm(parent);
            let s = usize::from(p.child[0] != a);
            p.child[s] = up;
        }
        // `a` keeps `keep` and takes `short` where `up` was.
        let mut ac = [NIL; 2];
        ac[1 - side] = keep;
        ac[side] = short;
        self.nm(short).parent = a;
        self.nm(a).child = ac;
        self.nm(a).parent = up;
        let (nk, ns) = (*self.n(keep), *self.n(short));
        {
            let node = self.nm(a);
            node.aabb = nk.aabb.union(&ns.aabb);
            node.height = 1 + nk.height.max(ns.height);
        }
        // `up` holds `a` and `tall`.
        self.nm(up).child = [a, tall];
        let (na2, nt) = (*self.n(a), *self.n(tall));
        let node = self.nm(up);
        node.aabb = na2.aabb.union(&nt.aabb);
        node.height = 1 + na2.height.max(nt.height);
        up
    }

    /// Appends every leaf as (slot, box).
    fn leaves_into(&self, out: &mut Vec<(u32, Aabb<S, D>)>) {
        if self.root == NIL {
            return;
        }
        let mut stack = vec![self.root];
        while let Some(i) = stack.pop() {
            let n = self.n(i);
            if n.is_leaf() {
                out.push((n.child[1], n.aabb));
            } else {
                stack.extend_from_slice(&n.child);
            }
        }
    }

    /// Builds the tree top-down over `items` (slot, box), returning the
    /// leaf node of each item in `leaf_of`: split by Morton codes
    /// ([`build_coded`](Self::build_coded)).
    ///
    /// PERF: median splits of the widest axis (a selection per node, which
    /// `build_range` still makes for ties) built the trees of 1e5 uniform
    /// boxes in 14-17 ms, the codes in 4.2-4.8 ms. The first incremental
    /// frame after one-shot ones (a level load) rebuilds the tree: 27-30 ms
    /// before -> 14-16 ms with this and `PairCache::add_all`. The frames
    /// after it were as fast on either tree (10% of 1e5 moving, `frames`
    /// alone, 300 frames, four alternated rounds: medians 1.02-1.11 ms with
    /// median splits, 1.06-1.11 with codes; means 2.30-2.44 and 2.33-2.41).
    fn build(&mut self, items: &[(u32, Aabb<S, D>)], leaf_of: &mut [u32]) {
        self.clear();
        if items.is_empty() {
            return;
        }
        self.leaves = items.len();
        self.nodes.reserve(2 * items.len());
        // PERF: the centers worked out once, carried with each item's
        // position: the splits compare plain numbers instead of two boxes'
        // centers, worked out anew for every comparison.
        let center = |b: &Aabb<S, D>| -> [f64; D] { core::array::from_fn(|a| b.center(a)) };
        let centers: Vec<[f64; D]> = items.iter().map(|(_, b)| center(b)).collect();
        // The items sorted by the Morton code of their centres (quantised
        // over the centres' bounds).
        let (mut lo, mut hi) = ([f64::INFINITY; D], [f64::NEG_INFINITY; D]);
        for c in &centers {
            for k in 0..D {
                lo[k] = lo[k].min(c[k]);
                hi[k] = hi[k].max(c[k]);
            }
        }
        let bits = (32 / D.max(1)).min(16) as u32;
        let keys = morton_order(centers.iter().copied(), lo, hi, bits);
        let codes: Vec<u32> = keys.iter().map(|&k| (k >> 32) as u32).collect();
        let mut keyed_items: Vec<([f64; D], u32)> = keys
            .iter()
            .map(|&k| {
                let i = payload(k);
                (centers[i as usize], i)
            })
            .collect();
        self.root = self.build_coded(&codes, &mut keyed_items, items, NIL, leaf_of);
    }

    /// The subtree over `keyed` (centers, and positions in `items`), sorted
    /// by their Morton `codes`: each range is split where its highest
    /// differing bit changes, the middle of the range's cell of the
    /// implicit octree (quadtree in 2D), with no comparison sort. A range
    /// whose codes are all equal (a cluster finer than the codes, or
    /// centres crushed together by a far outlier) is split at the median
    /// centre of its widest axis instead ([`build_range`](Self::build_range)).
    fn build_coded(
        &mut self,
        codes: &[u32],
        keyed: &mut [([f64; D], u32)],
        items: &[(u32, Aabb<S, D>)],
        parent: u32,
        leaf_of: &mut [u32],
    ) -> u32 {
        let diff = codes[0] ^ codes[codes.len() - 1];
        if diff == 0 {
            return self.build_range(keyed, items, parent, leaf_of);
        }
        let bit = 1u32 << (31 - diff.leading_zeros());
        // The codes share the bits above `bit` and are sorted: those
        // without it come first, and both sides are non-empty.
        let mid = codes.partition_point(|&c| c & bit == 0);
        let me = self.alloc(Node { aabb: items[keyed[0].1 as usize].1, parent, child: [NIL, NIL], height: 0 });
        let (left, right) = keyed.split_at_mut(mid);
        let a = self.build_coded(&codes[..mid], left, items, me, leaf_of);
        let b = self.build_coded(&codes[mid..], right, items, me, leaf_of);
        let (na, nb) = (*self.n(a), *self.n(b));
        let node = self.nm(me);
        node.child = [a, b];
        node.aabb = na.aabb.union(&nb.aabb);
        node.height = 1 + na.height.max(nb.height);
        me
    }

    /// The subtree over `keyed` (centers, and positions in `items`).
    fn build_range(
        &mut self,
        keyed: &mut [([f64; D], u32)],
        items: &[(u32, Aabb<S, D>)],
        parent: u32,
        leaf_of: &mut [u32],
    ) -> u32 {
        if keyed.len() == 1 {
            let (slot, aabb) = items[keyed[0].1 as usize];
            let i = self.alloc(Node { aabb, parent, child: [NIL, slot], height: 0 });
            leaf_of[slot as usize] = i;
            return i;
        }
        let mut lo = [f64::INFINITY; D];
        let mut hi = [f64::NEG_INFINITY; D];
        for (c, _) in keyed.iter() {
            for k in 0..D {
                lo[k] = lo[k].min(c[k]);
                hi[k] = hi[k].max(c[k]);
            }
        }
        let axis = (0..D).max_by(|&x, &y| (hi[x] - lo[x]).total_cmp(&(hi[y] - lo[y]))).unwrap_or(0);
        let mid = keyed.len() / 2;
        keyed.select_nth_unstable_by(mid, |x, y| x.0[axis].total_cmp(&y.0[axis]));
        let me = self.alloc(Node { aabb: items[keyed[0].1 as usize].1, parent, child: [NIL, NIL], height: 0 });
        let (left, right) = keyed.split_at_mut(mid);
        let a = self.build_range(left, items, me, leaf_of);
        let b = self.build_range(right, items, me, leaf_of);
        let (na, nb) = (*self.n(a), *self.n(b));
        let node = self.nm(me);
        node.child = [a, b];
        node.aabb = na.aabb.union(&nb.aabb);
        node.height = 1 + na.height.max(nb.height);
        me
    }

    /// Calls `f(slot, box)` for each leaf whose box meets `test`'s region,
    /// until `f` returns `false`; returns `false` if stopped.
    fn query(
        &self,
        meets: &impl Fn(&Aabb<S, D>) -> bool,
        stack: &mut Vec<u32>,
        f: &mut dyn FnMut(u32, &Aabb<S, D>) -> bool,
    ) -> bool {
        if self.root == NIL {
            return true;
        }
        stack.clear();
        stack.push(self.root);
        while let Some(i) = stack.pop() {
            let node = self.n(i);
            if !meets(&node.aabb) {
                continue;
            }
            if node.is_leaf() {
                if !f(node.child[1], &node.aabb) {
                    return false;
                }
            } else {
                stack.push(node.child[0]);
                stack.push(node.child[1]);
            }
        }
        true
    }

    /// Checks links, heights, boxes and balance; returns the leaves seen.
    fn validate(&self, name: &str) -> Result<Vec<(u32, u32)>, String> {
        let mut leaves = Vec::new();
        if self.root == NIL {
            return Ok(leaves);
        }
        if self.n(self.root).parent != NIL {
            return Err(format!("{name} tree: the root has a parent"));
        }
        let mut stack = vec![self.root];
        while let Some(i) = stack.pop() {
            let node = self.n(i);
            if node.is_leaf() {
                if node.height != 0 {
                    return Err(format!("{name} tree: leaf {i} has height {}", node.height));
                }
                leaves.push((node.child[1], i));
                continue;
            }
            let [a, b] = node.child;
            let (na, nb) = (self.n(a), self.n(b));
            if na.parent != i || nb.parent != i {
                return Err(format!("{name} tree: node {i}'s children do not point back"));
            }
            if node.height != 1 + na.height.max(nb.height) {
                return Err(format!("{name} tree: node {i} has a wrong height"));
            }
            if node.aabb != na.aabb.union(&nb.aabb) {
                return Err(format!("{name} tree: node {i}'s box is not its children's union"));
            }
            stack.push(a);
            stack.push(b);
        }
        if leaves.len() != self.leaves {
            return Err(format!("{name} tree: {} leaves, counted {}", leaves.len(), self.leaves));
        }
        // The rotations keep the height logarithmic (an AVL tree's height is
        // below 1.45 log2(n + 2)); allow a little slack for the single
        // rotations.
        let bound = 2.0 * ((leaves.len() + 2) as f64).log2() + 2.0;
        let h = self.n(self.root).height as f64;
        if h > bound {
            return Err(format!("{name} tree: height {h} for {} leaves (bound {bound:.1})", leaves.len()));
        }
        Ok(leaves)
    }
}

/// The index of [`DynamicTree`](super::DynamicTree): a tree of static
/// proxies and a tree of moving ones.
#[derive(Clone, Debug)]
pub struct TreeIndex<S: Scalar, const D: usize> {
    margin_ratio: f64,
    predict: f64,
    /// Whether reaches are scaled per slot (see [`TreeIndex::staggered`]).
    stagger: bool,
    margin: f64,
    trees: [Tree<S, D>; 2],
    /// Leaf node of each indexed slot (in the tree its kind picks).
    leaf: HugeVec<u32>,
    /// The slots whose fat box changed in the last update.
    changed: Marks,
    refat: Vec<u32>,
    /// The fat boxes the re-inserted proxies (the head of `refat`) had
    /// before this update.
    was: Vec<Aabb<S, D>>,
    /// The steady-motion rule's headings.
    headings: Headings<D>,
    items: Vec<(u32, Aabb<S, D>)>,
    stack: Vec<u32>,
}

impl<S: Scalar, const D: usize> Default for TreeIndex<S, D> {
    fn default() -> Self {
        Self::new(DEFAULT_MARGIN)
    }
}

/// The tree of static proxies (the other holds the moving ones).
const STATIC_TREE: usize = 0;

#[inline]
fn tree_of(kind: BodyKind) -> usize {
    usize::from(kind != BodyKind::Static)
}

impl<S: Scalar, const D: usize> TreeIndex<S, D> {
    /// An empty index whose fat boxes are grown by `ratio` times the typical
    /// box extent (default [`DEFAULT_MARGIN`]), clamped to `[0, 4]`.
    pub fn new(ratio: f64) -> Self {
        let ratio = if ratio.is_nan() { DEFAULT_MARGIN } else { ratio.clamp(0.0, 4.0) };
        Self {
            margin_ratio: ratio,
            predict: DEFAULT_PREDICT,
            stagger: false,
            margin: f64::NAN,
            trees: [Tree::default(), Tree::default()],
            leaf: HugeVec::new(),
            changed: Marks::default(),
            refat: Vec::new(),
            was: Vec::new(),
            headings: Headings::default(),
            items: Vec::new(),
            stack: Vec::new(),
        }
    }

    /// The same index whose moving proxies' fat boxes reach `frames`
    /// updates of their displacement ahead (default [`DEFAULT_PREDICT`]).
    /// Clamped to `[0, 64]` (NaN counts as the default).
    pub fn with_prediction(mut self, frames: f64) -> Self {
        self.predict = if frames.is_nan() { DEFAULT_PREDICT } else { frames.clamp(0.0, 64.0) };
        self
    }

    /// The same index with each moving proxy's reach scaled per slot, as
    /// [`GridIndex::staggered`](super::GridIndex::staggered) does (off by
    /// default). Measured in `frames` as there (two runs each way): the
    /// worst frame 41-46 -> 11 ms, the median 1.7-1.9 -> 4.2 ms, the mean
    /// 3.3-3.6 -> 4.6-5.0 ms.
    pub fn staggered(mut self, on: bool) -> Self {
        self.stagger = on;
        self
    }

    fn choose(&mut self, store: &Store<S, D>, slots: impl Iterator<Item = u32>) {
        if let Some(z) = store.sizes(slots) {
            self.margin = if z.q90.is_finite() { self.margin_ratio * z.q90 } else { 0.0 };
        }
    }

    /// The box a proxy is first held by (arriving, or at a rebuild): its
    /// exact box. Only when it leaves it is it re-inserted with a margin and
    /// a reach along its motion, so a proxy that never moves tracks no pair
    /// beyond those it is in; one that moves pays one more re-insertion, at
    /// its first move.
    fn fresh(b: &Aabb<S, D>) -> Aabb<S, D> {
        *b
    }

    fn ensure(&mut self, slots: usize) {
        if self.leaf.len() < slots {
            self.leaf.resize(slots, NIL);
        }
    }

    #[inline]
    fn fat_of(&self, store: &Store<S, D>, s: u32) -> &Aabb<S, D> {
        &self.trees[tree_of(store.kind[s as usize])].n(self.leaf[s as usize]).aabb
    }

    fn add(&mut self, store: &Store<S, D>, s: u32, motion: Option<[f64; D]>) {
        let b = &store.aabb[s as usize];
        let t = tree_of(store.kind[s as usize]);
        let fat = match motion {
            Some(v) if t != STATIC_TREE => {
                let predict = reach(s, self.predict, self.stagger);
                self.headings.fatten(s, b, v, self.margin, predict)
            }
            _ => Self::fresh(b),
        };
        self.leaf[s as usize] = self.trees[t].insert(s, fat);
        self.changed.mark(s);
    }

    fn take(&mut self, store: &Store<S, D>, s: u32) {
        self.trees[tree_of(store.kind[s as usize])].remove(self.leaf[s as usize]);
        self.leaf[s as usize] = NIL;
    }

    /// Appends `(s, t)` for every other indexed `t` whose fat box overlaps
    /// that of `s`, leaving out, for a re-inserted `s` (`was`: its fat box
    /// before this update), the `t` not re-inserted in this update whose
    /// fat box overlaps `was`: that pair is tracked already, if allowed
    /// (every allowed pair of overlapping held boxes is, before an update).
    fn candidates(
        &self,
        store: &Store<S, D>,
        s: u32,
        was: Option<&Aabb<S, D>>,
        stack: &mut Vec<u32>,
        out: &mut Vec<(u32, u32)>,
    ) {
        let fat = *self.fat_of(store, s);
        let meets = |b: &Aabb<S, D>| b.overlaps(&fat);
        let changed = &self.changed;
        let mut push = |t: u32, b: &Aabb<S, D>| {
            let old = was.is_some_and(|w| w.overlaps(b) && !changed.has(t));
            if t != s && !old {
                out.push((s, t));
            }
            true
        };
        self.trees[1].query(&meets, stack, &mut push);
        if store.kind[s as usize] != BodyKind::Static {
            self.trees[0].query(&meets, stack, &mut push);
        }
    }
}

impl<S: Scalar, const D: usize> IndexImpl<S, D> for TreeIndex<S, D> {
    const NAME: &'static str = "dynamic-tree";
    const ONESHOT: bool = true;
    /// A rebuild makes each leaf's box the exact box (`fresh`), and its queries are cheap.
    const OLD_PAIRS_SHARE: Option<usize> = Some(super::engine::OLD_PAIRS_SHARE);
    /// A re-fattened proxy leaves its tree and enters it again, dearer than
    /// a grid's re-filing: 10% of 1e5 unit boxes moving 0.2 and 0.3 a
    /// frame (about one proxy in 150 and in 100 re-fattened) took 6.3 and
    /// 9.2 ms a frame (means, `frames` alone) against some 4 ms one-shot.
    const FAST_SHARE: usize = 160;

    fn update(&mut self, store: &Store<S, D>, frame: &Frame<S, D>, out: &mut Vec<(u32, u32)>) {
        self.changed.clear();
        self.ensure(store.slots());
        if self.margin.is_nan() {
            self.choose(store, frame.inserted.iter().copied());
        }
        for &s in &frame.removed {
            self.take(store, s);
        }
        let mut refat = core::mem::take(&mut self.refat);
        refat.clear();
        let mut was = core::mem::take(&mut self.was);
        was.clear();
        for (j, &(s, _)) in frame.moved.iter().enumerate() {
            let fat = *self.fat_of(store, s);
            if !fat.contains(&store.aabb[s as usize]) {
                self.take(store, s);
                self.add(store, s, Some(frame.velocity(j, store)));
                refat.push(s);
                was.push(fat);
            }
        }
        // PERF: a tree receiving a batch at least half its size is built
        // again top-down over its leaves (their fat boxes kept as they are)
        // and the arrivals, instead of taking them one SAH insertion at a
        // time (level streaming: 1e5 arrivals). The build goes by Morton
        // codes: 1e5 arrivals into 1e6 static proxies (uniform 3D `f32`),
        // the insert frame 139-144 -> 131-135 ms, three alternated runs.
        let mut arrivals = [0usize; 2];
        for &s in &frame.inserted {
            arrivals[tree_of(store.kind[s as usize])] += 1;
        }
        let bulk = [0, 1].map(|t| arrivals[t] >= BULK_MIN && arrivals[t] * 2 >= self.trees[t].leaves);
        let mut items = core::mem::take(&mut self.items);
        for (t, &many) in bulk.iter().enumerate() {
            if many {
                items.clear();
                for &s in frame.inserted.iter().filter(|&&s| tree_of(store.kind[s as usize]) == t) {
                    items.push((s, Self::fresh(&store.aabb[s as usize])));
                    self.changed.mark(s);
                }
                self.trees[t].leaves_into(&mut items);
                let mut leaf = core::mem::take(&mut self.leaf);
                self.trees[t].build(&items, &mut leaf);
                self.leaf = leaf;
            }
        }
        self.items = items;
        for &s in frame.inserted.iter().filter(|&&s| !bulk[tree_of(store.kind[s as usize])]) {
            self.add(store, s, None);
        }
        if frame.inserted_candidates {
            refat.extend_from_slice(&frame.inserted);
        }
        refat.extend_from_slice(&frame.refiltered);
        let mut stack = core::mem::take(&mut self.stack);
        // The re-inserted proxies query after all of them are in place, so
        // that a pair of two of them is seen with both new boxes (and not
        // left out: both count as re-inserted).
        for (k, &s) in refat.iter().enumerate() {
            self.candidates(store, s, was.get(k), &mut stack, out);
        }
        self.stack = stack;
        self.refat = refat;
        self.was = was;
    }

    fn tracks(&self, store: &Store<S, D>, s: u32, t: u32) -> bool {
        self.fat_of(store, s).overlaps(self.fat_of(store, t))
    }

    fn box_changed(&self, s: u32) -> bool {
        self.changed.has(s)
    }

    fn tracked_box(&self, store: &Store<S, D>, s: u32) -> Aabb<S, D> {
        *self.fat_of(store, s)
    }

    /// PERF: in slot order (so that the pairs found through the held boxes
    /// are tracked in that order with no sort), each slot's leaf loaded 16
    /// slots ahead of it (the leaf numbers are read in order). 1e5 arrivals
    /// into 1e6 static proxies (`FRAMES_INSERT=1e6 frames --n 1e5 --only
    /// tree`, four rounds alternated), against a pass over the node arrays
    /// in memory order and a sort of the pairs found: the stream 49-51 ->
    /// 47-47.5 ms, the tracking 15-18 -> 11.5-14 ms, the insert 88-92 ->
    /// 79-85 ms. (Without the loads ahead, the slots' leaves at random took
    /// the stream to 88-96 ms.)
    fn each_held(&self, store: &Store<S, D>, f: &mut dyn FnMut(u32, &Aabb<S, D>)) {
        const AHEAD: usize = 16;
        let n = store.slots();
        for s in 0..n {
            let t = s + AHEAD;
            if let Some(&leaf) = self.leaf.get(t).filter(|_| t < n) {
                if let Some(node) = self.trees[tree_of(store.kind[t])].nodes.get(leaf as usize) {
                    crate::sweep::prefetch(node);
                }
            }
            if store.meta[s].state == State::Live {
                f(s as u32, self.fat_of(store, s as u32));
            }
        }
    }

    fn empty_like(&self) -> Self {
        Self::new(self.margin_ratio).with_prediction(self.predict).staggered(self.stagger)
    }

    fn rebuild(&mut self, store: &Store<S, D>) {
        self.changed.clear();
        self.ensure(store.slots());
        let live = || (0..store.slots() as u32).filter(|&s| store.meta[s as usize].state == State::Live);
        self.choose(store, live());
        let mut items = core::mem::take(&mut self.items);
        for t in 0..2 {
            items.clear();
            items.extend(
                live()
                    .filter(|&s| tree_of(store.kind[s as usize]) == t)
                    .map(|s| (s, Self::fresh(&store.aabb[s as usize]))),
            );
            let mut leaf = core::mem::take(&mut self.leaf);
            self.trees[t].build(&items, &mut leaf);
            self.leaf = leaf;
        }
        for s in live() {
            self.changed.mark(s);
        }
        self.items = items;
    }

    fn query(&self, store: &Store<S, D>, region: &Region<D>, f: &mut dyn FnMut(u32) -> bool) {
        let meets = |b: &Aabb<S, D>| region.overlaps(b);
        let mut stack = Vec::with_capacity(64);
        let mut g = |s: u32, _: &Aabb<S, D>| !store.indexed(s) || f(s);
        if self.trees[1].query(&meets, &mut stack, &mut g) {
            self.trees[0].query(&meets, &mut stack, &mut g);
        }
    }

    fn validate(&self, store: &Store<S, D>) -> Result<(), String> {
        let mut seen = 0;
        for (t, name) in [(0, "static"), (1, "moving")] {
            for (slot, node) in self.trees[t].validate(name)? {
                seen += 1;
                let i = slot as usize;
                if i >= store.slots() || !store.indexed(slot) {
                    return Err(format!("{name} tree: leaf of slot {slot}, not indexed"));
                }
                if tree_of(store.kind[i]) != t || self.leaf[i] != node {
                    return Err(format!("{name} tree: slot {slot} is in the wrong tree or leaf"));
                }
                if !self.trees[t].n(node).aabb.contains(&store.aabb[i]) {
                    return Err(format!("{name} tree: slot {slot}'s fat box does not contain its box"));
                }
            }
        }
        let indexed = (0..store.slots() as u32).filter(|&s| store.indexed(s)).count();
        if seen != indexed {
            return Err(format!("trees hold {seen} leaves, {indexed} proxies are indexed"));
        }
        Ok(())
    }

    fn release_scratch(&mut self) {
        self.items = Vec::new();
        self.refat = Vec::new();
        self.was = Vec::new();
        self.stack = Vec::new();
    }

    fn memory(&self) -> usize {
        use core::mem::size_of;
        self.trees.iter().map(|t| t.nodes.capacity() * size_of::<Node<S, D>>() + t.free.capacity() * 4).sum::<usize>()
            + (self.leaf.capacity() + self.refat.capacity()) * 4
            + self.changed.memory()
            + self.headings.memory()
            + self.items.capacity() * size_of::<(u32, Aabb<S, D>)>()
            + self.was.capacity() * size_of::<Aabb<S, D>>()
    }
}
