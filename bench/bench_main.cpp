// bench_main.cpp: nelu_bench, the benchmark of issue 6. For every benchmark robot
// (bench_solvers.hpp, made by bench/CMakeLists.txt): the generated ID and FD solvers in double and
// float, the reference RNEA and ABA, and every peer found at build time, on the same K random
// states (fixed seed), in one process.
//
// Before anything is timed, every contender's result at every state is compared with the
// reference (RNEA for ID, ABA for FD; at f^x = 0 for calls that cannot take external wrenches):
// a double-precision contender whose scaled error max|x - x_ref| / max(1, max|x_ref|) exceeds
// 1e-8 stops the run with exit status 1, since a benchmark of a different computation is
// worthless. The errors are written into the benchmark context (JSON output) for the report.
//
// The compiled problem kinds osim and iwim are checked and timed by responses.cpp (OSIM/CASE/ENGINE,
// IWIM/CASE/ENGINE) against the seed-algorithm references and the dense route.
//
// Benchmarks are named PROBLEM/ROBOT/ENGINE, e.g. FD/ur5e/generated_float; each iteration is one
// call at the next of the K states. Extra flags (before Google Benchmark's own):
//   --nelu_check_only   run the checks, print the errors, time nothing.
#include <benchmark/benchmark.h>
#include <tinyxml2.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <stdexcept>

#include "bench_solvers.hpp"
#include "engine.hpp"
#include "load.hpp"
#include "responses.hpp"
#include "nelu/reference.hpp"

namespace nelu::bench {
namespace {

constexpr int kStates = 16;       // power of two: the state index wraps with a mask
constexpr std::uint64_t kSeed = 6;
constexpr double kTolerance = 1e-8;       // double-precision contenders
constexpr double kFloatTolerance = 1e-2;  // float: reported, and only gross errors stop the run

struct Entry {
    const char* name;
    const char* urdf;
    bool floating;
    SolverFn<double> id, fd;
    SolverFn<float> id_f, fd_f;
};

#define NELU_BENCH_ENTRY(robot, urdf, floating) \
    {#robot, urdf, floating, &robot##_id, &robot##_fd, &robot##_id_f, &robot##_fd_f},
const Entry kEntries[] = {NELU_BENCH_ROBOTS(NELU_BENCH_ENTRY)};

/// The solvers without external wrenches (specs/id_zero_fx.yaml, fd_zero_fx.yaml) of some robots.
struct ZeroFxEntry {
    const char* name;
    SolverFn<double> id0, fd0;
    SolverFn<float> id0_f, fd0_f;
};
#define NELU_BENCH_ZERO_FX_ENTRY(robot) {#robot, &robot##_id0, &robot##_fd0, &robot##_id0_f, &robot##_fd0_f},
const ZeroFxEntry kZeroFx[] = {NELU_BENCH_ZERO_FX(NELU_BENCH_ZERO_FX_ENTRY)};

#define NELU_BENCH_RESPONSE_ENTRY(solver, kind, name, urdf, spec, floating) \
    {#solver, #kind, #name, urdf, spec, floating, &solver, &solver##_f, solver##_NOUT},
const ResponseEntry kResponses[] = {NELU_BENCH_RESPONSES(NELU_BENCH_RESPONSE_ENTRY)};

/// One robot with its workload, its reference results and its contenders.
struct Case {
    Robot robot;
    Workload work;
    std::vector<std::vector<double>> tau, tau0, qdd, qdd0;  // reference: with f^x, and at f^x = 0
    std::vector<EnginePtr> engines;
};

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The URDF without its mesh geometry: <visual> and <collision> elements that name a <mesh> file,
/// which the peers' loaders would try to open (real robots name package:// files that are not
/// shipped; the shipped robots have none). Neither takes part in ID or FD.
std::string without_meshes(const std::string& text, const std::string& path) {
    if (text.find("<mesh") == std::string::npos) return text;
    tinyxml2::XMLDocument doc;
    if (doc.Parse(text.c_str()) != tinyxml2::XML_SUCCESS) throw std::runtime_error("cannot parse " + path);
    tinyxml2::XMLElement* robot = doc.FirstChildElement("robot");
    for (tinyxml2::XMLElement* link = robot ? robot->FirstChildElement("link") : nullptr; link;
         link = link->NextSiblingElement("link"))
        for (const char* kind : {"visual", "collision"})
            for (tinyxml2::XMLElement* g = link->FirstChildElement(kind); g;) {
                tinyxml2::XMLElement* next = g->NextSiblingElement(kind);
                const tinyxml2::XMLElement* geometry = g->FirstChildElement("geometry");
                if (geometry && geometry->FirstChildElement("mesh")) link->DeleteChild(g);
                g = next;
            }
    tinyxml2::XMLPrinter printer;
    doc.Print(&printer);
    return printer.CStr();
}

std::unique_ptr<Case> make_case(const Entry& e) {
    auto c = std::make_unique<Case>();
    Robot& r = c->robot;
    r.name = e.name, r.urdf_path = e.urdf, r.floating = e.floating;
    r.urdf_text = without_meshes(read_text(e.urdf), e.urdf);
    LoadOptions options;
    options.floating_base = e.floating;
    r.model = load_urdf_file(e.urdf, options).model;
    std::mt19937_64 rng(kSeed);
    for (int k = 0; k < kStates; ++k) c->work.states.push_back(random_state(r.model, rng));
    const Model& m = r.model;
    for (const State& s : c->work.states) {
        std::vector<SVec<double>> zero(m.num_bodies(), zero6<double>());
        std::vector<double> x(m.nv);
        rnea(m, s.q.data(), s.qd.data(), s.qdd.data(), s.fext.data(), x.data()), c->tau.push_back(x);
        rnea(m, s.q.data(), s.qd.data(), s.qdd.data(), zero.data(), x.data()), c->tau0.push_back(x);
        aba(m, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(), x.data()), c->qdd.push_back(x);
        aba(m, s.q.data(), s.qd.data(), s.tau.data(), zero.data(), x.data()), c->qdd0.push_back(x);
    }
    return c;
}

/// Scaled error of `engine` against the reference over every state: max|x - x_ref| / max(1, max|x_ref|).
double check(Case& c, Engine& engine, bool id) {
    double err = 0;
    std::vector<double> x(c.robot.model.nv);
    for (int k = 0; k < kStates; ++k) {
        const auto& ref = id ? (engine.takes_fext() ? c.tau[k] : c.tau0[k]) : (engine.takes_fext() ? c.qdd[k] : c.qdd0[k]);
        std::fill(x.begin(), x.end(), NAN);
        if (id) engine.id(k), engine.id_result(x.data());
        else engine.fd(k), engine.fd_result(x.data());
        double scale = 1, diff = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            scale = std::max(scale, std::abs(ref[i]));
            diff = std::isfinite(x[i]) ? std::max(diff, std::abs(x[i] - ref[i])) : INFINITY;
        }
        err = std::max(err, diff / scale);
    }
    return err;
}

void add_peers(Case& c, std::vector<EnginePtr> (*make)(const Robot&, const Workload&, std::vector<Unavailable>&)) {
    std::vector<Unavailable> unavailable;
    for (EnginePtr& e : make(c.robot, c.work, unavailable)) c.engines.push_back(std::move(e));
    for (const Unavailable& u : unavailable)
        benchmark::AddCustomContext("unavailable/" + c.robot.name + "/" + u.engine, u.reason);
}

/// Checks every contender of every case; false when one disagrees with the reference.
bool check_all(std::vector<std::unique_ptr<Case>>& cases) {
    bool ok = true;
    for (auto& c : cases)
        for (auto& e : c->engines)
            for (bool id : {true, false}) {
                if (id ? !e->has_id() : !e->has_fd()) continue;
                const double err = check(*c, *e, id);
                const bool is_float = e->single_precision();
                const bool pass = e->check_only() || err <= (is_float ? kFloatTolerance : kTolerance);
                const std::string what = std::string(id ? "ID" : "FD") + "/" + c->robot.name + "/" + e->name();
                char text[64];
                std::snprintf(text, sizeof text, "%.3g%s", err, e->takes_fext() ? "" : " (f^x = 0)");
                benchmark::AddCustomContext("check/" + what, text);
                std::fprintf(stderr, "check %-52s scaled error %s%s\n", what.c_str(), text,
                             pass ? (e->check_only() ? "  (check only, not timed)" : "") : "  DISAGREES");
                ok = ok && pass;
            }
    return ok;
}

void register_all(std::vector<std::unique_ptr<Case>>& cases) {
    for (auto& c : cases)
        for (auto& e : c->engines)
            for (bool id : {true, false}) {
                if ((id ? !e->has_id() : !e->has_fd()) || e->check_only()) continue;
                Engine* engine = e.get();
                const std::string name = std::string(id ? "ID" : "FD") + "/" + c->robot.name + "/" + e->name();
                benchmark::RegisterBenchmark(name.c_str(), [engine, id](benchmark::State& st) {
                    int k = 0;
                    for (auto _ : st) {
                        if (id) engine->id(k);
                        else engine->fd(k);
                        benchmark::ClobberMemory();
                        k = (k + 1) & (kStates - 1);
                    }
                });
            }
}

}  // namespace
}  // namespace nelu::bench

int main(int argc, char** argv) {
    using namespace nelu::bench;
    bool check_only = false;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--nelu_check_only") == 0) check_only = true, std::memmove(argv + i, argv + i + 1, (argc - i) * sizeof *argv), --argc;
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

    std::string peers;
#ifdef NELU_BENCH_MUJOCO
    peers += " mujoco";
#endif
#ifdef NELU_BENCH_KDL
    peers += " kdl";
#endif
#ifdef NELU_BENCH_DART
    peers += " dart";
#endif
#ifdef NELU_BENCH_PINOCCHIO
    peers += " pinocchio";
#endif
    benchmark::AddCustomContext("peers", peers.empty() ? "none" : peers.substr(1));
    std::vector<std::unique_ptr<Case>> cases;
    ResponseSetPtr responses;
    try {
        for (const Entry& e : kEntries) {
            auto c = make_case(e);
            c->engines.push_back(make_generated_double(c->robot, c->work, e.id, e.fd));
            c->engines.push_back(make_generated_float(c->robot, c->work, e.id_f, e.fd_f));
            for (const ZeroFxEntry& z : kZeroFx)
                if (std::strcmp(z.name, e.name) == 0) {
                    c->engines.push_back(make_generated_double(c->robot, c->work, z.id0, z.fd0, /*zero_fx=*/true));
                    c->engines.push_back(make_generated_float(c->robot, c->work, z.id0_f, z.fd0_f, /*zero_fx=*/true));
                }
            c->engines.push_back(make_reference(c->robot, c->work));
#ifdef NELU_BENCH_MUJOCO
            add_peers(*c, make_mujoco);
#endif
#ifdef NELU_BENCH_KDL
            add_peers(*c, make_kdl);
#endif
#ifdef NELU_BENCH_DART
            add_peers(*c, make_dart);
#endif
#ifdef NELU_BENCH_PINOCCHIO
            add_peers(*c, make_pinocchio);
#endif
            cases.push_back(std::move(c));
        }
        responses = make_responses(kResponses, static_cast<int>(std::size(kResponses)));
    } catch (const std::exception& ex) {
        std::fprintf(stderr, "nelu_bench: %s\n", ex.what());
        return 1;
    }
    const bool agree = check_all(cases);
    const bool responses_agree = check_responses(*responses);
    if (!agree || !responses_agree) {
        std::fprintf(stderr, "nelu_bench: a contender disagrees with the reference; nothing timed\n");
        return 1;
    }
    if (check_only) return 0;
    register_all(cases);
    register_responses(*responses);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
