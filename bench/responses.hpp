// responses.hpp: the benchmark of the compiled problem kinds osim and iwim (docs/seed-algorithms.md)
// against the seed-algorithm references (runtime/include/nelu/osim.hpp, iwim.hpp) and the dense
// route, on the same states, in the same process as the ID/FD benchmark (bench_main.cpp).
//
//   OSIM/CASE/ENGINE  Lambda^-1 of the spec's operational points (d x d, row major; per point
//                     [angular; linear] along the link's axes at the point):
//                       generated_double / generated_float  the compiled solver
//                       reference   osim_inverse (Chang & Khatib, Table 1 steps 1-5; link axes)
//                       dense       CRBA, body Jacobians, Eigen LLT: (L^-1 J^T)^T (L^-1 J^T)
//   IWIM/CASE/ENGINE  [qdd_0 (nv); M^-1 B column by column]:
//                       generated_double / generated_float  the compiled solver
//                       reference   iwim (Kroeg et al.'s implicit inversion, Sec. 5)
//                       unit_force  iwim_unit_force (their extended unit-force method, m + 1 ABAs)
//                       dense       CRBA, h by RNEA, Eigen LDLT solving [-h, B] in place
//
// Every contender is compared, before anything is timed, with the dense route evaluated in long
// double (the "truth"): osim by the relative error max|x - x*| / max|x*| (double: 1e-9), iwim by
// the forward error of each column relative to the column's largest entry (double: 1e-8) or, when
// that fails, by the backward error |M x - b| / (|M| |x| + |b|) (infinity norms; double: 1e-12),
// since M^-1 of a long chain is ill-conditioned. The points and inputs are read from the spec
// (yaml-cpp) here, independently of the compiler's own reading.
#pragma once

#include <memory>

#include "engine.hpp"

namespace nelu::bench {

/// One compiled osim / iwim solver (bench_solvers.hpp, NELU_BENCH_RESPONSES).
struct ResponseEntry {
    const char* solver;  ///< e.g. "osim_humanoid"
    const char* kind;    ///< "OSIM" or "IWIM"
    const char* name;    ///< the case, e.g. "humanoid_winter_floating"
    const char* urdf;
    const char* spec;
    bool floating;
    SolverFn<double> fn;
    SolverFn<float> fn_f;
    int nout;
};

struct ResponseSet;
struct ResponseSetDeleter {
    void operator()(ResponseSet*) const;
};
using ResponseSetPtr = std::unique_ptr<ResponseSet, ResponseSetDeleter>;

/// The cases and their contenders; throws std::runtime_error on a spec the harness cannot read.
ResponseSetPtr make_responses(const ResponseEntry* entries, int count);
/// Checks every contender against the truth (stderr, and the benchmark context); false when one
/// disagrees.
bool check_responses(ResponseSet& set);
/// Registers the benchmarks KIND/CASE/ENGINE.
void register_responses(ResponseSet& set);

}  // namespace nelu::bench
