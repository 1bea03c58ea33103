// The seed papers' algorithms (issue 5, part a) against dense references built from CRBA and body
// Jacobians, and against ABA:
//   nelu/osim.hpp           Chang & Khatib: Lambda^-1 = J M^-1 J^T for m operational points, and
//                           Lambda Lambda^-1 = I;
//   nelu/constraint_fd.hpp  Yamane & Nakamura: constraint-force forward dynamics = ABA, its joint
//                           constraint wrenches = RNEA's joint forces, with and without link splitting;
//   nelu/iwim.hpp           Kroeg, Gattringer & Mueller: Bhat = M^-1 B and qdd_0 = ABA(tau = 0) by the
//                           implicit inversion and by the extended unit-force method.
// Robots: generated chains and trees (robot_gen, fixed and floating, one with a body of six children),
// a 24-link humanoid-like tree built here, and for constraint_fd every test robot. States: random
// (fixed seeds) and special (all joints 0, +-pi/2, pi). The worst scaled residual of each check is
// printed per robot; operation counts (Counted scalar) are printed for docs/seed-algorithms.md.
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "load.hpp"
#include "nelu/constraint_fd.hpp"
#include "nelu/counting.hpp"
#include "nelu/iwim.hpp"
#include "nelu/model.hpp"
#include "nelu/osim.hpp"
#include "nelu/reference.hpp"
#include "nelu/state.hpp"
#include "robot_gen.hpp"
#include "test_support.hpp"

namespace {

using nelu::Body;
using nelu::BodyPoint;
using nelu::JointType;
using nelu::Model;
using nelu::OpPoint;
using nelu::PointAxes;
using nelu::State;
using nelu::SVec;
using nelu::Vec3;
using Mat = Eigen::MatrixXd;
using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr double kPi = 3.14159265358979323846;
constexpr double kTol = 1e-10;
const double kEps = std::numeric_limits<double>::epsilon();

// ---------------------------------------------------------------------------------------------
// Robots

/// A generated robot; floating, its root link `base` gets a mass (the generator's base has none).
Model generated(nelu::RobotGenOptions::Shape shape, int links, int branching, bool dh, std::uint64_t seed,
                bool floating) {
    nelu::RobotGenOptions o;
    o.shape = shape, o.links = links, o.branching = branching, o.seed = seed;
    o.transforms = dh ? nelu::RobotGenOptions::Transforms::Dh : nelu::RobotGenOptions::Transforms::General;
    std::string urdf = nelu::generate_robot_urdf(o);
    if (floating) {
        const std::string bare = "<link name=\"base\"/>";
        const std::size_t at = urdf.find(bare);
        REQUIRE(at != std::string::npos);
        urdf.replace(at, bare.size(),
                     "<link name=\"base\"><inertial><origin xyz=\"0.02 -0.01 0.03\" rpy=\"0 0 0\"/><mass value=\"4\"/>"
                     "<inertia ixx=\"0.05\" ixy=\"0.001\" ixz=\"0\" iyy=\"0.06\" iyz=\"0.002\" izz=\"0.07\"/>"
                     "</inertial></link>");
    }
    return nelu::load_urdf_string(urdf, "generated", nelu::LoadOptions{floating, {}}).model;
}
Model chain(int n, bool floating = false, bool dh = false) {
    return generated(nelu::RobotGenOptions::Shape::Chain, n, 1, dh, 100 + n, floating);
}
Model tree(int n, int branching, bool floating = false) {
    return generated(nelu::RobotGenOptions::Shape::Tree, n, branching, false, 200 + n + branching, floating);
}

/// The robot with some joints made prismatic (about the same axis) and some fixed (welded: no
/// degree of freedom, a body boundary kept as with LoadOptions::keep_fixed); the floating base stays.
Model mixed_joints(Model m) {
    for (int i = 0; i < m.num_bodies(); ++i) {
        Body& b = m.bodies[i];
        if (b.type != JointType::Revolute) continue;
        if (i % 4 == 2) b.type = JointType::Prismatic, b.lower = -0.3, b.upper = 0.3, b.has_limits = true;
        if (i % 5 == 3) b.type = JointType::Fixed, b.has_limits = false;
    }
    m.assign_indices();
    m.name += "_mixed";
    return m;
}

/// A humanoid-like tree of 24 revolute links (Chang & Khatib's Fig. 2 has n = 24): two legs of five
/// (hip yaw, roll, pitch, knee, ankle), a waist of two (yaw, pitch) and two arms of six (shoulder
/// pitch, roll, yaw, elbow, wrist yaw, pitch). Fixed: the pelvis is the world, the legs and the waist
/// hang from it. Floating: the pelvis is a 25th, floating body. Axes and joint frames are tilted by a
/// few degrees (fixed seed) so that no two axes are exactly aligned at the special configurations.
Model humanoid(bool floating) {
    Model m;
    m.name = floating ? "humanoid24+floating" : "humanoid24";
    std::mt19937_64 rng(24);
    auto tilt = [&](Vec3<double> v, double amount) {
        for (int k = 0; k < 3; ++k) v[k] += nelu::uniform(rng, -amount, amount);
        return (1 / std::sqrt(nelu::dot(v, v))) * v;
    };
    auto add = [&](const std::string& name, int parent, JointType type, Vec3<double> axis, Vec3<double> r,
                   double mass, Vec3<double> com, Vec3<double> moments) {
        Body b;
        b.name = name, b.joint_name = name + "_joint", b.parent = parent, b.type = type;
        if (type == JointType::Revolute) b.axis = tilt(axis, 0.08);
        const Vec3<double> u = tilt({{1, 1, 1}}, 1.0);
        const double angle = nelu::uniform(rng, -0.15, 0.15);
        if (type != JointType::Floating) b.X_tree = {nelu::rot_axis(u, std::cos(angle), std::sin(angle)), r};
        nelu::Mat3<double> Ic = nelu::zero_mat3<double>();
        for (int k = 0; k < 3; ++k) Ic(k, k) = moments[k];
        b.I = nelu::inertia_from_com(mass, com, Ic);
        m.bodies.push_back(b);
        return static_cast<int>(m.bodies.size()) - 1;
    };
    const Vec3<double> X{{1, 0, 0}}, Y{{0, 1, 0}}, Z{{0, 0, 1}}, O{{0, 0, 0}};
    const int pelvis = floating ? add("pelvis", -1, JointType::Floating, Z, O, 8, {{0, 0, 0.05}}, {{0.08, 0.06, 0.07}}) : -1;
    for (double side : {1.0, -1.0}) {
        const std::string s = side > 0 ? "l_" : "r_";
        int j = add(s + "hip_yaw", pelvis, JointType::Revolute, Z, {{0, 0.1 * side, -0.05}}, 1.0, {{0, 0, -0.03}}, {{0.002, 0.002, 0.002}});
        j = add(s + "hip_roll", j, JointType::Revolute, X, {{0, 0, -0.05}}, 1.0, {{0, 0, -0.03}}, {{0.002, 0.002, 0.002}});
        j = add(s + "thigh", j, JointType::Revolute, Y, {{0, 0, -0.05}}, 4.0, {{0, 0.01 * side, -0.2}}, {{0.06, 0.06, 0.01}});
        j = add(s + "shank", j, JointType::Revolute, Y, {{0, 0, -0.4}}, 3.0, {{0.01, 0, -0.2}}, {{0.04, 0.04, 0.006}});
        add(s + "foot", j, JointType::Revolute, Y, {{0, 0, -0.4}}, 1.0, {{0.05, 0, -0.05}}, {{0.002, 0.006, 0.006}});
    }
    int chest = add("waist_yaw", pelvis, JointType::Revolute, Z, {{0, 0, 0.1}}, 2.0, {{0, 0, 0.05}}, {{0.02, 0.02, 0.02}});
    chest = add("chest", chest, JointType::Revolute, Y, {{0, 0, 0.1}}, 10.0, {{0, 0, 0.2}}, {{0.3, 0.25, 0.15}});
    for (double side : {1.0, -1.0}) {
        const std::string s = side > 0 ? "l_" : "r_";
        int j = add(s + "shoulder_pitch", chest, JointType::Revolute, Y, {{0, 0.2 * side, 0.35}}, 1.0, {{0, 0, 0}}, {{0.001, 0.001, 0.001}});
        j = add(s + "shoulder_roll", j, JointType::Revolute, X, {{0, 0.05 * side, 0}}, 0.5, {{0, 0, 0}}, {{0.001, 0.001, 0.001}});
        j = add(s + "upper_arm", j, JointType::Revolute, Z, {{0, 0, -0.05}}, 1.5, {{0, 0, -0.14}}, {{0.012, 0.012, 0.002}});
        j = add(s + "forearm", j, JointType::Revolute, Y, {{0.02, 0, -0.28}}, 1.0, {{0, 0, -0.12}}, {{0.006, 0.006, 0.001}});
        j = add(s + "wrist", j, JointType::Revolute, Z, {{0, 0, -0.12}}, 0.3, {{0, 0, -0.02}}, {{0.0003, 0.0003, 0.0003}});
        add(s + "hand", j, JointType::Revolute, Y, {{0, 0, -0.12}}, 0.4, {{0, 0, -0.06}}, {{0.0008, 0.0008, 0.0004}});
    }
    m.assign_indices();
    REQUIRE(m.num_bodies() == (floating ? 25 : 24));
    return m;
}
int body(const Model& m, const std::string& name) {
    const int i = m.body_index(name);
    REQUIRE_MESSAGE(i >= 0, "no body " << name);
    return i;
}

// ---------------------------------------------------------------------------------------------
// States

struct LabeledState {
    std::string label;
    State s;
};

/// `random` random states, then all joints at 0, +pi/2, -pi/2 and pi (random qd, tau, fext; the
/// floating base at the identity pose for "zero", random otherwise).
std::vector<LabeledState> test_states(const Model& m, std::uint64_t seed, int random = 10) {
    std::mt19937_64 rng(seed);
    std::vector<LabeledState> states;
    for (int k = 0; k < random; ++k) states.push_back({"random " + std::to_string(k), nelu::random_state(m, rng)});
    for (double angle : {0.0, kPi / 2, -kPi / 2, kPi}) {
        State s = nelu::random_state(m, rng);
        for (const Body& b : m.bodies) {
            if (b.type == JointType::Floating && angle == 0.0)
                for (int k = 0; k < 7; ++k) s.q[b.q_index + k] = k == 6 ? 1.0 : 0.0;
            if (b.type == JointType::Revolute) s.q[b.q_index] = angle;
            if (b.type == JointType::Prismatic) s.q[b.q_index] = 0;
        }
        states.push_back({"all joints at " + std::to_string(angle), s});
    }
    return states;
}

// ---------------------------------------------------------------------------------------------
// Dense references

Mat mass_matrix(const Model& m, const std::vector<double>& q) {
    std::vector<double> M(m.nv * m.nv);
    nelu::crba(m, q.data(), M.data());
    return Eigen::Map<RowMat>(M.data(), m.nv, m.nv);
}

/// The body -> world rotation R of body b at q: X_world = plx(E, r) maps world to body coordinates,
/// so R = E^T (and r is the body origin in world coordinates).
Eigen::Matrix3d body_rotation(const Model& m, const std::vector<double>& q, int b) {
    const auto k = nelu::forward_kinematics<double>(m, q.data(), nullptr);
    Eigen::Matrix3d R;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) R(i, j) = k.X_world[b].E(j, i);
    return R;
}

/// The point's task Jacobian, written out without nelu::point_transform: with [w; v] = J_b qd the
/// body's velocity (body coordinates, body origin), the point moves with v + w x offset; link axes
/// give [w; v + w x offset], world axes [R w; R (v + w x offset)]. 6 x nv, or its last 3 rows.
Mat point_jacobian(const Model& m, const std::vector<double>& q, const BodyPoint& p, bool position_only) {
    const auto Jb = nelu::body_jacobian(m, q.data(), p.body);
    const Eigen::Matrix3d R = p.axes == PointAxes::World ? body_rotation(m, q, p.body) : Eigen::Matrix3d::Identity();
    const Eigen::Vector3d off(p.offset[0], p.offset[1], p.offset[2]);
    Mat J(6, m.nv);
    for (int c = 0; c < m.nv; ++c) {
        const Eigen::Vector3d w(Jb[c][0], Jb[c][1], Jb[c][2]), v(Jb[c][3], Jb[c][4], Jb[c][5]);
        J.col(c) << R * w, R * (v + w.cross(off));
    }
    return position_only ? Mat(J.bottomRows(3)) : J;
}
Mat task_jacobian(const Model& m, const std::vector<double>& q, const std::vector<OpPoint>& points) {
    Mat J(nelu::osim_size(points), m.nv);
    int row = 0;
    for (const OpPoint& p : points) {
        const Mat Jp = point_jacobian(m, q, p.point, p.position_only);
        J.middleRows(row, Jp.rows()) = Jp, row += static_cast<int>(Jp.rows());
    }
    return J;
}
/// B = [e_k ..., J_p^T ...] of an InputSet.
Mat input_matrix(const Model& m, const std::vector<double>& q, const nelu::InputSet& in) {
    Mat B = Mat::Zero(m.nv, in.size());
    int c = 0;
    for (int slot : in.dofs) B(slot, c++) = 1;
    for (const BodyPoint& p : in.forces) B.middleCols(c, 3) = point_jacobian(m, q, p, true).transpose(), c += 3;
    return B;
}

double max_abs(const Mat& A) { return A.size() ? A.cwiseAbs().maxCoeff() : 0.0; }
double cond(const Mat& A) {
    const Eigen::VectorXd l = Eigen::SelfAdjointEigenSolver<Mat>(A).eigenvalues();
    return l(0) > 0 ? l(l.size() - 1) / l(0) : INFINITY;
}
Mat matrix(const std::vector<double>& v, int rows, int cols) { return Eigen::Map<const RowMat>(v.data(), rows, cols); }

/// The worst residual per robot of one check, printed (MESSAGE) when the test case ends.

}  // namespace

// =============================================================================================
TEST_CASE("reference point Jacobians: world axes match finite differences of the point's world pose") {
    // Grounds the dense references' convention (fixed base, so q = v): the world position of the point,
    // p = r + R offset, and its rotation R (R = E^T of X_world = plx(E, r)), moved along qd by +-h:
    // (p(q + h qd) - p(q - h qd)) / 2h = J_v qd and (R(q + h qd) - R(q - h qd)) R^T / 2h = [J_w qd]x.
    // The link-axes Jacobian is the world one rotated back: J_link = blockdiag(R^T, R^T) J_world.
    nelu::test::ResidualTable t("point Jacobian vs finite differences: |J qd - d/dt pose| / |J qd|");
    const double h = 1e-5;
    for (const Model& m : {humanoid(false), chain(7), tree(30, 3)}) {
        std::mt19937_64 rng(7);
        for (int trial = 0; trial < 5; ++trial) {
            const State s = nelu::random_state(m, rng);
            const BodyPoint p{m.num_bodies() - 1, {{0.05, -0.03, 0.1}}, PointAxes::World};
            auto pose = [&](double dt, Eigen::Vector3d& pos, Eigen::Matrix3d& R) {
                std::vector<double> q = s.q;
                for (int i = 0; i < m.nv; ++i) q[i] += dt * s.qd[i];
                const auto k = nelu::forward_kinematics<double>(m, q.data(), nullptr);
                R = body_rotation(m, q, p.body);
                pos = Eigen::Vector3d(k.X_world[p.body].r[0], k.X_world[p.body].r[1], k.X_world[p.body].r[2]) +
                      R * Eigen::Vector3d(p.offset[0], p.offset[1], p.offset[2]);
            };
            Eigen::Vector3d p_plus, p_minus, p0;
            Eigen::Matrix3d R_plus, R_minus, R0;
            pose(h, p_plus, R_plus), pose(-h, p_minus, R_minus), pose(0, p0, R0);
            const Eigen::Matrix3d Wx = (R_plus - R_minus) * R0.transpose() / (2 * h);
            Eigen::VectorXd fd(6);
            fd << Wx(2, 1), Wx(0, 2), Wx(1, 0), (p_plus - p_minus) / (2 * h);
            const Eigen::VectorXd Jqd = point_jacobian(m, s.q, p, false) * Eigen::Map<const Eigen::VectorXd>(s.qd.data(), m.nv);
            CHECK_RESIDUAL(t, m.name.empty() ? "generated" : m.name, (Jqd - fd).cwiseAbs().maxCoeff() / Jqd.cwiseAbs().maxCoeff(), 1e-8);
            const BodyPoint pl{p.body, p.offset, PointAxes::Link};
            Mat rot = Mat::Zero(6, 6);
            rot.topLeftCorner(3, 3) = R0.transpose(), rot.bottomRightCorner(3, 3) = R0.transpose();
            CHECK(max_abs(point_jacobian(m, s.q, pl, false) - rot * point_jacobian(m, s.q, p, false)) < 1e-12);
        }
    }
}

// =============================================================================================
// Chang & Khatib
namespace {

struct OsimCase {
    std::string name;
    Model model;
    std::vector<OpPoint> points;
};

OpPoint op(int b, Vec3<double> offset, bool position_only, PointAxes axes = PointAxes::World) {
    return OpPoint{BodyPoint{b, offset, axes}, position_only};
}

std::vector<OsimCase> osim_cases() {
    std::vector<OsimCase> cases;
    const Vec3<double> off{{0.05, -0.03, 0.1}}, off2{{-0.1, 0.02, 0.04}};
    {  // chains: the tip (6) and a middle body (3): the nearest common ancestor is the middle body
        Model c7 = chain(7);
        cases.push_back({"chain7", c7, {op(6, off, true), op(3, off2, true, PointAxes::Link)}});
        cases.push_back({"chain7 tip 6-DoF", c7, {op(6, off, false, PointAxes::Link)}});
        Model c30 = chain(30, false, true);
        cases.push_back({"chain30_dh", c30, {op(29, off, false), op(14, off2, false, PointAxes::Link)}});
        Model f7 = chain(7, true);
        cases.push_back({"chain7+floating", f7, {op(7, off, false), op(4, off2, true)}});
        Model c8m = mixed_joints(chain(8));  // revolute, prismatic and fixed joints
        cases.push_back({"chain8 mixed joints", c8m, {op(7, off, true), op(3, off2, true, PointAxes::Link)}});
    }
    {  // trees: leaves in different branches and an inner body; two points on one body
        Model t30 = tree(30, 3);
        cases.push_back({"tree30_b3", t30, {op(29, off, true), op(22, off2, true, PointAxes::Link), op(5, off, true)}});
        Model t7 = tree(7, 2);
        cases.push_back({"tree7_b2 two points on one body", t7, {op(6, off, true), op(6, off2, true, PointAxes::Link)}});
        Model f30 = tree(30, 3, true);
        cases.push_back({"tree30_b3+floating", f30, {op(30, off, false), op(20, off2, false, PointAxes::Link)}});
        Model t12m = mixed_joints(tree(12, 3, true));
        cases.push_back({"tree12_b3+floating mixed joints", t12m, {op(12, off, true), op(9, off2, true), op(3, off, true, PointAxes::Link)}});
        Model star = tree(7, 6, true);
        cases.push_back({"tree7_b6+floating", star, {op(3, off, false), op(7, off2, true), op(1, off, true)}});
    }
    {  // the humanoid: two hands, 6-DoF, world or link axes; fixed, the feet too (no common ancestor)
        const Vec3<double> hand{{0.03, 0.0, -0.08}}, foot{{0.08, 0.0, -0.06}};
        for (bool floating : {false, true}) {
            Model h = humanoid(floating);
            const std::string n = h.name;
            cases.push_back({n + " hands", h, {op(body(h, "l_hand"), hand, false), op(body(h, "r_hand"), hand, false)}});
            cases.push_back({n + " hands, link axes", h,
                             {op(body(h, "l_hand"), hand, false, PointAxes::Link), op(body(h, "r_hand"), hand, false, PointAxes::Link)}});
            cases.push_back({n + " hands and feet", h,
                             {op(body(h, "l_hand"), hand, true), op(body(h, "r_hand"), hand, true), op(body(h, "l_foot"), foot, true),
                              op(body(h, "r_foot"), foot, true, PointAxes::Link)}});
        }
    }
    return cases;
}

}  // namespace

TEST_CASE("osim: Chang & Khatib's Lambda^-1 equals J M^-1 J^T, and Lambda inverts it") {
    // Lambda^-1: |Lambda^-1 - J M^-1 J^T| / |J M^-1 J^T| (max norms), at every state. Lambda: when
    // J M^-1 J^T has full rank (cond < 1e10), |Lambda Lambda^-1 - I| / max(1, 100 eps cond / 1e-10):
    // the inverse of a matrix of condition c is good to about eps c.
    nelu::test::ResidualTable tinv("osim: |Lambda^-1 - J M^-1 J^T| / |J M^-1 J^T|");
    nelu::test::ResidualTable tlam("osim: |Lambda Lambda^-1 - I| / max(1, 100 eps cond / 1e-10)");
    nelu::test::ResidualTable tcond("osim: condition of Lambda^-1 (not a residual)");
    int coupled = 0;
    for (const OsimCase& c : osim_cases()) {
        const Model& m = c.model;
        const int d = nelu::osim_size(c.points);
        REQUIRE(d > 0);
        for (const auto& [label, s] : test_states(m, 11)) {
            INFO("robot " << c.name << ", state " << label);
            std::vector<double> Linv(d * d), Lambda(d * d);
            const bool ok = nelu::osim(m, s.q.data(), c.points, Lambda.data(), Linv.data());
            const Mat J = task_jacobian(m, s.q, c.points);
            const Mat ref = J * mass_matrix(m, s.q).llt().solve(J.transpose());
            REQUIRE(ref.rows() == d);
            REQUIRE(max_abs(ref) > 0);
            CHECK_RESIDUAL(tinv, c.name, max_abs(matrix(Linv, d, d) - ref) / max_abs(ref), kTol);
            // the off-diagonal blocks couple the points through their common ancestors
            if (c.points.size() > 1 && max_abs(ref.block(0, c.points[0].dim(), c.points[0].dim(), c.points[1].dim())) > 1e-6) ++coupled;
            const double k = cond(ref);
            tcond.add(c.name, k);
            if (k < 1e10) {
                REQUIRE(ok);
                const Mat I = matrix(Lambda, d, d) * matrix(Linv, d, d);
                CHECK_RESIDUAL(tlam, c.name, max_abs(I - Mat::Identity(d, d)) / std::max(1.0, 100 * kEps * k / kTol), kTol);
            }
        }
    }
    CHECK(coupled > 50);
    CHECK(tlam.count() > 150);
}

TEST_CASE("osim: no common ancestor gives a zero block; a 6-DoF point needs 6 DoF above it") {
    // Fixed humanoid: a foot and a hand hang from the world by different joints.
    const Model h = humanoid(false);
    std::mt19937_64 rng(12);
    const State s = nelu::random_state(h, rng);
    const std::vector<OpPoint> pts = {op(body(h, "l_foot"), {{0.1, 0, 0}}, true), op(body(h, "r_hand"), {{0, 0, -0.1}}, false)};
    std::vector<double> Linv(81), Lambda(81);
    CHECK(nelu::osim(h, s.q.data(), pts, Lambda.data(), Linv.data()));
    const Mat L = matrix(Linv, 9, 9);
    CHECK(max_abs(L.block(0, 3, 3, 6)) == 0.0);
    CHECK(max_abs(L.block(3, 0, 6, 3)) == 0.0);
    CHECK(max_abs(L.block(0, 0, 3, 3)) > 0.0);
    CHECK(max_abs(L.block(3, 3, 6, 6)) > 0.0);
    // the foot's path has 5 joints: its 6-DoF Lambda^-1 is singular, and osim() says so
    const std::vector<OpPoint> foot = {op(body(h, "l_foot"), {{0.1, 0, 0}}, false)};
    std::vector<double> F(36), Fl(36);
    const bool ok = nelu::osim(h, s.q.data(), foot, Fl.data(), F.data());
    const double k = cond(matrix(F, 6, 6));
    MESSAGE("5-joint foot, 6-DoF point: osim() returns " << ok << ", cond(Lambda^-1) = " << k);
    CHECK(k > 1e12);
    CHECK(!ok);
}

// =============================================================================================
// Yamane & Nakamura
namespace {

/// RNEA's joint forces f_i (the wrench joint i transmits from the parent to body i, body-i
/// coordinates) at (q, qd, qdd, fext).
std::vector<SVec<double>> joint_forces(const Model& m, const State& s, const std::vector<double>& qdd) {
    const int nb = m.num_bodies();
    const auto k = nelu::forward_kinematics(m, s.q.data(), s.qd.data(), false);
    std::vector<SVec<double>> a(nb), f(nb);
    for (int i = 0; i < nb; ++i) {
        const Body& b = m.bodies[i];
        a[i] = nelu::apply(k.X_up[i], b.parent < 0 ? -m.gravity : a[b.parent]) + nelu::joint_motion(b, qdd.data() + b.v_index) + k.c[i];
        f[i] = b.I * a[i] + nelu::cross_force(k.v[i], b.I * k.v[i]) - s.fext[i];
    }
    for (int i = nb - 1; i >= 0; --i)
        if (m.bodies[i].parent >= 0) f[m.bodies[i].parent] = f[m.bodies[i].parent] + nelu::apply_transpose(k.X_up[i], f[i]);
    return f;
}

/// cond(Phi) of Yamane & Nakamura's constraint-space inertia Phi = Gamma A^-1 Gamma^T (eq. 21), built
/// densely: Gamma's block row of joint j is T_j^T on body j and -T_j^T X_up(j) on its parent. The
/// constraint forces n solve Phi N = alpha, so their error grows with cond(Phi) (which can exceed
/// cond(M): directions of n that barely accelerate anything are poorly determined and harmless to qdd).
double constraint_space_condition(const Model& m, const std::vector<double>& q) {
    const int nb = m.num_bodies();
    int rows = 0;
    for (const Body& b : m.bodies) rows += 6 - b.nv();
    if (rows == 0) return 1;
    Mat Gamma = Mat::Zero(rows, 6 * nb), Ainv = Mat::Zero(6 * nb, 6 * nb);
    int row = 0;
    for (int j = 0; j < nb; ++j) {
        const Body& b = m.bodies[j];
        const nelu::Mat6<double> I = nelu::to_matrix(b.I);
        Ainv.block(6 * j, 6 * j, 6, 6) = Eigen::Map<const RowMat>(&I.m[0][0], 6, 6).inverse();
        const nelu::SmallMat<double> T = nelu::constraint_basis(b);
        if (T.cols == 0) continue;
        Mat Tm(6, T.cols);
        for (int r = 0; r < 6; ++r)
            for (int c = 0; c < T.cols; ++c) Tm(r, c) = T(r, c);
        Gamma.block(row, 6 * j, T.cols, 6) = Tm.transpose();
        if (b.parent >= 0) {
            const nelu::Mat6<double> X = nelu::to_matrix(nelu::parent_to_body(b, q.data()));
            Gamma.block(row, 6 * b.parent, T.cols, 6) = -Tm.transpose() * Eigen::Map<const RowMat>(&X.m[0][0], 6, 6);
        }
        row += T.cols;
    }
    return cond(Gamma * Ainv * Gamma.transpose());
}

bool inertias_positive_definite(const Model& m) {
    for (const Body& b : m.bodies) {
        const nelu::Mat6<double> I = nelu::to_matrix(b.I);
        if (cond(Eigen::Map<const RowMat>(&I.m[0][0], 6, 6)) > 1e12) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("constraint_fd: link splitting leaves at most three joints per link and at most doubles them") {
    for (int children : {1, 2, 3, 6, 12}) {
        const Model m = tree(children + 1, children, true);  // base floating, body 1 with `children` children
        const nelu::SplitTree t = nelu::split_links(m);
        INFO("children " << children);
        std::vector<int> joints(t.links.size(), 0);
        for (std::size_t j = 0; j < t.links.size(); ++j) {
            joints[j] += 1;  // its own joint (real or fixed; the floating root's counts too)
            if (t.links[j].parent >= 0) joints[t.links[j].parent] += 1;
            CHECK(t.links[j].parent < static_cast<int>(j));
        }
        CHECK(*std::max_element(joints.begin(), joints.end()) <= 3);
        CHECK(static_cast<int>(t.links.size()) == m.num_bodies() + std::max(0, children - 2));
        CHECK(static_cast<int>(t.links.size()) <= 2 * m.num_bodies());
        const nelu::SplitTree u = nelu::split_links(m, false);
        CHECK(static_cast<int>(u.links.size()) == m.num_bodies());
    }
}

TEST_CASE("constraint_fd: Yamane & Nakamura's forward dynamics equals ABA, its constraint forces RNEA's") {
    // Forward: |qdd_yn - qdd_aba| / max(|qdd_aba|, 1) / max(1, 100 eps cond(M) / 1e-10). Backward (in
    // torque, independent of ABA): |RNEA(qdd_yn) - tau| / max(|tau|, |M| |qdd|). Joint wrenches S tau + T n
    // against RNEA's joint forces at qdd_yn: |diff| / max |f| / max(1, 100 eps cond(Phi) / 1e-10), Phi the
    // constraint-space inertia (see constraint_space_condition). Split and unsplit trees agree.
    nelu::test::ResidualTable tf("constraint_fd vs ABA, forward: |qdd - qdd_aba| / max(|qdd_aba|, 1) / max(1, 100 eps cond(M) / 1e-10)");
    nelu::test::ResidualTable tb("constraint_fd, backward: |RNEA(qdd) - tau| / max(|tau|, |M| |qdd|)");
    nelu::test::ResidualTable tw("constraint_fd joint wrenches vs RNEA's joint forces: |f - f_rnea| / |f_rnea| / max(1, 100 eps cond(Phi) / 1e-10)");
    nelu::test::ResidualTable tc("constraint_fd: cond(Phi), Phi = Gamma A^-1 Gamma^T (not a residual)");
    nelu::test::ResidualTable ts("constraint_fd split vs unsplit: |qdd_split - qdd_unsplit| / max(|qdd|, 1)");
    std::vector<nelu::test::TestRobot> robots;
    for (const auto& r : nelu::test::all_test_robots()) robots.push_back(r);
    robots.push_back({"tree30_b3+floating", tree(30, 3, true)});
    robots.push_back({"tree13_b6 (body 1 has 6 children)", tree(13, 6)});
    robots.push_back({"tree13_b6+floating", tree(13, 6, true)});
    robots.push_back({"tree9_b8+floating", tree(9, 8, true)});
    robots.push_back({"chain30+floating", chain(30, true)});
    robots.push_back({"chain8 mixed joints", mixed_joints(chain(8))});
    robots.push_back({"tree13_b6+floating mixed joints", mixed_joints(tree(13, 6, true))});
    robots.push_back({"humanoid24", humanoid(false)});
    robots.push_back({"humanoid24+floating", humanoid(true)});
    int checked = 0, many_children = 0;
    for (const auto& [name, m] : robots) {
        if (!inertias_positive_definite(m)) {
            std::mt19937_64 rng(20);
            const State s = nelu::random_state(m, rng);
            std::vector<double> qdd(m.nv);
            const bool ok = nelu::constraint_fd(m, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(), qdd.data());
            MESSAGE("constraint_fd: " << name << " skipped: a body's spatial inertia is singular or nearly so (the method inverts "
                    "every link's); constraint_fd returns " << std::string(ok ? "true" : "false") << " there");
            continue;
        }
        std::vector<int> children(m.num_bodies(), 0);
        for (const Body& b : m.bodies)
            if (b.parent >= 0) ++children[b.parent];
        many_children += *std::max_element(children.begin(), children.end()) >= 5;
        for (const auto& [label, s] : test_states(m, 21, 6)) {
            INFO("robot " << name << ", state " << label);
            std::vector<double> qdd(m.nv), qdd_aba(m.nv), qdd_unsplit(m.nv), tau_back(m.nv);
            std::vector<SVec<double>> wrench(m.num_bodies());
            REQUIRE(nelu::constraint_fd(m, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(), qdd.data(), wrench.data()));
            REQUIRE(nelu::constraint_fd(m, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(), qdd_unsplit.data(), static_cast<SVec<double>*>(nullptr), false));
            nelu::aba(m, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(), qdd_aba.data());
            nelu::rnea(m, s.q.data(), s.qd.data(), qdd.data(), s.fext.data(), tau_back.data());
            const Mat M = mass_matrix(m, s.q);
            const Eigen::Map<const Eigen::VectorXd> x(qdd.data(), m.nv), x_aba(qdd_aba.data(), m.nv), x_un(qdd_unsplit.data(), m.nv),
                t(s.tau.data(), m.nv), tb_(tau_back.data(), m.nv);
            REQUIRE(x_aba.cwiseAbs().maxCoeff() > 0);
            const double allowance = std::max(1.0, 100 * kEps * cond(M) / kTol);
            const double scale = std::max(1.0, x_aba.cwiseAbs().maxCoeff());
            CHECK_RESIDUAL(tf, name, (x - x_aba).cwiseAbs().maxCoeff() / scale / allowance, kTol);
            CHECK_RESIDUAL(ts, name, (x - x_un).cwiseAbs().maxCoeff() / scale / allowance, kTol);
            const double bscale = std::max(t.cwiseAbs().maxCoeff(), (M.cwiseAbs() * x.cwiseAbs()).maxCoeff());
            CHECK_RESIDUAL(tb, name, (tb_ - t).cwiseAbs().maxCoeff() / bscale, kTol);
            const std::vector<SVec<double>> f = joint_forces(m, s, qdd);
            double diff = 0, fmax = 0;
            for (int i = 0; i < m.num_bodies(); ++i)
                for (int r = 0; r < 6; ++r) diff = nelu::test::worse(diff, std::abs(wrench[i][r] - f[i][r])), fmax = std::max(fmax, std::abs(f[i][r]));
            REQUIRE(fmax > 0);
            const double cond_phi = constraint_space_condition(m, s.q);
            tc.add(name, cond_phi);
            CHECK_RESIDUAL(tw, name, diff / fmax / std::max(1.0, 100 * kEps * cond_phi / kTol), kTol);
            ++checked;
        }
    }
    CHECK(checked > 100);
    CHECK(many_children >= 3);
}

// =============================================================================================
// Kroeg, Gattringer & Mueller
namespace {

struct IwimCase {
    std::string name;
    Model model;
    nelu::InputSet in;
};

std::vector<IwimCase> iwim_cases() {
    std::vector<IwimCase> cases;
    auto all_dofs = [](const Model& m) {
        std::vector<int> d(m.nv);
        for (int k = 0; k < m.nv; ++k) d[k] = k;
        return d;
    };
    const Vec3<double> off{{0.05, -0.03, 0.1}}, off2{{-0.1, 0.02, 0.04}};
    const Model c7 = chain(7), c30 = chain(30, false, true), t30 = tree(30, 3), f30 = tree(30, 3, true), f7 = chain(7, true);
    cases.push_back({"chain7 fully actuated + tip force", c7, {all_dofs(c7), {BodyPoint{6, off, PointAxes::World}}}});
    cases.push_back({"chain30_dh last joint", c30, {{29}, {}}});
    cases.push_back({"chain30_dh 3 joints + 2 forces", c30, {{0, 12, 29}, {BodyPoint{29, off, PointAxes::Link}, BodyPoint{10, off2, PointAxes::World}}}});
    cases.push_back({"tree30_b3 forces at leaves", t30, {{4, 7}, {BodyPoint{29, off, PointAxes::World}, BodyPoint{22, off2, PointAxes::Link}, BodyPoint{0, off, PointAxes::World}}}});
    const Model c8m = mixed_joints(chain(8)), t12m = mixed_joints(tree(12, 3, true));
    cases.push_back({"chain8 mixed joints fully actuated + force", c8m, {all_dofs(c8m), {BodyPoint{7, off, PointAxes::World}}}});
    cases.push_back({"tree12_b3+floating mixed joints", t12m, {{0, 4, 7, t12m.nv - 1}, {BodyPoint{12, off, PointAxes::Link}, BodyPoint{3, off2, PointAxes::World}}}});
    cases.push_back({"chain7+floating actuated + force", f7, {{6, 7, 8, 9, 10, 11, 12}, {BodyPoint{7, off, PointAxes::World}}}});
    cases.push_back({"tree30_b3+floating base wrench + forces", f30, {{0, 1, 2, 3, 4, 5, 20}, {BodyPoint{30, off, PointAxes::World}, BodyPoint{15, off2, PointAxes::Link}}}});
    for (bool floating : {false, true}) {  // KGM's humanoid: joints actuated, contacts at the feet and hands
        const Model h = humanoid(floating);
        nelu::InputSet in;
        for (const Body& b : h.bodies)
            if (b.type == JointType::Revolute) in.dofs.push_back(b.v_index);
        for (const char* link : {"l_foot", "r_foot"})
            for (double x : {0.12, -0.04}) in.forces.push_back(BodyPoint{body(h, link), {{x, 0.03, -0.06}}, PointAxes::World});
        for (const char* link : {"l_hand", "r_hand"}) in.forces.push_back(BodyPoint{body(h, link), {{0.03, 0, -0.08}}, PointAxes::Link});
        cases.push_back({h.name + " actuated + 6 contacts", h, in});
    }
    return cases;
}

}  // namespace

TEST_CASE("iwim: the implicit inversion and the unit-force method give M^-1 B; qdd_0 is ABA with tau = 0") {
    // Bhat: |Bhat - M^-1 B| / |M^-1 B| / max(1, 100 eps cond(M) / 1e-10), M^-1 B by a dense Cholesky
    // solve. The unit-force columns are differences of two accelerations of size |qdd_0|, so they are
    // scaled by max(|M^-1 B|, |qdd_0|). qdd_0: |qdd_0 - ABA(q, qd, 0, fext)| / max(|qdd_0|, 1).
    nelu::test::ResidualTable ti("iwim (implicit inversion) vs dense: |Bhat - M^-1 B| / |M^-1 B| / max(1, 100 eps cond(M) / 1e-10)");
    nelu::test::ResidualTable tu("iwim_unit_force vs dense: |Bhat - M^-1 B| / max(|M^-1 B|, |qdd_0|) / max(1, 100 eps cond(M) / 1e-10)");
    nelu::test::ResidualTable t0("iwim qdd_0 vs ABA(tau = 0): |qdd_0 - qdd_aba| / max(|qdd_aba|, 1)");
    for (const IwimCase& c : iwim_cases()) {
        const Model& m = c.model;
        const int nc = c.in.size();
        REQUIRE(nc > 0);
        for (const auto& [label, s] : test_states(m, 31)) {
            INFO("robot " << c.name << ", state " << label);
            std::vector<double> Bhat(m.nv * nc), Bu(m.nv * nc), qdd0(m.nv), qdd0u(m.nv), qdd_aba(m.nv);
            nelu::iwim(m, s.q.data(), s.qd.data(), s.fext.data(), c.in, Bhat.data(), qdd0.data());
            nelu::iwim_unit_force(m, s.q.data(), s.qd.data(), s.fext.data(), c.in, Bu.data(), qdd0u.data());
            const std::vector<double> zero(m.nv, 0.0);
            nelu::aba(m, s.q.data(), s.qd.data(), zero.data(), s.fext.data(), qdd_aba.data());
            const Mat M = mass_matrix(m, s.q);
            const Mat ref = M.llt().solve(input_matrix(m, s.q, c.in));
            REQUIRE(max_abs(ref) > 0);
            const double allowance = std::max(1.0, 100 * kEps * cond(M) / kTol);
            const Eigen::Map<const Eigen::VectorXd> a(qdd0.data(), m.nv), b(qdd_aba.data(), m.nv);
            CHECK_RESIDUAL(ti, c.name, max_abs(matrix(Bhat, m.nv, nc) - ref) / max_abs(ref) / allowance, kTol);
            CHECK_RESIDUAL(tu, c.name, max_abs(matrix(Bu, m.nv, nc) - ref) / std::max(max_abs(ref), b.cwiseAbs().maxCoeff()) / allowance, kTol);
            CHECK_RESIDUAL(t0, c.name, (a - b).cwiseAbs().maxCoeff() / std::max(1.0, b.cwiseAbs().maxCoeff()), kTol);
        }
    }
}

// =============================================================================================
// Scalars and operation counts
namespace {

using nelu::test::convert;
using nelu::test::to_doubles;

/// Lambda^-1 = J M^-1 J^T the dense way, in any scalar: CRBA, M = L D L^T, J from body Jacobians,
/// one solve per row of J, then J (M^-1 J^T).
template <class S> std::vector<S> dense_osim_inverse(const Model& m, const S* q, const std::vector<OpPoint>& points) {
    const int n = m.nv, d = nelu::osim_size(points);
    std::vector<S> M(n * n), J(d * n), X(d * n), L(d * d);
    nelu::crba(m, q, M.data());
    nelu::ldlt_factor(n, M.data());
    std::vector<nelu::Xform<S>> X_up(m.num_bodies());
    for (int i = 0; i < m.num_bodies(); ++i) X_up[i] = nelu::parent_to_body(m.bodies[i], q);
    std::vector<BodyPoint> bps;
    for (const OpPoint& p : points) bps.push_back(p.point);
    const auto X_world = nelu::world_transforms_of(m, X_up, bps);
    int row = 0;
    for (const OpPoint& p : points) {
        const auto Jb = nelu::body_jacobian(m, q, p.point.body);
        const nelu::Xform<S> Xe = nelu::point_transform(p.point, X_world[p.point.body]);
        const int first = p.position_only ? 3 : 0;
        for (int c = 0; c < n; ++c) {
            const SVec<S> v = nelu::apply(Xe, Jb[c]);
            for (int r = first; r < 6; ++r) J[(row + r - first) * n + c] = v[r];
        }
        row += p.dim();
    }
    for (int r = 0; r < d; ++r) {  // row r of X = (M^-1 J^T)^T
        for (int c = 0; c < n; ++c) X[r * n + c] = J[r * n + c];
        nelu::ldlt_solve(n, M.data(), X.data() + r * n);
    }
    for (int i = 0; i < d; ++i)
        for (int j = i; j < d; ++j) {
            S s = J[i * n] * X[j * n];
            for (int c = 1; c < n; ++c) s = s + J[i * n + c] * X[j * n + c];
            L[i * d + j] = L[j * d + i] = s;
        }
    return L;
}

/// M^-1 B the dense way for inputs that are joint slots only: CRBA, L D L^T, one solve per column.
template <class S> std::vector<S> dense_iwim_joints(const Model& m, const S* q, const std::vector<int>& dofs) {
    const int n = m.nv, nc = static_cast<int>(dofs.size());
    std::vector<S> M(n * n), B(n * nc), col(n);
    nelu::crba(m, q, M.data());
    nelu::ldlt_factor(n, M.data());
    for (int c = 0; c < nc; ++c) {
        for (int r = 0; r < n; ++r) col[r] = S(r == dofs[c] ? 1 : 0);
        nelu::ldlt_solve(n, M.data(), col.data());
        for (int r = 0; r < n; ++r) B[r * nc + c] = col[r];
    }
    return B;
}

std::string ops(const nelu::OpCounts& c) {
    return std::to_string(c.mul) + " mul + " + std::to_string(c.add) + " add + " + std::to_string(c.div) + " div = " +
           std::to_string(c.mul + c.add + c.div);
}
template <class F> nelu::OpCounts count(F&& f) {
    nelu::OpCounter::reset();
    f();
    return nelu::OpCounter::get();
}

}  // namespace

TEST_CASE("scalars: the three references run on Counted, bit for bit as in double, and on float") {
    using nelu::Counted;
    const Model h = humanoid(true);
    std::mt19937_64 rng(41);
    const State s = nelu::random_state(h, rng);
    const auto q = convert<Counted>(s.q), qd = convert<Counted>(s.qd), tau = convert<Counted>(s.tau);
    const auto fext = convert<Counted>(s.fext);
    const std::vector<OpPoint> pts = {op(body(h, "l_hand"), {{0.03, 0, -0.08}}, false), op(body(h, "r_hand"), {{0.03, 0, -0.08}}, true)};
    const int d = nelu::osim_size(pts);
    std::vector<Counted> Lc(d * d), Lic(d * d), qddc(h.nv);
    std::vector<double> L(d * d), Li(d * d), qdd(h.nv);
    CHECK(nelu::osim(h, q.data(), pts, Lc.data(), Lic.data()));
    CHECK(nelu::osim(h, s.q.data(), pts, L.data(), Li.data()));
    CHECK(to_doubles(Lc) == L);
    CHECK(to_doubles(Lic) == Li);
    CHECK(nelu::constraint_fd(h, q.data(), qd.data(), tau.data(), fext.data(), qddc.data()));
    CHECK(nelu::constraint_fd(h, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(), qdd.data()));
    CHECK(to_doubles(qddc) == qdd);
    nelu::InputSet in{{6, 10, 20}, {BodyPoint{body(h, "l_foot"), {{0.1, 0, -0.05}}, PointAxes::World}}};
    std::vector<Counted> Bc(h.nv * in.size()), q0c(h.nv);
    std::vector<double> B(h.nv * in.size()), q0(h.nv);
    nelu::iwim(h, q.data(), qd.data(), fext.data(), in, Bc.data(), q0c.data());
    nelu::iwim(h, s.q.data(), s.qd.data(), s.fext.data(), in, B.data(), q0.data());
    CHECK(to_doubles(Bc) == B);
    CHECK(to_doubles(q0c) == q0);
    // and float runs too (the same code path), close to double
    const auto qf = convert<float>(s.q);
    std::vector<float> Lf(d * d);
    CHECK(nelu::osim(h, qf.data(), pts, Lf.data()));
    CHECK(nelu::test::rel_error(to_doubles(Lf), L) < 1e-2);
    std::vector<float> qddf(h.nv), Bf(h.nv * in.size()), q0f(h.nv);
    const auto qdf = convert<float>(s.qd), tauf = convert<float>(s.tau);
    const auto fextf = convert<float>(s.fext);
    CHECK(nelu::constraint_fd(h, qf.data(), qdf.data(), tauf.data(), fextf.data(), qddf.data()));
    CHECK(nelu::test::rel_error(to_doubles(qddf), qdd) < 1e-2);
    nelu::iwim(h, qf.data(), qdf.data(), fextf.data(), in, Bf.data(), q0f.data());
    CHECK(nelu::test::rel_error(to_doubles(Bf), B) < 1e-2);
    CHECK(nelu::test::rel_error(to_doubles(q0f), q0) < 1e-2);
}

TEST_CASE("op counts: osim on the humanoid, iwim vs unit-force vs dense on a 50-link chain") {
    using nelu::Counted;
    const SVec<Counted>* const kNoFext = nullptr;
    std::ostringstream os;
    // Chang & Khatib: the 24-link humanoid-like tree, both hands 6-DoF (world axes), at a random state.
    for (bool floating : {false, true}) {
        const Model h = humanoid(floating);
        std::mt19937_64 rng(51);
        const auto q = convert<Counted>(nelu::random_configuration(h, rng));
        const std::vector<OpPoint> pts = {op(body(h, "l_hand"), {{0.03, 0, -0.08}}, false), op(body(h, "r_hand"), {{0.03, 0, -0.08}}, false)};
        std::vector<Counted> Li(144), L(144);
        const nelu::OpCounts inv = count([&] { nelu::osim_inverse(h, q.data(), pts, Li.data()); });
        const nelu::OpCounts full = count([&] { nelu::osim(h, q.data(), pts, L.data()); });
        std::vector<Counted> Ld;
        const nelu::OpCounts dense = count([&] { Ld = dense_osim_inverse(h, q.data(), pts); });
        CHECK(inv.mul > 0);
        CHECK(full.mul > inv.mul);
        CHECK(nelu::test::rel_error(to_doubles(Ld), to_doubles(Li)) < 1e-10);  // the counted runs computed the same
        os << h.name << " (nv " << h.nv << "), two hands 6-DoF:\n"
           << "  osim_inverse (nelu::test::ResidualTable 1 steps 1-5)      " << ops(inv) << "\n"
           << "  osim (with Lambda, step 6)            " << ops(full) << "\n"
           << "  dense J M^-1 J^T (CRBA, LDL^T, solves) " << ops(dense) << "\n";
    }
    // Kroeg et al.'s nelu::test::ResidualTable 1 setting: a 50-link pendulum (DH chain) with one input (the last joint)
    // and fully actuated; ABA alone (their "O(n)" row) for scale.
    const Model c = chain(50, false, true);
    std::mt19937_64 rng(52);
    const State s = nelu::random_state(c, rng);
    const auto q = convert<Counted>(s.q), qd = convert<Counted>(s.qd), tau = convert<Counted>(s.tau);
    std::vector<Counted> qdd(c.nv);
    const nelu::OpCounts aba = count([&] { nelu::aba(c, q.data(), qd.data(), tau.data(), kNoFext, qdd.data()); });
    os << "chain50_dh (DH 50-link chain, seed 150), ABA alone: " << ops(aba) << "\n";
    std::vector<int> all(c.nv);
    for (int k = 0; k < c.nv; ++k) all[k] = k;
    for (const auto& [label, dofs] : std::vector<std::pair<std::string, std::vector<int>>>{{"one input (joint 50)", {49}}, {"fully actuated (50 inputs)", all}}) {
        const nelu::InputSet in{dofs, {}};
        const int nc = in.size();
        std::vector<Counted> B(c.nv * nc), Bu(c.nv * nc), q0(c.nv), q0u(c.nv), Bd;
        const nelu::OpCounts iim = count([&] { nelu::iwim(c, q.data(), qd.data(), kNoFext, in, B.data(), q0.data()); });
        const nelu::OpCounts ufm = count([&] { nelu::iwim_unit_force(c, q.data(), qd.data(), kNoFext, in, Bu.data(), q0u.data()); });
        const nelu::OpCounts dense = count([&] { Bd = dense_iwim_joints(c, q.data(), dofs); });
        CHECK(iim.mul > 0);
        CHECK(ufm.mul > 0);
        CHECK(nelu::test::rel_error(to_doubles(B), to_doubles(Bd)) < 1e-9);
        CHECK(nelu::test::rel_error(to_doubles(Bu), to_doubles(Bd), 1.0) < 1e-9);
        os << "  " << label << ":\n"
           << "    iwim, implicit inversion (with qdd_0) " << ops(iim) << "\n"
           << "    iwim_unit_force (" << nc + 1 << " ABA calls)       " << ops(ufm) << "\n"
           << "    dense M^-1 B (CRBA, LDL^T, solves; no qdd_0) " << ops(dense) << "\n";
    }
    // How the counts grow with n: DH chains, osim with two 6-DoF points (the tip and the middle body)
    // and the fully actuated iwim, each against its dense counterpart (and the unit-force method).
    os << "growth with n (DH chains, seed 100 + n), mul + add + div:\n";
    for (int n : {25, 50, 100, 200}) {
        const Model cn = chain(n, false, true);
        std::mt19937_64 r1(54);
        const State sn = nelu::random_state(cn, r1);
        const auto qn = convert<Counted>(sn.q), qdn = convert<Counted>(sn.qd);
        const std::vector<OpPoint> pts = {op(n - 1, {{0.05, 0, 0}}, false), op(n / 2, {{0.05, 0, 0}}, false)};
        std::vector<Counted> Li(144);
        const nelu::OpCounts o = count([&] { nelu::osim_inverse(cn, qn.data(), pts, Li.data()); });
        const nelu::OpCounts od = count([&] { dense_osim_inverse(cn, qn.data(), pts); });
        os << "  n = " << n << ": osim_inverse " << o.mul + o.add + o.div << ", dense J M^-1 J^T " << od.mul + od.add + od.div;
        if (n <= 100) {
            std::vector<int> dofs(n);
            for (int k = 0; k < n; ++k) dofs[k] = k;
            const nelu::InputSet in{dofs, {}};
            std::vector<Counted> B(n * n), q0(n);
            const nelu::OpCounts ii = count([&] { nelu::iwim(cn, qn.data(), qdn.data(), kNoFext, in, B.data(), q0.data()); });
            const nelu::OpCounts uf = count([&] { nelu::iwim_unit_force(cn, qn.data(), qdn.data(), kNoFext, in, B.data(), q0.data()); });
            const nelu::OpCounts de = count([&] { dense_iwim_joints(cn, qn.data(), dofs); });
            os << "; fully actuated iwim " << ii.mul + ii.add + ii.div << ", unit-force " << uf.mul + uf.add + uf.div << ", dense M^-1 "
               << de.mul + de.add + de.div;
        }
        os << "\n";
    }
    // Yamane & Nakamura with and without link splitting, a floating body with k children
    os << "constraint_fd on tree(k+1, branching k)+floating (body 1 has k children), split / unsplit / ABA:\n";
    for (int k : {2, 4, 8, 16, 32}) {
        const Model t = tree(k + 1, k, true);
        std::mt19937_64 r2(53);
        const State st = nelu::random_state(t, r2);
        const auto tq = convert<Counted>(st.q), tqd = convert<Counted>(st.qd), ttau = convert<Counted>(st.tau);
        std::vector<Counted> a(t.nv);
        const nelu::OpCounts split = count([&] { nelu::constraint_fd(t, tq.data(), tqd.data(), ttau.data(), kNoFext, a.data()); });
        const nelu::OpCounts unsplit = count([&] { nelu::constraint_fd(t, tq.data(), tqd.data(), ttau.data(), kNoFext, a.data(), static_cast<SVec<Counted>*>(nullptr), false); });
        const nelu::OpCounts ab = count([&] { nelu::aba(t, tq.data(), tqd.data(), ttau.data(), kNoFext, a.data()); });
        os << "  k = " << k << ": " << split.mul + split.add + split.div << " / " << unsplit.mul + unsplit.add + unsplit.div << " / "
           << ab.mul + ab.add + ab.div << " ops\n";
    }
    MESSAGE(os.str());
}
