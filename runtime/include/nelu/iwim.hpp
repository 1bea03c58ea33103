// nelu/iwim.hpp: the inertia-weighted input matrix Bhat = M^-1 B by Kroeg, Gattringer & Mueller's
// implicit inversion method ("Closed-form method for the inertia-weighted input matrix utilizing
// O(n) forward dynamics", Sec. 5), and by their extended unit-force method (Sec. 4) for comparison.
//
// Inputs u (InputSet): actuated degrees of freedom, each a column e_k of B (a generalized force on
// velocity slot k), then 3-D forces at points of bodies, each three columns J_p^T of B, with J_p the
// Jacobian of the point's velocity in the point's axes (PointAxes: the body's or the world's). So
// M qdd + h = B u, and with the free acceleration qdd_0 = M^-1 (J^T fext - h) (fext as in
// nelu/reference.hpp, zero when null) qdd = qdd_0 + Bhat u (their eq. 3-4).
//
// The O(n) method is Featherstone's ABA in place of Bremer's (the two are the same recursions:
// their T_ip, F_i, M*_i, M_Ri and T*_ip are X_up(i), S_i, IA_i, D_i and the acceleration propagator
// L_i^T of nelu/propagators.hpp); bodies are the subsystems. The implicit inversion reuses its
// IA_i, W_i = IA_i S_i D_i^-1 and D_i^-1 and inverts nothing else:
//   B* (eq. 16-17): every input as body wrenches B_i u_i, propagated inward by the force propagators:
//       beta_i = B_i u + sum_children L_c beta_c. A column e_k of joint i acts as the wrench S_i e_k
//       on body i and -X_up(i)^T S_i e_k on its parent (S_i has orthonormal columns for every joint
//       type of nelu/model.hpp, so S_i^T S_i e_k = e_k: the pair does the generalized force e_k and
//       nothing else); a unit force at a point is the body wrench X_{e<-b}^T [0; e_k].
//   Gamma^-1 (eq. 21-26): Bhat_i = D_i^-1 S_i^T (beta_i - IA_i X_up(i) A_p), the rows of joint i, where
//       A_p = sum over the ancestors j of p of T*_pj S_j D_j^-1 S_j^T beta_j (eq. 25's That) is
//       accumulated outward as A_i = X_up(i) A_p + S_i Bhat_i (= T*_i A_p + S_i D_i^-1 S_i^T beta_i),
//       the unitriangular Gamma being inverted by the cascade of eq. 22-23 without an inverse.
// Columns are carried only where they are structurally non-zero (an input reaches beta_i only
// from i's subtree, A_i only from there or from an ancestor), so the cost is O(n) per column at
// most, O(n m) in all.
#pragma once

#include <vector>

#include "nelu/model.hpp"
#include "nelu/propagators.hpp"
#include "nelu/reference.hpp"
#include "nelu/spatial.hpp"

namespace nelu {

/// The inputs u of M qdd + h = B u.
struct InputSet {
    std::vector<int> dofs;          ///< actuated velocity slots: one column e_k of B each
    std::vector<BodyPoint> forces;  ///< 3-D forces at points (components along the point's axes): three columns J_p^T each
    int size() const { return static_cast<int>(dofs.size() + 3 * forces.size()); }
};

namespace iwim_detail {

/// The body whose joint owns velocity slot k, or -1.
inline int body_of_slot(const Model& m, int k) {
    for (int i = 0; i < m.num_bodies(); ++i)
        if (k >= m.bodies[i].v_index && k < m.bodies[i].v_index + m.bodies[i].nv()) return i;
    return -1;
}

/// qdd_0 = M^-1 (J^T fext - h): ABA without inputs (RBDA Table 7.1), from the articulated inertias
/// already computed.
template <class S>
void free_acceleration(const Model& m, const Kinematics<S>& k, const ArticulatedInertias<S>& ai,
                       const SVec<S>* fext, S* qdd0) {
    const int nb = m.num_bodies();
    std::vector<SVec<S>> pA(nb), a(nb);
    std::vector<std::vector<S>> u(nb);
    for (int i = 0; i < nb; ++i) {  // pA_i = v x* I v - f^x
        const Inertia<S> I = cast<S>(m.bodies[i].I);
        pA[i] = cross_force(k.v[i], I * k.v[i]);
        if (fext) pA[i] = pA[i] - fext[i];
    }
    for (int i = nb - 1; i >= 0; --i) {  // u = -S^T pA;  pA_parent += X^T (pA + IA c - W U^T c + W u)
        const Body& b = m.bodies[i];
        const int n = b.nv();
        u[i].resize(n);
        joint_project(b, pA[i], u[i].data());
        for (int s = 0; s < n; ++s) u[i][s] = -u[i][s];
        if (b.parent < 0) continue;
        SVec<S> pa = pA[i] + ai.IA[i] * k.c[i];
        for (int s = 0; s < n; ++s) pa = pa + (u[i][s] - dot(ai.U[i][s], k.c[i])) * ai.W[i][s];
        pA[b.parent] = pA[b.parent] + apply_transpose(k.X_up[i], pa);
    }
    const SVec<S> a0 = -cast<S>(m.gravity);
    for (int i = 0; i < nb; ++i) {  // qdd_i = D^-1 (u - U^T a');  a_i = a' + S qdd_i
        const Body& b = m.bodies[i];
        const int n = b.nv();
        const SVec<S> ap = apply(k.X_up[i], b.parent < 0 ? a0 : a[b.parent]) + k.c[i];
        S rhs[6];
        for (int s = 0; s < n; ++s) rhs[s] = u[i][s] - dot(ai.U[i][s], ap);
        a[i] = ap;
        for (int s = 0; s < n; ++s) {
            S acc = ai.Dinv[i][s * n] * rhs[0];
            for (int t = 1; t < n; ++t) acc = acc + ai.Dinv[i][s * n + t] * rhs[t];
            qdd0[b.v_index + s] = acc;
            a[i] = a[i] + acc * motion_subspace<S>(b, s);
        }
    }
}

}  // namespace iwim_detail

/// Bhat = M^-1 B (nv x in.size(), row major) and qdd_0 = M^-1 (J^T fext - h) (nv) at (q, qd) by the
/// implicit inversion method (eq. 16-17, 26-27). fext may be null.
template <class S>
void iwim(const Model& m, const S* q, const S* qd, const SVec<S>* fext, const InputSet& in, S* Bhat, S* qdd0) {
    const int nb = m.num_bodies(), nc = in.size();
    const Kinematics<S> k = forward_kinematics(m, q, qd, /*with_world=*/false);
    const ArticulatedInertias<S> ai = articulated_inertias(m, k.X_up);
    iwim_detail::free_acceleration(m, k, ai, fext, qdd0);

    // B*: the inputs as body wrenches (B_i u_i), then beta_i = B_i u + sum_children L_c beta_c
    std::vector<SVec<S>> beta(nb * nc, zero6<S>()), A(nb * nc, zero6<S>());
    std::vector<char> in_beta(nb * nc, 0), in_A(nb * nc, 0);
    int c = 0;
    for (int slot : in.dofs) {
        const int i = iwim_detail::body_of_slot(m, slot);
        assert(i >= 0 && "an actuated slot outside 0..nv-1");
        const Body& b = m.bodies[i];
        const SVec<S> s = motion_subspace<S>(b, slot - b.v_index);  // the wrench S e_k on body i
        beta[i * nc + c] = s, in_beta[i * nc + c] = 1;
        if (b.parent >= 0)  // and its reaction on the parent
            beta[b.parent * nc + c] = -apply_transpose(k.X_up[i], s), in_beta[b.parent * nc + c] = 1;
        ++c;
    }
    const std::vector<Xform<S>> X_world = world_transforms_of(m, k.X_up, in.forces);
    for (const BodyPoint& p : in.forces) {
        const Xform<S> X_eb = point_transform(p, X_world[p.body]);
        for (int r = 0; r < 3; ++r, ++c) {
            SVec<S> unit = zero6<S>();
            unit.l[r] = S(1);
            beta[p.body * nc + c] = apply_transpose(X_eb, unit);
            in_beta[p.body * nc + c] = 1;
        }
    }
    for (int i = nb - 1; i >= 0; --i) {
        const int p = m.bodies[i].parent;
        if (p < 0) continue;
        for (int col = 0; col < nc; ++col) {
            if (!in_beta[i * nc + col]) continue;
            const SVec<S> f = propagate_force(m, ai, k.X_up[i], i, beta[i * nc + col]);
            beta[p * nc + col] = in_beta[p * nc + col] ? beta[p * nc + col] + f : f;
            in_beta[p * nc + col] = 1;
        }
    }

    // Gamma^-1, outward: Bhat_i = D^-1 (S^T beta_i - U^T X_up A_p);  A_i = X_up A_p + S Bhat_i
    for (int r = 0; r < m.nv * nc; ++r) Bhat[r] = S(0);
    for (int i = 0; i < nb; ++i) {
        const Body& b = m.bodies[i];
        const int n = b.nv();
        for (int col = 0; col < nc; ++col) {
            const bool from_parent = b.parent >= 0 && in_A[b.parent * nc + col];
            if (!from_parent && !in_beta[i * nc + col]) continue;
            SVec<S> xa = from_parent ? apply(k.X_up[i], A[b.parent * nc + col]) : zero6<S>();
            S rhs[6];
            if (in_beta[i * nc + col]) joint_project(b, beta[i * nc + col], rhs);
            for (int s = 0; s < n; ++s) {
                if (!in_beta[i * nc + col]) rhs[s] = -dot(ai.U[i][s], xa);
                else if (from_parent) rhs[s] = rhs[s] - dot(ai.U[i][s], xa);
            }
            for (int s = 0; s < n; ++s) {
                S acc = ai.Dinv[i][s * n] * rhs[0];
                for (int t = 1; t < n; ++t) acc = acc + ai.Dinv[i][s * n + t] * rhs[t];
                Bhat[(b.v_index + s) * nc + col] = acc;
                xa = (from_parent || s > 0) ? xa + acc * motion_subspace<S>(b, s) : acc * motion_subspace<S>(b, s);
            }
            if (from_parent || n > 0) A[i * nc + col] = xa, in_A[i * nc + col] = 1;
        }
    }
}

/// Bhat and qdd_0 as iwim() does, by the extended unit-force method (Sec. 4, eq. 14-15): ABA once
/// without inputs (qdd_0) and once per column with that unit input, the column being the
/// difference. in.size() + 1 forward dynamics calls.
template <class S>
void iwim_unit_force(const Model& m, const S* q, const S* qd, const SVec<S>* fext, const InputSet& in, S* Bhat,
                     S* qdd0) {
    const int nb = m.num_bodies(), nc = in.size();
    std::vector<S> tau(m.nv, S(0)), qdd(m.nv);
    std::vector<SVec<S>> f(nb, zero6<S>());
    if (fext)
        for (int i = 0; i < nb; ++i) f[i] = fext[i];
    aba(m, q, qd, tau.data(), f.data(), qdd0);
    int c = 0;
    for (int slot : in.dofs) {
        tau[slot] = S(1);
        aba(m, q, qd, tau.data(), f.data(), qdd.data());
        tau[slot] = S(0);
        for (int r = 0; r < m.nv; ++r) Bhat[r * nc + c] = qdd[r] - qdd0[r];
        ++c;
    }
    std::vector<Xform<S>> X_up(nb);
    for (int i = 0; i < nb; ++i) X_up[i] = parent_to_body(m.bodies[i], q);
    const std::vector<Xform<S>> X_world = world_transforms_of(m, X_up, in.forces);
    for (const BodyPoint& p : in.forces) {
        const Xform<S> X_eb = point_transform(p, X_world[p.body]);
        for (int r = 0; r < 3; ++r, ++c) {
            SVec<S> unit = zero6<S>();
            unit.l[r] = S(1);
            const SVec<S> saved = f[p.body];
            f[p.body] = f[p.body] + apply_transpose(X_eb, unit);
            aba(m, q, qd, tau.data(), f.data(), qdd.data());
            f[p.body] = saved;
            for (int row = 0; row < m.nv; ++row) Bhat[row * nc + c] = qdd[row] - qdd0[row];
        }
    }
}

}  // namespace nelu
