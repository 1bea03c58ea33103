// problem.hpp: the `problem` pass. Which dynamic quantities are known and which are sought.
//
// Presets: `id` (known qdd and f^x, sought tau), `fd` (known tau and f^x, sought qdd); `hybrid`
// and YAML specs choose per joint whether qdd or tau is known, and per link whether the external
// wrench is an input or zero. The spec format is documented in docs/problem-spec.md.
#pragma once

#include <string>
#include <vector>

#include "nelu/model.hpp"

namespace nelu {

/// Known quantity of one joint (the other one is sought).
enum class JointKnown { Qdd, Tau };

/// How an external wrench f^x_i enters.
enum class WrenchMode { Input, Zero };

struct Problem {
    std::string kind;  ///< "id", "fd", "hybrid"
    std::string spec_file;  ///< YAML spec, when the problem came from one
    bool floating_base = false;
    SVec<double> gravity{{{0, 0, 0}}, {{0, 0, -9.81}}};
    std::vector<JointKnown> joint;   ///< per body (ignored for bodies without DoF)
    std::vector<WrenchMode> wrench;  ///< per body
};

/// What the CLI's --problem names: "id", "fd", or a YAML file ("hybrid" without a file: every
/// joint tau-known except none, i.e. the same as fd; a spec is needed to say which joints differ).
struct ProblemInput {
    std::string problem;        ///< id | fd | hybrid | path to SPEC.yaml
    bool floating_base = false;  ///< from the command line
};

/// Peek at a spec's floating_base and gravity settings before the model is loaded. Returns false
/// for presets.
bool spec_requests_floating_base(const ProblemInput& in);

/// The problem for `model` (loaded with the right base). Throws InputError naming the spec file,
/// line and the unknown joint or link.
Problem run_problem(const ProblemInput& in, const Model& model);

}  // namespace nelu
