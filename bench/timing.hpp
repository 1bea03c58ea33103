// timing.hpp: what the benchmark's timing programs share (bench_reference.cpp and the standalone
// drivers scaling_driver.cpp, profile_driver.cpp, derivatives_driver.cpp, profile/copies_driver.cpp,
// and the Pinocchio drivers): CPU time, the time per call as repetitions of a loop over fixed states,
// and alternating rounds of several contenders. With NELU_SOLVER
// defined (-DNELU_SOLVER=NAME), also the generated solver's sizes as NELU_NQ, NELU_NV, NELU_NIN,
// NELU_NOUT (from NAME_NQ ... in its header, included before this one).
#pragma once

#include <algorithm>
#include <ctime>
#include <functional>
#include <vector>

#ifdef NELU_SOLVER
#define NELU_CAT2(a, b) a##b
#define NELU_CAT(a, b) NELU_CAT2(a, b)
#define NELU_NQ NELU_CAT(NELU_SOLVER, _NQ)
#define NELU_NV NELU_CAT(NELU_SOLVER, _NV)
#define NELU_NIN NELU_CAT(NELU_SOLVER, _NIN)
#define NELU_NOUT NELU_CAT(NELU_SOLVER, _NOUT)
#endif

namespace nelu::bench {

/// CPU time of this thread in ns: time the machine spent on other work is not counted.
inline double cpu_ns() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return 1e9 * double(t.tv_sec) + double(t.tv_nsec);
}

/// The mean CPU time per call of `reps` repetitions, ascending; each repetition calls call(0) ..
/// call(states - 1) in turn until at least 0.1 s have passed.
template <class F> std::vector<double> ns_per_call(F&& call, int reps = 7, int states = 16) {
    std::vector<double> out;
    for (int r = 0; r < reps; ++r) {
        long calls = 0;
        const double start = cpu_ns();
        double elapsed = 0;
        do {
            for (int k = 0; k < states; ++k) call(k);
            calls += states;
            elapsed = cpu_ns() - start;
        } while (elapsed < 1e8);
        out.push_back(elapsed / double(calls));
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// The median of ns_per_call.
template <class F> double median_ns_per_call(F&& call, int reps = 7, int states = 16) {
    const std::vector<double> r = ns_per_call(call, reps, states);
    return r[r.size() / 2];
}

/// Medians over `rounds` rounds of alternating batches, one per contender in the order given: each
/// batch calls call(0) .. call(states - 1) in turn until at least 20 ms have passed, so that every
/// contender meets the machine in the same states (the Pinocchio drivers).
inline std::vector<double> alternating_medians(const std::vector<std::function<void(int)>>& calls, int states, int rounds) {
    std::vector<std::vector<double>> ns(calls.size());
    for (int r = 0; r < rounds; ++r)
        for (std::size_t c = 0; c < calls.size(); ++c) {
            long n = 0;
            const double start = cpu_ns();
            double elapsed = 0;
            do {
                for (int k = 0; k < states; ++k) calls[c](k);
                n += states;
                elapsed = cpu_ns() - start;
            } while (elapsed < 2e7);
            ns[c].push_back(elapsed / double(n));
        }
    std::vector<double> medians;
    for (std::vector<double>& v : ns) {
        std::sort(v.begin(), v.end());
        medians.push_back(v[v.size() / 2]);
    }
    return medians;
}

}  // namespace nelu::bench
