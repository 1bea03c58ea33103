// check.hpp: `nelu check`: build a generated solver with the system's C++ compiler, load it, and
// compare it with the reference algorithms on many states, in double and float.
#pragma once

#include <algorithm>
#include <string>

#include "check_batch.hpp"

namespace nelu {

struct CheckOptions {
    std::string urdf;      ///< the robot the solver was generated from
    std::string manifest;  ///< DIR/NAME.json; NAME.cpp and NAME.hpp sit beside it
    std::string problem;   ///< the problem spec, when the solver came from one (default: the
                           ///< manifest's spec name, looked up beside the manifest)
    int states = 1000;     ///< random states, at least 1 (special configurations are added)
    std::string cxx = "c++";
    std::string library;   ///< a shared library already built from NAME.cpp: checked as it is, instead
                           ///< of building one with `cxx` (the Python package checks the library it loaded)
    bool ignore_mimic = false;  ///< --ignore-mimic (also read from the manifest; they must agree)
};

struct CheckReport {
    std::string name;
    int states = 0;
    bool seeks_qdd = false;
    bool has_float = false;  ///< the manifest lists float entry points (each then required and compared)
    double forward_double = 0, forward_float = 0;    ///< max relative forward error
    double backward_double = 0, backward_float = 0;  ///< max scaled residual (when accelerations are sought)
    int failed_status = 0;                           ///< calls that returned non-zero where they should not
    int special_states = 0;    ///< contacts: special configurations where only the solver's refusals are judged (run_verify)
    int refused_singular = 0;  ///< calls that returned NELU_STATUS_SMALL_PIVOT where Lambda does not exist (osim with lambda)
    bool sensor = false;  ///< a sensor problem (its outputs compared with a consistent world)
    bool mimics = false;  ///< the model has mimic joints (their angles' float rounding counts in `rounding`)
    /// With NAME_derivatives (compiled with --derivatives): its jac against the compiler's own
    /// derivative program (the IR, evaluated: the C++ compiler's translation is exact to rounding)
    /// and against central differences of the compiled value solver along each column (steps 1e-6
    /// and 1e-4, the better of the two: rounding grows as 1/h, truncation as h^2; agreement to
    /// about 1e-6 relative is what differences give), and its out against NAME's;
    /// NAME_derivatives_f's jac against the double one to 1e-4 of its largest entry. A state whose
    /// values the problem's conditioning makes less accurate (the value solvers' forward error e
    /// against the reference at that state, double and float) cannot have a more accurate
    /// Jacobian: there the tolerances are 10 e (program; or 10 times the program's own rounding
    /// error there, its double evaluation against its long double one, where the Jacobian amplifies
    /// rounding more than the values), 10 e / 1e-6 (differences: the rounding of the values divided
    /// by the step) and for float the larger of 100 e_float (the Jacobian's
    /// right-hand sides read the float values, and its columns go through the same float factors:
    /// the values' error enters it once more, amplified) and 100 times the change that rounding
    /// the arguments to float makes in the double Jacobian, when larger
    /// (`*_judged`: the worst error over its state's tolerance; at most 1 passes).
    bool derivatives = false;
    double jac_vs_ir = 0, jac_vs_differences = 0, out_vs_value = 0;
    double jac_float = 0;  ///< NAME_derivatives_f's jac against the double one (relative to its largest entry)
    double jac_vs_ir_judged = 0, jac_vs_differences_judged = 0, jac_float_judged = 0;
    int conditioned_states = 0;  ///< states where the conditioning set a tolerance above the fixed one
    int derivative_states = 0;
    /// With the batch forms (compiled with --batch, NAME_batch.cpp beside NAME.cpp, built together):
    /// each against its scalar entry point (check_batch.hpp).
    bool batch = false;
    BatchReport batch_report;
    bool batch_pass() const {
        for (const BatchEntryReport& e : batch_report.entries)
            if (!e.errors.empty()) return false;
        return true;
    }
    /// The workspace forms the manifest lists (NAME_ws, NAME_f_ws, NAME_derivatives_ws, ...): each
    /// called at every state, its workspace filled with NaN or huge values first, and compared with
    /// its ordinary entry point bit for bit, status, out and jac.
    std::vector<std::string> workspace_entries;
    long workspace_calls = 0, workspace_differing = 0;
    /// NAME_derivatives_ws in its every-value shape (column by column) beside columns in lanes: its
    /// jac judged within twice the state's Jacobian tolerance (both are within it of the exact one).
    bool workspace_jac_judged = false;
    /// Float is judged by its decisive error (backward where accelerations are sought, forward
    /// otherwise): state by state against 1e-4, or, where larger, 100 times the double solver's
    /// decisive error on the same inputs rounded to float (what the rounding of the inputs alone
    /// costs), which is the larger at a configuration where a right-hand side cancels to zero
    /// (iwim's qdd_0 = -M^-1 h where the UR5e has its arm along its first joint's axis: h of 1e-15
    /// from terms of 10 N m, which float rounds to 1e-6; the double solver is itself judged at
    /// 1e-10) and where the model amplifies its inputs (a mimic joint geared 100:1 turns 100 times
    /// its master's angle, and so its rounding; and the float solver forms the mimic's angle
    /// itself, multiplier x q + offset rounded at the mimic's magnitude, so that with mimic joints
    /// the reference's error at the angles and velocities float arithmetic gives them counts too,
    /// state by state: check.cpp float_view); a sensor problem's forward error over all states
    /// against tolerance_float() (the inputs' rounding only).
    /// `float_judged`: the worst error over its tolerance (at most 1 passes); `rounded_states`:
    /// states where the rounding set it.
    double float_judged = 0;
    int rounded_states = 0;
    double decisive_double() const { return seeks_qdd ? backward_double : forward_double; }
    double decisive_float() const { return seeks_qdd ? backward_float : forward_float; }
    bool float_passes() const { return float_judged <= 1; }
    /// The largest error of the double solver on the float solver's inputs (the double inputs
    /// rounded to float), or with mimic joints of the reference at the mimics' angles and velocities
    /// in float arithmetic where larger (not for sensor problems): forward for sensor problems,
    /// backward where accelerations are sought.
    double rounding = 0;
    /// Tolerances: 1e-10 (double) and 1e-4 (float) for inverse, forward and hybrid dynamics (float
    /// per state larger where the rounding of the inputs sets it: float_judged). A sensor problem's
    /// forward error is its condition number times the rounding error, and its outputs are compared
    /// directly: 1e-9 in double, and in float the largest of 1e-4, the double error scaled by twice
    /// the ratio of the two precisions' rounding units (2 x 2^-24 / 2^-53, about 1.1e9) and 100
    /// times `rounding`, each over all states: the float solution must be as good as the problem's
    /// conditioning allows (the double error alone underestimates it on ill-conditioned problems,
    /// where a static order can amplify the rounding of intermediate values more than the problem
    /// amplifies that of its inputs; judged state by state, the paper's serial-chain experiment
    /// (sie7) is 1.2 times over at one state of 1022).
    double tolerance_double() const { return sensor ? 1e-9 : 1e-10; }
    double tolerance_float() const { return sensor ? std::max({1e-4, 1.07e9 * forward_double, 1e2 * rounding}) : 1e-4; }
    bool pass() const {
        return decisive_double() <= tolerance_double() && float_passes() && failed_status == 0 &&
               (!derivatives || (jac_vs_ir_judged <= 1 && jac_vs_differences_judged <= 1 && out_vs_value <= 1e-13 && jac_float_judged <= 1)) &&
               (!batch || batch_pass()) && workspace_differing == 0;
    }
};

/// The directory that holds nelu/status.h and the other runtime headers the generated code
/// includes: beside an installed executable (PREFIX/include), else the source tree's runtime/include.
std::string runtime_include_dir();

/// The most random states nelu check takes (each holds its arguments and reference outputs, and
/// the batch forms' copies).
constexpr int kMaxCheckStates = 1000000;

/// Build (or take `library`), load and compare. Throws InputError for unreadable or invalid inputs
/// (a manifest that is not nelu's, a URDF other than the solver's, a missing source, a solver
/// without double entry points) and std::runtime_error when the solver cannot be built or loaded.
CheckReport run_check(const CheckOptions& options);

}  // namespace nelu
