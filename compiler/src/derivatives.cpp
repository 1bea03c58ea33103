// derivatives.cpp: see derivatives.hpp.
#include "derivatives.hpp"

#include <fmt/format.h>

#include "system.hpp"

namespace nelu {

std::vector<Tangent> jacobian_columns(const Model& m, int n_in) {
    std::vector<Tangent> cols;
    static const char* twist[6] = {"wx", "wy", "wz", "vx", "vy", "vz"};
    for (Tangent::Kind kind : {Tangent::Kind::Q, Tangent::Kind::Qd})
        for (const Body& b : m.bodies)
            for (int k = 0; k < (b.is_mimic() ? 0 : b.nv()); ++k)  // mimic joints follow their masters: no column
                cols.push_back({kind, b.v_index + k,
                                fmt::format("{}[{}]{}", kind == Tangent::Kind::Q ? "q" : "qd", b.joint_name,
                                            b.nv() > 1 ? fmt::format(".{}", twist[k]) : std::string())});
    for (int k = 0; k < n_in; ++k) cols.push_back({Tangent::Kind::In, k, fmt::format("in[{}]", k)});
    return cols;
}

Differentiator::Differentiator(ir::Program& P, const Model& m, const Tangent& t) : P_(P) {
    using ir::Source;
    if (t.kind == Tangent::Kind::In) {
        seed_[key(Source::In, t.index)] = P.one();
        return;
    }
    for (const Body& b : m.bodies) {
        if (t.index < b.v_index || t.index >= b.v_index + b.nv()) continue;
        const int k = t.index - b.v_index;
        if (t.kind == Tangent::Kind::Qd) {
            seed_[key(Source::Qd, t.index)] = P.one();
        } else if (b.type != JointType::Floating) {
            seed_[key(Source::Q, b.q_index)] = P.one();
        } else {
            const int qi = b.q_index;
            ir::Id x = P.input(Source::Q, qi + 3), y = P.input(Source::Q, qi + 4), z = P.input(Source::Q, qi + 5),
                   w = P.input(Source::Q, qi + 6);
            const ir::Id half = P.constant(0.5);
            if (k < 3) {  // d quat / d dw_k = (1/2) q ⊗ (e_k, 0): vector w e_k + qv x e_k, scalar -qv_k
                const ir::Id qv[3] = {x, y, z};
                ir::Id vec[3] = {P.zero(), P.zero(), P.zero()};
                vec[k] = w;
                // qv x e_k: e_0 -> (0, z, -y), e_1 -> (-z, 0, x), e_2 -> (y, -x, 0)
                const int a = (k + 1) % 3, c = (k + 2) % 3;
                vec[a] = P.add(vec[a], qv[c]);
                vec[c] = P.sub(vec[c], qv[a]);
                for (int i = 0; i < 3; ++i) seed_[key(Source::Q, qi + 3 + i)] = P.mul(half, vec[i]);
                seed_[key(Source::Q, qi + 6)] = P.neg(P.mul(half, qv[k]));
            } else {  // d p / d dv_j = R e_j, R the body-to-world rotation of the unit quaternion
                const int j = k - 3;
                const auto R = quaternion_rotation(P, x, y, z, w);
                for (int i = 0; i < 3; ++i) seed_[key(Source::Q, qi + i)] = R[i][j];
            }
        }
    }
}

ir::Id Differentiator::d(ir::Id root) {
    // iterative post-order: operands first (programs are deep; no recursion)
    std::vector<ir::Id> stack{root};
    while (!stack.empty()) {
        const ir::Id x = stack.back();
        if (memo_.count(x)) {
            stack.pop_back();
            continue;
        }
        const ir::Node n = P_.node(x);
        bool ready = true;
        for (ir::Id o : {n.a, n.b})
            if (o >= 0 && !memo_.count(o)) stack.push_back(o), ready = false;
        if (!ready) continue;
        stack.pop_back();
        ir::Id r = P_.zero();
        const ir::Id da = n.a >= 0 ? memo_.at(n.a) : P_.zero(), db = n.b >= 0 ? memo_.at(n.b) : P_.zero();
        switch (n.op) {
            case ir::Op::Const: r = P_.zero(); break;
            case ir::Op::Input: {
                auto it = seed_.find(key(n.source, n.index));
                r = it == seed_.end() ? P_.zero() : it->second;
                break;
            }
            case ir::Op::Add: r = P_.add(da, db); break;
            case ir::Op::Sub: r = P_.sub(da, db); break;
            case ir::Op::Mul: r = P_.add(P_.mul(da, n.b), P_.mul(n.a, db)); break;
            case ir::Op::Div: r = db == P_.zero() ? P_.div(da, n.b) : P_.div(P_.sub(da, P_.mul(x, db)), n.b); break;
            case ir::Op::Neg: r = P_.neg(da); break;
            case ir::Op::Sin: r = P_.mul(P_.cos(n.a), da); break;
            case ir::Op::Cos: r = P_.neg(P_.mul(P_.sin(n.a), da)); break;
            case ir::Op::Sqrt: r = da == P_.zero() ? P_.zero() : P_.div(da, P_.mul(P_.constant(2), x)); break;
        }
        memo_[x] = r;
    }
    return memo_.at(root);
}

}  // namespace nelu
