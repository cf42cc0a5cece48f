// rustdwarf: Rust workload built WITHOUT frame pointers (-C force-frame-pointers=no),
// recorded with `perf record --call-graph dwarf` (DWARF unwinding, issue 25).
//
// Usage: rustdwarf [SCALE]   (percent of the default amount of work, default 100)
//
//   - a trait used through `dyn Kernel` (vtable calls) and generic code monomorphised
//     twice, closures passed down three levels;
//   - recursion (a naive tree walk) so that callchains are deep;
//   - BTreeMap / Vec::sort_unstable_by_key (std code, also without frame pointers);
//   - a named thread ("rd-worker").
use std::collections::BTreeMap;
use std::hint::black_box;

pub trait Kernel {
    fn run(&self, x: u64) -> u64;
}

pub struct Mixer {
    rounds: u32,
}

pub struct Folder {
    width: u64,
}

impl Kernel for Mixer {
    #[inline(never)]
    fn run(&self, mut x: u64) -> u64 {
        for i in 0..self.rounds {
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb).wrapping_add(i as u64);
        }
        x
    }
}

impl Kernel for Folder {
    #[inline(never)]
    fn run(&self, x: u64) -> u64 {
        (0..self.width).map(|k| k.wrapping_mul(x) >> 3).filter(|v| v % 3 != 0).fold(x, |a, v| a ^ v)
    }
}

#[inline(never)]
fn apply_all(kernels: &[Box<dyn Kernel>], seed: u64) -> u64 {
    kernels.iter().fold(seed, |acc, k| k.run(acc))
}

#[inline(never)]
fn walk(depth: u32, seed: u64, kernels: &[Box<dyn Kernel>]) -> u64 {
    if depth == 0 {
        return apply_all(kernels, seed);
    }
    let left = walk(depth - 1, seed.wrapping_mul(3), kernels);
    if depth % 4 == 0 {
        left ^ walk(depth - 1, seed.wrapping_add(7), kernels)
    } else {
        left.rotate_left(depth)
    }
}

struct Accum<T> {
    items: Vec<T>,
}

impl<T: Copy + Into<f64>> Accum<T> {
    #[inline(never)]
    fn reduce<F: Fn(f64) -> f64>(&self, f: F) -> f64 {
        self.items.iter().map(|&v| f(v.into())).sum()
    }
}

#[inline(never)]
fn numeric_stage(rounds: u32) -> f64 {
    let a = Accum { items: (0..2048u32).collect::<Vec<u32>>() };
    let b = Accum { items: (0..2048).map(|i| i as f32 * 0.5).collect::<Vec<f32>>() };
    let mut t = 0.0;
    for r in 0..rounds {
        t += a.reduce(|v| (v + r as f64).sqrt());
        t += b.reduce(|v| (v * 1.5 + 1.0).ln());
    }
    t
}

#[inline(never)]
fn table_stage(rounds: u32) -> usize {
    let mut m: BTreeMap<u64, u64> = BTreeMap::new();
    let mut v: Vec<u64> = Vec::with_capacity(4096);
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..rounds {
        v.clear();
        for _ in 0..4096 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v.push(s);
        }
        v.sort_unstable_by_key(|x| x.rotate_left(5));
        for x in v.iter().step_by(64) {
            *m.entry(x & 0xfff).or_insert(0) += 1;
        }
    }
    m.len()
}

fn main() {
    let scale: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let kernels: Vec<Box<dyn Kernel>> = vec![Box::new(Mixer { rounds: 40 }), Box::new(Folder { width: 60 })];
    let worker = std::thread::Builder::new()
        .name("rd-worker".into())
        .spawn(move || table_stage(black_box(300 * scale / 100)))
        .expect("spawn");
    let mut acc = 0u64;
    for i in 0..(20 * scale / 100).max(1) {
        acc ^= walk(black_box(14), i as u64, &kernels);
    }
    let t = numeric_stage(black_box(150 * scale / 100));
    let n = worker.join().expect("join");
    println!("rustdwarf done {} {} {}", acc & 0xff, t as u64 & 0xff, n);
}
