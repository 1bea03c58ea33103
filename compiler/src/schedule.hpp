// schedule.hpp: the `schedule` pass. Symbolic sparse LU of D with a fixed pivot sequence (lu.hpp),
// emitted into the IR as scalar operations: numeric factorization, forward and back substitution.
//
// Folding in the IR turns +-1 pivots into sign changes and zero products into nothing, so a
// triangular order costs exactly a forward substitution. The right-hand side is -b; the solution
// is computed only where the outputs need it (dead-code elimination does the rest). With
// derivatives, the Jacobian of the outputs is scheduled in the same program, in the cheapest of
// the forms the problem allows (JacobianForm).
#pragma once

#include <string>
#include <vector>

#include "derivatives.hpp"
#include "ir.hpp"
#include "lu.hpp"
#include "nelu/model.hpp"
#include "system.hpp"

namespace nelu {

/// Why a pivot is safe for every q.
enum class PivotKind {
    Constant,      ///< a structural constant (+-1 or a model constant)
    Articulated,   ///< a projection S^T IA S of an articulated inertia (tree order), or a pivot of
                   ///< its LDL^T for multi-DoF joints: positive when the subtree has inertia
    Validated,     ///< anything else: validated numerically over random and special configurations
                   ///< (also the QR pivots of a trailing block's basis columns, see Tail)
    Gram,          ///< a diagonal entry r_jj of a Gram-Schmidt QR of the trailing block: a norm,
                   ///< positive whenever the block (or its exact rows' transpose) has full column rank
    Constraint,    ///< a diagonal entry of the Gram-Schmidt QR of a trailing block's exact rows,
                   ///< transposed (Tail, null-space method): a norm, positive whenever they have full
                   ///< row rank. Where they lose it, the exact equations cannot all hold for general
                   ///< inputs, whatever the order: such a pivot coming near zero makes the problem
                   ///< ill-posed there (order.cpp)
    Lambda,        ///< a pivot d_j of the LDL^T of Lambda^-1 (osim with lambda): positive except at
                   ///< the robot's kinematic singularities, where Lambda does not exist; checked at
                   ///< run time (signed) against 1e-10 (double) or 1e-4 (float) of its largest
                   ///< validated value, never refused at compile time
};

/// The trailing block of a candidate order that is not eliminated by pivots: after the pivots, the
/// active rows `rows` (at least as many as `cols`) over the remaining columns `cols` form a block B
/// solved by modified Gram-Schmidt (and the same steps on the right-hand side, which makes it
/// backward stable; Bjorck 1967): B = Q R with the pivots r_jj = |column j after the earlier ones
/// are removed| > 0 whenever B has full column rank, so no pivot can cross zero and the static
/// order is safe. A square nonsingular block gives the exact solution (weights 1); a block of
/// measurements alone is solved in the least-squares sense of W^1/2 B (weights 1/variance).
///
/// A block with exact rows E (weight 0) and measurements S is the equality-constrained problem
/// min |W^1/2 (S x - y_S)| subject to E x = y_E, and E is eliminated exactly, by one of:
///  - direct elimination (`basis`: columns of E that span its range at every configuration): the
///    QR of those columns E_B = Q_B R_B (validated pivots) expresses x_B through the other unknowns
///    x_N, and the measurements are fitted in x_N by the QR of the reduced W^1/2 (S_N - S_B R_B^-1
///    Q_B^T E_N) (norms, positive whenever the problem is well posed). E may be rank deficient: rows
///    that are combinations of the others at every configuration (conditions on the inputs, such as
///    a balance that no unknown enters) are satisfied with the others when the inputs are consistent;
///  - the null-space method (`nullspace`, E of full row rank): the QR of E^T (norms, positive
///    whenever E has full row rank) gives x = Q1^T y1 + u, with u the least-squares solution of
///    [W^1/2 S (I - Q1^T Q1); Q1] u = [W^1/2 (y_S - S Q1^T y1); 0] (full column rank exactly when
///    the problem is well posed; Q1 u = 0 at its solution). No choice of columns: it applies where
///    no basis stays independent at every configuration.
/// Either way E x = y_E holds to rounding whatever the measurements.
struct Tail {
    std::vector<int> rows, cols;
    std::vector<double> weights;  ///< per row of `rows`; 0 marks an exact row
    std::vector<int> basis;       ///< direct elimination: positions in `cols` of E's basis columns
    bool nullspace = false;       ///< the null-space method instead
    bool empty() const { return cols.empty() && rows.empty(); }
};

/// A pivot sequence for D: the pivots, and the trailing block left after them (see Tail).
struct PivotOrder {
    std::vector<Pivot> pivots;
    std::vector<bool> articulated;  ///< per pivot: proved safe by the caller (tree orders); empty: none
    Tail tail;
    /// Eliminate keeping the system's pairing of rows with unknowns (lu.hpp, Pairing and
    /// SparseLu::keep_symmetry): each mirrored Schur entry is computed once. The schedule refuses the
    /// order where D is not proven symmetric under the pairing.
    bool symmetric = false;
};

struct ScheduledPivot {
    Pivot at;
    ir::Id value;  ///< the pivot entry after elimination
    PivotKind kind;
    double threshold = 0;  ///< runtime safety threshold on |value| (0 for constants)
    /// PivotKind::Lambda: the index j of d_j, and the threshold of the float entry point; the
    /// check is signed (d_j >= threshold: Lambda^-1 is positive definite where Lambda exists).
    int lambda_index = -1;
    double threshold_float = 0;
};

/// How the Jacobian of the outputs is formed (schedule.cpp, schedule_jacobian): forward-mode
/// differentiation of the program (derivatives.hpp, Differentiator), or the structured derivatives
/// of inverse dynamics with either pairing frame (derivatives.hpp, PairFrame).
enum class JacobianForm { Forward, StructuredLocal, StructuredRoot };
/// The form's name, as the manifest (derivatives.form, derivatives.forms) and the compile report
/// give it: "forward", "structured, local frames", "structured, root frame".
const char* jacobian_form_name(JacobianForm form);

/// Jacobian columns in SIMD lanes (docs/derivatives.md "Columns in lanes"). Every column of a
/// square system solved by its factors is one right-hand side through the same factors: a group of
/// up to kLaneGroup consecutive columns is solved at once by a kernel, the solve of a right-hand
/// side whose entries are inputs on the group's pattern (the rows where one of its columns has a
/// nonzero), printed over nelu::lanes::Vec<T> and run ceil(columns / W) times. The program `prog`
/// keeps the column-by-column Jacobian (verified against complex-step differentiation, and the form
/// of the batch and workspace entry points); the kernels are nodes of `prog` too, over inputs of
/// source ir::Source::Lane (index: the row of D), checked against it (verify.hpp, verify_lanes).
constexpr int kLaneGroup = 4;

struct LaneKernel {
    std::vector<int> rows;             ///< its pattern: rows of D, ascending
    std::vector<ir::Id> inputs;        ///< per row of the pattern: its ir::Source::Lane input
    std::vector<ir::Id> outputs;       ///< per output slot: the part of d out / d t linear in the solve's dx
};

struct LaneGroup {
    std::vector<int> columns;          ///< Jacobian columns (of jacobian_columns), ascending
    int kernel = 0;                    ///< index into Factorization::lane_kernels
    std::vector<ir::Id> rhs;           ///< row-major (pattern row, column of the group): the right-hand side's entry
    std::vector<ir::Id> extra;         ///< row-major (output slot, column of the group): what the Jacobian adds to the
                                       ///< kernel's output (a combination's terms free of dx), or prog.zero()
};

/// Per node of `P`: whether it depends on a lane kernel's inputs (ir::Source::Lane), that is, a
/// kernel computes it; the other nodes a kernel reads are values of the scalar program.
std::vector<bool> lane_dependent(const ir::Program& P);

/// A kernel's own program, as every pass that counts, runs or prints it reads it: its statements
/// (the nodes its outputs need that depend on its inputs, in order, the inputs left out), the
/// values of the scalar program they read (each once, ascending, no constants), and per row of
/// its pattern whether its outputs need that row's input. `dep` is lane_dependent(P).
struct KernelProgram {
    std::vector<ir::Id> statements, reads;
    std::vector<bool> row_read;
};
KernelProgram kernel_program(const ir::Program& P, const LaneKernel& K, const std::vector<bool>& dep);

/// How many of the Jacobian's columns the per-column search gave each kind of form (with or without
/// subtree transfers): forward mode's solve, the structured right-hand side's solve, or -M^-1 d ID / dx
/// from the torque columns (M^-1 formed once and applied: Pinocchio's choice; forward dynamics only).
struct ColumnFormCounts {
    int forward = 0, structured = 0, from_inverse_mass = 0;
};

struct Factorization {
    std::string ordering;  ///< name of the candidate order
    ir::Program prog;      ///< the system's program extended with factorization and solve
    std::vector<ScheduledPivot> pivots;
    std::vector<ir::Id> x;      ///< solution node per column (only for needed columns; -1 otherwise)
    std::vector<ir::Id> outputs;  ///< per System::out slot
    std::vector<ir::Id> system_map;  ///< node of the System's program -> node here (-1: dead)
    long nnz_D = 0, nnz_L = 0, nnz_U = 0;  ///< L strictly lower, U with its diagonal
    int first_factor_node = 0, first_solve_node = 0;  ///< IR node ranges of the phases
    ir::OpCount ops, ops_kinematics, ops_factorization, ops_solve;
    /// With derivatives: the Jacobian of the outputs, row-major (out slot, column of
    /// jacobian_columns), and the operations of the solver that computes outputs and Jacobian.
    std::vector<ir::Id> jacobian;
    ir::OpCount ops_derivatives;
    /// How the Jacobian was formed, and the operations of every form that was built for this
    /// problem (outputs and Jacobian; before value numbering).
    JacobianForm derivative_form = JacobianForm::Forward;
    std::vector<std::pair<JacobianForm, long>> derivative_forms;
    ColumnFormCounts column_forms;  ///< of the form kept
    /// The columns in lanes (empty: none, every column in the scalar program), and the operations
    /// of NAME_derivatives per call when each kernel instruction works on W columns, for W = 1, 2,
    /// 4, 8 (lane_ops[k] for W = 2^k; 0 when no lanes).
    std::vector<LaneKernel> lane_kernels;
    std::vector<LaneGroup> lane_groups;
    long lane_ops[4] = {0, 0, 0, 0};
    /// The order this factorization was scheduled with (to schedule it again with derivatives).
    PivotOrder order;
    long fill() const { return nnz_L + nnz_U - nnz_D; }
};

struct ScheduleOptions {
    /// Give up (false) once L and U hold more than `abandon_factor` times `best_entries` entries,
    /// those of the best order so far (0: no bound), so that a hopeless candidate costs little.
    long best_entries = 0;
    long abandon_factor = 0;
    /// Schedule the Jacobian of the outputs too (Factorization::jacobian).
    bool derivatives = false;
    /// A term left out of the structured derivatives (derivatives.hpp, StructuredTerm): set by the
    /// test that shows each term is needed, through CompileOptions::omit_structured_term.
    StructuredTerm omit_structured_term = StructuredTerm::None;
    /// Derivatives: solve the Jacobian's columns in SIMD lanes where the system allows (LaneGroup).
    bool lanes = true;
};

/// Factor `sys` (built from `model`) with `order`, the candidate named `name`. Returns false (and
/// sets `why`) when a pivot is structurally zero at its turn, or the factors outgrow the bound of
/// `opt`.
bool run_schedule(const Model& model, const System& sys, const std::string& name, const PivotOrder& order, const ScheduleOptions& opt,
                  Factorization& out, std::string& why);

}  // namespace nelu
