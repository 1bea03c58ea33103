// derivatives_driver.cpp: time per call of a generated solver, of its NAME_derivatives, and of the
// central differences of the value solver that would give the same Jacobian (2 (2 nv + n_in) value
// calls), for scripts/derivatives_bench.sh:
//   g++ -O2 -std=c++17 -I runtime/include -I DIR -DNELU_SOLVER=NAME -DNELU_SOLVER_HEADER='"NAME.hpp"' \
//       bench/derivatives_driver.cpp DIR/NAME.cpp
// Inputs: 16 random states (q in [-1, 1], a floating base's quaternion normalized, everything else
// in [-1, 1]). Prints "value_ns X", "derivatives_ns Y", "differences_ns Z": medians over 7
// repetitions of the mean CPU time per call, each repetition cycling through the states for at
// least 0.1 s; and "status S": the bitwise or of every call's status (0: all succeeded).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <vector>

#include NELU_SOLVER_HEADER

#include "timing.hpp"

#define NELU_NJAC NELU_CAT(NELU_SOLVER, _NJAC)
#define NELU_DERIVATIVES NELU_CAT(NELU_SOLVER, _derivatives)

namespace {

constexpr int kStates = 16;

}  // namespace

int main() {
    std::mt19937_64 rng(7);
    auto u = [&] { return -1.0 + 2.0 * double(rng() >> 11) * 0x1.0p-53; };
    std::vector<std::vector<double>> q(kStates, std::vector<double>(NELU_NQ)), qd(kStates, std::vector<double>(NELU_NV)),
        in(kStates, std::vector<double>(NELU_NIN));
    for (int k = 0; k < kStates; ++k) {
        for (double& x : q[k]) x = u();
        for (double& x : qd[k]) x = u();
        for (double& x : in[k]) x = u();
        if (NELU_NQ == NELU_NV + 1) {  // a floating base first: its quaternion q[3..6] is a unit quaternion
            double n = 0;
            for (int i = 3; i < 7; ++i) n += q[k][i] * q[k][i];
            for (int i = 3; i < 7; ++i) q[k][i] /= std::sqrt(n);
        }
    }
    std::vector<double> out(NELU_NOUT), jac(NELU_NOUT * NELU_NJAC), plus(NELU_NOUT), minus(NELU_NOUT);
    int status = 0;
    const double value = nelu::bench::median_ns_per_call([&](int k) { status |= NELU_SOLVER(q[k].data(), qd[k].data(), in[k].data(), out.data()); });
    const double deriv = nelu::bench::median_ns_per_call([&](int k) {
        status |= NELU_DERIVATIVES(q[k].data(), qd[k].data(), in[k].data(), out.data(), jac.data());
    });
    // central differences along every column (joint coordinates, velocities, inputs: the perturbed
    // coordinate of a floating base's orientation is its quaternion component, which costs the same)
    const double diffs = nelu::bench::median_ns_per_call([&](int k) {
        std::vector<double>* vecs[3] = {&q[k], &qd[k], &in[k]};
        const int sizes[3] = {NELU_NV, NELU_NV, NELU_NIN};
        int col = 0;
        for (int g = 0; g < 3; ++g)
            for (int i = 0; i < sizes[g]; ++i, ++col) {
                double& x = (*vecs[g])[static_cast<std::size_t>(std::min(i, int(vecs[g]->size()) - 1))];
                const double x0 = x;
                x = x0 + 1e-6;
                status |= NELU_SOLVER(q[k].data(), qd[k].data(), in[k].data(), plus.data());
                x = x0 - 1e-6;
                status |= NELU_SOLVER(q[k].data(), qd[k].data(), in[k].data(), minus.data());
                x = x0;
                for (int o = 0; o < NELU_NOUT; ++o) jac[o * NELU_NJAC + col] = (plus[o] - minus[o]) / 2e-6;
            }
    });
    std::printf("value_ns %.1f\nderivatives_ns %.1f\ndifferences_ns %.1f\nstatus %d\n", value, deriv, diffs, status);
    return 0;
}
