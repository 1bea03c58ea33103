// batch_driver.cpp: time per state of a generated solver's batch forms (nelu compile --batch) beside
// its scalar entry points, for scripts/batch_bench.sh. Built from one solver's files, with the batch
// source included here so that its lane program can be timed alone too:
//   g++ -O2 [-march=...] -std=c++17 -I runtime/include -I bench -I DIR -DNELU_SOLVER=NAME
//       -DNELU_BATCH_SOURCE='"NAME_batch.cpp"' [-DNELU_DERIVATIVES] bench/batch_driver.cpp DIR/NAME.cpp
// Inputs: 256 random states (q in [-pi, pi], a floating base's quaternion normalized, qd and in in
// [-1, 1]), state-major. Prints, per state, the medians over 7 repetitions of the mean CPU time
// (each repetition at least 0.1 s):
//   scalar_ns     NAME on each of the 256 states in turn        scalar_f_ns   NAME_f
//   batch_ns      NAME_batch(256, ...)                          batch_f_ns    NAME_f_batch
//   lanes_ns      the lane program alone on the same states already in lanes (what a lane-major
//                 layout would cost: no transposition)          lanes_f_ns    in float
// and with -DNELU_DERIVATIVES the same for NAME_derivatives (derivatives_*); "width W WF" (the lanes
// of this build) and "status S", the bitwise or of every call's status and count of failed states
// (0: all succeeded).
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include NELU_BATCH_SOURCE

#include "timing.hpp"

namespace {

constexpr int kStates = 256;

/// The states, state-major, in double and float, and lane-major (W states per block, each value's
/// W lanes together) for the lane program.
template <class T>
struct Arrays {
    std::vector<T> q, qd, in, out, jac;
    std::vector<nelu::lanes::Vec<T>> lq, lqd, lin, lout, ljac;
};

template <class T, int N>
std::vector<nelu::lanes::Vec<T>> lane_major(const std::vector<T>& rows) {
    constexpr int W = nelu::lanes::Lane<T>::W;
    std::vector<nelu::lanes::Vec<T>> v(static_cast<std::size_t>(kStates / W * (N > 0 ? N : 1)));
    for (int b = 0; b < kStates / W; ++b)
        for (int k = 0; k < N; ++k)
            for (int l = 0; l < W; ++l) nelu::lanes::set(v[static_cast<std::size_t>(b * N + k)], l, rows[static_cast<std::size_t>((b * W + l) * N + k)]);
    return v;
}

template <class T>
Arrays<T> arrays(const std::vector<double>& q, const std::vector<double>& qd, const std::vector<double>& in, int njac) {
    Arrays<T> a;
    a.q.assign(q.begin(), q.end()), a.qd.assign(qd.begin(), qd.end()), a.in.assign(in.begin(), in.end());
    a.out.resize(kStates * NELU_NOUT), a.jac.resize(static_cast<std::size_t>(kStates * NELU_NOUT * njac));
    a.lq = lane_major<T, NELU_NQ>(a.q), a.lqd = lane_major<T, NELU_NV>(a.qd), a.lin = lane_major<T, NELU_NIN>(a.in);
    a.lout.resize(kStates * NELU_NOUT), a.ljac.resize(static_cast<std::size_t>(kStates * NELU_NOUT * njac + 1));
    return a;
}

/// Prints PREFIX scalar SUFFIX _ns, batch and lanes: the three forms of one entry point in scalar T.
/// `scalar(q, qd, in, out, jac)` and `batch(n, q, qd, in, out, jac, status)` call the entry points
/// (jac unused by value solvers), `lanes` is the lane program.
template <class T, class Scalar, class Batch, class Lanes>
void time_forms(const char* prefix, Arrays<T>& a, int njac, Scalar scalar, Batch batch, Lanes lanes, int& status, int& failed) {
    constexpr int W = nelu::lanes::Lane<T>::W;
    const std::size_t nj = static_cast<std::size_t>(njac);
    T* jac = njac ? a.jac.data() : nullptr;
    std::vector<int> statuses(kStates);
    auto per_state = [](auto&& call) { return nelu::bench::median_ns_per_call([&](int) { call(); }, 7, 1) / kStates; };
    const double ns_scalar = per_state([&] {
        for (std::size_t k = 0; k < kStates; ++k)
            status |= scalar(&a.q[k * NELU_NQ], &a.qd[k * NELU_NV], &a.in[k * NELU_NIN], &a.out[k * NELU_NOUT], jac + k * NELU_NOUT * nj);
    });
    const double ns_batch = per_state([&] { failed += batch(kStates, a.q.data(), a.qd.data(), a.in.data(), a.out.data(), jac, statuses.data()); });
    const double ns_lanes = per_state([&] {
        for (std::size_t b = 0; b < kStates / W; ++b)
            failed += nelu::lanes::any(lanes(&a.lq[b * NELU_NQ], &a.lqd[b * NELU_NV], &a.lin[b * NELU_NIN], &a.lout[b * NELU_NOUT],
                                             &a.ljac[b * NELU_NOUT * nj]) != NELU_STATUS_OK);
    });
    const char* suffix = sizeof(T) == sizeof(float) ? "_f" : "";
    std::printf("%sscalar%s_ns %.2f\n%sbatch%s_ns %.2f\n%slanes%s_ns %.2f\n", prefix, suffix, ns_scalar, prefix, suffix, ns_batch, prefix,
                suffix, ns_lanes);
}

/// A value solver's entry points with the derivative solvers' arguments (jac unused).
template <class T>
auto value_scalar(int (*f)(const T*, const T*, const T*, T*)) {
    return [f](const T* q, const T* qd, const T* in, T* out, T*) { return f(q, qd, in, out); };
}
template <class T>
auto value_batch(int (*f)(int, const T*, const T*, const T*, T*, int*)) {
    return [f](int n, const T* q, const T* qd, const T* in, T* out, T*, int* st) { return f(n, q, qd, in, out, st); };
}

}  // namespace

int main() {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> q(kStates * NELU_NQ), qd(kStates * NELU_NV), in(kStates * NELU_NIN);
    for (int k = 0; k < kStates; ++k) {
        for (int i = 0; i < NELU_NQ; ++i) q[k * NELU_NQ + i] = M_PI * u(rng);
        if (NELU_NQ == NELU_NV + 1) {  // a floating base first: q[3..6] is a unit quaternion, q[0..2] a position
            double n = 0;
            for (int i = 3; i < 7; ++i) n += q[k * NELU_NQ + i] * q[k * NELU_NQ + i];
            for (int i = 3; i < 7; ++i) q[k * NELU_NQ + i] /= std::sqrt(n);
        }
        for (int i = 0; i < NELU_NV; ++i) qd[k * NELU_NV + i] = u(rng);
        for (int i = 0; i < NELU_NIN; ++i) in[k * NELU_NIN + i] = u(rng);
    }
#ifdef NELU_DERIVATIVES
    constexpr int njac = NELU_CAT(NELU_SOLVER, _NJAC);
#else
    constexpr int njac = 0;
#endif
    Arrays<double> d = arrays<double>(q, qd, in, njac);
    Arrays<float> f = arrays<float>(q, qd, in, njac);
    int status = 0, failed = 0;
#define NELU_FN(suffix) NELU_CAT(NELU_SOLVER, suffix)
    time_forms("", d, 0, value_scalar<double>(NELU_SOLVER), value_batch<double>(NELU_FN(_batch)), NELU_FN(_lanes_impl)<double>, status, failed);
    time_forms("", f, 0, value_scalar<float>(NELU_FN(_f)), value_batch<float>(NELU_FN(_f_batch)), NELU_FN(_lanes_impl)<float>, status, failed);
#ifdef NELU_DERIVATIVES
    time_forms("derivatives_", d, njac, NELU_FN(_derivatives), NELU_FN(_derivatives_batch), NELU_FN(_derivatives_lanes_impl)<double>, status, failed);
    time_forms("derivatives_", f, njac, NELU_FN(_derivatives_f), NELU_FN(_derivatives_f_batch), NELU_FN(_derivatives_lanes_impl)<float>, status,
               failed);
#endif
    std::printf("width %d %d\nstatus %d %d\n", nelu::lanes::Lane<double>::W, nelu::lanes::Lane<float>::W, status, failed);
    return 0;
}
