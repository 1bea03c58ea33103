// nelu/propagators.hpp: what the seed algorithms of Chang & Khatib (nelu/osim.hpp) and Kroeg,
// Gattringer & Mueller (nelu/iwim.hpp) share: the articulated-body inertias of every body, the force
// and acceleration propagators built from them, and points fixed in bodies.
//
// Notation as nelu/reference.hpp (Featherstone, angular first, body coordinates). Both papers write
// spatial vectors linear first with transforms of their own; here every quantity is translated:
//   Chang & Khatib's force propagator  ^h_i L = ^h_i X [1 - S_i Sbar_i]^T  (their eq. 8), with
//   Sbar_i = D_i^-1 S_i^T IA_i, is  L_i = X_up(i)^T (1 - W_i S_i^T),  W_i = U_i D_i^-1 = IA_i S_i D_i^-1;
//   it maps a force on body i (body-i coordinates) to the force it propagates to the parent (parent
//   coordinates). The acceleration propagator is its transpose, L_i^T = (1 - S_i W_i^T) X_up(i).
//   Kroeg et al.'s T*_ip (their eq. 11) is the same L_i^T (Bremer's T_ip is X_up(i), F_i is S_i,
//   M*_i is IA_i and M_Ri is D_i).
#pragma once

#include <vector>

#include "nelu/model.hpp"
#include "nelu/reference.hpp"
#include "nelu/spatial.hpp"

namespace nelu {

/// Articulated-body inertias of every body (RBDA Table 7.1, the inertia part of the second pass).
template <class S> struct ArticulatedInertias {
    std::vector<Mat6<S>> IA;              ///< IA_i, body-i coordinates
    std::vector<std::vector<SVec<S>>> U;  ///< U_i = IA_i S_i, one column per DoF of joint i
    std::vector<std::vector<SVec<S>>> W;  ///< W_i = U_i D_i^-1, one column per DoF
    std::vector<std::vector<S>> Dinv;     ///< D_i^-1 = (S_i^T IA_i S_i)^-1, nv_i x nv_i row major
};

/// IA_i = I_i + sum_children L_c IA_c L_c^T (Chang & Khatib eq. 10), given X_up(i) for every body.
template <class S>
ArticulatedInertias<S> articulated_inertias(const Model& m, const std::vector<Xform<S>>& X_up) {
    const int nb = m.num_bodies();
    ArticulatedInertias<S> ai;
    ai.IA.resize(nb), ai.U.resize(nb), ai.W.resize(nb), ai.Dinv.resize(nb);
    for (int i = 0; i < nb; ++i) ai.IA[i] = to_matrix(cast<S>(m.bodies[i].I));
    for (int i = nb - 1; i >= 0; --i) {
        const Body& b = m.bodies[i];
        const int n = b.nv();
        std::vector<S> D(n * n);
        for (int r = 0; r < n; ++r) ai.U[i].push_back(ai.IA[i] * motion_subspace<S>(b, r));
        for (int r = 0; r < n; ++r) {
            std::vector<S> col(n);
            joint_project(b, ai.U[i][r], col.data());  // D = S^T U
            for (int s = 0; s < n; ++s) D[s * n + r] = col[s];
        }
        ai.Dinv[i] = inverse_spd_small(n, D);
        for (int s = 0; s < n; ++s) {  // W = U D^-1
            SVec<S> w = ai.Dinv[i][s] * ai.U[i][0];
            for (int t = 1; t < n; ++t) w = w + ai.Dinv[i][t * n + s] * ai.U[i][t];
            ai.W[i].push_back(w);
        }
        if (b.parent < 0) continue;
        Mat6<S> Ia = ai.IA[i];  // IA - W U^T, symmetric
        for (int r = 0; r < 6; ++r)
            for (int c = r; c < 6; ++c) {
                for (int s = 0; s < n; ++s) Ia(r, c) = Ia(r, c) - ai.W[i][s][r] * ai.U[i][s][c];
                Ia(c, r) = Ia(r, c);
            }
        ai.IA[b.parent] = ai.IA[b.parent] + congruence(X_up[i], Ia);
    }
    return ai;
}

/// L_i f = X_up(i)^T (f - W_i S_i^T f): the force that a force f on body i propagates to its parent
/// across joint i (Chang & Khatib eq. 6 and 8).
template <class S>
SVec<S> propagate_force(const Model& m, const ArticulatedInertias<S>& ai, const Xform<S>& X_up, int i,
                        const SVec<S>& f) {
    const Body& b = m.bodies[i];
    S t[6];
    joint_project(b, f, t);
    SVec<S> g = f;
    for (int s = 0; s < b.nv(); ++s) g = g - t[s] * ai.W[i][s];
    return apply_transpose(X_up, g);
}

/// L_i^T a = (1 - S_i W_i^T) X_up(i) a: the acceleration of body i that an acceleration a of its
/// parent propagates across joint i (Chang & Khatib eq. 7 and 9).
template <class S>
SVec<S> propagate_acceleration(const Model& m, const ArticulatedInertias<S>& ai, const Xform<S>& X_up, int i,
                               const SVec<S>& a) {
    const Body& b = m.bodies[i];
    SVec<S> x = apply(X_up, a);
    SVec<S> r = x;
    for (int s = 0; s < b.nv(); ++s) r = r - dot(ai.W[i][s], x) * motion_subspace<S>(b, s);
    return r;
}

// ---------------------------------------------------------------------------------------------
/// The axes a point's task (or force) coordinates are given in: the body's own axes, or the world
/// axes (Pinocchio's LOCAL and LOCAL_WORLD_ALIGNED). Either way the origin is the point itself.
enum class PointAxes { Link, World };

/// A point fixed in a body.
struct BodyPoint {
    int body = -1;
    Vec3<double> offset{{0, 0, 0}};  ///< position of the point, body coordinates
    PointAxes axes = PointAxes::World;
};

/// X_{e<-b}: the motion transform from body-b coordinates to the point frame e (origin at the point,
/// axes as p.axes). X_world is world -> body b; it is read only for PointAxes::World.
template <class S> Xform<S> point_transform(const BodyPoint& p, const Xform<S>& X_world) {
    return {p.axes == PointAxes::World ? transpose(X_world.E) : identity3<S>(), cast<S>(p.offset)};
}

/// World -> body transforms of the bodies that carry the points and of their ancestors (others are
/// left as the identity): composed from X_up along the paths, once per body.
template <class S>
std::vector<Xform<S>> world_transforms_of(const Model& m, const std::vector<Xform<S>>& X_up,
                                          const std::vector<BodyPoint>& points) {
    const int nb = m.num_bodies();
    std::vector<char> needed(nb, 0);
    for (const BodyPoint& p : points)
        if (p.axes == PointAxes::World)
            for (int j = p.body; j >= 0 && !needed[j]; j = m.bodies[j].parent) needed[j] = 1;
    std::vector<Xform<S>> X_world(nb, identity_xform<S>());
    for (int i = 0; i < nb; ++i)
        if (needed[i]) X_world[i] = m.bodies[i].parent < 0 ? X_up[i] : compose(X_up[i], X_world[m.bodies[i].parent]);
    return X_world;
}

/// The nearest common ancestor of bodies i and j (a body is its own ancestor); -1 when the two
/// hang from the world by different joints. Needs parent(i) < i.
inline int nearest_common_ancestor(const Model& m, int i, int j) {
    while (i != j && i >= 0 && j >= 0) {
        if (i > j) i = m.bodies[i].parent;
        else j = m.bodies[j].parent;
    }
    return i == j ? i : -1;
}

}  // namespace nelu
