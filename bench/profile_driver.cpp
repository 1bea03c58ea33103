// profile_driver.cpp: the driver of scripts/profile.sh. Calls one generated solver (double) on
// 16 fixed random states, cycling through them:
//   g++ -O2 -std=c++17 -I runtime/include -I DIR -DNELU_SOLVER=NAME -DNELU_SOLVER_HEADER='"NAME.hpp"' \
//       [-DNELU_FLOATING=1] bench/profile_driver.cpp DIR/NAME.o
//   ./driver calls N     N calls, no timing (run under cachegrind twice, with two N: the difference
//                        of the totals divided by the difference of N is the steady-state cost of
//                        one call, without the start-up of the process)
//   ./driver time        median over 9 repetitions of the mean CPU time per call (each repetition
//                        at least 0.1 s); prints "ns X" and "min_ns Y" (the fastest repetition,
//                        the least disturbed by other work on a shared machine)
// Both print "status S": the bitwise or of the statuses (0: every call succeeded).
// With -DNELU_DERIVATIVES=1 the entry point called is NAME_derivatives (outputs and Jacobian).
// States: q in [-pi, pi], qd and in in [-1, 1]; with NELU_FLOATING the base quaternion q[3..6] is
// normalized (nelu's floating-base layout: q = [x y z qx qy qz qw joints...]).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

#include NELU_SOLVER_HEADER

#include "timing.hpp"
#ifndef NELU_FLOATING
#define NELU_FLOATING 0
#endif
#ifndef NELU_DERIVATIVES
#define NELU_DERIVATIVES 0
#endif

namespace {

constexpr int kStates = 16;

struct Inputs {
    std::vector<std::vector<double>> q, qd, in;
};

Inputs make_inputs() {
    std::mt19937_64 rng(6);
    std::uniform_real_distribution<double> unit(-1, 1);
    Inputs x;
    for (int k = 0; k < kStates; ++k) {
        std::vector<double> q(NELU_NQ), qd(NELU_NV), in(NELU_NIN);
        for (double& v : q) v = 3.14159 * unit(rng);
        for (double& v : qd) v = unit(rng);
        for (double& v : in) v = unit(rng);
        if (NELU_FLOATING && NELU_NQ >= 7) {
            double n = 0;
            for (int i = 3; i < 7; ++i) n += q[i] * q[i];
            for (int i = 3; i < 7; ++i) q[i] /= std::sqrt(n);
        }
        x.q.push_back(q), x.qd.push_back(qd), x.in.push_back(in);
    }
    return x;
}

// The solver is called through a volatile pointer so that nothing of it is inlined or hoisted.
#if NELU_DERIVATIVES
constexpr long kJac = long(NELU_NOUT) * NELU_CAT(NELU_SOLVER, _NJAC);
int (*volatile derivatives)(const double*, const double*, const double*, double*, double*) = &NELU_CAT(NELU_SOLVER, _derivatives);
double jac[kJac > 0 ? kJac : 1];
int solver(const double* q, const double* qd, const double* in, double* out) { return derivatives(q, qd, in, out, jac); }
#else
int (*volatile solver)(const double*, const double*, const double*, double*) = &NELU_SOLVER;
#endif

}  // namespace

int main(int argc, char** argv) {
    const Inputs x = make_inputs();
    std::vector<double> out(NELU_NOUT);
    int status = 0;
    if (argc == 3 && std::strcmp(argv[1], "calls") == 0) {
        const long n = std::atol(argv[2]);
        for (long c = 0; c < n; ++c) {
            const int k = int(c % kStates);
            status |= solver(x.q[k].data(), x.qd[k].data(), x.in[k].data(), out.data());
        }
    } else if (argc == 2 && std::strcmp(argv[1], "time") == 0) {
        const std::vector<double> reps = nelu::bench::ns_per_call(
            [&](int k) { status |= solver(x.q[k].data(), x.qd[k].data(), x.in[k].data(), out.data()); }, 9, kStates);
        std::printf("ns %.1f\nmin_ns %.1f\n", reps[reps.size() / 2], reps[0]);
    } else {
        std::fprintf(stderr, "usage: %s calls N | time\n", argv[0]);
        return 2;
    }
    double sink = 0;
    for (double v : out) sink += v;
    std::printf("status %d\nsink %g\n", status, sink);
    return 0;
}
