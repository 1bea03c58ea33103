// Identities between the reference algorithms (nelu/reference.hpp) on every test robot: ABA inverts
// RNEA, RNEA's acceleration term is CRBA's M, M is symmetric positive definite, external wrenches
// enter through the body Jacobians, float and the counting scalar agree with double, mechanical
// power balances, and a free-floating robot conserves its spatial momentum.
//
// Each robot is checked at 20 random states (fixed seeds) and at special configurations: all zero,
// every revolute joint at +pi/2, -pi/2 and pi, and every limited joint at its lower and its upper
// limit. The worst scaled residual per robot is printed for the log.
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "load.hpp"
#include "nelu/counting.hpp"
#include "nelu/model.hpp"
#include "nelu/reference.hpp"
#include "nelu/state.hpp"
#include "robot_gen.hpp"
#include "test_support.hpp"

namespace {

using nelu::Body;
using nelu::JointType;
using nelu::Model;
using nelu::State;
using nelu::SVec;

constexpr double kPi = 3.14159265358979323846;
constexpr double kTol = 1e-10;
constexpr int kRandomStates = 20;

// ---------------------------------------------------------------------------------------------
// Robots and states

/// The URDF of a generated tree whose root link `base` gets a mass. The generator's base has no
/// inertial (it is meant to be fixed); floating, a massless base could turn about joint 1's axis
/// against link 1 without moving any mass, and M would be singular.
std::string floating_tree_urdf(int links, std::uint64_t seed) {
    nelu::RobotGenOptions o;
    o.shape = nelu::RobotGenOptions::Shape::Tree, o.links = links, o.branching = 3, o.seed = seed;
    std::string urdf = nelu::generate_robot_urdf(o);
    const std::string bare = "<link name=\"base\"/>";
    const std::size_t at = urdf.find(bare);
    REQUIRE(at != std::string::npos);
    urdf.replace(at, bare.size(),
                 "<link name=\"base\"><inertial><origin xyz=\"0.02 -0.01 0.03\" rpy=\"0 0 0\"/><mass value=\"4\"/>"
                 "<inertia ixx=\"0.05\" ixy=\"0.001\" ixz=\"0\" iyy=\"0.06\" iyz=\"0.002\" izz=\"0.07\"/>"
                 "</inertial></link>");
    return urdf;
}

/// all_test_robots() plus floating-base variants of two generated trees.
const std::vector<nelu::test::TestRobot>& robots() {
    static const std::vector<nelu::test::TestRobot> list = [] {
        std::vector<nelu::test::TestRobot> r = nelu::test::all_test_robots();
        for (int n : {7, 30}) {
            const std::string name = "tree" + std::to_string(n) + "_b3+floating";
            r.push_back({name, nelu::load_urdf_string(floating_tree_urdf(n, 500 + n), name, nelu::LoadOptions{true, {}}).model});
        }
        return r;
    }();
    return list;
}

bool is_floating(const Model& m) { return m.num_bodies() > 0 && m.bodies[0].type == JointType::Floating; }

struct LabeledState {
    std::string label;
    State s;
};

/// 20 random states, then the special configurations (with random qd, qdd, tau, fext).
std::vector<LabeledState> test_states(const Model& m, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<LabeledState> states;
    for (int k = 0; k < kRandomStates; ++k) {
        State s = nelu::random_state(m, rng);
        // A joint whose URDF limits are [a, a] (the shared double pendulum has lower = upper = 0)
        // would sit at one angle in every random state; draw it from [-pi, pi] instead.
        for (const Body& b : m.bodies)
            if (b.has_limits && b.upper - b.lower < 1e-9) s.q[b.q_index] = nelu::uniform(rng, -kPi, kPi);
        states.push_back({"random " + std::to_string(k), s});
    }
    auto special = [&](const std::string& label, auto set_joint) {
        State s = nelu::random_state(m, rng);
        for (const Body& b : m.bodies) {
            if (b.type == JointType::Floating && label == "zero")
                for (int k = 0; k < 7; ++k) s.q[b.q_index + k] = k == 6 ? 1.0 : 0.0;
            if (b.type == JointType::Revolute || b.type == JointType::Prismatic) set_joint(b, s.q[b.q_index]);
        }
        states.push_back({label, s});
    };
    special("zero", [](const Body&, double& q) { q = 0; });
    for (double a : {kPi / 2, -kPi / 2, kPi})
        special("revolute at " + std::to_string(a), [a](const Body& b, double& q) {
            if (b.type == JointType::Revolute) q = a;
        });
    bool limited = false;
    for (const Body& b : m.bodies) limited = limited || b.has_limits;
    if (limited) {
        special("lower limits", [](const Body& b, double& q) { if (b.has_limits) q = b.lower; });
        special("upper limits", [](const Body& b, double& q) { if (b.has_limits) q = b.upper; });
    }
    return states;
}

// ---------------------------------------------------------------------------------------------
// Thin wrappers over the raw-array API

using nelu::test::convert;
using nelu::test::to_doubles;

/// fext may be null; the alias keeps it out of template argument deduction.
template <class S> using FextPtr = const std::vector<SVec<S>>*;
template <class T> struct NonDeduced { using type = T; };

template <class S>
std::vector<S> rnea(const Model& m, const std::vector<S>& q, const std::vector<S>& qd, const std::vector<S>& qdd,
                    typename NonDeduced<FextPtr<S>>::type fext) {
    std::vector<S> tau(m.nv);
    nelu::rnea(m, q.data(), qd.data(), qdd.data(), fext ? fext->data() : nullptr, tau.data());
    return tau;
}
template <class S>
std::vector<S> aba(const Model& m, const std::vector<S>& q, const std::vector<S>& qd, const std::vector<S>& tau,
                   typename NonDeduced<FextPtr<S>>::type fext) {
    std::vector<S> qdd(m.nv);
    nelu::aba(m, q.data(), qd.data(), tau.data(), fext ? fext->data() : nullptr, qdd.data());
    return qdd;
}
template <class S> std::vector<S> crba(const Model& m, const std::vector<S>& q) {
    std::vector<S> M(m.nv * m.nv);
    nelu::crba(m, q.data(), M.data());
    return M;
}
Eigen::MatrixXd as_matrix(const std::vector<double>& M, int n) {
    return Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(M.data(), n, n);
}

double max_abs(const std::vector<double>& x) {
    double r = 0;
    for (double v : x) r = v == v ? std::max(r, std::abs(v)) : INFINITY;  // (NaN counts as infinitely large)
    return r;
}
double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double r = 0;
    for (std::size_t i = 0; i < a.size(); ++i) r = nelu::test::worse(r, std::abs(a[i] - b[i]));
    return r;
}

/// The worst residual per robot of one identity; printed as a table when the test case ends.

}  // namespace

// ---------------------------------------------------------------------------------------------
TEST_CASE("identity: ABA(q, qd, RNEA(q, qd, qdd, fext), fext) = qdd") {
    // Backward error, in torque: |RNEA(q, qd, qdd_aba, fext) - tau| / max(|tau|, |M| |qdd|), which
    // must be at rounding level whatever the configuration. Forward error, in acceleration:
    // |qdd_aba - qdd| / max(|qdd|, 1), bounded by about eps cond(M): some robots have near-singular
    // configurations (icub_reduced with every joint at +-pi/2 aligns axes across nearly massless
    // links, cond(M) ~ 1e12), so the forward check allows max(1e-10, 100 eps cond(M)).
    nelu::test::ResidualTable tb("ABA o RNEA = identity, backward: |RNEA(qdd_aba) - tau| / max(|tau|, |M| |qdd|)");
    nelu::test::ResidualTable tq("ABA o RNEA = identity, forward: |qdd_aba - qdd| / max(|qdd|, 1) / max(1, 100 eps cond(M) / 1e-10)");
    const double eps = std::numeric_limits<double>::epsilon();
    for (const auto& [name, m] : robots())
        for (const auto& [label, s] : test_states(m, 1)) {
            INFO("robot " << name << ", state " << label);
            const std::vector<double> tau = rnea(m, s.q, s.qd, s.qdd, &s.fext);
            const std::vector<double> qdd = aba(m, s.q, s.qd, tau, &s.fext);
            const std::vector<double> tau_back = rnea(m, s.q, s.qd, qdd, &s.fext);
            const Eigen::MatrixXd M = as_matrix(crba(m, s.q), m.nv);
            const Eigen::VectorXd qdd_abs = Eigen::Map<const Eigen::VectorXd>(s.qdd.data(), m.nv).cwiseAbs();
            const double scale = std::max(max_abs(tau), (M.cwiseAbs() * qdd_abs).maxCoeff());
            CHECK_RESIDUAL(tb, name, max_abs_diff(tau_back, tau) / scale, kTol);
            const Eigen::VectorXd lambda = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(M).eigenvalues();
            const double allowance = std::max(1.0, 100 * eps * lambda(m.nv - 1) / lambda(0) / kTol);
            CHECK_RESIDUAL(tq, name, max_abs_diff(qdd, s.qdd) / std::max(max_abs(s.qdd), 1.0) / allowance, kTol);
        }
}

TEST_CASE("identity: RNEA(q, qd, qdd) - RNEA(q, qd, 0) = CRBA(q) qdd") {
    nelu::test::ResidualTable t("RNEA(q, qd, qdd) - RNEA(q, qd, 0) = M qdd: |diff| / max(|RNEA(q, qd, qdd)|, |RNEA(q, qd, 0)|, |M| |qdd|)");
    for (const auto& [name, m] : robots())
        for (const auto& [label, s] : test_states(m, 2)) {
            INFO("robot " << name << ", state " << label);
            const std::vector<double> zero(m.nv, 0.0);
            const std::vector<double> tau = rnea(m, s.q, s.qd, s.qdd, nullptr), h = rnea(m, s.q, s.qd, zero, nullptr);
            const Eigen::MatrixXd M = as_matrix(crba(m, s.q), m.nv);
            const Eigen::VectorXd qdd = Eigen::Map<const Eigen::VectorXd>(s.qdd.data(), m.nv);
            const Eigen::VectorXd Mqdd = M * qdd;
            double worst = 0, scale = std::max({max_abs(tau), max_abs(h), (M.cwiseAbs() * qdd.cwiseAbs()).maxCoeff()});
            for (int i = 0; i < m.nv; ++i) worst = nelu::test::worse(worst, std::abs(tau[i] - h[i] - Mqdd(i)));
            CHECK_RESIDUAL(t, name, worst / scale, kTol);
        }
}

TEST_CASE("identity: CRBA's M is symmetric positive definite") {
    nelu::test::ResidualTable t("M = M^T, LLT succeeds, lambda_min > 0: |M - M^T| / |M|");
    std::printf("condition of M (lambda_max / lambda_min), worst over the states:\n");
    for (const auto& [name, m] : robots()) {
        double worst_cond = 0;
        for (const auto& [label, s] : test_states(m, 3)) {
            INFO("robot " << name << ", state " << label);
            const Eigen::MatrixXd M = as_matrix(crba(m, s.q), m.nv);
            CHECK_RESIDUAL(t, name, (M - M.transpose()).cwiseAbs().maxCoeff() / M.cwiseAbs().maxCoeff(), kTol);
            CHECK(M.llt().info() == Eigen::Success);
            const Eigen::VectorXd lambda = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(M).eigenvalues();
            CHECK(lambda(0) > 0);
            worst_cond = std::max(worst_cond, lambda(m.nv - 1) / lambda(0));
        }
        std::printf("  %-26s nv %3d  cond(M) %.3e\n", name.c_str(), m.nv, worst_cond);
    }
}

TEST_CASE("identity: RNEA(q, qd, qdd, fext) = RNEA(q, qd, qdd, 0) - sum_i J_i^T fext_i") {
    nelu::test::ResidualTable t("external wrenches through body Jacobians: |diff| / max(|tau|, |tau_0|, sum |J^T f|)");
    for (const auto& [name, m] : robots())
        for (const auto& [label, s] : test_states(m, 4)) {
            INFO("robot " << name << ", state " << label);
            const std::vector<double> tau_f = rnea(m, s.q, s.qd, s.qdd, &s.fext), tau_0 = rnea(m, s.q, s.qd, s.qdd, nullptr);
            std::vector<double> JTf(m.nv, 0.0), JTf_abs(m.nv, 0.0);
            for (int i = 0; i < m.num_bodies(); ++i) {
                const std::vector<SVec<double>> J = nelu::body_jacobian(m, s.q.data(), i);
                REQUIRE(J.size() == static_cast<std::size_t>(m.nv));
                for (int c = 0; c < m.nv; ++c) {
                    JTf[c] += nelu::dot(J[c], s.fext[i]);
                    for (int k = 0; k < 6; ++k) JTf_abs[c] += std::abs(J[c][k] * s.fext[i][k]);
                }
            }
            std::vector<double> expected(m.nv);
            for (int c = 0; c < m.nv; ++c) expected[c] = tau_0[c] - JTf[c];
            const double scale = std::max({max_abs(tau_f), max_abs(tau_0), max_abs(JTf_abs)});
            CHECK_RESIDUAL(t, name, max_abs_diff(tau_f, expected) / scale, kTol);
        }
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("scalars: float agrees with double; Counted is bit-for-bit double and counts") {
    // float: relative to the largest entry of the double result. ABA's forward error grows with
    // the condition of M (icub_reduced reaches cond(M) ~ 1e14), so it is checked against
    // max(1e-4, 100 eps_float cond(M)), and as a backward error in torque space:
    // |M (qdd_f - qdd) | / max(|tau - h|, |M| |qdd|), the torque the float solution misses.
    nelu::test::ResidualTable tr("float RNEA vs double: |tau_f - tau| / |tau|"), tm("float CRBA vs double: |M_f - M| / |M|"),
        ta("float ABA vs double, backward: |M (qdd_f - qdd)| / max(|tau - h|, |M| |qdd|)"),
        tf("float ABA vs double, forward: |qdd_f - qdd| / |qdd| / max(1, 100 eps_float cond(M) / 1e-4)");
    for (const auto& [name, m] : robots())
        for (const auto& [label, s] : test_states(m, 5)) {
            INFO("robot " << name << ", state " << label);
            const std::vector<double> tau = rnea(m, s.q, s.qd, s.qdd, &s.fext), qdd = aba(m, s.q, s.qd, s.tau, &s.fext);
            const std::vector<double> M = crba(m, s.q);
            const auto qf = convert<float>(s.q), qdf = convert<float>(s.qd);
            const auto fextf = convert<float>(s.fext);
            const std::vector<double> tau_f = to_doubles(rnea(m, qf, qdf, convert<float>(s.qdd), &fextf));
            const std::vector<double> qdd_f = to_doubles(aba(m, qf, qdf, convert<float>(s.tau), &fextf));
            const std::vector<double> M_f = to_doubles(crba(m, qf));
            CHECK_RESIDUAL(tr, name, max_abs_diff(tau_f, tau) / max_abs(tau), 1e-4);
            CHECK_RESIDUAL(tm, name, max_abs_diff(M_f, M) / max_abs(M), 1e-4);
            const Eigen::MatrixXd Md = as_matrix(M, m.nv);
            Eigen::VectorXd dq(m.nv), qd_abs(m.nv);
            for (int i = 0; i < m.nv; ++i) dq(i) = qdd_f[i] - qdd[i], qd_abs(i) = std::abs(qdd[i]);
            const std::vector<double> h = rnea(m, s.q, s.qd, std::vector<double>(m.nv, 0.0), &s.fext);
            double rhs = 0;
            for (int i = 0; i < m.nv; ++i) rhs = std::max(rhs, std::abs(s.tau[i] - h[i]));
            const double scale = std::max(rhs, (Md.cwiseAbs() * qd_abs).maxCoeff());
            CHECK_RESIDUAL(ta, name, (Md * dq).cwiseAbs().maxCoeff() / scale, 1e-4);
            const Eigen::VectorXd lambda = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(Md).eigenvalues();
            const double allowance = std::max(1.0, 100 * std::numeric_limits<float>::epsilon() * lambda(m.nv - 1) / lambda(0) / 1e-4);
            CHECK_RESIDUAL(tf, name, max_abs_diff(qdd_f, qdd) / max_abs(qdd) / allowance, 1e-4);
        }

    for (const auto& [name, m] : robots()) {
        INFO("robot " << name);
        std::mt19937_64 rng(6);
        const State s = nelu::random_state(m, rng);
        int revolute = 0;
        for (const Body& b : m.bodies) revolute += b.type == JointType::Revolute;
        const auto qc = convert<nelu::Counted>(s.q), qdc = convert<nelu::Counted>(s.qd);
        const auto fextc = convert<nelu::Counted>(s.fext);
        nelu::OpCounter::reset();
        const auto tau_c = rnea(m, qc, qdc, convert<nelu::Counted>(s.qdd), &fextc);
        const nelu::OpCounts c_rnea = nelu::OpCounter::get();
        nelu::OpCounter::reset();
        const auto qdd_c = aba(m, qc, qdc, convert<nelu::Counted>(s.tau), &fextc);
        const nelu::OpCounts c_aba = nelu::OpCounter::get();
        nelu::OpCounter::reset();
        const auto M_c = crba(m, qc);
        const nelu::OpCounts c_crba = nelu::OpCounter::get();
        // bit-for-bit: the same operations in the same order on the same doubles
        CHECK(to_doubles(tau_c) == rnea(m, s.q, s.qd, s.qdd, &s.fext));
        CHECK(to_doubles(qdd_c) == aba(m, s.q, s.qd, s.tau, &s.fext));
        CHECK(to_doubles(M_c) == crba(m, s.q));
        for (const nelu::OpCounts& c : {c_rnea, c_aba, c_crba}) {
            CHECK(c.mul > 0);
            CHECK(c.add > 0);
            CHECK(c.sin == revolute);  // one sincos per revolute joint, nothing else is trigonometric
            CHECK(c.cos == revolute);
        }
        std::printf("  %-26s ops mul/add: rnea %lld/%lld  aba %lld/%lld  crba %lld/%lld\n", name.c_str(),
                    static_cast<long long>(c_rnea.mul), static_cast<long long>(c_rnea.add),
                    static_cast<long long>(c_aba.mul), static_cast<long long>(c_aba.add),
                    static_cast<long long>(c_crba.mul), static_cast<long long>(c_crba.add));
    }
}

// ---------------------------------------------------------------------------------------------
namespace {

/// T + V at time t along q(t) = q + qd t + qdd t^2 / 2, qd(t) = qd + qdd t (fixed base).
double energy_at(const Model& m, const State& s, double t) {
    std::vector<double> q(m.nq), qd(m.nv);
    for (int i = 0; i < m.nv; ++i) q[i] = s.q[i] + s.qd[i] * t + 0.5 * s.qdd[i] * t * t, qd[i] = s.qd[i] + s.qdd[i] * t;
    const auto k = nelu::forward_kinematics(m, q.data(), qd.data());
    return nelu::kinetic_energy(m, k) + nelu::potential_energy(m, k);
}

/// d/dt (T + V) at t = 0: central differences at h and h/2 combined by Richardson extrapolation.
double energy_rate(const Model& m, const State& s, double h) {
    auto central = [&](double dt) { return (energy_at(m, s, dt) - energy_at(m, s, -dt)) / (2 * dt); };
    return (4 * central(h / 2) - central(h)) / 3;
}

}  // namespace

TEST_CASE("identity: power balance d/dt (T + V) = qd . RNEA(q, qd, qdd) on fixed-base robots") {
    // The residual is relative to sum_i |qd_i| (sum_j |M_ij qdd_j| + |h_i|), h = RNEA(q, qd, 0):
    // the size of the power terms before they cancel. The Richardson estimate's truncation error
    // is O(h^4) and its rounding error about eps (|T| + |V|) / h; h = 2e-3 balances the two.
    const double h = 2e-3;
    nelu::test::ResidualTable t("power balance: |d(T+V)/dt - qd . tau| / sum_i |qd_i| (|M qdd|_i + |h_i|)");
    for (const auto& [name, m] : robots()) {
        if (is_floating(m)) continue;
        REQUIRE(m.nq == m.nv);
        for (const auto& [label, s] : test_states(m, 7)) {
            INFO("robot " << name << ", state " << label);
            const std::vector<double> tau = rnea(m, s.q, s.qd, s.qdd, nullptr);
            const std::vector<double> bias = rnea(m, s.q, s.qd, std::vector<double>(m.nv, 0.0), nullptr);
            const Eigen::MatrixXd M = as_matrix(crba(m, s.q), m.nv);
            const Eigen::VectorXd Mqdd_abs = M.cwiseAbs() * Eigen::Map<const Eigen::VectorXd>(s.qdd.data(), m.nv).cwiseAbs();
            double power = 0, scale = 0;
            for (int i = 0; i < m.nv; ++i)
                power += s.qd[i] * tau[i], scale += std::abs(s.qd[i]) * (Mqdd_abs(i) + std::abs(bias[i]));
            CHECK_RESIDUAL(t, name, std::abs(energy_rate(m, s, h) - power) / scale, 1e-9);
        }
    }
}

// ---------------------------------------------------------------------------------------------
namespace {

/// (qdot, qddot) of a robot moving freely (tau = 0, no external force): qdot of the floating base
/// from its body-frame twist [omega; v] (pdot = R v, quaternion rate 1/2 q (x) (omega, 0)), the
/// other joints qdot = qd; qddot from ABA.
void free_motion_rate(const Model& m, const std::vector<double>& q, const std::vector<double>& qd,
                      std::vector<double>& q_rate, std::vector<double>& qd_rate) {
    q_rate.assign(m.nq, 0.0);
    for (const Body& b : m.bodies) {
        const double* qi = q.data() + b.q_index;
        const double* vi = qd.data() + b.v_index;
        double* ri = q_rate.data() + b.q_index;
        if (b.type == JointType::Floating) {
            const Eigen::Quaterniond quat(qi[6], qi[3], qi[4], qi[5]);  // (w, x, y, z)
            const Eigen::Vector3d omega(vi[0], vi[1], vi[2]), v(vi[3], vi[4], vi[5]);
            const Eigen::Vector3d p_rate = quat.normalized().toRotationMatrix() * v;
            const Eigen::Vector3d qv(qi[3], qi[4], qi[5]);
            const Eigen::Vector3d qv_rate = 0.5 * (qi[6] * omega + qv.cross(omega));
            for (int k = 0; k < 3; ++k) ri[k] = p_rate(k), ri[3 + k] = qv_rate(k);
            ri[6] = -0.5 * qv.dot(omega);
        } else if (b.nq() == 1) {
            ri[0] = vi[0];
        }
    }
    const std::vector<double> zero(m.nv, 0.0);
    qd_rate = aba(m, q, qd, zero, nullptr);
}

/// One classical Runge-Kutta step of free motion, then the quaternion renormalized.
void rk4_step(const Model& m, std::vector<double>& q, std::vector<double>& qd, double dt) {
    std::vector<double> kq[4], kv[4];
    std::vector<double> qs = q, vs = qd;
    const double c[4] = {0, 0.5, 0.5, 1};
    for (int st = 0; st < 4; ++st) {
        if (st > 0)
            for (int i = 0; i < m.nq; ++i) qs[i] = q[i] + c[st] * dt * kq[st - 1][i];
        if (st > 0)
            for (int i = 0; i < m.nv; ++i) vs[i] = qd[i] + c[st] * dt * kv[st - 1][i];
        free_motion_rate(m, qs, vs, kq[st], kv[st]);
    }
    for (int i = 0; i < m.nq; ++i) q[i] += dt / 6 * (kq[0][i] + 2 * kq[1][i] + 2 * kq[2][i] + kq[3][i]);
    for (int i = 0; i < m.nv; ++i) qd[i] += dt / 6 * (kv[0][i] + 2 * kv[1][i] + 2 * kv[2][i] + kv[3][i]);
    for (const Body& b : m.bodies)
        if (b.type == JointType::Floating) {
            double n = 0;
            for (int k = 3; k < 7; ++k) n += q[b.q_index + k] * q[b.q_index + k];
            for (int k = 3; k < 7; ++k) q[b.q_index + k] /= std::sqrt(n);
        }
}

SVec<double> momentum(const Model& m, const std::vector<double>& q, const std::vector<double>& qd) {
    return nelu::spatial_momentum(m, nelu::forward_kinematics(m, q.data(), qd.data()));
}

}  // namespace

TEST_CASE("identity: a free-floating robot without gravity conserves its spatial momentum") {
    // RK4, dt = 1e-3, 0.1 s; the momentum (world coordinates, world origin) is compared with its
    // initial value at every step, relative to max |h(0)|.
    nelu::test::ResidualTable t("momentum conservation (zero gravity, tau = 0): max_t |h(t) - h(0)| / |h(0)|");
    int floating = 0;
    for (const auto& [name, m0] : robots()) {
        if (!is_floating(m0)) continue;
        ++floating;
        Model m = m0;
        m.gravity = nelu::zero6<double>();
        std::mt19937_64 rng(8);
        for (int trial = 0; trial < 3; ++trial) {
            INFO("robot " << name << ", trial " << trial);
            const State s = nelu::random_state(m, rng, false);
            std::vector<double> q = s.q, qd = s.qd;
            const SVec<double> h0 = momentum(m, q, qd);
            double h0_norm = 0, drift = 0;
            for (int k = 0; k < 6; ++k) h0_norm = std::max(h0_norm, std::abs(h0[k]));
            for (int step = 0; step < 100; ++step) {
                rk4_step(m, q, qd, 1e-3);
                const SVec<double> h = momentum(m, q, qd);
                for (int k = 0; k < 6; ++k) drift = std::max(drift, std::abs(h[k] - h0[k]));
            }
            // the motion must not be trivial: the joints moved
            double moved = 0;
            for (int i = 0; i < m.nq; ++i) moved = std::max(moved, std::abs(q[i] - s.q[i]));
            CHECK(moved > 1e-3);
            CHECK_RESIDUAL(t, name, drift / h0_norm, 1e-9);
        }
    }
    CHECK(floating >= 2);
}
