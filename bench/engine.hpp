// engine.hpp: what the benchmark times. An Engine is one implementation of inverse dynamics (ID:
// tau from q, qd, qdd, f^x) and forward dynamics (FD: qdd from q, qd, tau, f^x) on one robot;
// nelu's generated solvers, its reference RNEA/ABA and every peer library are Engines.
//
// Every Engine converts the benchmark states to its own input format once, when it is made; the
// timed calls id(k) and fd(k) then compute state k from those inputs, and id_result/fd_result
// (not timed) give the last result in nelu's slot order (Body::v_index; a floating base as nelu's
// body-frame [n; f] wrench and [wdot; vdot] acceleration), so that the harness can check it against
// the reference before timing anything.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nelu/model.hpp"
#include "nelu/state.hpp"

namespace nelu::bench {

/// One benchmark robot: the model nelu loads, and the URDF text every peer loads.
struct Robot {
    std::string name;       ///< e.g. "ur5e", "quadruped_minicheetah_floating"
    std::string urdf_path;
    std::string urdf_text;  ///< the file's contents, without mesh geometry (bench_main.cpp without_meshes)
    bool floating = false;  ///< the URDF's root link attached to the world by a 6-DoF joint
    Model model;
};

/// The states every Engine computes: the same K states for every contender.
struct Workload {
    std::vector<State> states;  ///< q, qd, qdd, tau, f^x (one wrench per body, body frame)
};

class Engine {
public:
    virtual ~Engine() = default;
    /// Short name, e.g. "mujoco_forward"; the benchmark is PROBLEM/ROBOT/NAME.
    virtual std::string name() const = 0;
    /// Whether the timed call takes the external wrenches f^x; when false, the check compares
    /// with the reference at f^x = 0 (the call cannot take them).
    virtual bool takes_fext() const { return true; }
    /// Computes in float: checked against a looser tolerance (gross errors only).
    virtual bool single_precision() const { return false; }
    /// Checked against the reference and reported, but neither timed nor required to agree.
    virtual bool check_only() const { return false; }
    virtual bool has_id() const { return true; }
    virtual bool has_fd() const { return true; }
    /// Timed: inverse / forward dynamics at state k.
    virtual void id(int k) = 0;
    virtual void fd(int k) = 0;
    /// Not timed: the last id()'s tau / fd()'s qdd, nv entries in nelu's slot order.
    virtual void id_result(double* tau) const = 0;
    virtual void fd_result(double* qdd) const = 0;
};

/// Not available on this robot (e.g. no floating base): the reason, for the report.
struct Unavailable {
    std::string engine, reason;
};

using EnginePtr = std::unique_ptr<Engine>;

/// nelu's reference RNEA and ABA (runtime/include/nelu/reference.hpp), double.
EnginePtr make_reference(const Robot& robot, const Workload& work);

/// A generated solver pair (nelu's ABI) in scalar T (double or float): the `id` and `fd` presets
/// (in = qdd or tau, then every link's f^x), or with zero_fx the solvers without external wrenches
/// (in = qdd or tau; named generated_zero_fx_double / _float, compared at f^x = 0).
template <class T> using SolverFn = int (*)(const T*, const T*, const T*, T*);
EnginePtr make_generated_double(const Robot& robot, const Workload& work, SolverFn<double> id, SolverFn<double> fd,
                                bool zero_fx = false);
EnginePtr make_generated_float(const Robot& robot, const Workload& work, SolverFn<float> id, SolverFn<float> fd,
                               bool zero_fx = false);

/// Peers: each returns its engines on this robot, and says in `unavailable` what it cannot do.
/// A peer whose model disagrees with nelu's (masses, degrees of freedom) throws std::runtime_error.
std::vector<EnginePtr> make_mujoco(const Robot& robot, const Workload& work, std::vector<Unavailable>& unavailable);
std::vector<EnginePtr> make_kdl(const Robot& robot, const Workload& work, std::vector<Unavailable>& unavailable);
std::vector<EnginePtr> make_dart(const Robot& robot, const Workload& work, std::vector<Unavailable>& unavailable);
std::vector<EnginePtr> make_pinocchio(const Robot& robot, const Workload& work, std::vector<Unavailable>& unavailable);

/// The generated-solver input vector of state s: [qdd or tau (nv)] then f^x of every body
/// (6 each, [n; f], body order), as the `id` and `fd` presets lay it out.
std::vector<double> solver_input(const Model& m, const std::vector<double>& head, const State& s);

}  // namespace nelu::bench
