// End-to-end tests of the generated C++ (DESIGN.md, "Contract: generated code"): every case is
// compiled in-process by nelu::compile, the emitted NAME.cpp is compiled by the system C++ compiler
// warning-free (-Wall -Wextra -Werror), and a small harness runs NAME (double) and NAME_f (float)
// on 1000 random states plus the special configurations. The outputs are compared here with the
// reference algorithms:
//   inverse dynamics (torques out):   forward error |out - ref|_inf / max(|ref|_inf, 1)
//                                      <= 1e-10 (double), <= 1e-4 (float);
//   forward dynamics (accelerations): backward error |M qdd + h - tau| / (|M||qdd| + |h| + |tau|)
//                                      <= 1e-10 (double), <= 1e-4 (float); the forward error is
//                                      reported, and required <= 1e-10 (double) where cond(M) < 1e6.
// Float errors are measured against the reference at the float-rounded state, so that they measure
// the solver's arithmetic and not the rounding of its inputs.
//
// Solvers of more than kO1OpsLimit operations are compiled at -O0 (GCC's -O1 takes minutes on
// them), the rest at -O1; several builds run in parallel.
//
// Also: the harness under AddressSanitizer and UBSan, byte-identical emission (in-process twice and
// the CLI), the header as C99, what the generated code does with non-finite inputs (status codes,
// `out` left untouched), and that refused forward-dynamics cases are truly singular.
//
// Environment: NELU_TEST_CXX / NELU_TEST_CC (compilers, default "c++" / "cc"), NELU_TEST_JOBS
// (parallel builds, default the hardware concurrency), NELU_KEEP_TEMP=1 (keep the scratch dirs).
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "diagnostics.hpp"
#include "model_check.hpp"
#include "nelu/reference.hpp"
#include "nelu/mimic.hpp"
#include "nelu/state.hpp"
#include "nelu/status.h"
#include "pipeline.hpp"
#include "robot_gen.hpp"
#include "test_support.hpp"
#include "verify.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kRandomStates = 1000;
constexpr std::uint64_t kStateSeed = 0x6e656c75;  // "nelu"
/// Solvers with more operations than this are compiled at -O0: GCC's -O1 is superlinear on one huge
/// straight-line function (about 45 s for 14k operations, over 6 minutes for a 100-body ABA).
constexpr long kO1OpsLimit = 8000;
constexpr double kTolDouble = 1e-10, kTolFloat = 1e-4, kWellConditioned = 1e6;
constexpr double kSentinel = 1234.5;  // written into `out` before each call
const char* const kSpecialNames[] = {"all joints 0", "all joints +pi/2", "all joints -pi/2", "all joints pi",
                                     "lower limits", "upper limits"};

// --- small utilities -------------------------------------------------------------------------

std::string env_or(const char* var, const std::string& fallback) {
    const char* v = std::getenv(var);
    return v && *v ? std::string(v) : fallback;
}

std::string cxx() { return env_or("NELU_TEST_CXX", "c++"); }
std::string runtime_include() { return nelu::test::source_dir() + "/runtime/include"; }
std::string quoted(const std::string& s) { return "'" + s + "'"; }
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_text(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

/// Exit status of a shell command (-1 when it did not exit normally).
int run_shell(const std::string& cmd) {
    const int st = std::system(cmd.c_str());
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/// A fresh empty directory, removed with its contents unless NELU_KEEP_TEMP is set or keep() was
/// called (a failing case keeps its files for inspection).
struct ScratchDir {
    fs::path path;
    bool kept = false;
    explicit ScratchDir(const std::string& tag) {
        static std::atomic<int> counter{0};
        path = fs::temp_directory_path() /
               ("nelu_test_gen_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + tag);
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    ~ScratchDir() {
        if (!kept && env_or("NELU_KEEP_TEMP", "").empty()) {
            std::error_code ec;
            fs::remove_all(path, ec);
        }
    }
    void keep() { kept = true; }
};

/// Run `jobs` (independent, thread-safe: external processes and their own files) on a pool of
/// NELU_TEST_JOBS or hardware-concurrency threads, in the order given.
template <class Job>
void run_parallel(std::vector<Job*>& jobs) {
    int workers = std::atoi(env_or("NELU_TEST_JOBS", "0").c_str());
    if (workers <= 0) workers = std::max(1u, std::thread::hardware_concurrency());
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    for (int w = 0; w < workers; ++w)
        pool.emplace_back([&] {
            for (std::size_t k; (k = next++) < jobs.size();) (*jobs[k])();
        });
    for (auto& t : pool) t.join();
}

// --- states, data files, the harness ---------------------------------------------------------

/// A state rounded to float, component by component (what NAME_f sees).
nelu::State rounded_to_float(const nelu::State& s, const nelu::Model& m) {
    auto r = [](std::vector<double> v) {
        for (double& x : v) x = static_cast<double>(static_cast<float>(x));
        return v;
    };
    nelu::State f = s;
    f.q = r(s.q), f.qd = r(s.qd), f.qdd = r(s.qdd), f.tau = r(s.tau);
    for (auto& w : f.fext)
        for (int k = 0; k < 6; ++k) w[k] = static_cast<double>(static_cast<float>(w[k]));
    nelu::couple_positions(m, f.q.data());  // mimic joints follow the rounded masters
    nelu::couple_velocities(m, f.qd.data());
    nelu::couple_velocities(m, f.qdd.data());
    return f;
}

/// The special configurations, every joint alike and then mixed (each with random qd and inputs),
/// then kRandomStates random states.
std::vector<nelu::State> test_states(const nelu::Model& m) {
    std::mt19937_64 rng(kStateSeed);
    std::vector<std::vector<double>> qs = nelu::special_configurations(m, rng);
    for (auto& q : nelu::mixed_configurations(m, rng)) qs.push_back(std::move(q));
    std::vector<nelu::State> states = nelu::states_at(m, qs, rng);
    for (int k = 0; k < kRandomStates; ++k) states.push_back(nelu::random_state(m, rng));
    return states;
}

std::string state_name(std::size_t k, std::size_t specials) {
    if (k >= specials) return "random #" + std::to_string(k - specials);
    return k < 6 ? std::string("special: ") + kSpecialNames[k] : "special: mixed #" + std::to_string(k - 6) + " (nelu::mixed_configurations)";
}

/// Condition number of the joint-space inertia matrix M(q) (CRBA), from its eigenvalues.
double inertia_condition(const nelu::Model& m, const std::vector<double>& q) {
    std::vector<double> M(static_cast<std::size_t>(m.nv) * m.nv);
    nelu::crba(m, q.data(), M.data());
    Eigen::Map<Eigen::MatrixXd> A(M.data(), m.nv, m.nv);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(A, Eigen::EigenvaluesOnly);
    const double lo = es.eigenvalues().minCoeff(), hi = es.eigenvalues().maxCoeff();
    return lo > 0 ? hi / lo : INFINITY;
}

/// Binary file read by the harness: int32 {count, nq, nv, nin, nout}, then per state the doubles
/// q (nq), qd (nv), in (nin), expected out (nout).
void write_data_file(const fs::path& p, int nq, int nv, int nin, int nout, const std::vector<std::vector<double>>& q,
                     const std::vector<std::vector<double>>& qd, const std::vector<std::vector<double>>& in,
                     const std::vector<std::vector<double>>& ref) {
    std::ofstream f(p, std::ios::binary);
    const std::int32_t h[5] = {static_cast<std::int32_t>(q.size()), nq, nv, nin, nout};
    f.write(reinterpret_cast<const char*>(h), sizeof h);
    for (std::size_t s = 0; s < q.size(); ++s)
        for (const auto* v : {&q[s], &qd[s], &in[s], &ref[s]})
            f.write(reinterpret_cast<const char*>(v->data()), static_cast<std::streamsize>(v->size() * sizeof(double)));
}

/// Harness outputs per state: statuses of NAME and NAME_f, and their outputs.
struct HarnessOutput {
    std::vector<int> status_d, status_f;
    std::vector<std::vector<double>> out_d, out_f;
};

/// Reads the harness's output file: per state doubles {status_d, status_f, out_d (nout), out_f (nout)}.
bool read_harness_output(const fs::path& p, std::size_t states, int nout, HarnessOutput& h) {
    std::ifstream f(p, std::ios::binary);
    std::vector<double> rec(2 + 2 * static_cast<std::size_t>(nout));
    for (std::size_t s = 0; s < states; ++s) {
        if (!f.read(reinterpret_cast<char*>(rec.data()), static_cast<std::streamsize>(rec.size() * sizeof(double)))) return false;
        h.status_d.push_back(static_cast<int>(rec[0]));
        h.status_f.push_back(static_cast<int>(rec[1]));
        h.out_d.emplace_back(rec.begin() + 2, rec.begin() + 2 + nout);
        h.out_f.emplace_back(rec.begin() + 2 + nout, rec.end());
    }
    return true;
}

/// main.cpp of the harness for solver NAME: reads the data file, calls NAME and NAME_f (inputs cast
/// to float) with `out` prefilled with kSentinel, writes statuses and outputs, and prints the
/// number of non-OK statuses.
std::string harness_source(const std::string& name) {
    std::string src = R"(// Test harness for @N@, written by tests/test_generated_solvers.cpp.
#include "@N@.hpp"

#include <cstdint>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 3) return 10;
    std::FILE* fi = std::fopen(argv[1], "rb");
    std::FILE* fo = std::fopen(argv[2], "wb");
    if (!fi || !fo) return 11;
    std::int32_t h[5];
    if (std::fread(h, sizeof h, 1, fi) != 1) return 12;
    const int count = h[0], nq = h[1], nv = h[2], nin = h[3], nout = h[4];
    if (nq != @N@_NQ || nv != @N@_NV || nout != @N@_NOUT || !(nin == @N@_NIN || (@N@_NIN == 0 && nin == 1))) return 13;
    std::vector<double> q(nq + 1), qd(nv + 1), in(nin + 1), ref(nout + 1), od(nout + 1), rec(2 + 2 * nout);
    std::vector<float> qf(nq + 1), qdf(nv + 1), inf(nin + 1), of(nout + 1);
    int bad_d = 0, bad_f = 0;
    for (int s = 0; s < count; ++s) {
        if (std::fread(q.data(), sizeof(double), nq, fi) != static_cast<std::size_t>(nq) ||
            std::fread(qd.data(), sizeof(double), nv, fi) != static_cast<std::size_t>(nv) ||
            std::fread(in.data(), sizeof(double), nin, fi) != static_cast<std::size_t>(nin) ||
            std::fread(ref.data(), sizeof(double), nout, fi) != static_cast<std::size_t>(nout))
            return 14;
        for (int k = 0; k < nq; ++k) qf[k] = static_cast<float>(q[k]);
        for (int k = 0; k < nv; ++k) qdf[k] = static_cast<float>(qd[k]);
        for (int k = 0; k < nin; ++k) inf[k] = static_cast<float>(in[k]);
        for (int k = 0; k < nout; ++k) od[k] = @SENTINEL@, of[k] = static_cast<float>(@SENTINEL@);
        const int sd = @N@(q.data(), qd.data(), in.data(), od.data());
        const int sf = @N@_f(qf.data(), qdf.data(), inf.data(), of.data());
        bad_d += sd != NELU_STATUS_OK, bad_f += sf != NELU_STATUS_OK;
        rec[0] = sd, rec[1] = sf;
        for (int k = 0; k < nout; ++k) rec[2 + k] = od[k], rec[2 + nout + k] = of[k];
        if (std::fwrite(rec.data(), sizeof(double), rec.size(), fo) != rec.size()) return 15;
    }
    std::printf("%d states, non-OK status: double %d, float %d\n", count, bad_d, bad_f);
    return std::fclose(fo) == 0 ? 0 : 16;
}
)";
    auto replace_all = [&](const std::string& from, const std::string& to) {
        for (std::size_t p = 0; (p = src.find(from, p)) != std::string::npos; p += to.size()) src.replace(p, from.size(), to);
    };
    replace_all("@N@", name);
    char sentinel[32];
    std::snprintf(sentinel, sizeof sentinel, "%.17g", kSentinel);
    replace_all("@SENTINEL@", sentinel);
    return src;
}

/// Compiles DIR/NAME.cpp and DIR/main.cpp into DIR/harness with `flags`; logs into DIR/build.log.
struct HarnessBuild {
    int rc = -1;
    double gen_seconds = 0;  ///< compiling NAME.cpp alone
    std::string log;
};

HarnessBuild build_harness(const fs::path& dir, const std::string& name, const std::string& flags) {
    HarnessBuild b;
    const std::string base = cxx() + " -std=c++17 " + flags + " -Wall -Wextra -Werror -I" + quoted(runtime_include()) +
                             " -I" + quoted(dir.string());
    const std::string d = quoted(dir.string()) + "/";
    const auto t0 = Clock::now();
    // the generated source under the warnings firmware teams enable too (tests/CMakeLists.txt, NELU_STRICT_WARNINGS)
    const std::string strict = " -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wdouble-promotion -Wundef -Wfloat-equal -Wcast-align";
    b.rc = run_shell(base + strict + " -c " + d + name + ".cpp -o " + d + name + ".o > " + d + "build.log 2>&1");
    b.gen_seconds = seconds_since(t0);
    if (b.rc == 0) b.rc = run_shell(base + " -c " + d + "main.cpp -o " + d + "main.o >> " + d + "build.log 2>&1");
    if (b.rc == 0) b.rc = run_shell(cxx() + " " + flags + " " + d + "main.o " + d + name + ".o -o " + d + "harness >> " + d + "build.log 2>&1");
    b.log = read_text(dir / "build.log");
    return b;
}

// --- one case: compile, build, run, compare ---------------------------------------------------

struct CaseSpec {
    std::string family, robot, urdf, problem;
    bool floating = false;
};

struct Metrics {
    double fwd_d = 0, fwd_d_wellcond = 0, bwd_d = 0, fwd_f = 0, bwd_f = 0, worst_cond = 0;
    std::size_t worst_state_d = 0, worst_state_f = 0;
    int bad_status_d = 0, bad_status_f = 0, touched_on_failure = 0, ill_conditioned = 0;
    std::string first_bad_d, first_bad_f;  ///< a state where the status was not OK
};

struct CaseRun {
    CaseSpec spec;
    std::unique_ptr<ScratchDir> dir;
    std::unique_ptr<nelu::CompileResult> result;
    bool refused = false;
    std::string refusal, compile_error;
    double nelu_seconds = 0, run_seconds = 0;
    std::string opt;
    HarnessBuild build;
    int run_rc = -1;
    std::string run_log;
    std::vector<nelu::State> states;
    std::vector<std::vector<double>> ref, ref_f;
    std::vector<double> cond;  // forward dynamics only
    HarnessOutput output;
    bool output_ok = false;
    Metrics metrics;

    bool seeks_qdd() const { return result && result->verify.seeks_qdd; }

    /// Build and run the harness (called on a worker thread: touches only this case's files).
    void operator()() {
        if (!result) return;
        build = build_harness(dir->path, result->name, opt);
        if (build.rc != 0) return;
        const auto t0 = Clock::now();
        const std::string d = quoted(dir->path.string()) + "/";
        run_rc = run_shell(d + "harness " + d + "data.bin " + d + "out.bin > " + d + "run.log 2>&1");
        run_seconds = seconds_since(t0);
        run_log = read_text(dir->path / "run.log");
        output_ok = run_rc == 0 && read_harness_output(dir->path / "out.bin", states.size(),
                                                       static_cast<int>(result->system.out.size()), output);
    }
};

std::string case_label(const CaseSpec& c) {
    return c.robot + (c.floating ? "+floating" : "") + " " + c.problem;
}

std::string solver_name(const CaseSpec& c) {
    return nelu::c_identifier("t_" + c.robot + (c.floating ? "_fb_" : "_") + c.problem);
}

/// Phase 1 (main thread): nelu::compile in-process, write the outputs, the states and expected
/// outputs, and the harness source.
void prepare(CaseRun& run) {
    const CaseSpec& c = run.spec;
    run.dir = std::make_unique<ScratchDir>(solver_name(c));
    nelu::CompileOptions o;
    o.urdf = c.urdf, o.problem = c.problem, o.floating_base = c.floating, o.verify_states = 5;
    o.name = solver_name(c);
    // the ordinary entry points only: the workspace form, which the large cases would get too,
    // would double their C++ builds; test_workspace and scripts/firmware.sh test it
    o.max_stack = 1L << 30;
    const auto t0 = Clock::now();
    try {
        run.result = std::make_unique<nelu::CompileResult>(nelu::compile(o));
    } catch (const nelu::IllPosedError& e) {
        run.refused = true, run.refusal = e.what();
    } catch (const std::exception& e) {
        run.compile_error = e.what();
    }
    run.nelu_seconds = seconds_since(t0);
    if (!run.result) return;
    const nelu::CompileResult& r = *run.result;
    nelu::write_outputs(r, run.dir->path.string());
    write_text(run.dir->path / "main.cpp", harness_source(r.name));
    run.opt = r.order.best.ops.total() <= kO1OpsLimit ? "-O1" : "-O0";

    const nelu::Model& m = r.load.model;
    run.states = test_states(m);
    std::vector<std::vector<double>> q, qd, in;
    const std::vector<int> q_slots = nelu::independent_q_slots(m), v_slots = nelu::independent_v_slots(m);
    for (const nelu::State& s : run.states) {  // the solver takes the independent coordinates (mimic joints left out)
        q.push_back(nelu::gather(s.q, q_slots)), qd.push_back(nelu::gather(s.qd, v_slots)), in.push_back(nelu::solver_inputs(r.system, m, s));
        run.ref.push_back(nelu::reference_outputs(r.system, m, r.problem, s));
        run.ref_f.push_back(nelu::reference_outputs(r.system, m, r.problem, rounded_to_float(s, m)));
        if (r.verify.seeks_qdd) run.cond.push_back(inertia_condition(m, s.q));
    }
    write_data_file(run.dir->path / "data.bin", static_cast<int>(q_slots.size()), static_cast<int>(v_slots.size()), static_cast<int>(in.front().size()),
                    static_cast<int>(r.system.out.size()), q, qd, in, run.ref);
}

double finite_or_inf(double x) { return std::isfinite(x) ? x : INFINITY; }

/// Phase 3 (main thread): errors of the harness outputs against the references.
void evaluate(CaseRun& run) {
    const nelu::CompileResult& r = *run.result;
    const nelu::Model& m = r.load.model;
    Metrics& k = run.metrics;
    const std::size_t specials = run.states.size() - kRandomStates;
    const bool fd = run.seeks_qdd();
    for (std::size_t s = 0; s < run.states.size(); ++s) {
        const std::vector<double>& od = run.output.out_d[s];
        const std::vector<double>& of = run.output.out_f[s];
        auto untouched = [](const std::vector<double>& out, double sentinel) {
            return std::all_of(out.begin(), out.end(), [&](double x) { return x == sentinel; });
        };
        if (run.output.status_d[s] != NELU_STATUS_OK) {
            if (!k.bad_status_d++) k.first_bad_d = state_name(s, specials);
            k.touched_on_failure += !untouched(od, kSentinel);
        } else {
            const double e = finite_or_inf(nelu::test::rel_error(od, run.ref[s]));
            if (e > k.fwd_d) k.fwd_d = e, k.worst_state_d = s;
            if (fd) {
                k.bwd_d = std::max(k.bwd_d, finite_or_inf(nelu::backward_error(r.system, m, r.problem, run.states[s], od)));
                if (run.cond[s] < kWellConditioned) k.fwd_d_wellcond = std::max(k.fwd_d_wellcond, e);
            }
        }
        if (run.output.status_f[s] != NELU_STATUS_OK) {
            if (!k.bad_status_f++) k.first_bad_f = state_name(s, specials);
            k.touched_on_failure += !untouched(of, static_cast<double>(static_cast<float>(kSentinel)));
        } else {
            const double e = finite_or_inf(nelu::test::rel_error(of, run.ref_f[s]));
            if (fd) {
                const double b = finite_or_inf(nelu::backward_error(r.system, m, r.problem, rounded_to_float(run.states[s], m), of));
                if (b > k.bwd_f) k.bwd_f = b, k.worst_state_f = s;
                k.fwd_f = std::max(k.fwd_f, e);
            } else if (e > k.fwd_f) {
                k.fwd_f = e, k.worst_state_f = s;
            }
        }
        if (fd) {
            k.worst_cond = std::max(k.worst_cond, run.cond[s]);
            k.ill_conditioned += !(run.cond[s] < kWellConditioned);
        }
    }
}

void print_header() {
    std::printf("\n%-26s %-4s %-9s %7s %6s | %-9s %-9s %-9s | %-9s %-9s | %-9s %5s | %-4s %7s %6s\n", "robot", "prob",
                "ordering", "ops", "fill", "dbl fwd", "dbl fwd*", "dbl bwd", "flt fwd", "flt bwd", "max cond", "bad",
                "opt", "cc [s]", "run[s]");
    std::printf("%s\n", std::string(160, '-').c_str());
}

void print_row(const CaseRun& run) {
    const CaseSpec& c = run.spec;
    const std::string robot = c.robot + (c.floating ? "+fb" : "");
    if (run.refused) {
        std::printf("%-26s %-4s refused (IllPosedError): %s\n", robot.c_str(), c.problem.c_str(),
                    run.refusal.substr(0, run.refusal.find('\n')).c_str());
        return;
    }
    if (!run.result) {
        std::printf("%-26s %-4s compile error: %s\n", robot.c_str(), c.problem.c_str(), run.compile_error.c_str());
        return;
    }
    const nelu::Factorization& f = run.result->order.best;
    const Metrics& k = run.metrics;
    const bool fd = run.seeks_qdd();
    auto num = [](double x, bool show) {
        char b[32];
        if (show) std::snprintf(b, sizeof b, "%.2e", x);
        else std::snprintf(b, sizeof b, "-");
        return std::string(b);
    };
    std::printf("%-26s %-4s %-9s %7ld %6ld | %-9s %-9s %-9s | %-9s %-9s | %-9s %2d/%-2d | %-4s %7.2f %6.2f\n", robot.c_str(),
                c.problem.c_str(), f.ordering.c_str(), f.ops.total(), f.fill(), num(k.fwd_d, true).c_str(),
                num(k.fwd_d_wellcond, fd).c_str(), num(k.bwd_d, fd).c_str(), num(k.fwd_f, true).c_str(),
                num(k.bwd_f, fd).c_str(), num(k.worst_cond, fd).c_str(), k.bad_status_d, k.bad_status_f,
                run.opt.find("sanitize") != std::string::npos ? "san" : run.opt.c_str(), run.build.gen_seconds, run.run_seconds);
}

/// Asserts on one case (main thread).
void check_case(CaseRun& run) {
    const CaseSpec& c = run.spec;
    INFO("case: ", c.family, ": ", case_label(c), " (", c.urdf, "), files in ", run.dir ? run.dir->path.string() : "-");
    if (run.refused) {
        // A refusal is acceptable only when forward dynamics is truly singular, and must say where.
        const nelu::Model m = nelu::load_urdf_file(c.urdf, {c.floating, {}}).model;
        INFO("refusal: ", run.refusal);
        bool names_joint = false;
        for (const nelu::Body& b : m.bodies) names_joint = names_joint || run.refusal.find(b.joint_name) != std::string::npos;
        CHECK(names_joint);
        CHECK_FALSE(nelu::singular_fd_joints(m).empty());
        return;
    }
    REQUIRE_MESSAGE(run.result, "nelu::compile failed: ", run.compile_error);
    bool ok = false;
    {
        INFO("compiler output:\n", run.build.log);
        CHECK(run.build.rc == 0);
        CHECK(run.build.log.empty());  // warning-free, not even notes
        ok = run.build.rc == 0;
    }
    if (!ok) return run.dir->keep();
    {
        INFO("harness output: ", run.run_log);
        REQUIRE(run.run_rc == 0);
        REQUIRE(run.output_ok);
    }
    evaluate(run);
    const Metrics& k = run.metrics;
    const std::size_t specials = run.states.size() - kRandomStates;
    INFO("worst double state: ", state_name(k.worst_state_d, specials), "; worst float state: ",
         state_name(k.worst_state_f, specials), "; worst cond(M) ", k.worst_cond, " (", k.ill_conditioned,
         " states with cond >= 1e6)");
    INFO("first non-OK status: double ", k.first_bad_d, "; float ", k.first_bad_f);
    CHECK(k.touched_on_failure == 0);  // a failing call leaves `out` untouched
    CHECK(k.bad_status_d == 0);
    CHECK(k.bad_status_f == 0);
    if (run.seeks_qdd()) {
        CHECK(k.bwd_d <= kTolDouble);
        CHECK(k.fwd_d_wellcond <= kTolDouble);
        CHECK(k.bwd_f <= kTolFloat);
    } else {
        CHECK(k.fwd_d <= kTolDouble);
        CHECK(k.fwd_f <= kTolFloat);
    }
}

/// All phases for a family of cases; prints one row per case. `flags` replaces the optimization
/// level chosen by size when not empty.
std::vector<CaseRun> run_family(const std::vector<CaseSpec>& specs, const std::string& flags = "") {
    const auto t0 = Clock::now();
    std::vector<CaseRun> runs(specs.size());
    for (std::size_t k = 0; k < specs.size(); ++k) {
        runs[k].spec = specs[k], prepare(runs[k]);
        if (!flags.empty()) runs[k].opt = flags;
    }
    const double prepare_s = seconds_since(t0);
    // Largest sources first, so that the pool is not left waiting on one big compilation.
    std::vector<CaseRun*> jobs;
    for (CaseRun& r : runs) jobs.push_back(&r);
    auto size_of = [](const CaseRun* r) {
        return r->result ? r->result->emitted.source.size() : 0;
    };
    std::stable_sort(jobs.begin(), jobs.end(), [&](const CaseRun* a, const CaseRun* b) { return size_of(a) > size_of(b); });
    const auto t1 = Clock::now();
    run_parallel(jobs);
    const double build_s = seconds_since(t1);
    double cc_total = 0;
    for (CaseRun& r : runs) {
        check_case(r);
        cc_total += r.build.gen_seconds;
    }
    std::printf("\n%s: %zu cases, %d random + special states each\n", specs.empty() ? "" : specs.front().family.c_str(),
                specs.size(), kRandomStates);
    std::printf("dbl fwd: forward error max|out-ref|/max(|ref|,1); dbl fwd*: same over states with cond(M) < 1e6 (fd);\n"
                "bwd: backward error (fd); float errors against the reference at the float-rounded state;\n"
                "bad: non-OK statuses double/float; cc: seconds to compile the generated NAME.cpp\n");
    print_header();
    for (const CaseRun& r : runs) print_row(r);
    std::printf("timing: nelu::compile + states + references %.1f s; C++ builds and runs %.1f s wall (%.1f s of compiler time)\n",
                prepare_s, build_s, cc_total);
    std::fflush(stdout);
    return runs;
}

// --- the case lists ---------------------------------------------------------------------------

std::string stem(const std::string& path) { return fs::path(path).stem().string(); }

bool shared_floating(const std::string& robot) { return robot == "solo12" || robot == "icub_reduced"; }

/// A generated robot written to a URDF file that lives as long as the test process.
std::string generated_urdf(nelu::RobotGenOptions::Shape shape, int n, nelu::RobotGenOptions::Transforms tf, std::string& name) {
    static ScratchDir dir("robots");
    nelu::RobotGenOptions o;
    o.shape = shape, o.links = n, o.transforms = tf, o.seed = 100 + static_cast<std::uint64_t>(n), o.branching = 2;
    name = std::string(shape == nelu::RobotGenOptions::Shape::Chain ? "chain" : "tree") + std::to_string(n) +
           (tf == nelu::RobotGenOptions::Transforms::Dh ? "_dh" : "");
    const fs::path p = dir.path / (name + ".urdf");
    if (!fs::exists(p)) write_text(p, nelu::generate_robot_urdf(o));
    return p.string();
}

std::vector<CaseSpec> generated_cases(const std::vector<int>& sizes, const std::string& family) {
    std::vector<CaseSpec> cases;
    for (int n : sizes)
        for (auto shape : {nelu::RobotGenOptions::Shape::Chain, nelu::RobotGenOptions::Shape::Tree})
            for (auto tf : {nelu::RobotGenOptions::Transforms::General, nelu::RobotGenOptions::Transforms::Dh})
                for (const char* p : {"id", "fd"}) {
                    std::string name;
                    const std::string urdf = generated_urdf(shape, n, tf, name);
                    cases.push_back({family, name, urdf, p, false});
                }
    return cases;
}

}  // namespace

TEST_CASE("generated solvers: shipped robots (robots/*.urdf), quadruped also floating") {
    std::vector<CaseSpec> cases;
    for (const std::string& u : nelu::test::shipped_robots())
        for (bool fb : {false, true}) {
            if (fb && stem(u).find("quadruped") == std::string::npos) continue;
            for (const char* p : {"id", "fd"}) cases.push_back({"shipped robots", stem(u), u, p, fb});
        }
    REQUIRE_FALSE(cases.empty());
    run_family(cases);
}

TEST_CASE("generated solvers: shared robots (../shared/robots), solo12 and icub_reduced also floating") {
    std::vector<CaseSpec> cases;
    for (const std::string& u : nelu::test::shared_robots())
        for (bool fb : {false, true}) {
            if (fb && !shared_floating(stem(u))) continue;
            for (const char* p : {"id", "fd"}) cases.push_back({"shared robots", stem(u), u, p, fb});
        }
    if (cases.empty()) return;  // shared_robots() printed a note
    run_family(cases);
}

TEST_CASE("generated solvers: robots with mimic joints (generated chains and trees, a gripper fixture), fixed and floating") {
    std::vector<CaseSpec> cases;
    static ScratchDir dir("mimic_robots");
    struct Gen { nelu::RobotGenOptions::Shape shape; int links, mimic; bool dh; };
    for (const Gen& g : {Gen{nelu::RobotGenOptions::Shape::Chain, 7, 3, false}, Gen{nelu::RobotGenOptions::Shape::Chain, 7, 6, true},
                         Gen{nelu::RobotGenOptions::Shape::Tree, 12, 5, false}}) {
        nelu::RobotGenOptions o;
        o.shape = g.shape, o.links = g.links, o.mimic = g.mimic, o.seed = 7, o.branching = 3;
        o.transforms = g.dh ? nelu::RobotGenOptions::Transforms::Dh : nelu::RobotGenOptions::Transforms::General;
        const std::string name = std::string(g.shape == nelu::RobotGenOptions::Shape::Chain ? "chain" : "tree") + std::to_string(g.links) +
                                 "_mimic" + std::to_string(g.mimic) + (g.dh ? "_dh" : "");
        const fs::path p = dir.path / (name + ".urdf");
        write_text(p, nelu::generate_robot_urdf(o));
        for (const char* pr : {"id", "fd"}) cases.push_back({"mimic robots", name, p.string(), pr, false});
    }
    const std::string gripper = nelu::test::source_dir() + "/tests/fixtures/mimic/mimic_gripper.urdf";
    for (bool fb : {false, true})
        for (const char* pr : {"id", "fd"}) cases.push_back({"mimic robots", "mimic_gripper", gripper, pr, fb});
    run_family(cases);
}

TEST_CASE("generated solvers: generated chains and trees, n = 1, 2, 7, 30") {
    run_family(generated_cases({1, 2, 7, 30}, "generated robots, n <= 30"));
}

// n = 100 (about a minute of the suite's three on 2 cores) runs as test_generated_solvers_extended
// (ctest -L extended; not in CI): the large-robot forms (parts, work struct) are built in CI from
// the shipped humanoid and the shared iCub above.
TEST_CASE("generated solvers (extended): generated chains and trees, n = 100" * doctest::skip()) {
    run_family(generated_cases({100}, "generated robots, n = 100"));
}

// --- sanitizers, determinism, the C header, non-finite inputs, refusals -------------------------

namespace {

/// A small robot from ../shared (ur5) or, without it, the shipped ur5e.
CaseSpec small_file_robot(const std::string& family, const std::string& problem) {
    for (const std::string& u : nelu::test::shared_robots())
        if (stem(u) == "ur5") return {family, "ur5", u, problem, false};
    for (const std::string& u : nelu::test::shipped_robots())
        if (stem(u) == "ur5e") return {family, "ur5e", u, problem, false};
    FAIL("no ur5 or ur5e URDF found");
    return {};
}

CaseSpec chain7(const std::string& family, const std::string& problem, bool dh = false) {
    std::string name;
    const std::string urdf = generated_urdf(nelu::RobotGenOptions::Shape::Chain, 7,
                                            dh ? nelu::RobotGenOptions::Transforms::Dh : nelu::RobotGenOptions::Transforms::General, name);
    return {family, name, urdf, problem, false};
}

CaseSpec quadruped_floating(const std::string& family, const std::string& problem) {
    for (const std::string& u : nelu::test::shipped_robots())
        if (stem(u).find("quadruped") != std::string::npos) return {family, stem(u), u, problem, true};
    FAIL("no shipped quadruped");
    return {};
}

}  // namespace

TEST_CASE("generated solvers: the harness under AddressSanitizer and UBSan") {
    const std::string fam = "sanitizers";
    const std::vector<CaseSpec> cases = {small_file_robot(fam, "id"), small_file_robot(fam, "fd"), chain7(fam, "id"),
                                         chain7(fam, "fd")};
    // -O0: GCC with -O1 and the sanitizers takes about 50 s on the 7-body fd solver, -O0 3 s.
    std::vector<CaseRun> runs = run_family(cases, nelu::test::kSanitizedCodeFlags);
    for (const CaseRun& r : runs) {
        INFO("case: ", case_label(r.spec), "; harness output:\n", r.run_log);
        CHECK(r.run_rc == 0);
        // The harness prints one summary line; a sanitizer report would add to it.
        CHECK(r.run_log.find("Sanitizer") == std::string::npos);
        CHECK(r.run_log.find("runtime error") == std::string::npos);
        CHECK(std::count(r.run_log.begin(), r.run_log.end(), '\n') == 1);
    }
}

TEST_CASE("generated solvers: emission is deterministic (twice in-process, and the CLI)") {
    std::vector<CaseSpec> cases = {chain7("determinism", "fd"), chain7("determinism", "id", true),
                                   quadruped_floating("determinism", "fd")};
    for (const std::string& u : nelu::test::shared_robots())
        if (stem(u) == "icub_reduced") cases.push_back({"determinism", stem(u), u, "fd", false});
    for (const CaseSpec& c : cases) {
        INFO("case: ", case_label(c));
        ScratchDir a("det_a"), b("det_b"), cli("det_cli");
        nelu::CompileOptions o;
        o.urdf = c.urdf, o.problem = c.problem, o.floating_base = c.floating, o.verify_states = 5, o.name = solver_name(c);
        nelu::write_outputs(nelu::compile(o), a.path.string());
        nelu::write_outputs(nelu::compile(o), b.path.string());
        const nelu::test::CliResult r = nelu::test::run_nelu("compile " + quoted(c.urdf) + " --problem " + c.problem +
                                                             (c.floating ? " --floating-base" : "") + " --name " + o.name +
                                                             " --verify 5 -o " + quoted(cli.path.string()));
        INFO("nelu compile: exit ", r.exit_code, "\n", r.err);
        CHECK(r.exit_code == 0);
        for (const char* ext : {".hpp", ".cpp", ".json"}) {
            INFO("file ", o.name, ext);
            const std::string first = read_text(a.path / (o.name + ext));
            CHECK_FALSE(first.empty());
            CHECK(first == read_text(b.path / (o.name + ext)));
            CHECK(first == read_text(cli.path / (o.name + ext)));
        }
        std::printf("determinism: %-28s %s.hpp/.cpp/.json identical over two in-process runs and the CLI\n",
                    case_label(c).c_str(), o.name.c_str());
    }
}

TEST_CASE("generated solvers: the header is valid C99") {
    const CaseSpec c = chain7("c header", "fd");
    ScratchDir dir("c_header");
    nelu::CompileOptions o;
    o.urdf = c.urdf, o.problem = c.problem, o.verify_states = 0, o.name = solver_name(c);
    nelu::write_outputs(nelu::compile(o), dir.path.string());
    const std::string& n = o.name;
    write_text(dir.path / "use.c", "#include \"" + n + ".hpp\"\n"
               "int main(void) {\n"
               "    double q[" + n + "_NQ] = {0}, qd[" + n + "_NV] = {0}, in[" + n + "_NIN] = {0}, out[" + n + "_NOUT];\n"
               "    int (*fd)(const double*, const double*, const double*, double*) = " + n + ";\n"
               "    int (*ff)(const float*, const float*, const float*, float*) = " + n + "_f;\n"
               "    (void)ff;\n"
               "    return fd(q, qd, in, out) == NELU_STATUS_OK ? 0 : 1;\n"
               "}\n");
    const std::string d = quoted(dir.path.string()) + "/";
    const int rc = run_shell(env_or("NELU_TEST_CC", "cc") + " -std=c99 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I" +
                             quoted(runtime_include()) + " -I" + d + " " + d + "use.c > " + d + "c.log 2>&1");
    INFO("cc output:\n", read_text(dir.path / "c.log"));
    CHECK(rc == 0);
}

// Found by an audit of the generated code's ABI (2026-12-06): the batch form built without
// -fno-exceptions needed the C++ runtime's personality routine (a C program did not link it), and
// the runtime's helpers were weak symbols shared by name, so that solvers built for different
// instruction sets linked into one program ran one copy (another's AVX-512 code: SIGILL on a
// baseline CPU, or its results changed by the link order).
TEST_CASE("generated solvers: a C program links the solver and its batch form without the C++ runtime; no shared runtime symbols") {
    const CaseSpec c = chain7("c link", "fd");
    ScratchDir dir("c_link");
    nelu::CompileOptions o;
    o.urdf = c.urdf, o.problem = c.problem, o.verify_states = 0, o.name = solver_name(c), o.batch = true;
    nelu::write_outputs(nelu::compile(o), dir.path.string());
    const std::string& n = o.name;
    write_text(dir.path / "main.c", "#include \"" + n + "_batch.hpp\"\n"
               "int main(void) {\n"
               "    double q[3 * " + n + "_NQ] = {0}, qd[3 * " + n + "_NV] = {0}, in[3 * " + n + "_NIN] = {0}, out[3 * " + n + "_NOUT];\n"
               "    int status[3];\n"
               "    if (" + n + "(q, qd, in, out) != NELU_STATUS_OK) return 1;\n"
               "    return " + n + "_batch(3, q, qd, in, out, status) == 0 ? 0 : 2;\n"
               "}\n");
    const std::string d = quoted(dir.path.string()) + "/", inc = " -I" + quoted(runtime_include()) + " -I" + d;
    const std::string cxx_c = cxx() + " -std=c++17 -O2 -Wall -Wextra -Werror" + inc + " -c ";
    const std::string cc = env_or("NELU_TEST_CC", "cc");
    const int rc = run_shell(cxx_c + d + n + ".cpp -o " + d + "s.o > " + d + "log 2>&1 && " + cxx_c + d + n + "_batch.cpp -o " + d + "b.o >> " + d +
                             "log 2>&1 && " + cc + " -std=c11 -Wall -Wextra -Werror" + inc + " -c " + d + "main.c -o " + d + "m.o >> " + d +
                             "log 2>&1 && " + cc + " " + d + "m.o " + d + "s.o " + d + "b.o -lm -o " + d + "prog >> " + d + "log 2>&1 && " + d +
                             "prog >> " + d + "log 2>&1");
    INFO("output:\n", read_text(dir.path / "log"));
    CHECK(rc == 0);
    // the runtime's functions and templates have internal linkage in each object: none is a weak
    // (shared by name) symbol that another object built with other flags could replace
    const int weak = run_shell("nm -C " + d + "s.o " + d + "b.o | grep -E ' [WVuw] ' | grep -q 'nelu::'");
    CHECK(weak != 0);
}

namespace {

/// What calls did with a non-finite (or overflowing) input, per input group.
struct Outcome {
    int refused = 0, other_status = 0, ok_finite = 0, ok_nonfinite = 0, touched_on_failure = 0;
    std::vector<std::size_t> silent_slots;  ///< slots whose non-finite value gave OK and non-finite outputs
};

void tally(Outcome& o, std::size_t slot, int status, const std::vector<double>& out, double sentinel) {
    const bool finite = std::all_of(out.begin(), out.end(), [](double x) { return std::isfinite(x); });
    if (status == NELU_STATUS_OK) {
        (finite ? o.ok_finite : o.ok_nonfinite)++;
        if (!finite) o.silent_slots.push_back(slot);
    } else {
        o.refused += status == NELU_STATUS_SMALL_PIVOT || status == NELU_STATUS_NOT_FINITE;
        o.other_status += status != NELU_STATUS_SMALL_PIVOT && status != NELU_STATUS_NOT_FINITE;
        o.touched_on_failure += !std::all_of(out.begin(), out.end(), [&](double x) { return x == sentinel; });
    }
}

struct NonFiniteCase {
    std::string label, ordering;
    std::string error;  ///< build or run failure
    std::vector<std::string> groups;                 ///< in first-seen order
    std::vector<std::pair<Outcome, Outcome>> tallies;  ///< per group: double, float
};

std::string slot_list(const std::vector<std::size_t>& slots) {
    std::string s;
    for (std::size_t k = 0; k < slots.size() && k < 8; ++k) s += (k ? "," : "") + std::to_string(slots[k]);
    return slots.size() > 8 ? s + ",..." : s;
}

/// Builds the solvers and runs them on one random state with one input slot at a time set to NaN,
/// +inf (q), or 1e200 (qd, overflowing the velocity products); computed once, printed once.
const std::vector<NonFiniteCase>& non_finite_results() {
    static const std::vector<NonFiniteCase> results = [] {
        const std::string fam = "non-finite inputs";
        const std::vector<CaseSpec> cases = {small_file_robot(fam, "fd"), chain7(fam, "fd"), chain7(fam, "fd", true),
                                             chain7(fam, "id"), quadruped_floating(fam, "fd")};
        std::vector<CaseRun> runs(cases.size());
        std::vector<std::vector<std::pair<std::string, std::size_t>>> variants(cases.size());  // group, slot
        for (std::size_t c = 0; c < cases.size(); ++c) {
            CaseRun& run = runs[c];
            run.spec = cases[c];
            prepare(run);
            if (!run.result) continue;
            run.opt = "-O1";
            const nelu::CompileResult& r = *run.result;
            const nelu::State s0 = run.states[kRandomStates / 2];
            const std::vector<double> in0 = nelu::solver_inputs(r.system, r.load.model, s0);
            std::vector<std::vector<double>> q, qd, in, ref;
            auto add = [&](const std::string& group, std::size_t slot, const std::vector<double>& qv, const std::vector<double>& qdv,
                           const std::vector<double>& inv) {
                q.push_back(qv), qd.push_back(qdv), in.push_back(inv), ref.push_back(std::vector<double>(r.system.out.size(), 0.0));
                variants[c].push_back({group, slot});
            };
            const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
            add("none", 0, s0.q, s0.qd, in0);
            for (std::size_t k = 0; k < s0.q.size(); ++k) {
                auto v = s0.q;
                v[k] = nan, add("q[k] = NaN", k, v, s0.qd, in0);
                v[k] = inf, add("q[k] = inf", k, v, s0.qd, in0);
            }
            for (std::size_t k = 0; k < s0.qd.size(); ++k) {
                auto v = s0.qd;
                v[k] = nan, add("qd[k] = NaN", k, s0.q, v, in0);
                v[k] = 1e200, add("qd[k] = 1e200", k, s0.q, v, in0);
            }
            for (std::size_t k = 0; k < in0.size(); ++k) {
                auto v = in0;
                v[k] = nan, add("in[k] = NaN", k, s0.q, s0.qd, v);
            }
            run.states.assign(q.size(), s0);  // only the count matters from here on
            write_data_file(run.dir->path / "data.bin", r.load.model.nq, r.load.model.nv, static_cast<int>(in0.size()),
                            static_cast<int>(r.system.out.size()), q, qd, in, ref);
        }
        std::vector<CaseRun*> jobs;
        for (CaseRun& r : runs) jobs.push_back(&r);
        run_parallel(jobs);
        std::vector<NonFiniteCase> out;
        std::printf("\nnon-finite inputs, one slot at a time: calls returning SMALL_PIVOT / OK with finite outputs / OK with "
                    "non-finite outputs [slots], double ; float\n");
        for (std::size_t c = 0; c < runs.size(); ++c) {
            const CaseRun& run = runs[c];
            NonFiniteCase nf;
            nf.label = case_label(run.spec);
            if (!run.result) nf.error = "nelu::compile failed: " + run.compile_error + run.refusal;
            else if (!run.output_ok) nf.error = "build or run failed:\n" + run.build.log + run.run_log;
            out.push_back(nf);
            if (!nf.error.empty()) continue;
            NonFiniteCase& n = out.back();
            n.ordering = run.result->order.best.ordering;
            for (std::size_t v = 0; v < variants[c].size(); ++v) {
                const auto& [group, slot] = variants[c][v];
                auto it = std::find(n.groups.begin(), n.groups.end(), group);
                if (it == n.groups.end()) n.groups.push_back(group), n.tallies.emplace_back(), it = n.groups.end() - 1;
                auto& t = n.tallies[static_cast<std::size_t>(it - n.groups.begin())];
                tally(t.first, slot, run.output.status_d[v], run.output.out_d[v], kSentinel);
                tally(t.second, slot, run.output.status_f[v], run.output.out_f[v], static_cast<double>(static_cast<float>(kSentinel)));
            }
            std::printf("%-28s (%s)\n", n.label.c_str(), n.ordering.c_str());
            for (std::size_t g = 0; g < n.groups.size(); ++g) {
                const Outcome& d = n.tallies[g].first;
                const Outcome& f = n.tallies[g].second;
                std::printf("    %-14s %3d / %3d / %3d [%s] ; %3d / %3d / %3d\n", n.groups[g].c_str(), d.refused, d.ok_finite,
                            d.ok_nonfinite, slot_list(d.silent_slots).c_str(), f.refused, f.ok_finite, f.ok_nonfinite);
            }
        }
        std::fflush(stdout);
        return out;
    }();
    return results;
}

}  // namespace

TEST_CASE("generated solvers: non-finite inputs: a failing call returns SMALL_PIVOT and leaves `out` untouched") {
    for (const NonFiniteCase& n : non_finite_results()) {
        INFO("case: ", n.label);
        REQUIRE_MESSAGE(n.error.empty(), n.error);
        for (std::size_t g = 0; g < n.groups.size(); ++g) {
            const Outcome& d = n.tallies[g].first;
            const Outcome& f = n.tallies[g].second;
            INFO("input group: ", n.groups[g]);
            CHECK(d.touched_on_failure + f.touched_on_failure == 0);
            if (n.groups[g] == "none") CHECK(d.ok_finite + f.ok_finite == 2);
            // Every non-OK status is the documented one.
            CHECK(d.other_status + f.other_status == 0);
        }
    }
}

// DESIGN.md: the generated code returns a non-zero status rather than a silent NaN: a non-finite
// value that reaches no pivot (the first joint's angle, any velocity, torque or external wrench,
// every input of inverse dynamics) must give NELU_STATUS_NOT_FINITE, never OK with NaN outputs.
TEST_CASE("generated solvers: non-finite inputs never give OK with non-finite outputs") {
    for (const NonFiniteCase& n : non_finite_results()) {
        INFO("case: ", n.label);
        REQUIRE_MESSAGE(n.error.empty(), n.error);
        for (std::size_t g = 0; g < n.groups.size(); ++g) {
            INFO("input group: ", n.groups[g], "; slots giving OK with NaN: ", slot_list(n.tallies[g].first.silent_slots));
            CHECK(n.tallies[g].first.ok_nonfinite == 0);
            CHECK(n.tallies[g].second.ok_nonfinite == 0);
        }
    }
}

TEST_CASE("generated solvers: refused cases are truly singular, and the refusal names a joint") {
    // Floating-base arms whose base link is massless: M(q) is singular (the base spinning about the
    // first joint's axis against that joint moves no mass), so fd must be refused (exit 1).
    std::vector<CaseSpec> cases;
    for (const auto& list : {nelu::test::shipped_robots(), nelu::test::shared_robots()})
        for (const std::string& u : list)
            for (const char* name : {"iiwa", "ur5e", "panda_gaz2019"})
                if (stem(u) == name) cases.push_back({"refusals", stem(u), u, "fd", true});
    for (const CaseSpec& c : cases) {
        INFO("case: ", case_label(c));
        nelu::CompileOptions o;
        o.urdf = c.urdf, o.problem = c.problem, o.floating_base = true, o.verify_states = 0;
        std::string message;
        try {
            nelu::compile(o);
        } catch (const nelu::IllPosedError& e) {
            message = e.what();
        }
        INFO("message: ", message);
        REQUIRE_FALSE(message.empty());
        const nelu::Model m = nelu::load_urdf_file(c.urdf, {true, {}}).model;
        bool names_joint = false;
        for (const nelu::Body& b : m.bodies) names_joint = names_joint || message.find(b.joint_name) != std::string::npos;
        CHECK(names_joint);
        std::mt19937_64 rng(kStateSeed);
        double best_cond = INFINITY;
        for (int k = 0; k < 20; ++k) best_cond = std::min(best_cond, inertia_condition(m, nelu::random_configuration(m, rng)));
        CHECK(best_cond > 1e12);  // singular at every configuration tried
        const std::vector<std::string> sj = nelu::singular_fd_joints(m);
        CHECK_FALSE(sj.empty());
        std::printf("refused: %-26s cond(M) >= %.2g at 20 random configurations; singular_fd_joints: %s; message: %s\n",
                    case_label(c).c_str(), best_cond, sj.empty() ? "(none)" : sj.front().c_str(),
                    message.substr(0, message.find('\n')).c_str());
    }
}
