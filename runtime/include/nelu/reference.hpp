// nelu/reference.hpp: reference rigid-body algorithms, written from Featherstone's "Rigid Body
// Dynamics Algorithms" (RBDA) in Nori's notation: spatial vectors angular first, every quantity of
// body i in body-i coordinates, gravity entering as a_0 = -a_g.
//
// These are the independent references the generated solvers are checked against. They favour
// clarity over speed, are templated on the scalar (double, float, Counted) and allocate freely.
//
// Arguments: q (nq), qd (nv), qdd (nv), tau (nv) are flat arrays in slot order (Body::q_index,
// Body::v_index). fext, when not null, holds one wrench per body: the external force acting on
// body i, in body-i coordinates at the body-i origin.
#pragma once

#include <cassert>
#include <vector>

#include "nelu/model.hpp"
#include "nelu/spatial.hpp"

namespace nelu {

template <class S> SVec<S> cast(const SVec<double>& v) {
    SVec<S> r;
    for (int i = 0; i < 6; ++i) r[i] = S(v[i]);
    return r;
}
template <class S> Vec3<S> cast(const Vec3<double>& v) { return {{S(v[0]), S(v[1]), S(v[2])}}; }
template <class S> Mat3<S> cast(const Mat3<double>& A) {
    Mat3<S> B;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) B(i, j) = S(A(i, j));
    return B;
}
template <class S> Xform<S> cast(const Xform<double>& X) { return {cast<S>(X.E), cast<S>(X.r)}; }
template <class S> Inertia<S> cast(const Inertia<double>& I) {
    return {S(I.m), cast<S>(I.h), cast<S>(I.Ibar)};
}

// ---------------------------------------------------------------------------------------------
// Joint models (RBDA Table 4.1). S is constant in body coordinates for every joint type here.

/// Column k of the motion subspace S of body b's joint.
template <class S> SVec<S> motion_subspace(const Body& b, int k) {
    SVec<S> s = zero6<S>();
    switch (b.type) {
        case JointType::Revolute: s.w = cast<S>(b.axis); break;
        case JointType::Prismatic: s.l = cast<S>(b.axis); break;
        case JointType::Floating: s[k] = S(1); break;
        case JointType::Fixed: assert(false && "fixed joints have no motion subspace"); break;
    }
    return s;
}

/// S qd: the joint's velocity in body coordinates.
template <class S> SVec<S> joint_motion(const Body& b, const S* qd) {
    SVec<S> v = zero6<S>();
    switch (b.type) {
        case JointType::Revolute: v.w = qd[0] * cast<S>(b.axis); break;
        case JointType::Prismatic: v.l = qd[0] * cast<S>(b.axis); break;
        case JointType::Floating:
            for (int k = 0; k < 6; ++k) v[k] = qd[k];
            break;
        case JointType::Fixed: break;
    }
    return v;
}

/// tau = S^T f (nv entries).
template <class S> void joint_project(const Body& b, const SVec<S>& f, S* tau) {
    switch (b.type) {
        case JointType::Revolute: tau[0] = dot(cast<S>(b.axis), f.w); break;
        case JointType::Prismatic: tau[0] = dot(cast<S>(b.axis), f.l); break;
        case JointType::Floating:
            for (int k = 0; k < 6; ++k) tau[k] = f[k];
            break;
        case JointType::Fixed: break;
    }
}

/// X_J(q): the joint transform, from the joint frame to the body frame.
template <class S> Xform<S> joint_transform(const Body& b, const S* q) {
    using std::cos;
    using std::sin;
    switch (b.type) {
        case JointType::Revolute: {
            S c = cos(q[0]), s = sin(q[0]);
            return {rot_axis(cast<S>(b.axis), c, s), zero3<S>()};
        }
        case JointType::Prismatic: return {identity3<S>(), q[0] * cast<S>(b.axis)};
        case JointType::Floating: {
            // R maps body to parent coordinates; X_J = plx(R^T, p).
            Mat3<S> R = quat_to_rotation(q[3], q[4], q[5], q[6]);
            return {transpose(R), {{q[0], q[1], q[2]}}};
        }
        case JointType::Fixed: break;
    }
    return identity_xform<S>();
}

/// X_up(i) = X_J(q_i) X_T(i): parent frame -> body frame.
template <class S> Xform<S> parent_to_body(const Body& b, const S* q) {
    return compose(joint_transform(b, q + b.q_index), cast<S>(b.X_tree));
}

// ---------------------------------------------------------------------------------------------
/// Forward kinematics: transforms, velocities and velocity-product accelerations of every body.
template <class S> struct Kinematics {
    std::vector<Xform<S>> X_up;     ///< parent -> body i
    std::vector<Xform<S>> X_world;  ///< world -> body i
    std::vector<SVec<S>> v;         ///< body velocity, body coordinates
    std::vector<SVec<S>> c;         ///< v_i x (S_i qd_i), body coordinates
};

/// Kinematics of every body at (q, qd); qd may be null (velocities then zero). X_world is filled
/// only when `with_world` is true.
template <class S>
Kinematics<S> forward_kinematics(const Model& m, const S* q, const S* qd, bool with_world = true) {
    const int nb = m.num_bodies();
    Kinematics<S> k;
    k.X_up.resize(nb), k.v.resize(nb), k.c.resize(nb);
    if (with_world) k.X_world.resize(nb);
    for (int i = 0; i < nb; ++i) {
        const Body& b = m.bodies[i];
        k.X_up[i] = parent_to_body(b, q);
        SVec<S> vj = qd ? joint_motion(b, qd + b.v_index) : zero6<S>();
        if (with_world) k.X_world[i] = b.parent < 0 ? k.X_up[i] : compose(k.X_up[i], k.X_world[b.parent]);
        k.v[i] = b.parent < 0 ? vj : apply(k.X_up[i], k.v[b.parent]) + vj;
        k.c[i] = cross_motion(k.v[i], vj);
    }
    return k;
}

// ---------------------------------------------------------------------------------------------
/// The recursive Newton-Euler algorithm's body quantities (RBDA Table 5.1), body coordinates.
template <class S> struct BodyDynamics {
    Kinematics<S> k;
    std::vector<SVec<S>> a;  ///< spatial acceleration, gravity folded in (a_0 = -a_g)
    std::vector<SVec<S>> f;  ///< the wrench on body i through its joint
};

/// a_i and f_i for (q, qd, qdd, fext) (fext may be null); X_world is filled when `with_world`.
template <class S>
BodyDynamics<S> rnea_bodies(const Model& m, const S* q, const S* qd, const S* qdd, const SVec<S>* fext, bool with_world = false) {
    const int nb = m.num_bodies();
    BodyDynamics<S> r{forward_kinematics(m, q, qd, with_world), std::vector<SVec<S>>(nb), std::vector<SVec<S>>(nb)};
    const Kinematics<S>& k = r.k;
    std::vector<SVec<S>>& a = r.a;
    std::vector<SVec<S>>& f = r.f;
    const SVec<S> a0 = -cast<S>(m.gravity);
    for (int i = 0; i < nb; ++i) {  // a_i = X_up a_parent + S qdd + c;  f_i = I a + v x* I v - f^x
        const Body& b = m.bodies[i];
        SVec<S> ap = apply(k.X_up[i], b.parent < 0 ? a0 : a[b.parent]);
        a[i] = ap + joint_motion(b, qdd + b.v_index) + k.c[i];
        Inertia<S> I = cast<S>(b.I);
        f[i] = I * a[i] + cross_force(k.v[i], I * k.v[i]);
        if (fext) f[i] = f[i] - fext[i];
    }
    for (int i = nb - 1; i >= 0; --i) {  // f_parent += X_up^T f_i
        const Body& b = m.bodies[i];
        if (b.parent >= 0) f[b.parent] = f[b.parent] + apply_transpose(k.X_up[i], f[i]);
    }
    return r;
}

/// tau = ID(q, qd, qdd, fext): recursive Newton-Euler (RBDA Table 5.1).
template <class S>
void rnea(const Model& m, const S* q, const S* qd, const S* qdd, const SVec<S>* fext, S* tau) {
    const BodyDynamics<S> r = rnea_bodies(m, q, qd, qdd, fext);
    for (int i = 0; i < m.num_bodies(); ++i) joint_project(m.bodies[i], r.f[i], tau + m.bodies[i].v_index);  // tau_i = S^T f_i
}

/// C(q, qd) qd + g(q) - J^T fext: RNEA with qdd = 0.
template <class S>
void nonlinear_effects(const Model& m, const S* q, const S* qd, const SVec<S>* fext, S* h) {
    std::vector<S> zero(m.nv, S(0));
    rnea(m, q, qd, zero.data(), fext, h);
}

// ---------------------------------------------------------------------------------------------
/// Solve the small symmetric positive-definite system A x = b in place (LDL^T, n <= 6).
/// A is n x n row major and is overwritten by its factor.
template <class S> void solve_spd_small(int n, S* A, S* b) {
    for (int j = 0; j < n; ++j) {  // A = L D L^T, L unit lower in A's strict lower part
        for (int k = 0; k < j; ++k) {
            S lkd = A[j * n + k] * A[k * n + k];
            for (int i = j; i < n; ++i) A[i * n + j] = A[i * n + j] - A[i * n + k] * lkd;
        }
        for (int i = j + 1; i < n; ++i) A[i * n + j] = A[i * n + j] / A[j * n + j];
    }
    for (int i = 0; i < n; ++i)  // b = L \ b
        for (int k = 0; k < i; ++k) b[i] = b[i] - A[i * n + k] * b[k];
    for (int i = 0; i < n; ++i) b[i] = b[i] / A[i * n + i];  // b = D \ b
    for (int i = n - 1; i >= 0; --i)  // b = L^T \ b
        for (int k = i + 1; k < n; ++k) b[i] = b[i] - A[k * n + i] * b[k];
}

/// D^-1 for a small symmetric positive-definite D (n x n row major, n <= 6).
template <class S> std::vector<S> inverse_spd_small(int n, const std::vector<S>& D) {
    std::vector<S> Dinv(n * n);
    if (n == 1) {
        Dinv[0] = S(1) / D[0];
        return Dinv;
    }
    for (int s = 0; s < n; ++s) {
        std::vector<S> F = D, e(n, S(0));
        e[s] = S(1);
        solve_spd_small(n, F.data(), e.data());
        for (int r = 0; r < n; ++r) Dinv[r * n + s] = e[r];
    }
    return Dinv;
}

/// Pivots of the articulated-body algorithm, kept for diagnostics.
template <class S> struct AbaPivots {
    /// For each joint with degrees of freedom, last body first: D_i = S_i^T IA_i S_i (n x n, row
    /// major; a scalar for 1-DoF joints).
    std::vector<std::vector<S>> D;
};

/// qdd = FD(q, qd, tau, fext): articulated-body algorithm (RBDA Table 7.1).
template <class S>
void aba(const Model& m, const S* q, const S* qd, const S* tau, const SVec<S>* fext, S* qdd,
         AbaPivots<S>* pivots = nullptr) {
    const int nb = m.num_bodies();
    Kinematics<S> k = forward_kinematics(m, q, qd, /*with_world=*/false);
    std::vector<Mat6<S>> IA(nb);
    std::vector<SVec<S>> pA(nb), a(nb);
    std::vector<std::vector<SVec<S>>> U(nb);  // U_i = IA_i S_i, one column per DoF
    std::vector<std::vector<S>> Dinv(nb), u(nb);
    for (int i = 0; i < nb; ++i) {  // IA_i = I_i;  pA_i = v x* I v - f^x
        Inertia<S> I = cast<S>(m.bodies[i].I);
        IA[i] = to_matrix(I);
        pA[i] = cross_force(k.v[i], I * k.v[i]);
        if (fext) pA[i] = pA[i] - fext[i];
    }
    for (int i = nb - 1; i >= 0; --i) {
        const Body& b = m.bodies[i];
        const int n = b.nv();
        std::vector<S> D(n * n);
        u[i].resize(n);
        joint_project(b, pA[i], u[i].data());
        for (int r = 0; r < n; ++r) {
            U[i].push_back(IA[i] * motion_subspace<S>(b, r));
            u[i][r] = tau[b.v_index + r] - u[i][r];  // u = tau - S^T pA
        }
        for (int r = 0; r < n; ++r) {
            std::vector<S> col(n);
            joint_project(b, U[i][r], col.data());  // D = S^T U
            for (int s = 0; s < n; ++s) D[s * n + r] = col[s];
        }
        if (pivots && n > 0) pivots->D.push_back(D);
        Dinv[i] = inverse_spd_small(n, D);
        if (b.parent < 0) continue;
        // W = U D^-1;  Ia = IA - W U^T;  pa = pA + Ia c + W u
        std::vector<SVec<S>> W(n);
        for (int s = 0; s < n; ++s) {
            W[s] = Dinv[i][s] * U[i][0];
            for (int t = 1; t < n; ++t) W[s] = W[s] + Dinv[i][t * n + s] * U[i][t];
        }
        Mat6<S> Ia = IA[i];
        for (int r = 0; r < 6; ++r)
            for (int c = r; c < 6; ++c) {
                for (int s = 0; s < n; ++s) Ia(r, c) = Ia(r, c) - W[s][r] * U[i][s][c];
                Ia(c, r) = Ia(r, c);
            }
        SVec<S> pa = pA[i] + Ia * k.c[i];
        for (int s = 0; s < n; ++s) pa = pa + u[i][s] * W[s];
        IA[b.parent] = IA[b.parent] + congruence(k.X_up[i], Ia);
        pA[b.parent] = pA[b.parent] + apply_transpose(k.X_up[i], pa);
    }
    const SVec<S> a0 = -cast<S>(m.gravity);
    for (int i = 0; i < nb; ++i) {  // qdd_i = D^-1 (u - U^T a'); a_i = a' + S qdd_i
        const Body& b = m.bodies[i];
        const int n = b.nv();
        SVec<S> ap = apply(k.X_up[i], b.parent < 0 ? a0 : a[b.parent]) + k.c[i];
        std::vector<S> rhs(n);
        for (int r = 0; r < n; ++r) rhs[r] = u[i][r] - dot(U[i][r], ap);
        for (int r = 0; r < n; ++r) {
            S acc = Dinv[i][r * n] * rhs[0];
            for (int s = 1; s < n; ++s) acc = acc + Dinv[i][r * n + s] * rhs[s];
            qdd[b.v_index + r] = acc;
        }
        a[i] = ap + joint_motion(b, qdd + b.v_index);
    }
}

// ---------------------------------------------------------------------------------------------
/// M(q): joint-space inertia matrix by the composite-rigid-body algorithm (RBDA Table 6.2).
/// M is nv x nv, row major.
template <class S> void crba(const Model& m, const S* q, S* M) {
    const int nb = m.num_bodies();
    std::vector<Xform<S>> X_up(nb);
    std::vector<Inertia<S>> Ic(nb);
    for (int i = 0; i < nb; ++i) X_up[i] = parent_to_body(m.bodies[i], q), Ic[i] = cast<S>(m.bodies[i].I);
    for (int i = 0; i < m.nv * m.nv; ++i) M[i] = S(0);
    for (int i = nb - 1; i >= 0; --i)  // Ic_parent += X_up^T Ic_i X_up
        if (m.bodies[i].parent >= 0)
            Ic[m.bodies[i].parent] = Ic[m.bodies[i].parent] + transform_to_parent(X_up[i], Ic[i]);
    for (int i = 0; i < nb; ++i) {
        const Body& bi = m.bodies[i];
        for (int k = 0; k < bi.nv(); ++k) {
            SVec<S> F = Ic[i] * motion_subspace<S>(bi, k);  // F = Ic S
            const int col = bi.v_index + k;
            for (int j = i; j >= 0;) {  // M(j-dofs, col) = S_j^T F, walking to the root
                const Body& bj = m.bodies[j];
                std::vector<S> t(bj.nv());
                joint_project(bj, F, t.data());
                for (int r = 0; r < bj.nv(); ++r) {
                    M[(bj.v_index + r) * m.nv + col] = t[r];
                    M[col * m.nv + bj.v_index + r] = t[r];
                }
                if (bj.parent < 0) break;
                F = apply_transpose(X_up[j], F);
                j = bj.parent;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
/// Body Jacobian of body `i`: J (6 x nv, column major as SVec columns) with v_i = J qd, in body-i
/// coordinates at the body-i origin.
template <class S> std::vector<SVec<S>> body_jacobian(const Model& m, const S* q, int i) {
    std::vector<SVec<S>> J(m.nv, zero6<S>());
    Xform<S> X = identity_xform<S>();  // X_{i <- j}
    for (int j = i; j >= 0; j = m.bodies[j].parent) {
        const Body& bj = m.bodies[j];
        for (int k = 0; k < bj.nv(); ++k) J[bj.v_index + k] = apply(X, motion_subspace<S>(bj, k));
        X = compose(X, parent_to_body(bj, q));
    }
    return J;
}

/// Kinetic energy 1/2 sum v_i . I_i v_i.
template <class S> S kinetic_energy(const Model& m, const Kinematics<S>& k) {
    S T = S(0);
    for (int i = 0; i < m.num_bodies(); ++i) T = T + S(0.5) * dot(k.v[i], cast<S>(m.bodies[i].I) * k.v[i]);
    return T;
}

/// Potential energy -sum m_i g . c_i (c_i: centre of mass in world coordinates).
template <class S> S potential_energy(const Model& m, const Kinematics<S>& k) {
    S V = S(0);
    Vec3<S> g = cast<S>(m.gravity.l);
    for (int i = 0; i < m.num_bodies(); ++i) {
        const Xform<S>& X = k.X_world[i];
        Inertia<S> I = cast<S>(m.bodies[i].I);
        Vec3<S> mc = I.m * X.r + mul_transpose(X.E, I.h);  // m (r + E^T c)
        V = V - dot(g, mc);
    }
    return V;
}

/// Total spatial momentum in world coordinates at the world origin: sum X*_{0<-i} I_i v_i.
template <class S> SVec<S> spatial_momentum(const Model& m, const Kinematics<S>& k) {
    SVec<S> h = zero6<S>();
    for (int i = 0; i < m.num_bodies(); ++i)
        h = h + apply_transpose(k.X_world[i], cast<S>(m.bodies[i].I) * k.v[i]);
    return h;
}

}  // namespace nelu
