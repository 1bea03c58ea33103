// check_batch.hpp: `nelu check` of the batch entry points (nelu compile --batch): every state's row
// of NAME_batch against NAME on the same state, in calls of n = 1 .. 3W + 1 states, with failing
// states mixed in; the same for NAME_f_batch and the _derivatives forms.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "solver_library.hpp"

namespace nelu {

/// The states to run: the solver's arguments q, qd and in of each (independent coordinates).
struct BatchStates {
    std::vector<std::vector<double>> q, qd, in;
};

/// One batch entry point's agreement with its scalar entry point.
struct BatchEntryReport {
    std::string function;
    int width = 0;             ///< W of this build (NAME_batch_width / NAME_f_batch_width)
    long rows = 0;             ///< states compared (each state once per call size)
    long failing = 0;          ///< of them, states whose status was not OK (NaN and infinite inputs mixed in)
    long bitwise = 0;          ///< rows equal to the scalar entry point's bit for bit
    double vs_scalar = 0;      ///< max relative difference from the scalar entry point's rows
    double judged = 0;         ///< rows that are not bit for bit: the scalar's own measure against the reference
    double judged_share = 0;   ///< the same, each over its state's tolerance (BatchJudge::tolerance): above 1 fails
    std::vector<std::string> errors;  ///< what went wrong (a wrong status, a row touched, a guard overwritten, ...)
};

struct BatchReport {
    /// Whether the build fuses a * b + c (FMA contraction): double lanes are bitwise only where it
    /// is known not to (a library built elsewhere has no probe that says).
    Contraction contraction = Contraction::Unknown;
    std::vector<BatchEntryReport> entries;
};

/// How the scalar entry points judge a row, given to the batch check by nelu check: the decisive
/// error of a row of outputs (and Jacobian) of state `k` against the reference (relative or
/// backward error, or for a Jacobian the difference from the double scalar Jacobian), and the
/// tolerance it must meet, for double or float (`single`): the flat one, or the larger tolerance
/// that state and row are given (`state_tolerance`, when set: a Jacobian's tolerance follows the
/// conditioning of its state and the error of the row's own values, CheckReport::derivatives).
struct BatchJudge {
    using RowFn = std::function<double(std::size_t k, const std::vector<double>& row, bool single)>;
    RowFn error;
    double tolerance_double = 0, tolerance_float = 0;
    RowFn state_tolerance = nullptr;
    /// A Jacobian's judge: how the row's outputs (its first entries) are judged, as the value
    /// solver's are (a row whose values are wrong fails, whatever its Jacobian's tolerance).
    const BatchJudge* values = nullptr;

    double tolerance(std::size_t k, const std::vector<double>& row, bool single) const {
        const double flat = single ? tolerance_float : tolerance_double;
        return state_tolerance ? std::max(flat, state_tolerance(k, row, single)) : flat;
    }
};

/// Calls of the batch entry points of `name` (and `name`_derivatives when njac > 0) in `lib` against
/// its scalar entry points on `states`, in calls of n = 1, 2, .., 3W + 1 states and then all of them
/// at once. Some states get NaN or infinite inputs: their status must be the scalar's and their rows
/// untouched; rows around each call's arrays must stay untouched too. A row must equal the scalar
/// row bit for bit where both compute the same arithmetic (double lanes, and float lanes of width
/// 1) and the build is known not to contract a * b + c (lib.contraction()), and else pass the
/// scalar's own judgement. `jac_exact` false: the scalar NAME_derivatives solves its columns in
/// lanes (docs/derivatives.md), whose rounding the batch form's column-by-column program does not
/// share, so its rows are judged, never required bit for bit. Throws when an entry point is missing
/// (SolverLibrary::require) or `states` is empty.
BatchReport check_batch(const SolverLibrary& lib, const std::string& name, std::size_t nout, std::size_t njac, const BatchStates& states,
                        const BatchJudge& value_judge, const BatchJudge& jac_judge, bool jac_exact = true);

}  // namespace nelu
