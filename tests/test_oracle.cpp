// The reference algorithms against an independent implementation: ../shared/oracle/*.json holds
// RNEA, ABA and CRBA values computed by Pinocchio 3.7.0 (see its README.md) for the URDFs in
// ../shared/robots. A convention error that nelu's algorithms and generated code could share (a
// sign, a frame, an inertia transform) shows up here.
//
// Conventions converted on the way in (oracle -> nelu):
//   joints    matched by name (Body::joint_name); the floating base is nelu's body 0 "root_joint".
//   q         one angle or displacement per joint; root_joint [x y z qx qy qz qw] in both.
//   qd, qdd   root_joint LINEAR first in the oracle, [v; w]; nelu is angular first, [w; v].
//   tau       root_joint wrench linear first [f; n] in the oracle; nelu [n; f].
//   fext      per URDF link, in the link frame at the link origin, angular first in both. A link
//             merged into a body by a fixed joint sits at X_link_body (body -> link), so its wrench
//             is X_link_body^T f in body coordinates.
//   M         rows and columns permuted by the same velocity map.
//   gravity   the oracle's [0, 0, -9.81] in the world frame, set on the model.
// When ../shared/oracle is absent (or nlohmann-json is not installed) the test says it is skipped.
// The derivatives of three robots' solvers are compared by default, the others' in the test case
// marked "extended" (test_oracle_extended, ctest -L extended). Contact dynamics and impulses, values
// and derivatives, are compared with Pinocchio's numbers kept in the project (tests/oracle/contacts,
// written by scripts/contact_oracle.sh): the last test case.
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "load.hpp"
#include "pipeline.hpp"
#include "verify.hpp"
#include "nelu/model.hpp"
#include "nelu/reference.hpp"
#include "test_support.hpp"

#if __has_include(<nlohmann/json.hpp>)
#include <nlohmann/json.hpp>
#define NELU_HAVE_NLOHMANN_JSON 1
#else
#define NELU_HAVE_NLOHMANN_JSON 0
#endif

namespace fs = std::filesystem;

#if NELU_HAVE_NLOHMANN_JSON
namespace {

using nelu::JointType;
using nelu::Model;
using nelu::SVec;
using json = nlohmann::json;

constexpr double kTol = 1e-9;

/// Where each oracle velocity slot goes in nelu: nelu_v[v_map[k]] = oracle_v[k].
struct JointMap {
    struct Joint {
        std::string name;
        int body = -1;
        int oracle_v = 0;  // first velocity slot in the oracle's order
    };
    std::vector<Joint> joints;
    std::vector<int> v_map;
};

/// Match the oracle's joints to nelu's bodies by name; the floating base's six velocities are
/// reordered from [v; w] to [w; v].
JointMap map_joints(const json& oracle_joints, const Model& m) {
    JointMap map;
    int ov = 0;
    for (const json& j : oracle_joints) {
        const std::string name = j.at("name").get<std::string>();
        const int nq = j.at("nq").get<int>(), nv = j.at("nv").get<int>();
        int body = -1;
        for (int i = 0; i < m.num_bodies(); ++i)
            if (m.bodies[i].joint_name == name) body = i;
        INFO("oracle joint " << name);
        REQUIRE(body >= 0);
        const nelu::Body& b = m.bodies[body];
        // Pinocchio's unbounded revolute joints (JointModelRUB*) have nq = 2 (cos, sin); the files
        // give their angle, as nelu takes it, and nelu loads them as continuous revolute joints.
        const std::string type = j.at("type").get<std::string>();
        const bool unbounded = type.rfind("JointModelRUB", 0) == 0 || type.find("RevoluteUnbounded") != std::string::npos;
        if (unbounded) {
            CHECK(b.type == JointType::Revolute);
            CHECK(b.continuous);
        }
        REQUIRE(b.nq() == (unbounded ? 1 : nq));
        REQUIRE(b.nv() == nv);
        for (int k = 0; k < nv; ++k) map.v_map.push_back(b.v_index + (b.type == JointType::Floating ? (k + 3) % 6 : k));
        map.joints.push_back({name, body, ov});
        ov += nv;
    }
    REQUIRE(ov == m.nv);  // every nelu velocity is matched exactly once
    std::vector<int> seen(m.nv, 0);
    for (int v : map.v_map) ++seen[v];
    for (int v = 0; v < m.nv; ++v) CHECK(seen[v] == 1);
    return map;
}

/// nelu's flat vector from a {joint: value or [values]} object, velocities permuted.
std::vector<double> velocity_vector(const json& per_joint, const JointMap& map, const Model& m) {
    std::vector<double> x(m.nv, 0.0);
    for (const auto& jt : map.joints) {
        const json& v = per_joint.at(jt.name);
        const int nv = m.bodies[jt.body].nv();
        for (int k = 0; k < nv; ++k) x[map.v_map[jt.oracle_v + k]] = v.is_array() ? v.at(k).get<double>() : v.get<double>();
    }
    return x;
}

std::vector<double> position_vector(const json& per_joint, const JointMap& map, const Model& m) {
    std::vector<double> q(m.nq, 0.0);
    for (const auto& jt : map.joints) {
        const json& v = per_joint.at(jt.name);
        const nelu::Body& b = m.bodies[jt.body];
        for (int k = 0; k < b.nq(); ++k) q[b.q_index + k] = v.is_array() ? v.at(k).get<double>() : v.get<double>();
    }
    return q;
}

/// Per-body external wrenches from the oracle's per-link wrenches (link frame, angular first).
std::vector<SVec<double>> body_wrenches(const json& per_link, const nelu::LoadResult& lr) {
    const Model& m = lr.model;
    std::vector<SVec<double>> f(m.num_bodies(), nelu::zero6<double>());
    for (const auto& [link, w] : per_link.items()) {
        INFO("fext on link " << link);
        auto it = lr.links.find(link);
        REQUIRE(it != lr.links.end());
        if (it->second.body < 0) continue;  // merged into the fixed world: no effect on the joints
        SVec<double> f_link;
        for (int k = 0; k < 6; ++k) f_link[k] = w.at(k).get<double>();
        f[it->second.body] = f[it->second.body] + nelu::apply_transpose(it->second.X_link_body, f_link);
    }
    return f;
}

double max_abs(const std::vector<double>& x) {
    double r = 0;
    for (double v : x) r = v == v ? std::max(r, std::abs(v)) : INFINITY;  // (NaN counts as infinitely large)
    return r;
}

/// max |a - b| / max |b|
double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double e = std::abs(a[i] - b[i]);
        d = e == e ? std::max(d, e) : INFINITY;  // (a NaN on either side fails)
    }
    return d / std::max(max_abs(b), 1e-300);
}

/// The .json files of a folder, sorted.
std::vector<fs::path> json_files(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

struct Worst {
    double tau = 0, qdd = 0, M = 0, qdd_back = 0, cond = 0;
};

/// Compare nelu with one oracle file; returns the worst relative errors.
Worst check_oracle_file(const fs::path& file, const std::string& robots_dir) {
    std::ifstream in(file);
    REQUIRE(in.good());
    const json o = json::parse(in);
    const std::string urdf = o.at("urdf").get<std::string>();
    const bool floating = o.at("floating_base").get<bool>();
    const nelu::LoadResult lr = nelu::load_urdf_file(robots_dir + "/" + urdf, nelu::LoadOptions{floating, {}});
    Model m = lr.model;
    const json& g = o.at("gravity");
    REQUIRE(g.size() == 3u);
    m.gravity = {{{0, 0, 0}}, {{g[0].get<double>(), g[1].get<double>(), g[2].get<double>()}}};
    REQUIRE(floating == (m.bodies[0].type == JointType::Floating));
    const JointMap map = map_joints(o.at("joints"), m);

    Worst worst;
    int index = -1;
    for (const json& st : o.at("states")) {
        ++index;
        INFO("state " << index);
        const std::vector<double> q = position_vector(st.at("q"), map, m);
        const std::vector<double> qd = velocity_vector(st.at("qd"), map, m), qdd = velocity_vector(st.at("qdd"), map, m);
        const std::vector<double> tau_rnea = velocity_vector(st.at("tau_rnea"), map, m);
        const std::vector<double> tau_in = velocity_vector(st.at("tau_in"), map, m);
        const std::vector<double> qdd_aba = velocity_vector(st.at("qdd_aba"), map, m);
        const std::vector<SVec<double>> fext = body_wrenches(st.at("fext"), lr);

        std::vector<double> tau(m.nv), acc(m.nv), M(m.nv * m.nv), M_oracle(m.nv * m.nv);
        nelu::rnea(m, q.data(), qd.data(), qdd.data(), fext.data(), tau.data());
        nelu::aba(m, q.data(), qd.data(), tau_in.data(), fext.data(), acc.data());
        nelu::crba(m, q.data(), M.data());
        const json& Mo = st.at("M");
        REQUIRE(Mo.size() == static_cast<std::size_t>(m.nv));
        for (int r = 0; r < m.nv; ++r)
            for (int c = 0; c < m.nv; ++c) M_oracle[map.v_map[r] * m.nv + map.v_map[c]] = Mo.at(r).at(c).get<double>();

        const double e_tau = rel_diff(tau, tau_rnea), e_qdd = rel_diff(acc, qdd_aba), e_M = rel_diff(M, M_oracle);
        CHECK(e_tau <= kTol);
        CHECK(e_M <= kTol);
        // ABA's forward error grows with the condition of M (icub_reduced's state 1, every joint at
        // pi/2, has cond(M) ~ 1e12): allow 100 eps cond(M) when that is larger than the tolerance,
        // and check the oracle's accelerations in torque space too, where conditioning does not enter:
        // |RNEA(q, qd, qdd_oracle, fext) - tau_in| / max(|tau_in|, |M| |qdd_oracle|).
        const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> Mm(M.data(), m.nv, m.nv);
        const Eigen::VectorXd lambda = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(Mm).eigenvalues();
        const double allowance = std::max(1.0, 100 * std::numeric_limits<double>::epsilon() * lambda(m.nv - 1) / lambda(0) / kTol);
        CHECK(e_qdd <= kTol * allowance);
        std::vector<double> tau_back(m.nv);
        nelu::rnea(m, q.data(), qd.data(), qdd_aba.data(), fext.data(), tau_back.data());
        const Eigen::VectorXd qdd_abs = Eigen::Map<const Eigen::VectorXd>(qdd_aba.data(), m.nv).cwiseAbs();
        const double back_scale = std::max(max_abs(tau_in), (Mm.cwiseAbs() * qdd_abs).maxCoeff());
        double e_back = 0;
        for (int i = 0; i < m.nv; ++i) e_back = nelu::test::worse(e_back, std::abs(tau_back[i] - tau_in[i]) / back_scale);
        CHECK(e_back <= kTol);
        worst.tau = std::max(worst.tau, e_tau), worst.qdd = std::max(worst.qdd, e_qdd), worst.M = std::max(worst.M, e_M);
        worst.qdd_back = std::max(worst.qdd_back, e_back), worst.cond = std::max(worst.cond, lambda(m.nv - 1) / lambda(0));
    }
    CHECK(index + 1 == static_cast<int>(o.at("states").size()));
    CHECK(index >= 0);
    return worst;
}

/// The generated solvers' Jacobians (the IR of `nelu compile --derivatives`, evaluated) against
/// Pinocchio's analytic derivatives (../shared/oracle/derivatives) at the oracle's states. Pinocchio's
/// tangent of a floating base is linear first, [dv; dw] in the base frame, nelu's angular first:
/// the velocity map permutes rows and columns alike. ABA derivatives at an ill-conditioned state
/// (the oracle's fd_check above 1e-6) are compared through M: |M (J - J_oracle)| / (|M| |J_oracle|).
struct DerivativeWorst {
    double id = 0, fd = 0;
};

DerivativeWorst check_derivative_file(const fs::path& file, const fs::path& values, const std::string& robots_dir) {
    std::ifstream in(file), vin(values);
    REQUIRE(in.good());
    REQUIRE(vin.good());
    const json d = json::parse(in), o = json::parse(vin);
    const std::string urdf = robots_dir + "/" + o.at("urdf").get<std::string>();
    const bool floating = o.at("floating_base").get<bool>();
    DerivativeWorst worst;
    for (const char* problem : {"id", "fd"}) {
        INFO("problem " << std::string(problem));
        nelu::CompileOptions co;
        co.urdf = urdf, co.problem = problem, co.floating_base = floating, co.derivatives = true;
        co.ignore_mimic = true;  // the oracle's joints are all independent (the Panda's fingers too)
        co.verify_states = -1, co.validation_configs = 200;
        const nelu::CompileResult r = nelu::compile(co);
        const Model& m = r.load.model;
        const JointMap map = map_joints(o.at("joints"), m);
        const int nv = m.nv;
        const std::size_t ncol = r.order.best.jacobian.size() / r.system.out.size();
        REQUIRE(ncol == static_cast<std::size_t>(2 * nv) + r.system.in.size());
        REQUIRE(r.system.out.size() == static_cast<std::size_t>(nv));
        std::vector<nelu::ir::Id> roots(r.order.best.jacobian.begin(), r.order.best.jacobian.end());
        const std::vector<bool> live = r.order.best.prog.live_nodes(roots);
        for (std::size_t s = 0; s < o.at("states").size(); ++s) {
            INFO("state " << s);
            const json& st = o.at("states")[s];
            const json& ds = d.at("states")[s];
            nelu::State state;
            state.q = position_vector(st.at("q"), map, m);
            state.qd = velocity_vector(st.at("qd"), map, m), state.qdd = velocity_vector(st.at("qdd"), map, m);
            state.tau = velocity_vector(st.at("tau_in"), map, m);
            state.fext = body_wrenches(st.at("fext"), nelu::LoadResult(r.load));
            const std::vector<double> inputs = nelu::solver_inputs(r.system, m, r.problem, state);
            const std::vector<double> val = r.order.best.prog.evaluate(state.q.data(), state.qd.data(), inputs.data(), live);
            // out slot k is velocity slot v of body out[k]
            std::vector<int> out_v(nv);
            for (int k = 0; k < nv; ++k) out_v[k] = m.bodies[r.system.out[k].body].v_index + r.system.out[k].comp;
            auto ours = [&](int v_row, std::size_t col) -> double {
                for (int k = 0; k < nv; ++k)
                    if (out_v[k] == v_row) return val[r.order.best.jacobian[k * ncol + col]];
                return std::numeric_limits<double>::quiet_NaN();
            };
            // the column of the input slot that holds the joint quantity of velocity slot v (qdd for id, tau for fd)
            auto input_col = [&](int v) {
                for (std::size_t k = 0; k < r.system.in.size(); ++k) {
                    const nelu::Slot& sl = r.system.in[k];
                    if ((sl.quantity == nelu::Quantity::JointAcceleration || sl.quantity == nelu::Quantity::JointTorque) &&
                        m.bodies[sl.body].v_index + sl.comp == v)
                        return 2 * nv + static_cast<int>(k);
                }
                return -1;
            };
            const bool id = std::string(problem) == "id";
            bool conditioned = true;  // Pinocchio's own finite-difference check of its ABA derivatives at this state
            for (const auto& [k, v] : ds.at("fd_check").items())
                if (k.rfind("dqdd", 0) == 0 && v.is_number()) conditioned = conditioned && v.get<double>() < 1e-6;
            std::vector<double> M(nv * nv);
            nelu::crba(m, state.q.data(), M.data());
            const std::vector<std::pair<const char*, int>> blocks =
                id ? std::vector<std::pair<const char*, int>>{{"dtau_dq", 0}, {"dtau_dqd", 1}}
                   : std::vector<std::pair<const char*, int>>{{"dqdd_dq", 0}, {"dqdd_dqd", 1}, {"dqdd_dtau", 2}};
            for (const auto& [key, which] : blocks) {
                INFO(std::string(key));
                std::vector<double> A(nv * nv), B(nv * nv);  // ours, oracle, in nelu's velocity order
                const json& J = ds.at(key);
                for (int rr = 0; rr < nv; ++rr)
                    for (int cc = 0; cc < nv; ++cc) {
                        const int vr = map.v_map[rr], vc = map.v_map[cc];
                        B[vr * nv + vc] = J.at(rr).at(cc).get<double>();
                        const int col = which == 2 ? input_col(vc) : which * nv + vc;
                        REQUIRE(col >= 0);
                        A[vr * nv + vc] = ours(vr, static_cast<std::size_t>(col));
                    }
                double err = rel_diff(A, B), allowed = 1e-9;
                if (!id && !conditioned) {
                    // both forward errors are bounded by about eps cond(M) (1.4e12 at icub_reduced's state
                    // 1): allow 100 eps cond(M); and M^-1 itself is checked by its residual, which
                    // conditioning does not enter: |M A - I| / (|M| |A|)
                    const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> Mm(M.data(), nv, nv);
                    const Eigen::VectorXd lam = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(Mm).eigenvalues();
                    allowed = std::max(allowed, 100 * std::numeric_limits<double>::epsilon() * lam(nv - 1) / lam(0));
                    if (which == 2) {
                        const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> Am(A.data(), nv, nv);
                        const double residual = (Mm * Am - Eigen::MatrixXd::Identity(nv, nv)).cwiseAbs().maxCoeff() /
                                                (Mm.cwiseAbs().rowwise().sum().maxCoeff() * Am.cwiseAbs().maxCoeff());
                        CHECK(residual <= 1e-12);
                    }
                }
                CHECK(err <= allowed);
                (id ? worst.id : worst.fd) = std::max(id ? worst.id : worst.fd, err);
            }
        }
    }
    return worst;
}

}  // namespace
#endif

TEST_CASE("oracle: RNEA, ABA and CRBA agree with Pinocchio on the shared robots") {
    const std::string shared = nelu::test::shared_dir();
    const fs::path dir = fs::path(shared) / "oracle";
    if (shared.empty() || !fs::is_directory(dir)) {
        std::printf("oracle: %s/oracle not found: SKIPPED (nothing compared)\n", NELU_SHARED_DIR);
        MESSAGE("skipped: no ../shared/oracle");
        return;
    }
#if !NELU_HAVE_NLOHMANN_JSON
    std::printf("oracle: nlohmann/json.hpp not available: SKIPPED (install nlohmann-json3-dev)\n");
    MESSAGE("skipped: nlohmann-json not installed");
#else
    const std::vector<fs::path> files = json_files(dir);
    REQUIRE(!files.empty());
    Worst all;
    std::printf("oracle (Pinocchio 3.7.0): worst over the states of max|nelu - oracle| / max|oracle| (rnea, aba, crba),\n"
                "  |RNEA(qdd_aba oracle) - tau_in| / max(|tau_in|, |M| |qdd|) (aba back) and cond(M)\n");
    for (const fs::path& f : files) {
        INFO("oracle file " << f.filename().string());
        const Worst w = check_oracle_file(f, shared + "/robots");
        std::printf("  %-28s rnea %.3e  aba %.3e  crba %.3e  aba back %.3e  cond(M) %.1e\n", f.filename().string().c_str(),
                    w.tau, w.qdd, w.M, w.qdd_back, w.cond);
        all.tau = std::max(all.tau, w.tau), all.qdd = std::max(all.qdd, w.qdd), all.M = std::max(all.M, w.M);
        all.qdd_back = std::max(all.qdd_back, w.qdd_back), all.cond = std::max(all.cond, w.cond);
    }
    std::printf("  %-28s rnea %.3e  aba %.3e  crba %.3e  aba back %.3e  cond(M) %.1e\n", "ALL", all.tau, all.qdd, all.M,
                all.qdd_back, all.cond);
#endif
}

namespace {

/// The derivative oracle files compared by default: a fixed-base arm, a floating base, and the
/// iCub's ill-conditioned state (fd compared through M); the others in the extended case.
bool default_derivative_file(const fs::path& f) {
    const std::string name = f.filename().string();
    return name == "iiwa.fixed.json" || name == "solo12.floating.json" || name == "icub_reduced.fixed.json";
}

/// Compare the compiled solvers' Jacobians with ../shared/oracle/derivatives: the default files
/// (`extended` false) or the others.
void check_derivative_files(bool extended) {
    const std::string shared = nelu::test::shared_dir();
    const fs::path dir = fs::path(shared) / "oracle" / "derivatives";
    if (shared.empty() || !fs::is_directory(dir)) {
        std::printf("oracle derivatives: %s/oracle/derivatives not found: SKIPPED (nothing compared)\n", NELU_SHARED_DIR);
        MESSAGE("skipped: no ../shared/oracle/derivatives");
        return;
    }
#if !NELU_HAVE_NLOHMANN_JSON
    (void)extended;
    MESSAGE("skipped: nlohmann-json not installed");
#else
    std::vector<fs::path> files = json_files(dir);
    files.erase(std::remove_if(files.begin(), files.end(), [&](const fs::path& f) { return default_derivative_file(f) == extended; }), files.end());
    REQUIRE(!files.empty());
    std::printf("oracle derivatives (Pinocchio 3.7.0): worst relative error of d tau / d(q, qd) and d qdd / d(q, qd, tau)\n");
    for (const fs::path& f : files) {
        INFO("oracle file " << f.filename().string());
        if (nelu::test::sanitized() && f.filename().string().rfind("icub_reduced", 0) == 0) {
            // the iCub's 35 columns are most of this case's time: the release build compares them
            MESSAGE(f.filename().string() << ": compared in the release build only (sanitizer build)");
            continue;
        }
        const DerivativeWorst w = check_derivative_file(f, fs::path(shared) / "oracle" / f.filename(), shared + "/robots");
        std::printf("  %-28s id %.3e  fd %.3e\n", f.filename().string().c_str(), w.id, w.fd);
    }
#endif
}

}  // namespace

TEST_CASE("oracle: derivatives of the compiled id and fd solvers agree with Pinocchio's analytic derivatives") {
    check_derivative_files(false);
}

// test_oracle_extended (ctest -L extended; not in CI)
TEST_CASE("oracle (extended): derivatives of the other shared robots' solvers" * doctest::skip()) { check_derivative_files(true); }

// ------------------------------------------------------------------------------------------------
// Contact dynamics (issue 27): tests/oracle/contacts/*.json hold Pinocchio 3.7.0's constraintDynamics
// or impulseDynamics and their analytic derivatives (computeConstraintDynamicsDerivatives,
// computeImpulseDynamicsDerivatives) at three states of each case, already in nelu's slots: the
// conventions are translated by the program that wrote them, bench/contacts_pinocchio_driver.cpp
// (--oracle; scripts/contact_oracle.sh), which builds Pinocchio's model from the URDF and its
// contact models from the case's description, not from nelu's. Each file carries the problem spec;
// the compiled program (values and Jacobian: the IR evaluated) must give Pinocchio's numbers:
// values max |nelu - pinocchio| / max(1, max |pinocchio|) <= 1e-9, each Jacobian row (one output's
// gradient) the same <= 1e-8, as the benchmark's check. Null entries (the Baumgarte references'
// columns, an impulse's inputs: Pinocchio has no derivative there) are not compared; the blocks
// the file lists under "differences" are five-point central differences of Pinocchio's values
// (where its analytic derivatives disagree with them: LOCAL_WORLD_ALIGNED with Baumgarte gains),
// compared at the file's difference_tolerance.
#if NELU_HAVE_NLOHMANN_JSON
namespace {

struct ContactOracleWorst {
    double out = 0, jac = 0, differences = 0;
    long compared = 0, differenced = 0, skipped = 0;
};

ContactOracleWorst check_contact_oracle(const fs::path& file) {
    std::ifstream in(file);
    REQUIRE(in.good());
    const json o = json::parse(in);
    const fs::path spec = fs::temp_directory_path() / ("nelu-contact-oracle-" + file.stem().string() + ".yaml");
    {
        std::ofstream f(spec);
        f << o.at("spec").get<std::string>();
        REQUIRE(f.good());
    }
    nelu::CompileOptions co;
    co.urdf = nelu::test::source_dir() + "/" + o.at("urdf").get<std::string>();
    co.problem = spec.string(), co.derivatives = true;
    co.verify_states = -1, co.validation_configs = 200;
    const nelu::CompileResult r = nelu::compile(co);
    fs::remove(spec);
    const nelu::Model& m = r.load.model;
    const std::size_t nout = r.system.out.size(), nin = r.system.in.size();
    REQUIRE(static_cast<int>(m.nq) == o.at("nq").get<int>());
    REQUIRE(static_cast<int>(m.nv) == o.at("nv").get<int>());
    REQUIRE(nout == o.at("nout").get<std::size_t>());
    REQUIRE(nin == o.at("nin").get<std::size_t>());
    const std::size_t ncol = r.order.best.jacobian.size() / nout;
    REQUIRE(ncol == o.at("njac").get<std::size_t>());
    std::vector<nelu::ir::Id> roots(r.order.best.jacobian.begin(), r.order.best.jacobian.end());
    roots.insert(roots.end(), r.order.best.outputs.begin(), r.order.best.outputs.end());
    const std::vector<bool> live = r.order.best.prog.live_nodes(roots);
    ContactOracleWorst worst;
    REQUIRE(!o.at("states").empty());
    for (std::size_t s = 0; s < o.at("states").size(); ++s) {
        INFO("state " << s);
        const json& st = o.at("states")[s];
        const std::vector<double> q = st.at("q"), qd = st.at("qd");
        std::vector<double> inputs = st.at("in");
        inputs.resize(std::max<std::size_t>(nin, 1));
        const std::vector<double> val = r.order.best.prog.evaluate(q.data(), qd.data(), inputs.data(), live);
        std::vector<double> ours(nout), theirs = st.at("out");
        REQUIRE(theirs.size() == nout);
        for (std::size_t k = 0; k < nout; ++k) ours[k] = val[r.order.best.outputs[k]];
        const double eo = nelu::test::rel_error(ours, theirs);
        CHECK(eo <= 1e-9);
        worst.out = std::max(worst.out, eo);
        // the entries of blocks given as central differences, at this state
        std::vector<bool> loose(nout * ncol, false);
        for (const json& d : o.at("differences")) {
            if (d.at("state").get<std::size_t>() != s) continue;
            const std::size_t c0 = d.at("cols").at(0), c1 = d.at("cols").at(1);
            for (const json& row : d.at("rows"))
                for (std::size_t c = c0; c < c1; ++c) loose[row.get<std::size_t>() * ncol + c] = true;
        }
        const json& J = st.at("jac");
        REQUIRE(J.size() == nout);
        for (std::size_t k = 0; k < nout; ++k) {
            INFO("output slot " << k);
            std::vector<double> a, b, la, lb;  // analytic entries, differenced entries
            for (std::size_t c = 0; c < ncol; ++c) {
                const json& e = J[k].at(c);
                if (e.is_null()) {
                    ++worst.skipped;
                    continue;
                }
                const bool l = loose[k * ncol + c];
                (l ? la : a).push_back(val[r.order.best.jacobian[k * ncol + c]]), (l ? lb : b).push_back(e.get<double>());
            }
            worst.compared += static_cast<long>(a.size()), worst.differenced += static_cast<long>(la.size());
            const double ej = nelu::test::rel_error(a, b), el = la.empty() ? 0.0 : nelu::test::rel_error(la, lb);
            CHECK(ej <= 1e-8);
            CHECK(el <= o.at("difference_tolerance").get<double>());
            worst.jac = std::max(worst.jac, ej), worst.differences = std::max(worst.differences, el);
        }
    }
    // every q and qd column compared at every state (the nulls are the references' and inputs' columns only)
    CHECK(worst.compared + worst.differenced >= static_cast<long>(o.at("states").size() * nout) * 2 * m.nv);
    return worst;
}

}  // namespace
#endif

TEST_CASE("oracle: contact dynamics, impulses and their derivatives agree with Pinocchio's (tests/oracle/contacts)") {
#if !NELU_HAVE_NLOHMANN_JSON
    std::printf("oracle contacts: nlohmann/json.hpp not available: SKIPPED (install nlohmann-json3-dev)\n");
    MESSAGE("skipped: nlohmann-json not installed");
#else
    const fs::path dir = fs::path(nelu::test::source_dir()) / "tests" / "oracle" / "contacts";
    const std::vector<fs::path> files = json_files(dir);
    REQUIRE(files.size() >= 8);
    std::printf("oracle contacts (Pinocchio 3.7.0): worst over the states of max |nelu - pinocchio| / max(1, max |pinocchio|),\n"
                "  values, Jacobian rows against the analytic derivatives and against central differences\n"
                "  (Jacobian entries compared with each, and entries Pinocchio has no derivative for)\n");
    for (const fs::path& f : files) {
        INFO("oracle file " << f.filename().string());
        const std::string name = f.filename().string();
        if (nelu::test::sanitized() && (name.rfind("smoke_", 0) != 0 || name.find("humanoid") != std::string::npos)) {
            // at -O0 the derivative compiles take about 20x their release time: the sanitizer build compares the
            // Mini Cheetah's and the UR5e's smoke cases (every contact kind but the 6-D sole), the release build all
            MESSAGE(f.filename().string() << ": compared in the release build only (sanitizer build)");
            continue;
        }
        const ContactOracleWorst w = check_contact_oracle(f);
        std::printf("  %-36s out %.2e  jac %.2e  differences %.2e  (%ld / %ld / %ld)\n", f.stem().string().c_str(), w.out, w.jac,
                    w.differences, w.compared, w.differenced, w.skipped);
    }
#endif
}
