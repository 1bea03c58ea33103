// model_check.cpp: see model_check.hpp.
#include "model_check.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "nelu/mimic.hpp"
#include "nelu/reference.hpp"
#include "nelu/state.hpp"

namespace nelu {

namespace {

/// With mimic joints: the pivots of G^T M G factored from the last coordinate to the first (as ABA
/// condenses leaves first), per independent slot, at a few configurations; a joint is singular when
/// one of its pivots is zero at every one of them. Mimic joints move with their masters and are
/// never singular themselves.
std::vector<std::string> singular_reduced_joints(const Model& model, double tol) {
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
        for (int k = n - 1; k >= 0; --k) {
            const double d = A[k][k];
            if (!(std::abs(d) <= tol)) singular[k] = false;
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

std::vector<std::string> singular_fd_joints(const Model& model) {
    // One scale for all pivots: kg m^2 and kg mixed on purpose, as a generous floor.
    double scale = 0;
    for (const Body& b : model.bodies) scale += b.I.m + b.I.Ibar(0, 0) + b.I.Ibar(1, 1) + b.I.Ibar(2, 2);
    const double tol = 1e-12 * std::max(scale, 1e-300);
    if (has_mimics(model)) return singular_reduced_joints(model, tol);
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
        for (std::size_t k = 0; k < movable.size(); ++k)
            if (!(std::abs(piv.D[k]) <= tol)) singular[k] = false;
        for (const Body& b : model.bodies)  // next configuration: random joint positions
            if (b.nq() == 1) q[b.q_index] = -3.0 + 6.0 * static_cast<double>(rng() >> 11) * 0x1.0p-53;
    }
    std::vector<std::string> names;
    for (std::size_t k = movable.size(); k-- > 0;)
        if (singular[k]) names.push_back(model.bodies[movable[k]].joint_name);
    return names;
}

}  // namespace nelu
