// order.hpp: the `order` pass. Candidate pivot sequences for D, each factored symbolically
// (schedule pass); the one with the fewest operations in the final program wins. Its non-constant
// pivots are then validated numerically.
//
// Candidates:
//   tree-rnea  bodies root to leaves for accelerations, leaves to root for forces: Nori's
//              permutations (11)-(12), triangular for inverse dynamics;
//   tree-aba   leaves to root: f_i, a_i, the joint unknown, then the transform auxiliaries, so that
//              each subtree is condensed onto its parent's acceleration (the articulated-body
//              algorithm as an elimination order); valid for every problem, pivots S^T IA S;
//   umfpack    UMFPACK's ordering of the worst-case pattern (values from a random configuration);
//   btf        when D is triangularizable, the triangular order of btf_order.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analyze.hpp"
#include "schedule.hpp"

namespace nelu {

struct CandidateReport {
    std::string name;
    bool ok = false;
    std::string why;  ///< when not ok
    ir::OpCount ops;
    long fill = 0;
};

struct PivotValidation {
    int configurations = 0;
    int checked_pivots = 0;       ///< non-constant pivots
    double worst_ratio = 1;       ///< min over pivots of min|p| / max|p| across configurations
    std::string worst_pivot;      ///< label of that pivot
    double growth = 0;            ///< max |value| computed in the factorization / max |entry of D|, worst configuration
};

struct OrderResult {
    Factorization best;
    std::vector<CandidateReport> candidates;
    PivotValidation validation;
};

struct OrderOptions {
    int validation_configs = 10000;  ///< for pivots not proved safe by construction
    bool progress = false;           ///< print progress to stderr
    /// A numeric check of a candidate whose pivots are safe (the interpreter against the references
    /// on a few states): "" when it is accurate, else why not; the next candidate is tried then.
    std::function<std::string(const Factorization&)> accurate;
};

/// Choose and factor. Throws IllPosedError when no candidate works or a pivot cannot be made safe.
OrderResult run_order(const Model& model, const System& sys, const Analysis& an, const OrderOptions& opt);

}  // namespace nelu
