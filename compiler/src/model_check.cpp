// model_check.cpp: see model_check.hpp.
#include "model_check.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "nelu/reference.hpp"

namespace nelu {

std::vector<std::string> singular_fd_joints(const Model& model) {
    // One scale for all pivots: kg m^2 and kg mixed on purpose, as a generous floor.
    double scale = 0;
    for (const Body& b : model.bodies) scale += b.I.m + b.I.Ibar(0, 0) + b.I.Ibar(1, 1) + b.I.Ibar(2, 2);
    const double tol = 1e-12 * std::max(scale, 1e-300);
    std::vector<int> movable;  // bodies with a movable joint, in the order ABA reports pivots
    for (int i = model.num_bodies() - 1; i >= 0; --i)
        if (model.bodies[i].nv() > 0) movable.push_back(i);
    std::vector<bool> singular(movable.size(), true);
    std::mt19937_64 rng(20261121);
    std::vector<double> q(model.nq, 0.0), zero(model.nv, 0.0), qdd(model.nv);
    for (const Body& b : model.bodies)
        if (b.type == JointType::Floating) q[b.q_index + 6] = 1.0;  // identity quaternion
    for (int sample = 0; sample < 6; ++sample) {
        AbaPivots<double> piv;
        aba(model, q.data(), zero.data(), zero.data(), static_cast<const SVec<double>*>(nullptr), qdd.data(), &piv);
        for (std::size_t k = 0; k < movable.size(); ++k)
            if (!(std::abs(piv.D[k]) <= tol)) singular[k] = false;
        for (const Body& b : model.bodies)  // next configuration: random joint positions
            if (b.nq() == 1) q[b.q_index] = -3.0 + 6.0 * static_cast<double>(rng() >> 11) * 0x1.0p-53;
    }
    std::vector<std::string> names;
    for (std::size_t k = movable.size(); k-- > 0;)
        if (singular[k]) names.push_back(model.bodies[movable[k]].joint_name);
    return names;
}

}  // namespace nelu
