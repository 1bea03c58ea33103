// verify.cpp: see verify.hpp.
#include "verify.hpp"

#include <complex>

#include "derivatives.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <random>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "nelu/contact.hpp"
#include "nelu/mimic.hpp"
#include "nelu/reference.hpp"

namespace nelu {

namespace {

Model with_gravity(const Model& m, const Problem& p);

/// Coefficients of a force transform X^* as a 6x6 matrix.
Eigen::Matrix<double, 6, 6> force_matrix(const Xform<double>& X) {
    Eigen::Matrix<double, 6, 6> M;
    for (int j = 0; j < 6; ++j) {
        SVec<double> e = zero6<double>();
        (j < 3 ? e.w : e.l)[j % 3] = 1;
        SVec<double> c = apply_force(X, e);
        for (int i = 0; i < 6; ++i) M(i, j) = i < 3 ? c.w[i] : c.l[i - 3];
    }
    return M;
}

/// G (nv x nr): qdd_full = G qdd_r for the independent velocity slots `independent_v_slots(m)`.
Eigen::MatrixXd coupling_matrix(const Model& m) {
    const Coupling c = coupling(m);
    Eigen::MatrixXd G = Eigen::MatrixXd::Zero(m.nv, c.columns);
    for (int j = 0; j < m.nv; ++j) G(j, c.index[j]) = c.factor[j];
    return G;
}

SVec<double> from_eigen(const Eigen::Matrix<double, 6, 1>& v) { return {{{v(0), v(1), v(2)}}, {{v(3), v(4), v(5)}}}; }
double comp(const SVec<double>& v, int k) { return k < 3 ? v.w[k] : v.l[k - 3]; }

/// Per body, from the reference recursions (Featherstone's RNEA, body frames): the accelerations
/// a_i with gravity folded in (a_0 = -a_g), the joint wrenches f_i, and X_{i<-0} a_g.
struct BodyQuantities {
    Kinematics<double> k;
    std::vector<SVec<double>> a, f, g;
    std::vector<double> tau;
};

BodyQuantities body_quantities(const Model& mg, const std::vector<double>& q, const std::vector<double>& qd,
                               const std::vector<double>& qdd, const std::vector<SVec<double>>& fx) {
    const int nb = mg.num_bodies();
    BodyDynamics<double> d = rnea_bodies(mg, q.data(), qd.data(), qdd.data(), fx.data(), true);
    BodyQuantities r{std::move(d.k), std::move(d.a), std::move(d.f), std::vector<SVec<double>>(nb), std::vector<double>(mg.nv, 0.0)};
    for (int i = 0; i < nb; ++i) {
        r.g[i] = apply(r.k.X_world[i], mg.gravity);
        joint_project(mg.bodies[i], r.f[i], r.tau.data() + mg.bodies[i].v_index);
    }
    return r;
}

/// A consistent world for a sensor problem: every quantity of the tree at the state's (q, qd), with
/// the joint accelerations and external wrenches of the state projected onto the problem's exact
/// conditions (zero wrenches, zero wrench components, known link accelerations).
struct Truth {
    std::vector<double> qdd;
    std::vector<SVec<double>> fx;       ///< per body: the total external wrench (body frame, body origin)
    std::vector<SVec<double>> fx_own;   ///< per body: that of its own link
    std::vector<SVec<double>> fx_link;  ///< per Problem::link_wrenches, in its body's frame at its origin
    BodyQuantities bq;
    std::vector<double> tau;  ///< generalized forces of the independent coordinates (G^T bq.tau, full slots)
};

/// The value of output slot `s` given the world of a solved problem: joint accelerations and torques
/// (full model), external wrenches, and the body quantities they give (computed on first use).
double slot_value(const Slot& s, const Model& mg, const State& st, const std::vector<double>& qdd, const std::vector<double>& tau,
                  const std::vector<SVec<double>>& fx, std::unique_ptr<BodyQuantities>& bq) {
    const int v = mg.bodies[s.body].nv() > 0 ? mg.bodies[s.body].v_index + s.comp : 0;
    switch (s.quantity) {
        case Quantity::JointAcceleration: return qdd[v];
        case Quantity::JointTorque: return tau[v];
        case Quantity::ExternalWrench: return comp(fx[s.body], s.comp);
        default: break;
    }
    if (!bq) bq = std::make_unique<BodyQuantities>(body_quantities(mg, st.q, st.qd, qdd, fx));
    if (s.quantity == Quantity::LinkAcceleration) return comp(bq->a[s.body] + bq->g[s.body], s.comp);
    if (s.quantity == Quantity::JointWrench) return comp(bq->f[s.body], s.comp);
    return 0.0;
}

/// The index of the wrench of `link` among the unknowns of truth_of (after the joint accelerations):
/// its body's own (0 .. nb-1) or a merged link's (nb + its index in Problem::link_wrenches).
int wrench_index(const Model& m, const Problem& p, const std::string& link, int body) {
    if (m.bodies[body].name == link) return body;
    const auto it = std::find_if(p.link_wrenches.begin(), p.link_wrenches.end(), [&](const LinkWrench& w) { return w.link == link; });
    return m.num_bodies() + static_cast<int>(it - p.link_wrenches.begin());
}

Truth truth_of(const Model& m, const Problem& p, const State& st) {
    const Model mg = with_gravity(m, p);
    const int nb = m.num_bodies(), nv = m.nv, nl = static_cast<int>(p.link_wrenches.size()), nx = nv + 6 * (nb + nl);
    Eigen::VectorXd x0(nx);
    for (int k = 0; k < nv; ++k) x0(k) = st.qdd[k];
    for (int i = 0; i < nb; ++i)
        for (int k = 0; k < 6; ++k) x0(nv + 6 * i + k) = comp(st.fext[i], k);
    for (int l = 0; l < nl; ++l)  // a merged link's wrench: the body's, moved to the link (any value will do)
        for (int k = 0; k < 6; ++k) x0(nv + 6 * (nb + l) + k) = comp(st.fext[p.link_wrenches[l].body], k);
    std::vector<Eigen::RowVectorXd> rows;
    std::vector<double> rhs;
    auto unit = [&](int k) { Eigen::RowVectorXd e = Eigen::RowVectorXd::Zero(nx); e(k) = 1; return e; };
    for (int i = 0; i < nb; ++i)
        if (p.wrench[i] == WrenchMode::Zero)
            for (int k = 0; k < 6; ++k) rows.push_back(unit(nv + 6 * i + k)), rhs.push_back(0);
    for (const Body& b : m.bodies)  // mimic joints: qdd_i - multiplier qdd_master = 0
        if (b.is_mimic()) {
            Eigen::RowVectorXd r = unit(b.v_index);
            r(m.bodies[b.mimic].v_index) = -b.multiplier;
            rows.push_back(r), rhs.push_back(0);
        }
    bool accel_conditions = false;
    for (const Sensor& s : p.sensors) {
        if (s.type == SensorType::ContactWrench) {
            Eigen::Matrix<double, 6, 6> F = force_matrix(s.X_sensor_body);
            for (int k : s.zero_components) {
                Eigen::RowVectorXd r = Eigen::RowVectorXd::Zero(nx);
                r.segment(nv + 6 * wrench_index(m, p, s.link, s.body), 6) = F.row(k);
                rows.push_back(r), rhs.push_back(0);
            }
        }
        accel_conditions = accel_conditions || s.type == SensorType::LinkAcceleration;
    }
    if (accel_conditions) {  // a_true(qdd) = A qdd + a0, probed column by column
        std::vector<SVec<double>> nofx(nb, zero6<double>());
        std::vector<double> z(nv, 0.0);
        BodyQuantities base = body_quantities(mg, st.q, st.qd, z, nofx);
        std::vector<BodyQuantities> probe;
        for (int k = 0; k < nv; ++k) {
            z.assign(nv, 0.0), z[k] = 1;
            probe.push_back(body_quantities(mg, st.q, st.qd, z, nofx));
        }
        for (const Sensor& s : p.sensors) {
            if (s.type != SensorType::LinkAcceleration) continue;
            for (int c = 0; c < 6; ++c) {
                Eigen::RowVectorXd r = Eigen::RowVectorXd::Zero(nx);
                for (int k = 0; k < nv; ++k) r(k) = comp(probe[k].a[s.body], c) - comp(base.a[s.body], c);
                rows.push_back(r), rhs.push_back(comp(s.value, c) - comp(base.a[s.body], c) - comp(base.g[s.body], c));
            }
        }
    }
    Eigen::VectorXd x = x0;
    if (!rows.empty()) {
        Eigen::MatrixXd C(rows.size(), nx);
        Eigen::VectorXd c(rows.size());
        for (std::size_t r = 0; r < rows.size(); ++r) C.row(r) = rows[r], c(r) = rhs[r];
        x = x0 - C.completeOrthogonalDecomposition().solve(C * x0 - c);
    }
    Truth t;
    t.qdd.assign(x.data(), x.data() + nv);
    for (int i = 0; i < nb; ++i) t.fx_own.push_back(from_eigen(x.segment<6>(nv + 6 * i)));
    for (int l = 0; l < nl; ++l) t.fx_link.push_back(from_eigen(x.segment<6>(nv + 6 * (nb + l))));
    t.fx = t.fx_own;
    for (int l = 0; l < nl; ++l) t.fx[p.link_wrenches[l].body] = t.fx[p.link_wrenches[l].body] + t.fx_link[l];
    t.bq = body_quantities(mg, st.q, st.qd, t.qdd, t.fx);
    t.tau = t.bq.tau;
    reduce_forces(m, t.tau.data());
    return t;
}

/// The external wrench on `link` (on `body`) in the world `t`, in the link's frame at its origin.
SVec<double> link_wrench(const Model& m, const Problem& p, const Truth& t, const std::string& link, int body) {
    const int w = wrench_index(m, p, link, body);
    if (w < m.num_bodies()) return t.fx_own[body];
    return apply_force(p.link_wrenches[w - m.num_bodies()].X_link_body, t.fx_link[w - m.num_bodies()]);
}

/// What sensor `s` reads in component `c` in the world `t`.
double sensor_reading(const Model& m, const Problem& p, const Sensor& s, int c, const Truth& t) {
    switch (s.type) {
        case SensorType::ForceTorque:  // in the parent frame: f_i as it acts on the parent body, X_up^T f_i, first
            return s.sign * comp(apply_force(s.X_sensor_body, s.frame_is_parent ? apply_transpose(t.bq.k.X_up[s.body], t.bq.f[s.body])
                                                                                    : t.bq.f[s.body]), c);
        case SensorType::ContactWrench: {  // the link's wrench, in the sensor frame (X_sensor_body is relative to the body)
            const int w = wrench_index(m, p, s.link, s.body);
            return comp(apply_force(s.X_sensor_body, w < m.num_bodies() ? t.fx_own[s.body] : t.fx_link[w - m.num_bodies()]), c);
        }
        case SensorType::Accelerometer: {  // E (a_lin + wdot x r + w x v_O + w x (w x r))
            const SVec<double>& a = t.bq.a[s.body];
            const SVec<double>& v = t.bq.k.v[s.body];
            const Vec3<double>& r = s.X_sensor_body.r;
            Vec3<double> acc = a.l + cross(a.w, r) + cross(v.w, v.l) + cross(v.w, cross(v.w, r));
            return (s.X_sensor_body.E * acc)[c];
        }
        case SensorType::JointTorque:        // read by the caller (needs the joint's velocity slot)
        case SensorType::JointAcceleration:
        case SensorType::LinkAcceleration:   // a condition, not a reading
            return 0.0;
    }
    return 0.0;
}

}  // namespace

namespace {

/// The runtime's description of the problem's contacts.
std::vector<Contact> runtime_contacts(const Problem& p) {
    std::vector<Contact> cs;
    for (const ContactSpec& c : p.contacts) cs.push_back(c.contact);
    return cs;
}

/// The Baumgarte reference of each contact at a state: the contact frame's own world placement,
/// moved by a few centimetres and turned by 0.2 (i + 1) rad about a fixed axis (offsets per contact,
/// so that the corrector acts).
std::vector<Xform<double>> contact_references(const Model& m, const Problem& p, const State& st) {
    const Kinematics<double> k = forward_kinematics(m, st.q.data(), st.qd.data());
    std::vector<Xform<double>> refs;
    const Vec3<double> axis{{2 / 3.0, -1 / 3.0, 2 / 3.0}};
    for (std::size_t i = 0; i < p.contacts.size(); ++i) {
        const Contact& c = p.contacts[i].contact;
        Xform<double> X = compose(c.placement, k.X_world[c.body]);
        const double s = 0.01 * static_cast<double>(i + 1), angle = 0.2 * static_cast<double>(i + 1);
        X.r = X.r + Vec3<double>{{s, -0.7 * s, 0.4 * s}};
        X.E = rot_axis(axis, std::cos(angle), std::sin(angle)) * X.E;
        refs.push_back(X);
    }
    return refs;
}

}  // namespace

std::vector<double> solver_inputs(const System& sys, const Model& m, const Problem& p, const State& st) {
    if (sys.classical || !p.contacts.empty()) {  // a merged link's input wrench is the state's wrench of its body, moved to the link
        std::vector<double> in = solver_inputs(sys, m, st);
        const std::vector<Xform<double>> refs = p.contacts.empty() ? std::vector<Xform<double>>() : contact_references(m, p, st);
        for (std::size_t k = 0; k < sys.in.size(); ++k) {
            const Slot& s = sys.in[k];
            if (s.quantity == Quantity::ContactReference) {
                double pose[7];
                world_pose(refs[static_cast<std::size_t>(s.contact)], pose);
                in[k] = pose[s.comp];
            }
            if (s.quantity != Quantity::ExternalWrench || s.link.empty()) continue;
            const int w = wrench_index(m, p, s.link, s.body) - m.num_bodies();
            in[k] = comp(apply_force(p.link_wrenches[static_cast<std::size_t>(w)].X_link_body, st.fext[s.body]), s.comp);
        }
        return in;
    }
    const Truth t = truth_of(m, p, st);
    std::vector<double> in;
    for (const Slot& s : sys.in) {
        const int v = s.body >= 0 && m.bodies[s.body].nv() > 0 ? m.bodies[s.body].v_index + s.comp : 0;
        switch (s.quantity) {
            case Quantity::JointAcceleration: in.push_back(t.qdd[v]); break;
            case Quantity::JointTorque: in.push_back(t.tau[v]); break;
            case Quantity::ExternalWrench: in.push_back(comp(link_wrench(m, p, t, s.link.empty() ? m.bodies[s.body].name : s.link, s.body), s.comp)); break;
            case Quantity::Measurement: {
                const Sensor& sn = p.sensors[s.sensor];
                const int jv = m.bodies[sn.body].nv() > 0 ? m.bodies[sn.body].v_index + s.comp : 0;
                if (sn.type == SensorType::JointTorque) in.push_back(t.tau[jv]);
                else if (sn.type == SensorType::JointAcceleration) in.push_back(t.qdd[jv]);
                else in.push_back(sensor_reading(m, p, sn, s.comp, t));
                break;
            }
            default: in.push_back(0.0); break;
        }
    }
    if (in.empty()) in.push_back(0.0);
    return in;
}

std::vector<double> solver_inputs(const System& sys, const Model& m, const State& st) {
    std::vector<double> in;
    for (const Slot& s : sys.in) {
        const int v = s.body >= 0 && m.bodies[s.body].nv() > 0 ? m.bodies[s.body].v_index + s.comp : 0;
        switch (s.quantity) {
            case Quantity::JointAcceleration: in.push_back(st.qdd[v]); break;
            case Quantity::JointTorque: in.push_back(st.tau[v]); break;
            case Quantity::ExternalWrench: in.push_back(st.fext[s.body][s.comp]); break;
            default: in.push_back(0.0); break;
        }
    }
    if (in.empty()) in.push_back(0.0);
    return in;
}

namespace {

/// The model with the problem's gravity.
Model with_gravity(const Model& m, const Problem& p) {
    Model mg = m;
    mg.gravity = p.gravity;
    return mg;
}

/// The state's external wrenches, zero where the problem says so, and once more for every merged
/// link with an input wrench (solver_inputs gives it the state's wrench of its body).
std::vector<SVec<double>> problem_wrenches(const Model& m, const Problem& p, const State& st) {
    std::vector<SVec<double>> fext = st.fext;
    for (int i = 0; i < m.num_bodies(); ++i)
        if (p.wrench[i] == WrenchMode::Zero) fext[i] = zero6<double>();
    for (const LinkWrench& w : p.link_wrenches)
        if (w.mode == WrenchMode::Input) fext[w.body] = fext[w.body] + st.fext[w.body];
    return fext;
}

}  // namespace

std::vector<State> verification_states(const Model& m, std::uint64_t seed, int random_states, std::size_t* special) {
    std::mt19937_64 rng(seed);
    std::vector<State> states = states_at(m, special_configurations(m, rng), rng);
    if (special) *special = states.size();
    for (int k = 0; k < random_states; ++k) states.push_back(random_state(m, rng));
    // Last, random joint positions with what neither of the above draws: a floating base at its
    // identity orientation and turned by 90 and 180 degrees about each axis (a random pose is never
    // one), and velocities 10 and 100 times the random ones' scale (quadratic terms that dominate)
    struct Hard {
        double velocity;                  // scale of qd
        std::array<double, 4> xyzw{};     // the floating base's orientation, when `oriented`
        bool oriented = false;            // (otherwise the random one)
    };
    const double h = std::sqrt(0.5);
    bool floating = false;
    for (const Body& b : m.bodies) floating = floating || b.type == JointType::Floating;
    const std::vector<Hard> hard = floating ? std::vector<Hard>{{1, {0, 0, 0, 1}, true}, {10, {h, 0, 0, h}, true}, {100, {0, 1, 0, 0}, true},
                                                                {10, {0, 0, -h, h}, true}}
                                            : std::vector<Hard>{{10}, {100}};
    for (const Hard& c : hard) {
        State s = random_state(m, rng);
        for (const Body& b : m.bodies)
            if (b.type == JointType::Floating && c.oriented) std::copy(c.xyzw.begin(), c.xyzw.end(), s.q.begin() + b.q_index + 3);  // [qx qy qz qw]
        for (double& v : s.qd) v *= c.velocity;
        states.push_back(s);
    }
    return states;
}

std::vector<State> checked_states(const Model& m, const System& sys, std::uint64_t seed, int random_states, int* lenient) {
    std::size_t special = 0;
    std::vector<State> states = verification_states(m, seed, random_states, &special);
    if (lenient) *lenient = 0;
    const bool keep = !sys.allow_special_singularities || (lenient && !sys.contacts.empty());
    if (!keep) {  // the problem is singular at some of the special ones
        states.erase(states.begin(), states.begin() + static_cast<long>(special));
        return states;
    }
    std::mt19937_64 rng_mixed(seed ^ 0x6d69786564);  // ("mixed": draws of their own)
    const std::vector<State> mixed = states_at(m, mixed_configurations(m, rng_mixed), rng_mixed);
    if (!sys.allow_special_singularities) {  // regular at every one: judged there as anywhere
        states.insert(states.begin() + static_cast<long>(special), mixed.begin(), mixed.end());
    } else {  // contacts: kept, first, with the mixed ones before them
        states.insert(states.begin(), mixed.begin(), mixed.end());
        *lenient = static_cast<int>(special + mixed.size());
    }
    return states;
}

double forward_error(const std::vector<double>& out, const std::vector<double>& ref, bool nan_as_nan) {
    double e = 0, scale = 1;
    for (std::size_t k = 0; k < ref.size(); ++k) {
        const double a = out[k], b = ref[k];
        if (nan_as_nan && (a != a || b != b)) {
            if ((a != a) != (b != b)) e = INFINITY;
            continue;
        }
        const double d = nan_as_nan && a == b ? 0.0 : std::abs(a - b);
        e = std::max(e, d == d ? d : INFINITY), scale = std::max(scale, std::abs(b));
    }
    return e == INFINITY ? INFINITY : e / scale;  // (not inf / inf: an infinite reference beside an infinite error)
}

/// osim and iwim by the dense route: M from CRBA, point Jacobians from the body Jacobians.
std::vector<double> response_reference(const System& sys, const Model& m, const Problem& p, const State& st) {
    const Model mg = with_gravity(m, p);
    const int nv = m.nv;
    std::vector<double> Mv(nv * nv);
    crba(mg, st.q.data(), Mv.data());
    Eigen::MatrixXd M = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(Mv.data(), nv, nv);
    Eigen::LDLT<Eigen::MatrixXd> ldlt(M);
    auto point_rows = [&](const PointSpec& ps) {  // 6 x nv: the point's spatial velocity (point frame) = J qd
        std::vector<SVec<double>> Jb = body_jacobian(mg, st.q.data(), ps.body);
        Eigen::MatrixXd J(6, nv);
        for (int v = 0; v < nv; ++v) {
            SVec<double> c = apply(ps.X_point_body, Jb[v]);
            for (int r = 0; r < 6; ++r) J(r, v) = comp(c, r);
        }
        return J;
    };
    std::vector<double> out;
    if (p.kind == "iwim") {
        Eigen::MatrixXd B(nv, 0);
        for (int v : p.actuated) {
            B.conservativeResize(nv, B.cols() + 1);
            B.col(B.cols() - 1) = Eigen::VectorXd::Unit(nv, v);
        }
        for (const PointSpec& ps : p.points) {
            Eigen::MatrixXd J = point_rows(ps);
            B.conservativeResize(nv, B.cols() + 3);
            B.rightCols(3) = J.bottomRows(3).transpose();  // a force at the point: J_v^T
        }
        std::vector<double> qdd0(nv), zero(nv, 0.0);
        aba(mg, st.q.data(), st.qd.data(), zero.data(), static_cast<const SVec<double>*>(nullptr), qdd0.data());
        Eigen::MatrixXd Bh = ldlt.solve(B);
        out.insert(out.end(), qdd0.begin(), qdd0.end());
        for (int k = 0; k < Bh.cols(); ++k)
            for (int v = 0; v < nv; ++v) out.push_back(Bh(v, k));
    } else {
        Eigen::MatrixXd J(0, nv);
        for (const PointSpec& ps : p.points) {
            Eigen::MatrixXd Jp = point_rows(ps);
            const int first = ps.dof == 6 ? 0 : 3;
            J.conservativeResize(J.rows() + 6 - first, nv);
            J.bottomRows(6 - first) = Jp.bottomRows(6 - first);
        }
        Eigen::MatrixXd L = J * ldlt.solve(J.transpose());
        for (int r = 0; r < L.rows(); ++r)
            for (int c = 0; c < L.cols(); ++c) out.push_back(L(r, c));
        if (p.lambda) {  // Lambda itself, for the record; Lambda is judged by its residual (lambda_residual)
            Eigen::MatrixXd Lam = L.ldlt().solve(Eigen::MatrixXd::Identity(L.rows(), L.cols()));
            for (int r = 0; r < Lam.rows(); ++r)
                for (int c = 0; c < Lam.cols(); ++c) out.push_back(Lam(r, c));
        }
    }
    if (out.size() != sys.out.size()) throw std::logic_error("verify: the reference and the solver disagree on the outputs");
    return out;
}

/// Classical problems on a robot with mimic joints: the full model's RNEA and CRBA reduced with G:
/// tau_r = G^T RNEA(q, qd, G qdd_r, f^x), M_r = G^T M G, h_r = G^T h, and the known and sought
/// parts of M_r qdd_r + h_r = tau_r partitioned as for a hybrid problem. Values in the full slots.
static std::vector<double> reduced_reference(const System& sys, const Model& m, const Problem& p, const State& st) {
    const Model mg = with_gravity(m, p);
    const std::vector<SVec<double>> fext = problem_wrenches(m, p, st);
    const int nv = m.nv;
    const std::vector<int> I = independent_v_slots(m);
    const int nr = static_cast<int>(I.size());
    const Eigen::MatrixXd G = coupling_matrix(m);
    std::vector<bool> known_qdd(nr);
    bool all_qdd = true;
    for (const Body& b : m.bodies)
        for (int k = 0; k < b.nv(); ++k)
            for (int a = 0; a < nr; ++a)
                if (I[a] == b.v_index + k) known_qdd[a] = p.joint[&b - m.bodies.data()] == JointKnown::Qdd, all_qdd = all_qdd && known_qdd[a];
    Eigen::VectorXd qdd_r(nr), tau_r(nr);
    for (int a = 0; a < nr; ++a) qdd_r(a) = st.qdd[I[a]], tau_r(a) = st.tau[I[a]];
    if (all_qdd) {
        std::vector<double> qdd(nv), tau(nv);
        Eigen::Map<Eigen::VectorXd>(qdd.data(), nv) = G * qdd_r;
        rnea(mg, st.q.data(), st.qd.data(), qdd.data(), fext.data(), tau.data());
        tau_r = G.transpose() * Eigen::Map<Eigen::VectorXd>(tau.data(), nv);
    } else {
        std::vector<double> Mv(nv * nv), hv(nv);
        crba(mg, st.q.data(), Mv.data());
        nonlinear_effects(mg, st.q.data(), st.qd.data(), fext.data(), hv.data());
        const Eigen::MatrixXd M = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(Mv.data(), nv, nv);
        const Eigen::MatrixXd Mr = G.transpose() * M * G;
        const Eigen::VectorXd hr = G.transpose() * Eigen::Map<Eigen::VectorXd>(hv.data(), nv);
        std::vector<int> U, K;
        for (int a = 0; a < nr; ++a) (known_qdd[a] ? K : U).push_back(a);
        Eigen::MatrixXd Muu(U.size(), U.size());
        Eigen::VectorXd rhs(U.size());
        for (std::size_t a = 0; a < U.size(); ++a) {
            rhs(a) = tau_r(U[a]) - hr(U[a]);
            for (int k : K) rhs(a) -= Mr(U[a], k) * qdd_r(k);
            for (std::size_t c = 0; c < U.size(); ++c) Muu(a, c) = Mr(U[a], U[c]);
        }
        Eigen::VectorXd x = Muu.ldlt().solve(rhs);
        for (std::size_t a = 0; a < U.size(); ++a) qdd_r(U[a]) = x(a);
        for (int k : K) tau_r(k) = hr(k) + Mr.row(k).dot(qdd_r);
    }
    std::vector<double> qdd(nv, 0.0), tau(nv, 0.0);
    for (int a = 0; a < nr; ++a) tau[I[a]] = tau_r(a);
    Eigen::Map<Eigen::VectorXd>(qdd.data(), nv) = G * qdd_r;  // the mimics' accelerations too
    std::vector<double> out;
    std::unique_ptr<BodyQuantities> bq;
    for (const Slot& s : sys.out) out.push_back(slot_value(s, mg, st, qdd, tau, fext, bq));
    return out;
}

/// Problems with contacts: the runtime's dense KKT (contact_dynamics, impulse_dynamics) with
/// Pinocchio's damping (one damped solve). NaN outputs where the contact set is singular.
std::vector<double> contact_reference_outputs(const System& sys, const Model& m, const Problem& p, const State& st) {
    const Model mg = with_gravity(m, p);
    const std::vector<Contact> contacts = runtime_contacts(p);
    const std::vector<Xform<double>> refs = contact_references(m, p, st);
    const std::vector<SVec<double>> fext = problem_wrenches(m, p, st);
    ContactSettings settings;
    settings.mu = p.damping;
    settings.max_iter = 1;
    std::vector<double> v(m.nv), lambda(static_cast<std::size_t>(contact_rows(contacts)));
    const bool ok = p.impulse() ? impulse_dynamics(mg, contacts, st.q.data(), st.qd.data(), p.restitution, settings, v.data(), lambda.data())
                                : contact_dynamics(mg, contacts, st.q.data(), st.qd.data(), st.tau.data(), fext.data(), refs.data(), settings,
                                                   v.data(), lambda.data());
    std::vector<int> offset;
    for (int r = 0, k = 0; k < static_cast<int>(contacts.size()); ++k) offset.push_back(r), r += contacts[k].dim();
    std::vector<double> out;
    for (const Slot& s : sys.out) {
        double x = 0;
        if (s.quantity == Quantity::JointAcceleration || s.quantity == Quantity::JointVelocity) x = v[m.bodies[s.body].v_index + s.comp];
        else if (s.quantity == Quantity::ContactForce || s.quantity == Quantity::ContactImpulse) x = lambda[offset[s.contact] + s.comp];
        out.push_back(ok ? x : NAN);
    }
    return out;
}

std::vector<double> reference_outputs(const System& sys, const Model& m, const Problem& p, const State& st) {
    if (p.response_kind()) return response_reference(sys, m, p, st);
    if (!p.contacts.empty()) return contact_reference_outputs(sys, m, p, st);
    if (!sys.classical) {
        const Truth t = truth_of(m, p, st);
        std::vector<double> out;
        for (const Slot& s : sys.out) {
            const int v = m.bodies[s.body].nv() > 0 ? m.bodies[s.body].v_index + s.comp : 0;
            switch (s.quantity) {
                case Quantity::JointAcceleration: out.push_back(t.qdd[v]); break;
                case Quantity::JointTorque: out.push_back(t.tau[v]); break;
                case Quantity::ExternalWrench: out.push_back(comp(link_wrench(m, p, t, s.link.empty() ? m.bodies[s.body].name : s.link, s.body), s.comp)); break;
                case Quantity::LinkAcceleration: out.push_back(comp(t.bq.a[s.body] + t.bq.g[s.body], s.comp)); break;
                case Quantity::JointWrench: out.push_back(comp(t.bq.f[s.body], s.comp)); break;
                default: out.push_back(0.0); break;
            }
        }
        return out;
    }
    if (has_mimics(m)) return reduced_reference(sys, m, p, st);
    const Model mg = with_gravity(m, p);
    const std::vector<SVec<double>> fext = problem_wrenches(m, p, st);
    const int nv = m.nv;
    std::vector<bool> known_qdd(nv, false);
    bool all_qdd = true, all_tau = true;
    for (const Body& b : m.bodies)
        for (int k = 0; k < b.nv(); ++k) {
            known_qdd[b.v_index + k] = p.joint[&b - m.bodies.data()] == JointKnown::Qdd;
            all_qdd = all_qdd && known_qdd[b.v_index + k];
            all_tau = all_tau && !known_qdd[b.v_index + k];
        }
    std::vector<double> qdd = st.qdd, tau = st.tau;
    if (all_qdd) {
        rnea(mg, st.q.data(), st.qd.data(), st.qdd.data(), fext.data(), tau.data());
    } else if (all_tau) {
        aba(mg, st.q.data(), st.qd.data(), st.tau.data(), fext.data(), qdd.data());
    } else {  // M_UU qdd_U = tau_U - h_U - M_UK qdd_K;  tau_K = M_K. qdd + h_K
        std::vector<double> M(nv * nv), h(nv);
        crba(mg, st.q.data(), M.data());
        nonlinear_effects(mg, st.q.data(), st.qd.data(), fext.data(), h.data());
        std::vector<int> U, K;
        for (int i = 0; i < nv; ++i) (known_qdd[i] ? K : U).push_back(i);
        Eigen::MatrixXd Muu(U.size(), U.size());
        Eigen::VectorXd rhs(U.size());
        for (std::size_t a = 0; a < U.size(); ++a) {
            rhs(a) = st.tau[U[a]] - h[U[a]];
            for (int k : K) rhs(a) -= M[U[a] * nv + k] * st.qdd[k];
            for (std::size_t c = 0; c < U.size(); ++c) Muu(a, c) = M[U[a] * nv + U[c]];
        }
        Eigen::VectorXd x = Muu.ldlt().solve(rhs);
        for (std::size_t a = 0; a < U.size(); ++a) qdd[U[a]] = x(a);
        for (int k : K) {
            tau[k] = h[k];
            for (int j = 0; j < nv; ++j) tau[k] += M[k * nv + j] * qdd[j];
        }
    }
    std::vector<double> out;
    std::unique_ptr<BodyQuantities> bq;
    for (const Slot& s : sys.out) out.push_back(slot_value(s, mg, st, qdd, tau, fext, bq));
    return out;
}

/// iwim: the scaled residual of M [qdd_0 B^] = [-h B], column by column (max over columns of
/// |M x - rhs|_inf / (|M|_inf |x|_inf + |rhs|_inf)).
double iwim_backward_error(const Model& m, const Problem& p, const State& st, const std::vector<double>& out) {
    const Model mg = with_gravity(m, p);
    const int nv = m.nv;
    std::vector<double> Mv(nv * nv), h(nv), zero(nv, 0.0);
    crba(mg, st.q.data(), Mv.data());
    nonlinear_effects(mg, st.q.data(), st.qd.data(), static_cast<const SVec<double>*>(nullptr), h.data());
    Eigen::MatrixXd M = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(Mv.data(), nv, nv);
    // the right-hand sides as the reference builds them (dense route): qdd_0's is -h
    std::vector<double> ref = [&] {
        std::vector<double> r;
        Eigen::MatrixXd B(nv, 0);
        for (int v : p.actuated) B.conservativeResize(nv, B.cols() + 1), B.col(B.cols() - 1) = Eigen::VectorXd::Unit(nv, v);
        for (const PointSpec& ps : p.points) {
            std::vector<SVec<double>> Jb = body_jacobian(mg, st.q.data(), ps.body);
            B.conservativeResize(nv, B.cols() + 3);
            for (int v = 0; v < nv; ++v) {
                SVec<double> c = apply(ps.X_point_body, Jb[v]);
                for (int k = 0; k < 3; ++k) B(v, B.cols() - 3 + k) = c.l[k];
            }
        }
        for (int v = 0; v < nv; ++v) r.push_back(-h[v]);
        for (int k = 0; k < B.cols(); ++k)
            for (int v = 0; v < nv; ++v) r.push_back(B(v, k));
        return r;
    }();
    const double Mnorm = M.cwiseAbs().rowwise().sum().maxCoeff();
    const std::size_t columns = out.size() / static_cast<std::size_t>(nv);
    std::vector<double> res(columns), scale(columns), b_norm(columns);
    for (std::size_t c = 0; c < columns; ++c) {
        Eigen::VectorXd x(nv), b(nv);
        for (int v = 0; v < nv; ++v) x(v) = out[c * nv + v], b(v) = ref[c * nv + v];
        res[c] = (M * x - b).cwiseAbs().maxCoeff();
        b_norm[c] = b.cwiseAbs().maxCoeff();
        scale[c] = Mnorm * x.cwiseAbs().maxCoeff() + b_norm[c];
    }
    // A contact's three columns of B are computed (J_p^T e_k), in the reference and in the solver
    // alike, from the same terms: each is known to about a rounding unit of the largest of the
    // three, whatever its own size. A column far smaller than that (a force nearly along the axis
    // of a straight arm's last joint: 4e-12 against 0.58) has no meaningful scale of its own, its
    // residual being that uncertainty; under 1e-5 of its contact's largest it is judged against
    // that column's scale (the contact's normwise backward error), where a rounding unit is 2e-11
    // of the verifier's 1e-10 at most. qdd_0's and the joints' unit-torque columns keep their own.
    const std::size_t first_contact = 1 + p.actuated.size();
    double worst = 0;
    for (std::size_t c = 0; c < columns; ++c) {
        double sc = scale[c];
        if (c >= first_contact) {
            const std::size_t g = first_contact + (c - first_contact) / 3 * 3;
            double b_group = 0, scale_group = 0;
            for (std::size_t k = g; k < std::min(g + 3, columns); ++k) b_group = std::max(b_group, b_norm[k]), scale_group = std::max(scale_group, scale[k]);
            if (b_norm[c] <= 1e-5 * b_group) sc = scale_group;
        }
        worst = std::max(worst, res[c] == res[c] ? (sc > 0 ? res[c] / sc : res[c]) : INFINITY);
    }
    return worst;
}

namespace {

/// Lambda^-1 from the reference outputs, as a matrix.
Eigen::MatrixXd lambda_inverse_of(const System& sys, const std::vector<double>& ref) {
    const int k = sys.lambda_size;
    Eigen::MatrixXd A(k, k);
    for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j) A(i, j) = ref[static_cast<std::size_t>(i * k + j)];
    return A;
}

}  // namespace

double response_forward_error(const System& sys, const std::vector<double>& out, const std::vector<double>& ref) {
    if (sys.lambda_size == 0) return forward_error(out, ref);
    const std::size_t k2 = static_cast<std::size_t>(sys.lambda_size) * sys.lambda_size;
    return forward_error(std::vector<double>(out.begin(), out.begin() + static_cast<long>(k2)),
                         std::vector<double>(ref.begin(), ref.begin() + static_cast<long>(k2)));
}

double lambda_residual(const System& sys, const std::vector<double>& out, const std::vector<double>& ref) {
    const int k = sys.lambda_size;
    const Eigen::MatrixXd A = lambda_inverse_of(sys, ref);
    Eigen::MatrixXd X(k, k);
    const std::size_t base = static_cast<std::size_t>(k) * k;
    for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j) X(i, j) = out[base + static_cast<std::size_t>(i * k + j)];
    if (!X.allFinite()) return INFINITY;
    const double r = (A * X - Eigen::MatrixXd::Identity(k, k)).cwiseAbs().maxCoeff();
    const double scale = A.cwiseAbs().rowwise().sum().maxCoeff() * X.cwiseAbs().rowwise().sum().maxCoeff();
    return r == r ? (scale > 0 ? r / scale : r) : INFINITY;
}

bool pivot_refuses(const ScheduledPivot& p, double value, bool single) {
    const double threshold = single ? p.threshold_float : p.threshold;
    if (threshold <= 0) return false;
    return p.kind == PivotKind::Lambda ? !(value >= threshold) : !(std::abs(value) >= threshold);
}

bool reference_refused(const std::vector<double>& ref) {
    return std::any_of(ref.begin(), ref.end(), [](double x) { return x != x; });
}

bool lambda_refusal_justified(const System& sys, const std::vector<ScheduledPivot>& pivots, const std::vector<double>& ref, bool single) {
    if (reference_refused(ref)) return true;  // contacts: the reference's KKT solve found the contact set singular too
    if (sys.lambda_size == 0) return false;
    // the pivots of the same LDL^T (no pivoting), of the reference Lambda^-1, in long double
    const int k = sys.lambda_size;
    std::vector<std::vector<long double>> a(k, std::vector<long double>(k));
    for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j) a[i][j] = ref[static_cast<std::size_t>(std::min(i, j) * k + std::max(i, j))];
    std::vector<long double> d(k);
    for (int j = 0; j < k; ++j) {
        d[j] = a[j][j];
        if (!(d[j] > 0)) {  // not positive definite: a refusal is right from here on
            for (int l = j; l < k; ++l) d[l] = 0;
            break;
        }
        for (int i = j + 1; i < k; ++i) {
            const long double lij = a[i][j] / d[j];
            for (int l = j + 1; l <= i; ++l) a[i][l] -= lij * a[l][j];
        }
    }
    for (const ScheduledPivot& p : pivots)
        if (p.kind == PivotKind::Lambda && p.lambda_index >= 0 &&
            d[static_cast<std::size_t>(p.lambda_index)] < kRefusalMargin * (single ? p.threshold_float : p.threshold))
            return true;
    return false;
}

namespace {

/// Problems with contacts whose outputs hold every independent velocity coordinate's acceleration
/// (or v+) and every contact row: where the KKT system's residual can be formed from the outputs alone. The
/// slots' positions: v[k] in out (-1 where absent), lambda[r] in out.
struct ContactOutputs {
    std::vector<int> v, lambda;
    bool complete = false;
};
ContactOutputs contact_outputs(const System& sys, const Model& m, const Problem& p) {
    ContactOutputs c;
    if (p.contacts.empty()) return c;
    const std::vector<Contact> contacts = runtime_contacts(p);
    std::vector<int> offset;
    int rows = 0;
    for (const Contact& k : contacts) offset.push_back(rows), rows += k.dim();
    c.v.assign(static_cast<std::size_t>(m.nv), -1), c.lambda.assign(static_cast<std::size_t>(rows), -1);
    for (std::size_t k = 0; k < sys.out.size(); ++k) {
        const Slot& s = sys.out[k];
        if (s.quantity == Quantity::JointAcceleration || s.quantity == Quantity::JointVelocity)
            c.v[static_cast<std::size_t>(m.bodies[s.body].v_index + s.comp)] = static_cast<int>(k);
        else if (s.quantity == Quantity::ContactForce || s.quantity == Quantity::ContactImpulse)
            c.lambda[static_cast<std::size_t>(offset[static_cast<std::size_t>(s.contact)] + s.comp)] = static_cast<int>(k);
    }
    bool every_v = true;  // every independent velocity coordinate (a mimic's follows its master's)
    for (int k : independent_v_slots(m)) every_v = every_v && c.v[static_cast<std::size_t>(k)] >= 0;
    c.complete = every_v && std::find(c.lambda.begin(), c.lambda.end(), -1) == c.lambda.end();
    return c;
}

/// The backward error of a contact problem's outputs: the normwise scaled residual of its KKT system
/// (the runtime's terms, nelu/contact.hpp; in the independent coordinates with mimic joints),
///   fd:      M qdd + h - tau - J^T lambda = 0,      J qdd + gamma + k + mu lambda = 0;
///   impulse: M (v+ - v-) - J^T Lambda = 0,          J v+ + r J v- + mu Lambda = 0,
/// |residual|_inf / (|A|_inf |x|_inf + |b|_inf). A backward-stable solve makes it a few rounding units whatever the condition
/// of the contact set (redundant contacts with a small damping, an arm whose tool contact fixes
/// it near a kinematic singularity), where the forward error is that condition times it.
double contact_backward_error(const Model& m, const Problem& p, const State& st, const ContactOutputs& c, const std::vector<double>& out) {
    using Mat = Eigen::MatrixXd;
    using Vec = Eigen::VectorXd;
    using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Model mg = with_gravity(m, p);
    const std::vector<Contact> contacts = runtime_contacts(p);
    const int nv = m.nv, nc = static_cast<int>(c.lambda.size());
    // in the independent coordinates of a robot with mimic joints (G = 1 without): M_r = G^T M G,
    // J_r = J G, G^T h, G^T tau, and the independent velocities' outputs
    const Mat G = coupling_matrix(m);
    const std::vector<int> I = independent_v_slots(m);
    const int n = static_cast<int>(I.size());
    Vec v(n), lambda(nc), vm(n);
    for (int a = 0; a < n; ++a) v(a) = out[static_cast<std::size_t>(c.v[I[a]])], vm(a) = st.qd[I[a]];  // vm: v- of an impulse
    for (int k = 0; k < nc; ++k) lambda(k) = out[static_cast<std::size_t>(c.lambda[k])];
    std::vector<double> Mv(static_cast<std::size_t>(nv * nv));
    crba(mg, st.q.data(), Mv.data());
    const Mat M = G.transpose() * Eigen::Map<const RowMajor>(Mv.data(), nv, nv) * G;
    const bool impulse = p.impulse();
    const std::vector<Xform<double>> refs = impulse ? std::vector<Xform<double>>() : contact_references(m, p, st);
    const ContactTerms<double> t = contact_terms<double>(mg, contacts, st.q.data(), impulse ? nullptr : st.qd.data(),
                                                         refs.empty() ? nullptr : refs.data(), !impulse);
    const Mat J = Eigen::Map<const RowMajor>(t.J.data(), nc, nv) * G;
    Vec h = Vec::Zero(n), tau = Vec::Zero(n);
    if (!impulse) {
        const std::vector<SVec<double>> fext = problem_wrenches(m, p, st);
        std::vector<double> hv(static_cast<std::size_t>(nv));
        nonlinear_effects(mg, st.q.data(), st.qd.data(), fext.data(), hv.data());
        h = G.transpose() * Eigen::Map<const Vec>(hv.data(), nv);
        tau = G.transpose() * Eigen::Map<const Vec>(st.tau.data(), nv);
    }
    const Vec gamma = Eigen::Map<const Vec>(t.gamma.data(), nc), corrector = Eigen::Map<const Vec>(t.corrector.data(), nc);
    auto norm = [](const Vec& x) {  // |x|_inf, infinite where an entry is NaN
        double r = 0;
        for (Eigen::Index k = 0; k < x.size(); ++k) r = std::max(r, std::abs(x(k)) == std::abs(x(k)) ? std::abs(x(k)) : INFINITY);
        return r;
    };
    const double Mn = n ? M.cwiseAbs().rowwise().sum().maxCoeff() : 0.0, JTn = n && nc ? J.cwiseAbs().colwise().sum().maxCoeff() : 0.0,
                 Jn = n && nc ? J.cwiseAbs().rowwise().sum().maxCoeff() : 0.0;
    const double rest = impulse ? p.restitution : 0.0;
    // the dynamics rows and the contact rows
    const Vec e1 = impulse ? Vec(M * (v - vm) - J.transpose() * lambda) : Vec(M * v + h - tau - J.transpose() * lambda);
    const Vec e2 = impulse ? Vec(J * (v + rest * vm) + p.damping * lambda) : Vec(J * v + gamma + corrector + p.damping * lambda);
    const double r1 = norm(e1), r2 = norm(e2);
    // normwise: |A|_inf |x|_inf + |b|_inf with A = [M -J^T; J mu 1], x = [v; lambda] and b the
    // terms that hold no unknown (a block row may have no term but the unknowns': the fully held
    // arm's J v+ = 0 at r = 0, whose v+ is zero to rounding)
    const double A = std::max(Mn + JTn, Jn + p.damping), x = std::max(norm(v), norm(lambda));
    double b1 = 0, b2 = 0;
    if (impulse) b1 = Mn * norm(vm), b2 = rest * Jn * norm(vm);
    else b1 = norm(h - tau), b2 = norm(gamma) + norm(corrector);
    const double scale = A * x + std::max(b1, b2), r = std::max(r1, r2);
    return scale > 0 ? r / scale : r;
}

}  // namespace

bool judged_by_backward_error(const System& sys, const Problem& p) {
    bool seeks_qdd = false;
    for (const Slot& s : sys.out) seeks_qdd = seeks_qdd || s.quantity == Quantity::JointAcceleration;
    return (seeks_qdd && sys.classical && !p.response_kind()) || p.kind == "iwim" || sys.lambda_size > 0 || contact_residual_applies(sys, p);
}

bool contact_residual_applies(const System& sys, const Problem& p) {
    if (p.contacts.empty() || sys.out.empty()) return false;
    int nv = 0, rows = 0;  // every velocity coordinate and every contact row among the outputs (counted; slots are distinct)
    for (const Slot& s : sys.out) {
        nv += s.quantity == Quantity::JointAcceleration || s.quantity == Quantity::JointVelocity;
        rows += s.quantity == Quantity::ContactForce || s.quantity == Quantity::ContactImpulse;
    }
    int want_rows = 0, want_nv = 0;
    for (const ContactSpec& c : p.contacts) want_rows += c.contact.dim();
    for (const BodyBlock& B : sys.blocks) want_nv += B.mimic ? 0 : static_cast<int>(B.qdd.size());  // (a mimic's is no output)
    return nv == want_nv && rows == want_rows;
}

double backward_error(const System& sys, const Model& m, const Problem& p, const State& st, const std::vector<double>& out) {
    return backward_error(sys, m, p, st, out, p.kind == "osim" ? response_reference(sys, m, p, st) : std::vector<double>());
}

double backward_error(const System& sys, const Model& m, const Problem& p, const State& st, const std::vector<double>& out,
                      const std::vector<double>& ref) {
    if (p.kind == "iwim") return iwim_backward_error(m, p, st, out);
    if (!p.contacts.empty()) {
        const ContactOutputs c = contact_outputs(sys, m, p);
        if (!c.complete) throw std::logic_error("backward_error: the outputs of this contact problem do not hold its KKT unknowns");
        return contact_backward_error(m, p, st, c, out);
    }
    if (p.kind == "osim")  // with lambda: Lambda^-1's forward error and Lambda's residual, whichever is worse
        return std::max(response_forward_error(sys, out, ref), lambda_residual(sys, out, ref));
    const Model mg = with_gravity(m, p);
    const std::vector<SVec<double>> fext = problem_wrenches(m, p, st);
    int nv = m.nv;
    std::vector<double> qdd = st.qdd, tau = st.tau, M(nv * nv), h(nv);
    for (std::size_t k = 0; k < sys.out.size(); ++k) {  // the joint outputs (links' quantities follow from them)
        const Quantity q = sys.out[k].quantity;
        if (q != Quantity::JointAcceleration && q != Quantity::JointTorque) continue;
        const int v = m.bodies[sys.out[k].body].v_index + sys.out[k].comp;
        (q == Quantity::JointAcceleration ? qdd : tau)[v] = out[k];
    }
    // The links' outputs (accelerations, joint wrenches) follow from q, qd, qdd and the wrenches,
    // and the residual does not read them: each against its value from the solver's own qdd
    // (reference RNEA; well conditioned, so judged by its relative error, rounding-sized)
    double derived = 0, derived_scale = 1;
    {
        std::vector<double> qdd_full = qdd;
        couple_velocities(m, qdd_full.data());  // (a mimic joint's acceleration follows its master's)
        std::unique_ptr<BodyQuantities> bq;
        for (std::size_t k = 0; k < sys.out.size(); ++k) {
            const Quantity q = sys.out[k].quantity;
            if (q != Quantity::LinkAcceleration && q != Quantity::JointWrench) continue;
            const double x = slot_value(sys.out[k], mg, st, qdd_full, tau, fext, bq), e = std::abs(out[k] - x);
            derived = e == e ? std::max(derived, e) : INFINITY, derived_scale = std::max(derived_scale, std::abs(x));
        }
        derived /= derived_scale;
    }
    crba(mg, st.q.data(), M.data());
    nonlinear_effects(mg, st.q.data(), st.qd.data(), fext.data(), h.data());
    if (has_mimics(m)) {  // the residual of M_r qdd_r + h_r = tau_r (G^T M G, G^T h)
        const std::vector<int> I = independent_v_slots(m);
        const Eigen::MatrixXd G = coupling_matrix(m);
        const Eigen::MatrixXd Mf = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(M.data(), nv, nv);
        const int nr = static_cast<int>(I.size());
        Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Mr = G.transpose() * Mf * G;
        Eigen::VectorXd hr = G.transpose() * Eigen::Map<Eigen::VectorXd>(h.data(), nv);
        std::vector<double> qr(nr), tr(nr);
        for (int a = 0; a < nr; ++a) qr[a] = qdd[I[a]], tr[a] = tau[I[a]];
        nv = nr, qdd = qr, tau = tr;
        M.assign(Mr.data(), Mr.data() + nr * nr), h.assign(hr.data(), hr.data() + nr);
    }
    double r = 0, Mnorm = 0, qn = 0, hn = 0, tn = 0;
    for (int i = 0; i < nv; ++i) {
        double ri = h[i] - tau[i], rowsum = 0;
        for (int j = 0; j < nv; ++j) ri += M[i * nv + j] * qdd[j], rowsum += std::abs(M[i * nv + j]);
        r = std::max(r, std::abs(ri) == std::abs(ri) ? std::abs(ri) : INFINITY);
        Mnorm = std::max(Mnorm, rowsum), qn = std::max(qn, std::abs(qdd[i]));
        hn = std::max(hn, std::abs(h[i])), tn = std::max(tn, std::abs(tau[i]));
    }
    const double scale = Mnorm * qn + hn + tn;
    return std::max(scale > 0 ? r / scale : r, derived);
}

VerifyReport run_verify(const Model& m, const Problem& p, const System& sys, const Factorization& f, int random_states) {
    VerifyReport rep;
    // Contacts: the special configurations too, where the contact set may be singular (the
    // reference's KKT solve refuses there) or nearly so. There the solver may refuse only where the
    // reference does (a candidate whose pivots vanish where the problem is regular, umfpack's on
    // the humanoid's soles dividing by the sine of a joint angle, is not accepted); its errors,
    // which the near-singular contact set's conditioning sets (forward 3e-9, backward 5e-12 on the
    // held UR5e at its limits), are not judged there.
    int lenient = 0;
    const std::vector<State> states = checked_states(m, sys, 0x76657269, random_states, &lenient);
    std::vector<ir::Id> roots = f.outputs;
    for (const ScheduledPivot& pv : f.pivots)
        if (pv.threshold > 0) roots.push_back(pv.value);
    std::vector<bool> live = f.prog.live_nodes(roots);
    const bool seeks_qdd = rep.seeks_qdd = judged_by_backward_error(sys, p);
    for (const State& st : states) {
        const bool special = &st - states.data() < lenient;
        std::vector<double> in = solver_inputs(sys, m, p, st);
        std::vector<double> val = f.prog.evaluate(st.q.data(), st.qd.data(), in.data(), live);
        std::vector<double> ref = reference_outputs(sys, m, p, st);
        bool refused = false;  // what the generated code's pivot checks would say (double)
        for (const ScheduledPivot& pv : f.pivots) refused = refused || pivot_refuses(pv, val[pv.value], false);
        if (refused) {  // NELU_STATUS_SMALL_PIVOT: right only where Lambda does not exist
            ++(lambda_refusal_justified(sys, f.pivots, ref, false) ? rep.refused_singular : rep.refused_regular);
            continue;
        }
        std::vector<double> out;
        for (ir::Id o : f.outputs) out.push_back(val[o]);
        if (special) continue;  // (their refusals judged above; their errors are the conditioning's)
        if (reference_refused(ref)) ++rep.reference_refused;
        else rep.max_rel_error = std::max(rep.max_rel_error, response_forward_error(sys, out, ref));
        if (seeks_qdd) rep.max_backward_error = std::max(rep.max_backward_error, backward_error(sys, m, p, st, out, ref));
        ++rep.states;
    }
    return rep;
}

DerivativeReport verify_derivatives(const Model& m, const Problem& p, const System& sys, const Factorization& f, int random_states) {
    using C = std::complex<double>;
    DerivativeReport rep;
    const std::vector<Tangent> cols = jacobian_columns(m, static_cast<int>(sys.in.size()));
    rep.columns = static_cast<int>(cols.size());
    const std::size_t nc = cols.size(), no = f.outputs.size();
    // the seeds as IR nodes, evaluated below: the derivative of every input along each column
    ir::Program seeds = f.prog;
    std::vector<std::vector<std::pair<ir::Id, ir::Id>>> seed_nodes(nc);  // (input node, its derivative)
    for (std::size_t j = 0; j < nc; ++j) {
        Differentiator dt(seeds, m, cols[j]);
        for (int k = 0; k < m.nq; ++k) seed_nodes[j].push_back({seeds.input(ir::Source::Q, k), -1});
        for (int k = 0; k < m.nv; ++k) seed_nodes[j].push_back({seeds.input(ir::Source::Qd, k), -1});
        for (std::size_t k = 0; k < sys.in.size(); ++k) seed_nodes[j].push_back({seeds.input(ir::Source::In, static_cast<int>(k)), -1});
        for (auto& [x, dx] : seed_nodes[j]) dx = dt.d(x);
    }
    std::vector<ir::Id> value_roots = f.outputs, all = f.outputs;
    for (const ScheduledPivot& pv : f.pivots)
        if (pv.threshold > 0) value_roots.push_back(pv.value), all.push_back(pv.value);
    all.insert(all.end(), f.jacobian.begin(), f.jacobian.end());
    // the lanes (LaneGroup): each group's right-hand sides and extras, and each kernel's statements
    // in order, run column by column on the program's values
    const std::vector<bool> dep = lane_dependent(f.prog);
    std::vector<std::vector<ir::Id>> kernel_nodes;
    for (const LaneKernel& K : f.lane_kernels) {
        KernelProgram kp = kernel_program(f.prog, K, dep);
        all.insert(all.end(), kp.reads.begin(), kp.reads.end());
        kernel_nodes.push_back(std::move(kp.statements));
    }
    for (const LaneGroup& G : f.lane_groups) {
        all.insert(all.end(), G.rhs.begin(), G.rhs.end());
        all.insert(all.end(), G.extra.begin(), G.extra.end());
    }
    std::vector<double> scratch(static_cast<std::size_t>(f.prog.size()), 0.0);
    std::vector<ir::Id> lane_inputs;  // every lane input: NaN but for the kernel's own rows, so that reading another row shows
    for (int i = 0; i < f.prog.size(); ++i)
        if (f.prog.node(i).op == ir::Op::Input && f.prog.node(i).source == ir::Source::Lane) lane_inputs.push_back(i);
    const std::vector<bool> live_value = f.prog.live_nodes(value_roots), live_all = f.prog.live_nodes(all);
    const std::vector<State> states = checked_states(m, sys, 0x64657276, random_states);
    constexpr double h = 1e-30;
    for (std::size_t s = 0; s < states.size(); ++s) {
        const State& st = states[s];
        const std::vector<double> in = solver_inputs(sys, m, p, st);
        const std::vector<double> val = f.prog.evaluate(st.q.data(), st.qd.data(), in.data(), live_all);
        bool refused = false;
        for (const ScheduledPivot& pv : f.pivots) refused = refused || pivot_refuses(pv, val[pv.value], false);
        if (refused) continue;
        const std::vector<double> sv = seeds.evaluate(st.q.data(), st.qd.data(), in.data());
        std::vector<double> J(no * nc), Jcs(no * nc);
        double scale = 1;
        for (std::size_t j = 0; j < nc; ++j) {
            std::vector<C> q(st.q.begin(), st.q.end()), qd(st.qd.begin(), st.qd.end()), inc(in.begin(), in.end());
            std::size_t k = 0;
            for (auto& z : q) z += C(0, h * sv[seed_nodes[j][k++].second]);
            for (auto& z : qd) z += C(0, h * sv[seed_nodes[j][k++].second]);
            for (std::size_t i = 0; i < sys.in.size(); ++i) inc[i] += C(0, h * sv[seed_nodes[j][k++].second]);  // not the padding of an empty `in`
            const std::vector<C> cv = f.prog.evaluate_as<C>(q.data(), qd.data(), inc.data(), live_value);
            for (std::size_t o = 0; o < no; ++o) {
                Jcs[o * nc + j] = cv[f.outputs[o]].imag() / h;
                J[o * nc + j] = val[f.jacobian[o * nc + j]];
                scale = std::max(scale, std::abs(Jcs[o * nc + j]));
            }
        }
        std::vector<double> Jl = J;  // what NAME_derivatives computes: the lanes' columns from their kernels
        for (const LaneGroup& G : f.lane_groups) {
            const LaneKernel& K = f.lane_kernels[static_cast<std::size_t>(G.kernel)];
            const std::size_t w = G.columns.size();
            for (std::size_t c = 0; c < w; ++c) {
                for (ir::Id x : lane_inputs) scratch[static_cast<std::size_t>(x)] = NAN;
                for (std::size_t r = 0; r < K.rows.size(); ++r) scratch[K.inputs[r]] = val[G.rhs[r * w + c]];
                for (ir::Id i : kernel_nodes[static_cast<std::size_t>(G.kernel)]) {
                    const ir::Node& n = f.prog.node(i);
                    auto at = [&](ir::Id o) { return dep[o] ? scratch[o] : f.prog.is_const(o) ? f.prog.value(o) : val[o]; };
                    double v = 0;
                    switch (n.op) {
                        case ir::Op::Add: v = at(n.a) + at(n.b); break;
                        case ir::Op::Sub: v = at(n.a) - at(n.b); break;
                        case ir::Op::Mul: v = at(n.a) * at(n.b); break;
                        case ir::Op::Div: v = at(n.a) / at(n.b); break;
                        case ir::Op::Neg: v = -at(n.a); break;
                        default: v = NAN; break;  // (a kernel is a solve: no other operation)
                    }
                    scratch[i] = v;
                }
                for (std::size_t o = 0; o < no; ++o) {
                    const ir::Id ko = K.outputs[o];
                    const double kv = dep[ko] ? scratch[ko] : f.prog.is_const(ko) ? f.prog.value(ko) : val[ko];
                    Jl[o * nc + static_cast<std::size_t>(G.columns[c])] = kv + val[G.extra[o * w + c]];
                }
            }
        }
        for (std::size_t e = 0; e < J.size(); ++e) {
            if (const double d = std::abs(Jl[e] - J[e]) / scale; !(d <= rep.lanes_vs_program)) rep.lanes_vs_program = d == d ? d : INFINITY;
            const double err = std::max(std::abs(J[e] - Jcs[e]), std::abs(Jl[e] - Jcs[e])) / scale;
            if (!(err <= rep.max_error)) {
                rep.max_error = err == err ? err : INFINITY;
                rep.worst = fmt::format("d out[{}] / d {}, state {}", e / nc, cols[e % nc].label, s);
            }
        }
        ++rep.states;
    }
    return rep;
}

}  // namespace nelu
