// cppwork: small C++ workload for the pstitch test fixtures.
//
// Usage: cppwork [SCALE]   (percent of the default amount of work, default 100)
//
// Exercises C++ symbol shapes in callchains:
//   - namespaces, a class template (geo::Vec3<double>), a function template
//     (geo::dot<T>), class methods (sim::World::step, sim::World::energy const)
//   - std::sort with a lambda comparator, std::map<std::string, long>
//   - a static function that GCC clones (stats_of -> "[clone .isra.0]" /
//     ".constprop.0"; see build.sh, which checks with nm -C)
//   - small always-inlined helpers (DWARF inlined subroutines)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#define NOINLINE __attribute__((noinline))

static int scale = 100;

namespace geo {

template <typename T>
struct Vec3 {
    T x, y, z;
    Vec3 operator+(const Vec3 &o) const { return {x + o.x, y + o.y, z + o.z}; }
    Vec3 operator*(T s) const { return {x * s, y * s, z * s}; }
};

template <typename T>
NOINLINE T dot(const Vec3<T> &a, const Vec3<T> &b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

} // namespace geo

namespace sim {

struct Particle {
    geo::Vec3<double> pos, vel;
    double mass;
};

class World {
public:
    explicit World(std::size_t n);
    NOINLINE void step(double dt);
    NOINLINE double energy() const;
    NOINLINE void sort_by_speed();
    std::vector<Particle> &particles() { return ps_; }

private:
    static inline __attribute__((always_inline)) double damp(double v) { return v * 0.999; }
    std::vector<Particle> ps_;
};

World::World(std::size_t n) : ps_(n)
{
    unsigned s = 12345;
    for (auto &p : ps_) {
        s = s * 1103515245u + 12345u;
        p.pos = {double(s % 1000), double((s >> 10) % 1000), double((s >> 20) % 1000)};
        p.vel = {double(s % 7) - 3.0, double(s % 5) - 2.0, double(s % 3) - 1.0};
        p.mass = 1.0 + (s % 10);
    }
}

void World::step(double dt)
{
    for (auto &p : ps_) {
        p.pos = p.pos + p.vel * dt;
        p.vel = {damp(p.vel.x), damp(p.vel.y), damp(p.vel.z)};
        if (p.pos.x < 0 || p.pos.x > 1000) p.vel.x = -p.vel.x;
    }
}

double World::energy() const
{
    double e = 0;
    for (const auto &p : ps_)
        e += 0.5 * p.mass * geo::dot(p.vel, p.vel);
    return e;
}

void World::sort_by_speed()
{
    std::sort(ps_.begin(), ps_.end(), [](const Particle &a, const Particle &b) {
        return geo::dot(a.vel, a.vel) * a.mass < geo::dot(b.vel, b.vel) * b.mass;
    });
}

} // namespace sim

namespace text {

NOINLINE std::map<std::string, long> count_words(int rounds)
{
    static const char *words[] = {"alpha", "beta", "gamma", "delta", "epsilon",
                                  "zeta", "eta", "theta", "iota", "kappa"};
    std::map<std::string, long> counts;
    for (int r = 0; r < rounds; r++) {
        std::string w = words[r % 10];
        w += std::to_string(r % 97);
        counts[w] += r;
    }
    return counts;
}

} // namespace text

struct Stats {
    double sum, sumsq, min, max;
    long n;
    char pad[64];
};

// Only some fields are used and the pointer never escapes: GCC's IPA-SRA clones
// this into "stats_of(...) [clone .isra.0]" (checked in build.sh).
NOINLINE static void stats_of(const std::vector<double> &v, Stats *st, int mode)
{
    double s = 0, q = 0;
    for (double x : v) {
        double y = mode ? std::sqrt(std::fabs(x)) : x;
        s += y;
        q += y * y;
    }
    st->sum = s;
    st->sumsq = q;
}

NOINLINE static double run_stats(int rounds)
{
    std::vector<double> v(20000);
    for (std::size_t i = 0; i < v.size(); i++)
        v[i] = std::sin(double(i));
    double acc = 0;
    for (int r = 0; r < rounds; r++) {
        Stats st;
        stats_of(v, &st, 1);
        acc += st.sum + st.sumsq;
    }
    return acc;
}

NOINLINE static double run_sim(int rounds)
{
    sim::World w(4000);
    double e = 0;
    for (int r = 0; r < rounds; r++) {
        w.step(0.01);
        if (r % 8 == 0)
            w.sort_by_speed();
        e += w.energy();
    }
    return e;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        scale = std::atoi(argv[1]);
    double acc = run_sim(1500 * scale / 100);
    auto counts = text::count_words(600000 * scale / 100);
    acc += run_stats(1000 * scale / 100);
    std::printf("cppwork done %zu %d\n", counts.size(), int(acc) & 0xff);
    return 0;
}
