// nelu/mimic.hpp: independent coordinates of a model with mimic joints (see model.hpp).
//
// With G the coupling matrix (qdd_full = G qdd_r), a generated solver takes and returns only the
// independent coordinates; the reduced dynamics is G^T M G qdd_r + G^T h = tau_r with
// tau_r = G^T tau_full. Here the reduced vectors are kept in the full model's slots ("full index
// space"): the independent slots hold the reduced values and the mimic slots are derived
// (positions, velocities, accelerations) or zero (forces). `independent_*_slots` list the slots of
// the reduced vectors in order, which is how a generated function numbers its q and qd.
#pragma once

#include <vector>

#include "nelu/model.hpp"

namespace nelu {

inline bool has_mimics(const Model& m) {
    for (const Body& b : m.bodies)
        if (b.is_mimic()) return true;
    return false;
}

/// Position slots of the independent joints, in order (all slots when there are no mimics).
inline std::vector<int> independent_q_slots(const Model& m) {
    std::vector<int> s;
    for (const Body& b : m.bodies)
        if (!b.is_mimic())
            for (int k = 0; k < b.nq(); ++k) s.push_back(b.q_index + k);
    return s;
}
/// Velocity slots of the independent joints, in order.
inline std::vector<int> independent_v_slots(const Model& m) {
    std::vector<int> s;
    for (const Body& b : m.bodies)
        if (!b.is_mimic())
            for (int k = 0; k < b.nv(); ++k) s.push_back(b.v_index + k);
    return s;
}

/// The coupling matrix G (qd_full = G qd_r), which has one nonzero per row: velocity slot j of the
/// full model follows reduced coordinate index[j] (the order of independent_v_slots) with the
/// factor factor[j] (1 for an independent slot, the multiplier for a mimic's); G has `columns`
/// columns, one per independent slot.
struct Coupling {
    std::vector<int> index;
    std::vector<double> factor;
    int columns = 0;
};
inline Coupling coupling(const Model& m) {
    Coupling g;
    g.index.assign(static_cast<std::size_t>(m.nv), -1), g.factor.assign(static_cast<std::size_t>(m.nv), 1.0);
    const std::vector<int> slots = independent_v_slots(m);
    g.columns = static_cast<int>(slots.size());
    for (std::size_t a = 0; a < slots.size(); ++a) g.index[static_cast<std::size_t>(slots[a])] = static_cast<int>(a);
    for (const Body& b : m.bodies)
        if (b.is_mimic())
            g.index[static_cast<std::size_t>(b.v_index)] = g.index[static_cast<std::size_t>(m.bodies[b.mimic].v_index)],
            g.factor[static_cast<std::size_t>(b.v_index)] = b.multiplier;
    return g;
}

/// Sets every mimic joint's position from its master's: q_i = multiplier q_master + offset.
template <class S> void couple_positions(const Model& m, S* q) {
    for (const Body& b : m.bodies)
        if (b.is_mimic()) q[b.q_index] = S(b.multiplier) * q[m.bodies[b.mimic].q_index] + S(b.offset);
}
/// Sets every mimic joint's velocity (or acceleration) from its master's: v_i = multiplier v_master.
template <class S> void couple_velocities(const Model& m, S* v) {
    for (const Body& b : m.bodies)
        if (b.is_mimic()) v[b.v_index] = S(b.multiplier) * v[m.bodies[b.mimic].v_index];
}
/// G^T tau in the full index space: each mimic joint's force added to its master's, times the
/// multiplier; the mimic slots become zero.
template <class S> void reduce_forces(const Model& m, S* tau) {
    for (const Body& b : m.bodies)
        if (b.is_mimic()) tau[m.bodies[b.mimic].v_index] += S(b.multiplier) * tau[b.v_index];
    for (const Body& b : m.bodies)
        if (b.is_mimic()) tau[b.v_index] = S(0);
}

/// The entries of a full vector at the given slots (a reduced vector for a generated function).
template <class S> std::vector<S> gather(const std::vector<S>& full, const std::vector<int>& slots) {
    std::vector<S> r;
    for (int s : slots) r.push_back(full[static_cast<std::size_t>(s)]);
    return r;
}

}  // namespace nelu
