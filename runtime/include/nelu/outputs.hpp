// nelu/outputs.hpp: what a generated solver in parts does at its end with the values it writes.
//
// A solver in parts keeps the values its entry point writes (out, jac, and with lanes what its
// kernels read) in one array of its NAME_work struct, each value once, in the order of out and jac
// (compiler/src/layout.hpp, Layout::staged). The entry point tests the whole array at once and
// copies it in runs: a loop and a few calls instead of a test and a copy per entry in straight-line
// code, which on large derivative solvers had been 7 % of their code (docs/large-robots.md,
// "Outputs in one array").
//
// Freestanding: no heap, no exceptions; memcpy for unaligned vector loads.
#ifndef NELU_OUTPUTS_HPP
#define NELU_OUTPUTS_HPP

#include <cstddef>
#include <cstring>

namespace nelu {
// Internal linkage (docs/firmware.md, "In your own build"): each translation unit has its own copy, built
// with its own flags, so that solvers built for different instruction sets link into one program.
namespace {

/// Whether every x[i] is finite. x * 0 is +0 or -0 for a finite x and NaN for an infinity or a NaN,
/// and a NaN stays NaN through a sum (no finite value can overflow it). Under GCC and Clang in
/// vectors of the target's width (32 bytes with AVX, else 16: SSE2 and NEON), four to a pass, each
/// a multiply that reads x from memory and an add (one multiply-add where the compiler contracts
/// them): with AVX, a third of the instructions of 16-byte differences x - x (the Mini Cheetah's
/// point-feet derivatives: docs/large-robots.md, "Outputs in one array"); other targets get scalar
/// code. (As std::isfinite, this needs IEEE arithmetic: -ffinite-math-only, part of -ffast-math,
/// lets a compiler fold it to true.)
template <class T, std::size_t N>
inline bool all_finite(const T (&x)[N]) noexcept {
    std::size_t i = 0;
    T sum = T(0);
#if defined(__GNUC__)
#if defined(__AVX__)
    constexpr std::size_t B = 32;
#else
    constexpr std::size_t B = 16;
#endif
    typedef T V __attribute__((vector_size(B)));
    constexpr std::size_t L = B / sizeof(T);
    const V zero = {};
    V s0 = {}, s1 = {}, s2 = {}, s3 = {}, u0, u1, u2, u3;
    for (; i + 4 * L <= N; i += 4 * L) {
        std::memcpy(&u0, x + i, B), std::memcpy(&u1, x + i + L, B), std::memcpy(&u2, x + i + 2 * L, B), std::memcpy(&u3, x + i + 3 * L, B);
        s0 += u0 * zero, s1 += u1 * zero, s2 += u2 * zero, s3 += u3 * zero;
    }
    s0 += s1, s2 += s3, s0 += s2;
    for (std::size_t l = 0; l < L; ++l) sum += s0[l];
#endif
    for (; i < N; ++i) sum += x[i] * T(0);
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfloat-equal"  // (exactly +0 or -0, or NaN: the comparison is the test)
#endif
    return sum == T(0);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
}

}  // namespace
}  // namespace nelu

#endif
