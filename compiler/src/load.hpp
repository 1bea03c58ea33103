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
    /// Idealization (`--snap TOL`), off at 0: values of the URDF within `snap` of structure are
    /// replaced by it before anything else reads them, and every change is reported (SnapChange):
    /// joint axis components within snap (relative to the axis length) of 0; origin rpy angles
    /// within snap of a multiple of pi/2; origin xyz components within snap (metres) of 0;
    /// products of inertia within snap (relative to the largest moment) of 0. Joint <origin>,
    /// <axis> and link <inertial> only.
    double snap = 0;
};

/// One value that --snap replaced.
struct SnapChange {
    int line = 0;           ///< XML line of the element
    std::string element;    ///< "joint 'j'" or "link 'l'"
    std::string field;      ///< "axis", "origin xyz", "origin rpy", "inertial origin xyz", "inertia ixy", ...
    int index = -1;         ///< component of a vector field (0 = x or roll), -1 for a scalar
    double from = 0, to = 0;
};

/// A body whose inertia is not physical: its rotational inertia about the centre of mass has a
/// negative principal moment beyond rounding (relative to the body's and the robot's scale).
/// Loading keeps it; problems that need forward dynamics refuse it (body_inertia_error).
struct BodyDefect {
    int body = -1;
    std::string message;  ///< "FILE:LINE: body 'b' (links ...): ..."
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
    double snap = 0;                      ///< LoadOptions::snap as applied
    std::vector<SnapChange> snapped;      ///< what --snap changed, in document order
    std::vector<BodyDefect> body_defects; ///< bodies whose inertia is not physical
    std::vector<MergedJoint> merged;
    std::vector<std::string> mimic_joints;  ///< with ignore_mimic: the mimic joints (treated as independent)
    std::vector<MimicJoint> mimics;         ///< the mimic joints, in body order (Body::mimic holds the same)
    std::map<std::string, LinkFrame> links;  ///< every URDF link
    std::map<std::string, std::string> joint_parent;  ///< every URDF joint's parent link
    std::map<std::string, int> link_line, joint_line;  ///< XML line of each element
};

/// "FILE:LINE: joint 'j': origin rpy[1] 4.6e-08 -> 0 (changed by 4.6e-08)".
std::string format_snap_change(const std::string& source, const SnapChange& c);

/// Model from the URDF file at `path`.
LoadResult load_urdf_file(const std::string& path, const LoadOptions& options = {});

/// Model from URDF text; `source` names it in messages.
LoadResult load_urdf_string(const std::string& xml, const std::string& source,
                            const LoadOptions& options = {});

}  // namespace nelu
