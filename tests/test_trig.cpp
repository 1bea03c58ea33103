// nelu::sincos (runtime trig.hpp), which every generated solver uses for its joint angles: within
// 1 ulp of sin and cos computed in extended precision (long double, 64 bits of mantissa on x86-64),
// on random angles, at and beside multiples of pi/2 and pi/4 (where the reduction cancels), on tiny
// and large arguments, and through the libm fallback for huge and non-finite ones. The lanes of the
// batch forms (runtime lanes.hpp): double lanes equal nelu::sincos bit for bit, whatever the other
// lanes hold; float lanes within 1e-7 of sin and cos, and 2 ulp where they exceed 1e-3.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "nelu/lanes.hpp"
#include "nelu/trig.hpp"

namespace {

/// |a - exact| in units of the last place of a (the spacing of doubles at |a|).
double ulp_error(double a, long double exact) {
    const double ref = static_cast<double>(exact);
    const double spacing = std::nextafter(std::fabs(ref), std::numeric_limits<double>::infinity()) - std::fabs(ref);
    return static_cast<double>(std::fabs(static_cast<long double>(a) - exact) / spacing);
}

struct Worst {
    double ulps = 0, at = 0;
    long checked = 0;
    void check(double x) {
        const nelu::SinCos<double> r = nelu::sincos(x);
        const long double lx = x;
        for (double e : {ulp_error(r.s, std::sin(lx)), ulp_error(r.c, std::cos(lx))})
            if (e > ulps) ulps = e, at = x;
        ++checked;
    }
};

}  // namespace

TEST_CASE("nelu::sincos is within 1 ulp of sin and cos") {
    if (std::numeric_limits<long double>::digits <= std::numeric_limits<double>::digits) {
        MESSAGE("skipped: long double is no wider than double here, so there is no extended-precision reference");
        return;
    }
    Worst w;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> joint(-4 * M_PI, 4 * M_PI), wide(-1.6e6, 1.6e6), tiny(-1e-4, 1e-4);
    for (int i = 0; i < 200000; ++i) w.check(joint(rng)), w.check(wide(rng)), w.check(tiny(rng));
    for (long k = -20000; k <= 20000; ++k)  // the reduction's hard cases: at and beside k pi/2
        for (double x : {k * (M_PI / 2), k * (M_PI / 4), static_cast<double>(k)}) {
            w.check(x);
            w.check(std::nextafter(x, 1e300));
            w.check(std::nextafter(x, -1e300));
        }
    for (double x : {0.0, 1e-300, 5e-324, -5e-324, 0.7853981633974483, 1647099.0, -1647099.0, 1647100.0, 1e22, -3e300})
        w.check(x);
    MESSAGE("worst ", w.ulps, " ulp at x = ", w.at, " over ", w.checked, " arguments");
    CHECK(w.ulps < 1.0);
}

TEST_CASE("nelu::sincos: signed zero, non-finite arguments and the float path") {
    const nelu::SinCos<double> z = nelu::sincos(-0.0);
    CHECK(z.s == 0.0);
    CHECK(std::signbit(z.s));
    CHECK(z.c == 1.0);
    for (double x : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
        const nelu::SinCos<double> r = nelu::sincos(x);
        CHECK(std::isnan(r.s));
        CHECK(std::isnan(r.c));
    }
    // float: the C library's sinf and cosf, bit for bit
    for (float x : {0.0f, 0.5f, -1.25f, 3.14159265f, 100.0f, 1e6f}) {
        const nelu::SinCos<float> r = nelu::sincos(x);
        CHECK(r.s == std::sin(x));
        CHECK(r.c == std::cos(x));
    }
}

TEST_CASE("nelu::lanes::sincos: double lanes bit for bit nelu::sincos, float lanes within 2 ulp") {
    using namespace nelu::lanes;
    constexpr int W = Lane<double>::W, WF = Lane<float>::W;
    MESSAGE("lanes in this build: ", W, " double, ", WF, " float");
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> joint(-10, 10), wide(-2e6, 2e6);
    const double special[] = {0.0, -0.0, M_PI / 2, -M_PI, 1647099.0, 1647100.0, 1e22, std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::quiet_NaN()};
    long differ = 0, lanes = 0;
    for (int i = 0; i < 100000; ++i) {
        Vec<double> x{};
        for (int l = 0; l < W; ++l)  // lanes in range beside lanes that need the second round or libm
            set(x, l, i % 10 == 0 ? special[(i / 10 + l) % 9] : i % 3 == 0 ? wide(rng) : joint(rng));
        Vec<double> xs[1] = {x};
        nelu::SinCos<Vec<double>> r[1];
        sincos(xs, r, 1);
        for (int l = 0; l < W; ++l, ++lanes) {
            const nelu::SinCos<double> e = nelu::sincos(get(x, l));
            const double s = get(r[0].s, l), c = get(r[0].c, l);
            differ += std::memcmp(&s, &e.s, sizeof s) != 0 || std::memcmp(&c, &e.c, sizeof c) != 0;
        }
    }
    CHECK_MESSAGE(differ == 0, differ << " of " << lanes << " double lanes differ from nelu::sincos");
    double worst_abs = 0, worst_ulp = 0;
    for (double range : {4.0, 100.0, 8191.0}) {
        std::uniform_real_distribution<float> u(static_cast<float>(-range), static_cast<float>(range));
        for (int i = 0; i < 100000; ++i) {
            Vec<float> x{};
            for (int l = 0; l < WF; ++l) set(x, l, u(rng));
            const nelu::SinCos<Vec<float>> r = sincos(x);
            for (int l = 0; l < WF; ++l)
                for (int k = 0; k < 2; ++k) {
                    const long double a = get(x, l), exact = k ? std::cos(a) : std::sin(a);
                    const double err = std::fabs(static_cast<double>((k ? get(r.c, l) : get(r.s, l)) - exact));
                    worst_abs = std::max(worst_abs, err);
                    const float f = static_cast<float>(exact);
                    if (std::fabs(f) > 1e-3f) worst_ulp = std::max(worst_ulp, err / (std::nextafter(std::fabs(f), 1e30f) - std::fabs(f)));
                }
        }
    }
    MESSAGE("float lanes: worst ", worst_abs, " absolute, ", worst_ulp, " ulp where |value| > 1e-3");
    CHECK(worst_abs < 1e-7);
    CHECK(worst_ulp < 2.0);
    // beyond the float reduction's range, and non-finite: the C library's sinf and cosf
    Vec<float> x{};
    for (int l = 0; l < WF; ++l) set(x, l, l % 2 ? 1e6f : std::numeric_limits<float>::quiet_NaN());
    const nelu::SinCos<Vec<float>> r = sincos(x);
    for (int l = 0; l < WF; ++l) {
        if (l % 2) CHECK(get(r.s, l) == std::sin(1e6f));
        else CHECK(std::isnan(get(r.c, l)));
    }
}
