// check.cpp: see check.hpp.
#include "check.hpp"

#include "derivatives.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <dlfcn.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "diagnostics.hpp"
#include "nelu/mimic.hpp"
#include "nelu/status.h"
#include "io.hpp"
#include "pipeline.hpp"

namespace fs = std::filesystem;

namespace nelu {
namespace {

using SolverD = int (*)(const double*, const double*, const double*, double*);
using SolverF = int (*)(const float*, const float*, const float*, float*);
using DerivativesD = int (*)(const double*, const double*, const double*, double*, double*);
using DerivativesF = int (*)(const float*, const float*, const float*, float*, float*);

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

/// Shell-quote for /bin/sh.
std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

/// `cxx` split into words: the compiler, then its flags (no shell quoting inside a word).
std::vector<std::string> words(const std::string& cxx) {
    std::vector<std::string> w;
    std::istringstream in(cxx);
    for (std::string x; in >> x;) w.push_back(x);
    return w;
}

/// A function that tells whether the build fuses a * b + c into one rounding (FMA contraction,
/// -ffp-contract=fast where the target has FMA): built with the solver, it returns a * b + c for
/// a = 1 + 2^-30, b = 1 - 2^-30, c = -1, which is 0 rounded twice and -2^-60 fused.
constexpr const char* kContractionProbe =
    "extern \"C\" double nelu_check_contraction(double a, double b, double c) { return a * b + c; }\n";

bool contracts(void* lib) {
    auto probe = reinterpret_cast<double (*)(double, double, double)>(::dlsym(lib, "nelu_check_contraction"));
    if (!probe) throw std::runtime_error("nelu check: the contraction probe is missing from the build");
    volatile double a = 1 + 0x1p-30, b = 1 - 0x1p-30, c = -1;
    return probe(a, b, c) != 0;
}

/// Compile `sources` (NAME.cpp, and NAME_batch.cpp with the probe above) into a shared object in a
/// fresh temporary directory and return its path. `cxx` is a compiler and optional flags ("g++ -O3
/// -march=x86-64-v3"); the flags come after nelu's own (-std=c++17 -O2 -Wall -Wextra -Werror), so
/// that they can override them (-O0, -O3).
std::string build_shared_object(const std::vector<fs::path>& sources, const std::string& cxx) {
    const std::vector<std::string> w = words(cxx);
    if (w.empty()) throw InputError("nelu check: --cxx is empty: name a C++ compiler, optionally followed by flags");
    if (std::system(fmt::format("command -v {} >/dev/null 2>&1", quote(w[0])).c_str()) != 0)
        throw InputError(fmt::format("nelu check: --cxx '{}': the compiler '{}' is not found", cxx, w[0]));
    std::string flags;
    for (std::size_t k = 1; k < w.size(); ++k) flags += " " + quote(w[k]);
    fs::path dir = fs::temp_directory_path() / fmt::format("nelu-check-{}", ::getpid());
    fs::create_directories(dir);
    const fs::path& source = sources.front();
    fs::path so = dir / (source.stem().string() + ".so");
    std::string files;
    for (const fs::path& f : sources) files += " " + quote(f.string());
    if (sources.size() > 1) {
        write_file_atomic((dir / "contraction_probe.cpp").string(), kContractionProbe);
        files += " " + quote((dir / "contraction_probe.cpp").string());
    }
    std::string cmd = fmt::format("{} -std=c++17 -O2 -Wall -Wextra -Werror -shared -fPIC{} -I{} -I{}{} -o {} 2>&1", quote(w[0]), flags,
                                  quote(source.parent_path().empty() ? std::string(".") : source.parent_path().string()), quote(runtime_include_dir()), files,
                                  quote(so.string()));
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("nelu check: the generated code does not compile: " + cmd);
    return so.string();
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

CheckReport run_check(const CheckOptions& o) {
    nlohmann::json man;
    try {
        man = nlohmann::json::parse(read_file(o.manifest));
    } catch (const nlohmann::json::exception& e) {
        throw InputError(o.manifest + ": not a nelu manifest (" + e.what() + ")");
    }
    CompileOptions co;
    co.urdf = o.urdf;
    const std::string spec = man["problem"].value("spec", "");
    co.problem = !o.problem.empty() ? o.problem
                 : spec.empty()     ? man["problem"].value("kind", "id")
                                    : (fs::path(o.manifest).parent_path() / spec).string();
    if (o.problem.empty() && !spec.empty() && !fs::exists(co.problem))
        throw InputError(fmt::format("{}: the solver was compiled from the spec '{}'; name it with --problem", o.manifest, spec));
    co.floating_base = man.value("floating_base", false);
    if (man.contains("snap")) co.snap = man["snap"].value("tolerance", 0.0);  // the model the solver computes
    co.ignore_mimic = man.value("ignore_mimic", false);
    if (o.ignore_mimic && !co.ignore_mimic)
        throw InputError(fmt::format("{}: --ignore-mimic, but the solver was compiled without it (its manifest says so)", o.manifest));
    co.verify_states = -1, co.validation_configs = 200;
    co.derivatives = man.contains("derivatives");
    co.batch = man.contains("batch");
    co.name = man.value("name", "");
    CompileResult r = compile(co);
    if (static_cast<int>(r.system.in.size()) != static_cast<int>(man["in"].size()) ||
        static_cast<int>(r.system.out.size()) != static_cast<int>(man["out"].size()))
        throw InputError(fmt::format("{}: the manifest's slots do not match {} compiled with problem '{}'", o.manifest, o.urdf, co.problem));
    if (!o.library.empty() && !fs::is_regular_file(o.library))
        throw InputError(fmt::format("nelu check: --library {}: no such file", o.library));
    std::vector<fs::path> sources{fs::path(o.manifest).replace_extension(".cpp")};
    if (co.batch && o.library.empty()) {
        sources.push_back(fs::path(o.manifest).parent_path() / (r.name + "_batch.cpp"));
        if (!fs::exists(sources.back()))
            throw InputError(fmt::format("{}: the manifest lists batch forms, but {} is missing", o.manifest, sources.back().string()));
    }
    const std::string so = o.library.empty() ? build_shared_object(sources, o.cxx) : o.library;
    void* lib = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib && !o.library.empty()) throw InputError(fmt::format("nelu check: --library {}: cannot load it: {}", o.library, ::dlerror()));
    if (!lib) throw std::runtime_error(std::string("nelu check: cannot load the solver: ") + ::dlerror());
    auto fd = reinterpret_cast<SolverD>(::dlsym(lib, r.name.c_str()));
    auto ff = reinterpret_cast<SolverF>(::dlsym(lib, (r.name + "_f").c_str()));
    if (!fd && !o.library.empty()) throw InputError(fmt::format("nelu check: --library {} has no entry point {}", o.library, r.name));
    if (!fd) throw std::runtime_error("nelu check: the solver has no double entry point " + r.name);
    auto fjac = co.derivatives ? reinterpret_cast<DerivativesD>(::dlsym(lib, (r.name + "_derivatives").c_str())) : nullptr;
    auto fjac_f = co.derivatives ? reinterpret_cast<DerivativesF>(::dlsym(lib, (r.name + "_derivatives_f").c_str())) : nullptr;
    if (co.derivatives && !fjac) throw std::runtime_error("nelu check: the manifest lists derivatives, but the solver has no " + r.name + "_derivatives");
    CheckReport rep;
    rep.name = r.name;
    const Model& m = r.load.model;
    rep.seeks_qdd = judged_by_backward_error(r.system, r.problem);
    rep.sensor = !r.system.classical;  // the backward error is that of M qdd + h = tau
    const std::vector<State> states = checked_states(m, r.system, 0x636865636b, o.states);
    const std::size_t nout = r.system.out.size();
    const std::vector<int> q_slots = independent_q_slots(m), v_slots = independent_v_slots(m);
    // NAME_derivatives at one state: out as NAME's, jac as the IR's and as central differences of NAME
    rep.derivatives = co.derivatives;
    const std::vector<Tangent> cols = co.derivatives ? jacobian_columns(m, static_cast<int>(r.system.in.size())) : std::vector<Tangent>();
    std::vector<ir::Id> jroots = r.order.best.jacobian;
    const std::vector<bool> jlive = r.order.best.prog.live_nodes(jroots);
    auto check_derivatives = [&](const State& st, const std::vector<double>& q, const std::vector<double>& qd,
                                 const std::vector<double>& in, const std::vector<double>& out) {
        const std::size_t nc = cols.size();
        std::vector<double> o2(nout), J(nout * nc);
        if (fjac(q.data(), qd.data(), in.data(), o2.data(), J.data()) != NELU_STATUS_OK) { ++rep.failed_status; return; }
        rep.out_vs_value = std::max(rep.out_vs_value, forward_error(o2, out));
        const std::vector<double> val = r.order.best.prog.evaluate(st.q.data(), st.qd.data(), in.data(), jlive);
        std::vector<double> Jir(J.size()), Jfd(J.size());
        for (std::size_t e = 0; e < J.size(); ++e) Jir[e] = val[r.order.best.jacobian[e]];
        rep.jac_vs_ir = std::max(rep.jac_vs_ir, forward_error(J, Jir));
        for (std::size_t c = 0; c < nc; ++c) {
            std::vector<double> side[2];
            for (int sgn = 0; sgn < 2; ++sgn) {
                std::vector<double> qp = q, qdp = qd, inp = in;
                perturb(m, cols[c], sgn ? -1e-6 : 1e-6, q_slots, qp, qdp, inp, v_slots);
                side[sgn].assign(nout, NAN);
                fd(qp.data(), qdp.data(), inp.data(), side[sgn].data());
            }
            for (std::size_t k = 0; k < nout; ++k) Jfd[k * nc + c] = (side[0][k] - side[1][k]) / 2e-6;
        }
        rep.jac_vs_differences = std::max(rep.jac_vs_differences, forward_error(J, Jfd));
        if (fjac_f) {  // float: the same Jacobian to float's accuracy, relative to its largest entry
            std::vector<float> qf(q.begin(), q.end()), qdf(qd.begin(), qd.end()), inf(in.begin(), in.end()), of(nout), Jf(J.size());
            if (fjac_f(qf.data(), qdf.data(), inf.data(), of.data(), Jf.data()) != NELU_STATUS_OK) ++rep.failed_status;
            else rep.jac_float = std::max(rep.jac_float, forward_error(std::vector<double>(Jf.begin(), Jf.end()), J));
        }
        ++rep.derivative_states;
    };
    BatchStates batch_states;  // every state's arguments, and its reference outputs, for the batch forms
    std::vector<std::vector<double>> refs;
    for (const State& st : states) {
        std::vector<double> in = solver_inputs(r.system, m, r.problem, st), ref = reference_outputs(r.system, m, r.problem, st);
        const std::vector<double> q = gather(st.q, q_slots), qd = gather(st.qd, v_slots);  // the independent coordinates
        if (co.batch) batch_states.q.push_back(q), batch_states.qd.push_back(qd), batch_states.in.push_back(in), refs.push_back(ref);
        // One call's status and outputs, in either precision. A non-zero status is right only where
        // Lambda does not exist (osim with lambda); the outputs are then untouched and not compared.
        auto judge = [&](int status, const std::vector<double>& out, bool single, double& forward, double& backward) {
            if (status != NELU_STATUS_OK) {
                const bool right = status == NELU_STATUS_SMALL_PIVOT && lambda_refusal_justified(r.system, r.order.best.pivots, ref, single);
                ++(right ? rep.refused_singular : rep.failed_status);
                return;
            }
            forward = std::max(forward, response_forward_error(r.system, out, ref));
            if (rep.seeks_qdd) backward = std::max(backward, backward_error(r.system, m, r.problem, st, out, ref));
        };
        std::vector<double> out(nout, NAN);
        const int status = fd(q.data(), qd.data(), in.data(), out.data());
        judge(status, out, false, rep.forward_double, rep.backward_double);
        if (ff) {
            std::vector<float> qf(q.begin(), q.end()), qdf(qd.begin(), qd.end()), inf(in.begin(), in.end()), outf(nout, NAN);
            const int status_f = ff(qf.data(), qdf.data(), inf.data(), outf.data());
            judge(status_f, std::vector<double>(outf.begin(), outf.end()), true, rep.forward_float, rep.backward_float);
            if (rep.sensor && status == NELU_STATUS_OK) {  // the double solver on the float solver's (rounded) inputs
                std::vector<double> qr(qf.begin(), qf.end()), qdr(qdf.begin(), qdf.end()), inr(inf.begin(), inf.end()), outr(nout, NAN);
                if (fd(qr.data(), qdr.data(), inr.data(), outr.data()) == NELU_STATUS_OK)
                    rep.rounding = std::max(rep.rounding, response_forward_error(r.system, outr, ref));
            }
        }
        if (fjac && status == NELU_STATUS_OK) check_derivatives(st, q, qd, in, out);
        ++rep.states;
    }
    if (co.batch) {  // the batch forms against the scalar ones; rows that are not bitwise, as the scalar ones are judged
        rep.batch = true;
        BatchJudge values{[&](std::size_t k, const std::vector<double>& out, bool) {
                              return rep.seeks_qdd ? backward_error(r.system, m, r.problem, states[k], out, refs[k])
                                                   : response_forward_error(r.system, out, refs[k]);
                          },
                          rep.tolerance_double(), rep.tolerance_float()};
        BatchJudge jacobians{[&](std::size_t k, const std::vector<double>& row, bool) {  // against the double scalar row
                                 std::vector<double> x(row.size());
                                 fjac(batch_states.q[k].data(), batch_states.qd[k].data(), batch_states.in[k].data(), x.data(), x.data() + nout);
                                 return forward_error(row, x);
                             },
                             1e-10, 1e-4};
        const std::size_t njac = co.derivatives ? cols.size() * nout : 0;
        rep.batch_report = check_batch(lib, r.name, contracts(lib), nout, njac, batch_states, values, jacobians);
    }
    ::dlclose(lib);
    std::error_code ec;
    if (o.library.empty()) fs::remove_all(fs::path(so).parent_path(), ec);
    return rep;
}

}  // namespace nelu
