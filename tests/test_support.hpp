// test_support.hpp: what the suites share: where things are, robot lists, tolerances, the CLI.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "nelu/counting.hpp"
#include "nelu/model.hpp"

namespace nelu::test {

/// The project's source directory (robots/, tests/fixtures/).
std::string source_dir();
/// ../shared beside the project, or "" when it does not exist.
std::string shared_dir();

/// URDFs the project ships (robots/*.urdf), sorted.
std::vector<std::string> shipped_robots();
/// URDFs in ../shared/robots, sorted; empty (after printing a note once) when the folder is absent.
std::vector<std::string> shared_robots();

/// Whether a URDF is a legged robot (by its file name), tested with a floating base too.
bool is_legged(const std::string& path);

/// A robot to test on: a file or generated text, with the base it should be loaded with.
struct TestRobot {
    std::string name;
    Model model;
};
/// Shipped robots (fixed base, and floating for those named *quadruped*, *humanoid*), generated
/// chains and trees (general and DH transforms; n = 1, 2, 7, 30), and ../shared robots when present.
std::vector<TestRobot> all_test_robots();

/// max_i |a_i - b_i| / max(max_i |b_i|, floor): a relative error with a floor for near-zero vectors.
double rel_error(const std::vector<double>& a, const std::vector<double>& b, double floor = 1.0);

/// The larger of a running worst error and a new one, where a NaN error is infinitely large
/// (std::max(worst, NaN) keeps worst: a solver that returns NaN would pass).
inline double worse(double worst, double error) { return error == error ? std::max(worst, error) : INFINITY; }

/// Vectors in another scalar (double, float, the counting scalar) and back.
template <class S> std::vector<S> convert(const std::vector<double>& x) { return std::vector<S>(x.begin(), x.end()); }
template <class S> std::vector<SVec<S>> convert(const std::vector<SVec<double>>& f) {
    std::vector<SVec<S>> r(f.size());
    for (std::size_t i = 0; i < f.size(); ++i)
        for (int k = 0; k < 6; ++k) r[i][k] = S(f[i][k]);
    return r;
}
template <class S> std::vector<double> to_doubles(const std::vector<S>& x) {
    std::vector<double> r;
    for (const S& v : x) r.push_back(to_double(v));
    return r;
}

/// Worst residual per robot of one identity or comparison, printed when it goes out of scope (so
/// that every run shows the margins, not only failures). Use with CHECK_RESIDUAL.
class ResidualTable {
  public:
    explicit ResidualTable(std::string what) : what_(std::move(what)) {}
    ResidualTable(const ResidualTable&) = delete;
    ResidualTable& operator=(const ResidualTable&) = delete;
    void add(const std::string& robot, double r) {
        if (rows_.empty() || rows_.back().first != robot) rows_.push_back({robot, 0.0});
        rows_.back().second = std::max(rows_.back().second, r);
        ++count_;
    }
    int count() const { return count_; }
    ~ResidualTable() {
        double worst = 0;
        std::printf("%s (%d cases)\n", what_.c_str(), count_);
        for (const auto& [robot, r] : rows_) {
            std::printf("  %-34s worst %.3e\n", robot.c_str(), r);
            worst = std::max(worst, r);
        }
        std::printf("  %-34s worst %.3e\n", "ALL", worst);
    }

  private:
    std::string what_;
    std::vector<std::pair<std::string, double>> rows_;
    int count_ = 0;
};

/// Adds residual `r` of `robot` to `table` and checks it against `tol` (doctest CHECK).
#define CHECK_RESIDUAL(table, robot, r, tol) \
    do {                                     \
        const double r_ = (r);               \
        (table).add(robot, r_);              \
        CHECK(r_ < (tol));                   \
    } while (0)

/// A fresh scratch directory under the system's temporary directory (removed first if present).
std::string scratch_dir(const std::string& name);

/// The argument of `nelu check --cxx` that builds with `compiler` and `flags`: check puts the flags
/// after its own, so that an optimization level there overrides check's -O2 (e.g. "-O0" for large
/// test solvers, or the sanitizers).
std::string cxx_with(const std::string& flags, const std::string& compiler = "c++");
/// Whether `clang++` is on the PATH (scripts/setup.sh installs it).
bool have_clang();

/// Result of running the `nelu` executable.
struct CliResult {
    int exit_code = -1;
    std::string out, err;
};

/// `nelu compile URDF --problem SPEC --name NAME` into a scratch directory, then `nelu check` of the
/// generated C++ (built by the system compiler, compared with the reference on 1006 states, double
/// and float): CHECKs that both succeed and prints the check's report. Fewer states and validation
/// configurations in the sanitizer build. `flags` go to `nelu compile`, `check_flags` to `nelu check`
/// (e.g. `--states N`, `--cxx` cxx_with(...)). Returns the check's run (its report in `out`).
CliResult compile_and_check(const std::string& urdf, const std::string& spec, const std::string& name, const std::string& flags = "",
                            const std::string& check_flags = "");

/// True in the AddressSanitizer build, where the suites that run the compiler many times use fewer
/// states and validation configurations (the sanitizers make the interpreter several times slower).
constexpr bool sanitized() { return NELU_SANITIZED; }
/// Flags that build generated code with the sanitizers for a test harness (-O0: GCC with -O1 and
/// the sanitizers is several times slower on long straight-line functions).
inline const char* const kSanitizedCodeFlags = "-O0 -g -fsanitize=address,undefined -fno-sanitize-recover=all";

/// The problem spec that a forward-dynamics refusal prints to make the problem solvable (the lines
/// after "SPEC.yaml being", unindented), or "" when `err` prints none.
std::string printed_spec(const std::string& err);

/// Run `nelu ARGS` (arguments already shell-quoted as needed).
CliResult run_nelu(const std::string& args);

}  // namespace nelu::test
