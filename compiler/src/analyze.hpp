// analyze.hpp: the `analyze` pass. Is D(q) d + b = 0 well posed, and what is its structure?
//
// Structural rank by maximum transversal (btf_maxtrans), block triangular form (btf_order): D can
// be permuted to triangular with a nonzero diagonal exactly when every block is 1x1. When the
// structural rank is short, the under-determined part (columns reachable from an unmatched column
// by alternating paths, the Dulmage-Mendelsohn horizontal block) names the quantities that are not
// determined, and the over-determined part the equations in conflict. A numeric check factors D
// at random and special configurations with UMFPACK.
#pragma once

#include <string>
#include <vector>

#include <Eigen/Dense>

#include "nelu/model.hpp"
#include "system.hpp"

namespace nelu {

/// Compressed-column pattern (and optionally values) of a system's D.
struct Csc {
    int n = 0;  ///< columns
    int m = 0;  ///< rows
    std::vector<int> p, i;  ///< column pointers, row indices
    std::vector<double> x;  ///< values, when evaluated
};

/// Pattern of D (values left empty).
Csc pattern_of(const System& sys);
/// D evaluated at (q, qd) (the inputs `in` do not enter D).
Csc values_of(const System& sys, const std::vector<double>& q, const std::vector<double>& qd);

/// Row and column scales, powers of two, for a second look at D when the rank and condition checks
/// find it singular: R D C. D mixes units (a Newton row reads a link's mass on its acceleration
/// and 1 on its force; a kinematic row reads 1 and lengths), so its condition follows the robot's
/// scale: a UR5e of 0.1 mg links 1 mm long has a reciprocal condition of 3.7e-17 where the UR5e
/// has 5e-5, and the checks' thresholds, relative to D's largest entry, would call it singular.
/// Scaling changes no rank, so D is singular only when the equilibrated D is too. The scales are
/// Curtis and Reid's (the least-squares fit of log |D_ij| by row and column terms), of max |D_ij|
/// over random configurations: units do not depend on q, and a column that vanishes only at a
/// special configuration keeps its scale there. A robot scaled in mass and length is R0 D C0
/// exactly, so its equilibrated D is the robot's own. Powers of two: exact, deterministic.
struct Equilibration {
    std::vector<double> row, col;
    double lo = 0, hi = 0;  ///< the smallest and largest |D_ij| the fit kept (those units explain)
    /// Whether the second look may be taken: those entries within [1e-19, 1e19], where the product
    /// of two stays in float's normal range (a float solver of a robot beyond it underflows or
    /// overflows whatever its conditioning; its D is judged as it comes).
    bool usable() const { return lo >= 1e-19 && hi <= 1e19; }
    void apply(Csc& A) const;
    void apply(Eigen::MatrixXd& D) const;
};
Equilibration equilibration(const Model& model, const System& sys);

struct Analysis {
    int n = 0;
    long nnz = 0;
    int structural_rank = 0;
    int blocks = 0;         ///< BTF blocks
    int largest_block = 0;
    bool triangular = false;  ///< permutable to triangular with a nonzero diagonal
    std::vector<int> btf_P, btf_Q, btf_R;  ///< btf_order's permutations and block boundaries
    int numeric_configs = 0;  ///< configurations at which D was factored numerically
    double min_rcond = 0;     ///< smallest UMFPACK reciprocal condition estimate seen
    std::string special_singularity;  ///< where D is singular at a special configuration (allowed)
    /// D is regular at random configurations only once equilibrated (its units made it look
    /// singular): a failed verification is then the problem's condition in these units (exit 1)
    bool equilibrated = false;
};

/// Analyze `sys`; throws IllPosedError naming the undetermined quantities when D is singular.
Analysis run_analyze(const Model& model, const System& sys);

/// Well-posedness of an over-determined system (more equations than unknowns): structural and
/// numeric full column rank at random and special configurations. Throws IllPosedError naming the
/// undetermined quantities.
/// Returns a description of a rank loss at a special configuration when the system allows it.
/// `equilibrated`, when given, is set when D has full rank at random configurations only once
/// equilibrated (Equilibration).
std::string check_full_column_rank(const Model& model, const System& sys, bool* equilibrated = nullptr);

/// The well-posedness diagnosis at one configuration: "" when D has full column rank at (q, qd),
/// else the numeric rank and the quantities its null space moves, with what would determine them.
/// A loss that D's equilibration does not show is none (rank does not change with scaling: the
/// threshold met units, not a dependence).
std::string rank_loss_at(const Model& model, const System& sys, const std::vector<double>& q, const std::vector<double>& qd);

/// The exact equations (rows that are not measurements) that are combinations of one another at
/// (q, qd): the rows of the combinations, the conditions and joint equations of known quantities
/// first, up to 8 labels; "" when the exact rows are independent there.
std::string dependent_exact_rows(const System& sys, const std::vector<double>& q, const std::vector<double>& qd);

/// What a run-time sparse LU (UMFPACK, with its own pivoting) spends on D at a random configuration:
/// its factorization flop count (UMFPACK_FLOPS) plus 2 (nnz(L) + nnz(U)) for the two triangular
/// solves. An over-determined D is counted through its augmented system [Sigma D; D^T 0] (Sigma the
/// measurement variances, zero for exact rows), which gives the weighted least-squares solution.
/// -1 when UMFPACK fails.
double umfpack_flops(const Model& model, const System& sys);

/// Dense D at (q, qd) (rows x columns), for the numeric checks and the tests.
Eigen::MatrixXd dense_of(const System& sys, const std::vector<double>& q, const std::vector<double>& qd);

}  // namespace nelu
