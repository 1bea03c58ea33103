// model_summary.cpp: see model_summary.hpp.
#include "model_summary.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

nlohmann::ordered_json vec3_json(const Vec3<double>& v) { return {v[0], v[1], v[2]}; }

nlohmann::ordered_json mat3_json(const Mat3<double>& M) {
    return {vec3_json({{M(0, 0), M(0, 1), M(0, 2)}}), vec3_json({{M(1, 0), M(1, 1), M(1, 2)}}), vec3_json({{M(2, 0), M(2, 1), M(2, 2)}})};
}

/// One body of `nelu model --json`: its joint, numbering and inertia (body frame).
nlohmann::ordered_json body_json(const Model& m, int i) {
    const Body& b = m.bodies[i];
    Vec3<double> c;
    Mat3<double> Ic;
    com_inertia(b.I, c, Ic);
    nlohmann::ordered_json j;
    j["index"] = i;
    j["link"] = b.name;
    j["parent"] = b.parent < 0 ? std::string("world") : m.bodies[b.parent].name;
    j["joint"] = b.joint_name;
    j["type"] = b.type == JointType::Revolute && b.continuous ? "continuous" : joint_type_name(b.type);
    if (b.type == JointType::Revolute || b.type == JointType::Prismatic) j["axis"] = vec3_json(b.axis);
    j["q_index"] = b.nq() ? nlohmann::ordered_json(b.q_index) : nlohmann::ordered_json();
    j["v_index"] = b.nv() ? nlohmann::ordered_json(b.v_index) : nlohmann::ordered_json();
    j["nq"] = b.nq();
    j["nv"] = b.nv();
    if (b.has_limits) j["limits"] = {b.lower, b.upper};
    if (b.is_mimic()) j["mimic"] = {{"master", m.bodies[b.mimic].joint_name}, {"multiplier", b.multiplier}, {"offset", b.offset}};
    j["tree_transform"] = {{"rotation", mat3_json(b.X_tree.E)}, {"translation", vec3_json(b.X_tree.r)}};
    j["mass"] = b.I.m;
    j["com"] = vec3_json(c);
    j["inertia_com"] = mat3_json(Ic);
    return j;
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

std::string format_model_summary_json(const LoadResult& r, const std::vector<std::string>& singular_joints) {
    const Model& m = r.model;
    double total_mass = 0;
    for (const Body& b : m.bodies) total_mass += b.I.m;
    nlohmann::ordered_json j;
    j["robot"] = m.name;
    j["source"] = r.source;
    j["root_link"] = r.root_link;
    j["floating_base"] = !m.bodies.empty() && m.bodies[0].type == JointType::Floating && m.bodies[0].parent < 0;
    j["nq"] = m.nq;
    j["nv"] = m.nv;
    j["independent_nq"] = independent_q_slots(m).size();
    j["independent_nv"] = independent_v_slots(m).size();
    j["moving_mass"] = total_mass;
    j["gravity"] = vec3_json(m.gravity.l);
    nlohmann::ordered_json bodies = nlohmann::ordered_json::array();
    for (int i = 0; i < m.num_bodies(); ++i) bodies.push_back(body_json(m, i));
    j["bodies"] = bodies;
    nlohmann::ordered_json merged = nlohmann::ordered_json::array();
    for (const MergedJoint& mj : r.merged) merged.push_back({{"joint", mj.joint}, {"link", mj.link}, {"into", mj.into}});
    j["merged_fixed_joints"] = merged;
    nlohmann::ordered_json mimics = nlohmann::ordered_json::array();
    for (const MimicJoint& mj : r.mimics)
        mimics.push_back({{"joint", mj.joint}, {"master", mj.master}, {"urdf_master", mj.urdf_master}, {"multiplier", mj.multiplier},
                          {"offset", mj.offset}});
    j["mimic"] = mimics;
    j["ignored_mimic"] = r.mimic_joints;
    if (r.snap > 0) {
        nlohmann::ordered_json changes = nlohmann::ordered_json::array();
        for (const SnapChange& c : r.snapped) changes.push_back(format_snap_change(r.source, c));
        j["snap"] = {{"tolerance", r.snap}, {"changes", changes}};
    }
    j["warnings"] = r.warnings;
    j["fd_singular_joints"] = singular_joints;
    return j.dump(2) + "\n";
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
