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

TEST_CASE("rotation-log functions against 60-digit values, through the series thresholds, in double, float and lanes") {
    // x = sin^2 theta, c = cos theta, t = theta^2 (as doubles), then log3_ratio(x, c),
    // log3_ratio_dx(x, c), log6_beta(t), log6_beta_dt(t) at those doubles, computed by mpmath at 60
    // digits from their definitions (atan2(sqrt x, c) / sqrt x, (1 - (s/2) cot(s/2)) / s^2 with
    // s = sqrt t, and mpmath's numerical derivatives; the limits at x = 0, t = 0):
    //   A = lambda x: mp.atan2(mp.sqrt(x), c) / mp.sqrt(x);  mp.diff(A, x); likewise for beta.
    // theta: 0, 1e-8, 1e-3, 0.1, 0.3, 0.32, 0.7, 1, pi/2, 2, 2.5, 3, 3.1.
    static const double table[][7] = {
    {0.0, 1.0, 0.0, 1.0, -0.33333333333333333, 0.083333333333333333, 1.3888888888888889e-3},
    {1.0000000000000001e-16, 1.0, 1.0000000000000001e-16, 0.99999999999999997, -0.33333333333333329, 0.083333333333333333, 1.3888888888888889e-3},
    {9.99999666666711e-07, 0.9999995000000417, 1e-06, 1.0000001666666861, -0.33333343333335356, 0.083333334722222255, 1.3888889550264575e-3},
    {0.009966711079379185, 0.9950041652780258, 0.010000000000000002, 1.0016686131634776, -0.3343353606005713, 0.083347225529927458, 1.389550512649671e-3},
    {0.08733219254516084, 0.955336489125606, 0.09, 1.0151590085472368, -0.34249981409029435, 0.083458601794527613, 1.3948614201774308e-3},
    {0.09895212105785368, 0.9492354180824408, 0.1024, 1.017272781230275, -0.34378931154014956, 0.083475903196863082, 1.3956874719669787e-3},
    {0.41501642854987947, 0.7648421872844885, 0.48999999999999994, 1.0865892288699727, -0.3876316929304577, 0.084021927185052769, 1.4219017615387178e-3},
    {0.7080734182735712, 0.5403023058681398, 1.0, 1.1883951057781212, -0.45764519835398224, 0.08475613914377404, 1.4575928456183325e-3},
    {1.0, 6.123233995736766e-17, 2.4674011002723395, 1.5707963267948966, -0.78539816339744825, 0.086974848385560414, 1.5685364337873868e-3},
    {0.826821810431806, -0.4161468365471424, 4.0, 2.1995003405892328, -1.5817478107951451, 0.089476846016417324, 1.6992357303663318e-3},
    {0.35816890726838696, -0.8011436155469337, 6.25, 4.1773038638966992, -6.9498599381675658, 0.093545316549094286, 1.9244871523524979e-3},
    {0.01991485667481699, -0.9899924966004454, 9.0, 21.258502187211558, -558.59037921036056, 0.09929197039400237, 2.2696748489168822e-3},
    {0.001728951488391255, -0.9991351502732795, 9.610000000000001, 74.553886797100776, -2.1849375894772561e+4, 0.10070354273556576, 2.3593307812507437e-3},
    };
    double worst = 0, worst_float = 0;
    for (const auto& r : table) {
        const double got[4] = {nelu::log3_ratio(r[0], r[1]), nelu::log3_ratio_dx(r[0], r[1]), nelu::log6_beta(r[2]), nelu::log6_beta_dt(r[2])};
        const float x = static_cast<float>(r[0]), c = static_cast<float>(r[1]), t = static_cast<float>(r[2]);
        const float gotf[4] = {nelu::log3_ratio(x, c), nelu::log3_ratio_dx(x, c), nelu::log6_beta(t), nelu::log6_beta_dt(t)};
        for (int k = 0; k < 4; ++k) {
            INFO("x = " << r[0] << ", c = " << r[1] << ", t = " << r[2] << ", function " << k);
            const double e = std::fabs(got[k] - r[3 + k]) / std::fabs(r[3 + k]);
            CHECK(e < 1e-15);
            worst = std::max(worst, e);
            // float: the inputs rounded to float move the values by their condition
            if (r[0] > 1e-3 || r[1] > 0) worst_float = std::max(worst_float, std::fabs(gotf[k] - r[3 + k]) / std::fabs(r[3 + k]));
        }
        // lanes: every lane the scalar function's value
        using namespace nelu::lanes;
        Vec<double> vx{}, vc{}, vt{};
        constexpr int W = nelu::lanes::Lane<double>::W;
        for (int l = 0; l < W; ++l) set(vx, l, r[0]), set(vc, l, r[1]), set(vt, l, r[2]);
        const Vec<double> lanes[4] = {nelu::lanes::log3_ratio(vx, vc), nelu::lanes::log3_ratio_dx(vx, vc), nelu::lanes::log6_beta(vt),
                                      nelu::lanes::log6_beta_dt(vt)};
        for (int k = 0; k < 4; ++k)
            for (int l = 0; l < W; ++l) CHECK(get(lanes[k], l) == got[k]);
    }
    MESSAGE("rotation-log functions: worst relative error ", worst, " (double), ", worst_float, " (float)");
    CHECK(worst_float < 2e-5);
}
