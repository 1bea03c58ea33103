// system.cpp: see system.hpp.
#include "system.hpp"

#include "frames.hpp"
#include "numeric.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace nelu {

std::array<std::array<ir::Id, 3>, 3> quaternion_rotation(ir::Program& P, ir::Id x, ir::Id y, ir::Id z, ir::Id w) {
    using ir::Id;
    const Id two = P.constant(2);
    const Id xx = P.mul(x, x), yy = P.mul(y, y), zz = P.mul(z, z), xy = P.mul(x, y), xz = P.mul(x, z),
             yz = P.mul(y, z), wx = P.mul(w, x), wy = P.mul(w, y), wz = P.mul(w, z);
    return {{{P.sub(P.one(), P.mul(two, P.add(yy, zz))), P.mul(two, P.sub(xy, wz)), P.mul(two, P.add(xz, wy))},
             {P.mul(two, P.add(xy, wz)), P.sub(P.one(), P.mul(two, P.add(xx, zz))), P.mul(two, P.sub(yz, wx))},
             {P.mul(two, P.sub(xz, wy)), P.mul(two, P.add(yz, wx)), P.sub(P.one(), P.mul(two, P.add(xx, yy)))}}};
}

namespace {

using ir::Id;
using V6 = std::array<Id, 6>;
using M6 = std::array<std::array<Id, 6>, 6>;

using Factor = TransformFactor;

// ---------------------------------------------------------------------------------------------
// IR vector algebra

std::array<Id, 3> cross3(ir::Program& P, const Id* a, const Id* b) {
    return {P.sub(P.mul(a[1], b[2]), P.mul(a[2], b[1])), P.sub(P.mul(a[2], b[0]), P.mul(a[0], b[2])),
            P.sub(P.mul(a[0], b[1]), P.mul(a[1], b[0]))};
}

/// F m (motion vector).
V6 apply_motion(ir::Program& P, const Factor& F, const V6& m) {
    V6 out;
    if (F.rotation) {
        for (int i = 0; i < 3; ++i) {
            out[i] = P.dot({F.E[i][0], F.E[i][1], F.E[i][2]}, {m[0], m[1], m[2]});
            out[i + 3] = P.dot({F.E[i][0], F.E[i][1], F.E[i][2]}, {m[3], m[4], m[5]});
        }
    } else {  // [w; v - r x w]
        auto rw = cross3(P, F.r, m.data());
        for (int i = 0; i < 3; ++i) out[i] = m[i], out[i + 3] = P.sub(m[i + 3], rw[i]);
    }
    return out;
}

/// The 6x6 matrix of a factor acting on motion vectors.
M6 factor_matrix(ir::Program& Pm, const Factor& F) {
    M6 M;
    for (auto& row : M) row.fill(Pm.zero());
    if (F.rotation) {
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) M[i][j] = M[i + 3][j + 3] = F.E[i][j];
    } else {
        for (int i = 0; i < 6; ++i) M[i][i] = Pm.one();
        // lower-left block -rx = [0 r2 -r1; -r2 0 r0; r1 -r0 0]
        M[3][1] = F.r[2], M[3][2] = Pm.neg(F.r[1]);
        M[4][0] = Pm.neg(F.r[2]), M[4][2] = F.r[0];
        M[5][0] = F.r[1], M[5][1] = Pm.neg(F.r[0]);
    }
    return M;
}

Id cst(ir::Program& P, double v) { return P.constant(v); }

/// A translation factor xlt(r), or nothing when r is zero.
void push_translation(ir::Program& P, std::vector<Factor>& fs, double x, double y, double z) {
    if (x == 0 && y == 0 && z == 0) return;
    Factor f;
    f.rotation = false;
    f.r[0] = cst(P, x), f.r[1] = cst(P, y), f.r[2] = cst(P, z);
    fs.push_back(f);
}

/// A rotation factor rot(E), or nothing when E is the identity.
void push_rotation(ir::Program& P, std::vector<Factor>& fs, const Mat3<double>& E) {
    bool identity = true;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) identity = identity && E(i, j) == (i == j ? 1.0 : 0.0);
    if (identity) return;
    Factor f;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) f.E[i][j] = cst(P, E(i, j));
    fs.push_back(f);
}

/// cos and sin of an angle constant, with rounding noise at multiples of pi/2 removed.
std::pair<double, double> cos_sin(double angle) {
    return {snap_unit(std::cos(angle), 1e-15), snap_unit(std::sin(angle), 1e-15)};
}

/// Factors of body b's transform X_up = X_J(q) X_T in motion order (first applied first): for DH
/// frames xlt(a x), rotx(alpha), xlt(d z), then the joint (theta0 folded into its angle); otherwise
/// xlt(r_T), rot(E_T), then the joint. sincos of q is shared through the IR.
/// A mimic joint (Body::mimic) reads its master's position: q = multiplier q_master + offset, with
/// the offset folded into theta0 (revolute) or d (prismatic); `master` is the master's body.
std::vector<Factor> body_factors(ir::Program& P, const Body& b, const InternalFrame& fr, const Body* master) {
    std::vector<Factor> fs;
    double theta0 = 0, d = 0;
    if (fr.dh) {
        push_translation(P, fs, fr.a, 0, 0);
        auto [ca, sa] = cos_sin(fr.alpha);
        if (fr.theta0 == 0) ca = b.X_tree.E(1, 1), sa = b.X_tree.E(1, 2);  // X_T is rotx(alpha) itself
        push_rotation(P, fs, rot_x(ca, sa));
        theta0 = fr.theta0, d = fr.d;
        if (b.type == JointType::Revolute) push_translation(P, fs, 0, 0, d), d = 0;
        else if (theta0 != 0) {  // prismatic: rotz(theta0) stays a constant factor, d joins q
            auto [ct, st] = cos_sin(theta0);
            push_rotation(P, fs, rot_z(ct, st));
            theta0 = 0;
        }
    } else {
        push_translation(P, fs, b.X_tree.r[0], b.X_tree.r[1], b.X_tree.r[2]);
        push_rotation(P, fs, b.X_tree.E);
    }
    Id q0 = b.nq() > 0 ? P.input(ir::Source::Q, master ? master->q_index : b.q_index) : -1;
    const double mult = master ? b.multiplier : 1.0;
    if (master) (b.type == JointType::Revolute ? theta0 : d) += b.offset;
    // An offset that is a multiple of pi/2 becomes a swap or sign change of (cos q, sin q): exact,
    // and no addition (in float, q + pi would round); any other offset is added to q. A mimic with
    // multiplier +-1 then shares its master's sine and cosine.
    const double quarter = std::round(theta0 / (M_PI / 2));
    const bool quarter_turn = std::abs(theta0 - quarter * (M_PI / 2)) < 1e-15 && std::abs(mult) == 1;
    if (b.nq() == 1 && !(b.type == JointType::Revolute && quarter_turn)) {
        q0 = P.mul(q0, cst(P, mult));
        q0 = P.add(q0, cst(P, b.type == JointType::Revolute ? theta0 : d));
    }
    switch (b.type) {
        case JointType::Revolute: {  // E = u u^T + c (1 - u u^T) - s ux, entry by entry
            Id c = P.cos(q0), s = P.sin(q0);
            if (quarter_turn && mult < 0) s = P.neg(s);  // sin(-q)
            if (quarter_turn) {  // (cos, sin)(q + k pi/2), k mod 4
                const int k = ((static_cast<int>(quarter) % 4) + 4) % 4;
                const Id cq = c, sq = s;
                c = k == 0 ? cq : k == 1 ? P.neg(sq) : k == 2 ? P.neg(cq) : sq;
                s = k == 0 ? sq : k == 1 ? cq : k == 2 ? P.neg(sq) : P.neg(cq);
            }
            const Vec3<double>& u = b.axis;
            const double ux[3][3] = {{0, -u[2], u[1]}, {u[2], 0, -u[0]}, {-u[1], u[0], 0}};
            Factor f;
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j) {
                    const double uu = u[i] * u[j];
                    f.E[i][j] = P.add(P.add(cst(P, uu), P.mul(c, cst(P, (i == j ? 1.0 : 0.0) - uu))),
                                      P.mul(s, cst(P, -ux[i][j])));
                }
            fs.push_back(f);
            break;
        }
        case JointType::Prismatic: {
            Factor f;
            f.rotation = false;
            for (int k = 0; k < 3; ++k) f.r[k] = P.mul(q0, cst(P, b.axis[k]));
            fs.push_back(f);
            break;
        }
        case JointType::Floating: {  // X_J = rot(R^T) xlt(p)
            Factor t;
            t.rotation = false;
            for (int k = 0; k < 3; ++k) t.r[k] = P.input(ir::Source::Q, b.q_index + k);
            fs.push_back(t);
            Id x = P.input(ir::Source::Q, b.q_index + 3), y = P.input(ir::Source::Q, b.q_index + 4),
               z = P.input(ir::Source::Q, b.q_index + 5), w = P.input(ir::Source::Q, b.q_index + 6);
            const auto R = quaternion_rotation(P, x, y, z, w);
            Factor r;
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j) r.E[i][j] = R[j][i];
            fs.push_back(r);
            break;
        }
        case JointType::Fixed: break;
    }
    return fs;
}

/// Column k of S (constant, body coordinates).
V6 subspace_column(ir::Program& P, const Body& b, int k) {
    V6 s;
    s.fill(P.zero());
    if (b.type == JointType::Revolute)
        for (int i = 0; i < 3; ++i) s[i] = cst(P, b.axis[i]);
    else if (b.type == JointType::Prismatic)
        for (int i = 0; i < 3; ++i) s[i + 3] = cst(P, b.axis[i]);
    else if (b.type == JointType::Floating)
        s[k] = P.one();
    return s;
}

/// X* f = [E (n - r x f); E f] for a constant transform X, applied as [E n - (E r) x f'; f'] with
/// f' = E f: E r is the offset in the target frame, where it is often sparse (an internal frame's
/// origin lies on the joint axis, so from the link origin it is along z), and the cross product
/// then costs 2 multiplications instead of 6.
V6 apply_force(ir::Program& P, const Xform<double>& X, const V6& f) {
    Id E[3][3];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) E[i][j] = cst(P, X.E(i, j));
    const Vec3<double> Er = X.E * X.r;
    const double scale = std::max({std::abs(X.r[0]), std::abs(X.r[1]), std::abs(X.r[2])});
    Id r[3];
    for (int k = 0; k < 3; ++k) r[k] = cst(P, std::abs(Er[k]) <= 1e-14 * scale ? 0.0 : Er[k]);
    V6 out;
    for (int i = 0; i < 3; ++i) {
        out[i] = P.dot({E[i][0], E[i][1], E[i][2]}, {f[0], f[1], f[2]});
        out[i + 3] = P.dot({E[i][0], E[i][1], E[i][2]}, {f[3], f[4], f[5]});
    }
    auto rf = cross3(P, r, out.data() + 3);
    for (int i = 0; i < 3; ++i) out[i] = P.sub(out[i], rf[i]);
    return out;
}

/// The 6x6 rigid-body inertia as IR constants.
M6 inertia_matrix(ir::Program& P, const Inertia<double>& I) {
    Mat6<double> M = to_matrix(I);
    M6 out;
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) out[i][j] = cst(P, M(i, j));
    return out;
}

V6 add6(ir::Program& P, const V6& a, const V6& b) {
    V6 o;
    for (int i = 0; i < 6; ++i) o[i] = P.add(a[i], b[i]);
    return o;
}

/// v x m (motion vector).
V6 cross_motion(ir::Program& P, const V6& v, const V6& m) {
    auto a = cross3(P, v.data(), m.data()), b = cross3(P, v.data(), m.data() + 3), c = cross3(P, v.data() + 3, m.data());
    return {a[0], a[1], a[2], P.add(b[0], c[0]), P.add(b[1], c[1]), P.add(b[2], c[2])};
}

/// The velocity-product force v x* (I v) of a body, in the centre-of-mass form
///   v x* (I v) = [w x (I_c w) + c x F; F],  F = m w x v_c,  v_c = v_o + w x c,
/// with c the centre of mass and I_c the rotational inertia about it. It follows from
/// I v = [I_c w + c x h; h] with h = m v_c, Jacobi's identity and v_c x h = 0, and costs 60
/// operations for a general inertia where the 6x6 product and cross product cost 72 (fewer
/// still when c or I_c have zeros, as in DH-type models).
V6 velocity_product_force(ir::Program& P, const Inertia<double>& I, const V6& v) {
    Id c[3], Ic[3][3];
    const double m = I.m;
    Vec3<double> cd;
    Mat3<double> icd;
    com_inertia(I, cd, icd);
    double scale = 0;
    for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k) scale = std::max(scale, std::abs(icd(r, k)));
    for (int r = 0; r < 3; ++r) {
        c[r] = P.constant(cd[r]);
        // a product of inertia that is zero about the centre of mass comes back from Ibar as
        // rounding (1e-18): snap it, or it would cost operations
        for (int k = 0; k < 3; ++k) Ic[r][k] = P.constant(std::abs(icd(r, k)) < 1e-12 * scale ? 0.0 : icd(r, k));
    }
    const Id* w = v.data();
    auto wc = cross3(P, w, c);
    const Id vc[3] = {P.add(v[3], wc[0]), P.add(v[4], wc[1]), P.add(v[5], wc[2])};
    auto wvc = cross3(P, w, vc);
    const Id F[3] = {P.mul(P.constant(m), wvc[0]), P.mul(P.constant(m), wvc[1]), P.mul(P.constant(m), wvc[2])};
    Id Icw[3];
    for (int r = 0; r < 3; ++r) Icw[r] = P.dot({Ic[r][0], Ic[r][1], Ic[r][2]}, {w[0], w[1], w[2]});
    auto n1 = cross3(P, w, Icw);
    auto n2 = cross3(P, c, F);
    return {P.add(n1[0], n2[0]), P.add(n1[1], n2[1]), P.add(n1[2], n2[2]), F[0], F[1], F[2]};
}

// ---------------------------------------------------------------------------------------------
// Assembly

class Builder {
  public:
    Builder(const Model& m, const Problem& p) : im_(choose_internal_frames(m)), m_(im_.model), p_(p) {}
    System build();

  private:
    int new_column(Quantity q, int body, int comp, const std::string& label) {
        s_.cols.push_back({q, body, comp, label});
        return s_.n() - 1;
    }
    int new_row(RowKind k, int body, int comp, const std::string& label) {
        s_.rows.push_back({k, body, comp, label});
        s_.entries.emplace_back();
        s_.b.push_back(s_.prog.zero());
        s_.soft.push_back(false);
        s_.variance.push_back(0.0);
        s_.b_input.emplace_back();
        return static_cast<int>(s_.rows.size()) - 1;
    }
    void put(int row, int col, Id v) {
        if (v == s_.prog.zero()) return;
        auto& e = s_.entries[row];
        auto it = e.find(col);
        Id now = it == e.end() ? v : s_.prog.add(it->second, v);
        if (now == s_.prog.zero()) e.erase(col);
        else e[col] = now;
    }
    void add_b(int row, Id v) { s_.b[row] = s_.prog.add(s_.b[row], v); }
    /// Adds coef * input(slot) to b, and records the coefficient (System::b_input).
    void add_b_input(int row, int slot, double coef) {
        if (coef == 0) return;
        add_b(row, s_.prog.mul(s_.prog.constant(coef), s_.prog.input(ir::Source::In, slot)));
        s_.b_input[row].push_back({slot, coef});
    }
    void kinematics();
    void columns();
    void motion_rows(int i);
    void force_rows(int i);
    void mimic_rows(int i);
    void sensor_rows();
    template <class Row> void ft_parent_rows(int si, Row measurement_row);
    void slots();
    void outputs();
    void responses();
    /// Constant 6x6 matrix (row-major) of a linear map on 6-vectors, from its action on unit vectors.
    template <class F> std::array<std::array<double, 6>, 6> matrix_of(F apply_to) const;
    V6 gravity_in_body(int i);  ///< X_{i<-0} a_g (the gravity acceleration in body i's frame)
    Id wrench_input(int i, int k);

    /// An external wrench (an input or unknown) on a body's own link or on a link merged into it.
    struct Site {
        int body = -1;
        std::string link;
        bool own = true;  ///< the body's own link (Problem::wrench), else Problem::link_wrenches
        Xform<double> X_link_body = identity_xform<double>();
        WrenchMode mode = WrenchMode::Input;
        const Sensor* contact = nullptr;  ///< Unknown: the contact sensor on the link, if any
        std::vector<int> in{};            ///< Input: input slots of [n f] (link frame, link origin)
        std::vector<int> w{};             ///< Unknown: columns (-1: a component known to be zero)
        Xform<double> X_w_body = identity_xform<double>();  ///< Unknown: the frame of w (the contact sensor's, else the link's)
        std::array<std::array<double, 6>, 6> G{};  ///< Unknown: w -> f^x (internal frame)
    };
    std::vector<Site> sites_;  // by body: its own link first, then merged links by name
    const Site* own_site(int i, WrenchMode mode) const {
        for (const Site& st : sites_)
            if (st.body == i && st.own && st.mode == mode) return &st;
        return nullptr;
    }
    std::vector<V6> gravity_;
    std::vector<bool> gravity_done_;
    std::vector<std::vector<int>> qdd_in_, tau_in_;  // per body: input index of a known qdd / tau
    int n_known_inputs_ = 0;      // joint quantities and wrenches; the measurements follow
    std::vector<Slot> meas_in_;   // measurement input slots, in row order

    InternalModel im_;  ///< the robot in internal (DH-like) frames
    const Model& m_;
    const Problem& p_;
    System s_;
    std::vector<std::vector<Factor>> factors_;
    std::vector<V6> c_, pv_;
};

void Builder::kinematics() {
    ir::Program& P = s_.prog;
    const int nb = m_.num_bodies();
    factors_.resize(nb), c_.resize(nb), pv_.resize(nb), s_.velocity.resize(nb);
    std::vector<V6> v(nb);
    for (int i = 0; i < nb; ++i) {
        const Body& b = m_.bodies[i];
        const Body* master = b.is_mimic() ? &m_.bodies[b.mimic] : nullptr;
        factors_[i] = body_factors(P, b, im_.frames[i], master);
        V6 vj;
        vj.fill(P.zero());
        for (int k = 0; k < b.nv(); ++k) {
            V6 sk = subspace_column(P, b, k);
            Id qd = master ? P.mul(cst(P, b.multiplier), P.input(ir::Source::Qd, master->v_index))
                           : P.input(ir::Source::Qd, b.v_index + k);
            for (int r = 0; r < 6; ++r) vj[r] = P.add(vj[r], P.mul(sk[r], qd));
        }
        V6 vp;
        vp.fill(P.zero());
        if (b.parent >= 0) {
            vp = v[b.parent];
            for (const Factor& f : factors_[i]) vp = apply_motion(P, f, vp);
        }
        v[i] = add6(P, vp, vj);
        c_[i] = cross_motion(P, v[i], vj);
        pv_[i] = velocity_product_force(P, b.I, v[i]);
        s_.velocity[i].assign(v[i].begin(), v[i].end());
    }
}

template <class F> std::array<std::array<double, 6>, 6> Builder::matrix_of(F apply_to) const {
    std::array<std::array<double, 6>, 6> M{};
    for (int j = 0; j < 6; ++j) {
        SVec<double> e = zero6<double>();
        (j < 3 ? e.w : e.l)[j % 3] = 1;
        SVec<double> c = apply_to(e);
        for (int i = 0; i < 6; ++i) M[i][j] = snap_unit(i < 3 ? c.w[i] : c.l[i - 3], 1e-15);
    }
    return M;
}

bool knows_qdd(JointKnown k) { return k == JointKnown::Qdd || k == JointKnown::Both; }
bool knows_tau(JointKnown k) { return k == JointKnown::Tau || k == JointKnown::Both; }

void Builder::columns() {
    const int nb = m_.num_bodies();
    s_.blocks.resize(nb);
    int next_in = 0;
    qdd_in_.resize(nb), tau_in_.resize(nb);
    for (int i = 0; i < nb; ++i) {  // known joint quantities first, in velocity-slot order
        const Body& b = m_.bodies[i];
        if (b.is_mimic()) continue;  // its qdd follows its master's; its torque is part of the master's
        for (int k = 0; k < b.nv(); ++k) {
            if (knows_qdd(p_.joint[i])) qdd_in_[i].push_back(next_in++);
            if (knows_tau(p_.joint[i])) tau_in_[i].push_back(next_in++);
        }
    }
    for (int i = 0; i < nb; ++i) {  // the external wrenches: each body's own link, then the links merged into it
        if (p_.wrench[i] != WrenchMode::Zero) sites_.push_back({i, m_.bodies[i].name, true, identity_xform<double>(), p_.wrench[i]});
        for (const LinkWrench& lw : p_.link_wrenches)
            if (lw.body == i && lw.mode != WrenchMode::Zero) sites_.push_back({i, lw.link, false, lw.X_link_body, lw.mode});
    }
    for (Site& st : sites_)
        if (st.mode == WrenchMode::Input)
            for (int k = 0; k < 6; ++k) st.in.push_back(next_in++);
    n_known_inputs_ = next_in;
    s_.classical = p_.classical();
    for (int i = 0; i < nb; ++i) {
        const Body& b = m_.bodies[i];
        BodyBlock& B = s_.blocks[i];
        const std::string& L = b.name;
        for (int k = 0; k < 6; ++k)
            B.a.push_back(new_column(Quantity::LinkAcceleration, i, k, fmt::format("a[{}].{}", L, component_name(Quantity::LinkAcceleration, k))));
        for (int k = 0; k < 6; ++k)
            B.f.push_back(new_column(Quantity::JointWrench, i, k, fmt::format("f[{}].{}", L, component_name(Quantity::JointWrench, k))));
        for (int k = 0; k < b.nv(); ++k) {
            const std::string dof = b.nv() > 1 ? fmt::format(".{}", k) : std::string();
            if (!knows_qdd(p_.joint[i])) B.qdd.push_back(new_column(Quantity::JointAcceleration, i, k, fmt::format("qdd[{}]{}", b.joint_name, dof)));
            if (!knows_tau(p_.joint[i]) && !b.is_mimic()) B.tau.push_back(new_column(Quantity::JointTorque, i, k, fmt::format("tau[{}]{}", b.joint_name, dof)));
        }
        B.mimic = b.is_mimic();
        B.joint_is_qdd = p_.joint[i] == JointKnown::Tau || (B.mimic && !B.qdd.empty());
        B.joint = B.joint_is_qdd ? B.qdd : B.tau;
        for (Site& st : sites_) {
            if (st.body != i || st.mode != WrenchMode::Unknown) continue;
            // f^x = X^T w with w in the frame of a contact sensor on the link (else the link's), then
            // into the internal frame; components known to be zero get no column.
            st.X_w_body = st.X_link_body;
            for (const Sensor& sn : p_.sensors)
                if (sn.type == SensorType::ContactWrench && sn.link == st.link) st.contact = &sn, st.X_w_body = sn.X_sensor_body;
            const Sensor* cs = st.contact;
            const Xform<double> T = im_.frames[i].T;
            st.G = matrix_of([&](const SVec<double>& w) { return nelu::apply_force(T, apply_transpose(st.X_w_body, w)); });
            for (int k = 0; k < 6; ++k) {
                const bool zero = cs && std::find(cs->zero_components.begin(), cs->zero_components.end(), k) != cs->zero_components.end();
                st.w.push_back(zero ? -1 : new_column(Quantity::ExternalWrench, i, k, fmt::format("f^x[{}].{}{}", st.link, component_name(Quantity::JointWrench, k),
                                                                                                    cs ? fmt::format(" ({} frame)", cs->name) : std::string())));
            }
            if (st.own) B.w = st.w;
        }
        const int m = static_cast<int>(factors_[i].size());
        if (b.parent >= 0)
            for (int step = 1; step < m; ++step) {
                std::vector<int> y, z;
                for (int k = 0; k < 6; ++k) {
                    y.push_back(new_column(Quantity::Auxiliary, i, k, fmt::format("y{}[{}].{}", step, L, component_name(Quantity::LinkAcceleration, k))));
                    z.push_back(new_column(Quantity::Auxiliary, i, k, fmt::format("z{}[{}].{}", step, L, component_name(Quantity::JointWrench, k))));
                }
                B.y.push_back(y), B.z.push_back(z);
            }
    }
}

/// (3a) and the motion auxiliaries of body i.
void Builder::motion_rows(int i) {
    ir::Program& P = s_.prog;
    const Body& b = m_.bodies[i];
    BodyBlock& B = s_.blocks[i];
    const auto& F = factors_[i];
    const std::string& L = b.name;
    for (int k = 0; k < 6; ++k)
        B.row_a.push_back(new_row(RowKind::Acceleration, i, k, fmt::format("(3a) {} {}", L, component_name(Quantity::LinkAcceleration, k))));
    for (int k = 0; k < 6; ++k) put(B.row_a[k], B.a[k], P.neg(P.one()));
    // S qdd: unknown column or known input
    for (int d = 0; d < b.nv(); ++d) {
        V6 sk = subspace_column(P, b, d);
        for (int k = 0; k < 6; ++k) {
            if (!B.qdd.empty()) put(B.row_a[k], B.qdd[d], sk[k]);
            else if (sk[k] == P.zero()) continue;
            else if (b.is_mimic()) add_b_input(B.row_a[k], qdd_in_[b.mimic][0], b.multiplier * P.value(sk[k]));  // known: mult qdd_master
            else add_b_input(B.row_a[k], qdd_in_[i][d], P.value(sk[k]));
        }
    }
    for (int k = 0; k < 6; ++k) add_b(B.row_a[k], c_[i][k]);
    if (b.parent < 0) {  // X_i a_0 with a_0 = -a_g, a known vector
        V6 a0;
        for (int k = 0; k < 6; ++k) a0[k] = cst(P, -p_.gravity[k]);
        for (const Factor& f : F) a0 = apply_motion(P, f, a0);
        for (int k = 0; k < 6; ++k) add_b(B.row_a[k], a0[k]);
        return;
    }
    // y_1 = F_0 a_p, y_s = F_{s-1} y_{s-1}, a_i = F_{m-1} y_{m-1} + ...  (F in motion order)
    const int m = static_cast<int>(F.size());
    std::vector<int> in = s_.blocks[b.parent].a;
    for (int step = 0; step < m; ++step) {
        M6 M = factor_matrix(P, F[step]);
        std::vector<int> out_cols, out_rows;
        if (step + 1 < m) {
            out_cols = B.y[step];
            std::vector<int> rows;
            for (int k = 0; k < 6; ++k) {
                rows.push_back(new_row(RowKind::MotionAux, i, k, fmt::format("(aux) y{} {} {}", step + 1, L, component_name(Quantity::LinkAcceleration, k))));
                put(rows[k], out_cols[k], P.neg(P.one()));
            }
            B.row_y.push_back(rows);
            out_rows = rows;
        } else {
            out_rows = B.row_a;
        }
        for (int r = 0; r < 6; ++r)
            for (int c = 0; c < 6; ++c) put(out_rows[r], in[c], M[r][c]);
        in = out_cols;
    }
    if (m == 0)  // identity transform
        for (int k = 0; k < 6; ++k) put(B.row_a[k], s_.blocks[b.parent].a[k], P.one());
}

/// (3f), (3tau) and the force auxiliaries that carry f_i to the parent's (3f).
void Builder::force_rows(int i) {
    ir::Program& P = s_.prog;
    const Body& b = m_.bodies[i];
    BodyBlock& B = s_.blocks[i];
    const std::string& L = b.name;
    M6 I = inertia_matrix(P, b.I);
    // the input wrenches in the internal frame: X* f^x with X = T X_{body<-link} (link frame -> internal frame)
    std::vector<std::pair<const Site*, V6>> inputs;
    for (const Site& st : sites_) {
        if (st.body != i || st.mode != WrenchMode::Input) continue;
        V6 fx;
        for (int k = 0; k < 6; ++k) fx[k] = P.input(ir::Source::In, st.in[k]);
        const Xform<double> X = compose(im_.frames[i].T, inverse(st.X_link_body));
        if (im_.frames[i].moved || !st.own) fx = apply_force(P, X, fx);
        inputs.push_back({&st, fx});
    }
    for (int k = 0; k < 6; ++k) {
        int r = new_row(RowKind::Force, i, k, fmt::format("(3f) {} {}", L, component_name(Quantity::JointWrench, k)));
        B.row_f.push_back(r);
        for (int c = 0; c < 6; ++c) put(r, B.a[c], I[k][c]);
        put(r, B.f[k], P.neg(P.one()));
        add_b(r, pv_[i][k]);
        for (const auto& [st, fx] : inputs) {
            add_b(r, P.neg(fx[k]));
            const Xform<double> X = compose(im_.frames[i].T, inverse(st->X_link_body));
            const auto Ts = matrix_of([&](const SVec<double>& f) { return nelu::apply_force(X, f); });
            for (int j = 0; j < 6; ++j)
                if (Ts[k][j] != 0) s_.b_input[r].push_back({st->in[j], -Ts[k][j]});
        }
        for (const Site& st : sites_)
            if (st.body == i && st.mode == WrenchMode::Unknown)
                for (int c = 0; c < 6; ++c)
                    if (st.w[c] >= 0 && st.G[k][c] != 0) put(r, st.w[c], cst(P, -st.G[k][c]));
    }
    if (b.is_mimic()) return;  // no (3tau) row of its own: see mimic_rows
    for (int d = 0; d < b.nv(); ++d) {
        int r = new_row(RowKind::Torque, i, d, fmt::format("(3tau) {}{}", b.joint_name, b.nv() > 1 ? fmt::format(" {}", d) : std::string()));
        B.row_tau.push_back(r);
        V6 sk = subspace_column(P, b, d);
        for (int k = 0; k < 6; ++k) put(r, B.f[k], sk[k]);
        if (!B.tau.empty()) put(r, B.tau[d], P.neg(P.one()));
        else add_b_input(r, tau_in_[i][d], -1.0);
    }
}

/// Mimic joint i of master M with multiplier k: the master's (3tau) row becomes
/// S_M^T f_M + sum_i k_i S_i^T f_i - tau_M = 0 (tau_M the generalized force of the independent
/// coordinate, G^T tau), and when qdd_i is unknown the coupling row qdd_i - k qdd_M = 0 joins
/// (when qdd_M is known, qdd_i went into b with it). The coupling row takes the place of the mimic's
/// (3tau) row in the body's block, so the tree orders pair it with qdd_i.
void Builder::mimic_rows(int i) {
    ir::Program& P = s_.prog;
    const Body& b = m_.bodies[i];
    BodyBlock& B = s_.blocks[i];
    const BodyBlock& M = s_.blocks[b.mimic];
    V6 sk = subspace_column(P, b, 0);
    for (int k = 0; k < 6; ++k)
        if (sk[k] != P.zero()) put(M.row_tau[0], B.f[k], P.mul(cst(P, b.multiplier), sk[k]));
    if (B.qdd.empty()) return;
    int r = new_row(RowKind::Coupling, i, 0, fmt::format("(mimic) {} = {} {}", b.joint_name, fmt::format("{:g}", b.multiplier), m_.bodies[b.mimic].joint_name));
    put(r, B.qdd[0], P.one());
    if (!M.qdd.empty()) put(r, M.qdd[0], cst(P, -b.multiplier));
    else add_b_input(r, qdd_in_[b.mimic][0], -b.multiplier);  // not reached: a mimic knows what its master knows
    B.row_tau = {r};
}

V6 Builder::gravity_in_body(int i) {
    if (gravity_done_.empty()) gravity_done_.assign(m_.num_bodies(), false), gravity_.resize(m_.num_bodies());
    if (gravity_done_[i]) return gravity_[i];
    ir::Program& P = s_.prog;
    V6 g;
    const int parent = m_.bodies[i].parent;
    if (parent >= 0) g = gravity_in_body(parent);
    else for (int k = 0; k < 6; ++k) g[k] = cst(P, p_.gravity[k]);
    for (const Factor& f : factors_[i]) g = apply_motion(P, f, g);
    gravity_done_[i] = true;
    return gravity_[i] = g;
}

/// The rows of an F/T sensor in its joint's parent frame: sign X_S^* T_p^T (X_i^T f_i). Below a
/// body, X_i^T f_i = F_0^T z_{m-1} is the wrench as it enters the parent's (3f) (the force
/// auxiliaries carry the other factors, the joint's among them, so the entries are constants unless
/// the transform is the joint alone); at the root, X_i^T = F_0^T ... F_{m-1}^T on f_i.
template <class Row> void Builder::ft_parent_rows(int si, Row measurement_row) {
    ir::Program& P = s_.prog;
    const Sensor& sn = p_.sensors[si];
    const BodyBlock& B = s_.blocks[sn.body];
    const int parent = m_.bodies[sn.body].parent;
    const Xform<double> Tp = parent >= 0 ? im_.frames[parent].T : identity_xform<double>();
    const auto K = matrix_of([&](const SVec<double>& f) { return sn.sign * nelu::apply_force(sn.X_sensor_body, apply_transpose(Tp, f)); });
    const auto& F = factors_[sn.body];
    const bool aux = parent >= 0 && F.size() >= 2;
    const std::vector<int>& in = aux ? B.z.back() : B.f;
    M6 X;  // the motion transform whose transpose takes `in` to the parent frame: F_0, or F_{m-1} ... F_0
    for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 6; ++c) X[r][c] = r == c ? P.one() : P.zero();
    for (std::size_t step = 0; step < (aux ? 1 : F.size()); ++step) {
        const M6 M = factor_matrix(P, F[step]), Y = X;
        for (int r = 0; r < 6; ++r)
            for (int c = 0; c < 6; ++c) X[r][c] = P.dot({M[r][0], M[r][1], M[r][2], M[r][3], M[r][4], M[r][5]},
                                                        {Y[0][c], Y[1][c], Y[2][c], Y[3][c], Y[4][c], Y[5][c]});
    }
    for (int c : sn.components) {
        int r = measurement_row(c, component_name(Quantity::JointWrench, c));
        for (int j = 0; j < 6; ++j) {  // (K X^T)[c][j]
            std::vector<Id> k, x;
            for (int l = 0; l < 6; ++l)
                if (K[c][l] != 0) k.push_back(cst(P, K[c][l])), x.push_back(X[j][l]);
            put(r, in[j], P.dot(k, x));
        }
    }
}

/// Measurement rows (one per measured component, reading y an input: row = model(d) - y) and the
/// exact conditions of known link accelerations.
void Builder::sensor_rows() {
    ir::Program& P = s_.prog;
    for (int si = 0; si < static_cast<int>(p_.sensors.size()); ++si) {
        const Sensor& sn = p_.sensors[si];
        const int i = sn.body;
        const BodyBlock& B = s_.blocks[i];
        const Xform<double> T = im_.frames[i].T, Tinv = inverse(T);
        static const char* point[3] = {"x", "y", "z"};
        auto measurement_row = [&](int c, const char* comp_name) {
            int r = new_row(RowKind::Measurement, i, c, fmt::format("(meas) {}.{}", sn.name, comp_name));
            s_.soft[r] = true;
            const auto at = std::find(sn.components.begin(), sn.components.end(), c) - sn.components.begin();
            s_.variance[r] = sn.variance[static_cast<std::size_t>(at)];
            const int slot = n_known_inputs_ + static_cast<int>(meas_in_.size());
            meas_in_.push_back({Quantity::Measurement, i, c, -1, {}, -1, si});
            add_b_input(r, slot, -1.0);
            return r;
        };
        switch (sn.type) {
            case SensorType::ContactWrench: {
                const auto site = std::find_if(sites_.begin(), sites_.end(), [&](const Site& st) { return st.contact == &sn; });
                for (int c : sn.components) {
                    int r = measurement_row(c, component_name(Quantity::JointWrench, c));
                    put(r, site->w[c], P.one());
                }
                break;
            }
            case SensorType::ForceTorque: {
                if (sn.frame_is_parent) {
                    ft_parent_rows(si, measurement_row);
                    break;
                }
                // sign * X_S^* T^T f_i: f_i (internal frame) in the link frame, then in the sensor's
                const auto K = matrix_of([&](const SVec<double>& f) { return sn.sign * nelu::apply_force(sn.X_sensor_body, apply_transpose(T, f)); });
                for (int c : sn.components) {
                    int r = measurement_row(c, component_name(Quantity::JointWrench, c));
                    for (int j = 0; j < 6; ++j)
                        if (K[c][j] != 0) put(r, B.f[j], cst(P, K[c][j]));
                }
                break;
            }
            case SensorType::Accelerometer: {
                // E (a_lin + wdot x r + w x v_O + w x (w x r)), a and v in the link frame (T^-1 of internal)
                const Mat3<double>& E = sn.X_sensor_body.E;
                const Vec3<double>& rp = sn.X_sensor_body.r;
                const auto A = matrix_of([&](const SVec<double>& a) {
                    SVec<double> al = apply(Tinv, a);
                    return SVec<double>{zero3<double>(), E * (al.l + cross(al.w, rp))};
                });
                V6 vl;
                {
                    V6 v;
                    for (int k = 0; k < 6; ++k) v[k] = s_.velocity[i][k];
                    const auto Ti = matrix_of([&](const SVec<double>& x) { return apply(Tinv, x); });
                    for (int r = 0; r < 6; ++r) {
                        std::vector<Id> c, x;
                        for (int k = 0; k < 6; ++k)
                            if (Ti[r][k] != 0) c.push_back(cst(P, Ti[r][k])), x.push_back(v[k]);
                        vl[r] = P.dot(c, x);
                    }
                }
                Id r3[3] = {cst(P, rp[0]), cst(P, rp[1]), cst(P, rp[2])};
                auto wr = cross3(P, vl.data(), r3);
                auto wv = cross3(P, vl.data(), vl.data() + 3);
                auto wwr = cross3(P, vl.data(), wr.data());
                Id bias_link[3];
                for (int k = 0; k < 3; ++k) bias_link[k] = P.add(wv[k], wwr[k]);
                for (int c : sn.components) {
                    int r = measurement_row(c, point[c]);
                    for (int j = 0; j < 6; ++j)
                        if (A[3 + c][j] != 0) put(r, B.a[j], cst(P, A[3 + c][j]));
                    add_b(r, P.dot({cst(P, E(c, 0)), cst(P, E(c, 1)), cst(P, E(c, 2))}, {bias_link[0], bias_link[1], bias_link[2]}));
                }
                break;
            }
            case SensorType::JointTorque:
            case SensorType::JointAcceleration: {
                const std::vector<int>& cols = sn.type == SensorType::JointTorque ? B.tau : B.qdd;
                for (int c : sn.components) {
                    int r = measurement_row(c, m_.bodies[i].nv() > 1 ? component_name(Quantity::LinkAcceleration, c) : "value");
                    put(r, cols[c], P.one());
                }
                break;
            }
            case SensorType::LinkAcceleration: {
                // T^-1 a_i + X_{i<-0} a_g = value (the true spatial acceleration, link frame)
                const auto Ti = matrix_of([&](const SVec<double>& x) { return apply(Tinv, x); });
                V6 g = gravity_in_body(i);
                const auto Tg = Ti;
                for (int c = 0; c < 6; ++c) {
                    int r = new_row(RowKind::Condition, i, c, fmt::format("(known) a[{}].{}", m_.bodies[i].name, component_name(Quantity::LinkAcceleration, c)));
                    for (int j = 0; j < 6; ++j)
                        if (Ti[c][j] != 0) put(r, B.a[j], cst(P, Ti[c][j]));
                    std::vector<Id> cs, xs;
                    for (int j = 0; j < 6; ++j)
                        if (Tg[c][j] != 0) cs.push_back(cst(P, Tg[c][j])), xs.push_back(g[j]);
                    add_b(r, P.sub(P.dot(cs, xs), cst(P, c < 3 ? sn.value.w[c] : sn.value.l[c - 3])));
                }
                break;
            }
        }
    }
}

void Builder::slots() {
    std::vector<Slot> in;
    for (int i = 0; i < m_.num_bodies(); ++i)
        for (int d = 0; d < (m_.bodies[i].is_mimic() ? 0 : m_.bodies[i].nv()); ++d) {
            if (knows_qdd(p_.joint[i])) in.push_back({Quantity::JointAcceleration, i, d, -1, {}, -1, -1});
            if (knows_tau(p_.joint[i])) in.push_back({Quantity::JointTorque, i, d, -1, {}, -1, -1});
        }
    for (const Site& st : sites_)
        if (st.mode == WrenchMode::Input)
            for (int k = 0; k < 6; ++k) {
                in.push_back({Quantity::ExternalWrench, st.body, k, -1, {}, -1, -1});
                if (!st.own) in.back().link = st.link;
            }
    s_.in = in;
    s_.in.insert(s_.in.end(), meas_in_.begin(), meas_in_.end());  // numbered after the known quantities
}

/// osim and iwim: the factorization of forward dynamics is shared by several right-hand sides, the
/// responses to unit inputs (b is affine in the inputs, System::b_input). The function then takes
/// no inputs; iwim's main right-hand side is b with the inputs at zero (the free acceleration).
void Builder::responses() {
    ir::Program& P = s_.prog;
    const int nb = m_.num_bodies();
    s_.b = ir::zero_inputs(P, s_.b);
    // one input column: weights on input slots -> a right-hand side
    auto column = [&](const std::map<int, double>& weight) {
        std::vector<Id> r(s_.m(), P.zero());
        for (int row = 0; row < s_.m(); ++row) {
            double v = 0;
            for (const auto& [slot, coef] : s_.b_input[row]) {
                auto it = weight.find(slot);
                if (it != weight.end()) v += coef * it->second;
            }
            if (v != 0) r[row] = cst(P, v);
        }
        s_.rhs.push_back(r);
        return static_cast<int>(s_.rhs.size());  // its Slot::rhs index
    };
    auto point_wrench = [&](const PointSpec& ps, int comp) {  // unit wrench component at the point -> f^x slots
        std::map<int, double> w;
        SVec<double> e = zero6<double>();
        (comp < 3 ? e.w : e.l)[comp % 3] = 1;
        SVec<double> f = apply_transpose(ps.X_point_body, e);
        for (int j = 0; j < 6; ++j) {
            const double v = snap_unit(j < 3 ? f.w[j] : f.l[j - 3], 1e-15);
            if (v != 0) w[own_site(ps.body, WrenchMode::Input)->in[j]] = v;
        }
        return w;
    };
    s_.out.clear();
    if (p_.kind == "iwim") {
        std::vector<int> rhs_of;
        for (int v : p_.actuated)
            for (int i = 0; i < nb; ++i)
                if (m_.bodies[i].nv() > 0 && v >= m_.bodies[i].v_index && v < m_.bodies[i].v_index + m_.bodies[i].nv())
                    rhs_of.push_back(column({{tau_in_[i][v - m_.bodies[i].v_index], 1.0}}));
        for (const PointSpec& ps : p_.points)
            for (int c = 3; c < 6; ++c) rhs_of.push_back(column(point_wrench(ps, c)));
        for (int k = -1; k < static_cast<int>(rhs_of.size()); ++k)  // qdd_0, then the columns of M^-1 B
            for (int i = 0; i < nb; ++i)
                for (std::size_t d = 0; d < s_.blocks[i].qdd.size(); ++d) {
                    Slot s{Quantity::JointAcceleration, i, static_cast<int>(d), s_.blocks[i].qdd[d], {}, -1, -1};
                    s.rhs = k < 0 ? 0 : rhs_of[k], s.column_of_b = k;
                    s_.out.push_back(s);
                }
    } else {  // osim: Lambda^-1, row by row: the point accelerations' response to unit point wrenches
        std::vector<std::pair<int, int>> comps;  // (point, component)
        for (int i = 0; i < static_cast<int>(p_.points.size()); ++i)
            for (int c = p_.points[i].dof == 6 ? 0 : 3; c < 6; ++c) comps.push_back({i, c});
        std::vector<int> rhs_of;
        for (const auto& [i, c] : comps) rhs_of.push_back(column(point_wrench(p_.points[i], c)));
        for (const auto& [i, c] : comps) {
            const PointSpec& ps = p_.points[i];
            const Xform<double> Tinv = inverse(im_.frames[ps.body].T);
            const auto M = matrix_of([&](const SVec<double>& x) { return apply(ps.X_point_body, apply(Tinv, x)); });
            for (std::size_t k = 0; k < comps.size(); ++k) {
                Slot s{Quantity::LinkAcceleration, ps.body, c, -1, {}, -1, -1};
                for (int j = 0; j < 6; ++j)
                    if (M[c][j] != 0) s.terms.push_back({s_.blocks[ps.body].a[j], cst(P, M[c][j])});
                s.rhs = rhs_of[k], s.column_of_b = static_cast<int>(k);
                s_.out.push_back(s);
            }
        }
        if (p_.lambda) {  // Lambda row by row: the point wrench that gives a unit point acceleration
            s_.lambda_size = static_cast<int>(comps.size());
            for (const auto& [i, c] : comps)
                for (std::size_t k = 0; k < comps.size(); ++k) {
                    Slot s{Quantity::ExternalWrench, p_.points[i].body, c, -1, {}, -1, -1};
                    s.column_of_b = static_cast<int>(k), s.lambda = true;
                    s_.out.push_back(s);
                }
        }
    }
    s_.in.clear();
}

void Builder::outputs() {
    ir::Program& P = s_.prog;
    const Outputs& o = p_.outputs;
    const int nb = m_.num_bodies();
    for (int i = 0; i < nb; ++i) {
        const BodyBlock& B = s_.blocks[i];
        if (B.mimic) continue;  // only the independent coordinates are outputs
        if (o.joint_accelerations)
            for (std::size_t d = 0; d < B.qdd.size(); ++d) s_.out.push_back({Quantity::JointAcceleration, i, static_cast<int>(d), B.qdd[d], {}, -1, -1});
        if (o.joint_torques)
            for (std::size_t d = 0; d < B.tau.size(); ++d) s_.out.push_back({Quantity::JointTorque, i, static_cast<int>(d), B.tau[d], {}, -1, -1});
    }
    auto combination = [&](Quantity q, int i, const std::array<std::array<double, 6>, 6>& M, const std::vector<int>& cols, const V6* bias) {
        for (int k = 0; k < 6; ++k) {
            Slot s{q, i, k, -1, {}, -1, -1};
            for (int j = 0; j < 6; ++j)
                if (cols[j] >= 0 && M[k][j] != 0) s.terms.push_back({cols[j], cst(P, M[k][j])});
            if (bias) s.bias = (*bias)[k];
            s_.out.push_back(s);
        }
    };
    if (o.contact_wrenches)  // f^x in the link frame at the link origin: X_{w<-link}^T w
        for (const Site& st : sites_) {
            if (st.mode != WrenchMode::Unknown) continue;
            const Xform<double> X = compose(st.X_w_body, inverse(st.X_link_body));
            combination(Quantity::ExternalWrench, st.body, matrix_of([&](const SVec<double>& w) { return apply_transpose(X, w); }), st.w, nullptr);
            if (!st.own)
                for (auto s = s_.out.end() - 6; s != s_.out.end(); ++s) s->link = st.link;
        }
    if (o.link_accelerations)  // T^-1 a_i + X_{i<-0} a_g: the true spatial acceleration, link frame
        for (int i = 0; i < nb; ++i) {
            const Xform<double> Tinv = inverse(im_.frames[i].T);
            const auto Ti = matrix_of([&](const SVec<double>& x) { return apply(Tinv, x); });
            V6 g = gravity_in_body(i), gl;
            for (int k = 0; k < 6; ++k) {
                std::vector<Id> cs, xs;
                for (int j = 0; j < 6; ++j)
                    if (Ti[k][j] != 0) cs.push_back(cst(P, Ti[k][j])), xs.push_back(g[j]);
                gl[k] = P.dot(cs, xs);
            }
            combination(Quantity::LinkAcceleration, i, Ti, s_.blocks[i].a, &gl);
        }
    if (o.joint_wrenches)  // T^T f_i: the wrench on body i through its joint, link frame
        for (int i = 0; i < nb; ++i) {
            const Xform<double> T = im_.frames[i].T;
            combination(Quantity::JointWrench, i, matrix_of([&](const SVec<double>& f) { return apply_transpose(T, f); }), s_.blocks[i].f, nullptr);
        }
}

System Builder::build() {
    kinematics();
    columns();
    for (int i = 0; i < m_.num_bodies(); ++i) motion_rows(i);
    for (int i = 0; i < m_.num_bodies(); ++i) force_rows(i);
    for (int i = 0; i < m_.num_bodies(); ++i)
        if (m_.bodies[i].is_mimic()) mimic_rows(i);
    // f_j reaches its parent's (3f) through X_j^T = F_0^T ... F_{m-1}^T (force aux z)
    ir::Program& P = s_.prog;
    for (int j = 0; j < m_.num_bodies(); ++j) {
        const Body& b = m_.bodies[j];
        if (b.parent < 0) continue;
        BodyBlock& B = s_.blocks[j];
        const auto& F = factors_[j];
        const int m = static_cast<int>(F.size());
        std::vector<int> in = B.f;
        for (int step = m - 1; step >= 0; --step) {
            M6 M = factor_matrix(P, F[step]);
            std::vector<int> out_rows;
            std::vector<int> out_cols;
            if (step > 0) {
                const int zi = m - 1 - step;  // z_1 = F_{m-1}^T f_j, ...
                out_cols = B.z[zi];
                for (int k = 0; k < 6; ++k) {
                    out_rows.push_back(new_row(RowKind::ForceAux, j, k, fmt::format("(aux) z{} {} {}", zi + 1, b.name, component_name(Quantity::JointWrench, k))));
                    put(out_rows[k], out_cols[k], P.neg(P.one()));
                }
                B.row_z.push_back(out_rows);
            } else {
                out_rows = s_.blocks[b.parent].row_f;
            }
            for (int r = 0; r < 6; ++r)
                for (int c = 0; c < 6; ++c) put(out_rows[r], in[c], M[c][r]);  // transpose
            in = out_cols;
        }
        if (m == 0)
            for (int k = 0; k < 6; ++k) put(s_.blocks[b.parent].row_f[k], B.f[k], P.one());
    }
    sensor_rows();
    slots();
    outputs();
    s_.kinematics.resize(m_.num_bodies());
    for (int i = 0; i < m_.num_bodies(); ++i) {
        const Body& b = m_.bodies[i];
        BodyKinematics& k = s_.kinematics[i];
        k.parent = b.parent, k.v_index = b.v_index, k.mimic = b.is_mimic();
        k.factors = factors_[i];
        k.I = b.I;
        for (int r = 0; r < 6; ++r) k.c[r] = c_[i][r];
        for (int d = 0; d < b.nv(); ++d) {
            k.S.push_back(subspace_column(P, b, d));
            k.qd.push_back(b.is_mimic() ? P.mul(cst(P, b.multiplier), P.input(ir::Source::Qd, m_.bodies[b.mimic].v_index))
                                        : P.input(ir::Source::Qd, b.v_index + d));
            k.qdd_input.push_back(s_.blocks[i].qdd.empty() && !b.is_mimic() ? qdd_in_[i][d] : -1);
        }
    }
    if (p_.response_kind()) responses();
    s_.allow_special_singularities = p_.allow_special_singularities;
    return std::move(s_);
}

}  // namespace

const char* quantity_name(Quantity q) {
    switch (q) {
        case Quantity::LinkAcceleration: return "link_acceleration";
        case Quantity::JointWrench: return "joint_wrench";
        case Quantity::JointTorque: return "joint_torque";
        case Quantity::ExternalWrench: return "external_wrench";
        case Quantity::JointAcceleration: return "joint_acceleration";
        case Quantity::Auxiliary: return "auxiliary";
        case Quantity::Measurement: return "measurement";
    }
    return "?";
}

const char* component_name(Quantity q, int comp) {
    static const char* force[6] = {"nx", "ny", "nz", "fx", "fy", "fz"};
    static const char* motion[6] = {"wx", "wy", "wz", "vx", "vy", "vz"};
    if (comp < 0 || comp > 5) return "?";
    return q == Quantity::LinkAcceleration ? motion[comp] : force[comp];
}

long System::nnz() const {
    long n = 0;
    for (const auto& r : entries) n += static_cast<long>(r.size());
    return n;
}

System run_system(const Model& model, const Problem& problem) { return Builder(model, problem).build(); }


}  // namespace nelu
