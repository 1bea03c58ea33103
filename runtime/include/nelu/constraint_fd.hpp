// nelu/constraint_fd.hpp: O(N) forward dynamics through the joints' constraint forces, after
// Yamane & Nakamura ("O(N) forward dynamics computation of open kinematic chains based on the
// principle of virtual work"), with their link splitting for branched chains (Sec. 4).
//
// Every link k moves freely with its own spatial acceleration a_k (body-k coordinates) under its
// inertia A_k = I_k, its applied force t_k = f^x_k - v_k x* I_k v_k + S_k tau_k - sum_children
// X_up(c)^T S_c tau_c (eq. 15-17, 28: joint torques act on both links of the joint) and the
// constraint forces: joint j transmits T_j n_j to its link and -X_up(j)^T T_j n_j to the parent
// link, where T_j (6 x N_Cj, N_Cj = 6 - nv_j) spans the forces that do no work on the joint's motion
// (T_j^T S_j = 0; the paper's H_{j,j}^T = T_j, H_{j,p}^T = X_up(j)^T T_j =: G_j). So (eq. 18, 48)
//   a_k = A_k^-1 (t_k + T_k n_k - sum_children G_c n_c),
// and the joint constrains the relative acceleration (eq. 13, 19): T_j^T (a_j - X_up(j) a_p) = T_j^T c_j,
// c_j = v_j x S_j qd_j, a_p = a_0 = -a_g for the world. Substituting gives Phi N = alpha (eq. 21-22)
// over the constraint forces of all joints, Phi = Gamma A^-1 Gamma^T, with the blocks
//   Phi_jj = T_j^T A_j^-1 T_j + G_j^T A_p^-1 G_j         (S_{j} of eq. 31-33)
//   Phi_jp = -G_j^T A_p^-1 T_p    (p = parent of j)     (S_{j,p} of eq. 39)
//   Phi_js =  G_j^T A_p^-1 G_s    (s a sibling of j)     (the extra blocks of branched chains, Sec. 4)
//   alpha_j = T_j^T (c_j - A_j^-1 t_j) + G_j^T A_p^-1 t_p   (G_j^T a_0 under the world)
// (A^-1 of the world is 0: no coupling through it.) Phi N = alpha is solved by block elimination
// from the leaves to the root, which never fills Phi outside the blocks of the joints that share a
// link (eq. 36-43, with M_j the inverse of the eliminated pivot and nu_j the partial constraint
// force ^j n_j), then by back substitution from the root to the leaves (eq. 47); the joint
// accelerations follow from the links' (eq. 48-49): qdd_j = S_j^T (a_j - X_up(j) a_p - c_j).
//
// A link with n_b joints couples all of them pairwise, O(n_b^2) work per elimination. Link splitting
// (Sec. 4, Fig. 3) keeps this bounded: a body with more than two children (more than three joints) is
// split into children - 1 pieces in a chain, joined by fixed joints (6 constraint rows, identity
// transform), each carrying 1/pieces of the body's inertia and velocity-product and external forces,
// the first one the body's own joint and each at most three joints. The pieces move as one body, so
// the result is the same; the number of joints at most doubles.
//
// Requirements beyond those of aba(): every body's spatial inertia must be positive definite (the
// method inverts each A_k), and S_j must have orthonormal columns (true for every joint type of
// nelu/model.hpp: unit axes, and the identity of the floating joint).
#pragma once

#include <cmath>
#include <vector>

#include "nelu/model.hpp"
#include "nelu/reference.hpp"
#include "nelu/small_dense.hpp"
#include "nelu/spatial.hpp"

namespace nelu {

/// A link of the split tree: a body, or one piece of a split body.
struct SplitLink {
    int body = -1;        ///< the body it belongs to
    int parent = -1;      ///< parent link, -1 for the world; parent < own index
    bool own_joint = true;  ///< joined to its parent by the body's joint (the body's first piece); else by a fixed joint
    int pieces = 1;       ///< number of pieces of its body: it carries 1/pieces of the body's inertia and forces
    std::vector<int> earlier_siblings;  ///< links with the same parent link (not the world) and a smaller index
};

/// The links after splitting, and where each body's joint sits in them.
struct SplitTree {
    std::vector<SplitLink> links;
    std::vector<int> first;   ///< per body: its first piece, the link its own joint moves
    std::vector<int> attach;  ///< per body: the link of its parent body its joint hangs from, -1 for the world
};

/// The tree of Yamane & Nakamura's Sec. 4: with `split`, every body with k > 2 children becomes a
/// chain of k - 1 pieces, piece t carrying child t and the last piece the last two children, so that
/// every link carries at most three joints; without, one link per body.
inline SplitTree split_links(const Model& m, bool split = true) {
    const int nb = m.num_bodies();
    std::vector<std::vector<int>> children(nb);
    for (int i = 0; i < nb; ++i)
        if (m.bodies[i].parent >= 0) children[m.bodies[i].parent].push_back(i);
    SplitTree t;
    t.first.assign(nb, -1), t.attach.assign(nb, -1);
    std::vector<int> attach_of(nb, -1);
    for (int b = 0; b < nb; ++b) {
        const int k = static_cast<int>(children[b].size());
        const int pieces = split && k > 2 ? k - 1 : 1;
        t.attach[b] = attach_of[b];
        t.first[b] = static_cast<int>(t.links.size());
        for (int p = 0; p < pieces; ++p) {
            SplitLink l;
            l.body = b, l.pieces = pieces, l.own_joint = p == 0;
            l.parent = p == 0 ? t.attach[b] : t.first[b] + p - 1;
            t.links.push_back(l);
        }
        for (int c = 0; c < k; ++c) attach_of[children[b][c]] = t.first[b] + (c < pieces - 1 ? c : pieces - 1);
    }
    const int n = static_cast<int>(t.links.size());
    for (int j = 0; j < n; ++j)
        for (int s = 0; s < j; ++s)
            if (t.links[j].parent >= 0 && t.links[s].parent == t.links[j].parent) t.links[j].earlier_siblings.push_back(s);
    return t;
}

/// T: a basis (6 x (6 - nv)) of the forces a joint transmits without working on its motion, T^T S = 0:
/// revolute about u [t1 t2 0; 0 0 1], prismatic along u [1 0 0; 0 t1 t2] (t1, t2, u orthonormal),
/// fixed the identity, floating none.
inline SmallMat<double> constraint_basis(const Body& b) {
    const int r = 6 - b.nv();
    SmallMat<double> T = small_zero<double>(6, r);
    if (b.type == JointType::Fixed) {
        for (int k = 0; k < 6; ++k) T(k, k) = 1;
        return T;
    }
    if (b.type == JointType::Floating) return T;
    const Vec3<double>& u = b.axis;
    int least = 0;  // the coordinate axis least aligned with u
    for (int k = 1; k < 3; ++k)
        if (std::abs(u[k]) < std::abs(u[least])) least = k;
    Vec3<double> e = zero3<double>();
    e[least] = 1;
    Vec3<double> t1 = cross(u, e);
    t1 = (1 / std::sqrt(dot(t1, t1))) * t1;
    const Vec3<double> t2 = cross(u, t1);
    const int perp = b.type == JointType::Revolute ? 0 : 3, free = 3 - perp;  // rows of t1 t2 / of the identity
    const int first_free = b.type == JointType::Revolute ? 2 : 0, first_perp = b.type == JointType::Revolute ? 0 : 3;
    for (int k = 0; k < 3; ++k) {
        T(perp + k, first_perp) = t1[k], T(perp + k, first_perp + 1) = t2[k];
        T(free + k, first_free + k) = 1;
    }
    return T;
}

namespace constraint_fd_detail {

/// One link's quantities (the paper's symbols in brackets).
template <class S> struct LinkData {
    int r = 0;                 ///< constraint rows of its joint [N_Cj]
    Mat6<S> Ainv;              ///< A_k^-1
    SVec<S> t, a_free, c;      ///< applied force [t_k], A^-1 t, joint velocity product
    SmallMat<S> T, G, Y;       ///< T_k, G_k = X_up^T T_k, Y_k = A_k^-1 T_k
    SmallMat<S> P, M, C;       ///< pivot [S_k, then updated], M_k = P^-1, coupling to the parent's joint [Phi_kp]
    bool has_C = false;
    std::vector<SmallMat<S>> sib;  ///< couplings to the earlier siblings [Phi_ks]
    S rho[6], nu[6], n[6];     ///< right-hand side [alpha_k, then updated], partial [^k n_k] and final constraint force
};

/// An r-vector as an r x 1 matrix.
template <class S> SmallMat<S> column_of(const S* x, int r) {
    SmallMat<S> v = small_zero<S>(r, 1);
    for (int i = 0; i < r; ++i) v(i, 0) = x[i];
    return v;
}

}  // namespace constraint_fd_detail

/// qdd = FD(q, qd, tau, fext) through the constraint forces (arguments as aba()); with `split`, on the
/// split tree of split_links(). joint_wrench, when not null, receives per body the wrench its joint
/// transmits from the parent, S tau + T n (body coordinates, RNEA's f_i). False when a body's spatial
/// inertia or an eliminated pivot is not positive definite (qdd is then not written).
template <class S>
bool constraint_fd(const Model& m, const S* q, const S* qd, const S* tau, const SVec<S>* fext, S* qdd,
                   SVec<S>* joint_wrench = nullptr, bool split = true) {
    const int nb = m.num_bodies();
    const Kinematics<S> k = forward_kinematics(m, q, qd, /*with_world=*/false);
    const SplitTree tree = split_links(m, split);
    const int nl = static_cast<int>(tree.links.size());
    std::vector<constraint_fd_detail::LinkData<S>> L(nl);
    const SVec<S> a0 = -cast<S>(m.gravity);

    // Links: A^-1, applied forces t (eq. 28), free accelerations A^-1 t
    std::vector<Mat6<S>> Ainv_body(nb);
    for (int b = 0; b < nb; ++b)
        if (!spd_inverse(to_matrix(cast<S>(m.bodies[b].I)), Ainv_body[b])) return false;
    for (int j = 0; j < nl; ++j) {
        const SplitLink& l = tree.links[j];
        const Body& b = m.bodies[l.body];
        const Inertia<S> I = cast<S>(b.I);
        SVec<S> t = -cross_force(k.v[l.body], I * k.v[l.body]);  // f^x - v x* I v
        if (fext) t = t + fext[l.body];
        L[j].Ainv = Ainv_body[l.body];
        if (l.pieces > 1) {
            const S share = S(1.0 / l.pieces), times = S(l.pieces);
            t = share * t;
            for (int r = 0; r < 6; ++r)
                for (int c = 0; c < 6; ++c) L[j].Ainv(r, c) = times * L[j].Ainv(r, c);
        }
        if (l.own_joint) t = t + joint_motion(b, tau + b.v_index);  // S tau, as a wrench
        L[j].t = t;
        L[j].c = l.own_joint ? k.c[l.body] : zero6<S>();
    }
    for (int b = 0; b < nb; ++b)  // the joint torque's reaction on the parent link
        if (tree.attach[b] >= 0 && m.bodies[b].nv() > 0)
            L[tree.attach[b]].t = L[tree.attach[b]].t - apply_transpose(k.X_up[b], joint_motion(m.bodies[b], tau + m.bodies[b].v_index));
    for (int j = 0; j < nl; ++j) L[j].a_free = L[j].Ainv * L[j].t;

    // Constraint bases T, G = X_up^T T, Y = A^-1 T
    for (int j = 0; j < nl; ++j) {
        const SplitLink& l = tree.links[j];
        const SmallMat<double> Td = l.own_joint ? constraint_basis(m.bodies[l.body]) : constraint_basis(Body{});
        auto& d = L[j];
        d.r = Td.cols;
        d.T = small_zero<S>(6, d.r), d.G = small_zero<S>(6, d.r);
        for (int r = 0; r < 6; ++r)
            for (int c = 0; c < d.r; ++c) d.T(r, c) = S(Td(r, c));
        for (int c = 0; c < d.r; ++c)
            set_column(d.G, c, l.own_joint ? apply_transpose(k.X_up[l.body], column(d.T, c)) : column(d.T, c));
        d.Y = d.Ainv * d.T;
    }
    // Phi's blocks and alpha (eq. 31-33, 38-39)
    for (int j = 0; j < nl; ++j) {
        auto& d = L[j];
        if (d.r == 0) continue;
        const int p = tree.links[j].parent;
        const SVec<S> rel = d.c - d.a_free, a_p = p >= 0 ? L[p].a_free : a0;
        S x[6], y[6];
        for (int r = 0; r < 6; ++r) x[r] = rel[r], y[r] = a_p[r];
        mul_vec_t(d.T, x, d.rho);  // alpha = T^T (c - A^-1 t) + G^T A_p^-1 t_p  (G^T a_0 under the world)
        mul_vec_t(d.G, y, x);
        for (int r = 0; r < d.r; ++r) d.rho[r] = d.rho[r] + x[r];
        d.P = mul_tn(d.T, d.Y);  // Phi_jj = T^T A^-1 T + G^T A_p^-1 G
        if (p < 0) continue;
        const SmallMat<S> Z = L[p].Ainv * d.G;  // A_p^-1 G_j
        SmallMat<S> GZ = mul_tn(d.G, Z);
        for (int r = 0; r < d.r; ++r)
            for (int c = 0; c < d.r; ++c) d.P(r, c) = d.P(r, c) + GZ(r, c);
        if (L[p].r > 0) d.C = -mul_tn(d.G, L[p].Y), d.has_C = true;  // Phi_jp = -G^T A_p^-1 T_p
        for (int s : tree.links[j].earlier_siblings) d.sib.push_back(mul_tn(Z, L[s].G));  // Phi_js = G_j^T A_p^-1 G_s
    }

    // Leaves to root: M_j = P_j^-1, nu_j = M_j rho_j (eq. 40-41), and the Schur complement onto the
    // joints of the parent link still to be eliminated: its own joint and the earlier siblings
    for (int j = nl - 1; j >= 0; --j) {
        auto& d = L[j];
        if (d.r == 0) continue;
        if (!spd_inverse(d.P, d.M)) return false;
        mul_vec(d.M, d.rho, d.nu);
        const int p = tree.links[j].parent;
        const std::vector<int>& sibs = tree.links[j].earlier_siblings;
        if (d.has_C) {
            const SmallMat<S> MC = d.M * d.C;
            L[p].P = L[p].P - mul_tn(d.C, MC);
            S x[6];
            mul_vec_t(d.C, d.nu, x);
            for (int r = 0; r < L[p].r; ++r) L[p].rho[r] = L[p].rho[r] - x[r];
        }
        for (std::size_t a = 0; a < sibs.size(); ++a) {
            if (L[sibs[a]].r == 0) continue;
            auto& e = L[sibs[a]];
            const SmallMat<S> MSa = d.M * d.sib[a];
            e.P = e.P - mul_tn(d.sib[a], MSa);
            S x[6];
            mul_vec_t(d.sib[a], d.nu, x);
            for (int r = 0; r < e.r; ++r) e.rho[r] = e.rho[r] - x[r];
            if (d.has_C) e.C = e.C - mul_tn(MSa, d.C);  // Phi_sp -= Phi_sj M_j Phi_jp
            for (std::size_t b = 0; b < a; ++b) {       // Phi_ss' -= Phi_sj M_j Phi_js', s' < s
                if (L[sibs[b]].r == 0) continue;
                const std::vector<int>& es = tree.links[sibs[a]].earlier_siblings;
                for (std::size_t c = 0; c < es.size(); ++c)
                    if (es[c] == sibs[b]) e.sib[c] = e.sib[c] - mul_tn(MSa, d.sib[b]);
            }
        }
    }
    // Root to leaves: n_j = nu_j - M_j (Phi_jp n_p + sum_s Phi_js n_s)  (eq. 47)
    for (int j = 0; j < nl; ++j) {
        auto& d = L[j];
        if (d.r == 0) continue;
        S x[6], y[6];
        for (int r = 0; r < d.r; ++r) x[r] = S(0);
        const int p = tree.links[j].parent;
        if (d.has_C) mul_vec(d.C, L[p].n, x);
        const std::vector<int>& sibs = tree.links[j].earlier_siblings;
        for (std::size_t a = 0; a < sibs.size(); ++a) {
            if (L[sibs[a]].r == 0) continue;
            mul_vec(d.sib[a], L[sibs[a]].n, y);
            for (int r = 0; r < d.r; ++r) x[r] = x[r] + y[r];
        }
        mul_vec(d.M, x, y);
        for (int r = 0; r < d.r; ++r) d.n[r] = d.nu[r] - y[r];
    }

    // Link accelerations a_k = A_k^-1 (t_k + T_k n_k - sum_children G_c n_c)  (eq. 48)
    std::vector<SVec<S>> f(nl), a(nl);
    for (int j = 0; j < nl; ++j) {
        f[j] = L[j].t;
        if (L[j].r > 0) f[j] = f[j] + column(L[j].T * constraint_fd_detail::column_of(L[j].n, L[j].r), 0);
    }
    for (int j = 0; j < nl; ++j)
        if (L[j].r > 0 && tree.links[j].parent >= 0)
            f[tree.links[j].parent] = f[tree.links[j].parent] - column(L[j].G * constraint_fd_detail::column_of(L[j].n, L[j].r), 0);
    for (int j = 0; j < nl; ++j) a[j] = L[j].Ainv * f[j];
    // Joint accelerations qdd_j = S_j^T (a_j - X_up(j) a_p - c_j)  (eq. 49), joint wrenches S tau + T n
    for (int b = 0; b < nb; ++b) {
        const Body& body = m.bodies[b];
        const int j = tree.first[b], p = tree.attach[b];
        const SVec<S> rel = a[j] - apply(k.X_up[b], p >= 0 ? a[p] : a0) - k.c[b];
        joint_project(body, rel, qdd + body.v_index);
        if (joint_wrench) {
            joint_wrench[b] = joint_motion(body, tau + body.v_index);
            if (L[j].r > 0) joint_wrench[b] = joint_wrench[b] + column(L[j].T * constraint_fd_detail::column_of(L[j].n, L[j].r), 0);
        }
    }
    return true;
}

}  // namespace nelu
