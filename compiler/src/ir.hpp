// ir.hpp: the scalar SSA program every generated solver is made of.
//
// A Program is a list of nodes in topological order (operands precede their users). Nodes are
// hash-consed, so building the same expression twice yields the same node (common-subexpression
// elimination by construction), and folded as they are built: constants are evaluated, and the
// identities x+0, x*1, x*0, x-x, -(-x), x*(-1) and the absorption of negations into additions and
// products are applied, so that structural zeros and +-1 never cost an operation. Dead code is
// removed at the end from the outputs (live_nodes), and the operation count is exact.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <memory>
#include <utility>
#include <vector>

namespace nelu::ir {

/// Log3Ratio(x, c), Log3RatioDx(x, c), Log6Beta(t), Log6BetaDt(t): the functions of a rotation's
/// logarithm of runtime trig.hpp (nelu::log3_ratio, ...), for a 6-D contact's Baumgarte placement
/// error; the *Dx, *Dt ones are the derivatives that the generated derivatives call.
enum class Op : std::uint8_t { Const, Input, Add, Sub, Mul, Div, Neg, Sin, Cos, Sqrt, Log3Ratio, Log3RatioDx, Log6Beta, Log6BetaDt };

/// Whether op is one of + - * / and negation.
bool is_arithmetic(Op op);

/// How generated code and `nelu analyze --dump ir` spell an operation on its operands' spellings:
/// `a + b`, `-a`, or a function's call `prefix` `sin(a)`, `log6_beta(a, b)` (b empty for one
/// operand). The one place that knows the runtime's names of the functions (trig.hpp, lanes.hpp).
std::string spelled(Op op, const std::string& a, const std::string& b, const char* prefix = "");

/// Where an input node reads from: q[index], qd[index] or in[index]; Lane: an entry of a lane
/// kernel's right-hand side (schedule.hpp, LaneKernel), which the evaluators take as 0.
enum class Source : std::uint8_t { Q, Qd, In, Lane };

struct Node {
    Op op = Op::Const;
    int a = -1, b = -1;    ///< operands (node ids)
    double value = 0;      ///< Const
    Source source = Source::Q;  ///< Input
    int index = 0;              ///< Input
};

using Id = int;

struct OpCount {
    long mul = 0, add = 0, div = 0, sqrt = 0, sincos = 0, neg = 0;
    long log = 0;  ///< calls of the rotation-log functions (Log3Ratio ...), not in total() as sincos is not
    long total() const { return mul + add + div + sqrt; }
    OpCount& operator+=(const OpCount& o) {
        mul += o.mul, add += o.add, div += o.div, sqrt += o.sqrt, sincos += o.sincos, neg += o.neg, log += o.log;
        return *this;
    }
};

/// a + b for constants, 0 when it cancels to rounding (|a + b| <= 1e-13 max(|a|, |b|)): the same
/// equivalence of constants as merge_equal_values, so that exact cancellations stay exact zeros.
double folded_sum(double a, double b);

class Program {
  public:
    Program();

    Id constant(double v);
    Id input(Source s, int index);
    Id add(Id a, Id b);
    Id sub(Id a, Id b);
    Id mul(Id a, Id b);
    Id div(Id a, Id b);
    Id neg(Id a);
    /// -a as a negation node even when a is a subtraction (neg folds -(x - y) into y - x, one
    /// operation); the negation itself is free and the additions and products that use it absorb it.
    Id negation(Id a);
    Id sin(Id a);
    Id cos(Id a);
    Id sqrt(Id a);
    /// nelu::log3_ratio(x, c) and the rest of Op's rotation-log functions (runtime trig.hpp).
    Id log3_ratio(Id x, Id c);
    Id log3_ratio_dx(Id x, Id c);
    Id log6_beta(Id t);
    Id log6_beta_dt(Id t);
    /// sum_k a_k * b_k, folded.
    Id dot(const std::vector<Id>& a, const std::vector<Id>& b);

    Id zero() const { return zero_; }
    Id one() const { return one_; }
    bool is_const(Id x) const { return nodes_[x].op == Op::Const; }
    bool is_zero(Id x) const { return x == zero_; }
    /// Value of a constant node (is_const must hold).
    double value(Id x) const { return nodes_[x].value; }
    const Node& node(Id x) const { return nodes_[x]; }
    int size() const { return static_cast<int>(nodes_.size()); }

    /// Nodes needed by `roots`, as a mask over all nodes.
    std::vector<bool> live_nodes(const std::vector<Id>& roots) const;
    /// Exact operation count of the live nodes (sincos: distinct angles with a sin or cos).
    OpCount count(const std::vector<bool>& live) const;
    /// Evaluate every node in double for the given inputs.
    std::vector<double> evaluate(const double* q, const double* qd, const double* in) const;
    /// Evaluate only the live nodes (others are left 0).
    std::vector<double> evaluate(const double* q, const double* qd, const double* in,
                                 const std::vector<bool>& live) const;
    /// The same in another scalar type: double, long double (the rounding error of the double
    /// evaluation, check.cpp), or std::complex<double> (complex-step differentiation of the
    /// program, verify.cpp).
    template <class S>
    std::vector<S> evaluate_as(const S* q, const S* qd, const S* in, const std::vector<bool>& live) const;

    /// Rebuild node `x` of `other` here with operands `a`, `b` (ids in this program), folded.
    Id rebuild(const Node& x, Id a, Id b);

  private:
    Id make(Op op, Id a, Id b);
    std::vector<Node> nodes_;
    std::map<std::tuple<int, int, int>, Id> cse_;  // (op, a, b) -> node
    std::map<double, Id> constants_;
    std::map<std::pair<int, int>, Id> inputs_;
    Id zero_ = -1, one_ = -1;
};

/// count(live_nodes(roots)).total() of a multiset of roots that changes one root at a time, at the
/// cost of the nodes whose liveness changes: each node counts its live users (a root counts as
/// one), and a node whose count reaches or leaves zero adds or drops its operands' counts in turn.
/// The program must not grow while a LiveCount refers to it.
class LiveCount {
  public:
    explicit LiveCount(const Program& P) : P_(P), users_(static_cast<std::size_t>(P.size()), 0) {}
    void add(Id root);
    void remove(Id root);
    long total() const { return ops_; }

  private:
    const Program& P_;
    std::vector<int> users_;
    std::vector<Id> stack_;
    long ops_ = 0;
};

/// The values of a growing program's nodes at one point (q, qd, in), computed as they are asked
/// for: the nodes added since the last call are evaluated once, from their operands.
class PointValues {
  public:
    PointValues(std::vector<double> q, std::vector<double> qd, std::vector<double> in)
        : q_(std::move(q)), qd_(std::move(qd)), in_(std::move(in)) {}
    double at(const Program& P, Id x);

  private:
    std::vector<double> q_, qd_, in_, v_;
};

/// A program rewritten by a pass, and where each old node went (-1: not live, dropped).
struct Rewrite {
    Program prog;
    std::vector<Id> map;
};

/// Global value numbering by evaluation: rebuilds the live part of `P` and merges every node whose
/// value equals that of an earlier node (or of a constant) into it. Values are computed exactly,
/// modulo the prime 2^61 - 1, at two random points where every input, every sin, cos and sqrt and
/// every model constant is an independent random variable: two nodes merge when they agree as
/// rational functions of all of these (Schwartz-Zippel; a false merge has probability about
/// degree / 2^61). Identities that folding and hash-consing cannot see, such as the two halves of a
/// symmetric Schur complement computed in different orders, then cost nothing. `boundaries` (old
/// node indices splitting the program into phases) are translated in place into new indices.
/// With `merge` false the live part is only rebuilt (compacted), for comparison. Nodes marked in
/// `apart` (by old index; null: none) neither merge nor take others' merges: values equal only
/// up to the equivalence of nearby constants, whose inputs differ (a lane kernel's from another
/// kernel's, or from the scalar program's; schedule.cpp), are kept apart so.
Rewrite merge_equal_values(const Program& P, const std::vector<Id>& roots, std::vector<int>& boundaries,
                           bool merge = true, std::uint64_t seed = 1, const std::vector<bool>* apart = nullptr);

/// Whether a node is identically zero as a rational function of the inputs, sines, cosines, square
/// roots and model constants taken as independent variables (constants within 1e-13 relative are
/// one variable, as in merge_equal_values), tested by evaluation modulo 2^61 - 1 at two random
/// points. Catches the fill of an elimination that cancels exactly but for rounding (c1 c2 - c3
/// with c3 = c1 c2), which would otherwise look like structure. The program may grow between calls.
class ZeroTest {
  public:
    explicit ZeroTest(std::uint64_t seed = 1);
    ~ZeroTest();
    ZeroTest(const ZeroTest&) = delete;
    ZeroTest& operator=(const ZeroTest&) = delete;
    bool is_zero(const Program& P, Id x);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace nelu::ir
