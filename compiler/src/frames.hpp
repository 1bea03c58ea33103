// frames.hpp: internal body frames for the system pass.
//
// The equations may be written in any body-fixed frame; the cheapest are Denavit-Hartenberg-like
// frames: z along the joint axis, x along the common normal to the axis of the body's first movable
// child, origin at the foot of that normal. In them the joint is rotz(q) (or a translation along
// z), and the transform to that child is xlt(a x) rotx(alpha) xlt(d z) rotz(theta0), each factor
// with a few nonzeros; theta0 folds into the child's joint angle. Any URDF chain becomes a DH chain
// this way; other children of a branching body keep a general constant transform. Inputs given
// in URDF link frames (external wrenches) are transformed once into the internal frames; joint
// quantities do not depend on the frame.
#pragma once

#include <vector>

#include "nelu/model.hpp"

namespace nelu {

struct InternalFrame {
    Xform<double> T = identity_xform<double>();  ///< URDF body frame -> internal frame
    bool moved = false;   ///< T is not the identity
    bool dh = false;      ///< X_T (parent internal -> this internal, q = 0) = rotz(theta0) xlt(d z) rotx(alpha) xlt(a x)
    double a = 0, alpha = 0, d = 0, theta0 = 0;
};

struct InternalModel {
    Model model;  ///< the same robot in internal frames (axes along z where moved)
    std::vector<InternalFrame> frames;
};

/// Internal frames for `m` (URDF frames in, DH-like frames out where they help).
InternalModel choose_internal_frames(const Model& m);

}  // namespace nelu
