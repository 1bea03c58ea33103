// model_check.cpp: see model_check.hpp.
#include "model_check.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <Eigen/Eigenvalues>

#include "nelu/mimic.hpp"

#include "nelu/reference.hpp"
#include "nelu/state.hpp"

namespace nelu {

/// A multi-DoF joint whose dimensionless articulated pivot has an eigenvalue below this fraction
/// of its largest cannot be accelerated in some direction.
constexpr double kRelativeEigenTol = 1e-12;
/// A 1-DoF pivot at most this fraction of its joint's pivot_scales is zero up to rounding.
constexpr double kRelativePivotTol = 1e-12;

namespace {

/// Per velocity slot, at configuration q: a bound on the terms its pivot (S^T IA S of a 1-DoF joint,
/// or of G^T M G with mimic joints) is computed from, each term non-negative so that none cancels
/// (a mass on the axis gives M_ii of rounding size): a rotation's (a revolute joint, a floating
/// joint's first three slots), the trace of its subtree's rotational inertia about the joint's
/// origin (every body's tr Icom + 2 m |p - o|^2); a translation's, its subtree's mass. Units are
/// the pivot's own (kg m^2 or kg), whatever the rest of the robot weighs.
std::vector<double> pivot_scales(const Model& m, const double* q) {
    const Kinematics<double> k = forward_kinematics(m, q, static_cast<const double*>(nullptr));
    const int nb = m.num_bodies();
    std::vector<Vec3<double>> com(static_cast<std::size_t>(nb));  // in world coordinates
    std::vector<double> own(static_cast<std::size_t>(nb));         // |tr Icom|
    for (int b = 0; b < nb; ++b) {
        const Inertia<double>& I = m.bodies[b].I;
        const Vec3<double> c = I.m > 0 ? (1 / I.m) * I.h : zero3<double>();
        com[b] = k.X_world[b].r + mul_transpose(k.X_world[b].E, c);
        own[b] = std::abs(I.Ibar(0, 0) + I.Ibar(1, 1) + I.Ibar(2, 2) - 2 * I.m * dot(c, c));
    }
    std::vector<double> scale(static_cast<std::size_t>(m.nv), 0.0);
    for (int b = 0; b < nb; ++b)
        for (int a = b; a >= 0; a = m.bodies[a].parent) {  // b and its ancestors
            const Body& j = m.bodies[a];
            const double mass = std::abs(m.bodies[b].I.m);
            const Vec3<double> d = com[b] - k.X_world[a].r;
            const double rotation = own[b] + 2 * mass * dot(d, d);
            for (int s = 0; s < j.nv(); ++s)
                scale[static_cast<std::size_t>(j.v_index + s)] +=
                    j.type == JointType::Prismatic || (j.type == JointType::Floating && s >= 3) ? mass : rotation;
        }
    return scale;
}

/// Whether a joint's articulated pivot D = S^T IA S is singular. 1-DoF: the scalar itself, exactly
/// 0 when nothing with inertia moves with the joint, against `tol`: a small multiple of the joint's
/// pivot_scales, which bounds the terms D is computed from without cancelling (so that D's rounding
/// stays below it whatever the units and whatever the rest of the robot weighs). Multi-DoF (a
/// floating joint, [angular; linear]): D mixes kg m^2, kg m and kg, and a singular direction
/// (a massless base turning about a child's axis) is a combination of its coordinates, which a
/// fixed-order LDL^T pivot cannot isolate from rounding. So D is made dimensionless with the
/// length L that balances its blocks (L^2 = tr D_ww / tr D_vv), and its smallest eigenvalue
/// compared with the largest: rounding gives 1e-16, a physical body far more.
bool pivot_singular(const std::vector<double>& D, double tol) {
    if (D.size() == 1) return std::abs(D[0]) <= tol;
    const int n = static_cast<int>(std::lround(std::sqrt(static_cast<double>(D.size()))));
    Eigen::MatrixXd M = Eigen::Map<const Eigen::MatrixXd>(D.data(), n, n);
    M = (0.5 * (M + M.transpose())).eval();
    if (n == 6) {
        const double tw = M.topLeftCorner<3, 3>().trace(), tv = M.bottomRightCorner<3, 3>().trace();
        if (!(tw > 0) || !(tv > 0)) return true;  // no inertia at all in one of the blocks
        Eigen::VectorXd s(6);
        s << Eigen::Vector3d::Constant(std::sqrt(tv / tw)), Eigen::Vector3d::Ones();
        M = s.asDiagonal() * M * s.asDiagonal();
    }
    const Eigen::VectorXd lam = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(M, Eigen::EigenvaluesOnly).eigenvalues();
    return !(lam(0) > kRelativeEigenTol * lam(n - 1));
}


/// With mimic joints: the pivots of G^T M G factored from the last coordinate to the first (as ABA
/// condenses leaves first), per independent slot, at a few configurations; a joint is singular when
/// one of its pivots is zero at every one of them. Mimic joints move with their masters and are
/// never singular themselves.
std::vector<std::string> singular_reduced_joints(const Model& model) {
    const std::vector<int> slots = independent_v_slots(model);
    const int n = static_cast<int>(slots.size()), nv = model.nv;
    std::vector<bool> singular(n, true);
    std::mt19937_64 rng(20261121);
    std::vector<double> M(static_cast<std::size_t>(nv) * nv);
    for (int sample = 0; sample < 6; ++sample) {
        std::vector<double> q = random_configuration(model, rng);
        crba(model, q.data(), M.data());
        // G as columns over the full slots: independent slot s, and every mimic of it
        std::vector<std::vector<std::pair<int, double>>> G(n);
        for (int a = 0; a < n; ++a) G[a].push_back({slots[a], 1.0});
        for (const Body& b : model.bodies)
            if (b.is_mimic())
                for (int a = 0; a < n; ++a)
                    if (slots[a] == model.bodies[b.mimic].v_index) G[a].push_back({b.v_index, b.multiplier});
        std::vector<std::vector<double>> A(n, std::vector<double>(n, 0.0));
        for (int a = 0; a < n; ++a)
            for (int c = 0; c < n; ++c)
                for (const auto& [i, gi] : G[a])
                    for (const auto& [j, gj] : G[c]) A[a][c] += gi * M[static_cast<std::size_t>(i) * nv + j] * gj;
        // each slot's tolerance from its joints' pivot_scales, (sum |g_i| sqrt(scale_i))^2: a bound on
        // the slot's pivot that nothing cancels (A's own diagonal is of rounding size where it vanishes)
        const std::vector<double> scale_of_v = pivot_scales(model, q.data());
        std::vector<double> tol(n);
        for (int a = 0; a < n; ++a) {
            double root = 0;
            for (const auto& [i, gi] : G[a]) root += std::abs(gi) * std::sqrt(scale_of_v[static_cast<std::size_t>(i)]);
            tol[a] = kRelativePivotTol * root * root;
        }
        for (int k = n - 1; k >= 0; --k) {
            const double d = A[k][k];
            if (!(std::abs(d) <= tol[k])) singular[k] = false;
            else continue;
            for (int i = 0; i < k; ++i)
                for (int j = 0; j < k; ++j) A[i][j] -= A[i][k] * A[k][j] / d;
        }
    }
    std::vector<std::string> names;
    for (const Body& b : model.bodies)
        for (int a = 0; a < n; ++a)
            if (singular[a] && slots[a] >= b.v_index && slots[a] < b.v_index + b.nv() && !b.is_mimic() &&
                (names.empty() || names.back() != b.joint_name))
                names.push_back(b.joint_name);
    return names;
}

}  // namespace

namespace {

/// Joints of `model` whose ABA pivot is singular at every sampled configuration.
std::vector<int> singular_pivots(const Model& model) {
    std::vector<int> movable;  // bodies with a movable joint, in the order ABA reports pivots
    for (int i = model.num_bodies() - 1; i >= 0; --i)
        if (model.bodies[i].nv() > 0) movable.push_back(i);
    std::vector<bool> singular(movable.size(), true);
    std::mt19937_64 rng(20261121);
    std::vector<double> q(model.nq, 0.0), zero(model.nv, 0.0), qdd(model.nv);
    for (const Body& b : model.bodies)
        if (b.type == JointType::Floating) q[b.q_index + 6] = 1.0;  // identity quaternion
    for (int sample = 0; sample < 6; ++sample) {
        AbaPivots<double> piv;
        aba(model, q.data(), zero.data(), zero.data(), static_cast<const SVec<double>*>(nullptr), qdd.data(), &piv);
        const std::vector<double> scale = pivot_scales(model, q.data());
        for (std::size_t k = 0; k < movable.size(); ++k)
            if (!pivot_singular(piv.D[k], kRelativePivotTol * scale[static_cast<std::size_t>(model.bodies[movable[k]].v_index)])) singular[k] = false;
        for (const Body& b : model.bodies)  // next configuration: random joint positions
            if (b.nq() == 1) q[b.q_index] = -3.0 + 6.0 * static_cast<double>(rng() >> 11) * 0x1.0p-53;
    }
    std::vector<int> bodies;
    for (std::size_t k = 0; k < movable.size(); ++k)
        if (singular[k]) bodies.push_back(movable[k]);
    return bodies;
}

}  // namespace

std::vector<std::string> singular_fd_joints(const Model& model) {
    if (has_mimics(model)) return singular_reduced_joints(model);
    // A singular pivot makes every pivot towards the root meaningless (ABA divides by it), so only
    // the singular joints with no singular joint below them are certain. Their accelerations are
    // what the user must give; with them given (their joints rigid, as a known qdd makes them for
    // the articulated inertias) the pivots above are judged again.
    Model work = model;
    std::vector<bool> found(model.bodies.size(), false);
    for (;;) {
        const std::vector<int> singular = singular_pivots(work);
        std::vector<bool> is_singular(model.bodies.size(), false);
        for (int i : singular) is_singular[i] = true;
        bool more = false;
        for (int i : singular) {
            bool deepest = true;  // no singular joint in i's subtree (descendants have larger indices)
            for (int j = i + 1; j < work.num_bodies() && deepest; ++j)
                for (int a = work.bodies[j].parent; a >= i; a = work.bodies[a].parent)
                    if (a == i) { deepest = !is_singular[j]; break; }
            if (!deepest) continue;
            found[i] = more = true;
            work.bodies[i].type = JointType::Fixed;
        }
        if (!more) break;
        work.assign_indices();
    }
    std::vector<std::string> names;
    for (int i = 0; i < model.num_bodies(); ++i)
        if (found[i]) names.push_back(model.bodies[i].joint_name);
    return names;
}

}  // namespace nelu
