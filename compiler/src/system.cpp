// system.cpp: see system.hpp.
#include "system.hpp"

#include "diagnostics.hpp"
#include "frames.hpp"
#include "numeric.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace nelu {

std::array<std::array<ir::Id, 3>, 3> quaternion_rotation(ir::Program& P, ir::Id x, ir::Id y, ir::Id z, ir::Id w) {
    return quaternion_rotation(P, x, y, z, w, P.constant(2));
}

std::array<std::array<ir::Id, 3>, 3> quaternion_rotation(ir::Program& P, ir::Id x, ir::Id y, ir::Id z, ir::Id w, ir::Id two) {
    using ir::Id;
    const Id xx = P.mul(x, x), yy = P.mul(y, y), zz = P.mul(z, z), xy = P.mul(x, y), xz = P.mul(x, z),
             yz = P.mul(y, z), wx = P.mul(w, x), wy = P.mul(w, y), wz = P.mul(w, z);
    return {{{P.sub(P.one(), P.mul(two, P.add(yy, zz))), P.mul(two, P.sub(xy, wz)), P.mul(two, P.add(xz, wy))},
             {P.mul(two, P.add(xy, wz)), P.sub(P.one(), P.mul(two, P.add(xx, zz))), P.mul(two, P.sub(yz, wx))},
             {P.mul(two, P.sub(xz, wy)), P.mul(two, P.add(yz, wx)), P.sub(P.one(), P.mul(two, P.add(xx, yy)))}}};
}

namespace {

/// A point of a spec as it was given, each coordinate to the digits that tell it from any other
/// (shortest round-trip form): "[0, 0, 0.1]".
std::string point_text(const PointSpec& ps) { return fmt::format("[{}, {}, {}]", ps.xyz[0], ps.xyz[1], ps.xyz[2]); }

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

/// The constant 6x6 matrix (row-major) of a linear map on 6-vectors, from its action on unit vectors.
using Mat6d = std::array<std::array<double, 6>, 6>;
template <class F> Mat6d matrix_of(F apply_to) {
    Mat6d M{};
    for (int j = 0; j < 6; ++j) {
        SVec<double> e = zero6<double>();
        (j < 3 ? e.w : e.l)[j % 3] = 1;
        SVec<double> c = apply_to(e);
        for (int i = 0; i < 6; ++i) M[i][j] = snap_unit(i < 3 ? c.w[i] : c.l[i - 3], 1e-15);
    }
    return M;
}

/// sum_j row[j] x[j] over the nonzero constants of a row of such a matrix.
Id dot_constant(ir::Program& P, const std::array<double, 6>& row, const V6& x) {
    std::vector<Id> cs, xs;
    for (int j = 0; j < 6; ++j)
        if (row[j] != 0) cs.push_back(cst(P, row[j])), xs.push_back(x[j]);
    return P.dot(cs, xs);
}

// ---------------------------------------------------------------------------------------------
// Inputs

/// A linear form in the solver's inputs: its IR and its constant coefficients (slot, coefficient),
/// made together by one function (scaled_input, Builder::wrench_inputs, negated) so that they agree.
struct LinearForm {
    Id value;
    std::vector<std::pair<int, double>> coef;
};

/// coef * in[slot].
LinearForm scaled_input(ir::Program& P, int slot, double coef) {
    if (coef == 0) return {P.zero(), {}};
    return {P.mul(P.constant(coef), P.input(ir::Source::In, slot)), {{slot, coef}}};
}

LinearForm negated(ir::Program& P, LinearForm f) {
    f.value = P.neg(f.value);
    for (auto& term : f.coef) term.second = -term.second;
    return f;
}

bool knows_qdd(JointKnown k) { return k == JointKnown::Qdd || k == JointKnown::Both; }
bool knows_tau(JointKnown k) { return k == JointKnown::Tau || k == JointKnown::Both; }

/// A sensor whose reading is an input of the solver, fitted by one measurement row per listed
/// component; a known link acceleration is no reading but exact conditions.
bool is_read(const Sensor& sn) { return sn.type != SensorType::LinkAcceleration; }

/// An external wrench (an input or unknown) on a body's own link or on a link merged into it.
struct Site {
    int body = -1;
    std::string link;
    bool own = true;  ///< the body's own link (Problem::wrench), else Problem::link_wrenches
    Xform<double> X_link_body = identity_xform<double>();
    WrenchMode mode = WrenchMode::Input;
    const Sensor* contact = nullptr;  ///< Unknown: the contact sensor on the link, if any
    Xform<double> X_w_body = identity_xform<double>();  ///< Unknown: the frame of w (the contact sensor's, else the link's)
    Mat6d G{};                        ///< Unknown: w -> f^x (internal frame)
    std::vector<int> w{};             ///< Unknown: columns (-1: a component known to be zero)
};

/// The solver's input slots, numbered once here (System::in is `slots`) and only looked up
/// elsewhere: the known joint quantities in velocity-slot order (qdd before tau at each degree of
/// freedom; a mimic joint has none of its own), then the input wrenches site by site ([n f], link
/// frame), then each read sensor's components in the order it lists them, then the Baumgarte
/// references of the contacts that read one (x y z for a point, x y z qx qy qz qw for a 6-D contact).
struct InputLayout {
    std::vector<Slot> slots;
    std::vector<std::vector<int>> qdd, tau;  ///< per body and degree of freedom
    std::vector<std::vector<int>> wrench;    ///< per site: its 6 slots (none unless an input)
    std::vector<std::vector<int>> reading;   ///< per sensor and listed component (none unless read)
    std::vector<std::vector<int>> reference; ///< per contact: its reference's x y z [qx qy qz qw] (none unless it reads one)

    int add(Quantity q, int body, int comp) {
        slots.push_back({q, body, comp, -1, {}, -1, -1});
        return static_cast<int>(slots.size()) - 1;
    }
};

InputLayout input_layout(const Model& m, const Problem& p, const std::vector<Site>& sites) {
    InputLayout L;
    const int nb = m.num_bodies();
    L.qdd.resize(nb), L.tau.resize(nb);
    for (int i = 0; i < nb; ++i) {
        if (m.bodies[i].is_mimic()) continue;  // its qdd follows its master's; its torque is part of the master's
        for (int d = 0; d < m.bodies[i].nv(); ++d) {
            if (knows_qdd(p.joint[i])) L.qdd[i].push_back(L.add(Quantity::JointAcceleration, i, d));
            if (knows_tau(p.joint[i]) && !p.impulse()) L.tau[i].push_back(L.add(Quantity::JointTorque, i, d));  // impulse: zero
        }
    }
    for (const Site& st : sites) {
        L.wrench.emplace_back();
        if (st.mode != WrenchMode::Input) continue;
        for (int k = 0; k < 6; ++k) {
            L.wrench.back().push_back(L.add(Quantity::ExternalWrench, st.body, k));
            if (!st.own) L.slots.back().link = st.link;
        }
    }
    for (std::size_t si = 0; si < p.sensors.size(); ++si) {
        const Sensor& sn = p.sensors[si];
        L.reading.emplace_back();
        if (!is_read(sn)) continue;
        for (int c : sn.components) {
            L.reading.back().push_back(L.add(Quantity::Measurement, sn.body, c));
            L.slots.back().sensor = static_cast<int>(si);
        }
    }
    for (std::size_t ci = 0; ci < p.contacts.size(); ++ci) {
        L.reference.emplace_back();
        if (!p.contacts[ci].reads_reference()) continue;
        for (int k = 0; k < (p.contacts[ci].contact.type == ContactType::Point ? 3 : 7); ++k) {
            L.reference.back().push_back(L.add(Quantity::ContactReference, p.contacts[ci].contact.body, k));
            L.slots.back().contact = static_cast<int>(ci);
        }
    }
    return L;
}

// ---------------------------------------------------------------------------------------------
// Assembly

/// Builds the System in this order: the wrench sites and the input layout (at construction), the
/// kinematics (transform factors, velocities), the columns, the rows (3a) with their motion
/// auxiliaries, (3f) and (3tau), the mimic couplings, the force auxiliaries, the sensors' rows, the
/// outputs. Rows, columns and IR nodes are created in this order, which the generated code's
/// numbering follows.
class Builder {
  public:
    Builder(const Model& m, const Problem& p)
        : im_(choose_internal_frames(m)), m_(im_.model), p_(p), sites_(wrench_sites()), inputs_(input_layout(m_, p_, sites_)) {}
    System build();

  private:
    std::vector<Site> wrench_sites() const;
    int own_site(int i, WrenchMode mode) const;  ///< index into sites_

    int new_column(Quantity q, int body, int comp, const std::string& label) {
        s_.cols.push_back({q, body, comp, label});
        return s_.n() - 1;
    }
    int new_row(RowKind k, int body, int comp, const std::string& label) {
        s_.rows.push_back({k, body, comp, label});
        s_.entries.emplace_back();
        s_.b.value.push_back(s_.prog.zero());
        s_.b.constant.push_back(s_.prog.zero());
        s_.b.input.emplace_back();
        s_.soft.push_back(false);
        s_.variance.push_back(0.0);
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
    /// b grows only through these two (System::b): a part in q and qd alone, or a linear form in
    /// the inputs.
    void add_b(int row, Id part) {
        s_.b.value[row] = s_.prog.add(s_.b.value[row], part);
        s_.b.constant[row] = s_.prog.add(s_.b.constant[row], part);
    }
    void add_b(int row, const LinearForm& f) {
        s_.b.value[row] = s_.prog.add(s_.b.value[row], f.value);
        s_.b.input[row].insert(s_.b.input[row].end(), f.coef.begin(), f.coef.end());
    }
    /// A part that is not affine in the inputs (a 6-D contact's placement error, through the log of
    /// its reference's rotation): in b.value only (RightHandSide::affine).
    void add_b_nonlinear(int row, Id part) {
        s_.b.value[row] = s_.prog.add(s_.b.value[row], part);
        s_.b.affine = false;
    }

    void kinematics();
    void columns();
    void motion_rows(int i);
    void force_rows(int i);
    void mimic_rows(int i);
    enum class Side { Motion, Force };
    void factor_chain(int i, Side side);
    std::array<LinearForm, 6> wrench_inputs(int site);

    void sensor_rows();
    int measurement_row(int si, int c, const char* comp_name);
    void contact_wrench_rows(int si);
    void force_torque_rows(int si);
    void force_torque_parent_rows(int si);
    void accelerometer_rows(int si);
    void joint_sensor_rows(int si);
    void known_acceleration_rows(int si);

    void contact_columns();
    void contact_rows(int ci);
    void contact_forces(int i, int row, int k);

    void outputs();
    void responses();

    /// Body i's internal frame in the world: E maps world coordinates to internal ones, p is its
    /// origin in world coordinates (IR of its transform factors, memoized).
    struct Pose {
        std::array<std::array<Id, 3>, 3> E;
        std::array<Id, 3> p;
    };
    const Pose& world_pose(int i);
    /// Contact ci's frame: Q maps body vectors (internal frame) to contact-frame vectors.
    Mat6d contact_from_internal(int ci) const;

    Mat6d link_from_internal(int i) const;  ///< T_i^-1 on motion vectors: body i's internal frame -> its link frame
    V6 gravity_in_body(int i);              ///< X_{i<-0} a_g (the gravity acceleration in body i's frame)

    const InternalModel im_;  ///< the robot in internal (DH-like) frames
    const Model& m_;
    const Problem& p_;
    std::vector<Site> sites_;    ///< by body: its own link first, then merged links by name
    const InputLayout inputs_;
    System s_;
    std::vector<V6> pv_;                     ///< per body: v x* I v
    std::vector<std::optional<V6>> gravity_;  ///< gravity_in_body, once computed
    std::vector<std::optional<Pose>> pose_;   ///< world_pose, once computed
    const bool impulse_ = p_.impulse();      ///< problem impulse: velocity changes, no bias terms
};

std::vector<Site> Builder::wrench_sites() const {
    std::vector<Site> sites;
    for (int i = 0; i < m_.num_bodies(); ++i) {  // each body's own link, then the links merged into it
        if (p_.wrench[i] != WrenchMode::Zero) sites.push_back({i, m_.bodies[i].name, true, identity_xform<double>(), p_.wrench[i]});
        for (const LinkWrench& lw : p_.link_wrenches)
            if (lw.body == i && lw.mode != WrenchMode::Zero) sites.push_back({i, lw.link, false, lw.X_link_body, lw.mode});
    }
    for (Site& st : sites) {
        if (st.mode != WrenchMode::Unknown) continue;
        // f^x = X^T w with w in the frame of a contact sensor on the link (else the link's), then
        // into the internal frame
        st.X_w_body = st.X_link_body;
        for (const Sensor& sn : p_.sensors)
            if (sn.type == SensorType::ContactWrench && sn.link == st.link) st.contact = &sn, st.X_w_body = sn.X_sensor_body;
        const Xform<double> T = im_.frames[st.body].T;
        st.G = matrix_of([&](const SVec<double>& w) { return nelu::apply_force(T, apply_transpose(st.X_w_body, w)); });
    }
    return sites;
}

int Builder::own_site(int i, WrenchMode mode) const {
    for (std::size_t k = 0; k < sites_.size(); ++k)
        if (sites_[k].body == i && sites_[k].own && sites_[k].mode == mode) return static_cast<int>(k);
    return -1;
}

Mat6d Builder::link_from_internal(int i) const {
    const Xform<double> Tinv = inverse(im_.frames[i].T);
    return matrix_of([&](const SVec<double>& x) { return apply(Tinv, x); });
}

void Builder::kinematics() {
    ir::Program& P = s_.prog;
    const int nb = m_.num_bodies();
    s_.kinematics.resize(nb), pv_.resize(nb), s_.velocity.resize(nb);
    std::vector<V6> v(nb);
    for (int i = 0; i < nb; ++i) {
        const Body& b = m_.bodies[i];
        const Body* master = b.is_mimic() ? &m_.bodies[b.mimic] : nullptr;
        BodyKinematics& K = s_.kinematics[i];
        K.parent = b.parent, K.v_index = b.v_index, K.mimic = b.is_mimic(), K.I = b.I;
        if (master) K.master = b.mimic, K.multiplier = b.multiplier;
        K.factors = body_factors(P, b, im_.frames[i], master);
        V6 vj;
        vj.fill(P.zero());
        for (int d = 0; d < b.nv(); ++d) {
            K.S.push_back(subspace_column(P, b, d));
            K.qd.push_back(master ? P.mul(cst(P, b.multiplier), P.input(ir::Source::Qd, master->v_index))
                                  : P.input(ir::Source::Qd, b.v_index + d));
            K.qdd_input.push_back(inputs_.qdd[i].empty() ? -1 : inputs_.qdd[i][d]);
            for (int r = 0; r < 6; ++r) vj[r] = P.add(vj[r], P.mul(K.S[d][r], K.qd[d]));
        }
        V6 vp;
        vp.fill(P.zero());
        if (b.parent >= 0) {
            vp = v[b.parent];
            for (const Factor& f : K.factors) vp = apply_motion(P, f, vp);
        }
        v[i] = add6(P, vp, vj);
        K.c = cross_motion(P, v[i], vj);
        pv_[i] = velocity_product_force(P, b.I, v[i]);
        s_.velocity[i].assign(v[i].begin(), v[i].end());
    }
}

void Builder::columns() {
    const int nb = m_.num_bodies();
    s_.blocks.resize(nb);
    s_.classical = p_.classical();
    s_.damping = p_.damping;
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
            if (!knows_qdd(p_.joint[i])) B.qdd.push_back(new_column(Quantity::JointAcceleration, i, k, fmt::format("{}[{}]{}", impulse_ ? "dqd" : "qdd", b.joint_name, dof)));
            if (!knows_tau(p_.joint[i]) && !b.is_mimic()) B.tau.push_back(new_column(Quantity::JointTorque, i, k, fmt::format("tau[{}]{}", b.joint_name, dof)));
        }
        B.mimic = b.is_mimic();
        B.joint_is_qdd = p_.joint[i] == JointKnown::Tau || (B.mimic && !B.qdd.empty());
        B.joint = B.joint_is_qdd ? B.qdd : B.tau;
        for (Site& st : sites_) {  // unknown wrenches: components known to be zero get no column
            if (st.body != i || st.mode != WrenchMode::Unknown) continue;
            const Sensor* cs = st.contact;
            for (int k = 0; k < 6; ++k) {
                const bool zero = cs && std::find(cs->zero_components.begin(), cs->zero_components.end(), k) != cs->zero_components.end();
                st.w.push_back(zero ? -1 : new_column(Quantity::ExternalWrench, i, k, fmt::format("f^x[{}].{}{}", st.link, component_name(Quantity::JointWrench, k),
                                                                                                    cs ? fmt::format(" ({} frame)", cs->name) : std::string())));
            }
            if (st.own) B.w = st.w;
        }
        const int m = static_cast<int>(s_.kinematics[i].factors.size());
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

/// (3a), and through factor_chain the motion auxiliaries, of body i.
void Builder::motion_rows(int i) {
    ir::Program& P = s_.prog;
    const Body& b = m_.bodies[i];
    BodyBlock& B = s_.blocks[i];
    const BodyKinematics& K = s_.kinematics[i];
    for (int k = 0; k < 6; ++k)
        B.row_a.push_back(new_row(RowKind::Acceleration, i, k, fmt::format("(3a) {} {}", b.name, component_name(Quantity::LinkAcceleration, k))));
    for (int k = 0; k < 6; ++k) put(B.row_a[k], B.a[k], P.neg(P.one()));
    // S qdd: unknown column or known input
    for (int d = 0; d < b.nv(); ++d)
        for (int k = 0; k < 6; ++k) {
            const Id sk = K.S[d][k];
            if (!B.qdd.empty()) put(B.row_a[k], B.qdd[d], sk);
            else if (sk == P.zero()) continue;
            else if (b.is_mimic()) add_b(B.row_a[k], scaled_input(P, inputs_.qdd[b.mimic][0], b.multiplier * P.value(sk)));  // mult qdd_master
            else add_b(B.row_a[k], scaled_input(P, inputs_.qdd[i][d], P.value(sk)));
        }
    if (!impulse_)  // impulse: the rows relate velocity changes, which have no velocity-product term
        for (int k = 0; k < 6; ++k) add_b(B.row_a[k], K.c[k]);
    if (b.parent < 0) {  // X_i a_0 with a_0 = -a_g, a known vector
        if (impulse_) return;  // the world's velocity does not change
        V6 a0;
        for (int k = 0; k < 6; ++k) a0[k] = cst(P, -p_.gravity[k]);
        for (const Factor& f : K.factors) a0 = apply_motion(P, f, a0);
        for (int k = 0; k < 6; ++k) add_b(B.row_a[k], a0[k]);
        return;
    }
    factor_chain(i, Side::Motion);
}

/// Body i's transform X_i = F_{m-1} ... F_0 between its parent's vectors and its own, written into
/// D one factor at a time through auxiliary unknowns (so that each entry is one sparse factor's):
///   motion: y_1 = F_0 a_p, y_2 = F_1 y_1, ..., and F_{m-1} y_{m-1} (= X_i a_p) into i's rows (3a);
///   force:  z_1 = F_{m-1}^T f_i, z_2 = F_{m-2}^T z_1, ..., and F_0^T z_{m-1} (= X_i^T f_i) into the
///           parent's rows (3f).
/// Each auxiliary row reads G x - aux = 0 with G the step's factor (transposed on the force side).
void Builder::factor_chain(int i, Side side) {
    ir::Program& P = s_.prog;
    const bool motion = side == Side::Motion;
    const Body& b = m_.bodies[i];
    BodyBlock& B = s_.blocks[i];
    const BodyBlock& parent = s_.blocks[b.parent];
    const std::vector<Factor>& F = s_.kinematics[i].factors;
    const int m = static_cast<int>(F.size());
    const std::vector<int>& last = motion ? B.row_a : parent.row_f;
    std::vector<int> in = motion ? parent.a : B.f;
    if (m == 0)  // identity transform
        for (int k = 0; k < 6; ++k) put(last[k], in[k], P.one());
    for (int step = 0; step < m; ++step) {
        const M6 M = factor_matrix(P, F[motion ? step : m - 1 - step]);
        std::vector<int> rows = last, out;
        if (step + 1 < m) {
            out = (motion ? B.y : B.z)[step];
            rows.clear();
            for (int k = 0; k < 6; ++k) {
                rows.push_back(new_row(motion ? RowKind::MotionAux : RowKind::ForceAux, i, k,
                                       fmt::format("(aux) {}{} {} {}", motion ? 'y' : 'z', step + 1, b.name,
                                                   component_name(motion ? Quantity::LinkAcceleration : Quantity::JointWrench, k))));
                put(rows[k], out[k], P.neg(P.one()));
            }
            (motion ? B.row_y : B.row_z).push_back(rows);
        }
        for (int r = 0; r < 6; ++r)
            for (int c = 0; c < 6; ++c) put(rows[r], in[c], motion ? M[r][c] : M[c][r]);
        in = out;
    }
}

/// The input wrench of site `site` in body i's internal frame, X* f^x with X = T X_{body<-link}
/// (link frame at the link origin -> internal frame), per component.
std::array<LinearForm, 6> Builder::wrench_inputs(int site) {
    ir::Program& P = s_.prog;
    const Site& st = sites_[site];
    const std::vector<int>& slots = inputs_.wrench[site];
    V6 fx;
    for (int k = 0; k < 6; ++k) fx[k] = P.input(ir::Source::In, slots[k]);
    const Xform<double> X = compose(im_.frames[st.body].T, inverse(st.X_link_body));
    if (im_.frames[st.body].moved || !st.own) fx = apply_force(P, X, fx);
    const Mat6d Xs = matrix_of([&](const SVec<double>& f) { return nelu::apply_force(X, f); });
    std::array<LinearForm, 6> out;
    for (int k = 0; k < 6; ++k) {
        out[k].value = fx[k];
        for (int j = 0; j < 6; ++j)
            if (Xs[k][j] != 0) out[k].coef.push_back({slots[j], Xs[k][j]});
    }
    return out;
}

/// (3f) and (3tau) of body i.
void Builder::force_rows(int i) {
    ir::Program& P = s_.prog;
    const Body& b = m_.bodies[i];
    BodyBlock& B = s_.blocks[i];
    M6 I = inertia_matrix(P, b.I);
    std::vector<std::array<LinearForm, 6>> inputs;
    for (std::size_t k = 0; k < sites_.size(); ++k)
        if (sites_[k].body == i && sites_[k].mode == WrenchMode::Input) inputs.push_back(wrench_inputs(static_cast<int>(k)));
    for (int k = 0; k < 6; ++k) {
        int r = new_row(RowKind::Force, i, k, fmt::format("(3f) {} {}", b.name, component_name(Quantity::JointWrench, k)));
        B.row_f.push_back(r);
        for (int c = 0; c < 6; ++c) put(r, B.a[c], I[k][c]);
        put(r, B.f[k], P.neg(P.one()));
        if (!impulse_) add_b(r, pv_[i][k]);
        for (const auto& fx : inputs) add_b(r, negated(P, fx[k]));
        for (const Site& st : sites_)
            if (st.body == i && st.mode == WrenchMode::Unknown)
                for (int c = 0; c < 6; ++c)
                    if (st.w[c] >= 0 && st.G[k][c] != 0) put(r, st.w[c], cst(P, -st.G[k][c]));
        contact_forces(i, r, k);
    }
    if (b.is_mimic()) return;  // no (3tau) row of its own: see mimic_rows
    for (int d = 0; d < b.nv(); ++d) {
        int r = new_row(RowKind::Torque, i, d, fmt::format("(3tau) {}{}", b.joint_name, b.nv() > 1 ? fmt::format(" {}", d) : std::string()));
        B.row_tau.push_back(r);
        for (int k = 0; k < 6; ++k) put(r, B.f[k], s_.kinematics[i].S[d][k]);
        if (!B.tau.empty()) put(r, B.tau[d], P.neg(P.one()));
        else if (!impulse_) add_b(r, scaled_input(P, inputs_.tau[i][d], -1.0));
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
    const V6& sk = s_.kinematics[i].S[0];
    for (int k = 0; k < 6; ++k)
        if (sk[k] != P.zero()) put(M.row_tau[0], B.f[k], P.mul(cst(P, b.multiplier), sk[k]));
    if (B.qdd.empty()) return;
    int r = new_row(RowKind::Coupling, i, 0, fmt::format("(mimic) {} = {} {}", b.joint_name, fmt::format("{:g}", b.multiplier), m_.bodies[b.mimic].joint_name));
    put(r, B.qdd[0], P.one());
    if (!M.qdd.empty()) put(r, M.qdd[0], cst(P, -b.multiplier));
    else add_b(r, scaled_input(P, inputs_.qdd[b.mimic][0], -b.multiplier));  // not reached: a mimic knows what its master knows
    B.row_tau = {r};
}

V6 Builder::gravity_in_body(int i) {
    if (gravity_.empty()) gravity_.resize(m_.num_bodies());
    if (gravity_[i]) return *gravity_[i];
    ir::Program& P = s_.prog;
    V6 g;
    const int parent = m_.bodies[i].parent;
    if (parent >= 0) g = gravity_in_body(parent);
    else for (int k = 0; k < 6; ++k) g[k] = cst(P, p_.gravity[k]);
    for (const Factor& f : s_.kinematics[i].factors) g = apply_motion(P, f, g);
    gravity_[i] = g;
    return g;
}

// ---------------------------------------------------------------------------------------------
// Sensors: one function per kind, each adding its rows through measurement_row (a reading, fitted;
// its input slots are numbered by input_layout for every sensor that is_read) or as exact
// conditions (RowKind::Condition, a known value in b). A new kind is a function here and its case
// in sensor_rows; an unknown it brings (a contact's force) is a column made in columns().

void Builder::sensor_rows() {
    for (int si = 0; si < static_cast<int>(p_.sensors.size()); ++si) {
        const Sensor& sn = p_.sensors[si];
        switch (sn.type) {
            case SensorType::ContactWrench: contact_wrench_rows(si); break;
            case SensorType::ForceTorque: {
                sn.frame_is_parent ? force_torque_parent_rows(si) : force_torque_rows(si);
                std::string missing;
                for (int c = 0; c < 6; ++c)
                    if (std::find(sn.components.begin(), sn.components.end(), c) == sn.components.end())
                        missing += (missing.empty() ? "" : ", ") + std::string(component_name(Quantity::JointWrench, c));
                if (!missing.empty()) {  // (several partial sensors on one joint: each named)
                    std::string& named = s_.partial_force_torque[sn.body];
                    named += fmt::format("{}'{}' (the components it does not measure: {})", named.empty() ? "" : ", ", sn.name, missing);
                }
                break;
            }
            case SensorType::Accelerometer: accelerometer_rows(si); break;
            case SensorType::JointTorque:
            case SensorType::JointAcceleration: joint_sensor_rows(si); break;
            case SensorType::LinkAcceleration: known_acceleration_rows(si); break;
        }
    }
}

/// The row of component c of sensor si's reading y, model(d) - y = 0 (the caller puts the model),
/// weighted by the component's variance in least squares.
int Builder::measurement_row(int si, int c, const char* comp_name) {
    const Sensor& sn = p_.sensors[si];
    int r = new_row(RowKind::Measurement, sn.body, c, fmt::format("(meas) {}.{}", sn.name, comp_name));
    s_.soft[r] = true;
    const auto at = static_cast<std::size_t>(std::find(sn.components.begin(), sn.components.end(), c) - sn.components.begin());
    s_.variance[r] = sn.variance[at];
    add_b(r, scaled_input(s_.prog, inputs_.reading[si][at], -1.0));
    return r;
}

/// Components of an unknown external wrench, in the contact sensor's frame (its columns).
void Builder::contact_wrench_rows(int si) {
    const Sensor& sn = p_.sensors[si];
    const auto site = std::find_if(sites_.begin(), sites_.end(), [&](const Site& st) { return st.contact == &sn; });
    for (int c : sn.components) put(measurement_row(si, c, component_name(Quantity::JointWrench, c)), site->w[c], s_.prog.one());
}

/// A joint's wrench in the child frame or a sensor frame on it: sign X_S^* T^T f_i (f_i from the
/// internal frame into the link frame, then into the sensor's).
void Builder::force_torque_rows(int si) {
    const Sensor& sn = p_.sensors[si];
    const Xform<double> T = im_.frames[sn.body].T;
    const Mat6d K = matrix_of([&](const SVec<double>& f) { return sn.sign * nelu::apply_force(sn.X_sensor_body, apply_transpose(T, f)); });
    for (int c : sn.components) {
        int r = measurement_row(si, c, component_name(Quantity::JointWrench, c));
        for (int j = 0; j < 6; ++j)
            if (K[c][j] != 0) put(r, s_.blocks[sn.body].f[j], cst(s_.prog, K[c][j]));
    }
}

/// A joint's wrench in its parent frame: sign X_S^* T_p^T (X_i^T f_i). Below a body, X_i^T f_i =
/// F_0^T z_{m-1} is the wrench as it enters the parent's (3f) (the force auxiliaries carry the other
/// factors, the joint's among them, so the entries are constants unless the transform is the joint
/// alone); at the root, X_i^T = F_0^T ... F_{m-1}^T on f_i.
void Builder::force_torque_parent_rows(int si) {
    ir::Program& P = s_.prog;
    const Sensor& sn = p_.sensors[si];
    const BodyBlock& B = s_.blocks[sn.body];
    const int parent = m_.bodies[sn.body].parent;
    const Xform<double> Tp = parent >= 0 ? im_.frames[parent].T : identity_xform<double>();
    const Mat6d K = matrix_of([&](const SVec<double>& f) { return sn.sign * nelu::apply_force(sn.X_sensor_body, apply_transpose(Tp, f)); });
    const auto& F = s_.kinematics[sn.body].factors;
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
        int r = measurement_row(si, c, component_name(Quantity::JointWrench, c));
        for (int j = 0; j < 6; ++j) put(r, in[j], dot_constant(P, K[c], X[j]));  // (K X^T)[c][j]
    }
}

/// The classical linear acceleration of a point, in the sensor's axes:
/// E (a_lin + wdot x r + w x v_O + w x (w x r)), with a and v in the link frame (T^-1 of internal).
void Builder::accelerometer_rows(int si) {
    ir::Program& P = s_.prog;
    const Sensor& sn = p_.sensors[si];
    const int i = sn.body;
    const Xform<double> Tinv = inverse(im_.frames[i].T);
    const Mat3<double>& E = sn.X_sensor_body.E;
    const Vec3<double>& rp = sn.X_sensor_body.r;
    const Mat6d A = matrix_of([&](const SVec<double>& a) {
        SVec<double> al = apply(Tinv, a);
        return SVec<double>{zero3<double>(), E * (al.l + cross(al.w, rp))};
    });
    const Mat6d Ti = link_from_internal(i);
    V6 v, vl;
    for (int k = 0; k < 6; ++k) v[k] = s_.velocity[i][k];
    for (int r = 0; r < 6; ++r) vl[r] = dot_constant(P, Ti[r], v);
    Id r3[3] = {cst(P, rp[0]), cst(P, rp[1]), cst(P, rp[2])};
    auto wr = cross3(P, vl.data(), r3);
    auto wv = cross3(P, vl.data(), vl.data() + 3);
    auto wwr = cross3(P, vl.data(), wr.data());
    Id bias_link[3];
    for (int k = 0; k < 3; ++k) bias_link[k] = P.add(wv[k], wwr[k]);
    static const char* point[3] = {"x", "y", "z"};
    for (int c : sn.components) {
        int r = measurement_row(si, c, point[c]);
        for (int j = 0; j < 6; ++j)
            if (A[3 + c][j] != 0) put(r, s_.blocks[i].a[j], cst(P, A[3 + c][j]));
        add_b(r, P.dot({cst(P, E(c, 0)), cst(P, E(c, 1)), cst(P, E(c, 2))}, {bias_link[0], bias_link[1], bias_link[2]}));
    }
}

/// A joint's torque or acceleration: its column.
void Builder::joint_sensor_rows(int si) {
    const Sensor& sn = p_.sensors[si];
    const BodyBlock& B = s_.blocks[sn.body];
    const std::vector<int>& cols = sn.type == SensorType::JointTorque ? B.tau : B.qdd;
    for (int c : sn.components) {
        int r = measurement_row(si, c, m_.bodies[sn.body].nv() > 1 ? component_name(Quantity::LinkAcceleration, c) : "value");
        put(r, cols[c], s_.prog.one());
    }
}

/// A known link acceleration: T^-1 a_i + X_{i<-0} a_g = value (the true spatial acceleration, link
/// frame), six exact conditions.
void Builder::known_acceleration_rows(int si) {
    ir::Program& P = s_.prog;
    const Sensor& sn = p_.sensors[si];
    const int i = sn.body;
    const Mat6d Ti = link_from_internal(i);
    const V6 g = gravity_in_body(i);
    for (int c = 0; c < 6; ++c) {
        int r = new_row(RowKind::Condition, i, c, fmt::format("(known) a[{}].{}", m_.bodies[i].name, component_name(Quantity::LinkAcceleration, c)));
        for (int j = 0; j < 6; ++j)
            if (Ti[c][j] != 0) put(r, s_.blocks[i].a[j], cst(P, Ti[c][j]));
        add_b(r, P.sub(dot_constant(P, Ti[c], g), cst(P, c < 3 ? sn.value.w[c] : sn.value.l[c - 3])));
    }
}

// ---------------------------------------------------------------------------------------------
// Contacts (Problem::contacts, docs/contacts.md). A contact c on body i has the constant transform
// Q from the body's internal frame to the contact frame. Its unknowns are its force (impulse)
// components in the Local frame, entering i's (3f) rows as an external wrench; its rows are the
// Local constraint, one per component:
//   fd:       [Q (a_i + g_i)]_k (+ (w_c x v_c)_k for a point) + k_k + mu lambda_k = 0
//   impulse:  [Q dv_i]_k + (1 + r) [Q v_i]_k + mu Lambda_k = 0
// with (w_c, v_c) = Q v_i the contact frame's twist, k the Baumgarte corrector, k-th row the
// component (a point's are the linear three). A LocalWorldAligned contact's rows are these rotated
// by R, the contact frame's orientation, an equivalent set of equations: only its outputs differ
// (R lambda), and so does its damping term, R mu R^T lambda_world = mu lambda_local.

const Builder::Pose& Builder::world_pose(int i) {
    if (pose_.empty()) pose_.resize(m_.num_bodies());
    if (pose_[i]) return *pose_[i];
    ir::Program& P = s_.prog;
    Pose x;
    const int parent = m_.bodies[i].parent;
    if (parent >= 0) {
        x = world_pose(parent);
    } else {
        for (int r = 0; r < 3; ++r) {
            x.p[r] = P.zero();
            for (int c = 0; c < 3; ++c) x.E[r][c] = r == c ? P.one() : P.zero();
        }
    }
    for (const Factor& f : s_.kinematics[i].factors) {
        if (f.rotation) {  // the new frame's coordinates: E_f times the previous frame's
            const auto E = x.E;
            for (int r = 0; r < 3; ++r)
                for (int c = 0; c < 3; ++c) x.E[r][c] = P.dot({f.E[r][0], f.E[r][1], f.E[r][2]}, {E[0][c], E[1][c], E[2][c]});
        } else {  // the new origin is at r in the previous frame: p + E^T r
            for (int c = 0; c < 3; ++c) x.p[c] = P.add(x.p[c], P.dot({x.E[0][c], x.E[1][c], x.E[2][c]}, {f.r[0], f.r[1], f.r[2]}));
        }
    }
    pose_[i] = x;
    return *pose_[i];
}

Mat6d Builder::contact_from_internal(int ci) const {
    const Contact& c = p_.contacts[ci].contact;
    const Xform<double> X = compose(c.placement, inverse(im_.frames[c.body].T));
    return matrix_of([&](const SVec<double>& x) { return apply(X, x); });
}

/// The contact frame's orientation (world -> contact coordinates) of contact ci, as IR.
static std::array<std::array<Id, 3>, 3> contact_orientation(ir::Program& P, const Xform<double>& X_c_internal,
                                                            const std::array<std::array<Id, 3>, 3>& E_internal) {
    std::array<std::array<Id, 3>, 3> E;
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            std::vector<Id> a, b;
            for (int k = 0; k < 3; ++k)
                if (const double e = snap_unit(X_c_internal.E(r, k), 1e-15); e != 0) a.push_back(P.constant(e)), b.push_back(E_internal[k][c]);
            E[r][c] = P.dot(a, b);
        }
    return E;
}

/// -log6(M_c^-1 M_ref) [angular; linear] (Pinocchio's placement error of a 6-D contact, runtime
/// contact.hpp baumgarte_corrector), from the contact frame's orientation E_c (world -> contact),
/// its world position p_c and the reference x y z qx qy qz qw (the rotation of q / |q|): the rotation
/// R = E_c R_ref and translation p = E_c (p_ref - p_c) of M_c^-1 M_ref, log3 R = A(x, c) v with
/// v = vee(R - R^T) / 2, x = |v|^2, c = (tr R - 1) / 2 and log6's translation
/// alpha p - w x p / 2 + beta (w . p) w (runtime trig.hpp: the functions A, beta, alpha = 1 - t beta).
static std::array<Id, 6> placement_error(ir::Program& P, const std::array<std::array<Id, 3>, 3>& Ec, const std::array<Id, 3>& pc,
                                         const std::array<Id, 7>& ref) {
    // reference -> world, the rotation of q / |q|: 2 / |q|^2 in place of the unit quaternion's 2, so
    // that the function of the seven inputs does not change along q (its Jacobian columns for qx ..
    // qw have no radial part) and a quaternion rounded off the unit sphere is still a rotation
    const Id n2 = P.dot({ref[3], ref[4], ref[5], ref[6]}, {ref[3], ref[4], ref[5], ref[6]});
    const auto Rref = quaternion_rotation(P, ref[3], ref[4], ref[5], ref[6], P.div(P.constant(2), n2));
    std::array<std::array<Id, 3>, 3> R;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) R[a][b] = P.dot({Ec[a][0], Ec[a][1], Ec[a][2]}, {Rref[0][b], Rref[1][b], Rref[2][b]});
    std::array<Id, 3> p;
    const std::array<Id, 3> d{P.sub(ref[0], pc[0]), P.sub(ref[1], pc[1]), P.sub(ref[2], pc[2])};
    for (int a = 0; a < 3; ++a) p[a] = P.dot({Ec[a][0], Ec[a][1], Ec[a][2]}, {d[0], d[1], d[2]});
    const Id half = P.constant(0.5);
    const std::array<Id, 3> v{P.mul(half, P.sub(R[2][1], R[1][2])), P.mul(half, P.sub(R[0][2], R[2][0])),
                              P.mul(half, P.sub(R[1][0], R[0][1]))};
    const Id x = P.dot({v[0], v[1], v[2]}, {v[0], v[1], v[2]});
    const Id c = P.mul(half, P.sub(P.add(P.add(R[0][0], R[1][1]), R[2][2]), P.one()));
    const Id A = P.log3_ratio(x, c);
    const std::array<Id, 3> w{P.mul(A, v[0]), P.mul(A, v[1]), P.mul(A, v[2])};
    const Id t = P.mul(P.mul(A, A), x);  // theta^2
    const Id beta = P.log6_beta(t), alpha = P.sub(P.one(), P.mul(t, beta));
    const Id bwp = P.mul(beta, P.dot({w[0], w[1], w[2]}, {p[0], p[1], p[2]}));
    const std::array<Id, 3> wxp = cross3(P, w.data(), p.data());
    std::array<Id, 6> e;
    for (int k = 0; k < 3; ++k) {
        e[k] = P.neg(w[k]);
        e[3 + k] = P.neg(P.add(P.sub(P.mul(alpha, p[k]), P.mul(half, wxp[k])), P.mul(bwp, w[k])));
    }
    return e;
}

void Builder::contact_columns() {
    for (std::size_t ci = 0; ci < p_.contacts.size(); ++ci) {
        const ContactSpec& cs = p_.contacts[ci];
        const Contact& c = cs.contact;
        ContactBlock cb;
        cb.body = c.body;
        const Quantity q = impulse_ ? Quantity::ContactImpulse : Quantity::ContactForce;
        for (int k = 0; k < c.dim(); ++k) {
            const int comp = c.type == ContactType::Point ? 3 + k : k;
            cb.force.push_back(new_column(q, c.body, k, fmt::format("{}[{}].{}", impulse_ ? "Lambda" : "lambda", c.name, component_name(Quantity::JointWrench, comp))));
            s_.cols.back().comp = k;
        }
        if (cs.reads_reference() && c.type == ContactType::Point)
            for (int k = 0; k < 3; ++k) cb.reference.push_back(new_column(Quantity::Auxiliary, c.body, k, fmt::format("ref[{}].{}", c.name, "xyz"[k])));
        s_.contacts.push_back(cb);
    }
}

/// The contacts' forces in row k of body i's (3f): -f^x with f^x = T X_{c<-b}^T lambda (internal frame).
void Builder::contact_forces(int i, int row, int k) {
    for (std::size_t ci = 0; ci < p_.contacts.size(); ++ci) {
        const Contact& c = p_.contacts[ci].contact;
        if (c.body != i) continue;
        const Xform<double> T = im_.frames[i].T;
        const Mat6d G = matrix_of([&](const SVec<double>& w) { return nelu::apply_force(T, apply_transpose(c.placement, w)); });
        for (int j = 0; j < c.dim(); ++j) {
            const double g = G[k][c.type == ContactType::Point ? 3 + j : j];
            if (g != 0) put(row, s_.contacts[ci].force[j], cst(s_.prog, -g));
        }
    }
}

void Builder::contact_rows(int ci) {
    ir::Program& P = s_.prog;
    const ContactSpec& cs = p_.contacts[ci];
    const Contact& c = cs.contact;
    ContactBlock& cb = s_.contacts[ci];
    const int i = c.body;
    const bool point = c.type == ContactType::Point;
    const Mat6d Q = contact_from_internal(ci);
    V6 v, vc;
    for (int k = 0; k < 6; ++k) v[k] = s_.velocity[i][k];
    for (int r = 0; r < 6; ++r) vc[r] = dot_constant(P, Q[r], v);
    const V6 g = impulse_ ? V6{} : gravity_in_body(i);
    std::array<Id, 3> wxv{};  // a point's classical acceleration adds w_c x v_c
    if (point && !impulse_) wxv = cross3(P, vc.data(), vc.data() + 3);
    // Baumgarte, a point: Kp E_c (p_c - p_ref) + Kd v_c, with p_ref = u (reference unknowns); a
    // 6-D contact: Kp e_p + Kd v_c, e_p = -log6(M_c^-1 M_ref) (placement_error)
    std::array<std::array<Id, 3>, 3> Ec{};
    std::array<Id, 3> Ep{};  // E_c p_c
    V6 ep6{};
    if (cs.reads_reference()) {
        const Xform<double> Xq = compose(c.placement, inverse(im_.frames[i].T));
        const Pose& pose = world_pose(i);
        Ec = contact_orientation(P, Xq, pose.E);
        std::array<Id, 3> pc;  // p_i + E_i^T r (r: the contact point in internal coordinates)
        for (int a = 0; a < 3; ++a) {
            std::vector<Id> cs_, xs;
            for (int m = 0; m < 3; ++m)
                if (Xq.r[m] != 0) cs_.push_back(pose.E[m][a]), xs.push_back(cst(P, Xq.r[m]));
            pc[a] = P.add(pose.p[a], P.dot(cs_, xs));
        }
        for (int a = 0; a < 3; ++a) Ep[a] = P.dot({Ec[a][0], Ec[a][1], Ec[a][2]}, {pc[0], pc[1], pc[2]});
        if (!point) {
            std::array<Id, 7> ref;
            for (int k = 0; k < 7; ++k) ref[k] = P.input(ir::Source::In, inputs_.reference[ci][k]);
            ep6 = placement_error(P, Ec, pc, ref);
        }
        for (int k = 0; k < static_cast<int>(cb.reference.size()); ++k) {
            const int r = new_row(RowKind::Condition, i, k, fmt::format("(reference) {}.{}", c.name, "xyz"[k]));
            put(r, cb.reference[k], P.one());
            add_b(r, scaled_input(P, inputs_.reference[ci][k], -1.0));
            cb.reference_rows.push_back(r);
        }
    }
    for (int k = 0; k < c.dim(); ++k) {
        const int comp = point ? 3 + k : k;
        const int r = new_row(RowKind::Contact, i, k, fmt::format("(contact) {} {}", c.name, component_name(Quantity::LinkAcceleration, comp)));
        cb.rows.push_back(r);
        for (int j = 0; j < 6; ++j)
            if (Q[comp][j] != 0) put(r, s_.blocks[i].a[j], cst(P, Q[comp][j]));
        if (p_.damping != 0) put(r, cb.force[k], cst(P, p_.damping));
        if (impulse_) {
            add_b(r, P.mul(cst(P, 1 + p_.restitution), vc[comp]));
            continue;
        }
        add_b(r, dot_constant(P, Q[comp], g));
        if (point) add_b(r, wxv[k]);
        if (c.kd[k] != 0) add_b(r, P.mul(cst(P, c.kd[k]), vc[comp]));
        if (c.kp[k] != 0 && point) {  // Kp (E_c p_c - E_c u)
            add_b(r, P.mul(cst(P, c.kp[k]), Ep[k]));
            for (int j = 0; j < 3; ++j) put(r, cb.reference[j], P.mul(cst(P, -c.kp[k]), Ec[k][j]));
        } else if (c.kp[k] != 0) {
            add_b_nonlinear(r, P.mul(cst(P, c.kp[k]), ep6[comp]));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Outputs

/// osim and iwim: the factorization of forward dynamics is shared by several right-hand sides, the
/// responses to unit inputs (b is affine in the inputs, System::b). The function then takes no
/// inputs; iwim's main right-hand side is b with the inputs at zero (the free acceleration).
void Builder::responses() {
    ir::Program& P = s_.prog;
    const int nb = m_.num_bodies();
    // one input column: weights on input slots -> a right-hand side
    auto column = [&](const std::map<int, double>& weight) {
        std::vector<Id> r(s_.m(), P.zero());
        for (int row = 0; row < s_.m(); ++row) {
            double v = 0;
            for (const auto& [slot, coef] : s_.b.input[row]) {
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
        const std::vector<int>& slots = inputs_.wrench[own_site(ps.body, WrenchMode::Input)];
        for (int j = 0; j < 6; ++j) {
            const double v = snap_unit(j < 3 ? f.w[j] : f.l[j - 3], 1e-15);
            if (v != 0) w[slots[j]] = v;
        }
        return w;
    };
    s_.out.clear();
    if (p_.kind == "iwim") {
        std::vector<int> rhs_of;  // (and each column's label)
        for (int v : p_.actuated)
            for (int i = 0; i < nb; ++i)
                if (m_.bodies[i].nv() > 0 && v >= m_.bodies[i].v_index && v < m_.bodies[i].v_index + m_.bodies[i].nv()) {
                    const int d = v - m_.bodies[i].v_index;
                    rhs_of.push_back(column({{inputs_.tau[i][d], 1.0}}));
                    s_.result_labels.push_back(fmt::format("tau {}{}", m_.bodies[i].joint_name,
                                                           m_.bodies[i].nv() > 1 ? fmt::format(".{}", component_name(Quantity::JointWrench, d)) : ""));
                }
        for (const PointSpec& ps : p_.points)
            for (int c = 3; c < 6; ++c) {
                rhs_of.push_back(column(point_wrench(ps, c)));
                s_.result_labels.push_back(fmt::format("force on {} at {}, {} ({}'s axes)", ps.link, point_text(ps), component_name(Quantity::JointWrench, c), ps.link));
            }
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
        for (const auto& [i, c] : comps) {
            rhs_of.push_back(column(point_wrench(p_.points[i], c)));
            s_.result_labels.push_back(fmt::format("{} at {}", p_.points[i].link, point_text(p_.points[i])));
            s_.result_components.push_back(c);
        }
        for (std::size_t r = 0; r < comps.size(); ++r) {
            const auto& [i, c] = comps[r];
            const PointSpec& ps = p_.points[i];
            const Xform<double> Tinv = inverse(im_.frames[ps.body].T);
            const auto M = matrix_of([&](const SVec<double>& x) { return apply(ps.X_point_body, apply(Tinv, x)); });
            for (std::size_t k = 0; k < comps.size(); ++k) {
                Slot s{Quantity::LinkAcceleration, ps.body, c, -1, {}, -1, -1};
                for (int j = 0; j < 6; ++j)
                    if (M[c][j] != 0) s.terms.push_back({s_.blocks[ps.body].a[j], cst(P, M[c][j])});
                s.rhs = rhs_of[k], s.column_of_b = static_cast<int>(k), s.row_of_result = static_cast<int>(r);
                s_.out.push_back(s);
            }
        }
        if (p_.lambda) {  // Lambda row by row: the point wrench that gives a unit point acceleration
            s_.lambda_size = static_cast<int>(comps.size());
            for (std::size_t r = 0; r < comps.size(); ++r)
                for (std::size_t k = 0; k < comps.size(); ++k) {
                    Slot s{Quantity::ExternalWrench, p_.points[comps[r].first].body, comps[r].second, -1, {}, -1, -1};
                    s.column_of_b = static_cast<int>(k), s.row_of_result = static_cast<int>(r), s.lambda = true;
                    s_.out.push_back(s);
                }
        }
    }
    s_.in.clear();  // no inputs: b is its constant part
    s_.b.value = s_.b.constant;
    for (auto& terms : s_.b.input) terms.clear();
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
    if (impulse_) {  // the joint "accelerations" are velocity changes: v+ = v- + dv
        s_.out.clear();
        if (o.joint_velocities)
            for (int i = 0; i < nb; ++i) {
                const BodyBlock& B = s_.blocks[i];
                if (B.mimic) continue;
                for (std::size_t d = 0; d < B.qdd.size(); ++d) {
                    Slot s{Quantity::JointVelocity, i, static_cast<int>(d), -1, {{B.qdd[d], P.one()}}, -1, -1};
                    s.bias = P.input(ir::Source::Qd, m_.bodies[i].v_index + static_cast<int>(d));
                    s_.out.push_back(s);
                }
            }
    }
    if (o.contact_forces)  // Local: the unknowns; LocalWorldAligned: R lambda, block by block
        for (std::size_t ci = 0; ci < p_.contacts.size(); ++ci) {
            const Contact& c = p_.contacts[ci].contact;
            const ContactBlock& cb = s_.contacts[ci];
            std::array<std::array<Id, 3>, 3> Ec{};
            if (c.frame == ContactFrame::LocalWorldAligned)
                Ec = contact_orientation(P, compose(c.placement, inverse(im_.frames[c.body].T)), world_pose(c.body).E);
            for (int k = 0; k < c.dim(); ++k) {
                Slot s{impulse_ ? Quantity::ContactImpulse : Quantity::ContactForce, c.body, k, -1, {}, -1, -1};
                s.contact = static_cast<int>(ci);
                if (c.frame == ContactFrame::Local) {
                    s.column = cb.force[k];
                } else {
                    const int block = k / 3 * 3;  // the rows of R^T lambda's block: E_c[j][k] lambda_j
                    for (int j = 0; j < 3; ++j) s.terms.push_back({cb.force[block + j], Ec[j][k % 3]});
                }
                s_.out.push_back(s);
            }
        }
    auto combination = [&](Quantity q, int i, const Mat6d& M, const std::vector<int>& cols, const V6* bias) {
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
            const Mat6d Ti = link_from_internal(i);
            V6 g = gravity_in_body(i), gl;
            for (int k = 0; k < 6; ++k) gl[k] = dot_constant(P, Ti[k], g);
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
    contact_columns();
    for (int i = 0; i < m_.num_bodies(); ++i) motion_rows(i);
    for (int i = 0; i < m_.num_bodies(); ++i) force_rows(i);
    for (int i = 0; i < m_.num_bodies(); ++i)
        if (m_.bodies[i].is_mimic()) mimic_rows(i);
    for (int i = 0; i < m_.num_bodies(); ++i)  // f_i reaches its parent's (3f) through X_i^T (force auxiliaries z)
        if (m_.bodies[i].parent >= 0) factor_chain(i, Side::Force);
    sensor_rows();
    for (int ci = 0; ci < static_cast<int>(p_.contacts.size()); ++ci) contact_rows(ci);
    s_.in = inputs_.slots;
    outputs();
    if (s_.out.empty() && !p_.response_kind())
        throw InputError(!p_.outputs.where.empty()
                             ? p_.outputs.where + "'outputs' selects nothing this problem computes (no sought torque, acceleration, "
                                                  "unknown wrench or contact force among those listed): a solver that outputs nothing computes nothing"
                             : (p_.spec_file.empty() ? std::string() : p_.spec_file + ": ") +
                                   "the problem seeks nothing (every joint's acceleration and torque known, no unknown wrench): a "
                                   "solver that outputs nothing computes nothing");
    if (p_.response_kind()) responses();
    s_.allow_special_singularities = p_.allow_special_singularities;
    s_.contact_tree = !p_.contacts.empty() && !impulse_;
    if (!impulse_)
        for (int k = 0; k < 6; ++k) s_.world_acceleration[k] = -p_.gravity[k];
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
        case Quantity::ContactForce: return "contact_force";
        case Quantity::ContactImpulse: return "contact_impulse";
        case Quantity::ContactReference: return "contact_reference";
        case Quantity::JointVelocity: return "joint_velocity";
    }
    return "?";
}

const char* component_name(Quantity q, int comp) {
    static const char* force[6] = {"nx", "ny", "nz", "fx", "fy", "fz"};
    static const char* motion[6] = {"wx", "wy", "wz", "vx", "vy", "vz"};
    if (comp < 0 || comp > 5) return "?";
    return q == Quantity::LinkAcceleration || q == Quantity::JointVelocity ? motion[comp] : force[comp];
}

const char* contact_component_name(const Contact& c, Quantity q, int k) {
    static const char* pose[7] = {"x", "y", "z", "qx", "qy", "qz", "qw"};
    if (q == Quantity::ContactReference) return k >= 0 && k < (c.type == ContactType::Point ? 3 : 7) ? pose[k] : "?";
    return component_name(Quantity::JointWrench, c.type == ContactType::Point ? 3 + k : k);
}

long System::nnz() const {
    long n = 0;
    for (const auto& r : entries) n += static_cast<long>(r.size());
    return n;
}

System run_system(const Model& model, const Problem& problem) { return Builder(model, problem).build(); }

const char* measurement_component(const Sensor& s, const Model& m, int comp) {
    static const char* point[3] = {"x", "y", "z"};
    if (s.type == SensorType::Accelerometer) return point[comp];
    if (s.type == SensorType::JointTorque || s.type == SensorType::JointAcceleration)
        return m.bodies[static_cast<std::size_t>(s.body)].nv() > 1 ? component_name(Quantity::LinkAcceleration, comp) : "value";
    return component_name(Quantity::JointWrench, comp);
}

std::string osim_label(const System& sys, std::size_t k, bool wrench) {
    return fmt::format("{}, {}", sys.result_labels.at(k), component_name(wrench ? Quantity::ExternalWrench : Quantity::LinkAcceleration, sys.result_components.at(k)));
}


}  // namespace nelu
