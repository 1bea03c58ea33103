// nelu/model.hpp: the kinematic tree and its constants, as the reference algorithms use it.
//
// Bodies are numbered 0..NB-1 with parent(i) < i (parent -1 is the fixed world). Body i is attached
// to its parent by joint i; its frame is the joint's child frame. Joint i's transform from the
// parent body frame to body i's frame is  X_up(i) = X_J(q_i) X_T(i), where X_T is the constant tree
// transform (URDF joint origin) and X_J the joint motion about or along `axis`, given in body-i
// coordinates. Generalized coordinates: revolute/prismatic one position and one velocity; floating
// seven positions [x y z qx qy qz qw] (origin position in the parent frame, unit quaternion of the
// orientation) and six velocities, the body-frame twist [omega; v]; fixed none.
//
// Mimic joints (URDF <mimic>): body i with `mimic >= 0` follows the 1-DoF joint of body `mimic`
// (its ultimate master, chains resolved): q_i = multiplier q_mimic + offset, qd_i = multiplier
// qd_mimic, qdd_i = multiplier qdd_mimic. The model keeps every joint's slots (q_index, v_index),
// so the reference algorithms run on it unchanged; nelu/mimic.hpp maps the independent
// coordinates to these full vectors and the full joint forces back (tau_r = G^T tau).
#pragma once

#include <string>
#include <vector>

#include "nelu/spatial.hpp"

namespace nelu {

enum class JointType { Revolute, Prismatic, Floating, Fixed };

inline const char* joint_type_name(JointType t) {
    switch (t) {
        case JointType::Revolute: return "revolute";
        case JointType::Prismatic: return "prismatic";
        case JointType::Floating: return "floating";
        case JointType::Fixed: return "fixed";
    }
    return "?";
}

/// Number of position coordinates of a joint type.
inline int joint_nq(JointType t) {
    return t == JointType::Floating ? 7 : t == JointType::Fixed ? 0 : 1;
}
/// Number of velocity coordinates (degrees of freedom) of a joint type.
inline int joint_nv(JointType t) {
    return t == JointType::Floating ? 6 : t == JointType::Fixed ? 0 : 1;
}

struct Body {
    std::string name;         ///< link name
    std::string joint_name;   ///< name of the joint connecting it to its parent
    int parent = -1;          ///< parent body index, -1 for the world
    JointType type = JointType::Fixed;
    bool continuous = false;  ///< revolute without limits (URDF "continuous")
    Vec3<double> axis{{0, 0, 1}};  ///< unit joint axis in body coordinates (revolute, prismatic)
    Xform<double> X_tree = identity_xform<double>();  ///< X_T: parent frame -> joint frame at q = 0
    Inertia<double> I{0, {{0, 0, 0}}, zero_mat3<double>()};  ///< spatial inertia, body frame
    double lower = 0, upper = 0;  ///< joint limits (revolute, prismatic), when has_limits
    bool has_limits = false;
    int mimic = -1;           ///< body whose joint this one mimics (ultimate master), or -1
    double multiplier = 1, offset = 0;  ///< of a mimic joint: q = multiplier q_master + offset
    int q_index = 0;          ///< first position slot
    int v_index = 0;          ///< first velocity slot
    int nq() const { return joint_nq(type); }
    int nv() const { return joint_nv(type); }
    bool is_mimic() const { return mimic >= 0; }
};

struct Model {
    std::string name;
    std::vector<Body> bodies;
    int nq = 0, nv = 0;
    /// Gravitational acceleration in world coordinates, [0 0 0 0 0 -9.81] by default.
    SVec<double> gravity{{{0, 0, 0}}, {{0, 0, -9.81}}};

    int num_bodies() const { return static_cast<int>(bodies.size()); }
    /// Index of the body named `link`, or -1.
    int body_index(const std::string& link) const {
        for (int i = 0; i < num_bodies(); ++i)
            if (bodies[i].name == link) return i;
        return -1;
    }
    /// Recompute q_index, v_index, nq and nv from the joint types (bodies in topological order).
    void assign_indices() {
        nq = nv = 0;
        for (auto& b : bodies) {
            b.q_index = nq, b.v_index = nv;
            nq += b.nq(), nv += b.nv();
        }
    }
};

}  // namespace nelu
