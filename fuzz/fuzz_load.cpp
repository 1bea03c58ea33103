// fuzz_load.cpp: libFuzzer target for the `load` pass.
//
// Arbitrary bytes are read as URDF text, loaded with a fixed and with a floating base, and every
// model that loads is pushed through the model-building consumers: the structural invariants the
// loader promises (load.hpp, model.hpp), singular_fd_joints, and the reference RNEA, ABA and CRBA.
// nelu::InputError is the expected outcome for bad input. Anything else is a finding: another
// exception type (libFuzzer reports it as a deadly signal), a crash, a hang, a sanitizer report, or
// a broken invariant (abort with a message).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "diagnostics.hpp"
#include "load.hpp"
#include "model_check.hpp"
#include "nelu/reference.hpp"

namespace {

constexpr std::size_t kMaxInput = 64 * 1024;  // larger inputs are skipped: keep each run fast
constexpr int kMaxBodies = 200;                // no reference dynamics on larger models

[[noreturn]] void fail(const char* what, const std::string& detail = {}) {
    std::fprintf(stderr, "fuzz_load: invariant violated: %s %s\n", what, detail.c_str());
    std::abort();
}

/// What load.hpp and model.hpp promise about every loaded model.
void check_invariants(const nelu::LoadResult& r, bool floating) {
    const nelu::Model& m = r.model;
    const int nb = m.num_bodies();
    int nq = 0, nv = 0;
    for (int i = 0; i < nb; ++i) {
        const nelu::Body& b = m.bodies[i];
        if (b.parent < -1 || b.parent >= i) fail("parent(i) < i", b.name);
        if (b.q_index != nq || b.v_index != nv) fail("q/v indices", b.name);
        nq += b.nq(), nv += b.nv();
    }
    if (nq != m.nq || nv != m.nv) fail("nq/nv totals");
    if (floating && (nb == 0 || m.bodies[0].type != nelu::JointType::Floating || m.bodies[0].parent != -1))
        fail("floating base is body 0");
    if (!r.links.count(r.root_link)) fail("root link in the link map", r.root_link);
    for (const auto& [name, f] : r.links)
        if (f.body < -1 || f.body >= nb) fail("link frame body index", name);
}

/// Reference dynamics at q = 0 (identity quaternions), small velocities, accelerations and torques.
/// Singular models give inf/NaN results, which are fine; only memory errors and UB are findings.
void run_dynamics(const nelu::Model& m) {
    std::vector<double> q(m.nq, 0.0), qd(m.nv, 0.1), qdd(m.nv, 0.2), tau(m.nv, 0.0), out(m.nv, 0.0);
    for (const nelu::Body& b : m.bodies)
        if (b.type == nelu::JointType::Floating) q[b.q_index + 6] = 1.0;  // [x y z qx qy qz qw]
    std::vector<nelu::SVec<double>> fext(m.num_bodies(), nelu::zero6<double>());
    nelu::rnea(m, q.data(), qd.data(), qdd.data(), fext.data(), tau.data());
    nelu::aba(m, q.data(), qd.data(), tau.data(), fext.data(), out.data());
    std::vector<double> M(static_cast<std::size_t>(m.nv) * m.nv);
    nelu::crba(m, q.data(), M.data());
    (void)nelu::singular_fd_joints(m);
}

/// Load with the given options into `r`; false on InputError.
bool try_load(const std::string& text, const nelu::LoadOptions& opt, nelu::LoadResult& r) {
    try {
        r = nelu::load_urdf_string(text, "fuzz", opt);
        return true;
    } catch (const nelu::InputError&) {
        return false;  // bad input, reported as such: the expected outcome
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > kMaxInput) return 0;
    const std::string text(reinterpret_cast<const char*>(data), size);
    for (bool floating : {false, true}) {
        nelu::LoadOptions opt;
        opt.floating_base = floating;
        nelu::LoadResult r;
        if (!try_load(text, opt, r)) continue;
        check_invariants(r, floating);
        if (r.model.num_bodies() <= kMaxBodies) run_dynamics(r.model);
        // Keeping a merged fixed joint as a body boundary must load too (same values, one more body).
        if (!floating && !r.merged.empty()) {
            opt.keep_fixed = {r.merged.front().joint};
            nelu::LoadResult k;
            if (!try_load(text, opt, k)) fail("--keep-fixed of a merged fixed joint was rejected", opt.keep_fixed[0]);
            check_invariants(k, floating);
            if (k.model.num_bodies() != r.model.num_bodies() + 1) fail("--keep-fixed adds one body");
            if (k.model.num_bodies() <= kMaxBodies) run_dynamics(k.model);
        }
    }
    return 0;
}
