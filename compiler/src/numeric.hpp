// numeric.hpp: small numeric helpers the compiler's passes share.
#pragma once

#include <cmath>

namespace nelu {

/// `v` snapped to 0, +1 or -1 when within `tol` of it, else `v`: the rounding noise of
/// trigonometry (cos(pi/2) = 6e-17) on values that are the robot's structure, not data.
inline double snap_unit(double v, double tol) {
    if (std::abs(v) < tol) return 0.0;
    if (std::abs(v - 1) < tol) return 1.0;
    if (std::abs(v + 1) < tol) return -1.0;
    return v;
}

}  // namespace nelu
