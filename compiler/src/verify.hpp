// verify.hpp: the IR interpreter against the reference algorithms, before anything is written.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "nelu/model.hpp"
#include "nelu/state.hpp"
#include "problem.hpp"
#include "schedule.hpp"
#include "system.hpp"

namespace nelu {

/// The special configurations (each with random velocities and inputs), then `random_states`
/// random states, then a few random states with a floating base at its identity orientation or
/// turned by 90 or 180 degrees about an axis and velocities 10 or 100 times the random scale, from
/// one seed. `special`, when given: how many states are at the special configurations (first).
std::vector<State> verification_states(const Model& m, std::uint64_t seed, int random_states, std::size_t* special = nullptr);

/// verification_states with the mixed special configurations (mixed_configurations, each with
/// random velocities and inputs) after the special ones. When the system is allowed to be singular
/// there (Problem::allow_special_singularities), without either, unless `lenient` is given and the
/// problem has contacts: then they stay, first, the mixed ones before the others, and *lenient
/// says how many (0 otherwise), for a judgment that allows for their conditioning (run_verify).
std::vector<State> checked_states(const Model& m, const System& sys, std::uint64_t seed, int random_states, int* lenient = nullptr);

/// max_k |out_k - ref_k| / max(max_k |ref_k|, 1) (infinite when an output is NaN). With
/// `nan_as_nan`, a NaN matches a NaN (and nothing else), and equal infinities match: two rows of
/// one solver at a non-finite input (a batch row against its scalar row).
double forward_error(const std::vector<double>& out, const std::vector<double>& ref, bool nan_as_nan = false);

/// The `in` vector of a solver for a full state, in the system's slot order (classical problems).
std::vector<double> solver_inputs(const System& sys, const Model& m, const State& st);
/// The same for any problem: for sensor problems, the state's accelerations and wrenches are first
/// projected onto the problem's exact conditions, and the sensors read the resulting world
/// (reference RNEA quantities); reference_outputs gives that world's values of the outputs.
std::vector<double> solver_inputs(const System& sys, const Model& m, const Problem& p, const State& st);

/// Expected outputs for a state, from the reference algorithms: RNEA when every joint's qdd is
/// known, ABA when every tau is, and the dense partition of M qdd + h = tau (CRBA, RNEA) otherwise.
std::vector<double> reference_outputs(const System& sys, const Model& m, const Problem& p, const State& st);

/// Scaled residual of a solution: |M qdd + h - tau|_inf / (|M|_inf |qdd|_inf + |h|_inf + |tau|_inf),
/// with the solver's outputs `out` filled into qdd and tau (CRBA and RNEA as references); and, when
/// larger, the relative error of the links' outputs (accelerations, joint wrenches) against their
/// values from the solver's own qdd (reference RNEA), which the residual does not read.
double backward_error(const System& sys, const Model& m, const Problem& p, const State& st, const std::vector<double>& out);
/// The same, given `ref` = reference_outputs(sys, m, p, st) (osim reads it; the others ignore it).
double backward_error(const System& sys, const Model& m, const Problem& p, const State& st, const std::vector<double>& out,
                      const std::vector<double>& ref);
/// Whether the decisive error is the backward error: the backward error of M qdd + h = tau when
/// accelerations are sought (classical problems), of M [qdd_0 B^] = [-h B] for iwim, and for osim
/// with lambda the larger of Lambda^-1's forward error and Lambda's residual |Lambda^-1 Lambda - I|,
/// and for contact problems (contact_residual_applies) the scaled residual of their KKT system.
bool judged_by_backward_error(const System& sys, const Problem& p);
/// Problems with contacts whose outputs hold the whole KKT solution (every joint's acceleration, or
/// v+, and every contact row): judged by the scaled residual of the KKT system (backward_error).
/// Other contact problems (some outputs only) are judged by their forward error.
bool contact_residual_applies(const System& sys, const Problem& p);

/// The forward error of the outputs that are compared directly: all of them, except Lambda (osim
/// with lambda), which is judged by its residual.
double response_forward_error(const System& sys, const std::vector<double>& out, const std::vector<double>& ref);
/// osim with lambda: |Lambda^-1 Lambda - I|_max / (|Lambda^-1|_inf |Lambda|_inf), with the
/// reference Lambda^-1 and the solver's Lambda.
double lambda_residual(const System& sys, const std::vector<double>& out, const std::vector<double>& ref);
/// Whether the generated code's check of pivot p refuses `value` (NELU_STATUS_SMALL_PIVOT), in
/// double or in float (`single`).
bool pivot_refuses(const ScheduledPivot& p, double value, bool single);
/// osim with lambda: whether a refusal is right at this state: some pivot d_j of the same LDL^T of
/// the reference Lambda^-1 (long double) is below kRefusalMargin times its threshold in that
/// precision (or Lambda^-1 is not positive definite). A refusal anywhere else is a failure.
/// Whether the reference refused the state (NaN outputs: a contact set singular for its dense KKT
/// solve); such a state has no forward error, and a refusal of the solver there is right.
bool reference_refused(const std::vector<double>& ref);
bool lambda_refusal_justified(const System& sys, const std::vector<ScheduledPivot>& pivots, const std::vector<double>& ref, bool single);
constexpr double kRefusalMargin = 100;

struct VerifyReport {
    int states = 0;
    bool seeks_qdd = false;          ///< some output is an acceleration (forward or hybrid dynamics)
    double max_rel_error = 0;        ///< max over states of |out - ref|_inf / max(|ref|_inf, 1)
    double max_backward_error = 0;   ///< max over states of the scaled residual (when seeks_qdd)
    int refused_singular = 0;  ///< states where a pivot check fails and Lambda does not exist (osim with lambda)
    int refused_regular = 0;   ///< states where a pivot check fails although the problem is regular there
    int reference_refused = 0;  ///< states judged by their backward error alone: the reference refused them (contacts)
    /// The measure that decides: the forward error for inverse dynamics (a forward computation),
    /// the backward error when accelerations are sought (their forward error is bounded by the
    /// condition of M times it, and M can be nearly singular at special configurations).
    double decisive() const {
        if (refused_regular > 0) return INFINITY;
        return seeks_qdd ? max_backward_error : max_rel_error;
    }
};

/// Run the factorized program on `random_states` random states plus the special configurations.
VerifyReport run_verify(const Model& m, const Problem& p, const System& sys, const Factorization& f, int random_states);

/// The Jacobian of a solver (Factorization::jacobian) against complex-step differentiation of its
/// value program: every input perturbed by i h along a column's tangent (h = 1e-30), the program
/// evaluated in complex arithmetic, the derivative read off the imaginary parts, exact to rounding
/// for this analytic program (+, -, *, /, sin, cos, sqrt). Pivots refused by the value solver's
/// checks skip the state.
struct DerivativeReport {
    int states = 0;
    int columns = 0;
    double max_error = 0;  ///< max over states of |J - J_cs|_max / max(|J_cs|_max, 1)
    std::string worst;     ///< where max_error was reached: column label and state
    /// Columns in lanes (Factorization::lane_groups): max over states of |J_lanes - J|_max / max(|J_cs|_max, 1),
    /// the kernels' Jacobian against the program's column by column (max_error judges both).
    double lanes_vs_program = 0;
};
DerivativeReport verify_derivatives(const Model& m, const Problem& p, const System& sys, const Factorization& f, int random_states);

}  // namespace nelu
