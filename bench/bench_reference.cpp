// bench_reference.cpp: nelu_bench_reference URDF [--floating-base]: time per call of nelu's
// reference RNEA and ABA (runtime/include/nelu/reference.hpp) on one robot, for the scaling run of
// scripts/bench.sh. Prints "rnea_ns X" and "aba_ns Y": the median over 7 repetitions of the mean
// CPU time per call, each repetition cycling through 16 random states for at least 0.1 s.
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <random>

#include "load.hpp"
#include "nelu/reference.hpp"
#include "nelu/state.hpp"
#include "timing.hpp"

using nelu::bench::median_ns_per_call;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: nelu_bench_reference URDF [--floating-base]\n");
        return 2;
    }
    nelu::LoadOptions options;
    options.floating_base = argc > 2 && std::strcmp(argv[2], "--floating-base") == 0;
    const nelu::Model m = nelu::load_urdf_file(argv[1], options).model;
    std::mt19937_64 rng(6);
    std::vector<nelu::State> states;
    for (int k = 0; k < 16; ++k) states.push_back(nelu::random_state(m, rng));
    std::vector<double> out(m.nv);
    const double rnea = median_ns_per_call([&](int k) {
        const nelu::State& s = states[k];
        nelu::rnea(m, s.q.data(), s.qd.data(), s.qdd.data(), s.fext.data(), out.data());
    });
    const double aba = median_ns_per_call([&](int k) {
        const nelu::State& s = states[k];
        nelu::aba(m, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(), out.data());
    });
    std::printf("rnea_ns %.1f\naba_ns %.1f\n", rnea, aba);
    return 0;
}
