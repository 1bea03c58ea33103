// load.hpp: the `load` pass. URDF -> Model.
//
// Bodies are numbered depth-first in URDF document order of the joints (parent < child). The root
// link is the fixed world, or with `floating_base` body 0 attached to the world by a 6-DoF joint
// named "root_joint". Fixed joints are merged into their parent body (exact inertia composition)
// unless named in `keep_fixed`, which keeps them as zero-DoF body boundaries (force/torque sensors
// need them). Bad input throws InputError naming the file, the XML line and the element.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nelu/model.hpp"

namespace nelu {

struct LoadOptions {
    bool floating_base = false;
    std::vector<std::string> keep_fixed;  ///< fixed joints kept as body boundaries
    /// Treat mimic joints as independent joints (with a warning each), as nelu did before it
    /// supported them (`--ignore-mimic`).
    bool ignore_mimic = false;
};

/// Where a URDF link ended up: on which body, and the transform from that body's frame to the link
/// frame (identity for links that are bodies; body -1 is the world).
struct LinkFrame {
    int body = -1;
    Xform<double> X_link_body = identity_xform<double>();
};

struct MergedJoint {
    std::string joint;  ///< the fixed joint
    std::string link;   ///< its child link, merged
    std::string into;   ///< the body it was merged into ("world" for the fixed root)
};

/// A mimic joint: q_joint = multiplier q_master + offset, with `master` the ultimate master (a
/// mimic of a mimic is resolved: multipliers multiply, offsets compose).
struct MimicJoint {
    std::string joint;
    std::string master;       ///< the independent joint it follows
    std::string urdf_master;  ///< the joint its <mimic> names (differs from master in a chain)
    double multiplier = 1, offset = 0;
};

struct LoadResult {
    Model model;
    std::string source;     ///< file name as given
    std::string root_link;
    std::vector<std::string> warnings;  ///< "FILE:LINE: ..." messages that do not stop loading
    std::vector<MergedJoint> merged;
    std::vector<std::string> mimic_joints;  ///< with ignore_mimic: the mimic joints (treated as independent)
    std::vector<MimicJoint> mimics;         ///< the mimic joints, in body order (Body::mimic holds the same)
    std::map<std::string, LinkFrame> links;  ///< every URDF link
    std::map<std::string, int> link_line, joint_line;  ///< XML line of each element
};

/// Model from the URDF file at `path`.
LoadResult load_urdf_file(const std::string& path, const LoadOptions& options = {});

/// Model from URDF text; `source` names it in messages.
LoadResult load_urdf_string(const std::string& xml, const std::string& source,
                            const LoadOptions& options = {});

}  // namespace nelu
