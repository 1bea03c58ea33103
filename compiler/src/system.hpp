// system.hpp: the `system` pass. Nori's Newton-Euler equations of the whole tree as one sparse
// linear system D(q) d + b(q, qd) = 0 whose entries are IR expressions.
//
// Per body i with parent p (paper eqs. 3a, 3f, 3tau, body-i coordinates, angular first):
//   (3a)   X_i a_p + S_i qdd_i + c_i - a_i = 0                c_i = v_i x S_i qd_i
//   (3f)   I_i a_i + v_i x* I_i v_i - f^x_i - f_i + sum_{children j} X_j^T f_j = 0
//   (3tau) S_i^T f_i - tau_i = 0
// with a_{-1} = -a_g. Known quantities (the measurement rows 9a, 9b, 15 of the paper, each an
// identity row) are eliminated symbolically at once: their columns move into b.
//
// The equations are written in internal body frames (frames.hpp: z on the joint axis, DH-like where
// possible); inputs given in URDF link frames are transformed once, joint quantities need nothing.
// Transforms are applied in factored form, X_i = X_J(q_i) rot(E_T) xlt(r_T), through auxiliary
// variables: y_1 = F_m a_p, ..., y_{m-1} = F_2 y_{m-2} on the motion side, and z_1 = F_1^T f_i,
// ..., z_{m-1} = F_{m-1}^T z_{m-2} on the force side, each factor F a sparse 6x6 (a rotation or a
// translation) whose structural zeros and ones fold away. The worst-case pattern of D is the set
// of entries that are not the constant 0: an entry built from cos q, sin q and constants is zero
// for every q only when it folds to 0.
//
// Mimic joints (Body::mimic): the body keeps its (3a) and (3f) rows and its qdd (an unknown column
// when the master's is, else known through the master's input); its torque column and (3tau) row
// go, its f enters the master's (3tau) row times the multiplier, and a coupling row
// qdd_i - multiplier qdd_master = 0 keeps the system square. Positions and velocities read the
// master's inputs (q = multiplier q_master + offset). The program's q and qd inputs are numbered
// in the full model's slots; emit renumbers them to the independent coordinates.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "ir.hpp"
#include "nelu/model.hpp"
#include "problem.hpp"

namespace nelu {

enum class Quantity {
    LinkAcceleration, JointWrench, JointTorque, ExternalWrench, JointAcceleration, Auxiliary,
    Measurement,  ///< a sensor reading (input slots)
    ContactForce,      ///< a contact's force on the robot, constraint frame (Pinocchio's lambda_c)
    ContactImpulse,    ///< problem impulse: a contact's impulse on the robot, constraint frame
    ContactReference,  ///< a Baumgarte reference (input slots): a point's world position x y z, a 6-D contact's x y z qx qy qz qw
    JointVelocity,     ///< problem impulse: a post-impact joint velocity v+ (outputs)
};
const char* quantity_name(Quantity q);
/// "nx".."fz" for wrenches, "wx".."vz" for motion vectors.
const char* component_name(Quantity q, int comp);
/// Component k of a contact's force, impulse or reference slot: fx fy fz (point), nx .. fz (6d), x y z (reference).
const char* contact_component_name(const Contact& c, Quantity q, int k);

/// A column of D: one scalar unknown.
struct Column {
    Quantity quantity;
    int body;
    int comp;
    std::string label;  ///< e.g. "a[link3].wz", "tau[joint2]"
};

/// Coupling: qdd_i - multiplier qdd_master = 0 of a mimic joint whose acceleration is sought.
/// Contact: a rigid contact's constraint (its constrained acceleration, or velocity change, is zero).
enum class RowKind { Acceleration, Force, Torque, MotionAux, ForceAux, Measurement, Condition, Stationarity, Coupling, Contact };

/// A row of D: one scalar equation.
struct Row {
    RowKind kind;
    int body;
    int comp;
    std::string label;  ///< e.g. "(3a) link3 wz"
};

/// One factor of a body's transform from its parent, IR nodes of System::prog: rot(E) = [E 0; 0 E]
/// or xlt(r) = [1 0; -rx 1] (motion vectors).
struct TransformFactor {
    bool rotation = true;
    ir::Id E[3][3] = {};
    ir::Id r[3] = {};
};

/// What the structured derivative programs (derivatives.hpp) need of a body, in its internal frame:
/// X_i = F_{m-1} ... F_0 (`factors` in motion order: F_0 applied first), the joint's motion subspace
/// and velocity nodes per degree of freedom, the velocity-product acceleration c_i = v_i x S_i qd_i,
/// the known accelerations' input slots (-1: sought), and the constant inertia. A mimic joint's
/// body names its master body and multiplier (q = multiplier q_master + offset).
struct BodyKinematics {
    int parent = -1;
    int v_index = 0;
    bool mimic = false;
    int master = -1;
    double multiplier = 0;
    std::vector<TransformFactor> factors;
    std::vector<std::array<ir::Id, 6>> S;
    std::vector<ir::Id> qd;
    std::vector<int> qdd_input;
    std::array<ir::Id, 6> c{};
    Inertia<double> I{0, {{0, 0, 0}}, zero_mat3<double>()};
};

/// An input or output slot of the generated function.
struct Slot {
    Quantity quantity;
    int body;
    int comp;
    int column = -1;  ///< outputs: the column of D that holds it, or -1 for a combination:
    std::vector<std::pair<int, ir::Id>> terms;  ///< outputs: sum of coefficient * column ...
    ir::Id bias = -1;                           ///< ... plus this (when >= 0)
    int sensor = -1;  ///< Measurement inputs: index into Problem::sensors
    int rhs = 0;      ///< outputs: solution of b (0) or of extra right-hand side rhs - 1
    int column_of_b = -1;  ///< outputs of osim/iwim: which column of the result matrix (for comments)
    int row_of_result = -1;  ///< outputs of osim: which row of the result matrix (for comments)
    bool lambda = false;   ///< osim: an entry of Lambda, computed from the Lambda^-1 outputs (not solved)
    /// ExternalWrench: the link merged into `body` that carries it (Problem::link_wrenches), in its
    /// frame at its origin; empty for the body's own link.
    std::string link{};
    /// ContactForce, ContactImpulse, ContactReference: index into Problem::contacts.
    int contact = -1;
};

/// A rigid contact's unknowns and rows: its force (impulse) components in its Local frame (the
/// constraint frame's output is these rotated, for LocalWorldAligned) and its constraint rows,
/// one per component.
struct ContactBlock {
    int body = -1;
    std::vector<int> force, rows;
    /// A contact that reads a Baumgarte reference: auxiliary unknowns u = the reference (x y z) and
    /// their rows u - in = 0, so that the reference enters the constraint rows through entries of D
    /// (E_c u, with E_c the contact frame's orientation) and b stays affine in the inputs with
    /// constant coefficients (RightHandSide).
    std::vector<int> reference, reference_rows;
};

/// The columns and rows that belong to one body, for tree-aware orders.
struct BodyBlock {
    std::vector<int> a, f, joint;            ///< columns a_i, f_i, and qdd_i or tau_i (unknown one)
    std::vector<int> qdd, tau;               ///< the sought joint quantities (both when neither is known)
    std::vector<int> w;                      ///< unknown external wrench of its own link, per component (-1: exactly zero)
    std::vector<std::vector<int>> y, z;      ///< motion and force auxiliary columns, per step
    std::vector<int> row_a, row_f, row_tau;  ///< rows (3a), (3f), (3tau)
    std::vector<std::vector<int>> row_y, row_z;
    bool joint_is_qdd = false;               ///< the unknown joint quantity is qdd (tau known)
    /// A mimic joint: no tau column and no (3tau) row of its own (its f enters its master's (3tau)
    /// row); when qdd is sought, row_tau holds its coupling row, paired with qdd in `joint`.
    bool mimic = false;
};

/// The right-hand side b of D d + b = 0, affine in the solver's inputs: per row,
/// b = constant(q, qd) + sum coefficient * in[slot]. The builder adds to a row only a part in q and
/// qd, or a linear form in the inputs whose IR and coefficients one function makes together; each
/// addition updates the three views below at once, so that what the solver computes (`value`),
/// what the osim/iwim responses solve for (`input`) and what the analyzer evaluates agree.
struct RightHandSide {
    std::vector<ir::Id> value;     ///< per row: b as IR, the inputs as In nodes
    std::vector<ir::Id> constant;  ///< per row: b with the inputs at zero (when affine)
    std::vector<std::vector<std::pair<int, double>>> input;  ///< per row: (slot, coefficient) of each input term (when affine)
    /// Whether b is constant + input terms. Not with a 6-D contact's Baumgarte Kp, whose placement
    /// error is a function of its reference's quaternion (in value only); constant and input serve
    /// the responses (osim, iwim) and the sensors' consistency analysis, which have no contacts.
    bool affine = true;
};

struct System {
    ir::Program prog;
    std::vector<Column> cols;
    std::vector<Row> rows;
    std::vector<std::map<int, ir::Id>> entries;  ///< per row: column -> entry (never the constant 0)
    RightHandSide b;
    /// Extra right-hand sides (each per row) solved with the same factorization (osim, iwim).
    std::vector<std::vector<ir::Id>> rhs;
    std::vector<Slot> in, out;
    /// Per row: a sensor's measurement (weighted in least squares), with its variance; the other
    /// rows are exact.
    std::vector<bool> soft;
    std::vector<double> variance;
    bool classical = true;  ///< every body has the classical block structure (tree orders apply)
    double damping = 0;     ///< the contacts' damping mu of the problem spec (0: none)
    bool allow_special_singularities = false;  ///< Problem::allow_special_singularities
    /// osim with `lambda`: the size k of Lambda; the outputs are Lambda^-1 (k x k, row major), then
    /// Lambda (k x k), the latter computed by a static LDL^T of the former (run_schedule).
    int lambda_size = 0;
    /// osim and iwim: what each row or column of the result is, in words, indexed by Slot's
    /// row_of_result and column_of_b: iwim, B's columns ("tau elbow_joint", "force on tool0 at [0,
    /// 0, 0.1], fx (tool0's axes)"); osim, the point of each coordinate ("l_forearm at [0, 0,
    /// -0.45]"), its component in result_components (osim_label).
    std::vector<std::string> result_labels;
    std::vector<int> result_components;
    std::vector<BodyBlock> blocks;
    std::vector<ContactBlock> contacts;  ///< per Problem::contacts
    /// Per body whose joint carries a force/torque sensor that measures only some components: the
    /// sensor and the components it leaves out, for the diagnosis of what is not determined.
    std::map<int, std::string> partial_force_torque;
    /// Forward dynamics of the tree with rigid contacts (problem fd with contacts): the classical
    /// block structure plus the contacts' columns and rows, so that the structured derivatives of
    /// inverse dynamics apply with the contact rows' own partial derivatives (schedule.cpp).
    bool contact_tree = false;
    /// a_0, the world's acceleration in the (3a) rows of the root bodies: -a_g (zero for impulse).
    std::array<double, 6> world_acceleration{};
    /// Kinematics nodes kept for the verifier and comments: per body v_i (6).
    std::vector<std::vector<ir::Id>> velocity;
    /// Per body: transforms, subspaces and inertias in the internal frames (derivatives.hpp).
    std::vector<BodyKinematics> kinematics;
    int n() const { return static_cast<int>(cols.size()); }
    int m() const { return static_cast<int>(rows.size()); }
    long nnz() const;
};

/// Nori's system for `problem` on `model`: square, or with more equations than unknowns when the
/// sensors are redundant (then solved in the weighted least-squares sense: the exact rows are
/// eliminated by constant pivots and the remaining measurement rows by their normal equations,
/// see order.hpp and schedule.hpp).
System run_system(const Model& model, const Problem& problem);

/// The name of component `comp` of a sensor's reading, as the header and the manifest give it:
/// x, y, z (accelerometer); nx ... fz (wrenches); a joint sensor's `value`, or its joint's
/// components (wx ... vz) for several degrees of freedom.
const char* measurement_component(const Sensor& s, const Model& m, int comp);

/// osim: coordinate k of the points, as an acceleration ("l_forearm at [0, 0, -0.45], wx": a row of
/// Lambda^-1, a column of Lambda) or as a wrench ("..., nx": a column of Lambda^-1, a row of Lambda).
std::string osim_label(const System& sys, std::size_t k, bool wrench);

/// The rotation (body to parent) R[i][j] of a floating joint's unit quaternion inputs (x, y, z, w)
/// as nodes of P; built the same way wherever it is needed, so hash-consing makes them one.
std::array<std::array<ir::Id, 3>, 3> quaternion_rotation(ir::Program& P, ir::Id x, ir::Id y, ir::Id z, ir::Id w);
/// The same with `two` in place of the constant 2: 2 / |q|^2 gives the rotation of q / |q|.
std::array<std::array<ir::Id, 3>, 3> quaternion_rotation(ir::Program& P, ir::Id x, ir::Id y, ir::Id z, ir::Id w, ir::Id two);



}  // namespace nelu
