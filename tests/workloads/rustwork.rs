// rustwork: small Rust workload for the pstitch test fixtures.
//
// Usage: rustwork [SCALE]   (percent of the default amount of work, default 100)
//
// Exercises Rust symbol shapes (v0 or legacy mangling, see build.sh):
//   - a trait with impls used through `dyn Shape` (vtable calls)
//   - generic functions monomorphised for two types (Summer<u64>, Summer<f64>)
//   - closures passed to a generic higher-order function
//   - an iterator chain (map/filter/fold over a range)
//   - a thread (std::thread::Builder with a name -> comm change)
use std::collections::BTreeMap;
use std::hint::black_box;

pub trait Shape {
    fn area(&self) -> f64;
    fn name(&self) -> &'static str;
}

pub struct Circle {
    r: f64,
}

pub struct Rect {
    w: f64,
    h: f64,
}

impl Shape for Circle {
    #[inline(never)]
    fn area(&self) -> f64 {
        let mut a = 0.0;
        for k in 0..64 {
            a += (self.r + k as f64).sqrt();
        }
        a
    }
    fn name(&self) -> &'static str {
        "circle"
    }
}

impl Shape for Rect {
    #[inline(never)]
    fn area(&self) -> f64 {
        let mut a = 0.0;
        for k in 0..64 {
            a += (self.w * self.h + k as f64).ln();
        }
        a
    }
    fn name(&self) -> &'static str {
        "rect"
    }
}

pub trait Accumulate: Copy {
    fn zero() -> Self;
    fn add(self, other: Self) -> Self;
    fn from_u64(v: u64) -> Self;
}

impl Accumulate for u64 {
    fn zero() -> Self {
        0
    }
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    fn from_u64(v: u64) -> Self {
        v
    }
}

impl Accumulate for f64 {
    fn zero() -> Self {
        0.0
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn from_u64(v: u64) -> Self {
        v as f64
    }
}

pub struct Summer<T: Accumulate> {
    total: T,
}

impl<T: Accumulate> Summer<T> {
    #[inline(never)]
    pub fn feed<F: Fn(u64) -> T>(&mut self, n: u64, f: F) {
        for i in 0..n {
            self.total = self.total.add(f(i));
        }
    }
}

#[inline(never)]
fn total_area(shapes: &[Box<dyn Shape>], rounds: usize) -> f64 {
    let mut t = 0.0;
    for _ in 0..rounds {
        for s in shapes {
            t += s.area();
        }
    }
    t
}

#[inline(never)]
fn iter_chain(n: u64) -> u64 {
    (0..n)
        .map(|x| x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7)
        .filter(|x| x % 3 != 0)
        .map(|x| x ^ (x >> 13))
        .fold(0u64, |a, x| a.wrapping_add(x))
}

#[inline(never)]
fn histogram(n: u64) -> BTreeMap<u64, u32> {
    let mut m = BTreeMap::new();
    let mut s = 1u64;
    for _ in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *m.entry(s % 1024).or_insert(0) += 1;
    }
    m
}

fn main() {
    let scale: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let worker = std::thread::Builder::new()
        .name("rw-hist".into())
        .spawn(move || histogram(black_box(2_500_000 * scale / 100)).len())
        .unwrap();

    let shapes: Vec<Box<dyn Shape>> = (0..16)
        .map(|i| -> Box<dyn Shape> {
            if i % 2 == 0 {
                Box::new(Circle { r: i as f64 })
            } else {
                Box::new(Rect { w: i as f64, h: 2.0 })
            }
        })
        .collect();
    let area = total_area(&shapes, black_box(5000 * scale as usize / 100));

    let k = black_box(3u64);
    let mut su = Summer::<u64> { total: u64::zero() };
    su.feed(black_box(50_000_000 * scale / 100), |i| (i * k) ^ (i >> 3));
    let mut sf = Summer::<f64> { total: f64::zero() };
    sf.feed(black_box(20_000_000 * scale / 100), |i| f64::from_u64(i).sqrt());

    let ic = iter_chain(black_box(60_000_000 * scale / 100));
    let hist = worker.join().unwrap();
    println!(
        "rustwork done {} {} {} {} {} {}",
        shapes[0].name(),
        area as u64 & 0xff,
        su.total & 0xff,
        sf.total as u64 & 0xff,
        ic & 0xff,
        hist
    );
}
