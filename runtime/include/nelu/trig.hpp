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

// -ffinite-math-only (part of -ffast-math) lets the compiler assume that no value is a NaN or an
// infinity, and drop the tests that return NELU_STATUS_NOT_FINITE: a NaN input then gives status
// OK and NaN outputs. Refused unless the build says it accepts that.
#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__ && !defined(NELU_ALLOW_FINITE_MATH_ONLY)
#error "nelu: built with -ffinite-math-only (or -ffast-math), which removes the generated solvers' finiteness tests (NELU_STATUS_NOT_FINITE); build them without it, or define NELU_ALLOW_FINITE_MATH_ONLY to accept outputs that may be NaN with status OK"
#endif

namespace nelu {
// Internal linkage (docs/firmware.md, "In your own build"): each translation unit has its own copy, built
// with its own flags, so that solvers built for different instruction sets link into one program.
namespace {

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

// The functions of a generated solver whose workspace form runs them on the caller's memory
// (NAME_ws calling NAME_run): out of line, so that the stack holds one function's frame at a time
// (compiler/src/layout.hpp, Layout::work_in_caller). With a compiler that does not take the GCC
// attribute the bound is the compiler's to keep.
#if defined(__GNUC__)
#define NELU_PART __attribute__((noinline))
#else
#define NELU_PART
#endif

// GCC's basic-block (SLP) vectorizer, on by default at -O2 since GCC 12, packs pairs of a
// generated solver's scalar statements whose results are stored side by side (the values in the
// NAME_work struct, out[]) into vector registers, and pays for it in the shuffles that build and
// split the pairs and in the registers they hold: on the shipped solvers it costs instructions and
// time (g++ 12 -O2, docs/large-robots.md "No basic-block vectorization": the humanoid's soles
// 7.5 % of their instructions and of their time). A generated NAME.cpp turns it off for its own
// functions, after its #includes, by NELU_STRAIGHT_LINE_CODE; the lane kernels and batch forms
// are written over vector types and do not depend on it. Define NELU_ALLOW_SLP_VECTORIZE to keep
// the compiler's default; other compilers are not affected.
#if defined(__GNUC__) && !defined(__clang__) && !defined(NELU_ALLOW_SLP_VECTORIZE)
#define NELU_STRAIGHT_LINE_CODE _Pragma("GCC optimize(\"no-tree-slp-vectorize\")")
#else
#define NELU_STRAIGHT_LINE_CODE
#endif

/// p, as a pointer the compiler knows nothing about. A generated solver's part names the values
/// it uses most as elements of a few such pointers into its work struct (compiler/src/printer.hpp,
/// Form::windows): short displacements from registers. Without the empty asm, GCC and Clang fold
/// each pointer back into the struct's address and every element into a displacement of its own:
/// four bytes on x86-64, where the windows cut a large derivative solver's code by a tenth (the
/// UR5e's fd derivatives 139 -> 125 kB, g++ 12 -O2), and a wide load or store on 32-bit Arm (the
/// same solver for the Cortex-M7 100 -> 94 kB). AArch64's loads reach 32 kB of doubles from one
/// register, and there the windows only cost registers (76 -> 82 kB): the pointer is left to the
/// compiler, which folds the windows away. So do other compilers.
template <class T>
inline T* window(T* p) noexcept {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__) || defined(__arm__))
    __asm__("" : "+r"(p));
#endif
    return p;
}

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

// ---------------------------------------------------------------------------------------------
// The scalar functions of a rotation's logarithm, for the Baumgarte placement error of a 6-D
// contact (-log6 of M_c^-1 M_ref; docs/contacts.md). A rotation R of angle theta in [0, pi] gives
// x = sin^2 theta = |vee(R - R^T)|^2 / 4 and c = cos theta = (tr R - 1) / 2; then
//
//   log3 R = log3_ratio(x, c) vee(R - R^T) / 2,      log3_ratio(x, c) = atan2(sqrt x, c) / sqrt x,
//   log6's translation  alpha p - w x p / 2 + log6_beta(t) (w . p) w,  alpha = 1 - t log6_beta(t),
//                       log6_beta(t) = (1 - (theta / 2) cot(theta / 2)) / theta^2,  t = theta^2 = |w|^2.
//
// Written in x (not sin theta) and t (not theta), both are smooth through theta = 0, where the
// generated derivatives need them and their derivatives log3_ratio_dx and log6_beta_dt: no square
// root of a vanishing number is differentiated. log3_ratio takes a series in u = x / c^2 = tan^2
// theta below u = 0.1 (theta < 17.5 degrees; 17 terms, the direct form's cancellation avoided), the
// direct form above; log6_beta is its power series, whose coefficients |B_2k| / (2k)! are all
// positive and decrease as (2 pi)^-2k: 32 terms are exact to rounding up to t = pi^2. At theta = pi
// exactly (x = 0 with c < 0) the axis is not defined by R - R^T: log3_ratio is infinite and the
// solver reports NELU_STATUS_NOT_FINITE; within d of pi, the axis carries a relative error of
// about 1e-16 / d.

namespace log_detail {
/// |B_2k| / (2k)!, k = 1 .. 32 (B: the Bernoulli numbers): (1 - (s/2) cot(s/2)) / s^2 = sum_k c_k s^(2k-2).
constexpr double bernoulli_series[32] = {
    0.083333333333333329, 0.0013888888888888889, 3.3068783068783071e-05, 8.2671957671957675e-07,
    2.08767569878681e-08, 5.2841901386874932e-10, 1.3382536530684679e-11, 3.3896802963225827e-13,
    8.5860620562778452e-15, 2.1748686985580619e-16, 5.5090028283602295e-18, 1.3954464685812522e-19,
    3.5347070396294673e-21, 8.9535174270375463e-23, 2.2679524523376829e-24, 5.7447906688722025e-26,
    1.455172475614865e-27, 3.6859949406653103e-29, 9.3367342570950451e-31, 2.36502241570063e-32,
    5.9906717624821341e-34, 1.5174548844682903e-35, 3.8437581254541886e-37, 9.7363530726466913e-39,
    2.4662470442006811e-40, 6.2470767418207434e-42, 1.5824030244644914e-43, 4.0082736859489357e-45,
    1.0153075855569557e-46, 2.5718041582418717e-48, 6.5144560352338152e-50, 1.6501309906896525e-51,
};
}  // namespace log_detail

/// atan2(sqrt x, c) / sqrt x (theta / sin theta of a rotation with sin^2 theta = x, cos theta = c).
template <class T>
inline T log3_ratio(T x, T c) noexcept {
    using std::atan2;
    using std::sqrt;
    if (c > T(0) && x < T(0.1) * c * c) {  // (1 / c) sum_k (-u)^k / (2k + 1), u = x / c^2 < 0.1
        const T u = x / (c * c);
        T s = T(1) / T(33);
        for (int k = 15; k >= 0; --k) s = T(1) / T(2 * k + 1) - u * s;
        return s / c;
    }
    const T r = sqrt(x);
    return atan2(r, c) / r;
}

/// The derivative of log3_ratio(x, c) in x: (c / (x + c^2) - log3_ratio(x, c)) / (2 x). (In c it
/// is -1 / (x + c^2).)
template <class T>
inline T log3_ratio_dx(T x, T c) noexcept {
    if (c > T(0) && x < T(0.1) * c * c) {  // (1 / c^3) sum_{k >= 1} (-1)^k k u^(k-1) / (2k + 1)
        const T u = x / (c * c);
        T s = T(18) / T(37);  // k = 18
        for (int k = 17; k >= 1; --k) s = T(k % 2 ? -k : k) / T(2 * k + 1) + u * s;
        return s / (c * c * c);
    }
    return (c / (x + c * c) - log3_ratio(x, c)) / (T(2) * x);
}

/// (1 - (theta / 2) cot(theta / 2)) / theta^2 at t = theta^2, 0 <= t <= pi^2.
template <class T>
inline T log6_beta(T t) noexcept {
    T s = T(log_detail::bernoulli_series[31]);
    for (int k = 30; k >= 0; --k) s = T(log_detail::bernoulli_series[k]) + t * s;
    return s;
}

/// The derivative of log6_beta in t.
template <class T>
inline T log6_beta_dt(T t) noexcept {
    T s = T(31) * T(log_detail::bernoulli_series[31]);
    for (int k = 30; k >= 1; --k) s = T(k) * T(log_detail::bernoulli_series[k]) + t * s;
    return s;
}

}  // namespace
}  // namespace nelu

#endif
