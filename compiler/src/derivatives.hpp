// derivatives.hpp: forward-mode differentiation of the IR, for `nelu compile --derivatives`.
//
// A solver computes out(q, qd, in). Its Jacobian has one column per coordinate of the tangent
// space [q-tangent, qd, in] (Tangent below): joint angles and displacements are their own tangent;
// a floating base's q = [x y z qx qy qz qw] is perturbed locally, q ⊕ δ with δ = [δω; δv] in the
// body frame (angular first, like nelu's twists): R(q ⊕ δ) = R(q) exp([δω]x), p(q ⊕ δ) = p + R δv.
// Each column is a seed: the derivative of every input node along it, as IR nodes (1 for a joint
// angle; for the quaternion, the expressions (1/2) q ⊗ (e_k, 0) of the inputs themselves).
//
// Differentiator builds, for one seed at a time, the derivative of any node of a program in that
// same program (forward mode: d(a + b) = da + db, d(a b) = da b + a db, d(a / b) = (da - (a/b) db)
// / b, d sin a = cos a da, ...), memoized per node, so that structure folds as the values do: a
// node that does not depend on the seed has derivative 0 and costs nothing.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ir.hpp"
#include "nelu/model.hpp"

namespace nelu {

/// One column of a solver's Jacobian.
struct Tangent {
    enum class Kind { Q, Qd, In } kind = Kind::Q;
    int index = 0;          ///< velocity slot (Q, Qd: the tangent has nv coordinates) or input slot (In)
    std::string label;      ///< e.g. "q[shoulder]", "q[root_joint].wx", "qd[elbow]", "in[3]"
};

/// The columns [q-tangent (nv), qd (nv), in (n_in)] of a model's solver with n_in inputs; nv counts
/// the independent coordinates (a mimic joint's follow its master's column).
std::vector<Tangent> jacobian_columns(const Model& m, int n_in);

class Differentiator {
  public:
    /// Derivatives along `t` of nodes of `P` (which grows as derivatives are built).
    Differentiator(ir::Program& P, const Model& m, const Tangent& t);
    /// d x / d t, a node of P.
    ir::Id d(ir::Id x);

  private:
    ir::Program& P_;
    std::unordered_map<ir::Id, ir::Id> memo_;
    std::unordered_map<long, ir::Id> seed_;  ///< input node key -> its derivative
    long key(ir::Source s, int index) const { return static_cast<long>(s) * 1000000000L + index; }
};

}  // namespace nelu
