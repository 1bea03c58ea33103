// The blocks of the Jacobian's columns in lanes (runtime lanes.hpp, Block; docs/derivatives.md
// "Columns in lanes"): for every block of 1 to 8 columns, double and float, on the target this
// test is built for, the block's lanes and the columns of one pass are what the printer's loop
// assumes (a power of two at least 16 bytes wide, divided into passes of at most the target's
// vector), and a kernel written as the printer writes it (rows loaded from an array, a scalar
// operand read through the hidden work pointer and the table of broadcast operands (Splats), results
// stored to an array, the loop kept a loop where it takes more than one pass) reaches every column
// once, computes what scalar code computes for each, and reports a column that is not finite. The
// table holds what was put, in every lane and bit for bit (-0 included), wherever its storage starts.
// And the finiteness tests at the solvers' ends (nelu::lanes::all_finite for the batch forms,
// nelu::all_finite for the scalar solvers in parts) flag exactly the lanes, or the arrays, with an
// infinity or a NaN, on targets with and without lanes.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "nelu/lanes.hpp"
#include "nelu/outputs.hpp"

namespace {

/// all_finite over 0 to 9 entries: every lane finite with values whose sum would overflow, then
/// each of +inf, -inf and NaN in each entry and lane in turn, which only that lane reports.
template <class T>
void check_all_finite() {
    using V = nelu::lanes::Vec<T>;
    constexpr int W = nelu::lanes::Lane<T>::W;
    CAPTURE(sizeof(T));
    const T big = std::numeric_limits<T>::max();
    const std::array<T, 3> bad = {std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN()};
    for (int n = 0; n <= 9; ++n) {
        CAPTURE(n);
        std::array<V, 9> x{};
        for (int e = 0; e < n; ++e)
            for (int l = 0; l < W; ++l) nelu::lanes::set(x[e], l, e % 3 == 2 ? -T(0) : big);
        const auto all = nelu::lanes::all_finite<T>(x.data(), n);
        for (int l = 0; l < W; ++l) CHECK(nelu::lanes::get(all, l) != 0);
        for (int e = 0; e < n; ++e)
            for (int l = 0; l < W; ++l)
                for (T b : bad) {
                    const V keep = x[e];
                    nelu::lanes::set(x[e], l, b);
                    const auto m = nelu::lanes::all_finite<T>(x.data(), n);
                    for (int k = 0; k < W; ++k) CHECK((nelu::lanes::get(m, k) != 0) == (k != l));
                    x[e] = keep;
                }
    }
}

/// nelu::all_finite over an array of N values (whole passes of the vector loop, and the scalar
/// tail): true with values whose sum would overflow, false with +inf, -inf or NaN at any index.
template <class T, std::size_t N>
void check_array_finite() {
    CAPTURE(N);
    CAPTURE(sizeof(T));
    T x[N];
    for (std::size_t i = 0; i < N; ++i) x[i] = i % 3 == 2 ? -T(0) : (i % 2 ? -1 : 1) * std::numeric_limits<T>::max();
    CHECK(nelu::all_finite(x));
    const std::array<T, 3> bad = {std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN()};
    for (std::size_t i = 0; i < N; ++i)
        for (T b : bad) {
            const T keep = x[i];
            x[i] = b;
            CHECK_FALSE(nelu::all_finite(x));
            x[i] = keep;
        }
}

template <class T, std::size_t... N>
void check_arrays_finite(std::index_sequence<N...>) {
    (check_array_finite<T, N + 1>(), ...);
}

}  // namespace

TEST_CASE("lanes: all_finite flags exactly the lanes with an infinity or a NaN, however large the finite values") {
    check_all_finite<double>();
    check_all_finite<float>();
}

TEST_CASE("outputs: all_finite of an array of 1 to 70 values is false exactly when one is infinite or NaN") {
    check_arrays_finite<double>(std::make_index_sequence<70>());
    check_arrays_finite<float>(std::make_index_sequence<70>());
}

#if NELU_LANE_BYTES
namespace {

template <class T, int N>
void check_block() {
    using B = nelu::lanes::Block<T, N>;
    using C = typename B::V;
    CAPTURE(N);
    CAPTURE(sizeof(T));
    CHECK(B::lanes >= N);
    CHECK((B::lanes & (B::lanes - 1)) == 0);
    CHECK(B::lanes * sizeof(T) >= 16);
    CHECK(B::step <= nelu::lanes::Lane<T>::W);
    CHECK(B::lanes % B::step == 0);
    CHECK(sizeof(C) == B::step * sizeof(T));

    for (bool overflow : {false, true}) {
        CAPTURE(overflow);
        T rhs[2][B::lanes] = {};  // the columns beyond N zero, as the printer's braced rows leave them
        for (int c = 0; c < N; ++c) rhs[0][c] = T(0.37) * T(c + 1), rhs[1][c] = T(1) / T(c + 3);
        if (overflow) rhs[1][N - 1] = std::numeric_limits<T>::infinity();
        const T scalar = T(1.7);
        const T minus_zero = -T(0);
        struct Work {  // the table after one T, as in a work struct: its storage 16-byte aligned or not
            T value;
            nelu::lanes::Splats<T, 2> splats;
        } work_struct{scalar, {}};
        work_struct.splats.put(0, scalar), work_struct.splats.put(1, minus_zero);
        T res[3][B::lanes];
        bool finite = true;
        int passes = 0;
        const Work* const work = &work_struct;
        const auto* const table = &work_struct.splats;
        for (int h = 0; h < B::lanes; h += B::step) {
            nelu::lanes::keep_loop<B>(h);
            const Work& w = *nelu::lanes::opaque(work);
            const auto& s = *nelu::lanes::opaque(table);
            const C l0 = nelu::lanes::load_cols<C>(rhs[0] + h);
            const C l1 = nelu::lanes::load_cols<C>(rhs[1] + h);
            const C k0 = nelu::lanes::splat<C>(s, 0, w.value) * l0 - l1;
            const C k1 = k0 / nelu::lanes::splat<C>(s, 0, w.value) + l0;
            const C k2 = nelu::lanes::splat<C>(s, 1, minus_zero) * l0;
            nelu::lanes::store_cols(res[0] + h, k0);
            nelu::lanes::store_cols(res[1] + h, k1);
            nelu::lanes::store_cols(res[2] + h, k2);
            finite = finite && nelu::lanes::finite_cols((k0 - k0) + (k1 - k1));
            ++passes;
        }
        CHECK(passes == B::lanes / B::step);
        CHECK(finite == !overflow);
        for (int c = 0; c < (overflow ? N - 1 : N); ++c) {
            CAPTURE(c);
            const T k0 = scalar * rhs[0][c] - rhs[1][c], k1 = k0 / scalar + rhs[0][c];
            // (bit for bit unless the build fuses a multiply and an add in one form and not the other)
            const T tol = 4 * std::numeric_limits<T>::epsilon();
            CHECK(std::fabs(res[0][c] - k0) <= tol * std::fabs(k0));
            CHECK(std::fabs(res[1][c] - k1) <= tol * std::fabs(k1));
            CHECK((res[2][c] == 0 && std::signbit(res[2][c])));  // -0 times a positive column
        }
        for (int c = N; c < B::lanes; ++c) CHECK((res[0][c] == 0 && res[1][c] == 0));  // padding stays zero
    }
}

template <class T, int... N>
void check_blocks(std::integer_sequence<int, N...>) {
    (check_block<T, N + 1>(), ...);
}

}  // namespace

TEST_CASE("lanes: a kernel's loop over a block of 1 to 8 columns covers each column once, as scalar code computes it") {
    MESSAGE("lanes of this build: " << nelu::lanes::Lane<double>::W << " double, " << nelu::lanes::Lane<float>::W << " float");
    check_blocks<double>(std::make_integer_sequence<int, 8>());
    check_blocks<float>(std::make_integer_sequence<int, 8>());
}
#endif
