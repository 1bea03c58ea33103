// nelu/state.hpp: random and special states of a model, for verification.
//
// Deterministic across platforms: std::mt19937_64 with our own uniform mapping (the standard
// distributions are implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "nelu/mimic.hpp"
#include "nelu/model.hpp"

namespace nelu {

/// Uniform in [lo, hi).
inline double uniform(std::mt19937_64& rng, double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

/// A full dynamic state: positions, velocities, accelerations, torques, external wrenches.
struct State {
    std::vector<double> q, qd, qdd, tau;
    std::vector<SVec<double>> fext;  ///< per body, body coordinates at the body origin
};

/// Positions: revolute in [-pi, pi] (within limits when the joint has them), prismatic within limits
/// or [-0.5, 0.5], floating: position in [-1, 1]^3 and a uniformly random unit quaternion.
inline std::vector<double> random_configuration(const Model& m, std::mt19937_64& rng) {
    std::vector<double> q(m.nq, 0.0);
    for (const Body& b : m.bodies) {
        double* qi = q.data() + b.q_index;
        switch (b.type) {
            case JointType::Revolute:
            case JointType::Prismatic: {
                double lo = b.type == JointType::Revolute ? -M_PI : -0.5, hi = -lo;
                if (b.has_limits) lo = b.lower, hi = b.upper;
                qi[0] = uniform(rng, lo, hi);
                break;
            }
            case JointType::Floating: {
                for (int k = 0; k < 3; ++k) qi[k] = uniform(rng, -1, 1);
                double n2 = 0;  // uniform on S^3 by rejection from the unit ball
                do {
                    n2 = 0;
                    for (int k = 3; k < 7; ++k) qi[k] = uniform(rng, -1, 1), n2 += qi[k] * qi[k];
                } while (n2 > 1 || n2 < 1e-6);
                for (int k = 3; k < 7; ++k) qi[k] /= std::sqrt(n2);
                break;
            }
            case JointType::Fixed: break;
        }
    }
    couple_positions(m, q.data());
    return q;
}

/// Special configurations: every joint at 0, +pi/2, -pi/2, pi (revolute; prismatic at 0), and
/// every joint at its lower and at its upper limit (joints without limits at random values).
/// Floating joints get random poses.
inline std::vector<std::vector<double>> special_configurations(const Model& m, std::mt19937_64& rng) {
    std::vector<std::vector<double>> qs;
    for (double angle : {0.0, M_PI / 2, -M_PI / 2, M_PI}) {
        std::vector<double> q = random_configuration(m, rng);
        for (const Body& b : m.bodies)
            if (b.nq() == 1) q[b.q_index] = b.type == JointType::Revolute ? angle : 0.0;
        couple_positions(m, q.data());
        qs.push_back(q);
    }
    for (int side = 0; side < 2; ++side) {
        std::vector<double> q = random_configuration(m, rng);
        for (const Body& b : m.bodies)
            if (b.nq() == 1 && b.has_limits) q[b.q_index] = side ? b.upper : b.lower;
        couple_positions(m, q.data());
        qs.push_back(q);
    }
    return qs;
}

/// Mixed special configurations, where special_configurations turns every joint alike: the k-th
/// independent one-DoF joint (in body order; mimic joints follow their masters) at
/// ((m k + s) mod 4) pi/2 for m = 1, 2, 3 and s = 0..3 (revolute; prismatic at 0), so that with
/// special_configurations' m = 0 every two consecutive joints meet at every pair of multiples of
/// pi/2 (an arm's home pose [0, -pi/2, 0, -pi/2, 0, 0] is such a pair pattern); then the joints with limits alternately at their lower and upper limit (and the
/// other way round; joints without limits at random values). A floating base takes its identity
/// orientation and turns of 90 and 180 degrees about each axis in turn (positions random).
inline std::vector<std::vector<double>> mixed_configurations(const Model& m, std::mt19937_64& rng) {
    const double h = std::sqrt(0.5);
    const double turns[7][4] = {{0, 0, 0, 1}, {h, 0, 0, h}, {0, h, 0, h}, {0, 0, h, h}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}};  // [x y z w]
    std::vector<std::vector<double>> qs;
    auto finish = [&](std::vector<double>& q) {
        for (const Body& b : m.bodies)
            if (b.type == JointType::Floating)
                for (int k = 0; k < 4; ++k) q[b.q_index + 3 + k] = turns[qs.size() % 7][k];
        couple_positions(m, q.data());
        qs.push_back(q);
    };
    const double multiples[4] = {0.0, M_PI / 2, M_PI, -M_PI / 2};
    for (int mult = 1; mult <= 3; ++mult)
        for (int shift = 0; shift < 4; ++shift) {
            std::vector<double> q = random_configuration(m, rng);
            int k = 0;  // the joint's number among the independent one-DoF joints
            for (const Body& b : m.bodies) {
                if (b.nq() != 1 || b.is_mimic()) continue;  // (a mimic joint follows its master)
                q[b.q_index] = b.type == JointType::Revolute ? multiples[(mult * k + shift) % 4] : 0.0;
                ++k;
            }
            finish(q);
        }
    for (int side = 0; side < 2; ++side) {
        std::vector<double> q = random_configuration(m, rng);
        int k = 0;
        for (const Body& b : m.bodies)
            if (b.nq() == 1 && b.has_limits && !b.is_mimic()) q[b.q_index] = (k++ + side) % 2 ? b.upper : b.lower;
        finish(q);
    }
    return qs;
}

/// A random state: q as random_configuration, qd, qdd, tau in [-scale, scale], fext in [-1, 1]
/// (zero when `with_fext` is false). With mimic joints (nelu/mimic.hpp) the state is coupled: q, qd
/// and qdd of the mimic joints follow their masters', and tau holds the independent joints'
/// generalized forces (tau_r, zero in the mimic slots).
inline State random_state(const Model& m, std::mt19937_64& rng, bool with_fext = true, double scale = 1.0) {
    State s;
    s.q = random_configuration(m, rng);
    s.qd.resize(m.nv), s.qdd.resize(m.nv), s.tau.resize(m.nv);
    for (int i = 0; i < m.nv; ++i)
        s.qd[i] = uniform(rng, -scale, scale), s.qdd[i] = uniform(rng, -scale, scale),
        s.tau[i] = uniform(rng, -scale, scale);
    couple_velocities(m, s.qd.data());
    couple_velocities(m, s.qdd.data());
    for (const Body& b : m.bodies)
        if (b.is_mimic()) s.tau[b.v_index] = 0;
    s.fext.resize(m.num_bodies());
    for (auto& f : s.fext)
        for (int k = 0; k < 6; ++k) f[k] = with_fext ? uniform(rng, -1, 1) : 0.0;
    return s;
}

/// States at the configurations `qs`: each random_state's velocities, accelerations, torques and
/// wrenches (drawn from `rng` in turn) with its positions replaced by the configuration's.
inline std::vector<State> states_at(const Model& m, const std::vector<std::vector<double>>& qs, std::mt19937_64& rng) {
    std::vector<State> states;
    states.reserve(qs.size());
    for (const std::vector<double>& q : qs) {
        State s = random_state(m, rng);
        s.q = q;
        states.push_back(std::move(s));
    }
    return states;
}

}  // namespace nelu
