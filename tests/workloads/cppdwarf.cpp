// cppdwarf: C++ workload built WITHOUT frame pointers, recorded with
// `perf record --call-graph dwarf` (DWARF unwinding, issue 25).
//
// Usage: cppdwarf [SCALE]   (percent of the default amount of work, default 100)
//
//   - throw_stage: exceptions thrown through three frames and caught: samples land in
//     libstdc++ and in libgcc_s's own unwinder (_Unwind_RaiseException, the
//     personality routine), whose CFI is then unwound by perf;
//   - shapes: virtual calls through a base class, std::function callbacks;
//   - sort_stage: std::sort with a lambda (deep template inlining), std::map inserts;
//   - a std::thread runs sort_stage.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#define NOINLINE __attribute__((noinline))

static int scale = 100;
static volatile std::uint64_t sink;

namespace shapes {

struct Shape {
    virtual ~Shape() = default;
    virtual double area() const = 0;
};

struct Circle final : Shape {
    double r;
    explicit Circle(double r) : r(r) {}
    NOINLINE double area() const override
    {
        double a = 0;
        for (int k = 0; k < 200; k++)
            a += std::sqrt(r + k);
        return a;
    }
};

struct Square final : Shape {
    double s;
    explicit Square(double s) : s(s) {}
    NOINLINE double area() const override
    {
        double a = 0;
        for (int k = 0; k < 200; k++)
            a += std::cbrt(s * k + 1);
        return a;
    }
};

NOINLINE double total_area(const std::vector<std::unique_ptr<Shape>> &v,
                           const std::function<double(double)> &f)
{
    double t = 0;
    for (const auto &s : v)
        t += f(s->area());
    return t;
}

} // namespace shapes

struct BadValue : std::runtime_error {
    int v;
    explicit BadValue(int v) : std::runtime_error("bad value"), v(v) {}
};

NOINLINE static int check(int v)
{
    if (v % 3 == 0)
        throw BadValue(v);
    return v * 2;
}

NOINLINE static int validate(int v)
{
    return check(v + 1) + 1;
}

NOINLINE static long throw_stage(int rounds)
{
    long caught = 0;
    for (int r = 0; r < rounds; r++) {
        try {
            caught += validate(r);
        } catch (const BadValue &e) {
            caught += e.v;
        }
    }
    return caught;
}

NOINLINE static long sort_stage(int rounds)
{
    std::vector<std::uint64_t> v(4096);
    std::map<std::uint64_t, int> m;
    long acc = 0;
    for (int r = 0; r < rounds; r++) {
        std::uint64_t s = 0x9e3779b97f4a7c15ULL * (r + 1);
        for (auto &x : v) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            x = s;
        }
        std::sort(v.begin(), v.end(), [](std::uint64_t a, std::uint64_t b) { return (a >> 3) < (b >> 3); });
        for (int i = 0; i < 64; i++)
            m[v[i * 17] & 0xffff] += i;
        acc += static_cast<long>(v[100] & 0xff) + static_cast<long>(m.size());
    }
    return acc;
}

NOINLINE static double shape_stage(int rounds)
{
    std::vector<std::unique_ptr<shapes::Shape>> v;
    for (int i = 0; i < 64; i++) {
        if (i % 2)
            v.push_back(std::make_unique<shapes::Circle>(i));
        else
            v.push_back(std::make_unique<shapes::Square>(i));
    }
    double t = 0;
    for (int r = 0; r < rounds; r++)
        t += shapes::total_area(v, [r](double a) { return a * (r % 5 + 1); });
    return t;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        scale = std::atoi(argv[1]);
    std::thread worker([] { sink += static_cast<std::uint64_t>(sort_stage(120 * scale / 100)); });
    sink += static_cast<std::uint64_t>(throw_stage(60000 * scale / 100));
    sink += static_cast<std::uint64_t>(shape_stage(300 * scale / 100));
    sink += static_cast<std::uint64_t>(sort_stage(60 * scale / 100));
    worker.join();
    std::printf("cppdwarf done %llu\n", static_cast<unsigned long long>(sink & 0xff));
    return 0;
}
