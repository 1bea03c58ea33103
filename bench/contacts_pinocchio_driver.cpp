// contacts_pinocchio_driver.cpp: nelu's generated contact-dynamics solvers (issue 27) against
// Pinocchio 3.7.0's constraintDynamics, impulseDynamics, pv, constrainedABA and their analytic
// derivatives, in one process on the same states (bench/contacts_pinocchio.py,
// scripts/contacts_pinocchio.sh, docs/bench.md "Contact dynamics").
//
// bench/CMakeLists.txt compiles this file once, with Pinocchio at -O3 -DNDEBUG, into the static
// library nelu_bench_contacts_pinocchio; bench/contacts_pinocchio.py links it per contact case with
// the generated solvers compiled under fixed names:
//   nelu_c, nelu_c_derivatives          `nelu compile --derivatives --scalar double`, g++ -O2
//   nelu_c_v3, nelu_c_v3_derivatives    the same spec, g++ -O2 -march=x86-64-v3 (optional)
//   nelu_c_v3_derivatives_batch         the same compile with --batch, its nelu_c_v3_batch.cpp built
//                                       g++ -O2 -march=x86-64-v3 (AVX2: 4 lanes of double; optional:
//                                       the horizon)
// (all but nelu_c are weak: a binary without them checks and times what it has).
//
//   nelu_contacts_pinocchio CASE.json [--states N] [--rounds R] [--check-only] [--json OUT]
//                           [--caba-mu MU] [--caba-iterations K] [--min-pivot P] [--oracle OUT [--oracle-states K]]
//
// --oracle OUT writes Pinocchio's values and derivatives at the first K (3) checked states in
// nelu's slots, for tests/test_oracle.cpp (oracle_json below; scripts/contact_oracle.sh).
//
// CASE.json (written by contacts_pinocchio.py): the URDF, floating base, problem (fd or impulse),
// restitution, the contacts as the spec gives them (name, link, type point or 6d, frame local or
// local_world_aligned, origin xyz / rpy in the link, kp and kd per component in nelu's order,
// angular first) and the manifest of nelu_c. Pinocchio's contact models are built from the case
// and Pinocchio's own URDF model, not from nelu's: a contact on link L is a RigidConstraintModel
// on the parent joint of Pinocchio's BODY frame L with joint1_placement = frame.placement *
// SE3(rpy, xyz).
//
// Conventions translated here (docs/contacts.md): Pinocchio's free-flyer velocity, its q tangent
// and its 6-D contact rows, gains and forces are linear first, nelu's angular first (the halves are
// swapped; nelu's floating-base q tangent, R exp([dw]) and p + R dv, is Pinocchio's q (+) [dv; dw]
// to first order, so the Jacobian's base columns are permuted only); a continuous joint has
// Pinocchio coordinates (cos q, sin q); a point contact's Baumgarte reference (world x y z) is
// joint2_placement = SE3(I, p_ref) on the universe, a 6-D one (x y z qx qy qz qw) SE3(R(q), p);
// computeImpulseDynamicsDerivatives returns d(v+ - v-)/dv- (its ddq_dv), to which the identity is
// added. Pinocchio 3.7.0's computeImpulseDynamicsDerivatives also needs data.dvc_dq cleared before
// each call (it accumulates into it: wrong d/dq from the second call on, on a floating base); the
// driver does that, in the timed calls too.
//
// Check (before anything is timed; the process exits 1 on a disagreement): N random states (fixed
// seed; q, qd, tau uniform in [-1, 1], the base quaternion normalized; Baumgarte references 5 cm
// off the contact point), drawn again where nelu's solver refuses the contact set
// (NELU_STATUS_SMALL_PIVOT) or a pivot of Pinocchio's J M^-1 J^T is below P (1e-5) of its largest
// diagonal entry (straight legs, the fully constrained arm at a singularity: both libraries' errors
// grow with the condition number there). Per block, max |nelu - pinocchio| / max(1, max |pinocchio|)
// over the states:
//   values:       qdd (v+) and lambda (Lambda) of nelu_c and nelu_c_v3 against constraintDynamics
//                 (mu = 0, one iteration) or impulseDynamics (restitution r): tolerance 1e-9;
//   derivatives:  d/dq, d/dqd, d/dtau of qdd (v+) and lambda (Lambda) against
//                 computeConstraintDynamicsDerivatives (computeImpulseDynamicsDerivatives):
//                 tolerance 1e-8. A block that disagrees at a state is compared with central
//                 differences of Pinocchio's own values there (five points, h = 1e-4): when nelu's is within
//                 1e-5 of them and Pinocchio's off by more than 1e-3, Pinocchio's derivative is wrong
//                 there; that is recorded and reported ("pinocchio_defects"), not a failure. Any
//                 other disagreement is a failure, printed with both errors against the differences;
//   references:   nelu's columns of the Baumgarte references (Pinocchio has no derivative with
//                 respect to joint2_placement) against those central differences of
//                 constraintDynamics: tolerance 1e-8;
//   horizon:      with nelu_c_v3_derivatives_batch, one batch call on every checked state (state-major
//                 q, qd, in): every status OK, and each row of out and jac against the scalar
//                 nelu_c_v3_derivatives (nelu_c_derivatives without v3) on that state: bit for bit
//                 or within 1e-12 (out entry by entry, |batch - scalar| / max(1, |scalar|); jac
//                 row by row, max |batch - scalar| / max(1, max |scalar|) in each row: one output's
//                 gradient), then against Pinocchio as the scalar forms are (the " (batch)" keys);
//   pv and constrainedABA (LOCAL contacts only: Pinocchio 3.7's initPvSolver does not implement
//                 LOCAL_WORLD_ALIGNED): their qdd against constraintDynamics, recorded, not
//                 required (a contender that disagrees beyond 1e-6 is reported and not timed).
//
// Timing: CPU time per call, alternating batches: each of R rounds times every contender once (a
// batch cycles through the first 16 checked states for at least 20 ms), in a fixed order; the
// result is the median over the rounds. initConstraintDynamics / initPvSolver once, outside the
// timed calls; Pinocchio's contact models per state (their references) are prepared beforehand.
// The horizon (with the batch form): the first kKnots (50) checked states as knots, in state-major
// arrays prepared beforehand; three more contenders in the same alternating rounds: one call of
// nelu_c_v3_derivatives_batch on the 50 knots, 50 calls of nelu_c_v3_derivatives, and 50 calls of
// Pinocchio's value + derivative call of the derivative row (the same Data, the knots' own contact
// models); reported per knot (the time of a horizon / 50: the horizon_*_ns keys).
#include <pinocchio/algorithm/constrained-dynamics-derivatives.hpp>
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/algorithm/contact-info.hpp>
#include <pinocchio/algorithm/contact-jacobian.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/impulse-dynamics-derivatives.hpp>
#include <pinocchio/algorithm/impulse-dynamics.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/pv.hpp>
#include <pinocchio/math/rpy.hpp>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "timing.hpp"

extern "C" {
int nelu_c(const double* q, const double* qd, const double* in, double* out);
__attribute__((weak)) int nelu_c_derivatives(const double* q, const double* qd, const double* in, double* out, double* jac);
__attribute__((weak)) int nelu_c_v3(const double* q, const double* qd, const double* in, double* out);
__attribute__((weak)) int nelu_c_v3_derivatives(const double* q, const double* qd, const double* in, double* out, double* jac);
__attribute__((weak)) int nelu_c_v3_derivatives_batch(int n, const double* q, const double* qd, const double* in, double* out, double* jac,
                                                      int* status);
}

namespace {

using json = nlohmann::json;
using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstraintModels = PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(pinocchio::RigidConstraintModel);
using ConstraintDatas = PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(pinocchio::RigidConstraintData);
using ValueFn = int (*)(const double*, const double*, const double*, double*);
using DerivFn = int (*)(const double*, const double*, const double*, double*, double*);

constexpr int kTimedStates = 16;
constexpr int kKnots = 50;                 // the horizon's knots
constexpr double kBatchTolerance = 1e-12;  // batch rows against the scalar entry point's
constexpr double kValueTolerance = 1e-9;
constexpr double kDerivativeTolerance = 1e-8;
constexpr double kReferenceTolerance = 1e-8;
constexpr double kPeerTolerance = 1e-6;
// a derivative block that disagrees: nelu's is right and Pinocchio's wrong when nelu's is within
// kDifferenceTolerance of central differences of Pinocchio's values and Pinocchio's beyond kPinocchioWrong
constexpr double kDifferenceTolerance = 1e-5;
constexpr double kPinocchioWrong = 1e-3;
// the oracle files' tolerance for the blocks given as central differences (oracle_json)
constexpr double kOracleDifferenceTolerance = 1e-7;

json read_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    return json::parse(in);
}

/// One contact of the case, in both libraries' terms.
struct Contact {
    std::string name, link;
    bool six_d = false, local = true;
    int dim = 3;
    std::vector<double> kp, kd;  // nelu's order (6-D: angular first)
    pinocchio::JointIndex joint = 0;
    pinocchio::SE3 placement;    // joint1_placement
    int row = 0;                 // first row in Pinocchio's stacked contact vector
    /// Pinocchio's row of nelu's component k (6-D: halves swapped)
    int pin_row(int k) const { return row + (six_d ? (k + 3) % 6 : k); }
};

/// The case, Pinocchio's model and the maps between nelu's slots and Pinocchio's vectors.
struct Case {
    std::string name, problem;
    bool impulse = false, floating = false, baumgarte = false, all_local = true;
    double restitution = 0;
    pinocchio::Model pin;
    std::vector<Contact> contacts;
    int nq = 0, nv = 0, nin = 0, nout = 0, nc = 0, njac = 0;
    std::vector<int> v_to_pin;                  // per nelu velocity slot
    struct Joint {
        pinocchio::JointIndex pin;
        int q_index;
    };
    std::vector<Joint> joints;                  // per nelu joint: Pinocchio's joint, first q slot
    std::vector<int> tau_in;                    // per in slot: Pinocchio's velocity index, or -1
    std::vector<std::pair<int, int>> ref_in;    // per in slot: (contact, component of x y z qx qy qz qw), or (-1, -1)
    std::vector<int> out_v;                     // per out slot: Pinocchio's velocity index, or -1
    std::vector<int> out_c;                     // per out slot: Pinocchio's contact row, or -1
    json value_ops, derivative_ops;
};

pinocchio::SE3 origin_se3(const json& c) {
    const std::vector<double> xyz = c.value("xyz", std::vector<double>{0, 0, 0}), rpy = c.value("rpy", std::vector<double>{0, 0, 0});
    return pinocchio::SE3(pinocchio::rpy::rpyToMatrix(rpy[0], rpy[1], rpy[2]), Eigen::Vector3d(xyz[0], xyz[1], xyz[2]));
}

Case load_case(const std::string& path) {
    const json j = read_json(path);
    Case c;
    c.name = j.at("name").get<std::string>();
    c.problem = j.at("problem").get<std::string>();
    c.impulse = c.problem == "impulse";
    c.floating = j.at("floating").get<bool>();
    c.restitution = j.value("restitution", 0.0);
    const std::string urdf = j.at("urdf").get<std::string>();
    if (c.floating) pinocchio::urdf::buildModel(urdf, pinocchio::JointModelFreeFlyer(), c.pin);
    else pinocchio::urdf::buildModel(urdf, c.pin);
    const json man = read_json(j.at("manifest").get<std::string>());
    const std::vector<double> g = man.at("gravity").get<std::vector<double>>();
    c.pin.gravity = pinocchio::Motion(Eigen::Vector3d(g[0], g[1], g[2]), Eigen::Vector3d::Zero());
    if (man.at("floating_base").get<bool>() != c.floating) throw std::runtime_error(path + ": the manifest's floating_base differs from the case's");
    c.value_ops = man.at("ops");
    if (man.contains("derivatives")) c.derivative_ops = man["derivatives"].at("ops"), c.njac = man["derivatives"].at("jac_cols").get<int>();

    // contacts, in the case's order (Pinocchio's stacking order)
    int row = 0;
    for (const json& cj : j.at("contacts")) {
        Contact k;
        k.name = cj.at("name"), k.link = cj.at("link");
        k.six_d = cj.at("type") == "6d", k.dim = k.six_d ? 6 : 3;
        k.local = cj.value("frame", std::string("local")) == "local";
        k.kp = cj.value("kp", std::vector<double>(k.dim, 0.0)), k.kd = cj.value("kd", std::vector<double>(k.dim, 0.0));
        if (static_cast<int>(k.kp.size()) != k.dim || static_cast<int>(k.kd.size()) != k.dim)
            throw std::runtime_error(path + ": contact " + k.name + ": kp and kd need one gain per component");
        for (int i = 0; i < k.dim; ++i) c.baumgarte |= k.kp[i] != 0 || k.kd[i] != 0;
        c.all_local &= k.local;
        if (!c.pin.existFrame(k.link, pinocchio::BODY)) throw std::runtime_error("Pinocchio has no link " + k.link);
        const pinocchio::Frame& f = c.pin.frames[c.pin.getFrameId(k.link, pinocchio::BODY)];
        k.joint = f.parentJoint;
        k.placement = f.placement * origin_se3(cj);
        k.row = row;
        row += k.dim;
        c.contacts.push_back(k);
    }
    c.nc = row;

    // slots
    c.nq = man.at("nq").get<int>(), c.nv = man.at("nv").get<int>();
    if (c.nv != c.pin.nv) throw std::runtime_error(c.name + ": nv " + std::to_string(c.nv) + ", Pinocchio " + std::to_string(c.pin.nv));
    const json &q = man.at("q"), &qd = man.at("qd"), &in = man.at("in"), &out = man.at("out");
    c.nin = static_cast<int>(in.size()), c.nout = static_cast<int>(out.size());
    std::map<std::string, int> first_v;
    for (int k = 0; k < c.nv; ++k) {
        const std::string joint = qd[k].get<std::string>();
        if (!c.pin.existJointName(joint)) throw std::runtime_error(c.name + ": Pinocchio has no joint " + joint);
        const pinocchio::JointIndex jid = c.pin.getJointId(joint);
        const int comp = first_v.count(joint) ? k - first_v[joint] : (first_v[joint] = k, 0);
        c.v_to_pin.push_back(c.pin.idx_vs[jid] + (c.pin.nvs[jid] == 6 ? (comp + 3) % 6 : comp));
        if (comp == 0) {
            int qi = 0;
            while (q.at(qi) != joint) ++qi;
            c.joints.push_back({jid, qi});
        }
    }
    auto contact_index = [&](const json& slot) {
        for (std::size_t i = 0; i < c.contacts.size(); ++i)
            if (c.contacts[i].name == slot.at("contact")) return static_cast<int>(i);
        throw std::runtime_error(c.name + ": the manifest names contact " + slot.at("contact").get<std::string>() + ", the case does not");
    };
    static const std::vector<std::string> point_components{"fx", "fy", "fz"}, wrench_components{"nx", "ny", "nz", "fx", "fy", "fz"},
        ref_components{"x", "y", "z", "qx", "qy", "qz", "qw"};
    std::map<std::string, int> seen;  // per joint: joint_torque / joint_acceleration slots seen so far
    for (const json& s : in) {
        const std::string quantity = s.at("quantity");
        if (quantity == "joint_torque") {
            const std::string joint = s.at("joint");
            const int k = first_v.at(joint) + seen["tau " + joint]++;
            c.tau_in.push_back(c.v_to_pin[k]), c.ref_in.push_back({-1, -1});
        } else if (quantity == "contact_reference") {
            const std::string comp = s.at("component");
            const int ci = contact_index(s);
            const int r = static_cast<int>(std::find(ref_components.begin(), ref_components.end(), comp) - ref_components.begin());
            if (r == 7) throw std::runtime_error(c.name + ": unknown reference component " + comp);
            c.tau_in.push_back(-1), c.ref_in.push_back({ci, r});
        } else {
            throw std::runtime_error(c.name + ": unexpected input quantity " + quantity);
        }
    }
    for (const json& s : out) {
        const std::string quantity = s.at("quantity");
        if (quantity == "joint_acceleration" || quantity == "joint_velocity") {
            if ((quantity == "joint_velocity") != c.impulse) throw std::runtime_error(c.name + ": output " + quantity + " in problem " + c.problem);
            const std::string joint = s.at("joint");
            const int k = first_v.at(joint) + seen["out " + joint]++;
            c.out_v.push_back(c.v_to_pin[k]), c.out_c.push_back(-1);
        } else if (quantity == "contact_force" || quantity == "contact_impulse") {
            const Contact& k = c.contacts[contact_index(s)];
            const std::vector<std::string>& comps = k.six_d ? wrench_components : point_components;
            const int i = static_cast<int>(std::find(comps.begin(), comps.end(), s.at("component").get<std::string>()) - comps.begin());
            if (i == k.dim) throw std::runtime_error(c.name + ": unknown component " + s.at("component").get<std::string>());
            if (s.at("frame") != (k.local ? "local" : "local_world_aligned")) throw std::runtime_error(c.name + ": contact " + k.name + ": frame differs");
            c.out_v.push_back(-1), c.out_c.push_back(k.pin_row(i));
        } else {
            throw std::runtime_error(c.name + ": unexpected output quantity " + quantity);
        }
    }
    if (c.njac && c.njac != 2 * c.nv + c.nin) throw std::runtime_error(c.name + ": jac_cols is not 2 nv + n_in");
    return c;
}

/// One checked state in both layouts, with Pinocchio's contact models (their references).
struct State {
    std::vector<double> q, qd, in;  // nelu's slots
    Eigen::VectorXd pq, pv, ptau;   // Pinocchio's
    ConstraintModels models;
};

ConstraintModels make_models(const Case& c, const std::vector<pinocchio::SE3>& refs) {
    ConstraintModels out;
    for (std::size_t i = 0; i < c.contacts.size(); ++i) {
        const Contact& k = c.contacts[i];
        pinocchio::RigidConstraintModel cm(k.six_d ? pinocchio::CONTACT_6D : pinocchio::CONTACT_3D, c.pin, k.joint, k.placement,
                                           k.local ? pinocchio::LOCAL : pinocchio::LOCAL_WORLD_ALIGNED);
        cm.joint2_placement = refs[i];
        for (int r = 0; r < k.dim; ++r) {
            const int p = k.six_d ? (r + 3) % 6 : r;
            cm.corrector.Kp[p] = k.kp[r], cm.corrector.Kd[p] = k.kd[r];
        }
        out.push_back(cm);
    }
    return out;
}

/// The in slots' contact references as Pinocchio placements (the contacts without references: identity).
std::vector<pinocchio::SE3> references_of(const Case& c, const std::vector<double>& in) {
    std::vector<std::array<double, 7>> r(c.contacts.size(), std::array<double, 7>{0, 0, 0, 0, 0, 0, 1});
    for (int s = 0; s < c.nin; ++s)
        if (c.ref_in[s].first >= 0) r[c.ref_in[s].first][c.ref_in[s].second] = in[s];
    std::vector<pinocchio::SE3> out;
    for (const auto& x : r) {
        const Eigen::Quaterniond quat(x[6], x[3], x[4], x[5]);
        out.emplace_back(quat.normalized().toRotationMatrix(), Eigen::Vector3d(x[0], x[1], x[2]));
    }
    return out;
}

/// The smallest pivot of the LDLT of J M^-1 J^T over its largest diagonal entry (Pinocchio's J and M).
double delassus_pivot_ratio(const Case& c, const State& s) {
    pinocchio::Data d(c.pin);
    pinocchio::crba(c.pin, d, s.pq, pinocchio::Convention::WORLD);
    Eigen::MatrixXd M = d.M;
    M.triangularView<Eigen::StrictlyLower>() = M.transpose();
    pinocchio::computeJointJacobians(c.pin, d, s.pq);
    ConstraintDatas datas;
    for (const auto& cm : s.models) datas.emplace_back(cm);
    Eigen::MatrixXd J = Eigen::MatrixXd::Zero(c.nc, c.nv);
    pinocchio::getConstraintsJacobian(c.pin, d, s.models, datas, J);
    const Eigen::MatrixXd D = J * M.llt().solve(J.transpose());
    const Eigen::LDLT<Eigen::MatrixXd> ldlt(D);
    return ldlt.vectorD().minCoeff() / D.diagonal().maxCoeff();
}

double uniform(std::mt19937_64& rng, double lo, double hi) { return lo + (hi - lo) * double(rng() >> 11) * 0x1.0p-53; }

std::vector<State> make_states(const Case& c, int count, double min_pivot, int& redrawn) {
    std::mt19937_64 rng(27);
    std::vector<State> states;
    std::vector<double> out(c.nout);
    redrawn = 0;
    while (static_cast<int>(states.size()) < count) {
        State s;
        s.q.resize(c.nq), s.qd.resize(c.nv), s.in.assign(std::max(c.nin, 1), 0.0);
        for (double& x : s.q) x = uniform(rng, -1, 1);
        for (double& x : s.qd) x = uniform(rng, -1, 1);
        s.pq.resize(c.pin.nq), s.pv.resize(c.nv), s.ptau = Eigen::VectorXd::Zero(c.nv);
        for (const Case::Joint& j : c.joints) {
            const int iq = c.pin.idx_qs[j.pin], nq = c.pin.nqs[j.pin];
            double* q = &s.q[j.q_index];
            if (nq == 7) {  // free flyer: [x y z qx qy qz qw], as nelu's, with a unit quaternion
                const double n = std::sqrt(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]);
                for (int k = 3; k < 7; ++k) q[k] /= n;
                for (int k = 0; k < 7; ++k) s.pq[iq + k] = q[k];
            } else if (nq == 2) {  // continuous: (cos, sin)
                s.pq[iq] = std::cos(q[0]), s.pq[iq + 1] = std::sin(q[0]);
            } else {
                s.pq[iq] = q[0];
            }
        }
        for (int k = 0; k < c.nv; ++k) s.pv[c.v_to_pin[k]] = s.qd[k];
        // torques, and references 5 cm off the contact frames' placements at q (rotated by 0.3 rad)
        pinocchio::Data d(c.pin);
        pinocchio::forwardKinematics(c.pin, d, s.pq);
        std::vector<std::array<double, 7>> pose;
        for (const Contact& k : c.contacts) {
            const pinocchio::SE3 oMc = d.oMi[k.joint] * k.placement;
            Eigen::Vector3d axis(uniform(rng, -1, 1), uniform(rng, -1, 1), uniform(rng, -1, 1));
            const Eigen::Quaterniond quat(Eigen::AngleAxisd(0.3, axis.normalized()).toRotationMatrix() * oMc.rotation());
            pose.push_back({oMc.translation()[0] + uniform(rng, -0.05, 0.05), oMc.translation()[1] + uniform(rng, -0.05, 0.05),
                            oMc.translation()[2] + uniform(rng, -0.05, 0.05), quat.x(), quat.y(), quat.z(), quat.w()});
        }
        for (int i = 0; i < c.nin; ++i) {
            if (c.tau_in[i] >= 0) s.in[i] = uniform(rng, -1, 1), s.ptau[c.tau_in[i]] = s.in[i];
            else s.in[i] = pose[c.ref_in[i].first][c.ref_in[i].second];
        }
        s.models = make_models(c, references_of(c, s.in));
        if (nelu_c(s.q.data(), s.qd.data(), s.in.data(), out.data()) != 0 || delassus_pivot_ratio(c, s) < min_pivot) {
            ++redrawn;
            if (redrawn > 100 * count) throw std::runtime_error(c.name + ": no regular state in " + std::to_string(redrawn) + " draws");
            continue;
        }
        states.push_back(std::move(s));
    }
    return states;
}

/// max |a - b| / max(1, max |b|)
double scaled_error(const Matrix& a, const Matrix& b) {
    if (a.size() == 0) return 0;
    return (a - b).cwiseAbs().maxCoeff() / std::max(1.0, b.cwiseAbs().maxCoeff());
}

/// Row by row (rows of n entries, `rows` of them): max over the rows of max |a - b| / max(1, max |b|) in
/// the row (NaN when an entry is NaN)
double rowwise_error(const double* a, const double* b, std::size_t rows, std::size_t n) {
    double e = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        double d = 0, scale = 1;
        for (std::size_t i = r * n; i < (r + 1) * n; ++i) {
            const double x = std::abs(a[i] - b[i]);
            if (std::isnan(x)) return x;
            d = std::max(d, x), scale = std::max(scale, std::abs(b[i]));
        }
        e = std::max(e, d / scale);
    }
    return e;
}

/// Pinocchio's solution at one state: x (qdd or v+) and the contact vector, with their Jacobians.
struct PinResult {
    Eigen::VectorXd x, lambda;
    Eigen::MatrixXd dx_dq, dx_dv, dx_dtau, dl_dq, dl_dv, dl_dtau;
};

struct Pinocchio {
    const Case& c;
    pinocchio::Data data;
    ConstraintDatas datas;
    pinocchio::ProximalSettings settings{1e-12, 0.0, 1};
    explicit Pinocchio(const Case& cs) : c(cs), data(cs.pin) {
        const ConstraintModels models = make_models(c, std::vector<pinocchio::SE3>(c.contacts.size()));
        for (const auto& cm : models) datas.emplace_back(cm);
        pinocchio::initConstraintDynamics(c.pin, data, models);
    }
    void value(const Eigen::VectorXd& q, const Eigen::VectorXd& v, const Eigen::VectorXd& tau, const ConstraintModels& models) {
        if (c.impulse) pinocchio::impulseDynamics(c.pin, data, q, v, models, datas, c.restitution, settings);
        else pinocchio::constraintDynamics(c.pin, data, q, v, tau, models, datas, settings);
    }
    void value(const State& s) { value(s.pq, s.pv, s.ptau, s.models); }
    /// computeImpulseDynamicsDerivatives after impulseDynamics. Pinocchio 3.7.0 accumulates into
    /// data.dvc_dq without clearing it first, so that from the second call with one Data on, its
    /// d/dq are wrong on a floating-base robot: cleared here, in the check and in the timed calls.
    void impulse_derivatives(const ConstraintModels& models, Eigen::MatrixXd& dv_dq, Eigen::MatrixXd& dv_dv, Eigen::MatrixXd& di_dq,
                             Eigen::MatrixXd& di_dv) {
        data.dvc_dq.setZero();
        pinocchio::computeImpulseDynamicsDerivatives(c.pin, data, models, datas, c.restitution, settings, dv_dq, dv_dv, di_dq, di_dv);
    }
    PinResult solve(const State& s, bool derivatives) {
        value(s);
        PinResult r;
        r.x = c.impulse ? data.dq_after : data.ddq;
        r.lambda = c.impulse ? data.impulse_c : data.lambda_c;
        if (!derivatives) return r;
        const int nv = c.nv, nc = c.nc;
        r.dx_dq = Eigen::MatrixXd::Zero(nv, nv), r.dx_dv = r.dx_dq, r.dx_dtau = r.dx_dq;
        r.dl_dq = Eigen::MatrixXd::Zero(nc, nv), r.dl_dv = r.dl_dq, r.dl_dtau = r.dl_dq;
        if (c.impulse) {
            impulse_derivatives(s.models, r.dx_dq, r.dx_dv, r.dl_dq, r.dl_dv);
            r.dx_dv += Eigen::MatrixXd::Identity(nv, nv);  // Pinocchio's is d(v+ - v-)/dv-
        } else {
            pinocchio::computeConstraintDynamicsDerivatives(c.pin, data, s.models, datas, settings, r.dx_dq, r.dx_dv, r.dx_dtau, r.dl_dq,
                                                            r.dl_dv, r.dl_dtau);
        }
        return r;
    }
};

/// nelu's out (or a Jacobian column of it) split into Pinocchio's x and contact vectors.
void split_out(const Case& c, const double* out, int stride, Eigen::Ref<Eigen::VectorXd> x, Eigen::Ref<Eigen::VectorXd> lambda) {
    for (int s = 0; s < c.nout; ++s) {
        if (c.out_v[s] >= 0) x[c.out_v[s]] = out[s * stride];
        else lambda[c.out_c[s]] = out[s * stride];
    }
}

/// The blocks of nelu's jac (NOUT x NJAC, row-major) in Pinocchio's rows and columns.
struct NeluJac {
    Eigen::MatrixXd dx_dq, dx_dv, dx_dtau, dl_dq, dl_dv, dl_dtau, dx_dref, dl_dref;  // *_dref: columns in in-slot order of the references
    std::vector<int> ref_slots;
};

NeluJac nelu_blocks(const Case& c, const std::vector<double>& jac) {
    NeluJac j;
    const int nv = c.nv, nc = c.nc;
    j.dx_dq = Eigen::MatrixXd::Zero(nv, nv), j.dx_dv = j.dx_dq, j.dx_dtau = j.dx_dq;
    j.dl_dq = Eigen::MatrixXd::Zero(nc, nv), j.dl_dv = j.dl_dq, j.dl_dtau = j.dl_dq;
    for (int s = 0; s < c.nin; ++s)
        if (c.ref_in[s].first >= 0) j.ref_slots.push_back(s);
    j.dx_dref = Eigen::MatrixXd::Zero(nv, j.ref_slots.size()), j.dl_dref = Eigen::MatrixXd::Zero(nc, j.ref_slots.size());
    auto col = [&](int jc, Eigen::MatrixXd& X, Eigen::MatrixXd& L, int pc) {
        split_out(c, &jac[jc], c.njac, X.col(pc), L.col(pc));
    };
    for (int k = 0; k < nv; ++k) col(k, j.dx_dq, j.dl_dq, c.v_to_pin[k]), col(nv + k, j.dx_dv, j.dl_dv, c.v_to_pin[k]);
    for (int s = 0; s < c.nin; ++s)
        if (c.tau_in[s] >= 0) col(2 * nv + s, j.dx_dtau, j.dl_dtau, c.tau_in[s]);
    for (std::size_t r = 0; r < j.ref_slots.size(); ++r) col(2 * nv + j.ref_slots[r], j.dx_dref, j.dl_dref, static_cast<int>(r));
    return j;
}

/// Worst errors per block over the states.
struct Errors {
    std::map<std::string, double> e;
    /// A derivative block where Pinocchio's disagrees with central differences of its own values
    /// and nelu's agrees with them: the states where it happened and the errors there.
    struct Defect {
        int states = 0;
        double nelu_vs_differences = 0, pinocchio_vs_differences = 0, nelu_vs_pinocchio = 0;
    };
    std::map<std::string, Defect> defects;
    json batch;  // the batch form against the scalar entry point (empty without it)
    void add(const std::string& k, double v) { e[k] = std::max(e[k], v); }
    json to_json() const {
        json j = json::object();
        for (const auto& [k, v] : e) j[k] = v;
        return j;
    }
    json defects_json() const {
        json j = json::object();
        for (const auto& [k, d] : defects)
            j[k] = {{"states", d.states}, {"nelu_vs_differences", d.nelu_vs_differences},
                    {"pinocchio_vs_differences", d.pinocchio_vs_differences}, {"nelu_vs_pinocchio", d.nelu_vs_pinocchio}};
        return j;
    }
};

/// States in the batch form's layout: state-major q, qd, in, and out, jac and status for n states.
struct Horizon {
    int n = 0, nin = 0;
    std::vector<double> q, qd, in, out, jac;
    std::vector<int> status;
    Horizon(const Case& c, const std::vector<State>& states, int count) : n(count), nin(c.nin) {
        for (int k = 0; k < n; ++k) {
            const State& s = states[static_cast<std::size_t>(k)];
            q.insert(q.end(), s.q.begin(), s.q.end());
            qd.insert(qd.end(), s.qd.begin(), s.qd.end());
            in.insert(in.end(), s.in.begin(), s.in.begin() + c.nin);
        }
        in.resize(std::max<std::size_t>(in.size(), 1));
        out.assign(static_cast<std::size_t>(n) * c.nout, NAN);
        jac.assign(static_cast<std::size_t>(n) * c.nout * c.njac, NAN);
        status.assign(static_cast<std::size_t>(n), -1);
    }
    /// One call of nelu_c_v3_derivatives_batch on the n states: the number of failing states.
    int call() { return nelu_c_v3_derivatives_batch(n, q.data(), qd.data(), in.data(), out.data(), jac.data(), status.data()); }
};

/// Five-point central differences (h = 1e-4, error O(h^4)) of Pinocchio's (x, lambda) along each
/// column of the tangent: q (Pinocchio's tangent, linear first for a free flyer), v or tau.
constexpr double kStep = 1e-4;
constexpr double kStencil[4][2] = {{2, -1.0 / 12}, {1, 8.0 / 12}, {-1, -8.0 / 12}, {-2, 1.0 / 12}};  // (offset / h, weight)

std::pair<Eigen::MatrixXd, Eigen::MatrixXd> central_differences(const Case& c, const State& s, char what) {
    Pinocchio p(c);
    Eigen::MatrixXd dx = Eigen::MatrixXd::Zero(c.nv, c.nv), dl = Eigen::MatrixXd::Zero(c.nc, c.nv);
    for (int k = 0; k < c.nv; ++k)
        for (const auto& [offset, weight] : kStencil) {
            Eigen::VectorXd e = Eigen::VectorXd::Zero(c.nv);
            e[k] = offset * kStep;
            Eigen::VectorXd q = s.pq, v = s.pv, tau = s.ptau;
            if (what == 'q') q = pinocchio::integrate(c.pin, s.pq, e);
            else if (what == 'v') v += e;
            else tau += e;
            p.value(q, v, tau, s.models);
            dx.col(k) += weight / kStep * (c.impulse ? p.data.dq_after : p.data.ddq);
            dl.col(k) += weight / kStep * (c.impulse ? p.data.impulse_c : p.data.lambda_c);
        }
    return {dx, dl};
}

/// The same differences along nelu's reference slots.
std::pair<Eigen::MatrixXd, Eigen::MatrixXd> reference_differences(const Case& c, const State& s, const std::vector<int>& slots) {
    Pinocchio p(c);
    Eigen::MatrixXd dx = Eigen::MatrixXd::Zero(c.nv, slots.size()), dl = Eigen::MatrixXd::Zero(c.nc, slots.size());
    for (std::size_t r = 0; r < slots.size(); ++r)
        for (const auto& [offset, weight] : kStencil) {
            std::vector<double> in = s.in;
            in[slots[r]] += offset * kStep;
            const ConstraintModels models = make_models(c, references_of(c, in));
            p.value(s.pq, s.pv, s.ptau, models);
            dx.col(static_cast<long>(r)) += weight / kStep * (c.impulse ? p.data.dq_after : p.data.ddq);
            dl.col(static_cast<long>(r)) += weight / kStep * (c.impulse ? p.data.impulse_c : p.data.lambda_c);
        }
    return {dx, dl};
}

struct Peers {
    bool run = false;       // pv and constrainedABA apply (LOCAL contacts, problem fd)
    double pv_error = 0, caba_error = 0;
    // constrainedABA needs mu > 0: the cheapest of mu in {1e-2, 1e-4, 1e-6, 1e-8} and 3, 5, 10 or 20
    // proximal iterations that reproduces constraintDynamics (mu = 0) to 1e-8 on the three robots
    double caba_mu = 1e-6;
    int caba_iterations = 5;
};

/// The check of every state; throws on a disagreement.
Errors check(const Case& c, std::vector<State>& states, Peers& peers) {
    Errors err;
    Pinocchio p(c);
    std::vector<double> out(c.nout), out2(c.nout), jac(static_cast<std::size_t>(c.nout) * std::max(c.njac, 1));
    const std::string x = c.impulse ? "v+" : "qdd", l = c.impulse ? "Lambda" : "lambda";
    // pv and constrainedABA: their own data
    pinocchio::Data pv_data(c.pin), caba_data(c.pin);
    ConstraintDatas pv_datas, caba_datas;
    if (peers.run) {
        for (const auto& cm : states[0].models) pv_datas.emplace_back(cm), caba_datas.emplace_back(cm);
        pinocchio::initPvSolver(c.pin, pv_data, states[0].models);
        pinocchio::initPvSolver(c.pin, caba_data, states[0].models);
    }
    // the batch form: one call on every checked state, each row against the scalar entry point's
    const bool batch = nelu_c_v3_derivatives_batch != nullptr && nelu_c_derivatives != nullptr;
    const std::size_t nout = static_cast<std::size_t>(c.nout), njac = nout * static_cast<std::size_t>(c.njac);
    Horizon all(c, states, batch ? static_cast<int>(states.size()) : 0);
    if (batch) {
        const DerivFn scalar = nelu_c_v3_derivatives ? nelu_c_v3_derivatives : nelu_c_derivatives;
        const int failing = all.call();
        if (failing != 0) throw std::runtime_error(c.name + ": nelu_c_v3_derivatives_batch: " + std::to_string(failing) + " of " +
                                                   std::to_string(all.n) + " checked states failed");
        int exact = 0;
        double worst_out = 0, worst_jac = 0;
        for (int n = 0; n < all.n; ++n) {
            const State& s = states[static_cast<std::size_t>(n)];
            if (all.status[static_cast<std::size_t>(n)] != 0)
                throw std::runtime_error(c.name + ": nelu_c_v3_derivatives_batch: status != 0 at checked state " + std::to_string(n));
            std::fill(jac.begin(), jac.end(), NAN);
            if (scalar(s.q.data(), s.qd.data(), s.in.data(), out2.data(), jac.data()) != 0)
                throw std::runtime_error(c.name + ": the scalar derivatives: status != 0 at a checked state");
            const double* bo = &all.out[n * nout];
            const double* bj = &all.jac[n * njac];
            const double eo = rowwise_error(bo, out2.data(), nout, 1), ej = rowwise_error(bj, jac.data(), nout, static_cast<std::size_t>(c.njac));
            worst_out = std::max(worst_out, eo), worst_jac = std::max(worst_jac, ej);
            exact += std::equal(bo, bo + nout, out2.data()) && std::equal(bj, bj + njac, jac.data());
            if (!(eo <= kBatchTolerance && ej <= kBatchTolerance)) {
                char buf[320];
                std::snprintf(buf, sizeof buf,
                              "%s: nelu_c_v3_derivatives_batch disagrees with the scalar %s at checked state %d: out %.3g, jac %.3g "
                              "(out: max over the entries of |batch - scalar| / max(1, |scalar|); jac: the same per row, by the row's largest |scalar|; tolerance %.0e)",
                              c.name.c_str(), scalar == nelu_c_v3_derivatives ? "nelu_c_v3_derivatives" : "nelu_c_derivatives", n, eo, ej,
                              kBatchTolerance);
                throw std::runtime_error(buf);
            }
        }
        err.batch = {{"states", all.n}, {"bit_for_bit", exact}, {"out_vs_scalar", worst_out}, {"jac_vs_scalar", worst_jac},
                     {"scalar", scalar == nelu_c_v3_derivatives ? "nelu_c_v3_derivatives" : "nelu_c_derivatives"}};
    }
    // the derivative entry points checked against Pinocchio: (state index, state, out, jac) -> status
    using DerivSource = std::function<int(std::size_t, const State&, double*, double*)>;
    std::vector<std::pair<DerivSource, std::string>> sources;
    for (const auto& [fn, tag] : {std::pair<DerivFn, const char*>{nelu_c_derivatives, ""}, {nelu_c_v3_derivatives, " (v3)"}})
        if (fn)
            sources.push_back({[fn = fn](std::size_t, const State& s, double* o, double* j) { return fn(s.q.data(), s.qd.data(), s.in.data(), o, j); },
                               tag});
    if (batch)
        sources.push_back({[&](std::size_t n, const State&, double* o, double* j) {
                               std::copy_n(&all.out[n * nout], nout, o), std::copy_n(&all.jac[n * njac], njac, j);
                               return all.status[n];
                           },
                           " (batch)"});
    std::string failure;
    for (std::size_t n = 0; n < states.size() && failure.empty(); ++n) {
        State& s = states[n];
        const bool derivatives = nelu_c_derivatives != nullptr;
        const PinResult r = p.solve(s, derivatives);
        Eigen::VectorXd nx(c.nv), nl(c.nc);
        for (const auto& [fn, tag] : {std::pair<ValueFn, const char*>{nelu_c, ""}, {nelu_c_v3, " (v3)"}}) {
            if (!fn) continue;
            if (fn(s.q.data(), s.qd.data(), s.in.data(), out.data()) != 0)
                throw std::runtime_error(std::string("nelu_c") + tag + ": status != 0 at a checked state");
            split_out(c, out.data(), 1, nx, nl);
            err.add(x + tag, scaled_error(nx.transpose(), r.x.transpose()));
            err.add(l + tag, scaled_error(nl.transpose(), r.lambda.transpose()));
        }
        if (peers.run) {
            pinocchio::ProximalSettings pv_settings(1e-12, 0.0, 1);
            pinocchio::pv(c.pin, pv_data, s.pq, s.pv, s.ptau, s.models, pv_datas, pv_settings);
            peers.pv_error = std::max(peers.pv_error, scaled_error(pv_data.ddq.transpose(), r.x.transpose()));
            pinocchio::ProximalSettings caba_settings(1e-12, peers.caba_mu, peers.caba_iterations);
            pinocchio::constrainedABA(c.pin, caba_data, s.pq, s.pv, s.ptau, s.models, caba_datas, caba_settings);
            peers.caba_error = std::max(peers.caba_error, scaled_error(caba_data.ddq.transpose(), r.x.transpose()));
        }
        if (!derivatives) continue;
        for (const auto& [fn, tag] : sources) {
            std::fill(jac.begin(), jac.end(), NAN);
            if (fn(n, s, out2.data(), jac.data()) != 0)
                throw std::runtime_error(std::string("nelu_c_derivatives") + tag + ": status != 0 at a checked state");
            split_out(c, out2.data(), 1, nx, nl);
            err.add(x + " of derivatives" + tag, std::max(scaled_error(nx.transpose(), r.x.transpose()), scaled_error(nl.transpose(), r.lambda.transpose())));
            const NeluJac j = nelu_blocks(c, jac);
            struct Block {
                std::string name;
                const Eigen::MatrixXd &nelu, &pin;
                char column;  // q, v, t
                bool contact;
            };
            std::vector<Block> blocks = {{"d" + x + "/dq", j.dx_dq, r.dx_dq, 'q', false},
                                         {"d" + x + "/dv", j.dx_dv, r.dx_dv, 'v', false},
                                         {"d" + l + "/dq", j.dl_dq, r.dl_dq, 'q', true},
                                         {"d" + l + "/dv", j.dl_dv, r.dl_dv, 'v', true}};
            if (!c.impulse) {
                blocks.push_back({"d" + x + "/dtau", j.dx_dtau, r.dx_dtau, 't', false});
                blocks.push_back({"d" + l + "/dtau", j.dl_dtau, r.dl_dtau, 't', true});
            }
            std::map<char, std::pair<Eigen::MatrixXd, Eigen::MatrixXd>> differences;  // per column kind, computed on demand
            for (const Block& b : blocks) {
                const double e = scaled_error(b.nelu, b.pin);
                if (e <= kDerivativeTolerance) {
                    err.add(b.name + tag, e);
                    continue;
                }
                // a disagreement: whose derivative is it? central differences of Pinocchio's values decide
                if (!differences.count(b.column)) differences[b.column] = central_differences(c, s, b.column);
                const Eigen::MatrixXd& fd = b.contact ? differences[b.column].second : differences[b.column].first;
                const double nelu_fd = scaled_error(b.nelu, fd), pin_fd = scaled_error(b.pin, fd);
                if (nelu_fd <= kDifferenceTolerance && pin_fd >= kPinocchioWrong) {
                    // Pinocchio's block is wrong here and nelu's is right: recorded, checked against the differences
                    Errors::Defect& d = err.defects[b.name + tag];
                    d.states += 1, d.nelu_vs_differences = std::max(d.nelu_vs_differences, nelu_fd);
                    d.pinocchio_vs_differences = std::max(d.pinocchio_vs_differences, pin_fd);
                    d.nelu_vs_pinocchio = std::max(d.nelu_vs_pinocchio, e);
                    continue;
                }
                err.add(b.name + tag, e);
                if (failure.empty()) {
                    char buf[512];
                    std::snprintf(buf, sizeof buf,
                                  "%s%s disagrees with Pinocchio's at state %zu: scaled error %.3g (tolerance %.0e); against central "
                                  "differences of Pinocchio's values (five points, h = 1e-4): nelu %.3g, Pinocchio %.3g",
                                  b.name.c_str(), tag.c_str(), n, e, kDerivativeTolerance, nelu_fd, pin_fd);
                    failure = buf;
                }
            }
            if (!j.ref_slots.empty() && tag.empty()) {
                const auto [fx, fl] = reference_differences(c, s, j.ref_slots);
                err.add("d" + x + "/dref vs differences", scaled_error(j.dx_dref, fx));
                err.add("d" + l + "/dref vs differences", scaled_error(j.dl_dref, fl));
            }
        }
    }
    if (!failure.empty()) throw std::runtime_error(c.name + ": " + failure);
    for (const auto& [k, v] : err.e) {
        const bool ref = k.find("/dref") != std::string::npos, deriv = k.find("/d") != std::string::npos;
        const double tol = ref ? kReferenceTolerance : deriv ? kDerivativeTolerance : kValueTolerance;
        if (!(v <= tol)) {
            char buf[256];
            std::snprintf(buf, sizeof buf, "%s: %s disagrees with Pinocchio's: scaled error %.3g (tolerance %.0e)", c.name.c_str(), k.c_str(), v, tol);
            throw std::runtime_error(buf);
        }
    }
    return err;
}

/// The oracle file (`--oracle OUT`): Pinocchio's values and derivatives at the first `count` checked
/// states, in nelu's slots (q, qd, in as nelu's entry points take them; out and jac as they return
/// them, jac row-major NOUT x NJAC with NJAC = 2 nv + n_in), for tests/test_oracle.cpp. A Jacobian
/// entry is null where Pinocchio has no derivative (a Baumgarte reference's column, the inputs of
/// an impulse). A block of Pinocchio's analytic derivatives that disagrees with five-point central
/// differences of its own values beyond kDifferenceTolerance at a state (Pinocchio 3.7.0's
/// LOCAL_WORLD_ALIGNED derivatives with Baumgarte gains: docs/contacts.md) is written as those
/// differences, and listed under "differences" with its rows and columns, to be compared at
/// kOracleDifferenceTolerance (their error, O(h^4) and about eps / h, is far below it: nelu's
/// derivatives meet them to 6e-10). Nothing of nelu's solvers enters the numbers written: nelu_c only chose
/// the states (regular ones).
json oracle_json(const Case& c, const std::vector<State>& states, int count) {
    Pinocchio p(c);
    const int nv = c.nv, njac = 2 * nv + c.nin;
    std::vector<int> x_rows, l_rows;
    for (int k = 0; k < c.nout; ++k) (c.out_v[k] >= 0 ? x_rows : l_rows).push_back(k);
    json out_states = json::array(), differenced = json::array();
    for (int n = 0; n < count && n < static_cast<int>(states.size()); ++n) {
        const State& s = states[static_cast<std::size_t>(n)];
        PinResult r = p.solve(s, true);
        // each block checked against Pinocchio's own central differences, and replaced by them where it disagrees
        for (const char w : {'q', 'v', 't'}) {
            if (w == 't' && c.impulse) continue;
            const auto [fx, fl] = central_differences(c, s, w);
            for (const bool contact : {false, true}) {
                Eigen::MatrixXd& block = w == 'q' ? (contact ? r.dl_dq : r.dx_dq) : w == 'v' ? (contact ? r.dl_dv : r.dx_dv) : (contact ? r.dl_dtau : r.dx_dtau);
                const Eigen::MatrixXd& fd = contact ? fl : fx;
                const double e = scaled_error(block, fd);
                if (e <= kDifferenceTolerance) continue;
                block = fd;
                const int b = w == 'q' ? 0 : w == 'v' ? nv : 2 * nv, end = w == 't' ? njac : b + nv;
                differenced.push_back({{"state", n},
                                       {"block", std::string(contact ? "dlambda/d" : "dx/d") + (w == 't' ? "tau" : std::string(1, w))},
                                       {"rows", contact ? l_rows : x_rows},
                                       {"cols", {b, end}},
                                       {"analytic_vs_differences", e}});
            }
        }
        json out = json::array(), jac = json::array();
        for (int k = 0; k < c.nout; ++k) {
            const bool x = c.out_v[k] >= 0;
            const int row = x ? c.out_v[k] : c.out_c[k];
            out.push_back(x ? r.x[row] : r.lambda[row]);
            json jrow = json::array();
            for (int col = 0; col < njac; ++col) {
                json v = nullptr;
                if (col < nv) v = x ? r.dx_dq(row, c.v_to_pin[col]) : r.dl_dq(row, c.v_to_pin[col]);
                else if (col < 2 * nv) v = x ? r.dx_dv(row, c.v_to_pin[col - nv]) : r.dl_dv(row, c.v_to_pin[col - nv]);
                else if (!c.impulse && c.tau_in[col - 2 * nv] >= 0) {
                    const int pc = c.tau_in[col - 2 * nv];
                    v = x ? r.dx_dtau(row, pc) : r.dl_dtau(row, pc);
                }
                jrow.push_back(v);
            }
            jac.push_back(jrow);
        }
        out_states.push_back({{"q", s.q}, {"qd", s.qd}, {"in", std::vector<double>(s.in.begin(), s.in.begin() + c.nin)}, {"out", out}, {"jac", jac}});
    }
    return {{"case", c.name}, {"problem", c.problem}, {"nq", c.nq},         {"nv", c.nv},
            {"nin", c.nin},   {"nout", c.nout},       {"njac", njac},       {"difference_tolerance", kOracleDifferenceTolerance},
            {"differences", differenced}, {"states", out_states}};
}

int run(int argc, char** argv) {
    std::string case_path, json_out, oracle_out;
    int rounds = 21, count = 50, oracle_states = 3;
    double min_pivot = 1e-5;
    bool check_only = false;
    Peers peers;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--json" && i + 1 < argc) json_out = argv[++i];
        else if (a == "--rounds" && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
        else if (a == "--states" && i + 1 < argc) count = std::max(kTimedStates, std::atoi(argv[++i]));
        else if (a == "--caba-mu" && i + 1 < argc) peers.caba_mu = std::atof(argv[++i]);
        else if (a == "--caba-iterations" && i + 1 < argc) peers.caba_iterations = std::max(1, std::atoi(argv[++i]));
        else if (a == "--min-pivot" && i + 1 < argc) min_pivot = std::atof(argv[++i]);
        else if (a == "--check-only") check_only = true;
        else if (a == "--oracle" && i + 1 < argc) oracle_out = argv[++i];
        else if (a == "--oracle-states" && i + 1 < argc) oracle_states = std::max(1, std::atoi(argv[++i]));
        else if (case_path.empty() && a[0] != '-') case_path = a;
        else {
            std::fprintf(stderr, "usage: %s CASE.json [--states N] [--rounds R] [--check-only] [--json OUT] [--caba-mu MU] [--caba-iterations K] "
                         "[--min-pivot P] [--oracle OUT [--oracle-states K]]\n",
                         argv[0]);
            return 2;
        }
    }
    if (case_path.empty()) {
        std::fprintf(stderr, "usage: %s CASE.json [--states N] [--rounds R] [--check-only] [--json OUT]\n", argv[0]);
        return 2;
    }
    const Case c = load_case(case_path);
    if ((nelu_c_derivatives != nullptr) != (c.njac > 0)) throw std::runtime_error("the manifest and the linked solver disagree on derivatives");
    const bool horizon = nelu_c_v3_derivatives_batch != nullptr;
    if (horizon && (!nelu_c_v3_derivatives || count < kKnots))
        throw std::runtime_error("the horizon needs nelu_c_v3_derivatives and --states " + std::to_string(kKnots) + " or more");
    int redrawn = 0;
    std::vector<State> states = make_states(c, count, min_pivot, redrawn);
    peers.run = !c.impulse && c.all_local;
    const Errors err = check(c, states, peers);
    const bool pv_ok = peers.run && peers.pv_error <= kPeerTolerance, caba_ok = peers.run && peers.caba_error <= kPeerTolerance;

    json result = {{"case", c.name}, {"problem", c.problem}, {"nv", c.nv}, {"nc", c.nc}, {"states", count}, {"redrawn", redrawn}, {"min_pivot", min_pivot},
                   {"check", err.to_json()}, {"pinocchio_defects", err.defects_json()}, {"v3", nelu_c_v3 != nullptr}, {"derivatives", nelu_c_derivatives != nullptr}};
    if (horizon) {
        result["batch_check"] = err.batch;
        std::printf("%s: nelu_c_v3_derivatives_batch on the %d checked states: against %s %d bit for bit, worst out %.2g, jac %.2g\n",
                    c.name.c_str(), count, err.batch["scalar"].get<std::string>().c_str(), err.batch["bit_for_bit"].get<int>(),
                    err.batch["out_vs_scalar"].get<double>(), err.batch["jac_vs_scalar"].get<double>());
    }
    if (peers.run) {
        result["pv_error"] = peers.pv_error, result["caba_error"] = peers.caba_error;
        result["caba_mu"] = peers.caba_mu, result["caba_iterations"] = peers.caba_iterations;
    }
    std::printf("%s: %d states (%d drawn again), worst scaled errors:", c.name.c_str(), count, redrawn);
    for (const auto& [k, v] : err.e) std::printf(" %s %.2g;", k.c_str(), v);
    if (peers.run) std::printf(" pv %.2g; constrainedABA %.2g", peers.pv_error, peers.caba_error);
    std::printf("\n");
    for (const auto& [k, d] : err.defects)
        std::printf("%s: Pinocchio's %s is wrong at %d of %d states: against central differences of its own values %.2g, nelu's %.2g "
                    "(nelu against Pinocchio %.2g)\n",
                    c.name.c_str(), k.c_str(), d.states, count, d.pinocchio_vs_differences, d.nelu_vs_differences, d.nelu_vs_pinocchio);

    if (!check_only) {
        const std::vector<State> knots(states.begin(), states.begin() + (horizon ? kKnots : 0));
        Horizon hz(c, knots, static_cast<int>(knots.size()));  // prepared outside the timed calls
        states.resize(kTimedStates);
        Pinocchio p(c);
        pinocchio::Data pv_data(c.pin), caba_data(c.pin);
        ConstraintDatas pv_datas, caba_datas;
        if (peers.run) {
            for (const auto& cm : states[0].models) pv_datas.emplace_back(cm), caba_datas.emplace_back(cm);
            pinocchio::initPvSolver(c.pin, pv_data, states[0].models);
            pinocchio::initPvSolver(c.pin, caba_data, states[0].models);
        }
        pinocchio::ProximalSettings pv_settings(1e-12, 0.0, 1), caba_settings(1e-12, peers.caba_mu, peers.caba_iterations);
        std::vector<double> out(c.nout), jac(static_cast<std::size_t>(c.nout) * std::max(c.njac, 1));
        const int nv = c.nv, nc = c.nc;
        Eigen::MatrixXd dx_dq = Eigen::MatrixXd::Zero(nv, nv), dx_dv = dx_dq, dx_dtau = dx_dq;
        Eigen::MatrixXd dl_dq = Eigen::MatrixXd::Zero(nc, nv), dl_dv = dl_dq, dl_dtau = dl_dq;
        int status = 0;
        auto& st = states;
        std::vector<std::string> keys;
        std::vector<std::function<void(int)>> calls;
        auto add = [&](const char* key, std::function<void(int)> f) { keys.push_back(key), calls.push_back(std::move(f)); };
        add("nelu_ns", [&](int k) { status |= nelu_c(st[k].q.data(), st[k].qd.data(), st[k].in.data(), out.data()); });
        if (nelu_c_v3) add("nelu_v3_ns", [&](int k) { status |= nelu_c_v3(st[k].q.data(), st[k].qd.data(), st[k].in.data(), out.data()); });
        add("pinocchio_ns", [&](int k) { p.value(st[k]); });
        if (pv_ok) add("pv_ns", [&](int k) { pinocchio::pv(c.pin, pv_data, st[k].pq, st[k].pv, st[k].ptau, st[k].models, pv_datas, pv_settings); });
        if (caba_ok)
            add("caba_ns", [&](int k) {
                pinocchio::constrainedABA(c.pin, caba_data, st[k].pq, st[k].pv, st[k].ptau, st[k].models, caba_datas, caba_settings);
            });
        // Pinocchio's value + derivative call of one state (the derivative row's, and the horizon's per knot)
        auto pinocchio_derivatives = [&](const State& s) {
            p.value(s);
            if (c.impulse)
                p.impulse_derivatives(s.models, dx_dq, dx_dv, dl_dq, dl_dv);
            else
                pinocchio::computeConstraintDynamicsDerivatives(c.pin, p.data, s.models, p.datas, p.settings, dx_dq, dx_dv, dx_dtau, dl_dq, dl_dv,
                                                                dl_dtau);
        };
        if (nelu_c_derivatives) {
            add("nelu_derivatives_ns",
                [&](int k) { status |= nelu_c_derivatives(st[k].q.data(), st[k].qd.data(), st[k].in.data(), out.data(), jac.data()); });
            if (nelu_c_v3_derivatives)
                add("nelu_v3_derivatives_ns",
                    [&](int k) { status |= nelu_c_v3_derivatives(st[k].q.data(), st[k].qd.data(), st[k].in.data(), out.data(), jac.data()); });
            add("pinocchio_derivatives_ns", [&](int k) { pinocchio_derivatives(st[k]); });
        }
        // the horizon: each call is one horizon of kKnots knots (its time / kKnots is the time per knot)
        std::vector<double> hz_out(c.nout), hz_jac(jac.size());
        if (horizon) {
            add("horizon_nelu_v3_batch_ns", [&](int) { status |= hz.call(); });
            add("horizon_nelu_v3_ns", [&](int) {
                for (int k = 0; k < kKnots; ++k)
                    status |= nelu_c_v3_derivatives(knots[k].q.data(), knots[k].qd.data(), knots[k].in.data(), hz_out.data(), hz_jac.data());
            });
            add("horizon_pinocchio_ns", [&](int) {
                for (int k = 0; k < kKnots; ++k) pinocchio_derivatives(knots[k]);
            });
        }
        const std::vector<double> ns = nelu::bench::alternating_medians(calls, kTimedStates, rounds);
        if (status != 0) throw std::runtime_error("a timed nelu call returned status " + std::to_string(status));
        result["rounds"] = rounds;
        if (horizon) result["horizon_knots"] = kKnots;
        for (std::size_t k = 0; k < ns.size(); ++k) {
            const bool per_knot = keys[k].rfind("horizon_", 0) == 0;
            result[keys[k]] = per_knot ? ns[k] / kKnots : ns[k];
            std::printf("%s %.1f%s\n", keys[k].c_str(), per_knot ? ns[k] / kKnots : ns[k], per_knot ? " (per knot)" : "");
        }
    }
    if (!oracle_out.empty()) {
        std::ofstream f(oracle_out);
        f << oracle_json(c, states, oracle_states).dump() << "\n";
        if (!f) throw std::runtime_error("cannot write " + oracle_out);
    }
    if (!json_out.empty()) {
        std::ofstream f(json_out);
        f << result.dump(1) << "\n";
        if (!f) throw std::runtime_error("cannot write " + json_out);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nelu_contacts_pinocchio: %s\n", e.what());
        return 1;
    }
}
