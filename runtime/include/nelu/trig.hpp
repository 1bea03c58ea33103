// trig.hpp: the sine and cosine of one joint angle together, for generated solvers.
//
// A generated solver needs sin q and cos q of every revolute joint. Through libm they are one or
// two calls per joint (g++ merges sin and cos into sincos only when it sees both in one function),
// and a call clobbers every vector register. On humanoids that was 27-38 % of the solver's
// instructions (docs/large-robots.md). nelu::sincos(double) computes both at once: Cody-Waite
// reduction by pi/2 and the minimax polynomials of fdlibm's __kernel_sin and __kernel_cos (Sun
// Microsystems, 1993; the form of musl's __sin.c, __cos.c and __rem_pio2.c), to within 1 ulp of
// the correctly rounded values (tests/test_trig.cpp), with no call into libm for |x| < 2^20 pi/2. Larger or
// non-finite arguments go to std::sin and std::cos.
//
// The reduction relies on IEEE double arithmetic rounded to nearest without excess precision
// (SSE2, AArch64, the VFP of a Cortex-M7): not -ffast-math, which the solvers' finiteness checks
// do not support either. Contracted multiply-adds (-ffp-contract=fast where the target has FMA)
// only make it more accurate.
//
// float: std::sin and std::cos (newlib's or glibc's sinf and cosf): on a single-precision FPU
// (Cortex-M4F) a double kernel would be software arithmetic.
#ifndef NELU_TRIG_HPP
#define NELU_TRIG_HPP

#include <cmath>

namespace nelu {

template <class T>
struct SinCos {
    T s, c;
};

/// sin x and cos x of any scalar with std::sin/std::cos or found by argument-dependent lookup.
template <class T>
inline SinCos<T> sincos(T x) noexcept {
    using std::cos;
    using std::sin;
    return {sin(x), cos(x)};
}

namespace trig_detail {

// The constants of the reduction by pi/2, shared with the lanes of runtime lanes.hpp.
constexpr double kReducedBelow = 1647099.3291652855;  // 2^20 pi/2: beyond, std::sin and std::cos
constexpr double invpio2 = 6.36619772367581382433e-01;
constexpr double toint = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
// pi/2 in three pieces of 33 bits and their tails (fdlibm's pio2_1, pio2_1t, ...)
constexpr double pio2_1 = 1.57079632673412561417e+00, pio2_1t = 6.07710050650619224932e-11;
constexpr double pio2_2 = 6.07710050630396597660e-11, pio2_2t = 2.02226624879595063154e-21;
constexpr double pio2_3 = 2.02226624871116645580e-21, pio2_3t = 8.47842766036889956997e-32;

/// sin(x + y) for |x + y| <= pi/4, y the tail of the reduced argument (|y| <= ulp(x) / 2). D is
/// double, or a vector of doubles (runtime lanes.hpp: the same arithmetic in every lane).
template <class D>
inline D kernel_sin(D x, D y) noexcept {
    constexpr double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03, S3 = -1.98412698298579493134e-04,
                     S4 = 2.75573137070700676789e-06, S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
    const D z = x * x, w = z * z;
    const D r = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
    const D v = z * x;
    return x - ((z * (0.5 * y - v * r) - y) - v * S1);
}

/// cos(x + y) for |x + y| <= pi/4.
template <class D>
inline D kernel_cos(D x, D y) noexcept {
    constexpr double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03, C3 = 2.48015872894767294178e-05,
                     C4 = -2.75573143513906633035e-07, C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
    const D z = x * x, w = z * z;
    const D r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
    const D hz = 0.5 * z, u = 1.0 - hz;
    return u + (((1.0 - u) - hz) + (z * r - x * y));
}

}  // namespace trig_detail

// One out-of-line copy per program, whatever the optimization level: g++ -O2 keeps it out of line
// by itself, but -O3 inlined it into every joint angle (about 600 bytes each), which measured slower
// or equal on every solver tried and left the floating Mini Cheetah's ID (g++ 12 -O3, 12 angles:
// 24 kB -> 33 kB of code, past the 32 KiB L1i) 1.3-1.9x slower (docs/large-robots.md). The call
// costs little: the emitter puts every sine and cosine at the top of the solver, where nothing is
// live in the vector registers that a call clobbers.
#if defined(__GNUC__)
#define NELU_TRIG_NOINLINE __attribute__((noinline))
#else
#define NELU_TRIG_NOINLINE
#endif

/// sin x and cos x in double, without libm (see the top of this file).
NELU_TRIG_NOINLINE inline SinCos<double> sincos(double x) noexcept {
    using namespace trig_detail;
    const double ax = std::fabs(x);
    if (!(ax < kReducedBelow)) return {std::sin(x), std::cos(x)};  // 2^20 pi/2, NaN and infinities
    const double fn = (x * invpio2 + toint) - toint;  // the nearest integer to x / (pi/2)
    const int n = static_cast<int>(fn);
    double r = x - fn * pio2_1;  // exact: fn has at most 21 bits, pio2_1 33
    double w = fn * pio2_1t;
    double y0 = r - w;
    if (std::fabs(y0) < ax * 0x1p-15) {  // x near a multiple of pi/2: a second round (118 bits)
        double t = r;
        w = fn * pio2_2;
        r = t - w;
        w = fn * pio2_2t - ((t - r) - w);
        y0 = r - w;
        if (std::fabs(y0) < ax * 0x1p-48) {  // a third (151 bits: every double below 2^20 pi/2)
            t = r;
            w = fn * pio2_3;
            r = t - w;
            w = fn * pio2_3t - ((t - r) - w);
            y0 = r - w;
        }
    }
    const double y1 = (r - y0) - w;
    const double s = kernel_sin(y0, y1), c = kernel_cos(y0, y1);
    switch (n & 3) {
        case 0: return {s, c};
        case 1: return {c, -s};
        case 2: return {-s, -c};
        default: return {-c, s};
    }
}

}  // namespace nelu

#endif
