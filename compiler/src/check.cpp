// check.cpp: see check.hpp.
#include "check.hpp"

#include "derivatives.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "diagnostics.hpp"
#include "emit.hpp"
#include "nelu/mimic.hpp"
#include "nelu/status.h"
#include "io.hpp"
#include "pipeline.hpp"
#include "solver_library.hpp"

namespace fs = std::filesystem;

namespace nelu {
namespace {

/// The state as a float solver of a model with mimic joints sees it: every value rounded to float,
/// and each mimic joint's position and velocity computed from its master's in float arithmetic.
State float_view(const Model& m, const State& st) {
    auto rounded = [](const std::vector<double>& v) {
        std::vector<float> f(v.begin(), v.end());
        return f;
    };
    std::vector<float> q = rounded(st.q), qd = rounded(st.qd), qdd = rounded(st.qdd);
    couple_positions(m, q.data());
    if (static_cast<int>(qd.size()) == m.nv) couple_velocities(m, qd.data());
    // (the accelerations are rounded only: the references read the independent joints' and
    // couple the mimics' in double)
    State out = st;
    out.q.assign(q.begin(), q.end()), out.qd.assign(qd.begin(), qd.end()), out.qdd.assign(qdd.begin(), qdd.end());
    for (double& x : out.tau) x = static_cast<float>(x);
    for (SVec<double>& f : out.fext)
        for (int k = 0; k < 6; ++k) f[k] = static_cast<float>(f[k]);
    return out;
}

/// One call of a value entry point in S: its status, and its outputs in double in `out` (NaN where it wrote none).
template <class S>
int call(ValueFn<S> f, const Arguments<S>& a, std::vector<double>& out) {
    std::vector<S> o(out.size(), S(NAN));
    const int status = f(a.q.data(), a.qd.data(), a.in.data(), o.data());
    out.assign(o.begin(), o.end());
    return status;
}

/// One call of a derivatives entry point in S: its status, its outputs and Jacobian in double.
template <class S>
int call(DerivativesFn<S> f, const Arguments<S>& a, std::vector<double>& out, std::vector<double>& jac) {
    std::vector<S> o(out.size(), S(NAN)), J(jac.size(), S(NAN));
    const int status = f(a.q.data(), a.qd.data(), a.in.data(), o.data(), J.data());
    out.assign(o.begin(), o.end()), jac.assign(J.begin(), J.end());
    return status;
}

/// A workspace for a workspace form of `bytes`, its contents garbage: NaN, or huge values (call k).
std::vector<double> garbage_workspace(long bytes, long k) {
    std::vector<double> w(static_cast<std::size_t>(bytes) / sizeof(double) + 1);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = k % 2 ? NAN : (i % 2 ? 1e300 : -1e300);
    return w;
}

/// Whether a and b hold the same bits (memcmp, which must not see the null data() of an empty vector).
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0);
}

/// One call of a workspace form, `run(out, jac, work)` in scalar S, against its ordinary entry
/// point's status, out and jac (from call(); jac empty for a value entry point), the workspace
/// garbage first: whether it differs. Status and out bit for bit; jac bit for bit when
/// jac_tolerance < 0, else within it (forward_error): the every-value workspace form is column by
/// column, and rounds the Jacobian otherwise than an ordinary form with its columns in lanes.
template <class S, class Run>
bool workspace_differs(Run run, long bytes, long k, int status, const std::vector<double>& out, const std::vector<double>& jac,
                       double jac_tolerance = -1) {
    std::vector<S> o(out.size(), S(NAN)), J(jac.size(), S(NAN));
    std::vector<double> w = garbage_workspace(bytes, k);
    const int st = run(o.data(), J.data(), w.data());
    const std::vector<double> od(o.begin(), o.end()), Jd(J.begin(), J.end());
    if (st != status || !same_bits(od, out)) return true;
    if (jac_tolerance < 0 || status != NELU_STATUS_OK) return !same_bits(Jd, jac);
    return !(forward_error(Jd, jac) <= jac_tolerance);
}

/// workspace_differs for a value and a derivatives entry point's workspace form.
template <class S>
bool workspace_differs(WsValueFn<S> f, long bytes, long k, const Arguments<S>& a, int status, const std::vector<double>& out) {
    return workspace_differs<S>([&](S* o, S*, void* w) { return f(a.q.data(), a.qd.data(), a.in.data(), o, w); }, bytes, k, status, out, {});
}
template <class S>
bool workspace_differs(WsDerivativesFn<S> f, long bytes, long k, const Arguments<S>& a, int status, const std::vector<double>& out,
                       const std::vector<double>& jac, double jac_tolerance) {
    return workspace_differs<S>([&](S* o, S* J, void* w) { return f(a.q.data(), a.qd.data(), a.in.data(), o, J, w); }, bytes, k, status, out,
                                jac, jac_tolerance);
}

/// The workspace form of one entry point in scalar S that the manifest section `stack_owner` lists
/// ("workspace": {"double": {"entry", "bytes"}, "float": ...}), or null.
template <class F>
struct Workspace {
    F fn = nullptr;
    long bytes = 0;
};
template <class F>
Workspace<F> workspace_form(const SolverLibrary& lib, const nlohmann::json& stack_owner, const char* scalar, CheckReport& rep) {
    if (!stack_owner.contains("workspace") || !stack_owner["workspace"].contains(scalar)) return {};
    const nlohmann::json& w = stack_owner["workspace"][scalar];
    const std::string entry = w.at("entry").get<std::string>();
    Workspace<F> ws{lib.require<F>(entry, "the manifest lists this workspace form"), w.at("bytes").get<long>()};
    rep.workspace_entries.push_back(entry);
    return ws;
}

/// The independent coordinates moved along one Jacobian column by `h`: a joint's own coordinate, a
/// floating base's local twist component (q (+) h e_k: R exp(h [e_k]x), or p + R h e_k), a velocity,
/// or an input.
void perturb(const Model& m, const Tangent& t, double h, const std::vector<int>& q_slots, std::vector<double>& q,
             std::vector<double>& qd, std::vector<double>& in, const std::vector<int>& v_slots) {
    if (t.kind == Tangent::Kind::In) { in[static_cast<std::size_t>(t.index)] += h; return; }
    const int va = static_cast<int>(std::find(v_slots.begin(), v_slots.end(), t.index) - v_slots.begin());
    if (t.kind == Tangent::Kind::Qd) { qd[static_cast<std::size_t>(va)] += h; return; }
    for (const Body& b : m.bodies) {
        if (t.index < b.v_index || t.index >= b.v_index + b.nv()) continue;
        const int qa = static_cast<int>(std::find(q_slots.begin(), q_slots.end(), b.q_index) - q_slots.begin());
        if (b.type != JointType::Floating) { q[static_cast<std::size_t>(qa)] += h; return; }
        double* x = q.data() + qa;  // [px py pz qx qy qz qw]
        const int k = t.index - b.v_index;
        const double qx = x[3], qy = x[4], qz = x[5], qw = x[6];
        if (k >= 3) {  // p += R e_j h
            const Mat3<double> R = quat_to_rotation(qx, qy, qz, qw);
            for (int i = 0; i < 3; ++i) x[i] += R(i, k - 3) * h;
        } else {  // quat <- quat (x) (sin(h/2) e_k, cos(h/2))
            double e[3] = {0, 0, 0};
            e[k] = std::sin(h / 2);
            const double c = std::cos(h / 2);
            x[3] = qw * e[0] + c * qx + (qy * e[2] - qz * e[1]);
            x[4] = qw * e[1] + c * qy + (qz * e[0] - qx * e[2]);
            x[5] = qw * e[2] + c * qz + (qx * e[1] - qy * e[0]);
            x[6] = qw * c - (qx * e[0] + qy * e[1] + qz * e[2]);
        }
        return;
    }
}

}  // namespace

std::string runtime_include_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        fs::path inst = exe.parent_path().parent_path() / "include";
        if (fs::exists(inst / "nelu" / "status.h")) return inst.string();
    }
    return NELU_RUNTIME_INCLUDE_DIR;
}

namespace {

/// run_check on the parsed manifest `man` (a field of the wrong type throws nlohmann::json's
/// exceptions, which run_check reports as a manifest that is not nelu's).
CheckReport check_solver(const CheckOptions& o, nlohmann::json& man) {
    // the URDF and the spec must be those the solver was compiled from: their hashes, as the
    // manifest records them (absent in older manifests)
    auto refuse_other = [&](const char* made, const char* what, const std::string& path, const std::string& recorded) {
        if (recorded.empty()) return;
        if (const std::string hash = content_hash(read_file(path)); hash != recorded)
            throw InputError(fmt::format("{}: the solver was {} from another {} than {} (fnv1a64 {} in the manifest, {} for the file): "
                                         "check it with the {} it was compiled from",
                                         o.manifest, made, what, path, recorded, hash, what));
    };
    refuse_other("generated", "URDF", o.urdf, man.contains("robot") ? man["robot"].value("fnv1a64", "") : "");
    if (man.contains("scalars") && !std::any_of(man["scalars"].begin(), man["scalars"].end(), [](const nlohmann::json& x) { return x == "double"; }))
        throw InputError(fmt::format("{}: the solver has no double entry points (--scalar float), which nelu check compares with the "
                                     "references: compile it with --scalar both (its float functions are the same program) and check that",
                                     o.manifest));
    CompileOptions co;
    co.urdf = o.urdf;
    const std::string spec = man["problem"].value("spec", "");
    co.problem = !o.problem.empty() ? o.problem
                 : spec.empty()     ? man["problem"].value("kind", "id")
                                    : (fs::path(o.manifest).parent_path() / spec).string();
    if (o.problem.empty() && !spec.empty() && !fs::exists(co.problem))
        throw InputError(fmt::format("{}: the solver was compiled from the spec '{}'; name it with --problem", o.manifest, spec));
    if (fs::is_regular_file(co.problem)) refuse_other("compiled", "spec", co.problem, man["problem"].value("fnv1a64", ""));
    co.floating_base = man.value("floating_base", false);
    if (man.contains("snap")) co.snap = man["snap"].value("tolerance", 0.0);  // the model the solver computes
    co.ignore_mimic = man.value("ignore_mimic", false);
    if (o.ignore_mimic && !co.ignore_mimic)
        throw InputError(fmt::format("{}: --ignore-mimic, but the solver was compiled without it (its manifest says so)", o.manifest));
    co.verify_states = -1, co.validation_configs = 200;
    co.advice = false;  // (the compile's advice is for `nelu compile`; this is the solver as it was compiled)
    co.derivatives = man.contains("derivatives");
    co.batch = man.contains("batch");
    co.name = man.value("name", "");
    CompileResult r = compile(co);
    // The program check compares with is the recompiled one: it must be the solver's own. Fewer
    // validation configurations than the compile's default can let another order win (the
    // humanoid's soles: umfpack over 200 configurations, tree-contact/symmetric over 10,000), so
    // on a different winner the compile is repeated with the default; the manifest's winner must
    // then be the recompiled one.
    const std::string winner = man.contains("ordering") ? man["ordering"].value("winner", "") : "";
    if (!winner.empty() && r.order.best.ordering != winner) {
        co.validation_configs = CompileOptions{}.validation_configs;
        r = compile(co);
        if (r.order.best.ordering != winner)
            throw InputError(fmt::format("{}: the solver's ordering is '{}', but {} compiled with problem '{}' gives '{}' (a solver compiled "
                                         "with another --validate or by another nelu: compile it again)",
                                         o.manifest, winner, o.urdf, co.problem, r.order.best.ordering));
    }
    if (static_cast<int>(r.system.in.size()) != static_cast<int>(man["in"].size()) ||
        static_cast<int>(r.system.out.size()) != static_cast<int>(man["out"].size()))
        throw InputError(fmt::format("{}: the manifest's slots do not match {} compiled with problem '{}'", o.manifest, o.urdf, co.problem));
    std::vector<fs::path> sources{fs::path(o.manifest).replace_extension(".cpp")};
    if (o.library.empty() && !fs::is_regular_file(sources.front()))
        throw InputError(fmt::format("{}: the solver's source {} is missing", o.manifest, sources.front().string()));
    if (co.batch && o.library.empty()) {
        sources.push_back(fs::path(o.manifest).parent_path() / (r.name + "_batch.cpp"));
        if (!fs::exists(sources.back()))
            throw InputError(fmt::format("{}: the manifest lists batch forms, but {} is missing", o.manifest, sources.back().string()));
    }
    const SolverLibrary lib = o.library.empty() ? SolverLibrary::build(sources, o.cxx) : SolverLibrary::load(o.library);
    const auto fd = lib.require<ValueFn<double>>(r.name);
    // every entry point the manifest lists is required: one missing is an error, not a comparison left out
    const bool has_float = man.contains("scalars") && std::any_of(man["scalars"].begin(), man["scalars"].end(), [](const nlohmann::json& x) { return x == "float"; });
    const auto ff = has_float ? lib.require<ValueFn<float>>(r.name + scalar_suffix<float>(), "the manifest lists float") : nullptr;
    const std::string derivatives = r.name + "_derivatives";
    const auto fjac = co.derivatives ? lib.require<DerivativesFn<double>>(derivatives, "the manifest lists derivatives") : nullptr;
    const auto fjac_f = co.derivatives && has_float
                            ? lib.require<DerivativesFn<float>>(derivatives + scalar_suffix<float>(), "the manifest lists derivatives and float")
                            : nullptr;
    CheckReport rep;
    rep.name = r.name;
    rep.has_float = ff != nullptr;
    // the workspace forms (docs/firmware.md, "Stack"), each against its ordinary entry point
    const auto ws_d = workspace_form<WsValueFn<double>>(lib, man, "double", rep);
    const auto ws_f = workspace_form<WsValueFn<float>>(lib, man, "float", rep);
    const nlohmann::json no_derivatives = nlohmann::json::object();
    const nlohmann::json& man_derivatives = man.contains("derivatives") ? man["derivatives"] : no_derivatives;
    const auto ws_jac_d = workspace_form<WsDerivativesFn<double>>(lib, man_derivatives, "double", rep);
    const auto ws_jac_f = workspace_form<WsDerivativesFn<float>>(lib, man_derivatives, "float", rep);
    // the every-value shape of NAME_derivatives_ws is column by column: beside columns in lanes, its
    // jac is judged, not bitwise: both within the state's tolerance of the exact Jacobian, so within
    // twice it of each other
    const bool ws_jac_bitwise = !(man_derivatives.contains("lanes") && man_derivatives.contains("workspace") &&
                                  man_derivatives["workspace"].value("shape", "") == "every_value");
    rep.workspace_jac_judged = !ws_jac_bitwise && ws_jac_d.fn;
    long ws_call = 0;  // which garbage the next workspace gets
    auto judge_workspace = [&](bool differs) { ++rep.workspace_calls, rep.workspace_differing += differs; };
    const Model& m = r.load.model;
    rep.seeks_qdd = judged_by_backward_error(r.system, r.problem);
    // sensor problems, and contact problems with only some of their unknowns as outputs, are judged
    // by their forward error; the others by a backward error
    rep.sensor = !r.system.classical && !contact_residual_applies(r.system, r.problem);
    rep.mimics = has_mimics(m);
    int lenient = 0;  // contacts: the special configurations first, where only refusals are judged (run_verify)
    const std::vector<State> states = checked_states(m, r.system, 0x636865636b, o.states, &lenient);
    const std::size_t nout = r.system.out.size();
    const std::vector<int> q_slots = independent_q_slots(m), v_slots = independent_v_slots(m);
    // NAME_derivatives at one state: out as NAME's, jac as the IR's and as central differences of NAME
    rep.derivatives = co.derivatives;
    const std::vector<Tangent> cols = co.derivatives ? jacobian_columns(m, static_cast<int>(r.system.in.size())) : std::vector<Tangent>();
    std::vector<ir::Id> jroots = r.order.best.jacobian;
    const std::vector<bool> jlive = r.order.best.prog.live_nodes(jroots);
    // per state, the Jacobian's tolerances the scalar check set (double against the program, float
    // against double): the batch forms' rows are judged by them too
    std::vector<std::array<double, 2>> jac_tolerance(states.size(), {1e-10, 1e-4});
    // e, e_float: the value solvers' forward errors at this state (CheckReport::derivatives)
    auto check_derivatives = [&](const State& st, const std::vector<double>& q, const std::vector<double>& qd,
                                 const std::vector<double>& in, const std::vector<double>& out, double e, double e_float) {
        std::array<double, 2>& state_tolerance = jac_tolerance[static_cast<std::size_t>(&st - states.data())];
        double tol_ir = std::max(1e-10, 10 * e);
        const double tol_fd = std::max(1e-5, 10 * e / 1e-6);
        // float: the Jacobian's right-hand sides read the float values (dD/dx d) and go through the
        // same float factors, so the values' error enters it once more, amplified by the solve:
        // 100 e_float (measured up to 16 e_float where e_float >= 1e-5, 83 e_float at one milder
        // state: the held UR5e, 1000 states, docs/derivatives.md "Verification")
        double tol_f = std::max(1e-4, 100 * e_float);  // (raised below by the arguments' rounding)
        const std::size_t nc = cols.size();
        std::vector<double> o2(nout), J(nout * nc);
        const int jac_status = call(fjac, Arguments<double>(q, qd, in), o2, J);
        const std::vector<double> val = r.order.best.prog.evaluate(st.q.data(), st.qd.data(), in.data(), jlive);
        std::vector<double> Jir(J.size()), Jfd(J.size());
        for (std::size_t e = 0; e < J.size(); ++e) Jir[e] = val[r.order.best.jacobian[e]];
        {
            // the program's own rounding error at this state: its double evaluation against its long
            // double one. The generated code rounds where the program does not quite alike (the
            // runtime's sine and cosine are within an ulp of the library's), and a Jacobian can
            // amplify rounding more than the values do (the derivatives of an ill-conditioned contact
            // set go through its solve twice): 10 times that error, when larger
            std::vector<long double> ql(st.q.begin(), st.q.end()), qdl(st.qd.begin(), st.qd.end()), inl(in.begin(), in.end());
            const std::vector<long double> vl = r.order.best.prog.evaluate_as<long double>(ql.data(), qdl.data(), inl.data(), jlive);
            std::vector<double> Jl(J.size());
            for (std::size_t e = 0; e < J.size(); ++e) Jl[e] = static_cast<double>(vl[r.order.best.jacobian[e]]);
            tol_ir = std::max(tol_ir, 10 * forward_error(Jir, Jl));
        }
        if (ws_jac_d.fn)
            judge_workspace(workspace_differs(ws_jac_d.fn, ws_jac_d.bytes, ws_call++, Arguments<double>(q, qd, in), jac_status, o2, J,
                                              ws_jac_bitwise ? -1 : 2 * tol_ir));
        if (jac_status != NELU_STATUS_OK) { ++rep.failed_status; return; }
        rep.out_vs_value = std::max(rep.out_vs_value, forward_error(o2, out));
        state_tolerance[0] = 2 * tol_ir;  // (the batch row and the scalar one each within tol_ir of the exact Jacobian)
        const double e_ir = forward_error(J, Jir);
        rep.jac_vs_ir = std::max(rep.jac_vs_ir, e_ir);
        rep.jac_vs_ir_judged = std::max(rep.jac_vs_ir_judged, e_ir / tol_ir);
        // two steps: the differences' rounding error grows as 1/h (the values' rounding over the
        // step: 4e-2 at h = 1e-8, 3e-3, 3e-4 and 4e-5 at 1e-7, 1e-6 and 1e-5 on an ill-conditioned
        // damped contact set, where the Jacobian agrees with complex step to 2e-10) and their
        // truncation error as h^2 (about 1e-8 at h = 1e-4); a wrong Jacobian entry differs at both
        double e_fd = INFINITY;
        for (const double h : {1e-6, 1e-4}) {
            for (std::size_t c = 0; c < nc; ++c) {
                std::vector<double> side[2];
                for (int sgn = 0; sgn < 2; ++sgn) {
                    std::vector<double> qp = q, qdp = qd, inp = in;
                    perturb(m, cols[c], sgn ? -h : h, q_slots, qp, qdp, inp, v_slots);
                    side[sgn].resize(nout);
                    call(fd, Arguments<double>(qp, qdp, inp), side[sgn]);
                }
                for (std::size_t k = 0; k < nout; ++k) Jfd[k * nc + c] = (side[0][k] - side[1][k]) / (2 * h);
            }
            e_fd = std::min(e_fd, forward_error(J, Jfd));
        }
        rep.jac_vs_differences = std::max(rep.jac_vs_differences, e_fd);
        rep.jac_vs_differences_judged = std::max(rep.jac_vs_differences_judged, e_fd / tol_fd);
        if (fjac_f) {  // float: the same Jacobian to float's accuracy, relative to its largest entry
            std::vector<double> of(nout), Jf(J.size());
            const int jac_status_f = call(fjac_f, Arguments<float>(q, qd, in), of, Jf);
            if (ws_jac_f.fn)
                judge_workspace(workspace_differs(ws_jac_f.fn, ws_jac_f.bytes, ws_call++, Arguments<float>(q, qd, in), jac_status_f, of, Jf,
                                                  ws_jac_bitwise ? -1 : 2 * tol_f));
            if (jac_status_f != NELU_STATUS_OK) ++rep.failed_status;
            else {
                // what rounding the arguments to float alone does to the double Jacobian (as for
                // sensor problems' values, CheckReport::float_judged): 100 times it, when larger
                std::vector<double> or_(nout), Jr(J.size());
                if (call(fjac, Arguments<double>(Arguments<float>(q, qd, in)), or_, Jr) == NELU_STATUS_OK)
                    tol_f = std::max(tol_f, 100 * forward_error(Jr, J));
                state_tolerance[1] = tol_f;
                const double e_f = forward_error(Jf, J);
                rep.jac_float = std::max(rep.jac_float, e_f);
                rep.jac_float_judged = std::max(rep.jac_float_judged, e_f / tol_f);
            }
        }
        rep.conditioned_states += tol_ir > 1e-10 || tol_fd > 1e-5 || tol_f > 1e-4;  // each state once
        ++rep.derivative_states;
    };
    BatchStates batch_states;  // every state's arguments, and its reference outputs, for the batch forms
    std::vector<std::vector<double>> refs;
    std::vector<double> float_tolerance;  // per batch state: a float row's (CheckReport::float_judged)
    // A call's non-zero status is right only where Lambda does not exist (osim with lambda) or the
    // reference refuses too (a singular contact set): lambda_refusal_justified, as the compile's
    // verification judges its program.
    auto refusal_right = [&](int status, const std::vector<double>& ref, bool single) {
        return status == NELU_STATUS_SMALL_PIVOT && lambda_refusal_justified(r.system, r.order.best.pivots, ref, single);
    };
    for (const State& st : states) {
        std::vector<double> in = solver_inputs(r.system, m, r.problem, st), ref = reference_outputs(r.system, m, r.problem, st);
        const std::vector<double> q = gather(st.q, q_slots), qd = gather(st.qd, v_slots);  // the independent coordinates
        if (&st - states.data() < lenient) {  // the solver may refuse only where the reference does
            std::vector<double> out(nout);
            const int status = call(fd, Arguments<double>(q, qd, in), out);
            if (status != NELU_STATUS_OK) ++(refusal_right(status, ref, false) ? rep.refused_singular : rep.failed_status);
            ++rep.special_states;
            continue;
        }
        if (co.batch) batch_states.q.push_back(q), batch_states.qd.push_back(qd), batch_states.in.push_back(in), refs.push_back(ref);
        // One call's status and outputs, in either precision; after a refusal the outputs are
        // untouched and not compared.
        auto judge = [&](int status, const std::vector<double>& out, bool single, double& forward, double& backward) {
            if (status != NELU_STATUS_OK) {
                ++(refusal_right(status, ref, single) ? rep.refused_singular : rep.failed_status);
                return;
            }
            if (!reference_refused(ref)) forward = std::max(forward, response_forward_error(r.system, out, ref));
            if (rep.seeks_qdd) backward = std::max(backward, backward_error(r.system, m, r.problem, st, out, ref));
        };
        std::vector<double> out(nout);
        const int status = call(fd, Arguments<double>(q, qd, in), out);
        if (ws_d.fn) judge_workspace(workspace_differs(ws_d.fn, ws_d.bytes, ws_call++, Arguments<double>(q, qd, in), status, out));
        double e = 0, e_float = 0;  // this state's forward errors
        judge(status, out, false, rep.forward_double, rep.backward_double);
        if (status == NELU_STATUS_OK && !reference_refused(ref)) e = response_forward_error(r.system, out, ref);
        if (ff) {
            const Arguments<float> rounded(q, qd, in);
            std::vector<double> outf(nout);
            const int status_f = call(ff, rounded, outf);
            if (ws_f.fn) judge_workspace(workspace_differs(ws_f.fn, ws_f.bytes, ws_call++, rounded, status_f, outf));
            double backward_f = 0;  // this state's
            judge(status_f, outf, true, rep.forward_float, backward_f);
            rep.backward_float = std::max(rep.backward_float, backward_f);
            if (status_f == NELU_STATUS_OK && !reference_refused(ref)) e_float = response_forward_error(r.system, outf, ref);
            // this state's float tolerance (CheckReport::float_judged): 1e-4, or what the state's
            // conditioning and the rounding of its inputs to float allow, when larger
            double tolerance_f = 1e-4;  // (a sensor problem's is set over all states, below)
            if (status == NELU_STATUS_OK) {  // the double solver on the float solver's (rounded) inputs
                std::vector<double> outr(nout);
                if (call(fd, Arguments<double>(rounded), outr) == NELU_STATUS_OK) {
                    auto error_of = [&](const std::vector<double>& o) {  // as the float solver is judged
                        if (rep.seeks_qdd) return backward_error(r.system, m, r.problem, st, o, ref);
                        return reference_refused(ref) ? 0.0 : response_forward_error(r.system, o, ref);
                    };
                    double rounding = error_of(outr);
                    // A mimic joint's angle is the float solver's own product multiplier x q + offset,
                    // rounded at the mimic's magnitude (a 1000:1 gear: 1000 times its master's
                    // rounding), which no input carries: the reference's outputs at the angles and
                    // velocities float arithmetic gives them are what that rounding alone moves. Per
                    // state only: a sensor problem's tolerance is one for all states (100 x rounding
                    // over them), which one state's mimic rounding would loosen everywhere
                    if (rep.mimics && !rep.sensor) {
                        const std::vector<double> at_float = reference_outputs(r.system, m, r.problem, float_view(m, st));
                        if (!reference_refused(at_float)) rounding = std::max(rounding, error_of(at_float));
                    }
                    rep.rounding = std::max(rep.rounding, rounding);
                    if (!rep.sensor && 100 * rounding > tolerance_f) ++rep.rounded_states, tolerance_f = 100 * rounding;
                }
            }
            if (status_f == NELU_STATUS_OK && !rep.sensor)
                rep.float_judged = std::max(rep.float_judged, (rep.seeks_qdd ? backward_f : e_float) / tolerance_f);
            if (co.batch) float_tolerance.push_back(tolerance_f);
        }
        if (fjac && status == NELU_STATUS_OK) check_derivatives(st, q, qd, in, out, e, e_float);
        ++rep.states;
    }
    if (rep.sensor) rep.float_judged = rep.forward_float / rep.tolerance_float();  // (over all states: CheckReport::tolerance_float)
    if (co.batch) {  // the batch forms against the scalar ones; rows that are not bitwise, as the scalar ones are judged
        rep.batch = true;
        BatchJudge values{[&](std::size_t k, const std::vector<double>& out, bool) {
                              return rep.seeks_qdd ? backward_error(r.system, m, r.problem, states[k + static_cast<std::size_t>(lenient)], out, refs[k])
                                                   : response_forward_error(r.system, out, refs[k]);
                          },
                          rep.tolerance_double(), rep.tolerance_float(), [&](std::size_t k, const std::vector<double>&, bool single) {
                              return single && k < float_tolerance.size() ? float_tolerance[k] : 0.0;
                          }};
        BatchJudge jacobians{[&](std::size_t k, const std::vector<double>& row, bool) {  // against the double scalar row
                                 std::vector<double> out(nout), jac(row.size() - nout);
                                 call(fjac, Arguments<double>(batch_states.q[k], batch_states.qd[k], batch_states.in[k]), out, jac);
                                 out.insert(out.end(), jac.begin(), jac.end());
                                 return forward_error(row, out);
                             },
                             1e-10, 1e-4, [&](std::size_t k, const std::vector<double>& row, bool single) {
                                 const std::size_t at = k + static_cast<std::size_t>(lenient);  // (the batch has no special state)
                                 if (!single) return jac_tolerance[at][0];
                                 // the float row's values carry their own error into its Jacobian
                                 // (as the scalar float's, CheckReport::derivatives): 100 times it
                                 const std::vector<double> out(row.begin(), row.begin() + static_cast<long>(nout));
                                 const double e_row = reference_refused(refs[k]) ? 0 : response_forward_error(r.system, out, refs[k]);
                                 return std::max(jac_tolerance[at][1], 100 * e_row);
                             },
                             &values};
        const std::size_t njac = co.derivatives ? cols.size() * nout : 0;
        // a scalar NAME_derivatives with its columns in lanes (manifest derivatives.lanes) rounds
        // its Jacobian otherwise than the batch form's column-by-column program: judged, not bitwise
        const bool jac_lanes = co.derivatives && man.at("derivatives").contains("lanes");
        rep.batch_report = check_batch(lib, r.name, nout, njac, batch_states, values, jacobians, !jac_lanes);
    }
    return rep;
}

}  // namespace

CheckReport run_check(const CheckOptions& o) {
    if (o.states < 1)  // with no random state, nothing might be compared (special states are left out of singular problems)
        throw InputError(fmt::format("nelu check: --states {}: check at least one random state", o.states));
    if (o.states > kMaxCheckStates)
        throw InputError(fmt::format("nelu check: --states {}: at most {} random states", o.states, kMaxCheckStates));
    try {
        nlohmann::json man = nlohmann::json::parse(read_file(o.manifest));
        if (!man.is_object()) throw InputError(o.manifest + ": not a nelu manifest (not a JSON object)");
        return check_solver(o, man);
    } catch (const nlohmann::json::exception& e) {
        throw InputError(o.manifest + ": not a nelu manifest (" + e.what() + ")");
    }
}

}  // namespace nelu
