// robot_gen.hpp: synthetic random robots as URDF text (`nelu robot gen`), after Featherstone's
// autoTree (spatial_v2).
//
// Every robot has a fixed root link `base` (no inertial) and N moving links link1..linkN, body i
// attached to its parent by the revolute joint `joint<i>` with limits [-pi, pi]. Without the base
// (`base` = false, `--no-base`) link1 is the root and joint1 is left out (its random draws are
// still made, so the rest of the robot is the same): the robot for a floating base, whose joint
// would otherwise attach the massless `base` and leave forward dynamics singular.
//
// Topology (1-based body numbers, 0 = base):
//   chain:               parent(i) = i - 1
//   tree, branching B:   parent(i) = floor((i + B - 2) / B)
// which is autoTree's parent(i) = floor((i - 2 + ceil(bf)) / bf) for integer bf = B: body 1 is the
// only child of base, bodies 2..B+1 are the children of body 1, and so on breadth first, every
// body having at most B children. B = 1 gives the chain.
//
// Transforms (all random draws from one mt19937_64 stream seeded with `seed`, see robot_gen.cpp):
//   Dh (autoTree's shape): each link i has a length len(i) uniform in [0.2, 1] (len(base) = 0).
//       joint i: axis (0 0 1), origin xyz = (len(parent(i)), 0, 0), rpy = (alpha_i, 0, 0) with
//       alpha_i uniform in [-pi, pi); i.e. the joint frame is the parent frame translated to the
//       tip of the parent link along its x axis, then rotated by alpha_i about that x axis.
//       link i: mass uniform in [0.5, 2], centre of mass (len(i)/2, 0, 0), principal axes along the
//       link frame (diagonal tensor): a solid box of sides len(i) x b x c, b and c uniform in
//       [0.05, 0.2].
//   General: joint i: unit axis uniform on the sphere, origin xyz uniform in [-0.5, 0.5]^3, origin
//       rpy of a uniformly random rotation. link i: mass uniform in [0.5, 2], centre of mass
//       uniform in [-0.3, 0.3]^3, inertia R diag(Ib) R^T written as the full tensor (inertial
//       rpy 0), Ib the moments of a solid box with sides uniform in [0.1, 1] and R a uniformly
//       random rotation.
// Box moments always satisfy the triangle inequality, so every inertia is physically valid.
//
// Mimic joints (`mimic` = K, 0 <= K < N): joints N-K+1..N each mimic the joint before them, so the
// last K + 1 joints form one mimic chain (in a tree the chain crosses branches). Joint i's
// <mimic joint="joint<i-1>"> has (multiplier, offset) by i mod 4: 0 -> (1, 0), 1 -> (-1, pi/2),
// 2 -> (0.5, 0.1), 3 -> (-2, -0.2); no random draws, so the rest of the robot does not change.
#pragma once

#include <cstdint>
#include <string>

namespace nelu {

struct RobotGenOptions {
    enum class Shape { Chain, Tree } shape = Shape::Chain;
    int links = 7;          ///< number of moving bodies, in [1, 100000]
    int branching = 2;      ///< tree: children per body, autoTree's bf (>= 1); chains ignore it
    enum class Transforms { General, Dh } transforms = Transforms::General;
    std::uint64_t seed = 1;
    int mimic = 0;          ///< the last `mimic` joints each mimic the joint before them
    bool base = true;       ///< false: no root link `base` and no joint1; link1 is the root
    std::string name;       ///< robot name; empty: "chain<N>_s<seed>" / "tree<N>_b<B>_s<seed>"
};

/// URDF text of a random robot, byte-identical for identical options; throws std::invalid_argument
/// naming the offending option (as its command-line flag) when the options are out of range.
std::string generate_robot_urdf(const RobotGenOptions& opt);

}  // namespace nelu
