// model_check.hpp: physical sanity of a loaded model beyond what the URDF reader checks.
#pragma once

#include <string>
#include <vector>

#include "nelu/model.hpp"

namespace nelu {

/// Joints about or along which the articulated inertia vanishes (for a multi-DoF joint: in some
/// direction) (for instance a movable joint whose
/// subtree has no mass or inertia): forward dynamics is singular there. Evaluated by the reference
/// ABA at q = 0 and at several seeded random configurations; a joint is reported when its pivot
/// D_i = S_i^T IA_i S_i is negligible at every one of them.
std::vector<std::string> singular_fd_joints(const Model& model);

}  // namespace nelu
