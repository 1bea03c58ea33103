// report.hpp: `nelu report`: operation-count tables of generated solvers (from their manifests)
// beside the reference algorithms: the published RNEA/ABA counts and the counting reference run on
// the same robot.
#pragma once

#include <string>
#include <vector>

namespace nelu {

/// Markdown table for the manifests at `paths`. Throws InputError naming a file that cannot be read.
std::string format_solver_report(const std::vector<std::string>& paths);

}  // namespace nelu
