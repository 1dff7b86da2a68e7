//! The model that the persistent broad phases are checked against, and the
//! operation sequences that drive them: shared by the property-based tests
//! (`tests/persistent.rs`, which generate sequences with proptest) and the
//! coverage-guided fuzzer (`fuzz/`, which decodes them from bytes with
//! [`decode`]). After every update the pair set must equal brute force over
//! the model, and the events must be exactly the difference with the
//! previous set, in the documented order. Every mutation is followed by
//! `validate()`; rejected calls must leave everything as it was; queries are
//! checked against the model.

use std::collections::{BTreeMap, BTreeSet};

use broadphase::persistent::{BruteForce, DynamicTree, GridIndex, HashGrid, IncrementalSap, MultiSap, TreeIndex};
use broadphase::{
    Aabb, BodyKind, BroadPhase, Filter, PairEvent, PairPolicy, Proxy, ProxyError, ProxyId, Ray, Scalar, Sphere,
};

pub type Pairs = BTreeSet<(ProxyId, ProxyId)>;

/// The reference: what is live, and the pairs brute force finds.
pub struct Model<S: Scalar, const D: usize> {
    pub live: BTreeMap<ProxyId, Proxy<S, D>>,
    pub dead: Vec<ProxyId>,
    pub policy: PairPolicy,
}

impl<S: Scalar, const D: usize> Model<S, D> {
    pub fn pairs(&self) -> Pairs {
        let v: Vec<_> = self.live.iter().collect();
        let mut out = Pairs::new();
        for (i, (ia, a)) in v.iter().enumerate() {
            for (ib, b) in &v[i + 1..] {
                if a.aabb.overlaps(&b.aabb) && self.policy.allows(a.kind, b.kind) && a.filter.accepts(&b.filter) {
                    out.insert((**ia, **ib));
                }
            }
        }
        out
    }
}

/// One broad phase under test with its model.
pub struct Checker<S: Scalar, const D: usize> {
    pub bp: Box<dyn BroadPhase<S, D>>,
    pub model: Model<S, D>,
    pub prev: Pairs,
    pub events: Vec<PairEvent>,
    pub updates: usize,
}

impl<S: Scalar, const D: usize> Checker<S, D> {
    pub fn new(bp: Box<dyn BroadPhase<S, D>>, policy: PairPolicy) -> Self {
        Self {
            bp,
            model: Model { live: BTreeMap::new(), dead: Vec::new(), policy },
            prev: Pairs::new(),
            events: Vec::new(),
            updates: 0,
        }
    }

    pub fn validate(&self, what: &str) {
        if let Err(e) = self.bp.validate() {
            panic!("{}: invalid after {what}: {e}", self.bp.name());
        }
        assert_eq!(self.bp.len(), self.model.live.len(), "{}: len after {what}", self.bp.name());
    }

    pub fn ids(&self) -> Vec<ProxyId> {
        self.model.live.keys().copied().collect()
    }

    pub fn insert(&mut self, p: Proxy<S, D>) -> ProxyId {
        let id = self.bp.insert(p).unwrap();
        assert!(self.model.live.insert(id, p).is_none(), "{}: id {id} reused while live", self.bp.name());
        self.validate("insert");
        id
    }

    pub fn insert_batch(&mut self, ps: &[Proxy<S, D>]) {
        let mut ids = Vec::new();
        self.bp.insert_batch(ps, &mut ids).unwrap();
        assert_eq!(ids.len(), ps.len());
        for (id, p) in ids.into_iter().zip(ps) {
            assert!(self.model.live.insert(id, *p).is_none());
        }
        self.validate("insert_batch");
    }

    pub fn set_aabb(&mut self, id: ProxyId, b: Aabb<S, D>) {
        self.bp.set_aabb(id, b).unwrap();
        self.model.live.get_mut(&id).unwrap().aabb = b;
        assert_eq!(self.bp.aabb(id).unwrap(), b);
        self.validate("set_aabb");
    }

    /// A move with a velocity hint; a NaN velocity must be refused and
    /// change nothing.
    pub fn glide(&mut self, id: ProxyId, b: Aabb<S, D>, v: [S; D], bad: bool) {
        let name = self.bp.name();
        if bad {
            let mut nan = v;
            nan[D - 1] = S::from_f64(f64::NAN);
            assert!(
                matches!(self.bp.set_aabb_with_velocity(id, b, nan), Err(ProxyError::BadVelocity { .. })),
                "{name}: NaN velocity accepted"
            );
            assert_eq!(self.bp.aabb(id).unwrap(), self.model.live[&id].aabb, "{name}: refused move applied");
            self.validate("refused glide");
            return;
        }
        self.bp.set_aabb_with_velocity(id, b, v).unwrap();
        self.model.live.get_mut(&id).unwrap().aabb = b;
        self.validate("set_aabb_with_velocity");
    }

    pub fn set_aabb_batch(&mut self, moves: &[(ProxyId, Aabb<S, D>)]) {
        self.bp.set_aabb_batch(moves).unwrap();
        for (id, b) in moves {
            self.model.live.get_mut(id).unwrap().aabb = *b;
        }
        self.validate("set_aabb_batch");
    }

    pub fn set_filter(&mut self, id: ProxyId, f: Filter) {
        self.bp.set_filter(id, f).unwrap();
        self.model.live.get_mut(&id).unwrap().filter = f;
        self.validate("set_filter");
    }

    pub fn remove(&mut self, id: ProxyId) {
        self.bp.remove(id).unwrap();
        self.model.live.remove(&id).unwrap();
        self.model.dead.push(id);
        self.validate("remove");
    }

    pub fn remove_batch(&mut self, ids: &[ProxyId]) {
        let distinct: BTreeSet<_> = ids.iter().collect();
        let r = self.bp.remove_batch(ids);
        if distinct.len() < ids.len() {
            assert!(matches!(r, Err(ProxyError::Repeated { .. })), "{}: repeated ids accepted", self.bp.name());
            self.validate("rejected remove_batch");
            return;
        }
        r.unwrap();
        for id in ids {
            self.model.live.remove(id).unwrap();
            self.model.dead.push(*id);
        }
        self.validate("remove_batch");
    }

    /// Calls with removed ids fail with `Stale` and change nothing.
    pub fn stale(&mut self, which: usize, b: Aabb<S, D>) {
        if self.model.dead.is_empty() {
            return;
        }
        let id = self.model.dead[which % self.model.dead.len()];
        let name = self.bp.name();
        assert_eq!(self.bp.remove(id), Err(ProxyError::Stale { id }), "{name}: double remove");
        assert_eq!(self.bp.set_aabb(id, b), Err(ProxyError::Stale { id }), "{name}");
        assert_eq!(self.bp.set_filter(id, Filter::ALL), Err(ProxyError::Stale { id }), "{name}");
        assert!(self.bp.aabb(id).is_err() && self.bp.user_data(id).is_err());
        // A batch with one stale id is refused whole.
        if let Some(&live) = self.model.live.keys().next() {
            assert!(self.bp.remove_batch(&[live, id]).is_err());
            assert!(self.bp.set_aabb_batch(&[(live, b), (id, b)]).is_err());
            assert_eq!(self.bp.aabb(live).unwrap(), self.model.live[&live].aabb, "{name}: refused batch moved a proxy");
        }
        self.validate("refused calls");
    }

    /// Applies the frame and checks pairs and events against the model.
    pub fn update(&mut self) {
        self.events.clear();
        self.bp.update(&mut self.events);
        self.validate("update");
        let name = self.bp.name();
        let now = self.model.pairs();
        let got: Pairs = self.bp.pairs().iter().map(|p| (p.a(), p.b())).collect();
        assert_eq!(got.len(), self.bp.pairs().len(), "{name}: a pair listed twice");
        assert_eq!(got, now, "{name}: pair set differs from brute force after update {}", self.updates);
        let ends = self.prev.difference(&now).map(|&(a, b)| (0, a, b));
        let begins = now.difference(&self.prev).map(|&(a, b)| (1, a, b));
        let want: Vec<_> = ends.chain(begins).collect();
        let have: Vec<_> = self
            .events
            .iter()
            .map(|e| match e {
                PairEvent::End(p) => (0, p.a(), p.b()),
                PairEvent::Begin(p) => (1, p.a(), p.b()),
            })
            .collect();
        assert_eq!(have, want, "{name}: events of update {}", self.updates);
        self.prev = now;
        self.updates += 1;
    }

    /// The ids a query reports (sorted) against the live proxies `keep`
    /// accepts.
    pub fn compare_query(
        &self,
        what: &str,
        query: impl Fn(&mut dyn FnMut(ProxyId) -> bool),
        keep: impl Fn(&Proxy<S, D>) -> bool,
    ) -> usize {
        let mut got = Vec::new();
        query(&mut |id| {
            got.push(id);
            true
        });
        got.sort();
        let want: Vec<_> = self.model.live.iter().filter(|(_, p)| keep(p)).map(|(id, _)| *id).collect();
        assert_eq!(got, want, "{}: {what}", self.bp.name());
        want.len()
    }

    /// Queries right after an update, against the model.
    pub fn queries(&self, region: Aabb<S, D>, filter: Filter, ray: Option<Ray<S, D>>) {
        let name = self.bp.name();
        let accepted = |p: &Proxy<S, D>| p.filter.accepts(&filter);
        let found = self.compare_query(
            "query_aabb",
            |f| self.bp.query_aabb(&region, filter, f),
            |p| accepted(p) && p.aabb.overlaps(&region),
        );
        // Early stop: exactly one call when `f` returns false at once.
        let mut calls = 0;
        self.bp.query_aabb(&region, filter, &mut |_| {
            calls += 1;
            false
        });
        assert_eq!(calls, found.min(1), "{name}: query_aabb did not stop");

        let point = *region.min();
        self.compare_query(
            "query_point",
            |f| self.bp.query_point(point, filter, f),
            |p| accepted(p) && p.aabb.contains_point(&point),
        );

        let r = region.extent(0).min(4.0);
        let sphere = Sphere::new(point, S::from_f64(r)).unwrap();
        // Squared distance from the point to the box after scaling by a
        // power of two (so tiny and huge coordinates neither underflow nor
        // overflow), against the squared radius.
        let rr = S::from_f64(r).to_f64();
        let hits = |b: &Aabb<S, D>| {
            let gaps: Vec<f64> = (0..D)
                .map(|k| {
                    let c = point[k].to_f64();
                    if c < b.min()[k].to_f64() {
                        b.min()[k].to_f64() - c
                    } else if c > b.max()[k].to_f64() {
                        c - b.max()[k].to_f64()
                    } else {
                        0.0
                    }
                })
                .collect();
            let m = gaps.iter().fold(rr, |m, &g| m.max(g));
            if m == 0.0 {
                return true;
            }
            let e = 2f64.powi(-(m.log2().floor() as i32).clamp(-1000, 1000));
            let s2: f64 = gaps.iter().map(|g| (g * e) * (g * e)).sum();
            s2 <= (rr * e) * (rr * e)
        };
        self.compare_query(
            "query_sphere",
            |f| self.bp.query_sphere(&sphere, filter, f),
            |p| accepted(p) && hits(&p.aabb),
        );

        if let Some(ray) = ray {
            let mut all = Vec::new();
            self.bp.cast_ray_all(&ray, filter, &mut all);
            let ids: Vec<_> = all.iter().map(|h| h.id).collect::<BTreeSet<_>>().into_iter().collect();
            let want: Vec<_> = self
                .model
                .live
                .iter()
                .filter(|(_, p)| accepted(p) && slab(&ray, &p.aabb).is_some())
                .map(|(id, _)| *id)
                .collect();
            assert_eq!(
                ids,
                want,
                "{name}: cast_ray_all {ray:?} {:?}",
                self.model.live.values().map(|p| p.aabb).collect::<Vec<_>>()
            );
            for h in &all {
                assert_eq!(Some(h.fraction), slab(&ray, &self.model.live[&h.id].aabb), "{name}: fraction");
            }
            assert!(all.windows(2).all(|w| w[0].fraction <= w[1].fraction), "{name}: all hits not sorted");
            let closest = self.bp.cast_ray_closest(&ray, filter);
            assert_eq!(closest.map(|h| (h.fraction, h.id)), all.first().map(|h| (h.fraction, h.id)), "{name}: closest");
            assert_eq!(self.bp.cast_ray_any(&ray, filter), !all.is_empty(), "{name}: any");
        }
    }
}

/// The ray's entry fraction into `b`, computed independently: clip
/// `[0, max]` against each slab.
pub fn slab<S: Scalar, const D: usize>(ray: &Ray<S, D>, b: &Aabb<S, D>) -> Option<f64> {
    let mut lo = 0.0f64;
    let mut hi = ray.max_fraction();
    for k in 0..D {
        let o = ray.origin()[k].to_f64();
        let d = ray.direction()[k].to_f64();
        let (a, c) = (b.min()[k].to_f64(), b.max()[k].to_f64());
        if d == 0.0 {
            if !(a <= o && o <= c) {
                return None;
            }
            continue;
        }
        let t1 = (a - o) / d;
        let t2 = (c - o) / d;
        lo = lo.max(t1.min(t2));
        hi = hi.min(t1.max(t2));
    }
    (lo <= hi).then_some(lo)
}

// ---------------------------------------------------------------------------
// Operation sequences.

#[derive(Clone, Debug)]
/// One operation of a sequence. Proxies are named by [`Pick`]s, which
/// choose among the live ones (an operation on none is skipped).
pub enum Op {
    Insert(Spec),
    InsertBatch(Vec<Spec>),
    Move(Pick, [(i32, i32); 3]),
    Nudge(Pick, [i32; 3]),
    MoveBatch(Vec<(Pick, [i32; 3])>),
    Teleport(Pick, i32),
    Glide(Pick, [i32; 3], [i8; 3], bool),
    Remove(Pick),
    RemoveBatch(Vec<Pick>),
    SetFilter(Pick, u8, u8),
    Stale(usize),
    Update([(i32, i32); 3], u8),
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub iv: [(i32, i32); 3],
    pub kind: u8,
    pub cat: u8,
    pub mask: u8,
    pub huge: bool,
}

/// A choice among the live proxies (by index, modulo their number).
#[derive(Clone, Copy, Debug)]
pub struct Pick(pub u32);

impl Pick {
    pub fn index(&self, len: usize) -> usize {
        self.0 as usize % len
    }
}

/// Coordinates are multiples of `unit`, so boxes touch, coincide and shrink to
/// points often; `unit` varies the magnitude.
pub fn make_box<S: Scalar, const D: usize>(iv: &[(i32, i32); 3], unit: f64, offset: f64) -> Aabb<S, D> {
    let min: [S; D] = core::array::from_fn(|k| S::from_f64(offset + iv[k].0 as f64 * unit));
    let max: [S; D] = core::array::from_fn(|k| S::from_f64(offset + (iv[k].0 + iv[k].1) as f64 * unit));
    Aabb::new(min, max).unwrap()
}

pub fn filter(cat: u8, mask: u8) -> Filter {
    if mask == 7 {
        Filter::new(1 << cat, !0)
    } else {
        Filter::new(1 << cat, (mask as u64) | 0b1000)
    }
}

pub fn kind(k: u8) -> BodyKind {
    [BodyKind::Static, BodyKind::Kinematic, BodyKind::Dynamic][k as usize % 3]
}

pub fn proxy<S: Scalar, const D: usize>(s: &Spec, unit: f64, offset: f64, user: u64) -> Proxy<S, D> {
    let b = if s.huge {
        // A ground box: wide on every axis but the last.
        let mut iv = [(-40, 80); 3];
        iv[D - 1] = (s.iv[D - 1].0, 1);
        make_box(&iv, unit, offset)
    } else {
        make_box(&s.iv, unit, offset)
    };
    Proxy::new(b).kind(kind(s.kind)).filter(filter(s.cat, s.mask)).user(user)
}

pub fn run<S: Scalar, const D: usize>(ops: &[Op], unit: f64, offset: f64, policy: PairPolicy) {
    let mut checkers = vec![
        Checker::<S, D>::new(Box::new(BruteForce::<S, D>::new(policy)), policy),
        Checker::<S, D>::new(Box::new(IncrementalSap::<S, D>::new(policy)), policy),
        Checker::<S, D>::new(Box::new(HashGrid::<S, D>::new(policy)), policy),
        Checker::<S, D>::new(Box::new(DynamicTree::<S, D>::new(policy)), policy),
        Checker::<S, D>::new(Box::new(MultiSap::<S, D>::new(policy)), policy),
        // Reaches staggered per slot: other fat boxes, the same pairs.
        Checker::<S, D>::new(
            Box::new(HashGrid::<S, D>::with_index(policy, GridIndex::default().staggered(true))),
            policy,
        ),
        Checker::<S, D>::new(
            Box::new(DynamicTree::<S, D>::with_index(policy, TreeIndex::default().staggered(true))),
            policy,
        ),
    ];
    for c in &mut checkers {
        let mut user = 0u64;
        for op in ops {
            user += 1;
            let ids = c.ids();
            let pick = |i: &Pick| (!ids.is_empty()).then(|| ids[i.index(ids.len())]);
            match op {
                Op::Insert(s) => {
                    let id = c.insert(proxy(s, unit, offset, user));
                    assert_eq!(c.bp.user_data(id).unwrap(), user);
                }
                Op::InsertBatch(v) => {
                    let ps: Vec<_> = v.iter().map(|s| proxy(s, unit, offset, user)).collect();
                    c.insert_batch(&ps);
                }
                Op::Move(i, iv) => {
                    if let Some(id) = pick(i) {
                        c.set_aabb(id, make_box(iv, unit, offset));
                    }
                }
                Op::Nudge(i, d) => {
                    if let Some(id) = pick(i) {
                        let b = c.model.live[&id].aabb;
                        let min: [S; D] =
                            core::array::from_fn(|k| S::from_f64(b.min()[k].to_f64() + d[k] as f64 * unit));
                        let max: [S; D] =
                            core::array::from_fn(|k| S::from_f64(b.max()[k].to_f64() + d[k] as f64 * unit));
                        c.set_aabb(id, Aabb::new(min, max).unwrap());
                    }
                }
                Op::MoveBatch(v) => {
                    let moves: Vec<_> = v
                        .iter()
                        .filter_map(|(i, d)| {
                            let id = pick(i)?;
                            let b = c.model.live[&id].aabb;
                            let min = core::array::from_fn(|k| S::from_f64(b.min()[k].to_f64() + d[k] as f64 * unit));
                            let max = core::array::from_fn(|k| S::from_f64(b.max()[k].to_f64() + d[k] as f64 * unit));
                            Some((id, Aabb::new(min, max).unwrap()))
                        })
                        .collect();
                    c.set_aabb_batch(&moves);
                }
                Op::Glide(i, d, v, bad) => {
                    if let Some(id) = pick(i) {
                        let b = c.model.live[&id].aabb;
                        let min = core::array::from_fn(|k| S::from_f64(b.min()[k].to_f64() + d[k] as f64 * unit));
                        let max = core::array::from_fn(|k| S::from_f64(b.max()[k].to_f64() + d[k] as f64 * unit));
                        let vel = core::array::from_fn(|k| S::from_f64(v[k] as f64 * unit / 16.0));
                        c.glide(id, Aabb::new(min, max).unwrap(), vel, *bad);
                    }
                }
                Op::Teleport(i, far) => {
                    if let Some(id) = pick(i) {
                        let b = c.model.live[&id].aabb;
                        let shift = *far as f64 * 1e4 * unit;
                        let min = core::array::from_fn(|k| S::from_f64(b.min()[k].to_f64() + shift));
                        let max = core::array::from_fn(|k| S::from_f64(b.max()[k].to_f64() + shift));
                        c.set_aabb(id, Aabb::new(min, max).unwrap());
                    }
                }
                Op::Remove(i) => {
                    if let Some(id) = pick(i) {
                        c.remove(id);
                    }
                }
                Op::RemoveBatch(v) => {
                    let ids: Vec<_> = v.iter().filter_map(pick).collect();
                    c.remove_batch(&ids);
                }
                Op::SetFilter(i, cat, mask) => {
                    if let Some(id) = pick(i) {
                        c.set_filter(id, filter(*cat, *mask));
                    }
                }
                Op::Stale(w) => c.stale(*w, make_box(&[(0, 1); 3], unit, offset)),
                Op::Update(iv, f) => {
                    c.update();
                    let region = make_box(iv, unit, offset);
                    let qf = if f & 1 == 0 { Filter::ALL } else { filter(f % 3, f / 3 % 8) };
                    let o: [S; D] = core::array::from_fn(|k| S::from_f64(offset + (iv[k].0 - 3) as f64 * unit));
                    let d: [S; D] =
                        core::array::from_fn(|k| S::from_f64(((*f as i32 >> k) % 3 - 1) as f64 + 0.5 * k as f64));
                    let ray = Ray::new(o, d, if f & 2 == 0 { f64::INFINITY } else { 10.0 * unit }).ok();
                    c.queries(region, qf, ray);
                }
            }
        }
        c.update();
    }
}

/// Reads bytes as numbers in ranges, and zeros once they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// A number in `lo..lo + n`.
    fn int(&mut self, lo: i32, n: u8) -> i32 {
        lo + i32::from(self.u8() % n)
    }

    fn pick(&mut self) -> Pick {
        Pick(self.u32())
    }

    fn iv(&mut self) -> (i32, i32) {
        (self.int(-12, 24), self.int(0, 5))
    }

    fn ivs(&mut self) -> [(i32, i32); 3] {
        [self.iv(), self.iv(), self.iv()]
    }

    fn step(&mut self) -> [i32; 3] {
        [self.int(-2, 5), self.int(-2, 5), self.int(-2, 5)]
    }

    fn spec(&mut self) -> Spec {
        let iv = self.ivs();
        let (kind, cat, mask) = (self.u8() % 3, self.u8() % 3, self.u8() % 8);
        Spec { iv, kind, cat, mask, huge: self.u8().is_multiple_of(20) }
    }
}

/// An operation sequence from arbitrary bytes, in the ranges and about the
/// proportions of the property-based tests' (the fuzzer's input: every
/// byte string is a valid sequence).
pub fn decode(bytes: &[u8]) -> Vec<Op> {
    let mut b = Bytes(bytes);
    let mut ops = Vec::new();
    while !b.0.is_empty() && ops.len() < 200 {
        let op = match b.u8() % 34 {
            0..=5 => Op::Insert(b.spec()),
            6 => {
                let n = b.u8() % 12;
                Op::InsertBatch((0..n).map(|_| b.spec()).collect())
            }
            7..=10 => Op::Move(b.pick(), b.ivs()),
            11..=16 => Op::Nudge(b.pick(), b.step()),
            17 | 18 => {
                let n = b.u8() % 10;
                Op::MoveBatch((0..n).map(|_| (b.pick(), b.step())).collect())
            }
            19 => Op::Teleport(b.pick(), b.int(-3, 6)),
            20..=22 => {
                let (i, d) = (b.pick(), b.step());
                let v = [b.u8() as i8, b.u8() as i8, b.u8() as i8];
                Op::Glide(i, d, v, b.u8().is_multiple_of(10))
            }
            23..=25 => Op::Remove(b.pick()),
            26 => {
                let n = b.u8() % 5;
                Op::RemoveBatch((0..n).map(|_| b.pick()).collect())
            }
            27 | 28 => Op::SetFilter(b.pick(), b.u8() % 3, b.u8() % 8),
            29 => Op::Stale(b.u32() as usize),
            _ => Op::Update(b.ivs(), b.u8()),
        };
        ops.push(op);
    }
    ops
}

/// The settings the sequences run under (chosen by `which`): scalar,
/// dimension, unit, offset and pair policy. The property-based tests take
/// them by number (and one more of their own: 2D unit boxes at -1e39, which
/// the fuzzer lacks, as a seventh setting would remap its committed corpus).
pub fn run_setting(which: u8, ops: &[Op]) {
    let both = PairPolicy { kinematic_kinematic: true, kinematic_static: true };
    match which % 6 {
        0 => run::<f64, 3>(ops, 1.0, 0.0, PairPolicy::default()),
        1 => run::<f32, 2>(ops, 0.25, 0.0, PairPolicy { kinematic_kinematic: true, kinematic_static: false }),
        2 => run::<f32, 3>(ops, 1.0, -1.0e7, both),
        3 => run::<f64, 1>(ops, 1e29, 0.0, PairPolicy::default()),
        4 => run::<f64, 2>(ops, 1e-300, 1e-299, PairPolicy::default()),
        _ => run::<f64, 3>(ops, 1e300, 0.0, PairPolicy::default()),
    }
}
