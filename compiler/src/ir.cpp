// ir.cpp: see ir.hpp.
#include "ir.hpp"

#include <array>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>

namespace nelu::ir {

Program::Program() {
    zero_ = constant(0.0);
    one_ = constant(1.0);
}

Id Program::constant(double v) {
    if (v == 0) v = 0.0;  // -0 and +0 are one constant
    auto it = constants_.find(v);
    if (it != constants_.end()) return it->second;
    Node n;
    n.op = Op::Const, n.value = v;
    nodes_.push_back(n);
    return constants_[v] = size() - 1;
}

Id Program::input(Source s, int index) {
    auto key = std::make_pair(static_cast<int>(s), index);
    auto it = inputs_.find(key);
    if (it != inputs_.end()) return it->second;
    Node n;
    n.op = Op::Input, n.source = s, n.index = index;
    nodes_.push_back(n);
    return inputs_[key] = size() - 1;
}

Id Program::make(Op op, Id a, Id b) {
    auto key = std::make_tuple(static_cast<int>(op), a, b);
    auto it = cse_.find(key);
    if (it != cse_.end()) return it->second;
    Node n;
    n.op = op, n.a = a, n.b = b;
    nodes_.push_back(n);
    return cse_[key] = size() - 1;
}

Id Program::neg(Id a) {
    const Node& n = nodes_[a];
    if (n.op == Op::Const) return constant(-n.value);
    if (n.op == Op::Neg) return n.a;
    if (n.op == Op::Sub) return sub(n.b, n.a);  // -(x - y) = y - x
    return make(Op::Neg, a, -1);
}

Id Program::add(Id a, Id b) {
    if (is_const(a) && is_const(b)) return constant(value(a) + value(b));
    if (a == zero_) return b;
    if (b == zero_) return a;
    if (nodes_[b].op == Op::Neg) return sub(a, nodes_[b].a);
    if (nodes_[a].op == Op::Neg) return sub(b, nodes_[a].a);
    if (a > b) std::swap(a, b);
    return make(Op::Add, a, b);
}

Id Program::sub(Id a, Id b) {
    if (is_const(a) && is_const(b)) return constant(value(a) - value(b));
    if (a == b) return zero_;
    if (b == zero_) return a;
    if (a == zero_) return neg(b);
    if (nodes_[b].op == Op::Neg) return add(a, nodes_[b].a);
    if (nodes_[a].op == Op::Neg) return neg(add(nodes_[a].a, b));  // -x - y = -(x + y)
    return make(Op::Sub, a, b);
}

Id Program::mul(Id a, Id b) {
    if (is_const(a) && is_const(b)) return constant(value(a) * value(b));
    if (a == zero_ || b == zero_) return zero_;
    if (a == one_) return b;
    if (b == one_) return a;
    if (is_const(a) && value(a) == -1) return neg(b);
    if (is_const(b) && value(b) == -1) return neg(a);
    if (nodes_[a].op == Op::Neg) return neg(mul(nodes_[a].a, b));
    if (nodes_[b].op == Op::Neg) return neg(mul(a, nodes_[b].a));
    if (is_const(a) && value(a) < 0) return neg(mul(constant(-value(a)), b));
    if (is_const(b) && value(b) < 0) return neg(mul(a, constant(-value(b))));
    if (a > b) std::swap(a, b);
    return make(Op::Mul, a, b);
}

Id Program::div(Id a, Id b) {
    if (b == zero_) throw std::logic_error("ir: division by the constant 0");
    if (is_const(a) && is_const(b)) return constant(value(a) / value(b));
    if (a == zero_) return zero_;
    if (b == one_) return a;
    if (is_const(b) && value(b) == -1) return neg(a);
    if (nodes_[a].op == Op::Neg) return neg(div(nodes_[a].a, b));
    if (nodes_[b].op == Op::Neg) return neg(div(a, nodes_[b].a));
    return make(Op::Div, a, b);
}

Id Program::sin(Id a) { return is_const(a) ? constant(std::sin(value(a))) : make(Op::Sin, a, -1); }
Id Program::cos(Id a) { return is_const(a) ? constant(std::cos(value(a))) : make(Op::Cos, a, -1); }
Id Program::sqrt(Id a) { return is_const(a) ? constant(std::sqrt(value(a))) : make(Op::Sqrt, a, -1); }

Id Program::dot(const std::vector<Id>& a, const std::vector<Id>& b) {
    Id s = zero_;
    for (std::size_t k = 0; k < a.size(); ++k) s = add(s, mul(a[k], b[k]));
    return s;
}

std::vector<bool> Program::live_nodes(const std::vector<Id>& roots) const {
    std::vector<bool> live(nodes_.size(), false);
    for (Id r : roots) live[r] = true;
    for (int i = size() - 1; i >= 0; --i) {
        if (!live[i]) continue;
        const Node& n = nodes_[i];
        if (n.a >= 0) live[n.a] = true;
        if (n.b >= 0) live[n.b] = true;
    }
    return live;
}

OpCount Program::count(const std::vector<bool>& live) const {
    OpCount c;
    std::set<Id> angles;
    for (int i = 0; i < size(); ++i) {
        if (!live[i]) continue;
        switch (nodes_[i].op) {
            case Op::Add:
            case Op::Sub: ++c.add; break;
            case Op::Mul: ++c.mul; break;
            case Op::Div: ++c.div; break;
            case Op::Sqrt: ++c.sqrt; break;
            case Op::Neg: ++c.neg; break;
            case Op::Sin:
            case Op::Cos: angles.insert(nodes_[i].a); break;
            default: break;
        }
    }
    c.sincos = static_cast<long>(angles.size());
    return c;
}

std::vector<double> Program::evaluate(const double* q, const double* qd, const double* in) const {
    return evaluate(q, qd, in, std::vector<bool>(nodes_.size(), true));
}

std::vector<double> Program::evaluate(const double* q, const double* qd, const double* in,
                                      const std::vector<bool>& live) const {
    std::vector<double> v(nodes_.size(), 0.0);
    for (int i = 0; i < size(); ++i) {
        if (!live[i]) continue;
        const Node& n = nodes_[i];
        switch (n.op) {
            case Op::Const: v[i] = n.value; break;
            case Op::Input: v[i] = n.source == Source::Q ? q[n.index] : n.source == Source::Qd ? qd[n.index] : in[n.index]; break;
            case Op::Add: v[i] = v[n.a] + v[n.b]; break;
            case Op::Sub: v[i] = v[n.a] - v[n.b]; break;
            case Op::Mul: v[i] = v[n.a] * v[n.b]; break;
            case Op::Div: v[i] = v[n.a] / v[n.b]; break;
            case Op::Neg: v[i] = -v[n.a]; break;
            case Op::Sin: v[i] = std::sin(v[n.a]); break;
            case Op::Cos: v[i] = std::cos(v[n.a]); break;
            case Op::Sqrt: v[i] = std::sqrt(v[n.a]); break;
        }
    }
    return v;
}

Id Program::rebuild(const Node& x, Id a, Id b) {
    switch (x.op) {
        case Op::Const: return constant(x.value);
        case Op::Input: return input(x.source, x.index);
        case Op::Add: return add(a, b);
        case Op::Sub: return sub(a, b);
        case Op::Mul: return mul(a, b);
        case Op::Div: return div(a, b);
        case Op::Neg: return neg(a);
        case Op::Sin: return sin(a);
        case Op::Cos: return cos(a);
        case Op::Sqrt: return sqrt(a);
    }
    return -1;
}

namespace {

constexpr int kMaxSamples = 4;
using Values = std::array<double, kMaxSamples>;

/// Values of every node of a growing program at fixed sample inputs.
struct SampledValues {
    int samples;
    std::vector<Values> q, qd, in;  // per input index: sample values
    std::vector<Values> v;
    std::mt19937_64 rng;
    const Values& input(Source s, int index) {
        auto& table = s == Source::Q ? q : s == Source::Qd ? qd : in;
        while (static_cast<int>(table.size()) <= index) {
            Values x{};
            for (int k = 0; k < samples; ++k) x[k] = -1.3 + 2.6 * static_cast<double>(rng() >> 11) * 0x1.0p-53;
            table.push_back(x);
        }
        return table[index];
    }
    void extend(const Program& P) {
        while (static_cast<int>(v.size()) < P.size()) {
            const Node& n = P.node(static_cast<Id>(v.size()));
            Values x{};
            const Values* a = n.a >= 0 ? &v[n.a] : nullptr;
            const Values* b = n.b >= 0 ? &v[n.b] : nullptr;
            if (n.op == Op::Input) x = input(n.source, n.index);
            for (int k = 0; k < samples; ++k) switch (n.op) {
                    case Op::Const: x[k] = n.value; break;
                    case Op::Input: break;
                    case Op::Add: x[k] = (*a)[k] + (*b)[k]; break;
                    case Op::Sub: x[k] = (*a)[k] - (*b)[k]; break;
                    case Op::Mul: x[k] = (*a)[k] * (*b)[k]; break;
                    case Op::Div: x[k] = (*a)[k] / (*b)[k]; break;
                    case Op::Neg: x[k] = -(*a)[k]; break;
                    case Op::Sin: x[k] = std::sin((*a)[k]); break;
                    case Op::Cos: x[k] = std::cos((*a)[k]); break;
                    case Op::Sqrt: x[k] = std::sqrt((*a)[k]); break;
                }
            v.push_back(x);
        }
    }
};

bool same_values(const Values& x, const Values& y, int samples) {
    for (int k = 0; k < samples; ++k) {
        const double scale = std::max(std::abs(x[k]), std::abs(y[k]));
        if (!(std::abs(x[k] - y[k]) <= 1e-12 * scale)) return false;
    }
    return true;
}

}  // namespace

Rewrite merge_equal_values(const Program& P, const std::vector<Id>& roots, std::vector<int>& boundaries, int samples,
                           std::uint64_t seed) {
    samples = std::max(1, std::min(samples, kMaxSamples));
    std::vector<bool> live = P.live_nodes(roots);
    Rewrite out;
    out.map.assign(P.size(), -1);
    SampledValues sv{samples, {}, {}, {}, {}, std::mt19937_64(seed)};
    std::multimap<double, Id> by_value;  // first sample -> representative nodes
    std::vector<bool> registered;
    auto register_new = [&]() {
        sv.extend(out.prog);
        while (static_cast<int>(registered.size()) < out.prog.size()) {
            Id id = static_cast<Id>(registered.size());
            registered.push_back(true);
            if (std::isfinite(sv.v[id][0])) by_value.emplace(sv.v[id][0], id);
        }
    };
    register_new();
    std::vector<int> old_bounds = boundaries;
    for (int i = 0; i < P.size(); ++i) {
        for (std::size_t b = 0; b < old_bounds.size(); ++b)
            if (old_bounds[b] == i) boundaries[b] = out.prog.size();
        if (!live[i]) continue;
        const Node& n = P.node(i);
        Id id = out.prog.rebuild(n, n.a >= 0 ? out.map[n.a] : -1, n.b >= 0 ? out.map[n.b] : -1);
        const int before = static_cast<int>(registered.size());
        sv.extend(out.prog);
        Id rep = id;
        if (id >= before && n.op != Op::Const && n.op != Op::Input) {  // a new node: look for an equal earlier one
            const Values& x = sv.v[id];
            if (std::isfinite(x[0])) {
                const double tol = 1e-12 * std::abs(x[0]);
                for (auto it = by_value.lower_bound(x[0] - tol); it != by_value.end() && it->first <= x[0] + tol; ++it)
                    if (it->second < id && same_values(sv.v[it->second], x, samples) && (rep == id || it->second < rep)) rep = it->second;
            }
        }
        register_new();
        out.map[i] = rep;
    }
    for (std::size_t b = 0; b < old_bounds.size(); ++b)
        if (old_bounds[b] >= P.size()) boundaries[b] = out.prog.size();
    return out;
}

}  // namespace nelu::ir
