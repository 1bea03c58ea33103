// check.cpp: see check.hpp.
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
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

/// Directory holding nelu/status.h: beside an installed executable, else the source tree.
std::string runtime_include_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        fs::path inst = exe.parent_path().parent_path() / "include";
        if (fs::exists(inst / "nelu" / "status.h")) return inst.string();
    }
    return NELU_RUNTIME_INCLUDE_DIR;
}

/// Shell-quote for /bin/sh.
std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

/// Compile NAME.cpp into a shared object in a fresh temporary directory and return its path.
std::string build_shared_object(const fs::path& source, const std::string& cxx) {
    fs::path dir = fs::temp_directory_path() / fmt::format("nelu-check-{}", ::getpid());
    fs::create_directories(dir);
    fs::path so = dir / (source.stem().string() + ".so");
    std::string cmd = fmt::format("{} -std=c++17 -O2 -Wall -Wextra -Werror -shared -fPIC -I{} -I{} {} -o {} 2>&1", quote(cxx),
                                  quote(source.parent_path().empty() ? std::string(".") : source.parent_path().string()), quote(runtime_include_dir()), quote(source.string()),
                                  quote(so.string()));
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("nelu check: the generated code does not compile: " + cmd);
    return so.string();
}

}  // namespace

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
    co.name = man.value("name", "");
    CompileResult r = compile(co);
    if (static_cast<int>(r.system.in.size()) != static_cast<int>(man["in"].size()) ||
        static_cast<int>(r.system.out.size()) != static_cast<int>(man["out"].size()))
        throw InputError(fmt::format("{}: the manifest's slots do not match {} compiled with problem '{}'", o.manifest, o.urdf, co.problem));
    const fs::path source = fs::path(o.manifest).replace_extension(".cpp");
    std::string so = build_shared_object(source, o.cxx);
    void* lib = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) throw std::runtime_error(std::string("nelu check: cannot load the solver: ") + ::dlerror());
    auto fd = reinterpret_cast<SolverD>(::dlsym(lib, r.name.c_str()));
    auto ff = reinterpret_cast<SolverF>(::dlsym(lib, (r.name + "_f").c_str()));
    if (!fd) throw std::runtime_error("nelu check: the solver has no double entry point " + r.name);
    CheckReport rep;
    rep.name = r.name;
    const Model& m = r.load.model;
    rep.seeks_qdd = judged_by_backward_error(r.system, r.problem);
    rep.sensor = !r.system.classical;  // the backward error is that of M qdd + h = tau
    const std::vector<State> states = checked_states(m, r.system, 0x636865636b, o.states);
    const std::size_t nout = r.system.out.size();
    const std::vector<int> q_slots = independent_q_slots(m), v_slots = independent_v_slots(m);
    for (const State& st : states) {
        std::vector<double> in = solver_inputs(r.system, m, r.problem, st), ref = reference_outputs(r.system, m, r.problem, st);
        const std::vector<double> q = gather(st.q, q_slots), qd = gather(st.qd, v_slots);  // the independent coordinates
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
        }
        ++rep.states;
    }
    ::dlclose(lib);
    std::error_code ec;
    fs::remove_all(fs::path(so).parent_path(), ec);
    return rep;
}

}  // namespace nelu
