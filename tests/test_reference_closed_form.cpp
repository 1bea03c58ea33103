// Reference algorithms (nelu/reference.hpp) against textbook closed forms on small hand-built models:
// a single pendulum, the planar two-link arm, prismatic sliders, a revolute-prismatic arm and a free
// rigid body. Every expected value is derived below from the Lagrangian or from Newton-Euler about
// the centre of mass, and computed with Eigen, never with nelu's spatial algebra.
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "nelu/model.hpp"
#include "nelu/reference.hpp"
#include "nelu/spatial.hpp"
#include "nelu/state.hpp"

namespace {

using nelu::Body;
using nelu::JointType;
using nelu::Model;
using nelu::SVec;
using Eigen::Matrix3d;
using Eigen::Vector3d;

constexpr double kPi = 3.14159265358979323846;
constexpr double kTol = 1e-10;

nelu::Vec3<double> v3(const Vector3d& v) { return {{v(0), v(1), v(2)}}; }
nelu::Mat3<double> m3(const Matrix3d& A) {
    nelu::Mat3<double> B;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) B(i, j) = A(i, j);
    return B;
}
Matrix3d skew(const Vector3d& c) {
    Matrix3d S;
    S << 0, -c(2), c(1), c(2), 0, -c(0), -c(1), c(0), 0;
    return S;
}

/// Spatial inertia about the body origin from mass, centre of mass c and inertia Ic about the
/// centre of mass, written out here (not nelu::inertia_from_com): h = m c, Ibar = Ic + m (c.c 1 - c c^T).
nelu::Inertia<double> body_inertia(double m, const Vector3d& c, const Matrix3d& Ic) {
    Matrix3d Ibar = Ic + m * (c.squaredNorm() * Matrix3d::Identity() - c * c.transpose());
    return {m, v3(m * c), m3(Ibar)};
}

/// A symmetric positive-definite rotational inertia with products of inertia.
Matrix3d sample_inertia(double a, double b, double c, double p) {
    Matrix3d I;
    I << a, p, -0.5 * p, p, b, 0.3 * p, -0.5 * p, 0.3 * p, c;
    return I;
}

/// A body on parent `parent` with the given joint, tree transform (E, r) and inertia.
Body make_body(const std::string& name, int parent, JointType type, const Vector3d& axis, const Matrix3d& E,
               const Vector3d& r, const nelu::Inertia<double>& I) {
    Body b;
    b.name = name, b.joint_name = name + "_joint", b.parent = parent, b.type = type;
    b.axis = v3(axis);
    b.X_tree = {m3(E), v3(r)};
    b.I = I;
    return b;
}

/// |a - b| / (|b| + s0): the error relative to the expected value, with the problem's natural scale
/// s0 as a floor for expected values near zero.
double scaled(double a, double b, double s0) { return std::abs(a - b) / (std::abs(b) + s0); }

/// The worst scaled residual of each check, printed in order when the test case ends.
class Residuals {
  public:
    void add(const std::string& what, double r) {
        for (auto& row : rows_)
            if (row.first == what) {
                row.second = std::max(row.second, r);
                return;
            }
        rows_.push_back({what, r});
    }
    ~Residuals() {
        for (const auto& [what, r] : rows_) std::printf("  closed form %-44s worst scaled residual %.3e\n", what.c_str(), r);
    }

  private:
    std::vector<std::pair<std::string, double>> rows_;
};

/// Record the residual and check it against the tolerance.
#define CHECK_RESIDUAL(log, what, r)       \
    do {                                   \
        const double r_ = (r);             \
        (log).add(what, r_);               \
        CHECK_MESSAGE(r_ < kTol, what);    \
    } while (0)

std::vector<double> rnea(const Model& m, const std::vector<double>& q, const std::vector<double>& qd,
                         const std::vector<double>& qdd, const std::vector<SVec<double>>* fext = nullptr) {
    std::vector<double> tau(m.nv);
    nelu::rnea(m, q.data(), qd.data(), qdd.data(), fext ? fext->data() : nullptr, tau.data());
    return tau;
}
std::vector<double> aba(const Model& m, const std::vector<double>& q, const std::vector<double>& qd,
                        const std::vector<double>& tau, const std::vector<SVec<double>>* fext = nullptr) {
    std::vector<double> qdd(m.nv);
    nelu::aba(m, q.data(), qd.data(), tau.data(), fext ? fext->data() : nullptr, qdd.data());
    return qdd;
}
Eigen::MatrixXd crba(const Model& m, const std::vector<double>& q) {
    std::vector<double> M(m.nv * m.nv);
    nelu::crba(m, q.data(), M.data());
    Eigen::MatrixXd A(m.nv, m.nv);
    for (int i = 0; i < m.nv; ++i)
        for (int j = 0; j < m.nv; ++j) A(i, j) = M[i * m.nv + j];
    return A;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// (a) Single pendulum.
//
// One revolute body about the y axis, pivot at p0 = (0.3, -0.2, 1.0) in the world, gravity
// g = (0, 0, -g). In body coordinates the centre of mass is c = (0, d, -l) (d along the axis does
// not change the dynamics), the rotational inertia about the centre of mass is a full symmetric Ic.
// Body -> world rotation R = Ry(q) = [cos 0 sin; 0 1 0; -sin 0 cos], so the centre of mass is at
//   p_c = p0 + R c = p0 + (-l sin q, d, -l cos q),
//   V = m g z_c = m g (p0_z - l cos q),        dV/dq = m g l sin q.
// omega = qd y, and y is fixed by R: T = 1/2 (Iyy + m l^2) qd^2 (parallel axis: the distance of the
// centre of mass from the axis is l). One coordinate, so no Coriolis term, and Lagrange gives
//   tau = J qdd + m g l sin q,   J = M = Iyy + m l^2,   qdd = (tau - m g l sin q) / J.
// The spatial momentum about the world origin: linear m v_c with v_c = omega x R c; angular
// R Ic R^T omega + p_c x m v_c. The body Jacobian is the joint axis [0 1 0; 0 0 0].
TEST_CASE("closed form: single pendulum (revolute about y, gravity -z)") {
    const double mass = 1.7, l = 0.65, d = 0.15, g = 9.81;
    const Vector3d p0(0.3, -0.2, 1.0), c(0, d, -l);
    const Matrix3d Ic = sample_inertia(0.031, 0.042, 0.027, 0.004);
    Model m;
    m.name = "pendulum";
    m.bodies.push_back(make_body("bob", -1, JointType::Revolute, Vector3d::UnitY(), Matrix3d::Identity(), p0,
                                 body_inertia(mass, c, Ic)));
    m.assign_indices();
    REQUIRE(m.nq == 1);
    REQUIRE(m.nv == 1);
    const double J = Ic(1, 1) + mass * l * l;
    const double s0 = mass * g * l;  // natural torque scale

    Residuals log;
    for (double q : {0.0, kPi / 2, -kPi / 2, kPi, 0.7, -2.3})
        for (double qd : {0.0, 1.3, -0.4})
            for (double qdd : {0.0, 2.1, -0.8}) {
                INFO("q = " << q << ", qd = " << qd << ", qdd = " << qdd);
                const double tau_expected = J * qdd + mass * g * l * std::sin(q);
                const double tau = rnea(m, {q}, {qd}, {qdd})[0];
                CHECK_RESIDUAL(log, "pendulum rnea tau", scaled(tau, tau_expected, s0));

                const double tau_in = 0.37 - 0.5 * qdd;  // an arbitrary torque
                const double qdd_expected = (tau_in - mass * g * l * std::sin(q)) / J;
                const double qdd_aba = aba(m, {q}, {qd}, {tau_in})[0];
                CHECK_RESIDUAL(log, "pendulum aba qdd", scaled(qdd_aba, qdd_expected, s0 / J));

                CHECK_RESIDUAL(log, "pendulum crba M", scaled(crba(m, {q})(0, 0), J, 0));

                std::vector<double> qv{q}, qdv{qd};
                auto k = nelu::forward_kinematics(m, qv.data(), qdv.data());
                const double T_expected = 0.5 * J * qd * qd, V_expected = mass * g * (p0(2) - l * std::cos(q));
                CHECK_RESIDUAL(log, "pendulum kinetic energy", scaled(nelu::kinetic_energy(m, k), T_expected, s0));
                CHECK_RESIDUAL(log, "pendulum potential energy", scaled(nelu::potential_energy(m, k), V_expected, s0));

                const Matrix3d R = Eigen::AngleAxisd(q, Vector3d::UnitY()).toRotationMatrix();
                const Vector3d omega = qd * Vector3d::UnitY(), pc = p0 + R * c, vc = omega.cross(R * c);
                const Vector3d lin = mass * vc, ang = R * Ic * R.transpose() * omega + pc.cross(mass * vc);
                const SVec<double> h = nelu::spatial_momentum(m, k);
                const double hs = mass * l * (1 + p0.norm()) * (1 + std::abs(qd));
                for (int i = 0; i < 3; ++i) {
                    CHECK_RESIDUAL(log, "pendulum spatial momentum", std::abs(h.w[i] - ang(i)) / hs);
                    CHECK_RESIDUAL(log, "pendulum spatial momentum", std::abs(h.l[i] - lin(i)) / hs);
                }
                auto Jb = nelu::body_jacobian(m, qv.data(), 0);
                REQUIRE(Jb.size() == 1u);
                for (int i = 0; i < 6; ++i) CHECK_RESIDUAL(log, "pendulum body Jacobian", std::abs(Jb[0][i] - (i == 1 ? 1.0 : 0.0)));
            }
}

// ---------------------------------------------------------------------------------------------
// (b) Planar two-link arm (Spong, Hutchinson, Vidyasagar, "Robot Modeling and Control", 7.4).
//
// Both joints about z; link 1 from the world origin, link 2 at (l1, 0, 0) in link-1 coordinates;
// gravity g = (0, -g, 0) lies in the plane. Centre of mass of link i at (lc_i, 0, e_i) in its own
// frame (the offset e_i along z does not enter planar dynamics); I_i is the zz moment about the
// centre of mass (the other entries of the full tensor load only the joint bearings: with omega
// along z, (Ic omega_dot + omega x Ic omega)_z = Izz omega_dot_z).
// Centres of mass in the plane: p1 = lc1 (c1, s1), p2 = l1 (c1, s1) + lc2 (c12, s12), so
//   T = 1/2 qd^T M qd with
//     M11 = m1 lc1^2 + m2 (l1^2 + lc2^2 + 2 l1 lc2 cos q2) + I1 + I2
//     M12 = M21 = m2 (lc2^2 + l1 lc2 cos q2) + I2,   M22 = m2 lc2^2 + I2,
//   V = m1 g lc1 s1 + m2 g (l1 s1 + lc2 s12).
// Lagrange's equations, with h = -m2 l1 lc2 sin q2 (the Christoffel symbols of M):
//   C qd = [h qd2^2 + 2 h qd1 qd2;  -h qd1^2]
//   G    = [(m1 lc1 + m2 l1) g c1 + m2 lc2 g c12;  m2 lc2 g c12]
//   tau  = M qdd + C qd + G.
// Body Jacobian of link 2 (body-2 coordinates at the elbow): joint 1's column is the rotation about
// the world z axis seen from the elbow, omega = z, v = R12^T (z x l1 (c1, s1, 0)) =
// l1 (sin q2, cos q2, 0); joint 2's column is [0 0 1 0 0 0].
TEST_CASE("closed form: planar double pendulum M(q), C(q, qd) qd, G(q)") {
    const double m1 = 1.3, m2 = 0.8, l1 = 0.55, lc1 = 0.3, lc2 = 0.35, e1 = 0.04, e2 = -0.07, g = 9.81;
    const Matrix3d Ic1 = sample_inertia(0.021, 0.034, 0.045, 0.003), Ic2 = sample_inertia(0.012, 0.019, 0.026, -0.002);
    const double I1 = Ic1(2, 2), I2 = Ic2(2, 2);
    Model m;
    m.name = "double_pendulum_planar";
    m.gravity = {{{0, 0, 0}}, {{0, -g, 0}}};
    m.bodies.push_back(make_body("link1", -1, JointType::Revolute, Vector3d::UnitZ(), Matrix3d::Identity(),
                                 Vector3d::Zero(), body_inertia(m1, Vector3d(lc1, 0, e1), Ic1)));
    m.bodies.push_back(make_body("link2", 0, JointType::Revolute, Vector3d::UnitZ(), Matrix3d::Identity(),
                                 Vector3d(l1, 0, 0), body_inertia(m2, Vector3d(lc2, 0, e2), Ic2)));
    m.assign_indices();
    REQUIRE(m.nv == 2);

    auto M_of = [&](double q2) {
        Eigen::Matrix2d M;
        M(0, 0) = m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(q2)) + I1 + I2;
        M(0, 1) = M(1, 0) = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(q2)) + I2;
        M(1, 1) = m2 * lc2 * lc2 + I2;
        return M;
    };
    auto Cqd_of = [&](double q2, const Eigen::Vector2d& qd) {
        const double h = -m2 * l1 * lc2 * std::sin(q2);
        return Eigen::Vector2d(h * qd(1) * qd(1) + 2 * h * qd(0) * qd(1), -h * qd(0) * qd(0));
    };
    auto G_of = [&](double q1, double q2) {
        const double c1 = std::cos(q1), c12 = std::cos(q1 + q2);
        return Eigen::Vector2d((m1 * lc1 + m2 * l1) * g * c1 + m2 * lc2 * g * c12, m2 * lc2 * g * c12);
    };
    const double s_tau = (m1 * lc1 + m2 * (l1 + lc2)) * g;  // natural torque scale
    const double s_M = M_of(0)(0, 0);

    std::vector<std::pair<double, double>> configs;  // every pair of multiples of pi/2, then random
    for (double a : {0.0, kPi / 2, -kPi / 2, kPi})
        for (double b : {0.0, kPi / 2, -kPi / 2, kPi}) configs.push_back({a, b});
    std::mt19937_64 rng(20240601);
    for (int k = 0; k < 12; ++k) configs.push_back({nelu::uniform(rng, -kPi, kPi), nelu::uniform(rng, -kPi, kPi)});

    Residuals log;
    for (auto [q1, q2] : configs) {
        const Eigen::Vector2d qd(nelu::uniform(rng, -2, 2), nelu::uniform(rng, -2, 2)),
            qdd(nelu::uniform(rng, -3, 3), nelu::uniform(rng, -3, 3));
        INFO("q = (" << q1 << ", " << q2 << "), qd = (" << qd(0) << ", " << qd(1) << ")");
        const std::vector<double> q{q1, q2}, qdv{qd(0), qd(1)}, qddv{qdd(0), qdd(1)}, zero{0, 0};
        const Eigen::Matrix2d M = M_of(q2);
        const Eigen::Vector2d G = G_of(q1, q2), Cqd = Cqd_of(q2, qd), tau_expected = M * qdd + Cqd + G;

        const Eigen::MatrixXd Mn = crba(m, q);
        const std::vector<double> g_n = rnea(m, q, zero, zero), h_n = rnea(m, q, qdv, zero),
                                  tau_n = rnea(m, q, qdv, qddv);
        const double s_v = s_tau + s_M * (qd.squaredNorm() + qdd.norm());
        for (int i = 0; i < 2; ++i) {
            for (int j = 0; j < 2; ++j) CHECK_RESIDUAL(log, "double pendulum crba M", scaled(Mn(i, j), M(i, j), s_M));
            CHECK_RESIDUAL(log, "double pendulum rnea(q, 0, 0) = G", scaled(g_n[i], G(i), s_tau));
            CHECK_RESIDUAL(log, "double pendulum rnea(q, qd, 0) = C qd + G", scaled(h_n[i], Cqd(i) + G(i), s_v));
            CHECK_RESIDUAL(log, "double pendulum rnea = M qdd + C qd + G", scaled(tau_n[i], tau_expected(i), s_v));
        }

        const Eigen::Vector2d tau_in(0.4 * qdd(1), -0.9 * qdd(0));  // arbitrary torques
        const Eigen::Vector2d qdd_expected = M.ldlt().solve(tau_in - Cqd - G);
        const std::vector<double> qdd_n = aba(m, q, qdv, {tau_in(0), tau_in(1)});
        for (int i = 0; i < 2; ++i)
            CHECK_RESIDUAL(log, "double pendulum aba", scaled(qdd_n[i], qdd_expected(i), s_v / s_M));

        auto k = nelu::forward_kinematics(m, q.data(), qdv.data());
        const double T_expected = 0.5 * qd.dot(M * qd);
        const double V_expected = m1 * g * lc1 * std::sin(q1) + m2 * g * (l1 * std::sin(q1) + lc2 * std::sin(q1 + q2));
        CHECK_RESIDUAL(log, "double pendulum kinetic energy", scaled(nelu::kinetic_energy(m, k), T_expected, s_v));
        CHECK_RESIDUAL(log, "double pendulum potential energy", scaled(nelu::potential_energy(m, k), V_expected, s_tau));
        auto J2 = nelu::body_jacobian(m, q.data(), 1);
        const double J2_expected[2][6] = {{0, 0, 1, l1 * std::sin(q2), l1 * std::cos(q2), 0}, {0, 0, 1, 0, 0, 0}};
        for (int col = 0; col < 2; ++col)
            for (int r = 0; r < 6; ++r)
                CHECK_RESIDUAL(log, "double pendulum body Jacobian of link 2", std::abs(J2[col][r] - J2_expected[col][r]) / l1);
    }
}

// ---------------------------------------------------------------------------------------------
// Prismatic joints.
//
// A mass on a slider whose axis makes the angle theta with the vertical, gravity -z. The joint
// frame is rotated by an arbitrary constant E (so the axis in body coordinates is E u with u the
// world direction (sin theta, 0, cos theta)). Pure translation: T = 1/2 m qd^2, V = m g q cos theta
// + const, so tau = m (qdd + g cos theta), M = m; the vertical slider (theta = 0) is tau = m (qdd + g).
TEST_CASE("closed form: prismatic slider, vertical and tilted") {
    const double mass = 2.3, g = 9.81;
    const Matrix3d E = (Eigen::AngleAxisd(0.7, Vector3d(1, 2, -1).normalized())).toRotationMatrix().transpose();
    Residuals log;
    for (double theta : {0.0, 0.6, kPi / 2, 2.0}) {
        const Vector3d u(std::sin(theta), 0, std::cos(theta));
        Model m;
        m.name = "slider";
        m.bodies.push_back(make_body("slider", -1, JointType::Prismatic, E * u, E, Vector3d(0.1, 0.2, 0.3),
                                     body_inertia(mass, Vector3d(0.05, -0.02, 0.1), sample_inertia(0.01, 0.02, 0.015, 0.001))));
        m.assign_indices();
        for (double q : {0.0, 0.3, -0.45})
            for (double qd : {0.0, 0.8})
                for (double qdd : {0.0, 1.5, -12.0}) {
                    INFO("theta = " << theta << ", q = " << q << ", qd = " << qd << ", qdd = " << qdd);
                    const double tau_expected = mass * (qdd + g * std::cos(theta));
                    CHECK_RESIDUAL(log, "slider rnea tau = m (qdd + g cos theta)",
                                   scaled(rnea(m, {q}, {qd}, {qdd})[0], tau_expected, mass * g));
                    CHECK_RESIDUAL(log, "slider aba", scaled(aba(m, {q}, {qd}, {tau_expected})[0], qdd, g));
                    CHECK_RESIDUAL(log, "slider crba M = m", scaled(crba(m, {q})(0, 0), mass, 0));
                }
    }
}

// A revolute-prismatic (polar) arm in the horizontal plane: joint 1 about the world z axis, joint 2
// sliding along link 1's x axis, body 2's origin at r = d + q2 along it. Body 1: mass m1, centre of
// mass (a, 0, 0), Izz1 about it; body 2: mass m2, centre of mass at its origin (plus an offset e along
// z, which does not enter), Izz2. Gravity -z is normal to the plane and does no work.
//   T = 1/2 (Izz1 + m1 a^2 + Izz2 + m2 r^2) qd1^2 + 1/2 m2 qd2^2
//   tau1 = (Izz1 + m1 a^2 + Izz2 + m2 r^2) qdd1 + 2 m2 r qd1 qd2      (Coriolis)
//   tau2 = m2 qdd2 - m2 r qd1^2                                      (centrifugal)
TEST_CASE("closed form: revolute-prismatic polar arm") {
    const double m1 = 1.1, m2 = 0.7, a = 0.25, d = 0.4, e = 0.05;
    const Matrix3d Ic1 = sample_inertia(0.02, 0.03, 0.04, 0.002), Ic2 = sample_inertia(0.005, 0.006, 0.007, 0.0005);
    Model m;
    m.name = "polar";
    m.bodies.push_back(make_body("arm", -1, JointType::Revolute, Vector3d::UnitZ(), Matrix3d::Identity(),
                                 Vector3d(0, 0, 0.5), body_inertia(m1, Vector3d(a, 0, 0), Ic1)));
    m.bodies.push_back(make_body("slider", 0, JointType::Prismatic, Vector3d::UnitX(), Matrix3d::Identity(),
                                 Vector3d(d, 0, 0), body_inertia(m2, Vector3d(0, 0, e), Ic2)));
    m.assign_indices();
    Residuals log;
    std::mt19937_64 rng(7);
    for (int k = 0; k < 20; ++k) {
        const std::vector<double> q{nelu::uniform(rng, -kPi, kPi), nelu::uniform(rng, -0.3, 0.5)},
            qd{nelu::uniform(rng, -2, 2), nelu::uniform(rng, -1, 1)}, qdd{nelu::uniform(rng, -2, 2), nelu::uniform(rng, -2, 2)};
        INFO("state " << k);
        const double r = d + q[1], J = Ic1(2, 2) + m1 * a * a + Ic2(2, 2) + m2 * r * r;
        const double tau1 = J * qdd[0] + 2 * m2 * r * qd[0] * qd[1], tau2 = m2 * qdd[1] - m2 * r * qd[0] * qd[0];
        const double s = J * 4 + m2 * 4;  // natural scale: |qd|, |qdd| <= 2
        const std::vector<double> tau = rnea(m, q, qd, qdd), qdd_n = aba(m, q, qd, {tau1, tau2});
        const Eigen::MatrixXd M = crba(m, q);
        CHECK_RESIDUAL(log, "polar arm rnea tau1 (Coriolis)", scaled(tau[0], tau1, s));
        CHECK_RESIDUAL(log, "polar arm rnea tau2 (centrifugal)", scaled(tau[1], tau2, s));
        CHECK_RESIDUAL(log, "polar arm aba", std::max(scaled(qdd_n[0], qdd[0], 1), scaled(qdd_n[1], qdd[1], 1)));
        CHECK_RESIDUAL(log, "polar arm crba M = diag(J, m2)",
                       std::max({scaled(M(0, 0), J, 0), scaled(M(1, 1), m2, 0), std::abs(M(0, 1)) / J, std::abs(M(1, 0)) / J}));
    }
}

// ---------------------------------------------------------------------------------------------
// A free rigid body (floating joint on the world).
//
// State: position p, unit quaternion (x, y, z, w) with R body -> world, body-frame twist
// [omega; v] (v: velocity of the body origin in body coordinates) and its derivative
// [omega_dot; v_dot]. Newton-Euler about the centre of mass c (body coordinates):
//   p_c = p + R c,  p_c'' = R (v_dot + omega x v + omega_dot x c + omega x (omega x c)) = R a_c
//   F = m (a_c - g_b),  g_b = R^T g             (force besides gravity, body coordinates)
//   N_c = Ic omega_dot + omega x Ic omega        (Euler's equations about the centre of mass)
//   N_o = N_c + c x F                             (the same wrench at the body origin)
// so the joint wrench is tau = [N_o; F] - f^x for an external wrench f^x at the body origin.
// From T = 1/2 m |v + omega x c|^2 + 1/2 omega^T Ic omega:
//   M = [Ic + m (c.c 1 - c c^T), m cx; -m cx, m 1].
// R comes from Eigen's quaternion, not from nelu::quat_to_rotation.
TEST_CASE("closed form: free rigid body, Newton-Euler in body coordinates") {
    const double mass = 3.2;
    const Vector3d c(0.12, -0.07, 0.2);
    const Matrix3d Ic = sample_inertia(0.08, 0.11, 0.06, 0.01);
    Model m;
    m.name = "free_body";
    m.bodies.push_back(make_body("body", -1, JointType::Floating, Vector3d::UnitZ(), Matrix3d::Identity(),
                                 Vector3d::Zero(), body_inertia(mass, c, Ic)));
    m.assign_indices();
    REQUIRE(m.nq == 7);
    REQUIRE(m.nv == 6);
    Eigen::Matrix<double, 6, 6> M_expected;
    M_expected << Ic + mass * (c.squaredNorm() * Matrix3d::Identity() - c * c.transpose()), mass * skew(c),
        -mass * skew(c), mass * Matrix3d::Identity();

    Residuals log;
    std::mt19937_64 rng(99);
    for (const Vector3d& gravity : {Vector3d(0, 0, -9.81), Vector3d(0.3, -0.5, -9.0)})
        for (int k = 0; k < 20; ++k) {
            m.gravity = {{{0, 0, 0}}, {{gravity(0), gravity(1), gravity(2)}}};
            nelu::State s = nelu::random_state(m, rng, k % 2 == 1, 2.0);
            if (k == 0) s.q = {0, 0, 0, 0, 0, 0, 1};  // identity orientation
            INFO("gravity (" << gravity.transpose() << "), state " << k);
            const Eigen::Quaterniond quat(s.q[6], s.q[3], s.q[4], s.q[5]);  // Eigen takes (w, x, y, z)
            const Matrix3d R = quat.toRotationMatrix();
            const Vector3d omega(s.qd[0], s.qd[1], s.qd[2]), v(s.qd[3], s.qd[4], s.qd[5]);
            const Vector3d omega_dot(s.qdd[0], s.qdd[1], s.qdd[2]), v_dot(s.qdd[3], s.qdd[4], s.qdd[5]);
            const Vector3d g_b = R.transpose() * gravity;
            const Vector3d a_c = v_dot + omega.cross(v) + omega_dot.cross(c) + omega.cross(omega.cross(c));
            const Vector3d F = mass * (a_c - g_b);
            const Vector3d N_o = Ic * omega_dot + omega.cross(Ic * omega) + c.cross(F);
            std::vector<double> tau_expected{N_o(0), N_o(1), N_o(2), F(0), F(1), F(2)};
            for (int i = 0; i < 6; ++i) tau_expected[i] -= s.fext[0][i];

            const std::vector<double> tau = rnea(m, s.q, s.qd, s.qdd, &s.fext);
            const std::vector<double> qdd = aba(m, s.q, s.qd, tau_expected, &s.fext);
            const Eigen::MatrixXd M = crba(m, s.q);
            const double s_f = mass * (gravity.norm() + 4 + 4 * c.norm()) + 1;  // natural wrench scale
            for (int i = 0; i < 6; ++i) {
                CHECK_RESIDUAL(log, "free body rnea = Newton-Euler wrench", scaled(tau[i], tau_expected[i], s_f));
                CHECK_RESIDUAL(log, "free body aba", scaled(qdd[i], s.qdd[i], 1));
                for (int j = 0; j < 6; ++j)
                    CHECK_RESIDUAL(log, "free body crba M", scaled(M(i, j), M_expected(i, j), mass));
            }
            auto kin = nelu::forward_kinematics(m, s.q.data(), s.qd.data());
            const double T_expected = 0.5 * mass * (v + omega.cross(c)).squaredNorm() + 0.5 * omega.dot(Ic * omega);
            CHECK_RESIDUAL(log, "free body kinetic energy", scaled(nelu::kinetic_energy(m, kin), T_expected, mass));
        }
}
