// model_summary.cpp: see model_summary.hpp.
#include "model_summary.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "nelu/mimic.hpp"
#include "nelu/reference.hpp"
#include "nelu/state.hpp"

namespace nelu {
namespace {

std::string vec3(const Vec3<double>& v) { return fmt::format("[{:.4g} {:.4g} {:.4g}]", v[0], v[1], v[2]); }

std::string joint_description(const Body& b) {
    switch (b.type) {
        case JointType::Revolute: return fmt::format("{} {}", b.continuous ? "continuous" : "revolute", vec3(b.axis));
        case JointType::Prismatic: return fmt::format("prismatic {}", vec3(b.axis));
        case JointType::Floating: return "floating (q: x y z qx qy qz qw; v: body twist [w; v])";
        case JointType::Fixed: return "fixed (kept as a body boundary)";
    }
    return "?";
}

std::string vector_line(const char* name, const std::vector<double>& v) {
    std::string s = fmt::format("  {:<5}", name);
    for (double x : v) s += fmt::format(" {:>10.5f}", x);
    return s + "\n";
}

}  // namespace

std::string format_model_summary(const LoadResult& r, const std::vector<std::string>& singular_joints) {
    const Model& m = r.model;
    double total_mass = 0;
    for (const Body& b : m.bodies) total_mass += b.I.m;
    std::string s = fmt::format("robot '{}' from {}\n", m.name, r.source);
    s += fmt::format("root link '{}': {}\n", r.root_link,
                     !m.bodies.empty() && m.bodies[0].type == JointType::Floating && m.bodies[0].parent < 0
                         ? "floating base (body 0 on root_joint)" : "fixed base (the world)");
    s += fmt::format("bodies {}, nq {}, nv {}, moving mass {:.6g} kg\n\n", m.num_bodies(), m.nq, m.nv, total_mass);
    s += fmt::format("{:>4}  {:<24} {:<24} {:<24} {:>4} {:>4} {:>10}  {}\n", "#", "body (link)", "parent", "joint",
                     "q", "v", "mass [kg]", "type, axis (body frame)");
    for (int i = 0; i < m.num_bodies(); ++i) {
        const Body& b = m.bodies[i];
        s += fmt::format("{:>4}  {:<24} {:<24} {:<24} {:>4} {:>4} {:>10.5g}  {}\n", i, b.name,
                         b.parent < 0 ? std::string("world") : m.bodies[b.parent].name, b.joint_name,
                         b.nq() ? std::to_string(b.q_index) : "-", b.nv() ? std::to_string(b.v_index) : "-",
                         b.I.m, joint_description(b));
    }
    if (!r.merged.empty()) {
        s += fmt::format("\nmerged fixed joints ({}):\n", r.merged.size());
        for (const MergedJoint& mj : r.merged) s += fmt::format("  {}: link '{}' into '{}'\n", mj.joint, mj.link, mj.into);
    }
    if (!r.mimic_joints.empty()) {
        s += "\nmimic joints (treated as independent):";
        for (const std::string& j : r.mimic_joints) s += " " + j;
        s += "\n";
    }
    if (!r.mimics.empty()) {
        s += fmt::format("\nmimic joints ({}; independent coordinates: nq {}, nv {}):\n", r.mimics.size(),
                         independent_q_slots(m).size(), independent_v_slots(m).size());
        for (const MimicJoint& mj : r.mimics)
            s += fmt::format("  {} = {:.17g} * {} + {:.17g}{}\n", mj.joint, mj.multiplier, mj.master, mj.offset,
                             mj.urdf_master != mj.master ? fmt::format(" (its <mimic> names {})", mj.urdf_master) : std::string());
    }
    if (r.snap > 0) {
        s += fmt::format("\nsnapped (--snap {:g}): {} value{} replaced by structure\n", r.snap, r.snapped.size(), r.snapped.size() == 1 ? "" : "s");
        for (const SnapChange& c : r.snapped) s += "  " + format_snap_change(r.source, c) + "\n";
    }
    if (!r.warnings.empty()) {
        s += fmt::format("\nwarnings ({}):\n", r.warnings.size());
        for (const std::string& w : r.warnings) s += "  warning: " + w + "\n";
    }
    if (singular_joints.empty()) {
        s += "\nforward dynamics: every joint carries inertia (ABA pivots nonzero)\n";
    } else {
        s += "\nwarning: forward dynamics is singular: no mass or inertia moves with joint(s)";
        for (const std::string& j : singular_joints) s += " '" + j + "'";
        s += "\n";
    }
    return s;
}

std::string format_reference_dynamics(const Model& m, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    State st = random_state(m, rng, /*with_fext=*/false);
    std::vector<double> tau(m.nv), qdd(m.nv), M(m.nv * m.nv), Mqdd(m.nv), h(m.nv);
    const SVec<double>* nofext = nullptr;
    rnea(m, st.q.data(), st.qd.data(), st.qdd.data(), nofext, tau.data());
    aba(m, st.q.data(), st.qd.data(), tau.data(), nofext, qdd.data());
    crba(m, st.q.data(), M.data());
    nonlinear_effects(m, st.q.data(), st.qd.data(), nofext, h.data());
    double err_aba = 0, err_crba = 0, norm_qdd = 0, norm_tau = 0;
    for (int i = 0; i < m.nv; ++i) {
        double mq = 0;
        for (int j = 0; j < m.nv; ++j) mq += M[i * m.nv + j] * st.qdd[j];
        err_aba = std::max(err_aba, std::abs(qdd[i] - st.qdd[i]));
        err_crba = std::max(err_crba, std::abs(mq + h[i] - tau[i]));
        norm_qdd = std::max(norm_qdd, std::abs(st.qdd[i]));
        norm_tau = std::max(norm_tau, std::abs(tau[i]));
    }
    std::vector<double> diag(m.nv);
    for (int i = 0; i < m.nv; ++i) diag[i] = M[i * m.nv + i];
    std::string s = fmt::format("reference dynamics at a random state (seed {}), gravity {}:\n", seed, vec3(m.gravity.l));
    s += vector_line("q", st.q) + vector_line("qd", st.qd) + vector_line("qdd", st.qdd) +
         vector_line("tau", tau) + vector_line("M_ii", diag);
    s += fmt::format("  check: |ABA(q, qd, RNEA(q, qd, qdd)) - qdd| / |qdd| = {:.2e}\n", err_aba / std::max(norm_qdd, 1e-300));
    s += fmt::format("  check: |CRBA(q) qdd + h(q, qd) - RNEA(q, qd, qdd)| / |tau| = {:.2e}\n", err_crba / std::max(norm_tau, 1e-300));
    return s;
}

}  // namespace nelu
