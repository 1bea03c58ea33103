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
#include "system.hpp"

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

/// Where the structured derivatives pair a joint with the bodies below it: every body's vectors
/// carried up to each ancestor's frame, one force transform per (body, ancestor) pair (Local), or
/// every body's vectors moved once into the root body's frame, where each pair costs dot products
/// only (Root).
enum class PairFrame { Local, Root };

/// The derivatives of inverse dynamics tau = ID(q, qd, qdd, f^x) of a tree (Carpentier and Mansard,
/// RSS 2018; Singh, Russell and Wensing, RA-L 2022), in the internal frames, unrolled over the
/// model and built in P: with S_j the joint's motion subspace, v_p and a_p the parent's velocity and
/// acceleration seen in body j's frame, per degree of freedom
///   psi_j = v_p x S_j,   u_j = a_p x S_j + v_p x psi_j,   phi_j = (v_j + v_p) x S_j,
/// the composite inertia IC_j, the composite of the inertias' rates Idot = v x* I - I vx and of
/// the momenta hC_j over the subtree of j, and from them per degree of freedom
///   alpha = IC S,  beta = IdotC S - S x* hC,
///   G = S x* f_j + IC u + IdotC psi + psi x* hC,   H = IC phi + IdotC S + S x* hC,
/// a body i and an ancestor j (or j = i) give
///   d tau_i / d q_j = alpha_i . u_j + beta_i . psi_j,   d tau_i / d qd_j = alpha_i . phi_j + beta_i . S_j,
///   d tau_j / d q_i = S_j . G_i,                       d tau_j / d qd_i = S_j . H_i,
///   M_ij = M_ji = alpha_i . S_j.
/// The values it reads are those of a solved classical system: the velocities, the accelerations
/// a_i and joint wrenches f_i of the solution x, the known or solved joint accelerations. The
/// matrices are row-major nv x nv over the full model's velocity slots (rows: tau; columns: the
/// q-tangent, qd, qdd slot). With mimic joints they are those of the independent coordinates,
/// G^T (d ID / d y) G: each mimic's row and column folded into its master's, and zero.
struct IdDerivatives {
    int nv = 0;
    std::vector<ir::Id> dq, dqd, M;
};

/// The terms of the formulas above, each of which the derivatives need: a test drops one
/// (CompileOptions::omit_structured_term) and sees the verification against complex-step
/// differentiation fail.
enum class StructuredTerm {
    None,
    PsiParentVelocity,   ///< psi = v_p x S
    UAcceleration,       ///< a_p x S in u
    UVelocity,           ///< v_p x psi in u
    PhiVelocity,         ///< (v_j + v_p) x S
    OwnInertia,          ///< I_j in IC_j
    ChildInertia,        ///< X^T IC_c X in IC_j
    OwnRate,             ///< Idot_j in IdotC_j
    ChildRate,           ///< X^T IdotC_c X in IdotC_j
    OwnMomentum,         ///< I_j v_j in hC_j
    ChildMomentum,       ///< X^T hC_c in hC_j
    BetaRate,            ///< IdotC S in beta
    BetaMomentum,        ///< S x* hC in beta
    GForce,              ///< S x* f_j in G
    GInertia,            ///< IC u in G
    GRate,               ///< IdotC psi in G
    GMomentum,           ///< psi x* hC in G
    HInertia,            ///< IC phi in H
    HRate,               ///< IdotC S in H
    HMomentum,           ///< S x* hC in H
};
/// The term named `name` (as in the enumeration, e.g. "GForce"), or throws std::invalid_argument.
StructuredTerm structured_term(const std::string& name);

IdDerivatives structured_id_derivatives(ir::Program& P, const System& sys, const std::vector<ir::Id>& x, const std::vector<bool>& frames,
                                        StructuredTerm omit = StructuredTerm::None);
/// The pairing frames of a PairFrame: every body (Local), or the root body alone (Root; none, the
/// world's frame, when the tree has several roots).
std::vector<bool> pairing_frames(const System& sys, PairFrame frame);

/// The contact rows' share of a structured Jacobian column (forward dynamics with contacts,
/// System::contact_tree). With the structured inverse-dynamics derivatives in the (3tau) rows, a
/// q or qd column is the solution of D dx = -r with r zero but in the (3tau) rows and the contact
/// rows, where it is the partial derivative of the row, sum_j D_rj x_j + b_r, along the tangent at
/// fixed joint accelerations and forces: the body accelerations' partials carried down the tree
/// (da_i = X_i da_p + (dX_i) a_p + dc_i, a_p the solved values held fixed), times the row's
/// entries, plus the partials of the entries and of b. Returns one node per contact row, contacts
/// in order (ContactBlock::rows). The solved values enter as values only (never differentiated).
std::vector<ir::Id> contact_row_partials(ir::Program& P, const System& sys, const std::vector<ir::Id>& x, Differentiator& dt);

}  // namespace nelu
