// nelu/contact.hpp: rigid contacts with the world, as Pinocchio 3's RigidConstraintModel describes
// them, and the reference contact dynamics built from them: the dense KKT forward dynamics of
// `constraintDynamics` and the impulse dynamics of `impulseDynamics`. Written from the definitions
// (algorithm/constrained-dynamics.hxx, impulse-dynamics.hxx and contact-info.hpp of Pinocchio 3.7),
// in nelu's conventions: spatial vectors angular first, every quantity of body i in body-i
// coordinates. docs/contacts.md says the same for users.
//
// A contact is a frame c fixed in a body b (placement X_{c<-b}). Its constraint frame is
//   Local              the contact frame itself (Pinocchio's LOCAL);
//   LocalWorldAligned  origin at the contact point, world axes (LOCAL_WORLD_ALIGNED).
// The two differ by a rotation only (R, the contact frame's orientation in the world), so every
// vector of a LocalWorldAligned contact is R times the Local one, component block by block.
//   Point (CONTACT_3D): 3 rows, the linear acceleration of the contact point is constrained;
//   the acceleration is the classical one, d^2 p / dt^2 (it contains omega x v).
//   SixD (CONTACT_6D): 6 rows [angular; linear], the spatial acceleration of the contact frame
//   (the time derivative of its twist in the contact frame: no omega x v term) is constrained.
// Rows of J: J qd is the contact velocity in the constraint frame (a point's velocity, or the
// frame's twist [omega; v]). The drift gamma is the constrained acceleration at qdd = 0 without
// gravity, so that J qdd + gamma is the constrained acceleration. (For a Local point and for a
// LocalWorldAligned 6D contact this is not d/dt (J) qd: the rotating constraint axes add a term;
// it is Pinocchio's definition.)
//
// Baumgarte (Pinocchio's corrector, `constrained-dynamics.hxx`): with the contact frame's placement
// error e_p and velocity error e_v in the Local frame,
//   Point: e_p = R^T (p - p_ref),         e_v = R^T v_p            (3 components)
//   SixD:  e_p = -log6(M_c^-1 M_ref),     e_v = twist of c in c    (6, [angular; linear])
// (M_c, M_ref: the world placements of the contact frame and of the reference), the corrector is
//   k = Kp .* e_p + Kd .* e_v   (component-wise, Local components; rotated by R for LocalWorldAligned),
// and the constraint is J qdd + gamma = -k. Gains zero: no corrector, the reference is not read.
//
// Forward dynamics (Pinocchio's KKT, lambda the force the environment exerts on the robot in the
// constraint frame, Pinocchio's lambda_c; [n; f] for SixD, f for a point):
//   [ M  J^T ] [ qdd     ]   [ tau - h        ]
//   [ J  -mu ] [ -lambda ] = [ -gamma - k + mu lambda_prox ]
// solved by the Schur complement on the contact rows, D = J M^-1 J^T + mu 1, and Pinocchio's
// proximal iterations (lambda_prox the previous iterate, zero at first), at most max_iter, stopped
// when max |lambda - lambda_prox| <= accuracy (Pinocchio's relative residual; its absolute
// residual, which 3.7 computes without the free acceleration's term, is not used). With mu = 0
// one solve is exact.
// Impulse (Pinocchio's impulseDynamics, restitution r in [0, 1], one solve):
//   M (v+ - v-) = J^T Lambda,   J v+ + mu Lambda = -r J v-.
// With mimic joints (nelu/mimic.hpp) both are solved in the independent coordinates: M, J, h and
// tau above become G^T M G, J G, G^T h and G^T tau (qdd_full = G qdd_r).
//
// Floating base: q = [x y z qx qy qz qw ...], qd = the base's body twist [omega; v], then the
// joints (nelu/model.hpp); Pinocchio's free-flyer velocity is [v; omega].
#pragma once

#include <cassert>
#include <cmath>
#include <string>
#include <vector>

#include "nelu/mimic.hpp"
#include "nelu/model.hpp"
#include "nelu/reference.hpp"
#include "nelu/small_dense.hpp"
#include "nelu/spatial.hpp"

namespace nelu {

/// Pinocchio's ContactType: CONTACT_3D (a point, 3 rows) or CONTACT_6D (a frame, 6 rows).
enum class ContactType { Point, SixD };
/// Pinocchio's ReferenceFrame of a contact: LOCAL or LOCAL_WORLD_ALIGNED.
enum class ContactFrame { Local, LocalWorldAligned };

/// A rigid contact of a body with the world.
struct Contact {
    std::string name;
    int body = -1;  ///< the body carrying the contact frame
    ContactType type = ContactType::Point;
    ContactFrame frame = ContactFrame::Local;
    /// X_{c<-b}: E rotates body coordinates into contact-frame coordinates, r is the contact
    /// point in body coordinates (Pinocchio's joint1_placement, as a motion transform).
    Xform<double> placement = identity_xform<double>();
    /// Baumgarte gains per row, Local components: a point's x y z (first three entries), a 6D
    /// contact's angular x y z then linear x y z. All zero: no corrector.
    double kp[6] = {0, 0, 0, 0, 0, 0};
    double kd[6] = {0, 0, 0, 0, 0, 0};

    int dim() const { return type == ContactType::Point ? 3 : 6; }
    bool has_corrector() const {
        for (int k = 0; k < dim(); ++k)
            if (kp[k] != 0 || kd[k] != 0) return true;
        return false;
    }
};

/// Number of constraint rows of a contact set.
inline int contact_rows(const std::vector<Contact>& contacts) {
    int n = 0;
    for (const Contact& c : contacts) n += c.dim();
    return n;
}

/// Pinocchio's ProximalSettings (defaults as its): the damping mu, at most max_iter proximal
/// iterations, stopped at the accuracy; plus the relative pivot below which D = J M^-1 J^T + mu 1
/// counts as singular.
struct ContactSettings {
    double mu = 0;
    int max_iter = 1;
    double accuracy = 1e-12;
    double singular_tolerance = 1e-12;
};

/// A world placement x y z qx qy qz qw (unit quaternion) as the transform world -> frame: the same
/// map as a floating joint's X_J (nelu/reference.hpp).
template <class S> Xform<S> world_placement(const S* pose) {
    Body free;
    free.type = JointType::Floating;
    return joint_transform(free, pose);
}

/// The unit quaternion q = x y z w of a rotation matrix R (q and -q are one rotation: the one with
/// w >= 0), by Shepperd's choice of the largest pivot: accurate near angles 0 and pi alike.
template <class S> void rotation_quaternion(const Mat3<S>& R, S* q) {
    using std::sqrt;
    const S tr = R(0, 0) + R(1, 1) + R(2, 2);
    if (tr >= R(0, 0) && tr >= R(1, 1) && tr >= R(2, 2)) {
        const S t = sqrt(S(1) + tr);  // 2 |w|
        q[3] = S(0.5) * t;
        q[0] = (R(2, 1) - R(1, 2)) / (S(2) * t), q[1] = (R(0, 2) - R(2, 0)) / (S(2) * t), q[2] = (R(1, 0) - R(0, 1)) / (S(2) * t);
    } else {
        const int i = R(0, 0) >= R(1, 1) && R(0, 0) >= R(2, 2) ? 0 : R(1, 1) >= R(2, 2) ? 1 : 2;
        const int j = (i + 1) % 3, k = (i + 2) % 3;
        const S t = sqrt(S(1) + R(i, i) - R(j, j) - R(k, k));  // 2 |q_i|
        q[i] = S(0.5) * t;
        q[j] = (R(j, i) + R(i, j)) / (S(2) * t), q[k] = (R(k, i) + R(i, k)) / (S(2) * t);
        q[3] = (R(k, j) - R(j, k)) / (S(2) * t);
    }
    if (q[3] < S(0))
        for (int k = 0; k < 4; ++k) q[k] = -q[k];
}

/// The inverse of world_placement: pose = x y z qx qy qz qw of the transform X (world -> frame),
/// the quaternion of R = E^T with qw >= 0.
template <class S> void world_pose(const Xform<S>& X, S* pose) {
    for (int k = 0; k < 3; ++k) pose[k] = X.r[k];
    rotation_quaternion(transpose(X.E), pose + 3);
}

/// X_{c<-l} of a frame given as an origin in frame l, URDF style: position xyz, and the rotation
/// R = Rz(yaw) Ry(pitch) Rx(roll) of rpy = (roll, pitch, yaw) from l's axes to c's.
template <class S> Xform<S> origin_xform(const Vec3<S>& xyz, const Vec3<S>& rpy) {
    using std::cos;
    using std::sin;
    const Mat3<S> E = rot_x(cos(rpy[0]), sin(rpy[0])) * rot_y(cos(rpy[1]), sin(rpy[1])) * rot_z(cos(rpy[2]), sin(rpy[2]));
    return {E, xyz};  // E = R^T = Rx^T Ry^T Rz^T
}

// ---------------------------------------------------------------------------------------------
// Rotations and rigid motions: Pinocchio's log3 and log6 (spatial/log.hxx), angular first.

/// log3(R): the rotation vector w (|w| in [0, pi]) with exp(wx) = R, R a rotation matrix, through
/// its unit quaternion (rotation_quaternion: accurate near 0 and pi alike).
template <class S> Vec3<S> log3(const Mat3<S>& R) {
    using std::atan2;
    using std::sqrt;
    S q[4];
    rotation_quaternion(R, q);  // the rotation angle theta in [0, pi]: q[3] = cos(theta / 2) >= 0
    const S w = q[3];
    const S s = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);  // sin(theta / 2)
    // theta / sin(theta / 2) = 2 atan2(s, w) / s; its series (2 / w)(1 - s^2 / (3 w^2)) near 0
    const S f = s < S(1e-6) ? (S(2) / w) * (S(1) - s * s / (S(3) * w * w)) : S(2) * atan2(s, w) / s;
    return {{f * q[0], f * q[1], f * q[2]}};
}

/// log6 of the rigid motion (R, p) (rotation, then translation p): the twist [w; v] with
/// exp6 = (R, p), w = log3(R), v = alpha p - w x p / 2 + beta (w . p) w,
/// alpha = (theta / 2) cot(theta / 2), beta = (1 - alpha) / theta^2 (series below theta^2 = 1e-6).
template <class S> SVec<S> log6(const Mat3<S>& R, const Vec3<S>& p) {
    using std::cos;
    using std::sin;
    using std::sqrt;
    const Vec3<S> w = log3(R);
    const S t2 = dot(w, w);
    S alpha, beta;
    if (t2 < S(1e-6)) {
        alpha = S(1) - t2 / S(12) - t2 * t2 / S(720);
        beta = S(1) / S(12) + t2 / S(720);
    } else {
        const S half = S(0.5) * sqrt(t2);
        alpha = half * cos(half) / sin(half);
        beta = (S(1) - alpha) / t2;
    }
    return {w, alpha * p - S(0.5) * cross(w, p) + (beta * dot(w, p)) * w};
}

// ---------------------------------------------------------------------------------------------
// The contact terms: J, gamma and the corrector, stacked over the contacts.

/// Velocity-product accelerations of every body (qdd = 0, no gravity), body coordinates:
/// a_i = X_up(i) a_parent + c_i.
template <class S> std::vector<SVec<S>> bias_accelerations(const Model& m, const Kinematics<S>& k) {
    std::vector<SVec<S>> a(m.num_bodies());
    for (int i = 0; i < m.num_bodies(); ++i) {
        const int p = m.bodies[i].parent;
        a[i] = p < 0 ? k.c[i] : apply(k.X_up[i], a[p]) + k.c[i];
    }
    return a;
}

/// The rows of a Local-frame vector x (motion or force, contact coordinates) in contact c's
/// constraint frame: rotated into world axes by R = E^T for LocalWorldAligned (X_c: world ->
/// contact), then [angular; linear] for SixD or the linear part for a point. Writes c.dim() rows.
template <class S> void constraint_rows(const Contact& c, const Xform<S>& X_c, const SVec<S>& x, S* rows) {
    SVec<S> y = x;
    if (c.frame == ContactFrame::LocalWorldAligned) y = {mul_transpose(X_c.E, x.w), mul_transpose(X_c.E, x.l)};
    for (int k = 0; k < c.dim(); ++k) rows[k] = c.type == ContactType::Point ? y.l[k] : y[k];
}

/// The world placement (world -> contact frame), twist and velocity-product acceleration
/// (contact coordinates) of a contact frame.
template <class S> struct ContactFrameMotion {
    Xform<S> X;
    SVec<S> v, a;
};
template <class S>
ContactFrameMotion<S> contact_frame_motion(const Contact& c, const Kinematics<S>& k, const std::vector<SVec<S>>& a_bias) {
    const Xform<S> P = cast<S>(c.placement);
    return {compose(P, k.X_world[c.body]), apply(P, k.v[c.body]), apply(P, a_bias[c.body])};
}

/// k = Kp .* e_p + Kd .* e_v of one contact, in its constraint frame (c.dim() rows); `ref` is the
/// reference placement (world -> reference frame), read only when some Kp is not zero.
template <class S>
void baumgarte_corrector(const Contact& c, const ContactFrameMotion<S>& f, const Xform<S>* ref, S* rows) {
    SVec<S> ep = zero6<S>(), ev = f.v;
    bool uses_reference = false;
    for (int k = 0; k < c.dim(); ++k) uses_reference = uses_reference || c.kp[k] != 0;
    assert((ref || !uses_reference) && "a contact with a nonzero Kp needs its reference placement");
    if (uses_reference && c.type == ContactType::Point) {
        ep.l = f.X.E * (f.X.r - ref->r);  // -translation of M_c^-1 M_ref
    } else if (uses_reference) {  // -log6(M_c^-1 M_ref): rotation E_c E_ref^T, translation E_c (p_ref - p_c)
        ep = -log6(f.X.E * transpose(ref->E), f.X.E * (ref->r - f.X.r));
    }
    SVec<S> corr = zero6<S>();
    for (int k = 0; k < c.dim(); ++k) {
        const int row = c.type == ContactType::Point ? 3 + k : k;  // a point's rows are the linear part
        corr[row] = S(c.kp[k]) * ep[row] + S(c.kd[k]) * ev[row];
    }
    constraint_rows(c, f.X, corr, rows);
}

/// The stacked constraint terms of a contact set at (q, qd): J qdd + gamma = -corrector.
template <class S> struct ContactTerms {
    int rows = 0;
    std::vector<S> J;          ///< rows x nv, row major
    std::vector<S> gamma;      ///< rows: the constrained acceleration at qdd = 0, no gravity
    std::vector<S> corrector;  ///< rows: Kp .* e_p + Kd .* e_v (zero without gains)
};

/// J, gamma and (with `with_corrector`) the corrector of `contacts` at (q, qd); `refs` holds one
/// reference placement per contact (world -> reference frame) and may be null when no contact has a
/// nonzero Kp or the corrector is not wanted.
template <class S>
ContactTerms<S> contact_terms(const Model& m, const std::vector<Contact>& contacts, const S* q, const S* qd,
                              const Xform<S>* refs, bool with_corrector = true) {
    const Kinematics<S> k = forward_kinematics(m, q, qd);
    const std::vector<SVec<S>> a_bias = bias_accelerations(m, k);
    ContactTerms<S> t;
    t.rows = contact_rows(contacts);
    t.J.assign(t.rows * m.nv, S(0)), t.gamma.assign(t.rows, S(0)), t.corrector.assign(t.rows, S(0));
    int row = 0;
    for (std::size_t i = 0; i < contacts.size(); ++i) {
        const Contact& c = contacts[i];
        const ContactFrameMotion<S> f = contact_frame_motion(c, k, a_bias);
        const std::vector<SVec<S>> Jb = body_jacobian(m, q, c.body);  // body coordinates
        const Xform<S> P = cast<S>(c.placement);
        S col[6];
        for (int j = 0; j < m.nv; ++j) {
            constraint_rows(c, f.X, apply(P, Jb[j]), col);
            for (int r = 0; r < c.dim(); ++r) t.J[(row + r) * m.nv + j] = col[r];
        }
        SVec<S> acc = f.a;  // a point's classical acceleration: + omega x v
        if (c.type == ContactType::Point) acc.l = acc.l + cross(f.v.w, f.v.l);
        constraint_rows(c, f.X, acc, t.gamma.data() + row);
        if (with_corrector && c.has_corrector()) baumgarte_corrector(c, f, refs ? refs + i : nullptr, t.corrector.data() + row);
        row += c.dim();
    }
    return t;
}

// ---------------------------------------------------------------------------------------------
// The dense solves, in the independent coordinates of a model with mimic joints (nelu/mimic.hpp:
// qdd_full = G qdd_r, M_r = G^T M G, J_r = J G, forces G^T tau; without mimics G = 1). Vectors
// in and out are in the full index space, as everywhere in the runtime: a mimic's velocity and
// acceleration follow its master's, its torque slot is read as part of its master's (G^T tau).

namespace contact_detail {

/// The Schur complement of the KKT system on the contact rows, in the n = nr independent
/// coordinates: the factor of M_r, J_r (rows x n, row major), Y = M_r^-1 J_r^T (n x rows, row
/// major) and the factor of D = J_r Y + mu 1; `G` the coupling (nelu/mimic.hpp). False when
/// M_r is not positive definite or D is singular (a pivot not above settings.singular_tolerance
/// times D's largest diagonal entry).
template <class S> struct Schur {
    int n = 0;
    Coupling G;
    std::vector<S> M, J, Y, D;
};

/// G^T x of a full vector x (nv): the n reduced entries.
template <class S> std::vector<S> reduce(const Model& m, const Schur<S>& s, const S* x) {
    std::vector<S> r(static_cast<std::size_t>(s.n), S(0));
    for (int j = 0; j < m.nv; ++j) r[s.G.index[j]] = r[s.G.index[j]] + S(s.G.factor[j]) * x[j];
    return r;
}

/// x_full = G x_r.
template <class S> void expand(const Model& m, const Schur<S>& s, const std::vector<S>& xr, S* x) {
    for (int j = 0; j < m.nv; ++j) x[j] = S(s.G.factor[j]) * xr[s.G.index[j]];
}

template <class S>
bool schur(const Model& m, const S* q, const ContactTerms<S>& t, double mu, double tol, Schur<S>& s) {
    const int nv = m.nv, nc = t.rows;
    s.G = coupling(m);
    const std::vector<int>& g = s.G.index;
    const std::vector<double>& f = s.G.factor;
    const int n = s.n = s.G.columns;
    std::vector<S> M(nv * nv);
    crba(m, q, M.data());
    s.M.assign(n * n, S(0)), s.J.assign(nc * n, S(0));
    for (int i = 0; i < nv; ++i)  // M_r = G^T M G
        for (int j = 0; j < nv; ++j) s.M[g[i] * n + g[j]] = s.M[g[i] * n + g[j]] + S(f[i] * f[j]) * M[i * nv + j];
    for (int r = 0; r < nc; ++r)  // J_r = J G
        for (int j = 0; j < nv; ++j) s.J[r * n + g[j]] = s.J[r * n + g[j]] + S(f[j]) * t.J[r * nv + j];
    if (!ldlt_factor(n, s.M.data())) return false;
    s.Y.assign(n * nc, S(0));
    std::vector<S> col(n);
    for (int r = 0; r < nc; ++r) {  // column r of Y = M_r^-1 (row r of J_r)^T
        for (int j = 0; j < n; ++j) col[j] = s.J[r * n + j];
        ldlt_solve(n, s.M.data(), col.data());
        for (int j = 0; j < n; ++j) s.Y[j * nc + r] = col[j];
    }
    s.D.assign(nc * nc, S(0));
    for (int r = 0; r < nc; ++r)
        for (int c = 0; c <= r; ++c) {  // the lower triangle, which ldlt_factor reads
            S d = r == c ? S(mu) : S(0);
            for (int j = 0; j < n; ++j) d = d + s.J[r * n + j] * s.Y[j * nc + c];
            s.D[r * nc + c] = d;
        }
    return nc == 0 || ldlt_factor(nc, s.D.data(), tol);
}

/// x = x + Y lambda (n entries).
template <class S> void add_Y_times(const Schur<S>& s, int nc, const std::vector<S>& lambda, std::vector<S>& x) {
    for (int j = 0; j < s.n; ++j)
        for (int r = 0; r < nc; ++r) x[j] = x[j] + s.Y[j * nc + r] * lambda[r];
}

}  // namespace contact_detail

/// Contact-constrained forward dynamics (Pinocchio's constraintDynamics, with external wrenches
/// fext as in nelu/reference.hpp, may be null): qdd (nv) and lambda (contact_rows, the forces on the
/// robot in each contact's constraint frame, contacts in order). `refs` as contact_terms. False when
/// M is not positive definite or the contact set is singular for this mu (nothing written then).
/// With mimic joints, q and qd must be coupled (couple_positions, couple_velocities).
template <class S>
bool contact_dynamics(const Model& m, const std::vector<Contact>& contacts, const S* q, const S* qd, const S* tau,
                      const SVec<S>* fext, const Xform<S>* refs, const ContactSettings& settings, S* qdd, S* lambda) {
    using std::abs;
    const int nv = m.nv;
    const ContactTerms<S> t = contact_terms(m, contacts, q, qd, refs);
    const int nc = t.rows;
    contact_detail::Schur<S> s;
    if (!contact_detail::schur(m, q, t, settings.mu, settings.singular_tolerance, s)) return false;
    const int n = s.n;
    std::vector<S> h(nv), b(nc), lam(nc, S(0)), prox(nc, S(0));
    nonlinear_effects(m, q, qd, fext, h.data());
    for (int j = 0; j < nv; ++j) h[j] = tau[j] - h[j];
    std::vector<S> a = contact_detail::reduce(m, s, h.data());
    ldlt_solve(n, s.M.data(), a.data());  // the free acceleration M_r^-1 G^T (tau - h)
    for (int r = 0; r < nc; ++r) {         // b = -gamma - k - J_r a_free
        b[r] = -t.gamma[r] - t.corrector[r];
        for (int j = 0; j < n; ++j) b[r] = b[r] - s.J[r * n + j] * a[j];
    }
    for (int it = 0; it < settings.max_iter; ++it) {  // D lambda = b + mu lambda_prox
        for (int r = 0; r < nc; ++r) lam[r] = b[r] + S(settings.mu) * prox[r];
        if (nc > 0) ldlt_solve(nc, s.D.data(), lam.data());
        S change = S(0);
        for (int r = 0; r < nc; ++r) change = abs(lam[r] - prox[r]) > change ? abs(lam[r] - prox[r]) : change;
        prox = lam;
        if (change <= S(settings.accuracy)) break;
    }
    contact_detail::add_Y_times(s, nc, lam, a);  // qdd = a_free + M_r^-1 J_r^T lambda
    contact_detail::expand(m, s, a, qdd);
    for (int r = 0; r < nc; ++r) lambda[r] = lam[r];
    return true;
}

/// Impulse dynamics (Pinocchio's impulseDynamics): from v_minus (nv), the post-impact velocity
/// v_plus (nv) and the impulses Lambda (contact_rows, on the robot, constraint frames) with
/// M (v+ - v-) = J^T Lambda, J v+ + mu Lambda = -r J v-. False as contact_dynamics. With mimic
/// joints, q and v_minus must be coupled.
template <class S>
bool impulse_dynamics(const Model& m, const std::vector<Contact>& contacts, const S* q, const S* v_minus, double r,
                      const ContactSettings& settings, S* v_plus, S* impulse) {
    const int nv = m.nv;
    const ContactTerms<S> t = contact_terms<S>(m, contacts, q, nullptr, nullptr, /*with_corrector=*/false);
    const int nc = t.rows;
    contact_detail::Schur<S> s;
    if (!contact_detail::schur(m, q, t, settings.mu, settings.singular_tolerance, s)) return false;
    std::vector<S> lam(nc), v = gather(std::vector<S>(v_minus, v_minus + nv), independent_v_slots(m));
    for (int i = 0; i < nc; ++i) {  // D Lambda = -(1 + r) J_r v-
        S Jv = S(0);
        for (int j = 0; j < s.n; ++j) Jv = Jv + s.J[i * s.n + j] * v[j];
        lam[i] = -S(1 + r) * Jv;
    }
    if (nc > 0) ldlt_solve(nc, s.D.data(), lam.data());
    contact_detail::add_Y_times(s, nc, lam, v);
    contact_detail::expand(m, s, v, v_plus);
    for (int i = 0; i < nc; ++i) impulse[i] = lam[i];
    return true;
}

}  // namespace nelu
