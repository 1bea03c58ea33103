// analyze.cpp: see analyze.hpp.
#include "analyze.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>
#include <random>
#include <set>

#include <btf.h>
#include <fmt/format.h>
#include <umfpack.h>
#include <Eigen/SparseCholesky>

#include "diagnostics.hpp"
#include "nelu/state.hpp"

namespace nelu {
namespace {

/// `cols` with what a user chooses to leave unknown first (contact wrenches, joint accelerations),
/// then what follows from them (torques, link accelerations, joint wrenches), auxiliaries last.
std::vector<int> by_kind(const System& sys, const std::vector<int>& cols) {
    std::vector<int> sorted = cols;
    auto rank = [&](int c) {
        switch (sys.cols[c].quantity) {
            case Quantity::ExternalWrench: return 0;
            case Quantity::JointAcceleration: return 1;
            case Quantity::JointTorque: return 2;
            case Quantity::LinkAcceleration: return 3;
            case Quantity::JointWrench: return 4;
            default: return 5;
        }
    };
    std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) { return rank(a) < rank(b); });
    return sorted;
}

/// Up to `limit` labels, in by_kind order.
std::string name_list(const System& sys, const std::vector<int>& cols, std::size_t limit = 12) {
    const std::vector<int> sorted = by_kind(sys, cols);
    std::string s;
    for (std::size_t k = 0; k < sorted.size() && k < limit; ++k) s += (k ? ", " : "") + sys.cols[sorted[k]].label;
    if (sorted.size() > limit) s += fmt::format(" and {} more", sorted.size() - limit);
    return s;
}

/// Columns of the under-determined part: reachable from unmatched columns by alternating paths
/// (column -> row with an entry in it -> the column matched to that row).
std::vector<int> underdetermined_columns(const System& sys, const std::vector<int>& row_match) {
    const int n = sys.n(), m = sys.m();
    std::vector<std::vector<int>> col_rows(n);
    for (int r = 0; r < m; ++r)
        for (const auto& [c, v] : sys.entries[r]) col_rows[c].push_back(r);
    std::vector<bool> matched_col(n, false), seen(n, false);
    for (int r = 0; r < m; ++r)
        if (row_match[r] >= 0) matched_col[row_match[r]] = true;
    std::vector<int> stack, out;
    for (int c = 0; c < n; ++c)
        if (!matched_col[c]) stack.push_back(c), seen[c] = true;
    while (!stack.empty()) {
        int c = stack.back();
        stack.pop_back();
        out.push_back(c);
        for (int r : col_rows[c]) {
            int c2 = row_match[r];
            if (c2 >= 0 && !seen[c2]) seen[c2] = true, stack.push_back(c2);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// Rows of the over-determined part: reachable from unmatched rows (row -> column in it -> row
/// matched to that column).
std::vector<int> overdetermined_rows(const System& sys, const std::vector<int>& row_match) {
    const int n = sys.n(), m = sys.m();
    std::vector<int> col_match(n, -1);
    for (int r = 0; r < m; ++r)
        if (row_match[r] >= 0) col_match[row_match[r]] = r;
    std::vector<bool> seen(m, false);
    std::vector<int> stack, out;
    for (int r = 0; r < m; ++r)
        if (row_match[r] < 0) stack.push_back(r), seen[r] = true;
    while (!stack.empty()) {
        int r = stack.back();
        stack.pop_back();
        out.push_back(r);
        for (const auto& [c, v] : sys.entries[r]) {
            int r2 = col_match[c];
            if (r2 >= 0 && !seen[r2]) seen[r2] = true, stack.push_back(r2);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// Reciprocal condition estimate of D at one configuration (0 when UMFPACK finds it singular).
double umfpack_rcond(const Csc& A) {
    double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
    umfpack_di_defaults(control);
    void *sym = nullptr, *num = nullptr;
    int st = umfpack_di_symbolic(A.n, A.n, A.p.data(), A.i.data(), A.x.data(), &sym, control, info);
    if (st != UMFPACK_OK) return 0;
    st = umfpack_di_numeric(A.p.data(), A.i.data(), A.x.data(), sym, &num, control, info);
    umfpack_di_free_symbolic(&sym);
    double rcond = st == UMFPACK_OK ? info[UMFPACK_RCOND] : 0.0;
    if (num) umfpack_di_free_numeric(&num);
    return rcond;
}

/// What would determine an unknown, by kind.
std::string remedy(const System& sys, const Column& c) {
    switch (c.quantity) {
        case Quantity::ExternalWrench: return "a contact_wrench or load_cell sensor on the link (or 'zero:' for components known to vanish)";
        case Quantity::JointTorque: return "a joint_torque sensor (or the torque known under joints:)";
        case Quantity::JointAcceleration: return "a joint_acceleration measurement (or the acceleration known under joints:)";
        case Quantity::LinkAcceleration: return "an accelerometer, or a link_acceleration condition (rigid contact)";
        case Quantity::JointWrench: {
            const auto partial = sys.partial_force_torque.find(c.body);
            return partial == sys.partial_force_torque.end() ? "a force_torque sensor on the joint"
                                                             : "more components of the joint's force_torque sensor " + partial->second;
        }
        case Quantity::ContactForce:
        case Quantity::ContactImpulse:
            if (sys.damping > 0)
                return fmt::format("fewer contacts: these constrain motions the others already fix, so their forces are not unique, "
                                   "and the spec's 'damping: {:g}' is too small to make them so in double precision; drop the redundant "
                                   "contacts, or give a larger damping", sys.damping);
            return "fewer contacts: these constrain motions the others already fix (two contacts on one rigid body, more constraints "
                   "than the robot's joints can meet), so their forces are not unique; drop the redundant ones, or give 'damping: MU' "
                   "(Pinocchio's damped KKT) for the damped least-norm forces";
        default: return "a measurement of a physical quantity coupled to it";
    }
}

/// Physical columns that take part in the null space of a dense D (numerically singular).
std::vector<int> null_space_columns(const Eigen::MatrixXd& D) {
    Eigen::FullPivLU<Eigen::MatrixXd> lu(D);
    lu.setThreshold(1e-9);
    Eigen::MatrixXd K = lu.kernel();
    std::vector<int> out;
    if (K.cols() == 0 || K.norm() == 0) return out;
    for (int c = 0; c < K.rows(); ++c)
        if (K.row(c).cwiseAbs().maxCoeff() > 1e-8 * K.cwiseAbs().maxCoeff()) out.push_back(c);
    return out;
}

/// The contacts whose forces are among `cols` (by name, in spec order), as a line of the diagnosis:
/// the set the user has to change ("" when none is).
std::string contacts_involved(const System& sys, const std::vector<int>& cols) {
    const std::set<int> in(cols.begin(), cols.end());
    std::string s;
    for (const ContactBlock& k : sys.contacts) {
        if (std::none_of(k.force.begin(), k.force.end(), [&](int c) { return in.count(c) > 0; })) continue;
        const std::string& label = sys.cols[k.force.front()].label;  // lambda[NAME].fx
        const std::size_t a = label.find('['), b = label.find(']');
        s += (s.empty() ? "\n  dependent contacts: '" : ", '") + label.substr(a + 1, b - a - 1) + "'";
    }
    return s;
}

/// `special`: the loss of rank is at a special configuration only (allowed by the spec), where
/// what is not determined is a property of the configuration, not something to add to the spec.
std::string undetermined_message(const System& sys, const std::vector<int>& cols, bool special = false) {
    std::vector<int> physical;
    for (int c : cols)
        if (sys.cols[c].quantity != Quantity::Auxiliary) physical.push_back(c);
    std::string msg = "\n  not determined: " + name_list(sys, physical.empty() ? cols : physical);
    if (!sys.contacts.empty()) {
        // With contacts, sensors and unknown wrenches are refused: the contact set is what decides.
        // The joint wrenches a dependent contact set leaves open are those its forces leave open.
        int contact = -1;
        for (int c : physical)
            if (contact < 0 && (sys.cols[c].quantity == Quantity::ContactForce || sys.cols[c].quantity == Quantity::ContactImpulse)) contact = c;
        if (special)
            return msg + "\n  why: the contacts' constraints are dependent at this configuration (a kinematic singularity of the "
                         "constrained robot: a held arm at a singular pose, straight legs, parallel soles); the solver returns "
                         "NELU_STATUS_SMALL_PIVOT near it, and 'damping: MU' (Pinocchio's damped KKT) gives damped least-norm "
                         "forces there instead";
        if (contact >= 0) return msg + contacts_involved(sys, cols) + "\n  what would determine them: " + remedy(sys, sys.cols[contact]);
    }
    std::vector<std::string> seen;
    for (int c : by_kind(sys, physical)) {
        std::string r = remedy(sys, sys.cols[c]);
        if (std::find(seen.begin(), seen.end(), r) == seen.end()) seen.push_back(r);
    }
    for (const std::string& r : seen) msg += "\n  what would determine them: " + r;
    return msg;
}

/// The special configurations (every revolute joint at 0, pi/2, pi) then random ones.
std::vector<std::vector<double>> check_configurations(const Model& model, int count) {
    std::mt19937_64 rng(0x6e656c75);
    std::vector<std::vector<double>> out;
    for (int trial = 0; trial < count; ++trial) {
        std::vector<double> q = random_configuration(model, rng);
        if (trial < 3)
            for (const Body& b : model.bodies)
                if (b.type == JointType::Revolute) q[b.q_index] = trial * M_PI / 2;
        out.push_back(q);
    }
    return out;
}

const char* kConfigName[3] = {"every revolute joint at 0", "every revolute joint at pi/2", "every revolute joint at pi"};
std::string config_name(int k) { return k < 3 ? kConfigName[k] : fmt::format("random configuration {}", k - 3); }

/// After a loss of rank at configuration k: for a special one (k < 3), whether the random ones
/// (k >= 3) are regular, tested by `singular_at`, decides what to tell: the way out the user may
/// accept, or that the problem is singular everywhere.
template <class Singular>
std::string special_hint(int k, int count, Singular singular_at) {
    if (k >= 3) return {};
    for (int j = 3; j < count; ++j)
        if (singular_at(j))
            return fmt::format("\n  (singular at {} too: not only at special configurations)", config_name(j));
    return "\n  (the rank is full at random configurations: 'allow_singular_configurations: true' in the spec generates a "
           "solver that returns NELU_STATUS_SMALL_PIVOT near the singular configurations)";
}

/// Over-determined systems: exact equations (the rows that are not measurements) that are
/// combinations of one another at a random state must agree there. When a combination y of them
/// (y^T E = 0) has y^T b = 0 for suitable known inputs (b = b_0 + B_in in), it is a condition on
/// the inputs, which data from a consistent world meet (a balance that no unknown enters: the
/// horizontal forces of a robot on a slippery floor with every acceleration known). When it cannot
/// be met whatever the inputs (y^T b_0 outside the range of y^T B_in at a random position and
/// velocity), the equations conflict: say which.
/// `scaled`: decide on the equilibrated look alone (check_full_column_rank: D's rank at random
/// configurations was full only equilibrated, so the look at D as it comes saw dependences that
/// units made, and its residual threshold, set by the largest |b0|, could hide a true conflict).
void check_exact_consistency(const Model& model, const System& sys, const Equilibration* scaled = nullptr) {
    std::vector<int> exact;
    for (int r = 0; r < sys.m(); ++r)
        if (!sys.soft[r]) exact.push_back(r);
    const long me = static_cast<long>(exact.size()), nin = static_cast<long>(sys.in.size());
    std::optional<Equilibration> eq;  // for a second look at a conflict (formed at the first)
    // The rows that conflict at one look at E (exact rows, transposed), b0 and B: "" when none do,
    // or when E has full row rank (`independent`).
    auto conflict = [&](const Eigen::MatrixXd& Et, const Eigen::VectorXd& b0, const Eigen::MatrixXd& B, bool& independent) -> std::string {
        Eigen::FullPivLU<Eigen::MatrixXd> lu(Et);
        lu.setThreshold(1e-10);
        const Eigen::MatrixXd N = lu.kernel();  // y with y^T E = 0
        independent = lu.rank() == me || N.cols() == 0 || N.norm() == 0;
        if (independent) return {};
        const Eigen::MatrixXd M = N.transpose() * B;
        const Eigen::VectorXd r0 = N.transpose() * b0;
        const Eigen::VectorXd res = r0 - M * M.completeOrthogonalDecomposition().solve(r0);  // what no input can cancel
        const double scale = std::max(1.0, N.cwiseAbs().maxCoeff() * b0.cwiseAbs().maxCoeff());
        if (res.cwiseAbs().maxCoeff() <= 1e-8 * scale) return {};
        const Eigen::VectorXd y = N * res;  // the combination that conflicts
        std::string rows;
        int named = 0;
        for (long k = 0; k < me; ++k)
            if (std::abs(y(k)) > 1e-6 * y.cwiseAbs().maxCoeff() && named++ < 12) rows += (rows.empty() ? "" : ", ") + sys.rows[exact[static_cast<std::size_t>(k)]].label;
        return rows;
    };
    std::mt19937_64 rng(0x636f6e66);
    for (int trial = 0; trial < 2; ++trial) {
        const std::vector<double> q = random_configuration(model, rng);
        std::vector<double> qd(model.nv), in(std::max<std::size_t>(1, sys.in.size()), 0.0);
        std::uniform_real_distribution<double> u(-1, 1);
        for (double& v : qd) v = u(rng);
        const Eigen::MatrixXd D = dense_of(sys, q, qd);
        Eigen::MatrixXd Et(D.cols(), me);
        for (long k = 0; k < me; ++k) Et.col(k) = D.row(exact[static_cast<std::size_t>(k)]).transpose();
        // b at the inputs 0 (b.value there when b is not affine: a 6-D contact's placement error
        // against the reference at the origin, taken as fixed)
        const std::vector<ir::Id>& b_zero = sys.b.affine ? sys.b.constant : sys.b.value;
        const std::vector<double> b = sys.prog.evaluate(q.data(), qd.data(), in.data(), sys.prog.live_nodes(b_zero));
        Eigen::VectorXd b0(me);
        Eigen::MatrixXd B = Eigen::MatrixXd::Zero(me, std::max<long>(1, nin));
        for (long k = 0; k < me; ++k) {
            const int r = exact[static_cast<std::size_t>(k)];
            b0(k) = b[b_zero[r]];
            for (const auto& [slot, coef] : sys.b.input[r]) B(k, slot) += coef;
        }
        // The look with D equilibrated: R E C, R b0, R B (the same combinations, y = R y')
        auto equilibrated = [&](const Equilibration& e, bool& independent_scaled) {
            Eigen::MatrixXd Es = Et;
            Eigen::VectorXd bs = b0;
            Eigen::MatrixXd Bs = B;
            for (long k = 0; k < me; ++k) {
                const double rk = e.row[static_cast<std::size_t>(exact[static_cast<std::size_t>(k)])];
                for (long j = 0; j < Es.rows(); ++j) Es(j, k) *= rk * e.col[static_cast<std::size_t>(j)];
                bs(k) *= rk, Bs.row(k) *= rk;
            }
            return conflict(Es, bs, Bs, independent_scaled);
        };
        bool independent = false;
        const std::string rows = scaled ? equilibrated(*scaled, independent) : conflict(Et, b0, B, independent);
        if (independent) return;
        if (rows.empty()) continue;
        // A second look with D equilibrated: a conflict that only D's units made (a robot in grams
        // and centimetres) is none.
        if (!scaled) {
            if (!eq) eq = equilibration(model, sys);
            bool independent_scaled = false;
            if (eq->usable() && equilibrated(*eq, independent_scaled).empty()) continue;
        }
        throw IllPosedError(fmt::format("ill-posed: exact equations in conflict: {} cannot all hold at a random state, whatever the "
                                        "known quantities (a known link acceleration that its joints cannot give, say).\n  "
                                        "Know fewer of them, or measure one instead (a sensor's reading is fitted, not imposed)", rows));
    }
}

}  // namespace

std::string dependent_exact_rows(const System& sys, const std::vector<double>& q, const std::vector<double>& qd) {
    std::vector<int> exact;
    for (int r = 0; r < sys.m(); ++r)
        if (!sys.soft[r]) exact.push_back(r);
    const Eigen::MatrixXd D = dense_of(sys, q, qd);
    Eigen::MatrixXd Et(D.cols(), static_cast<long>(exact.size()));
    for (std::size_t k = 0; k < exact.size(); ++k) Et.col(static_cast<long>(k)) = D.row(exact[k]).transpose();
    Eigen::FullPivLU<Eigen::MatrixXd> lu(Et);
    lu.setThreshold(1e-9);
    const Eigen::MatrixXd N = lu.kernel();
    if (lu.rank() == Et.cols() || N.norm() == 0) return {};
    std::vector<int> rows;
    for (std::size_t k = 0; k < exact.size(); ++k)
        if (N.row(static_cast<long>(k)).cwiseAbs().maxCoeff() > 1e-8 * N.cwiseAbs().maxCoeff()) rows.push_back(exact[k]);
    auto rank = [&](int r) {  // what the user wrote first: conditions, then the equations of joints with known torques
        switch (sys.rows[r].kind) {
            case RowKind::Condition: return 0;
            case RowKind::Torque: return 1;
            case RowKind::Coupling: return 2;
            case RowKind::Force: return 3;
            case RowKind::Acceleration: return 4;
            default: return 5;
        }
    };
    std::stable_sort(rows.begin(), rows.end(), [&](int a, int b) { return rank(a) < rank(b); });
    std::string s;
    for (std::size_t k = 0; k < rows.size() && k < 8; ++k) s += (k ? ", " : "") + sys.rows[rows[k]].label;
    if (rows.size() > 8) s += fmt::format(" and {} more", rows.size() - 8);
    return s;
}

namespace {

/// Numeric rank of a dense D by column-pivoted QR (pivots within 1e-10 of the largest are zero).
int numeric_rank(const Eigen::MatrixXd& D) {
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(D);
    qr.setThreshold(1e-10);
    return static_cast<int>(qr.rank());
}

/// The numeric rank of D equilibrated (`eq`, formed when first needed), or -1 when the second look
/// is not taken (Equilibration::usable).
int equilibrated_rank(const Model& model, const System& sys, Eigen::MatrixXd D, std::optional<Equilibration>& eq) {
    if (!eq) eq = equilibration(model, sys);
    if (!eq->usable()) return -1;
    eq->apply(D);
    return numeric_rank(D);
}

}  // namespace

std::string rank_loss_at(const Model& model, const System& sys, const std::vector<double>& q, const std::vector<double>& qd) {
    const Eigen::MatrixXd D = dense_of(sys, q, qd);
    const int rank = numeric_rank(D);
    if (rank == D.cols()) return {};
    std::optional<Equilibration> eq;
    if (equilibrated_rank(model, sys, D, eq) == D.cols()) return {};  // regular once equilibrated: a matter of units
    return fmt::format("numeric rank {} for {} unknowns.", rank, D.cols()) + undetermined_message(sys, null_space_columns(D));
}

std::string check_full_column_rank(const Model& model, const System& sys, bool* equilibrated) {
    Csc A = pattern_of(sys);
    const int n = A.n, m = A.m;
    std::vector<int> match(m), work(5 * n);
    double w = 0;
    const int rank = btf_maxtrans(m, n, A.p.data(), A.i.data(), 0.0, &w, match.data(), work.data());
    if (rank < n)
        throw IllPosedError(fmt::format("ill-posed: {} equations determine at most {} of the {} unknowns.", m, rank, n) +
                            undetermined_message(sys, underdetermined_columns(sys, match)));
    if (n > 4000) return {};  // dense checks beyond this size cost more than they tell
    check_exact_consistency(model, sys);
    const auto qs = check_configurations(model, 6);
    const std::vector<double> qd(model.nv, 0.0);
    std::optional<Equilibration> eq;  // formed at the first loss of rank
    bool rescued = false;  // full rank at a random configuration only equilibrated
    auto rank_at = [&](std::size_t k) {
        const Eigen::MatrixXd D = dense_of(sys, qs[k], qd);
        const int rank = numeric_rank(D);
        if (rank == n) return rank;
        const int scaled = equilibrated_rank(model, sys, D, eq);
        rescued = rescued || (k >= 3 && scaled == n);
        return std::max(rank, scaled);
    };
    std::string special;
    for (std::size_t k = 0; k < qs.size(); ++k) {
        if (const int rank_k = rank_at(k); rank_k < n) {
            const Eigen::MatrixXd D = dense_of(sys, qs[k], qd);
            std::string msg = fmt::format("the equations have full structural rank but lose rank at {} (numeric rank {} for {} unknowns).",
                                          config_name(static_cast<int>(k)), rank_k, n) + undetermined_message(sys, null_space_columns(D));
            if (k < 3 && sys.allow_special_singularities) {
                if (special.empty()) special = msg;
                continue;
            }
            throw IllPosedError("ill-posed: " + msg + special_hint(static_cast<int>(k), static_cast<int>(qs.size()),
                                                                   [&](int j) { return rank_at(static_cast<std::size_t>(j)) < n; }));
        }
    }
    if (rescued) {
        // The exact rows' consistency was judged on D as it comes, whose rank only the equilibrated
        // look found full: judged again equilibrated (a true conflict in milligrams and millimetres
        // hid under a threshold set by the Newton rows' m g)
        check_exact_consistency(model, sys, &*eq);
        if (equilibrated) *equilibrated = true;
    }
    return special;
}

namespace {

}  // namespace

Csc pattern_of(const System& sys) {
    Csc A;
    A.n = sys.n(), A.m = sys.m();
    std::vector<int> count(A.n + 1, 0);
    for (const auto& row : sys.entries)
        for (const auto& [c, v] : row) ++count[c + 1];
    A.p.assign(A.n + 1, 0);
    for (int c = 0; c < A.n; ++c) A.p[c + 1] = A.p[c] + count[c + 1];
    A.i.resize(A.p[A.n]);
    std::vector<int> next(A.p.begin(), A.p.end() - 1);
    for (int r = 0; r < A.m; ++r)  // rows in increasing order: row indices come out sorted
        for (const auto& [c, v] : sys.entries[r]) A.i[next[c]++] = r;
    return A;
}

Csc values_of(const System& sys, const std::vector<double>& q, const std::vector<double>& qd) {
    Csc A = pattern_of(sys);
    std::vector<ir::Id> roots;
    for (const auto& row : sys.entries)
        for (const auto& [c, v] : row) roots.push_back(v);
    std::vector<double> in(std::max<std::size_t>(1, sys.in.size()), 0.0);  // D does not depend on them
    std::vector<double> val = sys.prog.evaluate(q.data(), qd.data(), in.data(), sys.prog.live_nodes(roots));
    A.x.resize(A.i.size());
    std::vector<int> next(A.p.begin(), A.p.end() - 1);
    for (int r = 0; r < A.m; ++r)
        for (const auto& [c, v] : sys.entries[r]) A.x[next[c]++] = val[v];
    return A;
}

Equilibration equilibration(const Model& model, const System& sys) {
    Equilibration eq;
    eq.row.assign(static_cast<std::size_t>(sys.m()), 1.0), eq.col.assign(static_cast<std::size_t>(sys.n()), 1.0);
    // max |D_ij| over the random configurations of the checks (check_configurations' last three)
    const auto qs = check_configurations(model, 6);
    const std::vector<double> qd(model.nv, 0.0);
    Csc M = pattern_of(sys);
    M.x.assign(M.i.size(), 0.0);
    for (std::size_t k = 3; k < qs.size(); ++k) {
        const Csc A = values_of(sys, qs[k], qd);
        for (std::size_t e = 0; e < A.x.size(); ++e)
            if (std::isfinite(A.x[e])) M.x[e] = std::max(M.x[e], std::abs(A.x[e]));
    }
    // Curtis and Reid's scaling: the row and column logarithms r, c that bring the entries' log2
    // magnitudes l_ij closest to 0 in least squares, min sum (l_ij + r_i + c_j)^2, whose normal
    // equations are the signless Laplacian of D's bipartite graph (rows then columns), made
    // definite by a small ridge that fixes the free shift (r + t, c - t). A robot scaled in mass
    // and length is R0 D C0, whose r and c shift by log R0 and log C0 exactly. An entry far below
    // 1 after the fit is a number that no units explain (cos 1.5707963 = 2.7e-8 of an exporter's
    // quarter turn): it pulls its row and column up by a share of its distance and the ordinary
    // entries beside it above 1, so it is left out and the fit made again (entries below 2^-10,
    // six rounds at most; an entry above the fit is kept, and capped below).
    const int m = sys.m(), n = sys.n();
    std::vector<bool> used(M.x.size());
    for (std::size_t e = 0; e < M.x.size(); ++e) used[e] = M.x[e] > 0;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(m + n);
    for (int round = 0;; ++round) {
        std::vector<Eigen::Triplet<double>> t;
        Eigen::VectorXd rhs = Eigen::VectorXd::Zero(m + n), degree = Eigen::VectorXd::Zero(m + n);
        for (int c = 0; c < n; ++c)
            for (int e = M.p[c]; e < M.p[c + 1]; ++e) {
                if (!used[static_cast<std::size_t>(e)]) continue;
                const double l = std::log2(M.x[e]);
                const int r = M.i[e];
                rhs(r) -= l, rhs(m + c) -= l, degree(r) += 1, degree(m + c) += 1;
                t.emplace_back(r, m + c, 1.0), t.emplace_back(m + c, r, 1.0);
            }
        for (int k = 0; k < m + n; ++k) t.emplace_back(k, k, degree(k) + 1e-6);
        Eigen::SparseMatrix<double> L(m + n, m + n);
        L.setFromTriplets(t.begin(), t.end());
        Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt(L);
        if (ldlt.info() != Eigen::Success) return eq.lo = 0, eq;  // (cannot happen: L is definite) unusable
        x = ldlt.solve(rhs);
        if (round == 5) break;
        bool dropped = false;
        for (int c = 0; c < n; ++c)
            for (int e = M.p[c]; e < M.p[c + 1]; ++e)
                if (used[static_cast<std::size_t>(e)] && std::log2(M.x[e]) + x(M.i[e]) + x(m + c) < -10)
                    used[static_cast<std::size_t>(e)] = false, dropped = true;
        if (!dropped) break;
    }
    eq.lo = INFINITY, eq.hi = 0;  // the entries that units explain (those the fit kept)
    for (std::size_t e = 0; e < M.x.size(); ++e)
        if (used[e]) eq.lo = std::min(eq.lo, M.x[e]), eq.hi = std::max(eq.hi, M.x[e]);
    if (!eq.usable()) return eq;
    // Powers of two (floor: half-integers round alike everywhere), then no scaled entry above 2:
    // each row over 2 divided by about the square root of its largest, then each column over 2 by
    // its largest (after which every entry is below 2)
    std::vector<long> r(static_cast<std::size_t>(m)), c(static_cast<std::size_t>(n));
    for (int k = 0; k < m; ++k) r[static_cast<std::size_t>(k)] = static_cast<long>(std::floor(x(k) + 0.5));
    for (int k = 0; k < n; ++k) c[static_cast<std::size_t>(k)] = static_cast<long>(std::floor(x(m + k) + 0.5));
    std::vector<long> le(M.x.size(), 0);
    for (std::size_t e = 0; e < M.x.size(); ++e)
        if (M.x[e] > 0) le[e] = std::ilogb(M.x[e]);  // |D_ij| in [2^le, 2^(le+1))
    std::vector<long> rmax(r.size(), LONG_MIN), cmax(c.size(), LONG_MIN);
    for (int j = 0; j < n; ++j)
        for (int e = M.p[j]; e < M.p[j + 1]; ++e)
            if (M.x[e] > 0) rmax[M.i[e]] = std::max(rmax[M.i[e]], le[e] + r[M.i[e]] + c[j]);
    for (std::size_t k = 0; k < r.size(); ++k)
        if (rmax[k] > 0) r[k] -= (rmax[k] + 1) / 2;
    for (int j = 0; j < n; ++j)
        for (int e = M.p[j]; e < M.p[j + 1]; ++e)
            if (M.x[e] > 0) cmax[j] = std::max(cmax[j], le[e] + r[M.i[e]] + c[j]);
    for (std::size_t k = 0; k < c.size(); ++k)
        if (cmax[k] > 0) c[k] -= cmax[k];
    for (int k = 0; k < m; ++k) eq.row[static_cast<std::size_t>(k)] = std::ldexp(1.0, static_cast<int>(r[static_cast<std::size_t>(k)]));
    for (int k = 0; k < n; ++k) eq.col[static_cast<std::size_t>(k)] = std::ldexp(1.0, static_cast<int>(c[static_cast<std::size_t>(k)]));
    return eq;
}

void Equilibration::apply(Csc& A) const {
    for (int c = 0; c < A.n; ++c)
        for (int e = A.p[c]; e < A.p[c + 1]; ++e) A.x[e] *= row[A.i[e]] * col[c];
}

void Equilibration::apply(Eigen::MatrixXd& D) const {
    for (long c = 0; c < D.cols(); ++c)
        for (long r = 0; r < D.rows(); ++r) D(r, c) *= row[r] * col[c];
}

double umfpack_flops(const Model& model, const System& sys) {
    std::mt19937_64 rng(0x666c6f70);
    std::vector<double> q = random_configuration(model, rng), qd(model.nv, 0.0);
    Csc A = values_of(sys, q, qd);
    if (sys.m() != sys.n()) {  // weighted least squares: the augmented system [Sigma D; D^T 0] (exact rows: Sigma_ii = 0)
        const int m = A.m, n = A.n, N = m + n;
        std::vector<std::vector<std::pair<int, double>>> cols(N);
        for (int r = 0; r < m; ++r)
            if (sys.soft[r]) cols[r].push_back({r, sys.variance[r]});
        for (int c = 0; c < n; ++c)
            for (int k = A.p[c]; k < A.p[c + 1]; ++k) {
                cols[m + c].push_back({A.i[k], A.x[k]});  // D in the upper right
                cols[A.i[k]].push_back({m + c, A.x[k]});  // D^T in the lower left
            }
        Csc K;
        K.n = K.m = N;
        K.p.assign(N + 1, 0);
        for (int c = 0; c < N; ++c) {
            std::sort(cols[c].begin(), cols[c].end());
            for (const auto& [r, x] : cols[c]) K.i.push_back(r), K.x.push_back(x);
            K.p[c + 1] = static_cast<int>(K.i.size());
        }
        A = std::move(K);
    }
    double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
    umfpack_di_defaults(control);
    void *sym = nullptr, *num = nullptr;
    int st = umfpack_di_symbolic(A.n, A.n, A.p.data(), A.i.data(), A.x.data(), &sym, control, info);
    if (st >= 0) st = umfpack_di_numeric(A.p.data(), A.i.data(), A.x.data(), sym, &num, control, info);
    if (sym) umfpack_di_free_symbolic(&sym);
    if (num) umfpack_di_free_numeric(&num);
    if (st < 0) return -1;  // a warning (a singular augmented system: dependent exact rows) still counts
    return info[UMFPACK_FLOPS] + 2 * (info[UMFPACK_LNZ] + info[UMFPACK_UNZ]);
}

Eigen::MatrixXd dense_of(const System& sys, const std::vector<double>& q, const std::vector<double>& qd) {
    Csc A = values_of(sys, q, qd);
    Eigen::MatrixXd D = Eigen::MatrixXd::Zero(A.m, A.n);
    for (int c = 0; c < A.n; ++c)
        for (int k = A.p[c]; k < A.p[c + 1]; ++k) D(A.i[k], c) = A.x[k];
    return D;
}

Analysis run_analyze(const Model& model, const System& sys) {
    if (sys.m() < sys.n()) {
        Csc A = pattern_of(sys);
        std::vector<int> match(A.m), work(5 * A.n);
        double w = 0;
        btf_maxtrans(A.m, A.n, A.p.data(), A.i.data(), 0.0, &w, match.data(), work.data());
        throw IllPosedError(fmt::format("ill-posed: {} equations for {} unknowns: at least {} more measured or known quantit{} "
                                        "needed.", sys.m(), sys.n(), sys.n() - sys.m(), sys.n() - sys.m() == 1 ? "y is" : "ies are") +
                            undetermined_message(sys, underdetermined_columns(sys, match)));
    }
    if (sys.m() > sys.n()) throw std::logic_error("run_analyze: an over-determined system is augmented first");
    Analysis an;
    an.n = sys.n(), an.nnz = sys.nnz();
    Csc A = pattern_of(sys);
    const int n = A.n;
    std::vector<int> match(n), work(5 * n);
    double w = 0;
    an.structural_rank = btf_maxtrans(n, n, A.p.data(), A.i.data(), 0.0, &w, match.data(), work.data());
    if (an.structural_rank < n) {
        std::vector<int> under = underdetermined_columns(sys, match);
        std::vector<int> over = overdetermined_rows(sys, match);
        std::string msg = fmt::format("ill-posed: the structural rank of D is {} for {} unknowns.", an.structural_rank, n) +
                          undetermined_message(sys, under);
        if (!over.empty()) {
            std::string rows;
            for (std::size_t k = 0; k < over.size() && k < 12; ++k) rows += (k ? ", " : "") + sys.rows[over[k]].label;
            msg += "\n  equations in surplus (more than the unknowns they involve: there the measurements or conditions repeat "
                   "what the other equations fix, while the quantities above stay open): " + rows;
        }
        throw IllPosedError(msg);
    }
    an.btf_P.resize(n), an.btf_Q.resize(n), an.btf_R.resize(n + 1);
    int nmatch = 0;
    an.blocks = btf_order(n, A.p.data(), A.i.data(), 0.0, &w, an.btf_P.data(), an.btf_Q.data(), an.btf_R.data(), &nmatch, work.data());
    for (int b = 0; b < an.blocks; ++b) an.largest_block = std::max(an.largest_block, an.btf_R[b + 1] - an.btf_R[b]);
    an.triangular = an.blocks == n;
    // Numeric rank: the zero configuration, multiples of pi/2, and random ones.
    an.min_rcond = INFINITY;
    const auto qs = check_configurations(model, 6);
    const std::vector<double> qd(model.nv, 0.0);
    std::optional<Equilibration> eq;  // formed at the first small condition
    auto rcond_at = [&](std::size_t k) {
        Csc A = values_of(sys, qs[k], qd);
        const double rc = umfpack_rcond(A);
        if (rc > 1e-14) return rc;
        if (!eq) eq = equilibration(model, sys);
        if (!eq->usable()) return rc;
        eq->apply(A);
        const double scaled = umfpack_rcond(A);
        an.equilibrated = an.equilibrated || (k >= 3 && scaled > 1e-14);
        return std::max(rc, scaled);
    };
    for (std::size_t trial = 0; trial < qs.size(); ++trial) {
        const double rc = rcond_at(trial);
        an.min_rcond = std::min(an.min_rcond, rc);
        ++an.numeric_configs;
        if (!(rc > 1e-14)) {
            std::string msg = fmt::format("D is structurally regular but numerically singular at {} (reciprocal "
                                          "condition {:.3g})", config_name(static_cast<int>(trial)), rc);
            if (n <= 4000)
                msg += "." + undetermined_message(sys, null_space_columns(dense_of(sys, qs[trial], qd)), trial < 3 && sys.allow_special_singularities);
            else msg += "; a joint may carry no inertia";
            if (eq && !eq->usable())
                msg += fmt::format("\n  (D's entries that its units explain range from {:.3g} to {:.3g} at random configurations, beyond 1e-19 to 1e19, where "
                                   "the products of two stay in float's range: D is judged as it comes, in the robot's units)", eq->lo, eq->hi);
            if (trial < 3 && sys.allow_special_singularities) {
                if (an.special_singularity.empty()) an.special_singularity = msg;
                continue;
            }
            throw IllPosedError("ill-posed: " + msg + special_hint(static_cast<int>(trial), static_cast<int>(qs.size()),
                                                                   [&](int j) { return !(rcond_at(static_cast<std::size_t>(j)) > 1e-14); }));
        }
    }
    return an;
}

}  // namespace nelu
