// pinocchio_derivatives_driver.cpp: nelu's generated inverse and forward dynamics of one robot, values
// and derivatives, against Pinocchio 3.7.0's rnea, aba, computeRNEADerivatives and
// computeABADerivatives, in one process on the same states (scripts/derivatives_bench.sh).
//
// bench/CMakeLists.txt compiles this file once, with Pinocchio at -O3, into the static library
// nelu_bench_pinocchio_derivatives; scripts/derivatives_bench.sh links it per robot with two
// generated solvers compiled `--derivatives` without external wrenches (bench/specs/id_zero_fx.yaml
// and fd_zero_fx.yaml) under the fixed names nelu_id and nelu_fd:
//
//   nelu_pinocchio_derivatives ROBOT.urdf nelu_id.json nelu_fd.json [--floating-base] [--json OUT]
//
// The manifests give the slot order (q, qd: joint names; in and out must be qdd and tau, or tau
// and qdd, in qd's order) and the Jacobian's width. Conventions translated once per state, not
// timed: Pinocchio's free-flyer velocity and its tangent δ are linear first ([v; w]), nelu's
// angular first, so the base's rows and columns are permuted; a continuous joint has Pinocchio
// coordinates (cos q, sin q) and the angle as its tangent, as nelu; computeRNEADerivatives fills
// only the upper triangle of M and computeABADerivatives that of M^-1, mirrored before comparing.
//
// Before anything is timed, every state is checked: tau and qdd against rnea and aba, and the
// Jacobians [∂/∂q, ∂/∂qd, M] (id) and [∂/∂q, ∂/∂qd, M^-1] (fd) against Pinocchio's, by
// max |nelu - pinocchio| / max(1, max |pinocchio|) per block; above 1e-8 the driver prints the
// block and exits 1 without timing.
//
// Timing: CPU time per call, alternating batches: each of R rounds times every contender once
// (a batch cycles through the 16 states for at least 20 ms), in a fixed order, so that load from
// other work spreads over every contender alike; the result is the median over the rounds.
//
// -march=x86-64-v3 (when nelu_id_v3 and nelu_fd_v3 are linked: the same specs compiled under those names
// and built -O2 -march=x86-64-v3): their derivatives checked against the generic build's (row by row,
// within 1e-10) and timed in the same rounds (id_v3_derivatives_ns, fd_v3_derivatives_ns).
//
// The horizon (when the batch forms are linked: nelu compile --batch, NAME_batch.cpp built with
// -march=x86-64-v3 by derivatives_pinocchio.py; issue 28's 50-knot target): 50 knots (the 16 states
// and 34 more from the same generator), in state-major arrays prepared beforehand; checked first
// (every status 0, each knot's out and jac row by row against the scalar NAME_derivatives within
// 1e-12: max |batch - scalar| / max(1, max |scalar|) per row), then timed in the same alternating
// rounds: one call of nelu_id_derivatives_batch (nelu_fd_derivatives_batch) on the 50 knots against
// 50 calls of computeRNEADerivatives (computeABADerivatives); reported per knot (horizon_*_ns).
// Printed as "key value" lines (and JSON with --json): value and derivative ns of nelu and
// Pinocchio for id and fd, the worst check errors, the number of rounds.
#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "timing.hpp"

extern "C" {
int nelu_id(const double* q, const double* qd, const double* in, double* out);
int nelu_id_derivatives(const double* q, const double* qd, const double* in, double* out, double* jac);
int nelu_fd(const double* q, const double* qd, const double* in, double* out);
int nelu_fd_derivatives(const double* q, const double* qd, const double* in, double* out, double* jac);
// the same solvers compiled under the names nelu_id_v3 and nelu_fd_v3 and built -march=x86-64-v3 (optional)
__attribute__((weak)) int nelu_id_v3_derivatives(const double* q, const double* qd, const double* in, double* out, double* jac);
__attribute__((weak)) int nelu_fd_v3_derivatives(const double* q, const double* qd, const double* in, double* out, double* jac);
__attribute__((weak)) int nelu_id_derivatives_batch(int n, const double* q, const double* qd, const double* in, double* out, double* jac,
                                                    int* status);
__attribute__((weak)) int nelu_fd_derivatives_batch(int n, const double* q, const double* qd, const double* in, double* out, double* jac,
                                                    int* status);
}

namespace {

using json = nlohmann::json;
using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int kStates = 16;
constexpr int kKnots = 50;  // the horizon
constexpr double kTolerance = 1e-8;
constexpr double kBatchTolerance = 1e-12;
// the -march=x86-64-v3 build against the generic one: fused multiply-adds round differently, and the
// large robots' M^-1 carries cond(M) (the batch forms, also built v3, met 1e-13 against the generic)
constexpr double kV3Tolerance = 1e-10;

json read_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    return json::parse(in);
}

/// How nelu's slots map to Pinocchio's: per nelu velocity slot, Pinocchio's velocity slot (a free
/// flyer's halves swapped); per nelu joint, its first q slot and Pinocchio's joint.
struct SlotMap {
    int nq = 0, nv = 0;
    std::vector<int> v_to_pin;
    struct Joint {
        pinocchio::JointIndex pin;
        int q_index;
    };
    std::vector<Joint> joints;
};

SlotMap map_slots(const json& manifest, const pinocchio::Model& pin, const char* expect_in, const char* expect_out) {
    SlotMap map;
    map.nq = manifest.at("nq").get<int>(), map.nv = manifest.at("nv").get<int>();
    const std::string name = manifest.at("name").get<std::string>();
    if (map.nv != pin.nv) throw std::runtime_error(name + ": nv " + std::to_string(map.nv) + ", Pinocchio " + std::to_string(pin.nv));
    const json &q = manifest.at("q"), &qd = manifest.at("qd"), &in = manifest.at("in"), &out = manifest.at("out");
    if (in.size() != qd.size() || out.size() != qd.size())
        throw std::runtime_error(name + ": in and out must be one " + expect_in + " and one " + expect_out +
                                 " per velocity (a problem without external wrenches: bench/specs/*_zero_fx.yaml)");
    std::map<std::string, int> first_v;
    for (int k = 0; k < map.nv; ++k) {
        const std::string joint = qd[k].get<std::string>();
        if (!pin.existJointName(joint)) throw std::runtime_error(name + ": Pinocchio has no joint " + joint);
        if (in[k].at("quantity") != expect_in || in[k].at("joint") != joint || out[k].at("quantity") != expect_out ||
            out[k].at("joint") != joint)
            throw std::runtime_error(name + ": slot " + std::to_string(k) + " of in or out is not the " + expect_in + " / " +
                                     expect_out + " of " + joint);
        const pinocchio::JointIndex j = pin.getJointId(joint);
        const int c = first_v.count(joint) ? k - first_v[joint] : (first_v[joint] = k, 0);
        map.v_to_pin.push_back(pin.idx_vs[j] + (pin.nvs[j] == 6 ? (c + 3) % 6 : c));
        if (c == 0) {
            int qi = 0;
            while (q.at(qi) != joint) ++qi;
            map.joints.push_back({j, qi});
        }
    }
    return map;
}

/// One state in both layouts.
struct State {
    std::vector<double> q, qd, qdd, tau;  // nelu's slots
    Eigen::VectorXd pq, pv, pa, ptau;      // Pinocchio's
};

std::vector<State> make_states(const SlotMap& map, const pinocchio::Model& pin, int count) {
    std::mt19937_64 rng(7);
    auto u = [&] { return -1.0 + 2.0 * double(rng() >> 11) * 0x1.0p-53; };
    std::vector<State> states(static_cast<std::size_t>(count));
    for (State& s : states) {
        s.q.resize(map.nq), s.qd.resize(map.nv), s.qdd.resize(map.nv), s.tau.resize(map.nv);
        for (double& x : s.q) x = u();
        for (double& x : s.qd) x = u();
        for (double& x : s.qdd) x = u();
        for (double& x : s.tau) x = u();
        s.pq.resize(pin.nq), s.pv.resize(pin.nv), s.pa.resize(pin.nv), s.ptau.resize(pin.nv);
        for (const SlotMap::Joint& j : map.joints) {
            const int iq = pin.idx_qs[j.pin], nq = pin.nqs[j.pin];
            double* q = &s.q[j.q_index];
            if (nq == 7) {  // free flyer: [x y z qx qy qz qw], as nelu's, with a unit quaternion
                const double n = std::sqrt(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]);
                for (int c = 3; c < 7; ++c) q[c] /= n;
                for (int c = 0; c < 7; ++c) s.pq[iq + c] = q[c];
            } else if (nq == 2) {  // continuous: (cos, sin)
                s.pq[iq] = std::cos(q[0]), s.pq[iq + 1] = std::sin(q[0]);
            } else {
                s.pq[iq] = q[0];
            }
        }
        for (int k = 0; k < map.nv; ++k) {
            const int p = map.v_to_pin[k];
            s.pv[p] = s.qd[k], s.pa[p] = s.qdd[k], s.ptau[p] = s.tau[k];
        }
    }
    return states;
}

/// max |a - b| / max(1, max |b|)
double scaled_error(const Matrix& a, const Matrix& b) {
    return (a - b).cwiseAbs().maxCoeff() / std::max(1.0, b.cwiseAbs().maxCoeff());
}

/// nelu's output vector (slots) in Pinocchio's order.
Eigen::VectorXd to_pin(const SlotMap& map, const std::vector<double>& x) {
    Eigen::VectorXd y(map.nv);
    for (int k = 0; k < map.nv; ++k) y[map.v_to_pin[k]] = x[k];
    return y;
}

/// Block b (0: q, 1: qd, 2: in) of nelu's jac (nv x njac, row-major), rows and columns in Pinocchio's order.
Matrix jac_block(const SlotMap& map, const std::vector<double>& jac, int njac, int b) {
    Matrix m(map.nv, map.nv);
    for (int r = 0; r < map.nv; ++r)
        for (int c = 0; c < map.nv; ++c) m(map.v_to_pin[r], map.v_to_pin[c]) = jac[r * njac + b * map.nv + c];
    return m;
}

Matrix symmetric_from_upper(const Eigen::MatrixXd& upper) {
    Matrix m = upper;
    for (Eigen::Index r = 1; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < r; ++c) m(r, c) = m(c, r);
    return m;
}

struct Errors {
    double value = 0, dq = 0, dqd = 0, din = 0;
};

/// The checks of one problem (id: rnea; fd: aba) at every state; throws when one exceeds the tolerance.
Errors check(bool id, const SlotMap& map, int njac, const pinocchio::Model& pin, std::vector<State>& states) {
    pinocchio::Data data(pin);
    Errors e;
    std::vector<double> out(map.nv), jac(static_cast<size_t>(map.nv) * njac);
    for (int k = 0; k < kStates; ++k) {
        State& s = states[k];
        const double* in = id ? s.qdd.data() : s.tau.data();
        const int status = id ? nelu_id(s.q.data(), s.qd.data(), in, out.data()) : nelu_fd(s.q.data(), s.qd.data(), in, out.data());
        if (status != 0) throw std::runtime_error("state " + std::to_string(k) + ": status " + std::to_string(status));
        Matrix value = to_pin(map, out);
        Matrix ref = id ? pinocchio::rnea(pin, data, s.pq, s.pv, s.pa) : pinocchio::aba(pin, data, s.pq, s.pv, s.ptau);
        e.value = std::max(e.value, scaled_error(value, ref));
        std::fill(jac.begin(), jac.end(), NAN);
        const int dstatus = id ? nelu_id_derivatives(s.q.data(), s.qd.data(), in, out.data(), jac.data())
                               : nelu_fd_derivatives(s.q.data(), s.qd.data(), in, out.data(), jac.data());
        if (dstatus != 0) throw std::runtime_error("state " + std::to_string(k) + ": derivatives status " + std::to_string(dstatus));
        Eigen::MatrixXd dq = Eigen::MatrixXd::Zero(map.nv, map.nv), dv = dq, dx = dq;
        if (id) {
            pinocchio::computeRNEADerivatives(pin, data, s.pq, s.pv, s.pa, dq, dv, dx);
        } else {
            pinocchio::computeABADerivatives(pin, data, s.pq, s.pv, s.ptau, dq, dv, dx);
        }
        e.dq = std::max(e.dq, scaled_error(jac_block(map, jac, njac, 0), dq));
        e.dqd = std::max(e.dqd, scaled_error(jac_block(map, jac, njac, 1), dv));
        e.din = std::max(e.din, scaled_error(jac_block(map, jac, njac, 2), symmetric_from_upper(dx)));
    }
    const char* what = id ? "id" : "fd";
    const std::pair<const char*, double> blocks[] = {{id ? "tau" : "qdd", e.value}, {"d/dq", e.dq}, {"d/dqd", e.dqd},
                                                     {id ? "M" : "M^-1", e.din}};
    for (const auto& [block, err] : blocks)
        if (!(err <= kTolerance))
            throw std::runtime_error(std::string(what) + ": " + block + " disagrees with Pinocchio's: scaled error " +
                                     std::to_string(err) + " (tolerance 1e-8)");
    return e;
}

using BatchFn = int (*)(int, const double*, const double*, const double*, double*, double*, int*);

/// A horizon of knots for one problem's batch derivative form: state-major arguments and results.
struct Horizon {
    BatchFn fn;
    int n, nq, nv, njac;
    std::vector<double> q, qd, in, out, jac;
    std::vector<int> status;
    Horizon(BatchFn f, bool id, const SlotMap& map, int njac_, const std::vector<State>& knots)
        : fn(f), n(static_cast<int>(knots.size())), nq(map.nq), nv(map.nv), njac(njac_) {
        for (const State& s : knots) {
            q.insert(q.end(), s.q.begin(), s.q.end()), qd.insert(qd.end(), s.qd.begin(), s.qd.end());
            const std::vector<double>& x = id ? s.qdd : s.tau;
            in.insert(in.end(), x.begin(), x.end());
        }
        out.resize(static_cast<std::size_t>(n) * nv), jac.resize(static_cast<std::size_t>(n) * nv * njac), status.resize(n);
    }
    int call() { return fn(n, q.data(), qd.data(), in.data(), out.data(), jac.data(), status.data()); }
};

using DerivFn = int (*)(const double*, const double*, const double*, double*, double*);

/// One solver's out and jac (a) against another's (b), output by output (the output and its Jacobian
/// row, one gradient): max |a - b| / max(1, max |b|) in the row; the worst row and its error (NaN
/// where a difference is NaN).
std::pair<int, double> worst_row(const double* out_a, const double* jac_a, const double* out_b, const double* jac_b, int nv, int njac) {
    std::pair<int, double> worst{0, 0.0};
    for (int r = 0; r < nv; ++r) {
        double d = std::abs(out_a[r] - out_b[r]), scale = std::max(1.0, std::abs(out_b[r]));
        for (int c = 0; c < njac; ++c) {
            const std::size_t e = static_cast<std::size_t>(r) * njac + c;
            d = std::max(d, std::abs(jac_a[e] - jac_b[e])), scale = std::max(scale, std::abs(jac_b[e]));
            if (std::isnan(jac_a[e] - jac_b[e])) d = NAN;
        }
        if (std::isnan(d)) return {r, NAN};
        if (d / scale > worst.second) worst = {r, d / scale};
    }
    return worst;
}

/// The batch form on every knot against the scalar derivatives, row by row; throws beyond kBatchTolerance.
double check_horizon(bool id, Horizon& h, const std::vector<State>& knots) {
    const char* what = id ? "nelu_id_derivatives_batch" : "nelu_fd_derivatives_batch";
    const DerivFn scalar = id ? nelu_id_derivatives : nelu_fd_derivatives;
    if (h.call() != 0) throw std::runtime_error(std::string(what) + ": a knot failed");
    std::vector<double> out(h.nv), jac(static_cast<std::size_t>(h.nv) * h.njac);
    double worst = 0;
    for (int k = 0; k < h.n; ++k) {
        const State& s = knots[static_cast<std::size_t>(k)];
        const int st = scalar(s.q.data(), s.qd.data(), id ? s.qdd.data() : s.tau.data(), out.data(), jac.data());
        if (st != 0 || h.status[static_cast<std::size_t>(k)] != 0) throw std::runtime_error(std::string(what) + ": status at knot " + std::to_string(k));
        const auto [r, e] = worst_row(&h.out[static_cast<std::size_t>(k) * h.nv], &h.jac[static_cast<std::size_t>(k) * h.nv * h.njac], out.data(),
                                      jac.data(), h.nv, h.njac);
        if (!(e <= kBatchTolerance))
            throw std::runtime_error(std::string(what) + ": knot " + std::to_string(k) + " row " + std::to_string(r) +
                                     " differs from the scalar derivatives by " + std::to_string(e));
        worst = std::max(worst, e);
    }
    return worst;
}

/// The -march=x86-64-v3 build's derivatives against the generic build's (checked against Pinocchio
/// above), out and jac row by row; throws beyond kV3Tolerance.
double check_v3(bool id, const SlotMap& map, int njac, const std::vector<State>& states) {
    const char* what = id ? "nelu_id_v3_derivatives" : "nelu_fd_v3_derivatives";
    const DerivFn generic = id ? nelu_id_derivatives : nelu_fd_derivatives, v3 = id ? nelu_id_v3_derivatives : nelu_fd_v3_derivatives;
    std::vector<double> out(map.nv), jac(static_cast<std::size_t>(map.nv) * njac), out3(out), jac3(jac);
    double worst = 0;
    for (const State& s : states) {
        const double* in = id ? s.qdd.data() : s.tau.data();
        if (generic(s.q.data(), s.qd.data(), in, out.data(), jac.data()) != 0 || v3(s.q.data(), s.qd.data(), in, out3.data(), jac3.data()) != 0)
            throw std::runtime_error(std::string(what) + ": status");
        const auto [r, e] = worst_row(out3.data(), jac3.data(), out.data(), jac.data(), map.nv, njac);
        if (!(e <= kV3Tolerance))
            throw std::runtime_error(std::string(what) + ": row " + std::to_string(r) + " differs from the generic build's by " + std::to_string(e));
        worst = std::max(worst, e);
    }
    return worst;
}

int run(int argc, char** argv) {
    std::string urdf, id_manifest, fd_manifest, json_out;
    bool floating = false;
    int rounds = 21;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--floating-base") floating = true;
        else if (a == "--json" && i + 1 < argc) json_out = argv[++i];
        else if (a == "--rounds" && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
        else positional.push_back(a);
    }
    if (positional.size() != 3) {
        std::fprintf(stderr, "usage: %s ROBOT.urdf ID.json FD.json [--floating-base] [--rounds R] [--json OUT]\n", argv[0]);
        return 2;
    }
    urdf = positional[0], id_manifest = positional[1], fd_manifest = positional[2];
    pinocchio::Model pin;
    if (floating) pinocchio::urdf::buildModel(urdf, pinocchio::JointModelFreeFlyer(), pin);
    else pinocchio::urdf::buildModel(urdf, pin);
    const json idm = read_json(id_manifest), fdm = read_json(fd_manifest);
    const std::vector<double> g = idm.at("gravity").get<std::vector<double>>();
    if (g.size() != 3) throw std::runtime_error(id_manifest + ": gravity is not a 3-vector");
    pin.gravity = pinocchio::Motion(Eigen::Vector3d(g[0], g[1], g[2]), Eigen::Vector3d::Zero());
    if (idm.at("floating_base").get<bool>() != floating || fdm.at("floating_base").get<bool>() != floating)
        throw std::runtime_error("the manifests' floating_base differs from --floating-base");
    const SlotMap id_map = map_slots(idm, pin, "joint_acceleration", "joint_torque");
    const SlotMap fd_map = map_slots(fdm, pin, "joint_torque", "joint_acceleration");
    if (id_map.v_to_pin != fd_map.v_to_pin) throw std::runtime_error("the id and fd solvers order the velocities differently");
    const int id_njac = idm.at("derivatives").at("jac_cols").get<int>(), fd_njac = fdm.at("derivatives").at("jac_cols").get<int>();
    if (id_njac != 3 * id_map.nv || fd_njac != 3 * fd_map.nv) throw std::runtime_error("jac is not nv x 3 nv");
    const bool horizon = nelu_id_derivatives_batch != nullptr && nelu_fd_derivatives_batch != nullptr;
    std::vector<State> states = make_states(id_map, pin, horizon ? kKnots : kStates);
    const Errors id_err = check(true, id_map, id_njac, pin, states), fd_err = check(false, fd_map, fd_njac, pin, states);
    const std::vector<State> knots(states.begin(), states.begin() + (horizon ? kKnots : 0));
    Horizon id_h(nelu_id_derivatives_batch, true, id_map, id_njac, knots), fd_h(nelu_fd_derivatives_batch, false, fd_map, fd_njac, knots);
    double id_batch_err = 0, fd_batch_err = 0;
    if (horizon) id_batch_err = check_horizon(true, id_h, knots), fd_batch_err = check_horizon(false, fd_h, knots);
    states.resize(kStates);
    const bool v3 = nelu_id_v3_derivatives != nullptr && nelu_fd_v3_derivatives != nullptr;
    const double id_v3_err = v3 ? check_v3(true, id_map, id_njac, states) : 0, fd_v3_err = v3 ? check_v3(false, fd_map, fd_njac, states) : 0;

    // timing: every contender writes into its own buffers; the status is or-ed and checked after
    pinocchio::Data data(pin);
    const int nv = id_map.nv;
    std::vector<double> out(nv), jac(static_cast<size_t>(nv) * 3 * nv);
    Eigen::MatrixXd dq = Eigen::MatrixXd::Zero(nv, nv), dv = dq, dx = dq;
    int status = 0;
    auto& st = states;
    std::vector<std::function<void(int)>> calls = {
        [&](int k) { status |= nelu_id(st[k].q.data(), st[k].qd.data(), st[k].qdd.data(), out.data()); },
        [&](int k) { pinocchio::rnea(pin, data, st[k].pq, st[k].pv, st[k].pa); },
        [&](int k) { status |= nelu_id_derivatives(st[k].q.data(), st[k].qd.data(), st[k].qdd.data(), out.data(), jac.data()); },
        [&](int k) { pinocchio::computeRNEADerivatives(pin, data, st[k].pq, st[k].pv, st[k].pa, dq, dv, dx); },
        [&](int k) { status |= nelu_fd(st[k].q.data(), st[k].qd.data(), st[k].tau.data(), out.data()); },
        [&](int k) { pinocchio::aba(pin, data, st[k].pq, st[k].pv, st[k].ptau); },
        [&](int k) { status |= nelu_fd_derivatives(st[k].q.data(), st[k].qd.data(), st[k].tau.data(), out.data(), jac.data()); },
        [&](int k) { pinocchio::computeABADerivatives(pin, data, st[k].pq, st[k].pv, st[k].ptau, dq, dv, dx); },
    };
    std::vector<std::string> keys = {"id_value_ns", "pinocchio_rnea_ns", "id_derivatives_ns", "pinocchio_rnea_derivatives_ns",
                                     "fd_value_ns", "pinocchio_aba_ns", "fd_derivatives_ns", "pinocchio_aba_derivatives_ns"};
    if (v3) {
        calls.push_back([&](int k) { status |= nelu_id_v3_derivatives(st[k].q.data(), st[k].qd.data(), st[k].qdd.data(), out.data(), jac.data()); });
        calls.push_back([&](int k) { status |= nelu_fd_v3_derivatives(st[k].q.data(), st[k].qd.data(), st[k].tau.data(), out.data(), jac.data()); });
        keys.push_back("id_v3_derivatives_ns"), keys.push_back("fd_v3_derivatives_ns");
    }
    if (horizon) {  // each call is one horizon of kKnots knots (its time / kKnots is the time per knot)
        calls.push_back([&](int) { status |= id_h.call(); });
        calls.push_back([&](int) {
            for (const State& s : knots) pinocchio::computeRNEADerivatives(pin, data, s.pq, s.pv, s.pa, dq, dv, dx);
        });
        calls.push_back([&](int) { status |= fd_h.call(); });
        calls.push_back([&](int) {
            for (const State& s : knots) pinocchio::computeABADerivatives(pin, data, s.pq, s.pv, s.ptau, dq, dv, dx);
        });
        for (const char* k : {"horizon_id_batch_ns", "horizon_pinocchio_rnea_derivatives_ns", "horizon_fd_batch_ns",
                              "horizon_pinocchio_aba_derivatives_ns"})
            keys.push_back(k);
    }
    std::vector<double> ns = nelu::bench::alternating_medians(calls, kStates, rounds);
    if (status != 0) throw std::runtime_error("a timed nelu call returned status " + std::to_string(status));
    for (size_t c = 0; c < ns.size(); ++c)
        if (keys[c].rfind("horizon_", 0) == 0) ns[c] /= kKnots;  // per knot
    json result = {{"urdf", urdf}, {"floating_base", floating}, {"nv", nv}, {"rounds", rounds}, {"states", kStates}};
    for (size_t c = 0; c < ns.size(); ++c) result[keys[c]] = ns[c];
    if (horizon) result["horizon_knots"] = kKnots, result["horizon_check"] = {{"id", id_batch_err}, {"fd", fd_batch_err}};
    if (v3) result["v3_check"] = {{"id", id_v3_err}, {"fd", fd_v3_err}};
    result["id_check"] = {{"tau", id_err.value}, {"dq", id_err.dq}, {"dqd", id_err.dqd}, {"M", id_err.din}};
    result["fd_check"] = {{"qdd", fd_err.value}, {"dq", fd_err.dq}, {"dqd", fd_err.dqd}, {"Minv", fd_err.din}};
    for (size_t c = 0; c < ns.size(); ++c) std::printf("%s %.1f\n", keys[c].c_str(), ns[c]);
    std::printf("id_check %.3g %.3g %.3g %.3g\nfd_check %.3g %.3g %.3g %.3g\n", id_err.value, id_err.dq, id_err.dqd, id_err.din,
                fd_err.value, fd_err.dq, fd_err.dqd, fd_err.din);
    if (!json_out.empty()) {
        std::ofstream f(json_out);
        f << result.dump(2) << "\n";
        if (!f) throw std::runtime_error("cannot write " + json_out);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nelu_pinocchio_derivatives: %s\n", e.what());
        return 1;
    }
}
