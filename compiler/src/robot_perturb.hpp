// robot_perturb.hpp: copies of a URDF perturbed as CAD exporters and hand edits perturb real files
// (`nelu robot perturb`), for robustness tests, the fuzzer's corpus and the cost of exactness
// (docs/opcounts.md).
//
// Every draw comes from one mt19937_64 stream seeded with `seed`, in document order, so a copy is
// reproducible from (file, options). What changes:
//   jitter A > 0:  every joint <axis xyz> component (not renormalized), every joint and inertial
//                  <origin> xyz (metres) and rpy (radians) component gets uniform noise in [-A, A];
//                  every <inertia> entry gets noise in [-A, A] times the link's largest moment, and
//                  every mass a relative noise in [-A, A].
//   tiny_links K:  K new 1 mg links on fixed joints, each with the indefinite principal moments
//                  (-3.5e-8, 3.5e-8, 9.1e-8) kg m^2 of an exporter's rounding, on links drawn at random.
//   massless_leaves K: K new zero-mass links on continuous joints (a finger chain without inertia).
//   mimic K:       K movable joints whose parent link hangs on a movable joint of the same type
//                  get <mimic joint="that joint" multiplier="m" offset="o"/>, m in +-[0.5, 1.5],
//                  o in [-0.2, 0.2].
// Added elements are named `nelu_tiny_<k>`, `nelu_massless_<k>` (links and joints alike).
#pragma once

#include <cstdint>
#include <string>

namespace nelu {

struct PerturbOptions {
    double jitter = 0;
    int tiny_links = 0;
    int massless_leaves = 0;
    int mimic = 0;
    std::uint64_t seed = 1;
};

/// The perturbed URDF text. Throws InputError when `urdf` is not XML with a <robot> root or an
/// option is out of range (jitter in [0, 0.1), counts in [0, 1000]).
std::string perturb_urdf(const std::string& urdf, const std::string& source, const PerturbOptions& options);

}  // namespace nelu
