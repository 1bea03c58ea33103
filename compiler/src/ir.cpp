// ir.cpp: see ir.hpp.
#include "ir.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <random>
#include <set>
#include <tuple>
#include <stdexcept>
#include <unordered_map>

#include "nelu/trig.hpp"

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

Id Program::negation(Id a) { return nodes_[a].op == Op::Sub ? make(Op::Neg, a, -1) : neg(a); }

double folded_sum(double a, double b) {
    const double s = a + b;
    return std::abs(s) <= 1e-13 * std::max(std::abs(a), std::abs(b)) ? 0.0 : s;
}

Id Program::add(Id a, Id b) {
    if (is_const(a) && is_const(b)) return constant(folded_sum(value(a), value(b)));
    if (a == zero_) return b;
    if (b == zero_) return a;
    if (nodes_[b].op == Op::Neg) return sub(a, nodes_[b].a);
    if (nodes_[a].op == Op::Neg) return sub(b, nodes_[a].a);
    if (a > b) std::swap(a, b);
    return make(Op::Add, a, b);
}

Id Program::sub(Id a, Id b) {
    if (is_const(a) && is_const(b)) return constant(folded_sum(value(a), -value(b)));
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
Id Program::log3_ratio(Id x, Id c) {
    return is_const(x) && is_const(c) ? constant(nelu::log3_ratio(value(x), value(c))) : make(Op::Log3Ratio, x, c);
}
Id Program::log3_ratio_dx(Id x, Id c) {
    return is_const(x) && is_const(c) ? constant(nelu::log3_ratio_dx(value(x), value(c))) : make(Op::Log3RatioDx, x, c);
}
Id Program::log6_beta(Id t) { return is_const(t) ? constant(nelu::log6_beta(value(t))) : make(Op::Log6Beta, t, -1); }
Id Program::log6_beta_dt(Id t) { return is_const(t) ? constant(nelu::log6_beta_dt(value(t))) : make(Op::Log6BetaDt, t, -1); }

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
            case Op::Log3Ratio:
            case Op::Log3RatioDx:
            case Op::Log6Beta:
            case Op::Log6BetaDt: ++c.log; break;
            case Op::Sin:
            case Op::Cos: angles.insert(nodes_[i].a); break;
            default: break;
        }
    }
    c.sincos = static_cast<long>(angles.size());
    return c;
}

bool is_arithmetic(Op op) { return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div || op == Op::Neg; }

std::string spelled(Op op, const std::string& a, const std::string& b, const char* prefix) {
    switch (op) {
        case Op::Add: return a + " + " + b;
        case Op::Sub: return a + " - " + b;
        case Op::Mul: return a + " * " + b;
        case Op::Div: return a + " / " + b;
        case Op::Neg: return "-" + a;
        case Op::Sin: return std::string(prefix) + "sin(" + a + ")";
        case Op::Cos: return std::string(prefix) + "cos(" + a + ")";
        case Op::Sqrt: return std::string(prefix) + "sqrt(" + a + ")";
        case Op::Log3Ratio: return std::string(prefix) + "log3_ratio(" + a + (b.empty() ? "" : ", " + b) + ")";
        case Op::Log3RatioDx: return std::string(prefix) + "log3_ratio_dx(" + a + (b.empty() ? "" : ", " + b) + ")";
        case Op::Log6Beta: return std::string(prefix) + "log6_beta(" + a + (b.empty() ? "" : ", " + b) + ")";
        case Op::Log6BetaDt: return std::string(prefix) + "log6_beta_dt(" + a + (b.empty() ? "" : ", " + b) + ")";
        case Op::Const:
        case Op::Input: break;
    }
    throw std::logic_error("spelled: a constant or an input is not an operation");
}

namespace {
bool counted(Op op) { return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div || op == Op::Sqrt; }
}  // namespace

void LiveCount::add(Id root) {
    stack_.assign(1, root);
    while (!stack_.empty()) {
        const Id x = stack_.back();
        stack_.pop_back();
        if (users_[x]++ > 0) continue;
        const Node& n = P_.node(x);
        ops_ += counted(n.op);
        if (n.a >= 0) stack_.push_back(n.a);
        if (n.b >= 0) stack_.push_back(n.b);
    }
}

void LiveCount::remove(Id root) {
    stack_.assign(1, root);
    while (!stack_.empty()) {
        const Id x = stack_.back();
        stack_.pop_back();
        if (--users_[x] > 0) continue;
        const Node& n = P_.node(x);
        ops_ -= counted(n.op);
        if (n.a >= 0) stack_.push_back(n.a);
        if (n.b >= 0) stack_.push_back(n.b);
    }
}

std::vector<double> Program::evaluate(const double* q, const double* qd, const double* in) const {
    return evaluate(q, qd, in, std::vector<bool>(nodes_.size(), true));
}

std::vector<double> Program::evaluate(const double* q, const double* qd, const double* in,
                                      const std::vector<bool>& live) const {
    return evaluate_as<double>(q, qd, in, live);
}

namespace {

/// A rotation-log function (Op::Log3Ratio ...) of double operands.
double log_function(Op op, double a, double b) {
    switch (op) {
        case Op::Log3Ratio: return nelu::log3_ratio(a, b);
        case Op::Log3RatioDx: return nelu::log3_ratio_dx(a, b);
        case Op::Log6Beta: return nelu::log6_beta(a);
        case Op::Log6BetaDt: return nelu::log6_beta_dt(a);
        default: return NAN;
    }
}

/// The same in long double (the program's rounding error estimated against double, check.cpp): the
/// functions themselves in double.
long double log_function(Op op, long double a, long double b) {
    return log_function(op, static_cast<double>(a), static_cast<double>(b));
}

/// The same of complex-step operands a + i h a', b + i h b': f + i h (f_a a' + f_b b'), exact to
/// first order in h as complex-step differentiation needs. The derivative functions themselves
/// have no second derivative here (value programs, which complex steps differentiate, do not call
/// them): their imaginary part is NaN, so that a use shows.
std::complex<double> log_function(Op op, std::complex<double> a, std::complex<double> b) {
    const double x = a.real(), y = b.real();
    switch (op) {
        case Op::Log3Ratio:
            return {nelu::log3_ratio(x, y), nelu::log3_ratio_dx(x, y) * a.imag() - b.imag() / (x + y * y)};
        case Op::Log6Beta: return {nelu::log6_beta(x), nelu::log6_beta_dt(x) * a.imag()};
        default: return {log_function(op, x, y), NAN};
    }
}

}  // namespace

template <class S>
std::vector<S> Program::evaluate_as(const S* q, const S* qd, const S* in, const std::vector<bool>& live) const {
    using std::cos, std::sin, std::sqrt;
    std::vector<S> v(nodes_.size(), S(0));
    for (int i = 0; i < size(); ++i) {
        if (!live[i]) continue;
        const Node& n = nodes_[i];
        switch (n.op) {
            case Op::Const: v[i] = S(n.value); break;
            case Op::Input: v[i] = n.source == Source::Q ? q[n.index] : n.source == Source::Qd ? qd[n.index] : n.source == Source::In ? in[n.index] : S(0); break;
            case Op::Add: v[i] = v[n.a] + v[n.b]; break;
            case Op::Sub: v[i] = v[n.a] - v[n.b]; break;
            case Op::Mul: v[i] = v[n.a] * v[n.b]; break;
            case Op::Div: v[i] = v[n.a] / v[n.b]; break;
            case Op::Neg: v[i] = -v[n.a]; break;
            case Op::Sin: v[i] = sin(v[n.a]); break;
            case Op::Cos: v[i] = cos(v[n.a]); break;
            case Op::Sqrt: v[i] = sqrt(v[n.a]); break;
            default: v[i] = log_function(n.op, v[n.a], n.b >= 0 ? v[n.b] : S(0)); break;
        }
    }
    return v;
}

template std::vector<double> Program::evaluate_as(const double*, const double*, const double*, const std::vector<bool>&) const;
template std::vector<long double> Program::evaluate_as(const long double*, const long double*, const long double*,
                                                       const std::vector<bool>&) const;
template std::vector<std::complex<double>> Program::evaluate_as(const std::complex<double>*, const std::complex<double>*,
                                                                const std::complex<double>*, const std::vector<bool>&) const;

double PointValues::at(const Program& P, Id x) {
    using std::cos, std::sin, std::sqrt;
    for (int i = static_cast<int>(v_.size()); i <= x; ++i) {
        const Node& n = P.node(i);
        double v = 0;
        switch (n.op) {
            case Op::Const: v = n.value; break;
            case Op::Input: v = n.source == Source::Lane ? 0.0 : (n.source == Source::Q ? q_ : n.source == Source::Qd ? qd_ : in_)[static_cast<std::size_t>(n.index)]; break;
            case Op::Add: v = v_[n.a] + v_[n.b]; break;
            case Op::Sub: v = v_[n.a] - v_[n.b]; break;
            case Op::Mul: v = v_[n.a] * v_[n.b]; break;
            case Op::Div: v = v_[n.a] / v_[n.b]; break;
            case Op::Neg: v = -v_[n.a]; break;
            case Op::Sin: v = sin(v_[n.a]); break;
            case Op::Cos: v = cos(v_[n.a]); break;
            case Op::Sqrt: v = sqrt(v_[n.a]); break;
            default: v = log_function(n.op, v_[n.a], n.b >= 0 ? v_[n.b] : 0.0); break;
        }
        v_.push_back(v);
    }
    return v_[static_cast<std::size_t>(x)];
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
        case Op::Log3Ratio: return log3_ratio(a, b);
        case Op::Log3RatioDx: return log3_ratio_dx(a, b);
        case Op::Log6Beta: return log6_beta(a);
        case Op::Log6BetaDt: return log6_beta_dt(a);
    }
    return -1;
}

namespace {

/// Arithmetic modulo the Mersenne prime 2^61 - 1: polynomial identities hold exactly, and two
/// different rational functions agree at a random point with probability (degree / 2^61).
__extension__ typedef unsigned __int128 u128;  // GCC and Clang; __extension__ keeps -Wpedantic quiet

struct Fp {
    static constexpr std::uint64_t P = (std::uint64_t{1} << 61) - 1;
    static std::uint64_t reduce(u128 x) {
        std::uint64_t r = static_cast<std::uint64_t>(x & P) + static_cast<std::uint64_t>(x >> 61);
        r = (r & P) + (r >> 61);
        return r >= P ? r - P : r;
    }
    static std::uint64_t add(std::uint64_t a, std::uint64_t b) { return reduce(static_cast<u128>(a) + b); }
    static std::uint64_t sub(std::uint64_t a, std::uint64_t b) { return add(a, P - b); }
    static std::uint64_t mul(std::uint64_t a, std::uint64_t b) { return reduce(static_cast<u128>(a) * b); }
    static std::uint64_t neg(std::uint64_t a) { return a == 0 ? 0 : P - a; }
    static std::uint64_t inv(std::uint64_t a) {  // a^(P-2)
        std::uint64_t r = 1, e = P - 2;
        while (e) {
            if (e & 1) r = mul(r, a);
            a = mul(a, a), e >>= 1;
        }
        return r;
    }
};

/// A node's value at two random points of the field; `opaque` values never merge.
struct Sample {
    std::uint64_t v[2] = {0, 0};
    bool opaque = false;
    bool operator<(const Sample& o) const { return std::tie(v[0], v[1]) < std::tie(o.v[0], o.v[1]); }
    bool operator==(const Sample& o) const { return v[0] == o.v[0] && v[1] == o.v[1]; }
};

/// The samples are uniform in the field already: mixing the two halves is a good hash.
struct SampleHash {
    std::size_t operator()(const Sample& s) const { return static_cast<std::size_t>(s.v[0] ^ (s.v[1] * 0x9E3779B97F4A7C15ull)); }
};

/// Values of every node of a growing program at two random points: inputs, sines, cosines, square
/// roots and model constants are independent random variables (0, +-1, +-2, +-0.5 are structure).
struct SampledValues {
    std::mt19937_64 rng;
    std::map<std::pair<int, int>, Sample> inputs;
    std::map<double, Sample> constants;                     // by |value|
    std::map<std::tuple<int, Sample, Sample>, Sample> transcendental;  // (op, operand values) -> value
    std::vector<Sample> v;
    Sample fresh() {
        Sample x;
        for (auto& e : x.v) e = rng() % Fp::P;
        return x;
    }
    Sample constant(double c) {
        const double a = std::abs(c);
        Sample x;
        if (a == 0 || a == 1 || a == 2) x.v[0] = x.v[1] = static_cast<std::uint64_t>(a);
        else if (a == 0.5) x.v[0] = x.v[1] = Fp::inv(2);
        else {
            // Constants within a few ulps are one variable: constant folding associates products
            // in whatever order they were built, and (c1 c2) c3 and c1 (c2 c3) differ in the last
            // bits. Treating them as one keeps identities such as the symmetry of a Schur
            // complement visible; a merge then changes results by 1e-13 relative at most.
            auto it = constants.lower_bound(a * (1 - 1e-13));
            x = it != constants.end() && it->first <= a * (1 + 1e-13) ? it->second : (constants[a] = fresh());
        }
        if (c < 0)
            for (auto& e : x.v) e = Fp::neg(e);
        return x;
    }
    void extend(const Program& P) {
        while (static_cast<int>(v.size()) < P.size()) {
            const Node& n = P.node(static_cast<Id>(v.size()));
            const Sample a = n.a >= 0 ? v[n.a] : Sample{}, b = n.b >= 0 ? v[n.b] : Sample{};
            Sample x;
            x.opaque = a.opaque || b.opaque;
            switch (n.op) {
                case Op::Const: x = constant(n.value); break;
                case Op::Input: {
                    auto key = std::make_pair(static_cast<int>(n.source), n.index);
                    auto it = inputs.find(key);
                    x = it != inputs.end() ? it->second : (inputs[key] = fresh());
                    break;
                }
                case Op::Sin:
                case Op::Cos:
                case Op::Sqrt:
                case Op::Log3Ratio:
                case Op::Log3RatioDx:
                case Op::Log6Beta:
                case Op::Log6BetaDt: {
                    auto key = std::make_tuple(static_cast<int>(n.op), a, b);
                    auto it = transcendental.find(key);
                    x = x.opaque ? fresh() : it != transcendental.end() ? it->second : (transcendental[key] = fresh());
                    x.opaque = a.opaque || b.opaque;
                    break;
                }
                default:
                    for (int k = 0; k < 2; ++k) switch (n.op) {
                            case Op::Add: x.v[k] = Fp::add(a.v[k], b.v[k]); break;
                            case Op::Sub: x.v[k] = Fp::sub(a.v[k], b.v[k]); break;
                            case Op::Mul: x.v[k] = Fp::mul(a.v[k], b.v[k]); break;
                            case Op::Neg: x.v[k] = Fp::neg(a.v[k]); break;
                            case Op::Div:
                                if (b.v[k] == 0) x.opaque = true;
                                else x.v[k] = Fp::mul(a.v[k], Fp::inv(b.v[k]));
                                break;
                            default: break;
                        }
            }
            v.push_back(x);
        }
    }
};

}  // namespace

struct ZeroTest::Impl {
    SampledValues sv;
};

ZeroTest::ZeroTest(std::uint64_t seed) : impl_(new Impl{SampledValues{std::mt19937_64(seed), {}, {}, {}, {}}}) {}
ZeroTest::~ZeroTest() = default;

bool ZeroTest::is_zero(const Program& P, Id x) {
    if (P.is_const(x)) return P.value(x) == 0;
    impl_->sv.extend(P);
    const Sample& s = impl_->sv.v[x];
    return !s.opaque && s.v[0] == 0 && s.v[1] == 0;
}

Rewrite merge_equal_values(const Program& P, const std::vector<Id>& roots, std::vector<int>& boundaries, bool merge,
                           std::uint64_t seed, const std::vector<bool>* apart) {
    std::vector<bool> live = P.live_nodes(roots);
    Rewrite out;
    out.map.assign(P.size(), -1);
    SampledValues sv{std::mt19937_64(seed), {}, {}, {}, {}};
    // value -> earliest node with it (looked up, never iterated: the output does not depend on
    // the hash order)
    std::unordered_map<Sample, Id, SampleHash> first;
    first.reserve(static_cast<std::size_t>(P.size()));
    auto register_new = [&](bool target = true) {
        const int before = static_cast<int>(sv.v.size());
        sv.extend(out.prog);
        if (target)
            for (int id = before; id < out.prog.size(); ++id)
                if (!sv.v[id].opaque) first.emplace(sv.v[id], id);
    };
    register_new();
    std::vector<int> old_bounds = boundaries;
    for (int i = 0; i < P.size(); ++i) {
        for (std::size_t b = 0; b < old_bounds.size(); ++b)
            if (old_bounds[b] == i) boundaries[b] = out.prog.size();
        if (!live[i]) continue;
        const Node& n = P.node(i);
        Id id = out.prog.rebuild(n, n.a >= 0 ? out.map[n.a] : -1, n.b >= 0 ? out.map[n.b] : -1);
        const bool kept_apart = apart && (*apart)[static_cast<std::size_t>(i)];
        register_new(!kept_apart);
        auto it = !merge || kept_apart || sv.v[id].opaque ? first.end() : first.find(sv.v[id]);
        out.map[i] = it != first.end() && it->second < id ? it->second : id;
        if (out.map[i] == id && merge && !kept_apart && !sv.v[id].opaque && !out.prog.is_const(id) &&
            out.prog.node(id).op != Op::Neg) {
            // A node whose value is the negation of an earlier one (a - b beside b - a, or a
            // Schur complement entry built with the opposite sign) becomes -earlier: negation is
            // absorbed by the additions and products that use it.
            Sample negated = sv.v[id];
            for (auto& e : negated.v) e = Fp::neg(e);
            auto jt = first.find(negated);
            if (jt != first.end() && jt->second < id && !out.prog.is_const(jt->second)) {
                const Id n = out.prog.negation(jt->second);
                register_new();
                out.map[i] = n;
                first[sv.v[id]] = n;
            }
        }
    }
    for (std::size_t b = 0; b < old_bounds.size(); ++b)
        if (old_bounds[b] >= P.size()) boundaries[b] = out.prog.size();
    return out;
}

}  // namespace nelu::ir
