// contact_pinocchio_check.cpp: nelu's contact reference (runtime/include/nelu/contact.hpp) against
// Pinocchio 3.7.0's constraintDynamics and impulseDynamics on the robots of issue 27's examples
// (floating Mini Cheetah with four point feet, floating humanoid with two 6-D soles, fixed UR5e
// with a 6-D tool contact), both frames (LOCAL, LOCAL_WORLD_ALIGNED), without and with Baumgarte
// gains (random per component, references near the contact frames), undamped (mu = 0) and, as
// one row, damped with one proximal step (mu = 1e-4, max_iter = 1: the damped KKT solve itself).
// States: random (fixed seeds), drawn again while a pivot of J M^-1 J^T is below 1e-5 of its largest
// diagonal entry (the fully constrained arm near a kinematic singularity, where both libraries'
// forward errors grow with the condition number). Not timed: an agreement check, built with nelu_bench (NELU_BUILD_BENCHMARKS=ON) and run by the
// benchmark smoke of scripts/test.sh.
//
//   nelu_contact_pinocchio_check [STATES]    (default 50 random states per row)
//
// Prints per row the worst max |nelu - pinocchio| / max(1, max |pinocchio|) of qdd (v+ for
// impulses) and of lambda_c (impulse_c); exits 1 when any is above 1e-9.
//
// Conventions translated (peer_pinocchio.cpp translates the same): Pinocchio's spatial vectors,
// free-flyer velocities, Baumgarte gains and 6-D contact forces are linear first, nelu's angular
// first; a continuous joint has Pinocchio coordinates (cos q, sin q). A contact's placement X_{c<-b}
// is Pinocchio's joint1_placement SE3(E^T, r) on the joint of body b (whose frame is b's); the
// reference placement (world -> reference, E and r) is joint2_placement SE3(E^T, r) with joint2 the
// universe.
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/algorithm/contact-info.hpp>
#include <pinocchio/algorithm/impulse-dynamics.hpp>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "load.hpp"
#include "nelu/contact.hpp"
#include "nelu/state.hpp"

namespace {

using nelu::Contact;
using nelu::ContactFrame;
using nelu::ContactType;
using nelu::Vec3;
using nelu::Xform;
using ConstraintModels = PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(pinocchio::RigidConstraintModel);
using ConstraintDatas = PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(pinocchio::RigidConstraintData);

constexpr double kTolerance = 1e-9;

struct ContactSpec {
    const char* link;
    ContactType type;
    Vec3<double> xyz, rpy;
};
struct RobotSpec {
    const char* name;
    const char* urdf;  // in robots/
    bool floating;
    std::vector<ContactSpec> contacts;
};

/// The robots and contacts of tests/test_contact_reference.cpp.
std::vector<RobotSpec> robot_specs() {
    const ContactType P = ContactType::Point, F = ContactType::SixD;
    return {{"minicheetah+floating, 4 points", "quadruped_minicheetah.urdf", true,
             {{"FR_foot", P, {{0, 0, -0.02}}, {{0, 0, 0}}},
              {"FL_foot", P, {{0, 0, -0.02}}, {{0, 0, 0}}},
              {"RR_foot", P, {{0, 0, -0.02}}, {{0, 0, 0}}},
              {"RL_foot", P, {{0.01, -0.02, -0.02}}, {{0.3, -0.2, 1.1}}}}},
            {"humanoid_winter+floating, 2 soles", "humanoid_winter.urdf", true,
             {{"l_foot", F, {{0.05, 0, -0.08}}, {{0, 0, 0}}}, {"r_foot", F, {{0.04, 0.01, -0.08}}, {{0.1, 0.2, -0.7}}}}},
            {"ur5e, 6-D tool", "ur5e.urdf", false, {{"tool0", F, {{0, 0, 0.05}}, {{0.4, 0, 0.2}}}}}};
}

pinocchio::SE3 to_se3(const Xform<double>& X) {
    Eigen::Matrix3d R;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) R(i, j) = X.E(j, i);
    return pinocchio::SE3(R, Eigen::Vector3d(X.r[0], X.r[1], X.r[2]));
}

/// One robot in both libraries, with the maps between their coordinates.
struct Pair {
    nelu::Model model;
    std::vector<Contact> contacts;
    pinocchio::Model pin;
    std::vector<pinocchio::JointIndex> joint;  // per nelu body
    std::vector<int> v_to_pin;                 // per nelu velocity slot

    Eigen::VectorXd q(const std::vector<double>& q) const {
        Eigen::VectorXd out(pin.nq);
        for (std::size_t i = 0; i < joint.size(); ++i) {
            const nelu::Body& b = model.bodies[i];
            const int iq = pin.idx_qs[joint[i]];
            if (pin.nqs[joint[i]] == 2 && b.nq() == 1) out[iq] = std::cos(q[b.q_index]), out[iq + 1] = std::sin(q[b.q_index]);
            else
                for (int c = 0; c < b.nq(); ++c) out[iq + c] = q[b.q_index + c];
        }
        return out;
    }
    Eigen::VectorXd v(const std::vector<double>& x) const {
        Eigen::VectorXd out(pin.nv);
        for (int k = 0; k < model.nv; ++k) out[v_to_pin[k]] = x[k];
        return out;
    }
    std::vector<double> from_pin(const Eigen::VectorXd& x) const {
        std::vector<double> out(model.nv);
        for (int k = 0; k < model.nv; ++k) out[k] = x[v_to_pin[k]];
        return out;
    }
    /// Pinocchio's constraint models for nelu's contacts and references.
    ConstraintModels constraints(const std::vector<Contact>& cs, const std::vector<Xform<double>>& refs) const {
        ConstraintModels out;
        for (std::size_t i = 0; i < cs.size(); ++i) {
            const Contact& c = cs[i];
            pinocchio::RigidConstraintModel cm(c.type == ContactType::Point ? pinocchio::CONTACT_3D : pinocchio::CONTACT_6D, pin,
                                               joint[c.body], to_se3(c.placement),
                                               c.frame == ContactFrame::Local ? pinocchio::LOCAL : pinocchio::LOCAL_WORLD_ALIGNED);
            cm.joint2_placement = to_se3(refs[i]);
            for (int k = 0; k < c.dim(); ++k) {  // nelu's row k is Pinocchio's row (k + 3) % 6 for a 6-D contact
                const int p = c.dim() == 6 ? (k + 3) % 6 : k;
                cm.corrector.Kp[p] = c.kp[k], cm.corrector.Kd[p] = c.kd[k];
            }
            out.push_back(cm);
        }
        return out;
    }
};

/// Pinocchio's contact vector (per contact: 3 rows, or 6 linear first) in nelu's order.
std::vector<double> forces_from_pin(const std::vector<Contact>& cs, const Eigen::VectorXd& x) {
    std::vector<double> out;
    int row = 0;
    for (const Contact& c : cs) {
        for (int k = 0; k < c.dim(); ++k) out.push_back(x[row + (c.dim() == 6 ? (k + 3) % 6 : k)]);
        row += c.dim();
    }
    return out;
}

Pair load(const RobotSpec& spec, const std::string& robots) {
    const std::string path = robots + "/" + spec.urdf;
    const nelu::LoadResult lr = nelu::load_urdf_file(path, {spec.floating, {}});
    Pair p{lr.model, {}, {}, {}, std::vector<int>(lr.model.nv)};
    if (spec.floating) pinocchio::urdf::buildModel(path, pinocchio::JointModelFreeFlyer(), p.pin);
    else pinocchio::urdf::buildModel(path, p.pin);
    const nelu::SVec<double>& g = p.model.gravity;
    p.pin.gravity = pinocchio::Motion(Eigen::Vector3d(g.l[0], g.l[1], g.l[2]), Eigen::Vector3d(g.w[0], g.w[1], g.w[2]));
    for (const nelu::Body& b : p.model.bodies) {
        const std::string name = b.type == nelu::JointType::Floating ? "root_joint" : b.joint_name;
        if (!p.pin.existJointName(name)) throw std::runtime_error("pinocchio: no joint " + name);
        const pinocchio::JointIndex j = p.pin.getJointId(name);
        p.joint.push_back(j);
        for (int c = 0; c < b.nv(); ++c)  // a free flyer's halves swapped
            p.v_to_pin[b.v_index + c] = p.pin.idx_vs[j] + (b.type == nelu::JointType::Floating ? (c + 3) % 6 : c);
    }
    for (const ContactSpec& s : spec.contacts) {
        const nelu::LinkFrame& lf = lr.links.at(s.link);
        Contact c;
        c.name = s.link, c.body = lf.body, c.type = s.type;
        c.placement = nelu::compose(nelu::origin_xform(s.xyz, s.rpy), lf.X_link_body);
        p.contacts.push_back(c);
    }
    return p;
}

/// max |a - b| / max(1, max |b|)
double rel(const std::vector<double>& a, const std::vector<double>& b) {
    double d = 0, s = 1;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i])), s = std::max(s, std::abs(b[i]));
    return d / s;
}

/// References near the contact frames at q: 5 cm and 0.3 rad (every other contact 2.5 rad) off.
std::vector<Xform<double>> references(const Pair& p, const std::vector<Contact>& cs, const std::vector<double>& q, std::mt19937_64& rng) {
    const nelu::Kinematics<double> k = nelu::forward_kinematics<double>(p.model, q.data(), nullptr);
    std::vector<Xform<double>> refs;
    for (std::size_t i = 0; i < cs.size(); ++i) {
        Xform<double> X = nelu::compose(cs[i].placement, k.X_world[cs[i].body]);
        const double angle = i % 2 ? 2.5 : 0.3;
        Vec3<double> axis{{nelu::uniform(rng, -1, 1), nelu::uniform(rng, -1, 1), nelu::uniform(rng, -1, 1)}};
        axis = (1 / std::sqrt(nelu::dot(axis, axis))) * axis;
        X.E = nelu::rot_axis(axis, std::cos(angle), std::sin(angle)) * X.E;
        for (int c = 0; c < 3; ++c) X.r[c] += nelu::uniform(rng, -0.05, 0.05);
        refs.push_back(X);
    }
    return refs;
}

struct Row {
    double qdd = 0, lambda = 0;
};

/// constraintDynamics (impulse: impulseDynamics with restitution r) on `states` random states.
Row compare(const Pair& p, const std::vector<Contact>& cs, bool impulse, double mu, std::uint64_t seed, int states) {
    std::mt19937_64 rng(seed);
    Row row;
    pinocchio::Data data(p.pin);
    nelu::ContactSettings settings;
    settings.mu = mu;
    nelu::ContactSettings strict;
    strict.singular_tolerance = 1e-5;
    for (int n = 0; n < states; ++n) {
        nelu::State s = nelu::random_state(p.model, rng, false);
        std::vector<double> qdd(p.model.nv), f(nelu::contact_rows(cs));
        while (!nelu::impulse_dynamics(p.model, cs, s.q.data(), s.qd.data(), 0.0, strict, qdd.data(), f.data()))
            s = nelu::random_state(p.model, rng, false);
        const std::vector<Xform<double>> refs = references(p, cs, s.q, rng);
        ConstraintModels models = p.constraints(cs, refs);
        ConstraintDatas datas;
        for (const auto& cm : models) datas.emplace_back(cm);
        pinocchio::initConstraintDynamics(p.pin, data, models);
        pinocchio::ProximalSettings ps(1e-12, mu, 1);
        const int nc = nelu::contact_rows(cs);
        std::vector<double> x(p.model.nv), lambda(nc);
        std::vector<double> pin_x, pin_lambda;
        bool ok;
        if (impulse) {
            const double r = n % 3 == 0 ? 0.0 : n % 3 == 1 ? 1.0 : nelu::uniform(rng, 0, 1);
            ok = nelu::impulse_dynamics(p.model, cs, s.q.data(), s.qd.data(), r, settings, x.data(), lambda.data());
            pinocchio::impulseDynamics(p.pin, data, p.q(s.q), p.v(s.qd), models, datas, r, ps);
            pin_x = p.from_pin(data.dq_after), pin_lambda = forces_from_pin(cs, data.impulse_c);
        } else {
            ok = nelu::contact_dynamics(p.model, cs, s.q.data(), s.qd.data(), s.tau.data(), static_cast<const nelu::SVec<double>*>(nullptr),
                                        refs.data(), settings, x.data(), lambda.data());
            pinocchio::constraintDynamics(p.pin, data, p.q(s.q), p.v(s.qd), p.v(s.tau), models, datas, ps);
            pin_x = p.from_pin(data.ddq), pin_lambda = forces_from_pin(cs, data.lambda_c);
        }
        if (!ok) throw std::runtime_error("nelu refused a contact problem (singular)");
        row.qdd = std::max(row.qdd, rel(x, pin_x)), row.lambda = std::max(row.lambda, rel(lambda, pin_lambda));
    }
    return row;
}

}  // namespace

int main(int argc, char** argv) {
    const int states = argc > 1 ? std::atoi(argv[1]) : 50;
    const std::string robots = NELU_SOURCE_DIR "/robots";
    double worst = 0;
    std::printf("check contacts: nelu/contact.hpp vs Pinocchio 3.7 (%d random states per row; max |nelu - pinocchio| / max(1, |pinocchio|))\n",
                states);
    std::printf("%-36s %-6s %-24s %10s %10s\n", "robot", "frame", "problem", "qdd / v+", "lambda");
    std::uint64_t seed = 1;
    for (const RobotSpec& spec : robot_specs()) {
        const Pair p = load(spec, robots);
        for (ContactFrame frame : {ContactFrame::Local, ContactFrame::LocalWorldAligned}) {
            std::vector<Contact> cs = p.contacts;
            for (Contact& c : cs) c.frame = frame;
            std::vector<Contact> gains = cs;
            std::mt19937_64 rng(seed);
            for (Contact& c : gains)
                for (int k = 0; k < c.dim(); ++k) c.kp[k] = nelu::uniform(rng, 1, 20), c.kd[k] = nelu::uniform(rng, 0.5, 5);
            struct Case {
                const char* what;
                const std::vector<Contact>* cs;
                bool impulse;
                double mu;
            };
            for (const Case& k : {Case{"constraintDynamics", &cs, false, 0.0}, Case{"  + Baumgarte", &gains, false, 0.0},
                                  Case{"  damped, mu = 1e-4", &gains, false, 1e-4}, Case{"impulseDynamics", &cs, true, 0.0}}) {
                const Row r = compare(p, *k.cs, k.impulse, k.mu, ++seed, states);
                std::printf("%-36s %-6s %-24s %10.2e %10.2e\n", spec.name, frame == ContactFrame::Local ? "LOCAL" : "LWA", k.what, r.qdd,
                            r.lambda);
                worst = std::max({worst, r.qdd, r.lambda});
            }
        }
    }
    std::printf("check contacts: worst %.2e (tolerance %.0e): %s\n", worst, kTolerance, worst <= kTolerance ? "ok" : "FAILED");
    return worst <= kTolerance ? 0 : 1;
}
