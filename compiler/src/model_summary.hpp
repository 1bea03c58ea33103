// model_summary.hpp: the text `nelu model` prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "load.hpp"

namespace nelu {

/// Bodies, joints with types and axes, numbering, masses, merged fixed joints, mimic joints,
/// warnings, and the joints at which forward dynamics is singular.
std::string format_model_summary(const LoadResult& r, const std::vector<std::string>& singular_joints);

/// The same summary as one JSON document (`nelu model --json`, docs/python.md): the robot, every
/// body with its joint, numbering, mass, centre of mass and inertia, and the lists of the text form.
std::string format_model_summary_json(const LoadResult& r, const std::vector<std::string>& singular_joints);

/// The reference dynamics at a seeded random state: q, qd, qdd, tau = RNEA(q, qd, qdd), the ABA
/// round trip and the mass matrix's diagonal, with the residuals that check them.
std::string format_reference_dynamics(const Model& m, std::uint64_t seed);

}  // namespace nelu
