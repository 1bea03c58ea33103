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

/// Whether every x[i] is finite. x - x is +0 for a finite x and NaN for an infinity or a NaN, and a
/// NaN stays NaN through a sum. Under GCC and Clang in 16-byte vectors, two to a pass (four sums
/// of two doubles: SSE2 and NEON take a vector an instruction, other targets get scalar code);
/// elsewhere two scalar sums. (As std::isfinite, this needs IEEE arithmetic: -ffinite-math-only,
/// part of -ffast-math, lets a compiler fold it to true.)
template <class T, std::size_t N>
inline bool all_finite(const T (&x)[N]) noexcept {
    std::size_t i = 0;
    T sum = T(0);
#if defined(__GNUC__)
    typedef T V __attribute__((vector_size(16)));
    constexpr std::size_t L = 16 / sizeof(T);
    V even = {}, odd = {};
    for (; i + 2 * L <= N; i += 2 * L) {
        V u, v;
        std::memcpy(&u, x + i, 16), std::memcpy(&v, x + i + L, 16);
        even += u - u, odd += v - v;
    }
    even += odd;
    for (std::size_t l = 0; l < L; ++l) sum += even[l];
#endif
    for (; i < N; ++i) sum += x[i] - x[i];
    return sum == T(0);
}

}  // namespace nelu

#endif
