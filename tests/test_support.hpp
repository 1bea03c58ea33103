// test_support.hpp: what the suites share: where things are, robot lists, tolerances, the CLI.
#pragma once

#include <string>
#include <vector>

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

/// Result of running the `nelu` executable.
struct CliResult {
    int exit_code = -1;
    std::string out, err;
};
/// True in the AddressSanitizer build, where the suites that run the compiler many times use fewer
/// states and validation configurations (the sanitizers make the interpreter several times slower).
constexpr bool sanitized() { return NELU_SANITIZED; }

/// Run `nelu ARGS` (arguments already shell-quoted as needed).
CliResult run_nelu(const std::string& args);

}  // namespace nelu::test
