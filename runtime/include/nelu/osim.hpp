// nelu/osim.hpp: the operational-space inertia matrix of a branching robot with m operational
// points, by Chang & Khatib's O(nm + m^3) recursion ("Efficient recursive algorithm for the
// operational space inertia matrix of branching mechanisms", 2000, Table 1; the text is in
// ../shared/papers/chang-khatib-2000-operational-space-inertia-branching.txt).
//
// Operational point j is a point p_j fixed in body b_j (BodyPoint). Its frame e_j has its origin at
// p_j and the body's axes or the world axes (PointAxes); the paper's end-effector frame e_i is such a
// frame on a leaf link, here any body may carry points, several points may share a body. Task
// coordinates: 6 per point, the body's spatial motion [omega; v_p] in e_j (angular first, v_p the
// velocity of the point), or 3 (position_only), v_p alone. So J_e = P_j X_{e_j <- b_j} J_{b_j}, with
// J_b the body Jacobian (nelu/reference.hpp) and P_j the identity or the selection of rows 3..5, and
//   Lambda^-1 = J_e M^-1 J_e^T   (their eq. 14),
// blocks ordered as the points, each point's rows in the order above.
//
// Translation of Table 1 into body coordinates (see nelu/propagators.hpp for L_i):
//   step 1  X_up(i) for every body;
//   step 2  IA_i (eq. 10) and the force propagators L_i = X_up(i)^T (1 - W_i S_i^T)   (eq. 8);
//   step 3  Omega_ii = S_i D_i^-1 S_i^T + L_i^T Omega_hh L_i, h = parent(i), Omega of the world 0
//           (eq. 24): a force f on body i (at its origin, body coordinates) alone gives it the
//           acceleration Omega_ii f (eq. 11, with qd = 0 and no gravity);
//   step 4  Omega_ij = L*_hi^T Omega_hh L*_hj for the nearest common ancestor h of bodies i and j
//           (eq. 29), L*_hj = L_h1 ... L_j the compound propagator from j up to h (eq. 26);
//   step 5  Lambda^-1_ij = G_i^T Omega_ij G_j  (eq. 22), with the tip transform G_j = (P_j X_{e_j <- b_j})^T,
//           whose columns are the body-b_j wrenches of unit task forces at e_j;
//   step 6  Lambda = (Lambda^-1)^-1.
// Steps 4 and 5 are evaluated together: for each point j, F_hj = L*_hj G_j (6 x dim_j) is carried
// from b_j up to the root once (the recursion of step 4 unrolled), so every ancestor h holds it;
// then Lambda^-1_ij = F_hi^T Omega_hh F_hj. Cost O(n m) for the walks, O(m^2) for the blocks and
// O(m^3) for step 6. Only the bodies on the points' paths to the root get L_i and Omega_ii; the
// others enter through the articulated inertias, as the paper notes.
//
// The paper's frames and transforms are linear first; signs and frames here follow
// nelu/reference.hpp and are checked against J_e M^-1 J_e^T in tests/test_seed_algorithms.cpp.
#pragma once

#include <vector>

#include "nelu/model.hpp"
#include "nelu/propagators.hpp"
#include "nelu/reference.hpp"
#include "nelu/small_dense.hpp"
#include "nelu/spatial.hpp"

namespace nelu {

/// An operational point: a point of a body with 6 task coordinates [omega; v_p] or 3 (v_p).
struct OpPoint {
    BodyPoint point;
    bool position_only = false;
    int dim() const { return position_only ? 3 : 6; }
};

/// Size of Lambda for these points: the sum of their dimensions.
inline int osim_size(const std::vector<OpPoint>& points) {
    int d = 0;
    for (const OpPoint& p : points) d += p.dim();
    return d;
}

namespace osim_detail {

/// L^T Omega L for a symmetric Omega: the upper triangle, mirrored.
template <class S> Mat6<S> sandwich(const Mat6<S>& L, const Mat6<S>& Omega) {
    Mat6<S> OL, R;
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
            S s = Omega(i, 0) * L(0, j);
            for (int k = 1; k < 6; ++k) s = s + Omega(i, k) * L(k, j);
            OL(i, j) = s;
        }
    for (int i = 0; i < 6; ++i)
        for (int j = i; j < 6; ++j) {
            S s = L(0, i) * OL(0, j);
            for (int k = 1; k < 6; ++k) s = s + L(k, i) * OL(k, j);
            R(i, j) = R(j, i) = s;
        }
    return R;
}

/// G = (P X_{e<-b})^T: column c is the body wrench of the unit task force c at the point frame e.
template <class S> SmallMat<S> tip_transform(const OpPoint& p, const Xform<S>& X_eb) {
    SmallMat<S> G = small_zero<S>(6, p.dim());
    const int first = p.position_only ? 3 : 0;
    for (int c = 0; c < p.dim(); ++c) {
        SVec<S> unit = zero6<S>();
        unit[first + c] = S(1);
        set_column(G, c, apply_transpose(X_eb, unit));
    }
    return G;
}

}  // namespace osim_detail

/// Lambda^-1 = J_e M^-1 J_e^T at q (d x d row major, d = osim_size(points)) by Chang & Khatib's
/// Table 1, steps 1-5.
template <class S>
void osim_inverse(const Model& m, const S* q, const std::vector<OpPoint>& points, S* Linv) {
    const int nb = m.num_bodies(), np = static_cast<int>(points.size()), d = osim_size(points);
    // step 1: X_up
    std::vector<Xform<S>> X_up(nb);
    for (int i = 0; i < nb; ++i) X_up[i] = parent_to_body(m.bodies[i], q);
    // step 2: IA, and L_i on the points' paths below the root (column k: L_i e_k)
    const ArticulatedInertias<S> ai = articulated_inertias(m, X_up);
    std::vector<char> on_path(nb, 0);
    for (const OpPoint& p : points)
        for (int j = p.point.body; j >= 0 && !on_path[j]; j = m.bodies[j].parent) on_path[j] = 1;
    std::vector<Mat6<S>> L(nb), Omega(nb);
    for (int i = 0; i < nb; ++i) {
        if (!on_path[i] || m.bodies[i].parent < 0) continue;
        for (int k = 0; k < 6; ++k) {
            SVec<S> e = zero6<S>();
            e[k] = S(1);
            const SVec<S> col = propagate_force(m, ai, X_up[i], i, e);
            for (int r = 0; r < 6; ++r) L[i](r, k) = col[r];
        }
    }
    // step 3: Omega_ii = S D^-1 S^T + L^T Omega_hh L, outward
    for (int i = 0; i < nb; ++i) {
        if (!on_path[i]) continue;
        const Body& b = m.bodies[i];
        Mat6<S> O = b.parent < 0 ? zero_mat6<S>() : osim_detail::sandwich(L[i], Omega[b.parent]);
        const int n = b.nv();
        for (int s = 0; s < n; ++s)  // + S D^-1 S^T, skipping the structural zeros of S (model constants)
            for (int t = 0; t < n; ++t) {
                const SVec<S> Ss = motion_subspace<S>(b, s), St = motion_subspace<S>(b, t);
                for (int r = 0; r < 6; ++r)
                    for (int c = 0; c < 6; ++c)
                        if (Ss[r] != S(0) && St[c] != S(0)) O(r, c) = O(r, c) + Ss[r] * ai.Dinv[i][s * n + t] * St[c];
            }
        Omega[i] = O;
    }
    // steps 4-5: F_hj = L*_hj G_j for every ancestor h of b_j
    std::vector<BodyPoint> bps;
    for (const OpPoint& p : points) bps.push_back(p.point);
    const std::vector<Xform<S>> X_world = world_transforms_of(m, X_up, bps);
    std::vector<std::vector<SmallMat<S>>> F(np, std::vector<SmallMat<S>>(nb));
    for (int j = 0; j < np; ++j) {
        int k = points[j].point.body;
        F[j][k] = osim_detail::tip_transform(points[j], point_transform(points[j].point, X_world[k]));
        for (; m.bodies[k].parent >= 0; k = m.bodies[k].parent) {
            const int h = m.bodies[k].parent;
            F[j][h] = small_zero<S>(6, points[j].dim());
            for (int c = 0; c < points[j].dim(); ++c) set_column(F[j][h], c, L[k] * column(F[j][k], c));
        }
    }
    // Lambda^-1_ij = F_hi^T Omega_hh F_hj, h the nearest common ancestor
    for (int i = 0, oi = 0; i < np; oi += points[i].dim(), ++i)
        for (int j = i, oj = oi; j < np; oj += points[j].dim(), ++j) {
            const int di = points[i].dim(), dj = points[j].dim();
            const int h = nearest_common_ancestor(m, points[i].point.body, points[j].point.body);
            SmallMat<S> B = small_zero<S>(di, dj);
            if (h >= 0) {
                SmallMat<S> OF = small_zero<S>(6, dj);
                for (int c = 0; c < dj; ++c) set_column(OF, c, Omega[h] * column(F[j][h], c));
                B = mul_tn(F[i][h], OF);
            }
            for (int r = 0; r < di; ++r)
                for (int c = 0; c < dj; ++c) {
                    if (i == j && c < r) continue;  // diagonal blocks: upper triangle, mirrored
                    Linv[(oi + r) * d + oj + c] = B(r, c);
                    Linv[(oj + c) * d + oi + r] = B(r, c);
                }
        }
}

/// Lambda = (Lambda^-1)^-1 at q (d x d row major; Table 1, step 6), and Lambda^-1 when Linv is not
/// null. False when Lambda^-1 is singular to working accuracy: a pivot of its L D L^T factorization
/// is not above `rel_pivot` times its largest diagonal entry (the points' task coordinates are
/// dependent: more of them than the joints on their paths can move, or a singular configuration).
template <class S>
bool osim(const Model& m, const S* q, const std::vector<OpPoint>& points, S* Lambda, S* Linv = nullptr,
          double rel_pivot = 1e-12) {
    const int d = osim_size(points);
    std::vector<S> inv(d * d), work(d * d + d);
    osim_inverse(m, q, points, inv.data());
    if (Linv)
        for (int k = 0; k < d * d; ++k) Linv[k] = inv[k];
    return spd_inverse(d, inv.data(), Lambda, work.data(), rel_pivot);
}

}  // namespace nelu
