// The contact reference (nelu/contact.hpp) against identities that hold whatever its code does:
//   - the contact accelerations J qdd + gamma of the KKT solution are minus the Baumgarte corrector;
//   - the reference RNEA with the contact forces applied as external wrenches (mapped to the bodies
//     here, from world-frame formulas) returns tau: M qdd + h = tau + J^T lambda without J;
//   - J column by column against the derivative of the contact frame's world placement along each
//     tangent direction (forward kinematics run on dual numbers: exact first derivatives, like a
//     complex step; not J's code);
//   - gamma against the derivative of the contact velocity along the motion with qdd = 0 (the
//     velocity as above, differentiated in time by central differences): the classical
//     acceleration of a point, the derivative of a 6-D frame's own twist;
//   - the corrector of a point with isotropic gains: Kp (p - p_ref) + Kd v_p in world axes;
//   - LOCAL and LOCAL_WORLD_ALIGNED give the same qdd, their forces differ by the frame's rotation;
//   - impulses: J v+ = -r J v-, M (v+ - v-) = J^T Lambda, kinetic energy does not increase (r in [0, 1]);
//   - damping: proximal iterations converge to the undamped solution; a redundant contact set is
//     refused undamped and solved damped;
//   - log3 / log6 invert the exponential.
// Robots: the shipped floating Mini Cheetah with four point feet, the floating humanoid with two 6-D
// soles, the fixed UR5e with a 6-D tool contact; random states with fixed seeds.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "load.hpp"
#include "nelu/contact.hpp"
#include "nelu/reference.hpp"
#include "nelu/state.hpp"
#include "test_support.hpp"

namespace {

using nelu::Contact;
using nelu::ContactFrame;
using nelu::ContactSettings;
using nelu::ContactType;
using nelu::Mat3;
using nelu::Model;
using nelu::State;
using nelu::SVec;
using nelu::Vec3;
using nelu::Xform;

constexpr int kStates = 20;

/// A forward-mode dual number v + d eps (eps^2 = 0): the reference kinematics run on it give exact
/// first derivatives. (std::complex would do as a complex step, but std::apply, found through it
/// by argument-dependent lookup, shadows nelu::apply.)
struct Dual {
    double v = 0, d = 0;
    Dual() = default;
    Dual(double x, double dx = 0) : v(x), d(dx) {}  // NOLINT: implicit, so that S(1) and literals work
    friend Dual operator+(Dual a, Dual b) { return {a.v + b.v, a.d + b.d}; }
    friend Dual operator-(Dual a, Dual b) { return {a.v - b.v, a.d - b.d}; }
    friend Dual operator*(Dual a, Dual b) { return {a.v * b.v, a.v * b.d + a.d * b.v}; }
    friend Dual operator/(Dual a, Dual b) { return {a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)}; }
    friend Dual operator-(Dual a) { return {-a.v, -a.d}; }
    Dual& operator+=(Dual b) { return *this = *this + b; }
    Dual& operator*=(Dual b) { return *this = *this * b; }
    friend Dual sin(Dual a) { return {std::sin(a.v), std::cos(a.v) * a.d}; }
    friend Dual cos(Dual a) { return {std::cos(a.v), -std::sin(a.v) * a.d}; }
};

// ---------------------------------------------------------------------------------------------
// Robots with contacts

struct ContactRobot {
    std::string name;
    Model model;
    std::vector<Contact> contacts;
};

/// A contact on URDF link `link` at the origin (xyz, rpy) in the link's frame.
Contact contact_on(const nelu::LoadResult& lr, const std::string& link, ContactType type, Vec3<double> xyz,
                   Vec3<double> rpy) {
    const nelu::LinkFrame& lf = lr.links.at(link);
    Contact c;
    c.name = link, c.body = lf.body, c.type = type;
    c.placement = nelu::compose(nelu::origin_xform(xyz, rpy), lf.X_link_body);
    return c;
}

/// The three robots of issue 27's examples, every contact in frame `frame`.
std::vector<ContactRobot> contact_robots(ContactFrame frame) {
    const std::string robots = nelu::test::source_dir() + "/robots/";
    std::vector<ContactRobot> out;
    {
        const nelu::LoadResult lr = nelu::load_urdf_file(robots + "quadruped_minicheetah.urdf", {true, {}});
        ContactRobot r{"minicheetah+floating, 4 points", lr.model, {}};
        for (const char* foot : {"FR_foot", "FL_foot", "RR_foot"})
            r.contacts.push_back(contact_on(lr, foot, ContactType::Point, {{0, 0, -0.02}}, {{0, 0, 0}}));
        r.contacts.push_back(contact_on(lr, "RL_foot", ContactType::Point, {{0.01, -0.02, -0.02}}, {{0.3, -0.2, 1.1}}));
        out.push_back(r);
    }
    {
        const nelu::LoadResult lr = nelu::load_urdf_file(robots + "humanoid_winter.urdf", {true, {}});
        ContactRobot r{"humanoid_winter+floating, 2 soles", lr.model, {}};
        r.contacts.push_back(contact_on(lr, "l_foot", ContactType::SixD, {{0.05, 0, -0.08}}, {{0, 0, 0}}));
        r.contacts.push_back(contact_on(lr, "r_foot", ContactType::SixD, {{0.04, 0.01, -0.08}}, {{0.1, 0.2, -0.7}}));
        out.push_back(r);
    }
    {
        const nelu::LoadResult lr = nelu::load_urdf_file(robots + "ur5e.urdf");
        ContactRobot r{"ur5e, 6-D tool", lr.model, {}};
        r.contacts.push_back(contact_on(lr, "tool0", ContactType::SixD, {{0, 0, 0.05}}, {{0.4, 0, 0.2}}));
        out.push_back(r);
    }
    for (ContactRobot& r : out)
        for (Contact& c : r.contacts) c.frame = frame;
    return out;
}

/// ", LOCAL" or ", LWA", for the residual tables.
const char* frame_label(ContactFrame frame) { return frame == ContactFrame::Local ? ", LOCAL" : ", LWA"; }

/// Random per-component Baumgarte gains.
void set_gains(std::vector<Contact>& contacts, std::mt19937_64& rng) {
    for (Contact& c : contacts)
        for (int k = 0; k < 6; ++k) c.kp[k] = nelu::uniform(rng, 1, 20), c.kd[k] = nelu::uniform(rng, 0.5, 5);
}

// ---------------------------------------------------------------------------------------------
// Motion along the tangent space, in any scalar (dual numbers)

/// sum_k c_k x^k for the coefficients c (a truncated series; x small here).
template <class T> T series(const T& x, std::initializer_list<double> c) {
    T s = T(0), p = T(1);
    for (double ck : c) s += ck * p, p *= x;
    return s;
}

/// q (+) t dir: the joints move by t dir, a floating base by the body-frame exponential of the
/// twist t [omega; v] (a motion with constant qd = dir, qdd = 0). |t dir| must be small (series).
template <class T> std::vector<T> integrate(const Model& m, const std::vector<double>& q, const std::vector<double>& dir, T t) {
    std::vector<T> out(q.begin(), q.end());
    for (const nelu::Body& b : m.bodies) {
        const double* d = dir.data() + b.v_index;
        T* x = out.data() + b.q_index;
        if (b.type != nelu::JointType::Floating) {
            if (b.nq() == 1) x[0] = q[b.q_index] + t * d[0];
            continue;
        }
        const double w2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        const T th2 = t * t * w2;  // theta^2
        // the quaternion of Exp(t omega): [t omega sin(theta/2)/theta, cos(theta/2)]
        const T x4 = th2 / 4.0;
        const T s_half = 0.5 * series(x4, {1, -1. / 6, 1. / 120, -1. / 5040, 1. / 362880});
        const T c_half = series(x4, {1, -1. / 2, 1. / 24, -1. / 720, 1. / 40320});
        const T dq[4] = {t * d[0] * s_half, t * d[1] * s_half, t * d[2] * s_half, c_half};
        const double* q0 = q.data() + b.q_index + 3;  // x y z w
        x[3] = q0[3] * dq[0] + q0[0] * dq[3] + q0[1] * dq[2] - q0[2] * dq[1];  // q0 * dq (Hamilton)
        x[4] = q0[3] * dq[1] - q0[0] * dq[2] + q0[1] * dq[3] + q0[2] * dq[0];
        x[5] = q0[3] * dq[2] + q0[0] * dq[1] - q0[1] * dq[0] + q0[2] * dq[3];
        x[6] = q0[3] * dq[3] - q0[0] * dq[0] - q0[1] * dq[1] - q0[2] * dq[2];
        // p + R0 V(t omega) t v, V = 1 + (1 - cos)/theta^2 [phi] + (theta - sin)/theta^3 [phi]^2
        const T a = series(th2, {1. / 2, -1. / 24, 1. / 720, -1. / 40320}), c = series(th2, {1. / 6, -1. / 120, 1. / 5040, -1. / 362880});
        const Vec3<T> phi{{t * d[0], t * d[1], t * d[2]}}, tv{{t * d[3], t * d[4], t * d[5]}};
        const Vec3<T> wv = nelu::cross(phi, tv);
        const Vec3<T> body = tv + a * wv + c * nelu::cross(phi, wv);
        const Mat3<T> R0 = nelu::quat_to_rotation<T>(q0[0], q0[1], q0[2], q0[3]);
        const Vec3<T> dp = R0 * body;
        for (int k = 0; k < 3; ++k) x[k] = q[b.q_index + k] + dp[k];
    }
    return out;
}

/// The world placement (world -> contact frame) of contact c at configuration q.
template <class T> Xform<T> contact_placement(const Model& m, const Contact& c, const std::vector<T>& q) {
    const nelu::Kinematics<T> k = nelu::forward_kinematics<T>(m, q.data(), nullptr);
    return nelu::compose(nelu::cast<T>(c.placement), k.X_world[c.body]);
}

/// The contact velocity in c's constraint frame (c.dim() rows), from the derivative of its
/// placement along q (+) t dir at t = t0: v_p = dp/dt, omega = vee(dR/dt R^T) in world axes.
std::vector<double> velocity_along(const Model& m, const Contact& c, const std::vector<double>& q,
                                             const std::vector<double>& dir, double t0, const Mat3<double>& axes) {
    const Xform<Dual> X = contact_placement(m, c, integrate<Dual>(m, q, dir, Dual(t0, 1)));
    Mat3<double> R, Rdot;  // R = E^T: contact -> world
    Vec3<double> pdot;
    for (int i = 0; i < 3; ++i) {
        pdot[i] = X.r[i].d;
        for (int j = 0; j < 3; ++j) R(i, j) = X.E(j, i).v, Rdot(i, j) = X.E(j, i).d;
    }
    const Mat3<double> W = Rdot * nelu::transpose(R);
    const Vec3<double> omega{{W(2, 1), W(0, 2), W(1, 0)}};
    // `axes` rotates world coordinates into the constraint frame's (R(0)^T for LOCAL, 1 for LWA)
    const Vec3<double> lin = axes * pdot, ang = axes * omega;
    std::vector<double> v;
    if (c.type == ContactType::SixD) v = {ang[0], ang[1], ang[2]};
    v.insert(v.end(), {lin[0], lin[1], lin[2]});
    return v;
}

/// Rotation from world coordinates into c's constraint-frame coordinates at q.
Mat3<double> constraint_axes(const Model& m, const Contact& c, const std::vector<double>& q) {
    return c.frame == ContactFrame::Local ? contact_placement(m, c, q).E : nelu::identity3<double>();
}

// ---------------------------------------------------------------------------------------------
// Helpers

double max_abs(const std::vector<double>& x) {
    double a = 0;
    for (double v : x) a = v == v ? std::max(a, std::abs(v)) : INFINITY;  // (NaN counts as infinitely large)
    return a;
}

/// y = A x for a row-major rows x cols A.
std::vector<double> mul(const std::vector<double>& A, int rows, int cols, const std::vector<double>& x) {
    std::vector<double> y(rows, 0.0);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) y[r] += A[r * cols + c] * x[c];
    return y;
}

/// Reference placements near the contacts' at q: 5 cm and about 0.3 rad off (6-D: every other
/// contact rotated by about 2.5 rad, to reach log3 far from the identity).
std::vector<Xform<double>> references_near(const ContactRobot& r, const std::vector<double>& q, std::mt19937_64& rng) {
    std::vector<Xform<double>> refs;
    for (std::size_t i = 0; i < r.contacts.size(); ++i) {
        Xform<double> X = contact_placement(r.model, r.contacts[i], q);
        const double angle = i % 2 ? 2.5 : 0.3;
        Vec3<double> axis{{nelu::uniform(rng, -1, 1), nelu::uniform(rng, -1, 1), nelu::uniform(rng, -1, 1)}};
        const double n = std::sqrt(nelu::dot(axis, axis));
        axis = (1 / n) * axis;
        X.E = nelu::rot_axis(axis, std::cos(angle), std::sin(angle)) * X.E;
        for (int k = 0; k < 3; ++k) X.r[k] += nelu::uniform(rng, -0.05, 0.05);
        refs.push_back(X);
    }
    return refs;
}

/// The wrenches of the contact forces on the bodies (body coordinates at the body origin): each
/// contact's force [n; f] (a point: [0; f]) in world axes at the contact point, moved to the world
/// origin ([n + p x f; f]) and into the body's frame.
std::vector<SVec<double>> contact_wrenches(const ContactRobot& r, const std::vector<double>& q, const std::vector<double>& lambda) {
    const nelu::Kinematics<double> k = nelu::forward_kinematics<double>(r.model, q.data(), nullptr);
    std::vector<SVec<double>> fext(r.model.num_bodies(), nelu::zero6<double>());
    int row = 0;
    for (const Contact& c : r.contacts) {
        const Xform<double> X = contact_placement(r.model, c, q);
        Vec3<double> n = nelu::zero3<double>(), f;
        for (int k3 = 0; k3 < 3; ++k3) {
            if (c.type == ContactType::SixD) n[k3] = lambda[row + k3];
            f[k3] = lambda[row + (c.type == ContactType::SixD ? 3 : 0) + k3];
        }
        if (c.frame == ContactFrame::Local) n = nelu::mul_transpose(X.E, n), f = nelu::mul_transpose(X.E, f);
        const SVec<double> at_origin{n + nelu::cross(X.r, f), f};
        fext[c.body] = fext[c.body] + nelu::apply_force(k.X_world[c.body], at_origin);
        row += c.dim();
    }
    return fext;
}

/// A random state (as nelu::random_state) at which the contacts are well conditioned: drawn again
/// while a pivot of J M^-1 J^T is below 1e-5 of its largest diagonal entry. The fixed arm with a 6-D
/// tool contact is fully constrained, and near its kinematic singularities any method's forward
/// error grows with that condition; the legged robots are never drawn again.
State well_conditioned_state(const ContactRobot& r, std::mt19937_64& rng, bool with_fext = true, double scale = 1.0) {
    ContactSettings strict;
    strict.singular_tolerance = 1e-5;
    std::vector<double> v(r.model.nv), impulse(nelu::contact_rows(r.contacts));
    for (;;) {  // the impulse problem: the same J M^-1 J^T, no reference placements needed
        const State s = nelu::random_state(r.model, rng, with_fext, scale);
        if (nelu::impulse_dynamics(r.model, r.contacts, s.q.data(), s.qd.data(), 0.0, strict, v.data(), impulse.data())) return s;
    }
}

/// max_i sum_j |A_ij| of a row-major rows x cols A.
double row_sum_norm(const std::vector<double>& A, int rows, int cols) {
    double n = 0;
    for (int r = 0; r < rows; ++r) {
        double s = 0;
        for (int c = 0; c < cols; ++c) s += std::abs(A[r * cols + c]);
        n = std::max(n, s);
    }
    return n;
}

struct Solution {
    std::vector<double> qdd, lambda;
};
Solution solve(const ContactRobot& r, const State& s, const std::vector<Xform<double>>* refs, const ContactSettings& settings = {}) {
    Solution out{std::vector<double>(r.model.nv), std::vector<double>(nelu::contact_rows(r.contacts))};
    const bool ok = nelu::contact_dynamics(r.model, r.contacts, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(),
                                           refs ? refs->data() : nullptr, settings, out.qdd.data(), out.lambda.data());
    REQUIRE(ok);
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("contact dynamics: constraint, Newton-Euler residual, both frames") {
    nelu::test::ResidualTable accel("J qdd + gamma + corrector, relative to |J| |qdd|"), ne("RNEA(q, qd, qdd, fext + contact wrenches) - tau, relative to |M| |qdd| + |J| |lambda|"),
        frames("LOCAL vs LOCAL_WORLD_ALIGNED: qdd, and R lambda_local - lambda_lwa");
    const std::vector<ContactRobot> local = contact_robots(ContactFrame::Local), lwa = contact_robots(ContactFrame::LocalWorldAligned);
    for (std::size_t ri = 0; ri < local.size(); ++ri)
        for (bool baumgarte : {false, true}) {
            std::mt19937_64 rng(0x636f6e74 + ri);
            ContactRobot rl = local[ri], rw = lwa[ri];
            if (baumgarte) set_gains(rl.contacts, rng), rw.contacts = rl.contacts;
            for (Contact& c : rw.contacts) c.frame = ContactFrame::LocalWorldAligned;
            const std::string name = rl.name + (baumgarte ? ", Baumgarte" : "");
            const Model& m = rl.model;
            for (int n = 0; n < kStates; ++n) {
                const State s = well_conditioned_state(rl, rng);
                const std::vector<Xform<double>> refs = references_near(rl, s.q, rng);
                for (const ContactRobot* r : {&rl, &rw}) {
                    const Solution x = solve(*r, s, &refs);
                    const nelu::ContactTerms<double> t = nelu::contact_terms(m, r->contacts, s.q.data(), s.qd.data(), refs.data());
                    const std::vector<double> Jq = mul(t.J, t.rows, m.nv, x.qdd);
                    std::vector<double> res(t.rows);
                    double scale = std::max(1.0, row_sum_norm(t.J, t.rows, m.nv) * max_abs(x.qdd));  // |J| |qdd|
                    for (int i = 0; i < t.rows; ++i)
                        res[i] = Jq[i] + t.gamma[i] + t.corrector[i],
                        scale = std::max({scale, std::abs(Jq[i]), std::abs(t.gamma[i]), std::abs(t.corrector[i])});
                    CHECK_RESIDUAL(accel, name, max_abs(res) / scale, 1e-10);
                    std::vector<SVec<double>> f = contact_wrenches(*r, s.q, x.lambda);
                    for (int b = 0; b < m.num_bodies(); ++b) f[b] = f[b] + s.fext[b];
                    std::vector<double> tau(m.nv);
                    nelu::rnea(m, s.q.data(), s.qd.data(), x.qdd.data(), f.data(), tau.data());
                    std::vector<double> M(m.nv * m.nv);
                    nelu::crba(m, s.q.data(), M.data());
                    const double floor = std::max({1.0, row_sum_norm(M, m.nv, m.nv) * max_abs(x.qdd),
                                                   row_sum_norm(t.J, t.rows, m.nv) * max_abs(x.lambda)});  // |M| |qdd|, |J| |lambda|
                    CHECK_RESIDUAL(ne, name, nelu::test::rel_error(tau, s.tau, floor), 1e-12);
                }
                const Solution a = solve(rl, s, &refs), b = solve(rw, s, &refs);
                std::vector<double> rotated(a.lambda.size());
                int row = 0;
                for (const Contact& c : rl.contacts) {  // world axes = R local, per 3-block
                    const Xform<double> X = contact_placement(m, c, s.q);
                    for (int blk = 0; blk < c.dim(); blk += 3) {
                        const Vec3<double> v = nelu::mul_transpose(X.E, Vec3<double>{{a.lambda[row + blk], a.lambda[row + blk + 1], a.lambda[row + blk + 2]}});
                        for (int k = 0; k < 3; ++k) rotated[row + blk + k] = v[k];
                    }
                    row += c.dim();
                }
                CHECK_RESIDUAL(frames, name, std::max(nelu::test::rel_error(a.qdd, b.qdd), nelu::test::rel_error(rotated, b.lambda)), 1e-10);
            }
        }
}

TEST_CASE("contact Jacobian and drift against derivatives of the contact placement") {
    nelu::test::ResidualTable jac("J against d/dt of the placement along each tangent direction, relative"),
        drift("gamma against d/dt of the contact velocity along q (+) t qd, relative"),
        corr("point corrector, isotropic gains: Kp (p - p_ref) + Kd v_p (world axes), relative");
    for (ContactFrame frame : {ContactFrame::Local, ContactFrame::LocalWorldAligned})
        for (const ContactRobot& r : contact_robots(frame)) {
            const std::string name = r.name + frame_label(frame);
            const Model& m = r.model;
            std::mt19937_64 rng(0x6a6163 + r.contacts.size());
            for (int n = 0; n < kStates / 2; ++n) {
                const State s = well_conditioned_state(r, rng, false);
                const nelu::ContactTerms<double> t = nelu::contact_terms<double>(m, r.contacts, s.q.data(), s.qd.data(), nullptr);
                int row = 0;
                for (const Contact& c : r.contacts) {
                    const Mat3<double> axes = constraint_axes(m, c, s.q);
                    double err = 0, scale = 1;
                    for (int j = 0; j < m.nv; ++j) {
                        std::vector<double> e(m.nv, 0.0);
                        e[j] = 1;
                        const std::vector<double> col = velocity_along(m, c, s.q, e, 0.0, axes);
                        for (int i = 0; i < c.dim(); ++i)
                            err = nelu::test::worse(err, std::abs(col[i] - t.J[(row + i) * m.nv + j])), scale = std::max(scale, std::abs(col[i]));
                    }
                    CHECK_RESIDUAL(jac, name, err / scale, 1e-12);
                    // constrained acceleration at qdd = 0: d/dt of the velocity in the constraint axes
                    // at t = 0 (a point: classical, so held fixed; a 6-D frame: its own, so moving:
                    // the LOCAL twist differentiated, then turned into the constraint axes)
                    const double h = 1e-3;
                    std::vector<double> acc(c.dim(), 0.0);
                    const double w[4] = {1, -8, 8, -1};  // (f(-2h), f(-h), f(h), f(2h)) / (12 h)
                    const double ts[4] = {-2 * h, -h, h, 2 * h};
                    for (int k = 0; k < 4; ++k) {
                        const std::vector<double> qt = integrate<double>(m, s.q, s.qd, ts[k]);
                        const Mat3<double> ax = c.type == ContactType::Point ? axes : contact_placement(m, c, qt).E;
                        const std::vector<double> v = velocity_along(m, c, s.q, s.qd, ts[k], ax);
                        for (int i = 0; i < c.dim(); ++i) acc[i] += w[k] * v[i] / (12 * h);
                    }
                    if (c.type == ContactType::SixD && frame == ContactFrame::LocalWorldAligned) {
                        const Mat3<double> R = nelu::transpose(contact_placement(m, c, s.q).E);
                        for (int blk = 0; blk < 6; blk += 3) {
                            const Vec3<double> v = R * Vec3<double>{{acc[blk], acc[blk + 1], acc[blk + 2]}};
                            for (int k = 0; k < 3; ++k) acc[blk + k] = v[k];
                        }
                    }
                    double derr = 0, dscale = 1;
                    for (int i = 0; i < c.dim(); ++i)
                        derr = nelu::test::worse(derr, std::abs(acc[i] - t.gamma[row + i])), dscale = std::max(dscale, std::abs(acc[i]));
                    CHECK_RESIDUAL(drift, name, derr / dscale, 1e-8);
                    row += c.dim();
                }
                // the corrector of points with isotropic gains, LWA: the position and velocity errors in world axes
                if (r.contacts[0].type != ContactType::Point || frame != ContactFrame::LocalWorldAligned) continue;
                std::vector<Contact> cs = r.contacts;
                for (Contact& c : cs)
                    for (int k = 0; k < 3; ++k) c.kp[k] = 7.5, c.kd[k] = 1.25;
                const std::vector<Xform<double>> refs = references_near(r, s.q, rng);
                const nelu::ContactTerms<double> tc = nelu::contact_terms(m, cs, s.q.data(), s.qd.data(), refs.data());
                for (std::size_t i = 0; i < cs.size(); ++i) {
                    const std::vector<double> v = velocity_along(m, cs[i], s.q, s.qd, 0.0, nelu::identity3<double>());
                    const Xform<double> X = contact_placement(m, cs[i], s.q);
                    std::vector<double> expect(3), got(3);
                    for (int k = 0; k < 3; ++k) expect[k] = 7.5 * (X.r[k] - refs[i].r[k]) + 1.25 * v[k], got[k] = tc.corrector[3 * i + k];
                    CHECK_RESIDUAL(corr, name, nelu::test::rel_error(got, expect), 1e-12);
                }
            }
        }
}

TEST_CASE("impulse dynamics: restitution, momentum, energy") {
    nelu::test::ResidualTable rest("J v+ + r J v-, relative to |J v-|"), mom("M (v+ - v-) - J^T Lambda, relative"),
        energy("T(v+) - T(v-), relative to T(v-) (must not be positive)");
    for (ContactFrame frame : {ContactFrame::Local, ContactFrame::LocalWorldAligned})
        for (const ContactRobot& r : contact_robots(frame)) {
            const std::string name = r.name + frame_label(frame);
            const Model& m = r.model;
            std::mt19937_64 rng(0x696d70 + r.contacts.size());
            for (int n = 0; n < kStates; ++n) {
                const State s = well_conditioned_state(r, rng, false, 2.0);
                const double restitution = n % 4 == 0 ? 0.0 : n % 4 == 1 ? 1.0 : nelu::uniform(rng, 0, 1);
                const int nc = nelu::contact_rows(r.contacts);
                std::vector<double> vp(m.nv), imp(nc), M(m.nv * m.nv);
                REQUIRE(nelu::impulse_dynamics(m, r.contacts, s.q.data(), s.qd.data(), restitution, {}, vp.data(), imp.data()));
                const nelu::ContactTerms<double> t = nelu::contact_terms<double>(m, r.contacts, s.q.data(), nullptr, nullptr);
                const std::vector<double> Jvm = mul(t.J, nc, m.nv, s.qd), Jvp = mul(t.J, nc, m.nv, vp);
                std::vector<double> res(nc);
                for (int i = 0; i < nc; ++i) res[i] = Jvp[i] + restitution * Jvm[i];
                CHECK_RESIDUAL(rest, name, max_abs(res) / std::max(1.0, max_abs(Jvm)), 1e-10);
                nelu::crba(m, s.q.data(), M.data());
                std::vector<double> dv(m.nv), JtL(m.nv, 0.0);
                for (int j = 0; j < m.nv; ++j) dv[j] = vp[j] - s.qd[j];
                for (int i = 0; i < nc; ++i)
                    for (int j = 0; j < m.nv; ++j) JtL[j] += t.J[i * m.nv + j] * imp[i];
                CHECK_RESIDUAL(mom, name, nelu::test::rel_error(mul(M, m.nv, m.nv, dv), JtL), 1e-10);
                const double Tm = nelu::kinetic_energy(m, nelu::forward_kinematics<double>(m, s.q.data(), s.qd.data(), false));
                const double Tp = nelu::kinetic_energy(m, nelu::forward_kinematics<double>(m, s.q.data(), vp.data(), false));
                energy.add(name, (Tp - Tm) / Tm);
                CHECK(Tp <= Tm * (1 + 1e-12));
            }
        }
}

TEST_CASE("damping: proximal iterations converge to the rigid solution; a redundant set needs them") {
    nelu::test::ResidualTable prox("mu = 1e-3, 100 proximal iterations vs mu = 0: qdd and lambda, relative"),
        redundant("two identical tool contacts, mu = 1e-3, 200 iterations: J qdd + gamma (to |J| |qdd|), and lambda split evenly");
    for (const ContactRobot& r : contact_robots(ContactFrame::Local)) {
        std::mt19937_64 rng(0x70726f78);
        for (int n = 0; n < kStates / 4; ++n) {
            const State s = well_conditioned_state(r, rng);
            ContactSettings damped;
            damped.mu = 1e-3, damped.max_iter = 100, damped.accuracy = 1e-14;
            const Solution a = solve(r, s, nullptr), b = solve(r, s, nullptr, damped);
            CHECK_RESIDUAL(prox, r.name, std::max(nelu::test::rel_error(b.qdd, a.qdd), nelu::test::rel_error(b.lambda, a.lambda)), 1e-9);
        }
    }
    const ContactRobot single = contact_robots(ContactFrame::Local)[2];
    ContactRobot arm = single;
    arm.contacts.push_back(single.contacts[0]);
    std::mt19937_64 rng(0x726564);
    for (int n = 0; n < kStates / 4; ++n) {
        const State s = well_conditioned_state(single, rng);
        std::vector<double> qdd(arm.model.nv), lambda(12);
        CHECK_FALSE(nelu::contact_dynamics(arm.model, arm.contacts, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(),
                                           static_cast<const Xform<double>*>(nullptr), ContactSettings{}, qdd.data(), lambda.data()));
        ContactSettings damped;
        damped.mu = 1e-3, damped.max_iter = 200, damped.accuracy = 1e-14;
        const Solution x = solve(arm, s, nullptr, damped);
        const nelu::ContactTerms<double> t = nelu::contact_terms<double>(arm.model, arm.contacts, s.q.data(), s.qd.data(), nullptr);
        const std::vector<double> Jq = mul(t.J, t.rows, arm.model.nv, x.qdd);
        const double scale = std::max({1.0, max_abs(t.gamma), row_sum_norm(t.J, t.rows, arm.model.nv) * max_abs(x.qdd)});
        double err = 0;
        for (int i = 0; i < t.rows; ++i) err = nelu::test::worse(err, std::abs(Jq[i] + t.gamma[i]) / scale);
        for (int i = 0; i < 6; ++i) err = nelu::test::worse(err, std::abs(x.lambda[i] - x.lambda[i + 6]) / std::max(1.0, max_abs(x.lambda)));
        CHECK_RESIDUAL(redundant, arm.name, err, 1e-7);  // rounding grows as |D| / mu, the damped system's condition
    }
}

TEST_CASE("log3 and log6 invert the exponential") {
    std::mt19937_64 rng(0x6c6f67);
    double worst = 0;
    for (int n = 0; n < 200; ++n) {
        // angles from 1e-9 to pi - 1e-9, the ends included
        const double angle = n == 0 ? 1e-9 : n == 1 ? M_PI - 1e-9 : n == 2 ? 1e-4 : nelu::uniform(rng, 0, M_PI);
        Vec3<double> u{{nelu::uniform(rng, -1, 1), nelu::uniform(rng, -1, 1), nelu::uniform(rng, -1, 1)}};
        u = (1 / std::sqrt(nelu::dot(u, u))) * u;
        const Vec3<double> w = angle * u, v{{nelu::uniform(rng, -1, 1), nelu::uniform(rng, -1, 1), nelu::uniform(rng, -1, 1)}};
        // exp6([w; v]) = (R, V v), V = 1 + (1 - cos)/t^2 wx + (t - sin)/t^3 wx^2 (R = E^T of rot_axis)
        const Mat3<double> R = nelu::transpose(nelu::rot_axis(u, std::cos(angle), std::sin(angle)));
        const double sinc_half = std::sin(angle / 2) / (angle / 2);  // (1 - cos)/t^2 without cancellation; (t - sin)/t^3 by its series below 1e-3
        const double a = 0.5 * sinc_half * sinc_half,
                     b = angle < 1e-3 ? 1. / 6 - angle * angle / 120 : (angle - std::sin(angle)) / (angle * angle * angle);
        const Vec3<double> p = v + a * nelu::cross(w, v) + b * nelu::cross(w, nelu::cross(w, v));
        const SVec<double> x = nelu::log6(R, p);
        for (int k = 0; k < 3; ++k) worst = std::max({worst, std::abs(x.w[k] - w[k]), std::abs(x.l[k] - v[k]) / (1 + angle)});
    }
    std::printf("log6(exp6(xi)) - xi: worst %.3e (200 twists, angles 1e-9 to pi - 1e-9)\n", worst);
    CHECK(worst < 1e-13);
}

TEST_CASE("world_pose inverts world_placement: x y z and a unit quaternion with qw >= 0, near 0 and pi alike") {
    std::mt19937_64 rng(0x706f7365);
    double worst = 0;
    for (int n = 0; n < 200; ++n) {
        const double angle = n == 0 ? 0.0 : n == 1 ? M_PI : n == 2 ? M_PI - 1e-9 : nelu::uniform(rng, 0, M_PI);
        Vec3<double> u{{nelu::uniform(rng, -1, 1), nelu::uniform(rng, -1, 1), nelu::uniform(rng, -1, 1)}};
        u = (1 / std::sqrt(nelu::dot(u, u))) * u;
        nelu::Xform<double> X{nelu::rot_axis(u, std::cos(angle), std::sin(angle)), {{nelu::uniform(rng, -1, 1), 0.5, -2.0}}};
        double pose[7];
        nelu::world_pose(X, pose);
        CHECK(pose[6] >= 0);
        CHECK(std::abs(pose[3] * pose[3] + pose[4] * pose[4] + pose[5] * pose[5] + pose[6] * pose[6] - 1) < 1e-15);
        const nelu::Xform<double> Y = nelu::world_placement(pose);
        for (int i = 0; i < 3; ++i) {
            worst = nelu::test::worse(worst, std::abs(Y.r[i] - X.r[i]));
            for (int j = 0; j < 3; ++j) worst = nelu::test::worse(worst, std::abs(Y.E(i, j) - X.E(i, j)));
        }
    }
    CHECK(worst < 4e-15);  // a few units in the last place of entries up to 1
}
