use std::time::Instant;
fn lcg(s: &mut u64) -> u64 { *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); *s >> 11 }
fn radix(items: &mut Vec<u64>) {
    let n = items.len();
    let mut scratch = vec![0u64; n];
    let passes = [(32u32, 11u32), (43, 11), (54, 10)];
    let mut hist = vec![[0u32; 2048]; 3];
    for &x in items.iter() { for (h, &(s, b)) in hist.iter_mut().zip(&passes) { h[((x >> s) & ((1 << b) - 1)) as usize] += 1; } }
    let mut src_is_items = true;
    for (h, &(s, b)) in hist.iter().zip(&passes) {
        let mut off = [0usize; 2048]; let mut sum = 0; for (o, &c) in off.iter_mut().zip(h.iter()) { *o = sum; sum += c as usize; }
        let (src, dst) = if src_is_items { (&items[..], &mut scratch[..]) } else { (&scratch[..], &mut items[..]) };
        for &x in src { let d = ((x >> s) & ((1 << b) - 1)) as usize; dst[off[d]] = x; off[d] += 1; }
        src_is_items = !src_is_items;
    }
    if !src_is_items { std::mem::swap(items, &mut scratch); }
}
fn radix32(items: &mut Vec<u32>) {
    let n = items.len();
    let mut scratch = vec![0u32; n];
    let passes = [(0u32, 11u32), (11, 11), (22, 10)];
    let mut hist = vec![[0u32; 2048]; 3];
    for &x in items.iter() { for (h, &(s, b)) in hist.iter_mut().zip(&passes) { h[((x >> s) & ((1 << b) - 1)) as usize] += 1; } }
    let mut src_is_items = true;
    for (h, &(s, b)) in hist.iter().zip(&passes) {
        let mut off = [0usize; 2048]; let mut sum = 0; for (o, &c) in off.iter_mut().zip(h.iter()) { *o = sum; sum += c as usize; }
        let (src, dst) = if src_is_items { (&items[..], &mut scratch[..]) } else { (&scratch[..], &mut items[..]) };
        for &x in src { let d = ((x >> s) & ((1 << b) - 1)) as usize; dst[off[d]] = x; off[d] += 1; }
        src_is_items = !src_is_items;
    }
    if !src_is_items { std::mem::swap(items, &mut scratch); }
}
fn main() {
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(1_000_000);
    let mut s = 1;
    let keys: Vec<u32> = (0..n).map(|_| lcg(&mut s) as u32).collect();
    for _ in 0..5 {
        let mut v: Vec<u64> = keys.iter().enumerate().map(|(i, &k)| (k as u64) << 32 | i as u64).collect();
        let t = Instant::now(); radix(&mut v); let a = t.elapsed();
        let mut w = keys.clone();
        let t = Instant::now(); radix32(&mut w); let b = t.elapsed();
        let mut x = keys.clone();
        let t = Instant::now(); x.sort_unstable(); let c = t.elapsed();
        println!("n={n} radix(key,idx) {:.2} ms   radix u32 {:.2} ms   sort_unstable u32 {:.2} ms", a.as_secs_f64()*1e3, b.as_secs_f64()*1e3, c.as_secs_f64()*1e3);
    }
}
