// lanes.hpp: W states at once, for the batch entry points of generated solvers (nelu compile --batch).
//
// A generated solver is straight-line code without data-dependent branches: the same instructions
// for every state. Its batch form (NAME_batch.cpp) is the same program over a lane type Vec<T>,
// which holds W values of T, one per state, so that every operation of the program works on W
// states. Vec<T> is a GCC/Clang vector (__attribute__((vector_size))) as wide as the target's
// vector registers, chosen at compile time from the predefined macros:
//
//   target macro                        bytes   W double   W float
//   __AVX512F__ (-march=x86-64-v4)         64          8        16
//   __AVX__     (-march=x86-64-v3)         32          4         8
//   __SSE2__    (any x86-64)               16          2         4
//   __aarch64__ with __ARM_NEON            16          2         4
//   other targets and compilers             -          1         1   (Vec<T> is T: a loop over states)
//
// NELU_LANES_SCALAR, defined before this header, forces W = 1. 32-bit Arm's NEON is left out: it
// flushes subnormals and has no double lanes.
//
// What a lane computes is what the scalar solver computes for that state: +, -, *, / and sqrt are
// IEEE operations lane by lane; the sine and cosine of double lanes are nelu::sincos's arithmetic
// (runtime trig.hpp) in every lane, so a lane equals the scalar solver bit for bit when both are
// built with the same flags, unless the compiler contracts a * b + c into fused multiply-adds, which
// it decides per function and per type (g++ -ffp-contract=fast on targets with FMA: nelu check then
// judges the lanes against the reference; docs/batch.md). Float lanes compute the sine and
// cosine with a float kernel of their own (sincos below; the scalar float solvers call the C
// library's sinf and cosf), so float lanes agree with the scalar float solver to float's accuracy,
// not bit for bit. Pivot tests and the finiteness test become masks: a lane runs the whole program
// and reports its own status. The entry points' state-major rows go into lanes and back by W x W
// transposes in registers (batch, below).
//
// No function here is noexcept: a noexcept function that calls what the compiler cannot prove
// non-throwing (<cmath>'s wrappers of libm on the cold path of the sine and cosine, a solver's lane
// program) gets a terminate region, whose personality routine is the C++ runtime's
// (__gxx_personality_v0): a C program could not link a batch form built without -fno-exceptions.
// Nothing here throws either way.
//
// Every name here has internal linkage (an unnamed namespace; within it an inline namespace named
// after the lane width, which names the width in symbols), so that translation units built with
// different flags (say, one with -mavx2 or -march=x86-64-v2 and one without) link into one program
// each with its own code: with weak symbols shared by name, the linker kept one copy for all, and a
// baseline solver ran another's AVX-512 or SSE4.1 instructions (docs/firmware.md, "In your own build").
#ifndef NELU_LANES_HPP
#define NELU_LANES_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "nelu/status.h"
#include "nelu/trig.hpp"

#if !defined(NELU_LANES_SCALAR) && (defined(__GNUC__) || defined(__clang__))
#if defined(__AVX512F__)
#define NELU_LANE_BYTES 64
#define NELU_LANES_ABI w64
#elif defined(__AVX__)
#define NELU_LANE_BYTES 32
#define NELU_LANES_ABI w32
#elif defined(__SSE2__) || (defined(__aarch64__) && defined(__ARM_NEON))
#define NELU_LANE_BYTES 16
#define NELU_LANES_ABI w16
#endif
#endif
#if defined(NELU_LANE_BYTES) && NELU_LANE_BYTES == 16 && !defined(__SSE2__)  // (defined first: -Wundef)
#include <arm_neon.h>
#elif defined(NELU_LANE_BYTES)
#include <immintrin.h>
#endif
#ifndef NELU_LANE_BYTES
#define NELU_LANE_BYTES 0
#define NELU_LANES_ABI w0
#endif

namespace nelu {
namespace lanes {
namespace {  // internal linkage: see the note above
inline namespace NELU_LANES_ABI {

/// The lane type of scalar T: V (W values of T), its mask M (a comparison's result: all bits set in
/// a lane where it holds, or, for W = 1, -1 or 0 in an int) and W. Without a vector unit, T itself.
template <class T>
struct Lane {
    using V = T;
    using M = int;
    static constexpr int W = 1;
};

#if NELU_LANE_BYTES
typedef double VecD __attribute__((vector_size(NELU_LANE_BYTES)));
typedef float VecF __attribute__((vector_size(NELU_LANE_BYTES)));
template <>
struct Lane<double> {
    using V = VecD;
    using M = decltype(VecD{} < VecD{});
    typedef unsigned long long U __attribute__((vector_size(NELU_LANE_BYTES)));
    static constexpr int W = NELU_LANE_BYTES / 8;
};
template <>
struct Lane<float> {
    using V = VecF;
    using M = decltype(VecF{} < VecF{});
    typedef unsigned U __attribute__((vector_size(NELU_LANE_BYTES)));
    static constexpr int W = NELU_LANE_BYTES / 4;
};
#endif

template <class T>
using Vec = typename Lane<T>::V;
template <class T>
using Mask = typename Lane<T>::M;

// ---------------------------------------------------------------------------------------------
// One lane: W = 1 (T itself) and vectors alike.

template <class T>
inline T get(T x, int) { return x; }
template <class T>
inline void set(T& x, int, T v) { x = v; }
#if NELU_LANE_BYTES
inline double get(VecD x, int l) { return x[l]; }
inline float get(VecF x, int l) { return x[l]; }
inline long long get(Mask<double> x, int l) { return x[l]; }
inline int get(Mask<float> x, int l) { return x[l]; }
inline void set(VecD& x, int l, double v) { x[l] = v; }
inline void set(VecF& x, int l, float v) { x[l] = v; }
#endif

/// Every lane x (exactly, -0 included).
template <class T>
inline Vec<T> broadcast(T x) {
    Vec<T> v{};
    for (int l = 0; l < Lane<T>::W; ++l) set(v, l, x);
    return v;
}

// ---------------------------------------------------------------------------------------------
// W = 1: the scalar functions, so that the lane program is the scalar program.

inline int finite(double x) { return -static_cast<int>(std::isfinite(x)); }
inline int finite(float x) { return -static_cast<int>(std::isfinite(x)); }
/// Lanes where a pivot fails its test |x| >= threshold (NaN fails).
inline int small(double x, double threshold) { return -static_cast<int>(!(std::fabs(x) >= threshold)); }
inline int small(float x, float threshold) { return -static_cast<int>(!(std::fabs(x) >= threshold)); }
/// Lanes where a signed pivot fails its test x >= threshold (NaN fails).
inline int below(double x, double threshold) { return -static_cast<int>(!(x >= threshold)); }
inline int below(float x, float threshold) { return -static_cast<int>(!(x >= threshold)); }
inline double sqrt(double x) { return std::sqrt(x); }
inline float sqrt(float x) { return std::sqrt(x); }
inline double sin(double x) { return std::sin(x); }
inline float sin(float x) { return std::sin(x); }
inline double cos(double x) { return std::cos(x); }
inline float cos(float x) { return std::cos(x); }
inline SinCos<double> sincos(double x) { return nelu::sincos(x); }
inline SinCos<float> sincos(float x) { return nelu::sincos(x); }
inline void sincos(const double* x, SinCos<double>* out, int n) {
    for (int k = 0; k < n; ++k) out[k] = nelu::sincos(x[k]);
}
inline void sincos(const float* x, SinCos<float>* out, int n) {
    for (int k = 0; k < n; ++k) out[k] = nelu::sincos(x[k]);
}
/// The rotation-log functions of trig.hpp (a 6-D contact's Baumgarte placement error).
inline double log3_ratio(double x, double c) { return nelu::log3_ratio(x, c); }
inline float log3_ratio(float x, float c) { return nelu::log3_ratio(x, c); }
inline double log3_ratio_dx(double x, double c) { return nelu::log3_ratio_dx(x, c); }
inline float log3_ratio_dx(float x, float c) { return nelu::log3_ratio_dx(x, c); }
inline double log6_beta(double t) { return nelu::log6_beta(t); }
inline float log6_beta(float t) { return nelu::log6_beta(t); }
inline double log6_beta_dt(double t) { return nelu::log6_beta_dt(t); }
inline float log6_beta_dt(float t) { return nelu::log6_beta_dt(t); }

// ---------------------------------------------------------------------------------------------
// Vectors: masks, and the lanes' sqrt, sin, cos and sincos.
#if NELU_LANE_BYTES

/// Whether any lane of mask m (all bits set or none, per lane) is set: one test instruction where the
/// target has one.
template <class M>
inline bool any(M m) {
#if defined(__AVX512F__)
    return _mm512_test_epi64_mask(reinterpret_cast<__m512i>(m), reinterpret_cast<__m512i>(m)) != 0;
#elif defined(__AVX__)
    return !_mm256_testz_si256(reinterpret_cast<__m256i>(m), reinterpret_cast<__m256i>(m));
#elif defined(__SSE2__)
    return _mm_movemask_epi8(reinterpret_cast<__m128i>(m)) != 0;
#else  // aarch64
    return vmaxvq_u32(reinterpret_cast<uint32x4_t>(m)) != 0;
#endif
}
/// a where m is set, else b (bit for bit).
template <class V, class M>
inline V select(M m, V a, V b) { return reinterpret_cast<V>((reinterpret_cast<M>(a) & m) | (reinterpret_cast<M>(b) & ~m)); }
/// The sign bit of every lane.
template <class T>
inline Mask<T> sign_bits() { return reinterpret_cast<Mask<T>>(broadcast(T(-0.0))); }
/// sin and cos of x = n pi/2 + r from s = sin r and c = cos r, n in the low bits of each lane of n:
/// quadrants 1 and 3 swap s and c, and the sign bit is flipped (exactly what negation does) in
/// quadrants 2 and 3 for sin, 1 and 2 for cos.
template <class T>
inline SinCos<Vec<T>> quadrant(Mask<T> n, Vec<T> s, Vec<T> c) {
    using M = Mask<T>;
    using U = typename Lane<T>::U;
    constexpr int top = 8 * sizeof(T) - 1;  // bit 1 of n shifted to the sign bit (unsigned: no overflow)
    const M odd = -(n & 1), sign = sign_bits<T>();
    const M sin_sign = reinterpret_cast<M>(reinterpret_cast<U>(n) << (top - 1)) & sign;
    const M cos_sign = reinterpret_cast<M>(reinterpret_cast<U>(n + 1) << (top - 1)) & sign;
    return {reinterpret_cast<Vec<T>>(reinterpret_cast<M>(select(odd, c, s)) ^ sin_sign),
            reinterpret_cast<Vec<T>>(reinterpret_cast<M>(select(odd, s, c)) ^ cos_sign)};
}
inline VecD abs(VecD x) { return reinterpret_cast<VecD>(reinterpret_cast<Mask<double>>(x) & ~sign_bits<double>()); }
inline VecF abs(VecF x) { return reinterpret_cast<VecF>(reinterpret_cast<Mask<float>>(x) & ~sign_bits<float>()); }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfloat-equal"  // (exactly 0, or NaN: the comparison is the test)
inline Mask<double> finite(VecD x) { return (x - x) == 0; }  // inf - inf and NaN - NaN are NaN
inline Mask<float> finite(VecF x) { return (x - x) == 0; }
#pragma GCC diagnostic pop
inline Mask<double> small(VecD x, double threshold) { return ~((x >= threshold) | (x <= -threshold)); }
inline Mask<float> small(VecF x, float threshold) { return ~((x >= threshold) | (x <= -threshold)); }
inline Mask<double> below(VecD x, double threshold) { return ~(x >= threshold); }
inline Mask<float> below(VecF x, float threshold) { return ~(x >= threshold); }

/// f applied to every lane (std::sqrt, std::sin, std::cos: correctly rounded or the C library's).
template <class V, class F>
inline V each(V x, F f) {
    for (int l = 0; l < static_cast<int>(sizeof(V) / sizeof(x[0])); ++l) x[l] = f(x[l]);
    return x;
}
inline VecD sqrt(VecD x) { return each(x, [](double v) { return std::sqrt(v); }); }
inline VecF sqrt(VecF x) { return each(x, [](float v) { return std::sqrt(v); }); }
/// f of every lane of x and y.
template <class V, class F>
inline V each(V x, V y, F f) {
    for (int l = 0; l < static_cast<int>(sizeof(V) / sizeof(x[0])); ++l) x[l] = f(x[l], y[l]);
    return x;
}
/// The rotation-log functions (trig.hpp) lane by lane: one call per 6-D contact with Baumgarte Kp.
inline VecD log3_ratio(VecD x, VecD c) { return each(x, c, [](double a, double b) { return nelu::log3_ratio(a, b); }); }
inline VecF log3_ratio(VecF x, VecF c) { return each(x, c, [](float a, float b) { return nelu::log3_ratio(a, b); }); }
inline VecD log3_ratio_dx(VecD x, VecD c) { return each(x, c, [](double a, double b) { return nelu::log3_ratio_dx(a, b); }); }
inline VecF log3_ratio_dx(VecF x, VecF c) { return each(x, c, [](float a, float b) { return nelu::log3_ratio_dx(a, b); }); }
inline VecD log6_beta(VecD t) { return each(t, [](double v) { return nelu::log6_beta(v); }); }
inline VecF log6_beta(VecF t) { return each(t, [](float v) { return nelu::log6_beta(v); }); }
inline VecD log6_beta_dt(VecD t) { return each(t, [](double v) { return nelu::log6_beta_dt(v); }); }
inline VecF log6_beta_dt(VecF t) { return each(t, [](float v) { return nelu::log6_beta_dt(v); }); }

/// nelu::sincos (trig.hpp) in every lane, the same arithmetic: Cody-Waite reduction by pi/2 in up to
/// three rounds (a round is computed for every lane when any lane needs it, and kept where it is
/// needed), fdlibm's kernels, and the quadrant by selection and sign flips. Lanes beyond 2^20 pi/2,
/// infinite or NaN go to std::sin and std::cos one by one, as in the scalar function.
#if defined(__GNUC__)
#define NELU_LANES_INLINE __attribute__((always_inline)) inline
#define NELU_LANES_COLD __attribute__((noinline, cold)) inline
#else
#define NELU_LANES_INLINE inline
#define NELU_LANES_COLD inline
#endif

/// v with the lanes where `reduced` is not set replaced by std::sin (or std::cos) of x: arguments
/// beyond the reduction's range, infinite or NaN, rare, so out of line (and by value, so that the
/// usual path keeps its results in registers).
template <class T>
NELU_LANES_COLD Vec<T> from_libm(Vec<T> x, Mask<T> reduced, Vec<T> v, bool cosine) {
    for (int l = 0; l < Lane<T>::W; ++l)
        if (!reduced[l]) v[l] = cosine ? std::cos(x[l]) : std::sin(x[l]);
    return v;
}

NELU_LANES_INLINE SinCos<VecD> sincos_lanes(VecD x) {
    using namespace trig_detail;
    using M = Mask<double>;
    const M reduced = abs(x) < kReducedBelow;  // false for NaN
    const VecD xr = select(reduced, x, VecD{});  // the others are reduced as 0 and replaced below
    const VecD ax = abs(xr);
    const VecD big = xr * invpio2 + toint;  // 1.5 * 2^52 + n: n in the low bits
    const VecD fn = big - toint;
    const M n = reinterpret_cast<M>(big);
    VecD r = xr - fn * pio2_1;
    VecD w = fn * pio2_1t;
    VecD y0 = r - w;
    const M second = abs(y0) < ax * 0x1p-15;  // x near a multiple of pi/2
    if (any(second)) {
        VecD t = r, w2 = fn * pio2_2;
        VecD r2 = t - w2;
        w2 = fn * pio2_2t - ((t - r2) - w2);
        VecD y2 = r2 - w2;
        const M third = second & (abs(y2) < ax * 0x1p-48);
        if (any(third)) {
            t = r2;
            VecD w3 = fn * pio2_3;
            const VecD r3 = t - w3;
            w3 = fn * pio2_3t - ((t - r3) - w3);
            const VecD y3 = r3 - w3;
            r2 = select(third, r3, r2), w2 = select(third, w3, w2), y2 = select(third, y3, y2);
        }
        r = select(second, r2, r), w = select(second, w2, w), y0 = select(second, y2, y0);
    }
    const VecD y1 = (r - y0) - w;
    const VecD s = kernel_sin(y0, y1), c = kernel_cos(y0, y1);
    SinCos<VecD> out = quadrant<double>(n, s, c);
    if (any(~reduced)) out = {from_libm<double>(x, reduced, out.s, false), from_libm<double>(x, reduced, out.c, true)};
    return out;
}

/// Sine and cosine of float lanes: Cody-Waite reduction by pi/2 in float (pi/2 in three pieces, the
/// first two short enough that their products with the quadrant are exact for |x| < 8192) and
/// Cephes' minimax polynomials of sinf and cosf on [-pi/4, pi/4] (S. L. Moshier), evaluated in
/// float: within 2 ulp of the correctly rounded values where |sin x| and |cos x| exceed 1e-3, and
/// within 1e-7 absolute everywhere below 8192 (tests/test_trig.cpp). Lanes at or beyond 8192,
/// infinite or NaN go to std::sin and std::cos (sinf, cosf) one by one. A float solver's accuracy is
/// judged against its tolerance (1e-4 relative), not bit for bit against sinf.
NELU_LANES_INLINE SinCos<VecF> sincos_lanes(VecF x) {
    using M = Mask<float>;
    constexpr float invpio2 = 0.636619772367581343f, toint = 12582912.0f;  // 1.5 * 2^23
    constexpr float pio2_1 = 1.5703125f, pio2_2 = 4.837512969970703125e-4f, pio2_3 = 7.54978995489188216e-8f;
    const M reduced = abs(x) < 8192.0f;
    const VecF xr = select(reduced, x, VecF{});
    const VecF big = xr * invpio2 + toint;  // 1.5 * 2^23 + n
    const VecF fn = big - toint;
    const M n = reinterpret_cast<M>(big);
    const VecF r = ((xr - fn * pio2_1) - fn * pio2_2) - fn * pio2_3;
    const VecF z = r * r;
    const VecF s = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
    const VecF c = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
    SinCos<VecF> out = quadrant<float>(n, s, c);
    if (any(~reduced)) out = {from_libm<float>(x, reduced, out.s, false), from_libm<float>(x, reduced, out.c, true)};
    return out;
}

NELU_TRIG_NOINLINE inline SinCos<VecD> sincos(VecD x) { return sincos_lanes(x); }
NELU_TRIG_NOINLINE inline SinCos<VecF> sincos(VecF x) { return sincos_lanes(x); }

/// out[k] = sincos(x[k]), k < n: the sines and cosines of a solver's angles in one call (the
/// constants of the kernel loaded once, no call per angle).
NELU_TRIG_NOINLINE inline void sincos(const VecD* x, SinCos<VecD>* out, int n) {
    for (int k = 0; k < n; ++k) out[k] = sincos_lanes(x[k]);
}
NELU_TRIG_NOINLINE inline void sincos(const VecF* x, SinCos<VecF>* out, int n) {
    for (int k = 0; k < n; ++k) out[k] = sincos_lanes(x[k]);
}

inline VecD sin(VecD x) { return sincos(x).s; }
inline VecF sin(VecF x) { return sincos(x).s; }
inline VecD cos(VecD x) { return sincos(x).c; }
inline VecF cos(VecF x) { return sincos(x).c; }

#endif

/// A lane's status from its masks: NELU_STATUS_SMALL_PIVOT where a pivot test failed, else
/// NELU_STATUS_NOT_FINITE where an output is not finite, else NELU_STATUS_OK (the order in which
/// the scalar solver tests them).
template <class M>
inline M status(M small_pivot, M finite_outputs) {
    return (small_pivot & NELU_STATUS_SMALL_PIVOT) | (~small_pivot & ~finite_outputs & NELU_STATUS_NOT_FINITE);
}

/// Lanes where every x[e], e < n, is finite: x * 0 is +0 or -0 for a finite x and NaN for an
/// infinity or a NaN, so a sum of them is 0 exactly when every term is finite (no overflow, whatever
/// the values). Four sums, one test at the end: a multiply-add an entry where the compiler
/// contracts them (else a multiply that reads x from memory, and an add), where a test per entry
/// takes a load, a subtraction, a comparison and a mask (the batch forms' end: docs/batch.md). As
/// std::isfinite, this needs IEEE arithmetic (-ffinite-math-only would fold it to true).
template <class T>
inline Mask<T> all_finite(const Vec<T>* x, int n) {
    const Vec<T> zero{};
    Vec<T> s0{}, s1{}, s2{}, s3{};
    const Vec<T>* const end = x + n;
    for (; end - x >= 4; x += 4) s0 += x[0] * zero, s1 += x[1] * zero, s2 += x[2] * zero, s3 += x[3] * zero;
    for (; x != end; ++x) s0 += *x * zero;
    return finite((s0 + s1) + (s2 + s3));
}

// ---------------------------------------------------------------------------------------------
// The Jacobian's columns in lanes (nelu compile --derivatives, docs/derivatives.md "Columns in
// lanes"): a kernel solves the N right-hand sides of a block at once. Its right-hand sides are an
// array of rows of Block<T, N>::lanes columns (N rounded up to a power of two, at least 16 bytes;
// the columns beyond N zero), and its straight-line code, printed once over Block<T, N>::V, a
// vector of the target's width (or narrower, where the block has fewer columns), runs in a loop over
// them, `step` columns a pass: once with AVX2 for four double columns, twice with SSE2 or NEON. A
// kernel's operations are those of a linear solve: sums and differences of columns, columns times,
// or divided by, a scalar (broadcast). Every lane computes what the scalar program computes for its
// column, bit for bit.
//
// Where the loop takes more than one pass it stays a loop (`keep_loop`): a kernel printed for four
// columns over a vector wider than the target's is split by the compiler into two copies of its
// code, and the large derivative solvers then ran from beyond the cache (docs/derivatives.md,
// "Columns in lanes").

#if NELU_LANE_BYTES
/// The lanes of a block of n columns: n rounded up to a power of two, at least `least`.
constexpr int cols_lanes(int n, int least) {
    int p = 1;
    while (p < n) p *= 2;
    return p < least ? least : p;
}
/// A block of N columns of T: its rows' lanes (`lanes`), the columns of one pass of its kernel
/// (`step`, which divides `lanes`) and the vector V of one pass.
template <class T, int N>
struct Block {
    static constexpr int lanes = cols_lanes(N, static_cast<int>(16 / sizeof(T)));
    static constexpr int step = lanes < Lane<T>::W ? lanes : Lane<T>::W;
    typedef T V __attribute__((vector_size(sizeof(T) * step)));
};

/// The vector of the values at p, p + 1, ...: element by element, each load the size of the store
/// that wrote it (the rows are written one value at a time just before the loop; a wider load over
/// several such stores is not forwarded from them).
template <class V, class T, std::size_t... L>
inline V load_cols(const T* p, std::index_sequence<L...>) {
    return V{p[L]...};
}
template <class V, class T>
inline V load_cols(const T* p) {
    return load_cols<V>(p, std::make_index_sequence<sizeof(V) / sizeof(T)>());
}
/// The vector at p (any alignment) in one load: for values stored long before (a generated
/// solver's work struct), where load_cols would load them one by one.
template <class V, class T>
inline V load_vector(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
/// x to p (any alignment).
template <class V, class T>
inline void store_cols(T* p, const V& x) {
    std::memcpy(p, &x, sizeof x);
}
/// Hides the loop counter's value from the optimizer, so that a kernel's loop over its block is not
/// unrolled into copies of the kernel.
inline void opaque(int& h) { __asm__("" : "+r"(h)); }
/// The loop over block B's lanes kept a loop where it takes more than one pass; where it takes one
/// (four double columns with AVX2), the optimizer sees that it does and keeps the right-hand sides
/// in registers, as straight-line code would.
template <class B>
inline void keep_loop(int& h) {
    if constexpr (B::step < B::lanes) opaque(h);
}
/// p, hidden from the optimizer: read through it in the loop, the kernel's scalar operands are not
/// hoisted out of the loop (where hundreds of broadcasts would wait on the stack for their use).
template <class P>
inline const P* opaque(const P* p) {
    __asm__("" : "+r"(p));
    return p;
}

/// The kernels' scalar operands (factor entries, coefficients of the right-hand sides), broadcast
/// once per call into a table that every kernel of the call reads. A kernel multiplies a column by a
/// scalar of the work struct in almost every statement, and where the target broadcasts from memory
/// in the multiplication itself (AVX-512) or in one load (AVX) the table holds nothing and `splat`
/// gives the scalar; so on NEON too, whose multiply by element takes the scalar from a register (not
/// measured). x86-64 without AVX (SSE2, the generic build) has
/// neither: each use, in each pass of each kernel, was a load and an unpack before the multiply,
/// where a 16-byte entry of the table is one memory operand. Measured on the humanoid's two soles
/// (g++ 12 -O2, generic): 228,100 -> 193,100 instructions per call, 34.2 -> 29.3 us; with AVX2 a
/// table of 32-byte entries did not pay (docs/derivatives.md, "Columns in lanes").
///
/// Its storage is an array of T (16 (N + 1) bytes whatever the target, so that the work struct
/// holding it has one size and T's alignment, as NAME_WORK_BYTES and NAME_WORK_ALIGN say), the
/// entries starting at its first 16-byte boundary.
#if defined(__SSE2__) && !defined(__AVX__)
#define NELU_LANES_SPLATS 1
#endif
template <class T, int N>
struct Splats {
    T raw[(N + 1) * 16 / sizeof(T)];
#ifdef NELU_LANES_SPLATS
    typedef T V __attribute__((vector_size(16)));
    /// The entries, from the first 16-byte boundary in raw.
    const V* table() const {
        return static_cast<const V*>(__builtin_assume_aligned(reinterpret_cast<const unsigned char*>(raw) + skip(), 16));
    }
    /// Entry i <- x in every lane.
    void put(int i, T x) {
        // (16, not sizeof(V): g++ 12 takes sizeof of this dependent vector typedef, in a template
        // argument, as the size of T)
        const V v = fill(x, std::make_index_sequence<16 / sizeof(T)>());
        std::memcpy(reinterpret_cast<unsigned char*>(raw) + skip() + 16 * static_cast<std::size_t>(i), &v, 16);
    }
    /// Entries first .. first + n - 1 <- x[0 .. n - 1], each in every lane.
    void put_run(int first, const T* x, int n) {
#pragma GCC unroll 4
        for (int e = 0; e < n; ++e) put(first + e, x[e]);
    }
    /// Bytes from raw to the first 16-byte boundary.
    std::size_t skip() const { return (16 - reinterpret_cast<std::uintptr_t>(raw) % 16) % 16; }
    template <std::size_t... L>
    static V fill(T x, std::index_sequence<L...>) { return V{(static_cast<void>(L), x)...}; }
#else
    void put(int, T) {}
    void put_run(int, const T*, int) {}
#endif
};
/// Operand i of a kernel, x: entry i of the table where the target keeps one (a vector of the
/// kernel's width C, read from memory by the operation), else x itself (broadcast by the operation).
#ifdef NELU_LANES_SPLATS
template <class C, class T, int N>
inline const C& splat(const Splats<T, N>& s, int i, T) {
    static_assert(sizeof(C) == 16, "without AVX a kernel's vectors are 16 bytes (Block)");
    return *reinterpret_cast<const C*>(s.table() + i);
}
#else
template <class C, class T, int N>
inline T splat(const Splats<T, N>&, int, T x) { return x; }
#endif

/// Whether every lane of z is finite, where z is the sum of every output's x - x (0 where all are
/// finite, NaN where one is infinite or NaN): the sum of its lanes is 0 or NaN.
template <class C>
inline bool finite_cols(const C& z) {
    auto sum = z[0];
#if defined(__GNUC__)
#pragma GCC unroll 16
#endif
    for (std::size_t l = 1; l < sizeof(C) / sizeof(z[0]); ++l) sum += z[l];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfloat-equal"  // (0 or NaN: the comparison is the test)
    return sum == sum;
#pragma GCC diagnostic pop
}
#endif

// ---------------------------------------------------------------------------------------------
// The batch entry points: state-major arrays to lanes and back.

#if NELU_LANE_BYTES && defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define NELU_LANES_SHUFFLE 1
#endif
#endif

#ifdef NELU_LANES_SHUFFLE
/// Lane m of one step of a W x W transpose: the interleave of a and b (b's lanes numbered W ..
/// 2W - 1) by blocks of S lanes, the low (`high` false) or high halves of each pair of blocks.
constexpr int interleave_index(int w, int S, bool high, int m) {
    const int block = m / (2 * S) * 2 * S, off = m % (2 * S) + (high ? S : 0);
    return off < S + (high ? S : 0) ? block + off : w + block + off - S;
}
template <int S, bool High, class V, std::size_t... M>
inline V interleave(V a, V b, std::index_sequence<M...>) {
    return __builtin_shufflevector(a, b, interleave_index(sizeof...(M), S, High, M)...);
}
/// r[j] <- lane j of every r[l], l = 0 .. W - 1 (a W x W transpose, log2 W steps of interleaves).
template <class T, int S = 1>
inline void transpose(Vec<T>* r) {
    constexpr int W = Lane<T>::W;
    if constexpr (S < W) {
#pragma GCC unroll 16
        for (int j = 0; j < W; ++j)
            if (!(j & S)) {
                const Vec<T> lo = interleave<S, false>(r[j], r[j + S], std::make_index_sequence<static_cast<std::size_t>(W)>());
                r[j + S] = interleave<S, true>(r[j], r[j + S], std::make_index_sequence<static_cast<std::size_t>(W)>());
                r[j] = lo;
            }
        transpose<T, 2 * S>(r);
    }
}
#endif

/// tile(k) for the W x W tiles of N values: k = 0, W, 2W, .. while a whole tile fits, then N - W
/// when W does not divide N (overlapping the one before); with N < W, k = 0 alone. The whole tiles
/// in a loop of their own, so that the compiler walks them with pointers: the clamp of the last
/// tile inside the loop had cost nine integer instructions a tile, as many as the transpose's
/// shuffles (the Mini Cheetah's point-feet Jacobian, 405 tiles a block: docs/batch.md).
template <int W, int N, class Tile>
inline void tiles(Tile tile) {
    if constexpr (N >= W) {
        for (int k = 0; k + W <= N; k += W) tile(k);
        if constexpr (N % W != 0) tile(N - W);
    } else
        tile(0);
}

/// dst[k] <- lane l of dst[k] is row(l)[k], k = 0 .. N - 1: W rows of N values into N lanes. In
/// W x W tiles transposed in registers where the target has vectors (the last tile overlapping the
/// one before when W does not divide N; with N < W, one tile when `wide`, that is when reading W
/// values from every row stays inside the array), else value by value.
template <class T, int N, class Row>
inline void rows_to_lanes(Vec<T>* dst, Row row, bool wide) {
    constexpr int W = Lane<T>::W;
#ifdef NELU_LANES_SHUFFLE
    if (N >= W || (wide && W > 1)) {
        auto tile = [&](int k) {
            Vec<T> r[static_cast<std::size_t>(W)];
#pragma GCC unroll 16
            for (int l = 0; l < W; ++l) std::memcpy(&r[l], row(l) + k, sizeof(Vec<T>));
            transpose<T>(r);
#pragma GCC unroll 16
            for (int j = 0; j < W; ++j)
                if (j < N) dst[k + j] = r[j];
        };
        tiles<W, N>(tile);
        return;
    }
#else
    (void)wide;
#endif
    unsigned char* lanes = reinterpret_cast<unsigned char*>(dst);
    for (int l = 0; l < W; ++l)
        for (int k = 0; k < N; ++k) std::memcpy(lanes + (static_cast<std::size_t>(k) * W + static_cast<std::size_t>(l)) * sizeof(T), row(l) + k, sizeof(T));
}

/// Lanes of N values from rows i .. i + w - 1 of a state-major array of n rows (row r at src + r N);
/// lanes w .. W - 1 repeat row i, so that they compute a real state and read nothing past the
/// array. A whole block (w = W) reads its rows at constant offsets.
template <class T, int N>
inline void load(Vec<T>* dst, const T* src, std::size_t i, int w, std::size_t n) {
    constexpr int W = Lane<T>::W;
    const T* block = src + i * N;
    if (w == W) rows_to_lanes<T, N>(dst, [block](int l) { return block + static_cast<std::size_t>(l) * N; }, (i + W) * N + W <= (n + 1) * N);
    else rows_to_lanes<T, N>(dst, [block, w](int l) { return block + static_cast<std::size_t>(l < w ? l : 0) * N; }, false);
}

/// Lane l of N lanes into row r of a state-major array.
template <class T, int N>
inline void store(T* dst, const Vec<T>* src, std::size_t r, int l) {
    const unsigned char* lanes = reinterpret_cast<const unsigned char*>(src);
    T* row = dst + r * N;
    for (int k = 0; k < N; ++k) std::memcpy(row + k, lanes + (static_cast<std::size_t>(k) * Lane<T>::W + static_cast<std::size_t>(l)) * sizeof(T), sizeof(T));
}

/// Every lane of N lanes into rows i .. i + W - 1 of a state-major array: the inverse of
/// rows_to_lanes. With N < W, the rows are written in order, W values at a time while that stays
/// inside the block (the values past a row's end are overwritten by the rows after it), the last
/// ones N values at a time: nothing outside the block is written.
template <class T, int N>
inline void store_block(T* dst, const Vec<T>* src, std::size_t i) {
    constexpr int W = Lane<T>::W;
    T* block = dst + i * N;
#ifdef NELU_LANES_SHUFFLE
    if constexpr (W > 1) {
        auto tile = [&](int k) {
            Vec<T> r[static_cast<std::size_t>(W)];
#pragma GCC unroll 16
            for (int j = 0; j < W; ++j) r[j] = j < N ? src[k + j] : Vec<T>{};
            transpose<T>(r);
#pragma GCC unroll 16
            for (int l = 0; l < W; ++l)
                std::memcpy(block + static_cast<std::size_t>(l) * N + k, &r[l], N >= W || l * N + W <= W * N ? sizeof(Vec<T>) : N * sizeof(T));
        };
        tiles<W, N>(tile);
        return;
    }
#endif
    for (int l = 0; l < W; ++l) store<T, N>(block, src, static_cast<std::size_t>(l), l);
}

inline bool any(int m) { return m != 0; }

/// The batch form of a solver whose lane program is `lanes(q, qd, in, out, jac)` (returning each
/// lane's status): n states, each array state-major (q n x NQ, qd n x NV, in n x NIN, out n x NOUT,
/// jac n x NOUT*NJAC when NJAC > 0). status[i] (when status is not null) gets state i's status; a
/// state whose status is not NELU_STATUS_OK leaves its rows of out and jac untouched. Returns the
/// number of such states (0 when n <= 0). W states per call of `lanes`; the last call takes the
/// n mod W states left, reading and writing only their rows. No heap: the lanes are on the stack.
template <class T, int NQ, int NV, int NIN, int NOUT, int NJAC, class F>
inline int batch(int n, const T* q, const T* qd, const T* in, T* out, T* jac, int* status, F lanes) {
    constexpr int W = Lane<T>::W;
    int failed = 0;
    for (int i = 0; i < n; i += W) {
        const int w = n - i < W ? n - i : W;
        const std::size_t at = static_cast<std::size_t>(i);
        constexpr auto size = [](int k) { return static_cast<std::size_t>(k > 0 ? k : 1); };  // (no array of size 0)
        Vec<T> lq[size(NQ)], lqd[size(NV)], lin[size(NIN)], lout[size(NOUT)], ljac[size(NOUT * NJAC)];
        const std::size_t rows = static_cast<std::size_t>(n);
        load<T, NQ>(lq, q, at, w, rows);
        load<T, NV>(lqd, qd, at, w, rows);
        load<T, NIN>(lin, in, at, w, rows);
        const Mask<T> st = lanes(lq, lqd, lin, lout, ljac);
        if (w == W && !any(st != NELU_STATUS_OK)) {  // the usual block: every state succeeded, W rows at once
            store_block<T, NOUT>(out, lout, at);
            if (NJAC > 0) store_block<T, NOUT * NJAC>(jac, ljac, at);
            if (status)
                for (int l = 0; l < W; ++l) status[i + l] = NELU_STATUS_OK;
            continue;
        }
        for (int l = 0; l < w; ++l) {
            const int s = static_cast<int>(get(st, l));
            if (status) status[i + l] = s;
            if (s != NELU_STATUS_OK) {
                ++failed;
                continue;
            }
            store<T, NOUT>(out, lout, at + static_cast<std::size_t>(l), l);
            if (NJAC > 0) store<T, NOUT * NJAC>(jac, ljac, at + static_cast<std::size_t>(l), l);
        }
    }
    return failed;
}

}  // namespace NELU_LANES_ABI
}  // namespace
}  // namespace lanes
}  // namespace nelu

#endif
