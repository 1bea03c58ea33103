// scaling_driver.cpp: time per call of one generated solver, for the scaling run of
// scripts/bench.sh (bench/scaling.py builds it once per solver):
//   g++ -O2 -std=c++17 -I runtime/include -I DIR -DNELU_SOLVER=NAME \
//       -DNELU_SOLVER_HEADER='"NAME.hpp"' bench/scaling_driver.cpp DIR/NAME.o
// Inputs: 16 random states (q in [-pi, pi], everything else in [-1, 1]; fixed-base revolute
// robots, as `nelu robot gen` makes them). Prints "double_ns X" and "float_ns Y": the median over
// 7 repetitions of the mean CPU time per call, each repetition cycling through the states for at
// least 0.1 s, and "double_status S" / "float_status S": the bitwise or of the calls' statuses
// (0: every call succeeded).
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <random>
#include <vector>

#include NELU_SOLVER_HEADER

#include "timing.hpp"

namespace {

constexpr int kStates = 16;

template <class T> struct Inputs {
    std::vector<std::vector<T>> q, qd, in;
};

template <class T> Inputs<T> make_inputs() {
    std::mt19937_64 rng(6);
    std::uniform_real_distribution<double> unit(-1, 1);
    Inputs<T> x;
    for (int k = 0; k < kStates; ++k) {
        std::vector<T> q(NELU_NQ), qd(NELU_NV), in(NELU_NIN);
        for (T& v : q) v = T(3.14159 * unit(rng));
        for (T& v : qd) v = T(unit(rng));
        for (T& v : in) v = T(unit(rng));
        x.q.push_back(q), x.qd.push_back(qd), x.in.push_back(in);
    }
    return x;
}

template <class T, class F> double median_ns_per_call(F solver, int& status) {
    const Inputs<T> x = make_inputs<T>();
    std::vector<T> out(NELU_NOUT);
    status = 0;
    return nelu::bench::median_ns_per_call(
        [&](int k) { status |= solver(x.q[k].data(), x.qd[k].data(), x.in[k].data(), out.data()); }, 7, kStates);
}

}  // namespace

int main() {
    int status_d = 0, status_f = 0;
    std::printf("double_ns %.1f\n", median_ns_per_call<double>(&NELU_SOLVER, status_d));
    std::printf("float_ns %.1f\n", median_ns_per_call<float>(&NELU_CAT(NELU_SOLVER, _f), status_f));
    std::printf("double_status %d\nfloat_status %d\n", status_d, status_f);
    return 0;
}
