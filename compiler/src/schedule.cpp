// schedule.cpp: see schedule.hpp.
#include "schedule.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>

#include "derivatives.hpp"
#include "diagnostics.hpp"
#include "transfers.hpp"

namespace nelu {
namespace {

using ir::Id;

/// Modified Gram-Schmidt A = Q R of the columns of A (all of one length), in the IR. Its pivots
/// r_jj are norms: positive whenever A has full column rank, so no pivot can cross zero.
struct GramQr {
    std::vector<std::vector<Id>> Q;  ///< Q[j][a]: column j (normalized), row a
    std::vector<std::vector<Id>> R;  ///< R[j][l] for l >= j
    std::vector<Id> Rinv;            ///< 1 / r_jj, shared by the columns and every right-hand side
};

/// Factors the columns `A`; returns the first column that is structurally a combination of the
/// ones before it (its r_jj folds to zero), or -1.
int gram_qr(ir::Program& P, ir::ZeroTest& zt, std::vector<std::vector<Id>> A, GramQr& g) {
    const int k = static_cast<int>(A.size());
    g.Q = std::move(A);
    g.R.assign(k, std::vector<Id>(k, P.zero()));
    g.Rinv.assign(k, -1);
    for (int j = 0; j < k; ++j) {
        std::vector<Id>& qj = g.Q[j];
        g.R[j][j] = P.sqrt(P.dot(qj, qj));
        if (g.R[j][j] == P.zero()) return j;
        g.Rinv[j] = P.div(P.one(), g.R[j][j]);
        for (Id& e : qj) e = P.mul(e, g.Rinv[j]);
        for (int l = j + 1; l < k; ++l) {
            g.R[j][l] = P.dot(qj, g.Q[l]);
            if (g.R[j][l] == P.zero() || zt.is_zero(P, g.R[j][l])) {
                g.R[j][l] = P.zero();
                continue;
            }
            for (std::size_t a = 0; a < qj.size(); ++a) g.Q[l][a] = P.sub(g.Q[l][a], P.mul(g.R[j][l], qj[a]));
        }
    }
    return -1;
}

/// The least-squares solution of A x = v from gram_qr's factors: the same Gram-Schmidt steps on v
/// (Bjorck 1967: backward stable, without squaring the condition number), then R x = t.
std::vector<Id> gram_solve(ir::Program& P, const GramQr& g, std::vector<Id> v) {
    const int k = static_cast<int>(g.Q.size());
    std::vector<Id> t(k), x(k);
    for (int j = 0; j < k; ++j) {
        t[j] = P.dot(g.Q[j], v);
        for (std::size_t a = 0; a < v.size(); ++a)
            if (g.Q[j][a] != P.zero()) v[a] = P.sub(v[a], P.mul(t[j], g.Q[j][a]));
    }
    for (int j = k - 1; j >= 0; --j) {
        Id xj = t[j];
        for (int l = j + 1; l < k; ++l) xj = P.sub(xj, P.mul(g.R[j][l], x[l]));
        x[j] = P.mul(xj, g.Rinv[j]);
    }
    return x;
}

/// The trailing block's factors (see Tail).
struct TailFactors {
    bool constrained = false;
    std::vector<int> exact, soft;  ///< constrained: positions in Tail::rows
    std::vector<Id> sw;            ///< sqrt of the weights: per row (plain), per measurement (constrained)
    GramQr block;                  ///< plain: W^1/2 B; direct: the reduced W^1/2 S^; null space: the stacked matrix
    // direct elimination
    std::vector<int> other;        ///< positions in Tail::cols of the columns x_N (not in the basis)
    GramQr basis;                  ///< E_B = Q_B R_B
    std::vector<std::vector<Id>> EN;  ///< Q_B^T E_N (basis x other)
    std::vector<std::vector<Id>> G;   ///< S_B R_B^-1 (measurements x basis)
    // null space
    GramQr constraint;                ///< E^T = Q1^T R1 (Q1 with orthonormal rows)
    std::vector<std::vector<Id>> SQ;  ///< S Q1^T (measurements x exact rows)
};

/// Column j of a row-major matrix.
std::vector<Id> column(const std::vector<std::vector<Id>>& M, int j) {
    std::vector<Id> c;
    for (const std::vector<Id>& row : M) c.push_back(row[static_cast<std::size_t>(j)]);
    return c;
}

/// The trailing block's factors from the active matrix `lu` leaves (see Tail), its pivots appended to
/// out.pivots; false (with `why`) when the block is structurally rank deficient.
bool factor_tail(ir::Program& P, ir::ZeroTest& zt, const System& sys, const SparseLu& lu, const Tail& tail, TailFactors& tf,
                 Factorization& out, std::string& why) {
    const int kb = static_cast<int>(tail.cols.size()), rb = static_cast<int>(tail.rows.size());
    for (int a = 0; a < rb; ++a) (!tail.weights.empty() && tail.weights[a] == 0 ? tf.exact : tf.soft).push_back(a);
    tf.constrained = !tf.exact.empty() && !tf.soft.empty();
    auto deficient = [&](const char* what, int j) {
        why = fmt::format("the trailing {}x{} block's {} is structurally rank deficient at {}", rb, kb, what, sys.cols[tail.cols[j]].label);
        return false;
    };
    auto pivot = [&](int row, int col, Id value, PivotKind kind) {
        out.pivots.push_back({{tail.rows[row], tail.cols[col]}, value, P.is_const(value) ? PivotKind::Constant : kind, 0});
    };
    auto weighted = [&](Id sw, Id v) { return v == P.zero() ? v : P.mul(sw, v); };
    if (!tf.constrained) {  // W^1/2 B, column by column (weights 1 for a square block)
        for (int a = 0; a < rb; ++a) tf.sw.push_back(P.constant(std::sqrt(tail.weights.empty() || tail.weights[a] == 0 ? 1.0 : tail.weights[a])));
        std::vector<std::vector<Id>> B(kb, std::vector<Id>(rb));
        for (int j = 0; j < kb; ++j)
            for (int a = 0; a < rb; ++a) B[j][a] = weighted(tf.sw[a], lu.entry(tail.rows[a], tail.cols[j]));
        if (const int j = gram_qr(P, zt, std::move(B), tf.block); j >= 0) return deficient("matrix", j);
        for (int j = 0; j < kb; ++j) pivot(std::min(j, rb - 1), j, tf.block.R[j][j], PivotKind::Gram);
        out.nnz_L += static_cast<long>(rb) * kb;
        out.nnz_U += static_cast<long>(kb) * (kb + 1) / 2;
        return true;
    }
    const int p = static_cast<int>(tf.exact.size()), s = static_cast<int>(tf.soft.size());
    std::vector<std::vector<Id>> E(p, std::vector<Id>(kb)), S(s, std::vector<Id>(kb));  // row-major
    for (int i = 0; i < p; ++i)
        for (int j = 0; j < kb; ++j) E[i][j] = lu.entry(tail.rows[tf.exact[i]], tail.cols[j]);
    for (int a = 0; a < s; ++a) {
        tf.sw.push_back(P.constant(std::sqrt(tail.weights[tf.soft[a]])));
        for (int j = 0; j < kb; ++j) S[a][j] = lu.entry(tail.rows[tf.soft[a]], tail.cols[j]);
    }
    if (!tail.nullspace) {  // direct elimination through the basis columns
        const int r = static_cast<int>(tail.basis.size());
        std::vector<std::vector<Id>> EB;
        for (int j : tail.basis) EB.push_back(column(E, j));
        if (const int b = gram_qr(P, zt, std::move(EB), tf.basis); b >= 0) return deficient("exact rows", tail.basis[b]);
        for (int b = 0; b < r; ++b) pivot(tf.exact[std::min(b, p - 1)], tail.basis[b], tf.basis.R[b][b], PivotKind::Validated);
        for (int j = 0; j < kb; ++j)
            if (std::find(tail.basis.begin(), tail.basis.end(), j) == tail.basis.end()) tf.other.push_back(j);
        const int nN = static_cast<int>(tf.other.size());
        tf.EN.assign(r, std::vector<Id>(nN));
        for (int b = 0; b < r; ++b)
            for (int c = 0; c < nN; ++c) tf.EN[b][c] = P.dot(tf.basis.Q[b], column(E, tf.other[c]));
        tf.G.assign(s, std::vector<Id>(r));  // G R_B = S_B
        for (int a = 0; a < s; ++a)
            for (int b = 0; b < r; ++b) {
                Id v = S[a][tail.basis[b]];
                for (int l = 0; l < b; ++l) v = P.sub(v, P.mul(tf.G[a][l], tf.basis.R[l][b]));
                tf.G[a][b] = P.mul(v, tf.basis.Rinv[b]);
            }
        std::vector<std::vector<Id>> M(nN, std::vector<Id>(s));  // W^1/2 (S_N - G Q_B^T E_N), column by column
        for (int c = 0; c < nN; ++c)
            for (int a = 0; a < s; ++a) M[c][a] = weighted(tf.sw[a], P.sub(S[a][tf.other[c]], P.dot(tf.G[a], column(tf.EN, c))));
        if (const int c = gram_qr(P, zt, std::move(M), tf.block); c >= 0) return deficient("reduced least-squares matrix", tf.other[c]);
        for (int c = 0; c < nN; ++c) pivot(tf.soft[std::min(c, s - 1)], tf.other[c], tf.block.R[c][c], PivotKind::Gram);
        out.nnz_L += static_cast<long>(p) * r + static_cast<long>(s) * nN;
        out.nnz_U += static_cast<long>(r) * (r + 1) / 2 + static_cast<long>(r) * nN + static_cast<long>(nN) * (nN + 1) / 2;
        return true;
    }
    // the null-space method: E^T = Q1^T R1
    if (const int i = gram_qr(P, zt, E, tf.constraint); i >= 0) {
        why = fmt::format("the exact rows of the trailing {}x{} block are structurally dependent at {}", rb, kb, sys.rows[tail.rows[tf.exact[i]]].label);
        return false;
    }
    for (int i = 0; i < p; ++i) pivot(tf.exact[i], std::min(i, kb - 1), tf.constraint.R[i][i], PivotKind::Constraint);
    const std::vector<std::vector<Id>>& Q1 = tf.constraint.Q;  // p rows of length kb
    tf.SQ.assign(s, std::vector<Id>(p));
    for (int a = 0; a < s; ++a)
        for (int i = 0; i < p; ++i) tf.SQ[a][i] = P.dot(S[a], Q1[i]);
    std::vector<std::vector<Id>> M(kb, std::vector<Id>(s + p));  // [W^1/2 S (I - Q1^T Q1); Q1], column by column
    for (int j = 0; j < kb; ++j) {
        const std::vector<Id> q1j = column(Q1, j);
        for (int a = 0; a < s; ++a) M[j][a] = weighted(tf.sw[a], P.sub(S[a][j], P.dot(tf.SQ[a], q1j)));
        for (int i = 0; i < p; ++i) M[j][s + i] = q1j[i];
    }
    if (const int j = gram_qr(P, zt, std::move(M), tf.block); j >= 0) return deficient("reduced least-squares matrix", j);
    for (int j = 0; j < kb; ++j) pivot(tf.soft[std::min(j, s - 1)], j, tf.block.R[j][j], PivotKind::Gram);
    out.nnz_L += static_cast<long>(p) * kb + static_cast<long>(s + p) * kb;
    out.nnz_U += static_cast<long>(p) * (p + 1) / 2 + static_cast<long>(kb) * (kb + 1) / 2;
    return true;
}

/// x over the block's columns from y (row space) by the factors of factor_tail.
void solve_tail(ir::Program& P, const Tail& tail, const TailFactors& tf, const std::vector<Id>& y, std::vector<Id>& x) {
    const int kb = static_cast<int>(tail.cols.size()), s = static_cast<int>(tf.soft.size());
    std::vector<Id> sol(kb);
    if (!tf.constrained) {
        std::vector<Id> v;
        for (std::size_t a = 0; a < tail.rows.size(); ++a) v.push_back(P.mul(tf.sw[a], y[tail.rows[a]]));
        sol = gram_solve(P, tf.block, v);
    } else if (!tail.nullspace) {  // x_N by least squares, then R_B x_B = Q_B^T y_E - Q_B^T E_N x_N
        const int r = static_cast<int>(tail.basis.size()), nN = static_cast<int>(tf.other.size());
        std::vector<Id> yE, e(r);
        for (int i : tf.exact) yE.push_back(y[tail.rows[i]]);
        for (int b = 0; b < r; ++b) e[b] = P.dot(tf.basis.Q[b], yE);
        std::vector<Id> v(s);
        for (int a = 0; a < s; ++a) v[a] = P.mul(tf.sw[a], P.sub(y[tail.rows[tf.soft[a]]], P.dot(tf.G[a], e)));
        const std::vector<Id> xN = gram_solve(P, tf.block, v);
        for (int c = 0; c < nN; ++c) sol[tf.other[c]] = xN[c];
        for (int b = r - 1; b >= 0; --b) {
            Id v2 = P.sub(e[b], P.dot(tf.EN[b], xN));
            for (int l = b + 1; l < r; ++l) v2 = P.sub(v2, P.mul(tf.basis.R[b][l], sol[tail.basis[l]]));
            sol[tail.basis[b]] = P.mul(v2, tf.basis.Rinv[b]);
        }
    } else {  // R1^T y1 = y_E; u from the stacked least squares; x = Q1^T y1 + u
        const int p = static_cast<int>(tf.exact.size());
        std::vector<Id> y1(p);
        for (int i = 0; i < p; ++i) {
            Id v = y[tail.rows[tf.exact[i]]];
            for (int l = 0; l < i; ++l) v = P.sub(v, P.mul(tf.constraint.R[l][i], y1[l]));
            y1[i] = P.mul(v, tf.constraint.Rinv[i]);
        }
        std::vector<Id> v(s + p, P.zero());
        for (int a = 0; a < s; ++a) v[a] = P.mul(tf.sw[a], P.sub(y[tail.rows[tf.soft[a]]], P.dot(tf.SQ[a], y1)));
        sol = gram_solve(P, tf.block, v);
        for (int j = 0; j < kb; ++j) sol[j] = P.add(P.dot(column(tf.constraint.Q, j), y1), sol[j]);
    }
    for (int j = 0; j < kb; ++j) x[tail.cols[j]] = sol[j];
}

/// osim with `lambda`: Lambda = (Lambda^-1)^-1 by a static LDL^T of the symmetric positive
/// definite Lambda^-1 (its upper triangle, as computed), then Lambda = W^T D^-1 W with W = L^-1:
/// no pivoting, no square roots; about k^3/2 multiplications for a k x k matrix. The pivots d_j
/// vanish only where the operational points' Jacobian loses rank; they become PivotKind::Lambda
/// pivots, checked at run time.
void invert_lambda(ir::Program& P, const System& sys, Factorization& out) {
    const int k = sys.lambda_size;
    auto A = [&](int i, int j) { return out.outputs[static_cast<std::size_t>(std::min(i, j) * k + std::max(i, j))]; };
    std::vector<std::vector<Id>> L(k, std::vector<Id>(k, P.zero())), E = L;  // E[j][l] = L[j][l] d[l]
    std::vector<Id> d(k), dinv(k);
    ir::ZeroTest identically_zero;
    for (int j = 0; j < k; ++j) {
        for (int i = 0; i < j; ++i) {
            Id e = A(i, j);
            for (int l = 0; l < i; ++l) e = P.sub(e, P.mul(E[j][l], L[i][l]));
            E[j][i] = e, L[j][i] = P.mul(e, dinv[i]);
        }
        Id dj = A(j, j);
        for (int l = 0; l < j; ++l) dj = P.sub(dj, P.mul(E[j][l], L[j][l]));
        if ((P.is_const(dj) && P.value(dj) == 0) || identically_zero.is_zero(P, dj)) {
            const Slot& s = sys.out[static_cast<std::size_t>(j * k)];
            const std::string& label = sys.cols[static_cast<std::size_t>(sys.blocks[s.body].a[0])].label;  // a[LINK].wx
            const std::string link = label.substr(label.find('[') + 1, label.find(']') - label.find('[') - 1);
            const std::string coordinate = fmt::format("row {} ({} of the operational point on {})", j,
                                                       component_name(Quantity::LinkAcceleration, s.comp), link);
            throw OrderIndependentError(fmt::format(
                "Lambda does not exist: Lambda^-1 is singular at every configuration. {}: the robot cannot move these "
                "coordinates independently. Drop 'lambda', or use fewer points or fewer coordinates per point (dof: 3 keeps "
                "the linear ones)", j == 0 ? "Its " + coordinate + " is zero: the robot cannot move it at all"
                                           : "Its " + coordinate + " depends on the rows before it"));
        }
        d[j] = dj, dinv[j] = P.div(P.one(), dj);
        // a pivot entry of the system for messages: the row and column of Lambda^-1's last solve
        out.pivots.push_back({out.pivots.empty() ? Pivot{0, 0} : out.pivots.back().at, dj, PivotKind::Lambda, 0, j, 0});
    }
    // W = L^-1 (unit lower triangular), G[l][j] = W[l][j] / d[l]
    std::vector<std::vector<Id>> W(k, std::vector<Id>(k, P.zero())), G = W;
    for (int j = 0; j < k; ++j) {
        W[j][j] = P.one();
        for (int i = j + 1; i < k; ++i) {
            Id w = P.neg(L[i][j]);
            for (int l = j + 1; l < i; ++l) w = P.sub(w, P.mul(L[i][l], W[l][j]));
            W[i][j] = w;
        }
        for (int l = j; l < k; ++l) G[l][j] = P.mul(W[l][j], dinv[l]);
    }
    const std::size_t base = static_cast<std::size_t>(k) * k;
    for (int i = 0; i < k; ++i)
        for (int j = i; j < k; ++j) {
            Id s = P.zero();
            for (int l = j; l < k; ++l) s = P.add(s, P.mul(W[l][i], G[l][j]));
            out.outputs[base + static_cast<std::size_t>(i * k + j)] = out.outputs[base + static_cast<std::size_t>(j * k + i)] = s;
        }
}

/// Whether the structured derivatives of inverse dynamics (derivatives.hpp) give the Jacobian of a
/// problem whose square system is solved by its factors alone (schedule_jacobian's by_factors: no
/// least-squares block, extra right-hand sides or Lambda): a classical one, whose outputs are joint
/// accelerations and torques (mimic joints included: structured_id_derivatives folds their rows
/// and columns into their masters'). Then a column x of q or qd is the solution
/// for a right-hand side that is zero but in the (3tau) rows, where it is d ID / d x at the solved
/// accelerations: the (3a) and (3f) rows determine a_i and f_i from qdd as before, and the joint
/// rows read M dqdd - dtau + dID/dx = 0.
///
/// Forward dynamics with rigid contacts (System::contact_tree) too: the contact rows get their own
/// partial derivatives (contact_row_partials), and the contacts' forces may be outputs, as columns
/// or, in a LocalWorldAligned frame, as combinations with coefficients in q.
bool structured_applies(const System& sys) {
    if (!sys.classical && !sys.contact_tree) return false;
    for (const Slot& o : sys.out) {
        if (o.rhs != 0) return false;
        if (o.quantity == Quantity::ContactForce && sys.contact_tree) continue;
        if (o.column < 0 || (o.quantity != Quantity::JointTorque && o.quantity != Quantity::JointAcceleration)) return false;
    }
    return true;
}

/// d out / d t of an output slot from the derivative dx of the solution x: a column's, or a
/// combination's, sum_j d(coefficient_j) x_j + coefficient_j dx_j + d(bias).
Id output_derivative(ir::Program& P, const Slot& s, const std::vector<Id>& x, const std::vector<Id>& dx, Differentiator& dt) {
    if (s.column >= 0) return dx[static_cast<std::size_t>(s.column)];
    Id v = s.bias >= 0 ? dt.d(s.bias) : P.zero();
    for (const auto& [col, coef] : s.terms) v = P.add(v, P.add(P.mul(dt.d(coef), x[static_cast<std::size_t>(col)]), P.mul(coef, dx[static_cast<std::size_t>(col)])));
    return v;
}

/// How a solve substitutes back: plainly, or with subtree transfers (transfers.hpp).
enum class BackSubstitution { Plain, Transfers };

/// Solutions x of D x + b = 0 through the factors: y = L^-1 (-b), the trailing block, x = U^-1 y.
class FactorSolve {
  public:
    FactorSolve(ir::Program& P, const System& sys, SparseLu& lu, const Tail& tail, const TailFactors& tf)
        : P_(P), lu_(lu), tail_(tail), tf_(tf), transfers_(P, sys, lu), m_(sys.m()), n_(sys.n()) {}

    std::vector<Id> operator()(const std::vector<Id>& b, BackSubstitution how) {
        std::vector<Id> y(static_cast<std::size_t>(m_));  // y = L \ (-b), in row space
        for (int r = 0; r < m_; ++r) y[r] = P_.neg(b[r]);
        lu_.forward(y);
        std::vector<Id> x(static_cast<std::size_t>(n_), -1);
        if (!tail_.cols.empty()) solve_tail(P_, tail_, tf_, y, x);
        if (how == BackSubstitution::Plain) lu_.back(y, x);
        else transfers_.back(y, x);
        return x;
    }

  private:
    ir::Program& P_;
    SparseLu& lu_;
    const Tail& tail_;
    const TailFactors& tf_;
    SubtreeTransfers transfers_;
    int m_, n_;
};

/// The forms one column of the Jacobian can take (schedule_jacobian), in the order they are built
/// and tried.
enum class ColumnForm {
    Forward,               ///< forward mode: the program differentiated, or (by the factors) the solve of
                           ///< D dx = -(dD x + db), plainly
    ForwardTransfers,      ///< forward mode's solve, with subtree transfers
    Structured,            ///< the solve for d ID / dx in the (3tau) rows, plainly
    StructuredTransfers,   ///< the same, with subtree transfers
    FromTorques,           ///< -M^-1 d ID / dx from the torque columns' Forward form (forward dynamics)
    FromTorquesTransfers,  ///< the same, from their ForwardTransfers form
};

/// The form's counterpart without subtree transfers.
ColumnForm plain(ColumnForm form) {
    switch (form) {
        case ColumnForm::ForwardTransfers: return ColumnForm::Forward;
        case ColumnForm::StructuredTransfers: return ColumnForm::Structured;
        case ColumnForm::FromTorquesTransfers: return ColumnForm::FromTorques;
        default: return form;
    }
}

using Column = std::vector<Id>;                 ///< one column of the Jacobian: an entry per output
using ColumnOptions = std::map<ColumnForm, Column>;  ///< the forms built for one column

/// Per column of `cols`: its forward-mode forms. `by_factors`: the solve of D dx = -(dD x + db)
/// through the factors of D, plainly and with subtree transfers; otherwise the whole program is
/// differentiated (least squares, extra right-hand sides, Lambda).
std::vector<ColumnOptions> forward_forms(ir::Program& P, const System& sys, const Model& model, const std::vector<Tangent>& cols,
                                         const std::vector<Id>& x, const std::vector<Id>& outputs, bool by_factors, FactorSolve& solve,
                                         std::vector<std::vector<Id>>& rhs_out) {
    const std::size_t no = sys.out.size();
    std::vector<ColumnOptions> forward(cols.size());
    rhs_out.assign(cols.size(), {});
    for (std::size_t j = 0; j < cols.size(); ++j) {
        Differentiator dt(P, model, cols[j]);
        if (!by_factors) {
            Column c(no);
            for (std::size_t o = 0; o < no; ++o) c[o] = dt.d(outputs[o]);
            forward[j][ColumnForm::Forward] = c;
            continue;
        }
        std::vector<Id> rhs(static_cast<std::size_t>(sys.m()));
        for (int r = 0; r < sys.m(); ++r) {
            Id v = dt.d(sys.b.value[r]);
            for (const auto& [c, e] : sys.entries[r]) v = P.add(v, P.mul(dt.d(e), x[c]));
            rhs[r] = v;
        }
        rhs_out[j] = rhs;
        const std::vector<Id> dx_plain = solve(rhs, BackSubstitution::Plain), dx_transfers = solve(rhs, BackSubstitution::Transfers);
        for (ColumnForm form : {ColumnForm::Forward, ColumnForm::ForwardTransfers}) {
            const std::vector<Id>& dx = form == ColumnForm::Forward ? dx_plain : dx_transfers;
            Column c(no);
            for (std::size_t o = 0; o < no; ++o) c[o] = output_derivative(P, sys.out[o], x, dx, dt);
            forward[j][form] = c;
        }
    }
    return forward;
}

/// Forward dynamics (every torque an input, every output an acceleration) has M^-1 among its
/// columns, the responses to unit torques: per velocity slot, the column of its torque. Empty for
/// other problems.
std::vector<int> torque_columns(const System& sys, const Model& model, const std::vector<Tangent>& cols) {
    std::vector<int> tau_column(static_cast<std::size_t>(model.nv), -1);
    for (std::size_t j = 0; j < cols.size(); ++j)
        if (cols[j].kind == Tangent::Kind::In && sys.in[cols[j].index].quantity == Quantity::JointTorque) {
            const Slot& s = sys.in[cols[j].index];
            tau_column[sys.kinematics[s.body].v_index + s.comp] = static_cast<int>(j);
        }
    bool forward_dynamics = true;  // every independent slot has its torque (a mimic's slot has none)
    for (const BodyKinematics& k : sys.kinematics)
        for (std::size_t d = 0; d < k.S.size(); ++d)
            forward_dynamics = forward_dynamics && (k.mimic || tau_column[static_cast<std::size_t>(k.v_index) + d] >= 0);
    for (const Slot& o : sys.out) forward_dynamics = forward_dynamics && o.quantity == Quantity::JointAcceleration;
    return forward_dynamics ? tau_column : std::vector<int>{};
}

/// Per column: the `forward` forms, and those the structured derivatives D give: the solution for
/// d ID / dx in the (3tau) rows, plainly and with transfers (the q, qd and known accelerations'
/// columns), and -M^-1 d ID / dx from the torque columns (forward dynamics: `tau_column` not
/// empty). `start` gets the form each column's search starts from; `rhs_out`, per column, the
/// right-hand side of its structured solve (empty where it has none).
std::vector<ColumnOptions> structured_forms(ir::Program& P, const System& sys, const Model& model, const std::vector<Tangent>& cols,
                                            const std::vector<Id>& x, const IdDerivatives& D, const std::vector<ColumnOptions>& forward,
                                            const std::vector<int>& tau_column, FactorSolve& solve, std::vector<ColumnForm>& start,
                                            std::vector<std::vector<Id>>& rhs_out) {
    rhs_out.assign(cols.size(), {});
    auto entry = [&](const std::vector<Id>& M, std::size_t row, int col) { return M[row * D.nv + static_cast<std::size_t>(col)]; };
    const std::size_t no = sys.out.size();
    std::vector<ColumnOptions> options = forward;
    start.assign(cols.size(), ColumnForm::Forward);
    for (std::size_t j = 0; j < cols.size(); ++j) {
        const Tangent& t = cols[j];
        if (t.kind == Tangent::Kind::In && sys.in[t.index].quantity != Quantity::JointAcceleration) {
            start[j] = ColumnForm::ForwardTransfers;  // torques and wrenches: forward mode, with transfers
            continue;
        }
        // a known acceleration: d ID / d qdd_k = M[:, k]
        const std::vector<Id>& dID = t.kind == Tangent::Kind::Q ? D.dq : t.kind == Tangent::Kind::Qd ? D.dqd : D.M;
        const int slot = t.kind != Tangent::Kind::In ? t.index : sys.kinematics[sys.in[t.index].body].v_index + sys.in[t.index].comp;
        std::vector<Id> rhs(static_cast<std::size_t>(sys.m()), P.zero());
        for (std::size_t i = 0; i < sys.kinematics.size(); ++i)
            for (std::size_t d = 0; d < sys.blocks[i].row_tau.size(); ++d)
                rhs[sys.blocks[i].row_tau[d]] = entry(dID, static_cast<std::size_t>(sys.kinematics[i].v_index) + d, slot);
        Differentiator dt(P, model, t);  // the contact rows' partials, and the outputs' coefficients
        if (sys.contact_tree) {
            const std::vector<Id> partials = contact_row_partials(P, sys, x, dt);
            std::size_t k = 0;
            for (const ContactBlock& cb : sys.contacts)
                for (int row : cb.rows) rhs[static_cast<std::size_t>(row)] = partials[k++];
        }
        rhs_out[j] = rhs;
        const std::vector<Id> dx_plain = solve(rhs, BackSubstitution::Plain), dx_transfers = solve(rhs, BackSubstitution::Transfers);
        for (ColumnForm form : {ColumnForm::Structured, ColumnForm::StructuredTransfers}) {
            const std::vector<Id>& dx = form == ColumnForm::Structured ? dx_plain : dx_transfers;
            Column c(no);
            for (std::size_t o = 0; o < no; ++o) c[o] = output_derivative(P, sys.out[o], x, dx, dt);
            options[j][form] = c;
        }
        start[j] = ColumnForm::StructuredTransfers;
        if (tau_column.empty() || t.kind == Tangent::Kind::In) continue;
        // -M^-1 d ID / dx from the torque columns solved plainly, or with transfers
        for (ColumnForm from : {ColumnForm::Forward, ColumnForm::ForwardTransfers}) {
            Column c(no);
            for (std::size_t o = 0; o < no; ++o) {
                Id v = P.zero();
                for (std::size_t k = 0; k < tau_column.size(); ++k)
                    if (tau_column[k] >= 0)  // (a mimic's slot: its entries folded into its master's)
                        v = P.sub(v, P.mul(forward[static_cast<std::size_t>(tau_column[k])].at(from)[o], entry(dID, k, slot)));
                c[o] = v;
            }
            options[j][from == ColumnForm::Forward ? ColumnForm::FromTorques : ColumnForm::FromTorquesTransfers] = c;
        }
    }
    return options;
}

/// A Jacobian (row-major: output, column) and the operations of the whole (values and Jacobian).
struct JacobianChoice {
    long ops = 0;
    std::vector<Id> jac;
    std::vector<ColumnForm> pick;  ///< per column, the form chosen
};

/// How many columns took each kind of form (the counts of Factorization::column_forms).
ColumnFormCounts count_forms(const std::vector<ColumnForm>& pick) {
    ColumnFormCounts n;
    for (ColumnForm f : pick) {
        const ColumnForm p = plain(f);
        (p == ColumnForm::Forward ? n.forward : p == ColumnForm::Structured ? n.structured : n.from_inverse_mass) += 1;
    }
    return n;
}

/// The local search over the columns' forms: from a form per column, move one column to another of
/// its forms while that lowers the count of the whole (the `values` and the Jacobian, shared values
/// counted once; ir::LiveCount follows each move).
class ColumnSearch {
  public:
    ColumnSearch(const ir::Program& P, std::vector<Id> values, std::size_t outputs) : P_(P), values_(std::move(values)), no_(outputs) {}

    /// The cheapest of the searches from each of `starts` (the first on ties).
    JacobianChoice best(const std::vector<ColumnOptions>& options, const std::vector<std::vector<ColumnForm>>& starts) const {
        JacobianChoice best;
        for (std::size_t s = 0; s < starts.size(); ++s)
            if (JacobianChoice c = from(options, starts[s]); s == 0 || c.ops < best.ops) best = std::move(c);
        return best;
    }

  private:
    JacobianChoice from(const std::vector<ColumnOptions>& options, std::vector<ColumnForm> pick) const {
        const std::size_t nc = options.size();
        JacobianChoice r;
        r.jac.resize(no_ * nc);
        ir::LiveCount live(P_);
        for (Id v : values_) live.add(v);
        for (std::size_t j = 0; j < nc; ++j)
            for (std::size_t o = 0; o < no_; ++o) live.add(r.jac[o * nc + j] = options[j].at(pick[j])[o]);
        auto set = [&](std::size_t j, ColumnForm form) {
            for (std::size_t o = 0; o < no_; ++o) {
                const Id was = r.jac[o * nc + j];
                live.add(r.jac[o * nc + j] = options[j].at(form)[o]);
                live.remove(was);
            }
        };
        r.ops = live.total();
        for (bool moved = true; moved;) {
            moved = false;
            for (std::size_t j = 0; j < nc; ++j)
                for (const auto& [form, column] : options[j]) {
                    if (form == pick[j]) continue;
                    set(j, form);
                    if (const long c = live.total(); c < r.ops) r.ops = c, pick[j] = form, moved = true;
                    else set(j, pick[j]);
                }
        }
        r.pick = std::move(pick);
        return r;
    }

    const ir::Program& P_;
    std::vector<Id> values_;
    std::size_t no_;
};

/// The rows where the right-hand side `r` is not structurally zero, ascending.
std::vector<int> nonzero_rows(const ir::Program& P, const std::vector<Id>& r) {
    std::vector<int> rows;
    for (std::size_t k = 0; k < r.size(); ++k)
        if (r[k] != P.zero()) rows.push_back(static_cast<int>(k));
    return rows;
}

/// The columns in groups of kLaneGroup by pattern (each group ascending, the groups in order of their
/// first column): a kernel solves its group's union pattern, so columns of one pattern go together
/// (a leg's joints, a contact's components), and the rest are joined greedily, the column of the
/// largest pattern first with those that widen it least. A heuristic: schedule_lanes keeps it where
/// its kernels cost fewer operations than the columns' in order. Deterministic.
std::vector<std::vector<int>> group_lane_columns(const ir::Program& P, const std::vector<std::vector<Id>>& rhs, const std::vector<int>& columns) {
    std::map<std::vector<int>, std::vector<int>> of_pattern;  // pattern -> its columns, ascending
    for (int j : columns) of_pattern[nonzero_rows(P, rhs[static_cast<std::size_t>(j)])].push_back(j);
    std::vector<std::vector<int>> groups;
    std::vector<std::pair<std::vector<int>, int>> left;  // (pattern, column) of the columns not in a full group
    for (const auto& [rows, cols] : of_pattern) {
        std::size_t k = 0;
        for (; k + kLaneGroup <= cols.size(); k += kLaneGroup) groups.emplace_back(cols.begin() + static_cast<long>(k), cols.begin() + static_cast<long>(k + kLaneGroup));
        for (; k < cols.size(); ++k) left.emplace_back(rows, cols[k]);
    }
    auto widened = [](const std::vector<int>& into, const std::vector<int>& rows) {  // rows of `rows` not in `into`
        std::vector<int> d;
        std::set_difference(rows.begin(), rows.end(), into.begin(), into.end(), std::back_inserter(d));
        return d;
    };
    std::sort(left.begin(), left.end(), [](const auto& a, const auto& b) {
        return a.first.size() != b.first.size() ? a.first.size() > b.first.size() : a.second < b.second;
    });
    std::vector<bool> used(left.size(), false);
    for (std::size_t s = 0; s < left.size(); ++s) {
        if (used[s]) continue;
        used[s] = true;
        std::vector<int> group{left[s].second}, rows = left[s].first;
        while (group.size() < static_cast<std::size_t>(kLaneGroup)) {
            std::size_t pick = left.size(), cost = 0;
            for (std::size_t t = s + 1; t < left.size(); ++t)
                if (!used[t])
                    if (const std::size_t c = widened(rows, left[t].first).size(); pick == left.size() || c < cost) pick = t, cost = c;
            if (pick == left.size()) break;
            used[pick] = true;
            group.push_back(left[pick].second);
            const std::vector<int> more = widened(rows, left[pick].first);
            rows.insert(rows.end(), more.begin(), more.end());
            std::sort(rows.begin(), rows.end());
        }
        std::sort(group.begin(), group.end());
        groups.push_back(std::move(group));
    }
    std::sort(groups.begin(), groups.end());
    return groups;
}

/// The columns of a Jacobian solved by the factors, in lanes (LaneGroup): per column its right-hand
/// side `rhs`, or `alternative` (forward mode's; empty: none) where that one is narrower and its solve
/// cheaper, kernels shared by the groups of one pattern. A column stays in the scalar program when
/// its right-hand side is empty or structurally zero, or when its entries cost the scalar program
/// nothing (other columns' forms read them).
void schedule_lanes(ir::Program& P, const System& sys, const Model& model, const std::vector<Tangent>& cols, const std::vector<Id>& x,
                    std::vector<std::vector<Id>> rhs, const std::vector<std::vector<Id>>& alternative, FactorSolve& solve,
                    Factorization& out) {
    // Per column, what its entries cost the scalar program beside every other column's (nothing when
    // other columns read them, as the forms -M^-1 d ID / dx read M^-1's); counted before any kernel
    // is built (ir::LiveCount counts the program as it is).
    const std::size_t no = sys.out.size(), nc = cols.size();
    std::vector<long> scalar_cost(nc, 0);
    {
        ir::LiveCount live(P);
        for (Id v : out.outputs) live.add(v);
        for (const ScheduledPivot& pv : out.pivots) live.add(pv.value);
        for (Id v : out.jacobian) live.add(v);
        for (std::size_t j = 0; j < nc; ++j) {
            const long all = live.total();
            for (std::size_t o = 0; o < no; ++o) live.remove(out.jacobian[o * nc + j]);
            scalar_cost[j] = all - live.total();
            for (std::size_t o = 0; o < no; ++o) live.add(out.jacobian[o * nc + j]);
        }
    }
    auto pattern = [&](const std::vector<int>& group) {  // the rows where a column of the group has a nonzero
        std::vector<int> rows;
        for (int r = 0; r < sys.m(); ++r)
            if (std::any_of(group.begin(), group.end(), [&](int j) { return rhs[j][r] != P.zero(); })) rows.push_back(r);
        return rows;
    };
    std::map<std::vector<int>, std::pair<LaneKernel, long>> built;  // pattern -> its kernel and the kernel's operations
    auto kernel = [&](const std::vector<int>& rows) -> const std::pair<LaneKernel, long>& {
        if (auto it = built.find(rows); it != built.end()) return it->second;
        LaneKernel K;
        K.rows = rows;
        std::vector<Id> b(static_cast<std::size_t>(sys.m()), P.zero());
        for (int r : rows) K.inputs.push_back(b[r] = P.input(ir::Source::Lane, r));
        // back substitution plainly or with subtree transfers: the kernel with fewer operations
        const std::vector<bool> dep = lane_dependent(P);  // (before either: both are new nodes)
        long best = -1;
        for (BackSubstitution how : {BackSubstitution::Plain, BackSubstitution::Transfers}) {
            const std::vector<Id> dx = solve(b, how);
            std::vector<Id> outs;
            for (const Slot& s : sys.out) {
                Id v = P.zero();
                if (s.column >= 0) v = dx[static_cast<std::size_t>(s.column)];
                else
                    for (const auto& [col, coef] : s.terms) v = P.add(v, P.mul(coef, dx[static_cast<std::size_t>(col)]));
                outs.push_back(v);
            }
            std::vector<bool> live = P.live_nodes(outs);
            for (int i = 0; i < P.size(); ++i) live[i] = live[i] && (i >= static_cast<int>(dep.size()) || dep[i]);
            const long ops = P.count(live).total();
            if (best < 0 || ops < best) best = ops, K.outputs = outs;
        }
        return built.emplace(rows, std::make_pair(std::move(K), best)).first->second;
    };
    // Per column, its right-hand side (forward mode's where narrower and cheaper: a kernel solves the
    // union of its group's patterns, and forward mode's pattern for a floating base's rotation, the
    // gravity's three rows, is much cheaper than the structured one; each try builds two kernels, so
    // a wider pattern is not tried), and whether it goes into the lanes (see above).
    std::vector<int> lane_cols;
    for (std::size_t j = 0; j < nc; ++j) {
        std::vector<int> rows = nonzero_rows(P, rhs[j]);
        if (const std::vector<int> other = nonzero_rows(P, alternative[j]);
            !other.empty() && other.size() < rows.size() && kernel(other).second < kernel(rows).second)
            rhs[j] = alternative[j], rows = other;
        if (!rows.empty() && scalar_cost[j] > 0) lane_cols.push_back(static_cast<int>(j));
    }
    // the columns in order, kLaneGroup at a time, or grouped by pattern: whichever costs fewer
    // operations per call with two columns per instruction (the generic x86-64 build's lanes)
    std::vector<std::vector<std::vector<int>>> groupings(2);
    for (std::size_t g = 0; g < lane_cols.size(); g += kLaneGroup)
        groupings[0].emplace_back(lane_cols.begin() + static_cast<long>(g), lane_cols.begin() + static_cast<long>(std::min(lane_cols.size(), g + kLaneGroup)));
    groupings[1] = group_lane_columns(P, rhs, lane_cols);
    std::size_t pick = 0;
    long least = -1;
    for (std::size_t k = 0; k < groupings.size(); ++k) {
        long ops = 0;
        for (const std::vector<int>& group : groupings[k]) ops += kernel(pattern(group)).second * static_cast<long>((group.size() + 1) / 2);
        if (least < 0 || ops < least) least = ops, pick = k;
    }
    std::map<std::vector<int>, int> kernel_of;  // pattern -> kernel
    for (std::vector<int>& columns : groupings[pick]) {
        LaneGroup G;
        G.columns = std::move(columns);
        const std::vector<int> rows = pattern(G.columns);
        const auto [it, fresh] = kernel_of.emplace(rows, static_cast<int>(out.lane_kernels.size()));
        if (fresh) out.lane_kernels.push_back(kernel(rows).first);
        G.kernel = it->second;
        for (int r : rows)
            for (int j : G.columns) G.rhs.push_back(rhs[j][r]);
        G.extra.assign(sys.out.size() * G.columns.size(), P.zero());
        for (std::size_t c = 0; c < G.columns.size(); ++c) {
            Differentiator dt(P, model, cols[G.columns[c]]);
            for (std::size_t o = 0; o < sys.out.size(); ++o) {
                const Slot& s = sys.out[o];
                if (s.column >= 0) continue;
                Id v = s.bias >= 0 ? dt.d(s.bias) : P.zero();
                for (const auto& [col, coef] : s.terms) v = P.add(v, P.mul(dt.d(coef), x[static_cast<std::size_t>(col)]));
                G.extra[o * G.columns.size() + c] = v;
            }
        }
        out.lane_groups.push_back(std::move(G));
    }
}

/// The Jacobian of the outputs (Factorization::jacobian), in the cheapest form this problem allows
/// (JacobianForm). Each column can take several forms (ColumnForm); a form of the whole starts
/// from its natural choice per column and moves a column to another choice while that lowers the
/// count of the whole (ColumnSearch). Every form is built in P (dead code is removed later) and the
/// one with the fewest operations is kept; each form's count is recorded
/// (Factorization::derivative_forms). `x` is the solution for b; `factors_only`: the factors solve D
/// exactly (no trailing block, or a square one: a held arm's contact rows by Gram-Schmidt), no least squares.
void schedule_jacobian(ir::Program& P, const System& sys, const Model& model, const std::vector<Id>& x, FactorSolve& solve,
                       bool factors_only, StructuredTerm omit, bool lanes, Factorization& out) {
    const std::vector<Tangent> cols = jacobian_columns(model, static_cast<int>(sys.in.size()));
    // A square system solved by the factors alone: D(q) x + b = 0 gives D dx = -(dD x + db), one
    // more right-hand side per column through the same factors. A least-squares tail, extra
    // right-hand sides or Lambda: forward mode through the whole program instead.
    const bool by_factors = factors_only && sys.rhs.empty() && sys.lambda_size == 0 && sys.m() == sys.n();
    std::vector<std::vector<Id>> forward_rhs;
    const std::vector<ColumnOptions> forward = forward_forms(P, sys, model, cols, x, out.outputs, by_factors, solve, forward_rhs);
    std::vector<Id> values = out.outputs;
    for (const ScheduledPivot& pv : out.pivots) values.push_back(pv.value);
    const ColumnSearch search(P, values, sys.out.size());
    // from the plain solves and from the transfers, the better of the two searches
    std::vector<std::vector<ColumnForm>> starts{std::vector<ColumnForm>(cols.size(), ColumnForm::Forward)};
    if (by_factors) starts.push_back(std::vector<ColumnForm>(cols.size(), ColumnForm::ForwardTransfers));
    JacobianChoice best = search.best(forward, starts);
    out.jacobian = best.jac;
    out.column_forms = count_forms(best.pick);
    out.derivative_form = JacobianForm::Forward;
    out.derivative_forms = {{JacobianForm::Forward, best.ops}};
    if (!by_factors) return;
    std::vector<std::vector<Id>> lane_rhs = forward_rhs;  // per column, the right-hand side its lanes solve
    if (structured_applies(sys)) {
        // -M^-1 d ID / dx needs M^-1 among the columns: not with contacts, whose torque columns are
        // the KKT system's responses
        const std::vector<int> tau_column = sys.contact_tree ? std::vector<int>{} : torque_columns(sys, model, cols);
        for (JacobianForm form : {JacobianForm::StructuredLocal, JacobianForm::StructuredRoot}) {
            const PairFrame frame = form == JacobianForm::StructuredLocal ? PairFrame::Local : PairFrame::Root;
            const IdDerivatives D = structured_id_derivatives(P, sys, x, pairing_frames(sys, frame), omit);
            std::vector<ColumnForm> start;
            std::vector<std::vector<Id>> structured_rhs;
            const std::vector<ColumnOptions> options = structured_forms(P, sys, model, cols, x, D, forward, tau_column, solve, start, structured_rhs);
            std::vector<ColumnForm> start_plain;  // the same, starting from the plain solves
            for (ColumnForm f : start) start_plain.push_back(plain(f));
            JacobianChoice c = search.best(options, {start, start_plain});
            out.derivative_forms.push_back({form, c.ops});
            if (c.ops >= best.ops) continue;
            out.jacobian = c.jac, out.derivative_form = form, out.column_forms = count_forms(c.pick), best = std::move(c);
            for (std::size_t j = 0; j < cols.size(); ++j) lane_rhs[j] = structured_rhs[j].empty() ? forward_rhs[j] : structured_rhs[j];
        }
    }
    if (lanes) schedule_lanes(P, sys, model, cols, x, lane_rhs, forward_rhs, solve, out);
}

/// The outputs (Factorization::outputs) from the solutions `xs`, for b and then for each extra
/// right-hand side; Lambda's are left zero (invert_lambda forms them).
void form_outputs(ir::Program& P, const System& sys, const std::vector<std::vector<Id>>& xs, Factorization& out) {
    for (const Slot& s : sys.out) {
        if (s.lambda) {
            out.outputs.push_back(P.zero());
            continue;
        }
        const std::vector<Id>& x = xs[static_cast<std::size_t>(s.rhs)];
        if (s.column >= 0) {
            out.outputs.push_back(x[s.column]);
            continue;
        }
        Id v = s.bias >= 0 ? s.bias : P.zero();
        for (const auto& [c, coef] : s.terms) v = P.add(v, P.mul(coef, x[c]));
        out.outputs.push_back(v);
    }
}

/// The lane kernels' programs (kernel_program) on the numbered program P, and each one's operations.
struct KernelCounts {
    std::vector<KernelProgram> programs;
    std::vector<long> ops;
};
KernelCounts count_kernels(const ir::Program& P, const Factorization& out) {
    const std::vector<bool> dep = lane_dependent(P);
    KernelCounts k;
    for (const LaneKernel& K : out.lane_kernels) {
        k.programs.push_back(kernel_program(P, K, dep));
        std::vector<bool> statements(static_cast<std::size_t>(P.size()), false);
        for (Id i : k.programs.back().statements) statements[i] = true;
        k.ops.push_back(P.count(statements).total());
    }
    return k;
}

/// The roots of the scalar program beside the lane groups: the values' roots (outputs and pivots),
/// the groups' right-hand sides and extras, the Jacobian's columns not in lanes, what the kernels read.
std::vector<Id> lane_scalar_roots(const Factorization& out, const std::vector<Id>& roots, const KernelCounts& kernels) {
    const std::size_t no = out.outputs.size(), nc = out.jacobian.size() / std::max<std::size_t>(no, 1);
    std::vector<bool> in_lanes(nc, false);
    std::vector<Id> scalar = roots;
    for (const LaneGroup& G : out.lane_groups) {
        for (int j : G.columns) in_lanes[static_cast<std::size_t>(j)] = true;
        scalar.insert(scalar.end(), G.rhs.begin(), G.rhs.end());
        scalar.insert(scalar.end(), G.extra.begin(), G.extra.end());
    }
    for (std::size_t o = 0; o < no; ++o)
        for (std::size_t j = 0; j < nc; ++j)
            if (!in_lanes[j]) scalar.push_back(out.jacobian[o * nc + j]);
    for (const KernelProgram& kp : kernels.programs) scalar.insert(scalar.end(), kp.reads.begin(), kp.reads.end());
    return scalar;
}

/// Factorization::lane_ops of the lane groups, from the values' roots (outputs and pivots).
void count_lanes(const ir::Program& P, const std::vector<Id>& roots, Factorization& out) {
    if (out.lane_groups.empty()) return;
    const KernelCounts kernels = count_kernels(P, out);
    const std::vector<long>& kernel_ops = kernels.ops;
    const std::vector<Id> scalar = lane_scalar_roots(out, roots, kernels);
    const long scalar_ops = P.count(P.live_nodes(scalar)).total();
    for (int k = 0; k < 4; ++k) {
        const long w = 1L << k;
        out.lane_ops[k] = scalar_ops;
        for (const LaneGroup& G : out.lane_groups)
            out.lane_ops[k] += (static_cast<long>(G.columns.size()) + w - 1) / w * kernel_ops[static_cast<std::size_t>(G.kernel)];
    }
}

/// Whether the merged program `rw` of `out` keeps every lane kernel on its own inputs (what it
/// computes reads no other row's lane input) and the scalar values (outputs, Jacobian, pivots, the
/// groups' right-hand sides and extras) off every lane input.
bool lanes_kept_apart(const ir::Rewrite& rw, const Factorization& out) {
    const ir::Program& Q = rw.prog;
    const std::vector<bool> dep = lane_dependent(Q);
    std::vector<Id> scalar;
    for (Id x : out.outputs) scalar.push_back(rw.map[x]);
    for (Id x : out.jacobian) scalar.push_back(rw.map[x]);
    for (const ScheduledPivot& pv : out.pivots) scalar.push_back(rw.map[pv.value]);
    for (const LaneGroup& G : out.lane_groups) {
        for (Id x : G.rhs) scalar.push_back(rw.map[x]);
        for (Id x : G.extra) scalar.push_back(rw.map[x]);
    }
    for (Id x : scalar)
        if (dep[x]) return false;
    for (const LaneKernel& K : out.lane_kernels) {
        std::vector<Id> outs;
        for (Id x : K.outputs) outs.push_back(rw.map[x]);
        std::set<Id> inputs;
        for (Id x : K.inputs) inputs.insert(rw.map[x]);
        const std::vector<bool> live = Q.live_nodes(outs);
        for (int i = 0; i < Q.size(); ++i)
            if (live[i] && Q.node(i).op == ir::Op::Input && Q.node(i).source == ir::Source::Lane && !inputs.count(i)) return false;
    }
    return true;
}

/// Merges equal values (symmetric halves of the Schur complements, among others) when that makes
/// the program cheaper, then counts what the outputs, the pivot checks and the Jacobian need,
/// split by phase (Factorization::ops*).
void merge_and_count_once(const System& sys, bool derivatives, Factorization& out) {
    ir::Program& P = out.prog;
    std::vector<Id> roots = out.outputs;
    for (const ScheduledPivot& pv : out.pivots) roots.push_back(pv.value);
    roots.insert(roots.end(), out.jacobian.begin(), out.jacobian.end());
    for (const LaneKernel& K : out.lane_kernels) {
        roots.insert(roots.end(), K.inputs.begin(), K.inputs.end());
        roots.insert(roots.end(), K.outputs.begin(), K.outputs.end());
    }
    for (const LaneGroup& G : out.lane_groups) {
        roots.insert(roots.end(), G.rhs.begin(), G.rhs.end());
        roots.insert(roots.end(), G.extra.begin(), G.extra.end());
    }
    // Merging maps a value to its earliest occurrence, which can bring back to life a costlier
    // computation than the one it replaces: keep the merged program only when it is cheaper.
    auto cost = [&](const ir::Rewrite& r) {
        std::vector<Id> mapped;
        for (Id x : roots) mapped.push_back(r.map[x]);
        return r.prog.count(r.prog.live_nodes(mapped)).total();
    };
    std::vector<int> bounds{out.first_factor_node, out.first_solve_node};
    ir::Rewrite rw = ir::merge_equal_values(P, roots, bounds, true);
    if (!out.lane_kernels.empty() && !lanes_kept_apart(rw, out)) {
        // a kernel's value merged with one of another kernel's or the scalar program's, equal only
        // up to nearby constants (and so negligible there) but reading other inputs: merged again
        // with the kernels' values kept apart
        const std::vector<bool> apart = lane_dependent(P);
        bounds = {out.first_factor_node, out.first_solve_node};
        rw = ir::merge_equal_values(P, roots, bounds, true, 1, &apart);
    }
    if (P.count(P.live_nodes(roots)).total() <= cost(rw)) {  // keep the program as it is
        rw.prog = P, rw.map.resize(P.size());
        for (int i = 0; i < P.size(); ++i) rw.map[i] = i;
        bounds = {out.first_factor_node, out.first_solve_node};
    }
    out.prog = std::move(rw.prog);
    out.first_factor_node = bounds[0], out.first_solve_node = bounds[1];
    out.system_map.assign(rw.map.begin(), rw.map.begin() + sys.prog.size());
    for (Id& o : out.outputs) o = rw.map[o];
    for (Id& o : out.jacobian) o = rw.map[o];
    for (LaneKernel& K : out.lane_kernels) {
        for (Id& o : K.inputs) o = rw.map[o];
        for (Id& o : K.outputs) o = rw.map[o];
    }
    for (LaneGroup& G : out.lane_groups) {
        for (Id& o : G.rhs) o = rw.map[o];
        for (Id& o : G.extra) o = rw.map[o];
    }
    for (ScheduledPivot& pv : out.pivots) {
        pv.value = rw.map[pv.value];
        if (out.prog.is_const(pv.value)) pv.kind = PivotKind::Constant;
    }
    for (Id& xc : out.x)
        if (xc >= 0) xc = rw.map[xc];
    roots = out.outputs;
    for (const ScheduledPivot& pv : out.pivots)
        if (pv.kind != PivotKind::Constant) roots.push_back(pv.value);
    std::vector<bool> live = P.live_nodes(roots);
    out.ops = P.count(live);
    auto range = [&](int lo, int hi) {
        std::vector<bool> m(live.size(), false);
        for (int i = lo; i < hi; ++i) m[i] = live[i];
        return P.count(m);
    };
    out.ops_kinematics = range(0, out.first_factor_node);
    out.ops_factorization = range(out.first_factor_node, out.first_solve_node);
    out.ops_solve = range(out.first_solve_node, P.size());
    if (derivatives) {
        std::vector<Id> all = roots;
        all.insert(all.end(), out.jacobian.begin(), out.jacobian.end());
        out.ops_derivatives = P.count(P.live_nodes(all));  // (the lanes: prune_lanes counts them)
    }
}

/// Leaves to the scalar program the lane groups that do not pay: a group whose kernel, run with two
/// columns per instruction (the generic x86-64 build's lanes), costs more operations than its
/// columns add to the scalar program beside the rest (unit right-hand sides, such as the input
/// torques' columns, cost less there than a kernel over their union), and those whose kernel has no
/// arithmetic (a solve that copies its right-hand side). Counted on the numbered program, one group
/// at a time in order; then Factorization::lane_ops again.
void prune_lanes(Factorization& out) {
    const ir::Program& P = out.prog;
    std::vector<Id> roots = out.outputs;
    for (const ScheduledPivot& pv : out.pivots)
        if (pv.kind != PivotKind::Constant) roots.push_back(pv.value);
    const std::size_t no = out.outputs.size(), nc = out.jacobian.size() / std::max<std::size_t>(no, 1);
    const KernelCounts counts = count_kernels(P, out);
    const std::vector<KernelProgram>& kp = counts.programs;
    const std::vector<long>& kernel_ops = counts.ops;
    std::vector<int> users(out.lane_kernels.size(), 0);
    for (const LaneGroup& G : out.lane_groups) ++users[static_cast<std::size_t>(G.kernel)];
    ir::LiveCount live(P);
    for (Id v : lane_scalar_roots(out, roots, counts)) live.add(v);
    std::vector<LaneGroup> kept;
    for (LaneGroup& G : out.lane_groups) {
        const std::size_t k = static_cast<std::size_t>(G.kernel);
        const long before = live.total();
        auto move = [&](bool to_scalar) {  // the group's columns into the scalar program, or back
            auto give = [&](Id v) { to_scalar ? live.add(v) : live.remove(v); };
            auto take = [&](Id v) { to_scalar ? live.remove(v) : live.add(v); };
            for (int j : G.columns)
                for (std::size_t o = 0; o < no; ++o) give(out.jacobian[o * nc + static_cast<std::size_t>(j)]);
            for (Id v : G.rhs) take(v);
            for (Id v : G.extra) take(v);
            if (users[k] == 1)
                for (Id v : kp[k].reads) take(v);
        };
        move(true);
        if (kernel_ops[k] == 0 || live.total() - before < kernel_ops[k] * static_cast<long>((G.columns.size() + 1) / 2)) {
            --users[k];
            continue;
        }
        move(false);
        kept.push_back(std::move(G));
    }
    // the kernels still used, renumbered in order
    std::vector<int> renumber(out.lane_kernels.size(), -1);
    std::vector<LaneKernel> kernels;
    for (LaneGroup& G : kept) {
        int& r = renumber[static_cast<std::size_t>(G.kernel)];
        if (r < 0) r = static_cast<int>(kernels.size()), kernels.push_back(out.lane_kernels[static_cast<std::size_t>(G.kernel)]);
        G.kernel = r;
    }
    out.lane_groups = std::move(kept), out.lane_kernels = std::move(kernels);
    count_lanes(P, roots, out);
}

/// merge_and_count_once, with the lanes kept where two columns per instruction cost fewer operations
/// than the columns one by one (both counted after value numbering); else the program is numbered
/// without them, as it would have been.
void merge_and_count(const System& sys, bool derivatives, Factorization& out) {
    if (derivatives && !out.lane_groups.empty()) {
        Factorization without = out;
        without.lane_groups.clear(), without.lane_kernels.clear();
        merge_and_count_once(sys, derivatives, out);
        prune_lanes(out);
        if (!out.lane_groups.empty() && out.lane_ops[1] < out.ops_derivatives.total()) return;
        out = std::move(without);
    }
    merge_and_count_once(sys, derivatives, out);
}

/// The pairing of rows with columns under which D is symmetric up to row signs (lu.hpp, Pairing):
/// a body's acceleration equations with its force, its force balance with its acceleration, its
/// (3tau) rows with its joint's unknown, the motion auxiliaries' rows of step K with the force
/// auxiliaries of step m - K (the force side applies the transposed factors in reverse order) and
/// back, a contact's constraint rows with its force. Component k with component k (angular first
/// on both sides). Everything else (a Baumgarte reference's auxiliaries) is unpaired.
Pairing pairing(const System& sys) {
    Pairing p{std::vector<int>(static_cast<std::size_t>(sys.m()), -1), std::vector<int>(static_cast<std::size_t>(sys.n()), -1)};
    auto pair = [&](const std::vector<int>& rows, const std::vector<int>& cols) {
        if (rows.size() != cols.size()) return;
        for (std::size_t k = 0; k < rows.size(); ++k)
            if (rows[k] >= 0 && cols[k] >= 0) p.col_of_row[rows[k]] = cols[k], p.row_of_col[cols[k]] = rows[k];
    };
    for (const BodyBlock& B : sys.blocks) {
        pair(B.row_a, B.f);
        pair(B.row_f, B.a);
        pair(B.row_tau, B.joint);
        const std::size_t steps = B.row_y.size();
        if (B.row_z.size() != steps || B.y.size() != steps || B.z.size() != steps) continue;
        for (std::size_t s = 0; s < steps; ++s) {
            pair(B.row_y[s], B.z[steps - 1 - s]);
            pair(B.row_z[s], B.y[steps - 1 - s]);
        }
    }
    for (const ContactBlock& C : sys.contacts) pair(C.rows, C.force);
    return p;
}

/// The numeric factorization of the order's pivots by `lu`, each recorded with why it is safe
/// (Factorization::pivots); false (with `why`) when a pivot is structurally zero at its turn or
/// the factors outgrow the bound of `opt`.
bool factor_pivots(const System& sys, const PivotOrder& order, const ScheduleOptions& opt, SparseLu& lu, Factorization& out,
                   std::string& why) {
    const long bound = opt.best_entries * opt.abandon_factor;
    for (std::size_t k = 0; k < order.pivots.size(); ++k) {
        const auto [r, c] = order.pivots[k];
        const Id p = lu.factor();
        if (p < 0) {
            why = fmt::format("pivot {} ({}, {}) is structurally zero", k, sys.rows[r].label, sys.cols[c].label);
            return false;
        }
        const bool articulated = !order.articulated.empty() && order.articulated[k];
        const PivotKind kind = out.prog.is_const(p) ? PivotKind::Constant : articulated ? PivotKind::Articulated : PivotKind::Validated;
        out.pivots.push_back({{r, c}, p, kind, 0});
        if (bound > 0 && lu.nnz_L() + lu.nnz_U() > bound) {
            why = fmt::format("abandoned after {} of {} pivots: L and U already hold {} entries, more than {}x the best "
                              "candidate", k + 1, order.pivots.size(), lu.nnz_L() + lu.nnz_U(), opt.abandon_factor);
            return false;
        }
    }
    out.nnz_L = lu.nnz_L(), out.nnz_U = lu.nnz_U();
    return true;
}

}  // namespace

std::vector<bool> lane_dependent(const ir::Program& P) {
    std::vector<bool> dep(static_cast<std::size_t>(P.size()), false);
    for (int i = 0; i < P.size(); ++i) {
        const ir::Node& n = P.node(i);
        dep[i] = (n.op == ir::Op::Input && n.source == ir::Source::Lane) || (n.a >= 0 && dep[n.a]) || (n.b >= 0 && dep[n.b]);
    }
    return dep;
}

KernelProgram kernel_program(const ir::Program& P, const LaneKernel& K, const std::vector<bool>& dep) {
    KernelProgram kp;
    const std::vector<bool> live = P.live_nodes(K.outputs);
    std::set<Id> reads;
    for (int i = 0; i < P.size(); ++i) {
        if (!live[i] || !dep[i] || P.node(i).op == ir::Op::Input) continue;
        kp.statements.push_back(i);
        for (Id o : {P.node(i).a, P.node(i).b})
            if (o >= 0 && !dep[o] && !P.is_const(o)) reads.insert(o);
    }
    kp.reads.assign(reads.begin(), reads.end());
    for (Id x : K.inputs) kp.row_read.push_back(live[x]);
    return kp;
}

const char* jacobian_form_name(JacobianForm form) {
    switch (form) {
        case JacobianForm::Forward: return "forward";
        case JacobianForm::StructuredLocal: return "structured, local frames";
        case JacobianForm::StructuredRoot: return "structured, root frame";
    }
    return "";  // (not reached: every form is named above)
}

bool run_schedule(const Model& model, const System& sys, const std::string& name, const PivotOrder& order, const ScheduleOptions& opt,
                  Factorization& out, std::string& why) {
    const Tail& tail = order.tail;
    const std::size_t npiv = order.pivots.size();
    if (npiv + tail.cols.size() != static_cast<std::size_t>(sys.n()) || npiv + tail.rows.size() != static_cast<std::size_t>(sys.m()) ||
        tail.rows.size() < tail.cols.size()) {
        why = fmt::format("the order has {} pivots and a {}x{} block for {} equations and {} unknowns", npiv, tail.rows.size(),
                          tail.cols.size(), sys.m(), sys.n());
        return false;
    }
    out = Factorization{};
    out.ordering = name;
    out.prog = sys.prog;
    ir::Program& P = out.prog;
    out.nnz_D = sys.nnz();
    out.first_factor_node = P.size();
    ir::ZeroTest zt;
    // Sensor problems: fill that cancels for every q is no structure (classical problems leave it
    // to merge_equal_values, which finds it and more).
    SparseLu lu(P, zt, sys.entries, sys.n(), order.pivots, !sys.classical);
    if (order.symmetric) {
        Pivot unmirrored{-1, -1};
        if (!lu.keep_symmetry(pairing(sys), unmirrored)) {
            why = unmirrored.row < 0 ? std::string("the system has no pairing of its rows with its unknowns")
                                     : fmt::format("D is not symmetric under the pairing of rows with unknowns at ({}, {})",
                                                   sys.rows[unmirrored.row].label, sys.cols[unmirrored.col].label);
            return false;
        }
    }
    if (!factor_pivots(sys, order, opt, lu, out, why)) return false;
    TailFactors tf;
    if (!tail.cols.empty() && !factor_tail(P, zt, sys, lu, tail, tf, out, why)) return false;
    out.first_solve_node = P.size();
    FactorSolve solve(P, sys, lu, tail, tf);
    std::vector<std::vector<Id>> xs;  // the solution for b, then for each extra right-hand side
    for (std::size_t which = 0; which <= sys.rhs.size(); ++which)
        xs.push_back(solve(which == 0 ? sys.b.value : sys.rhs[which - 1], BackSubstitution::Plain));
    out.x = xs[0];
    form_outputs(P, sys, xs, out);
    if (sys.lambda_size > 0) invert_lambda(P, sys, out);
    // a square trailing block is solved exactly by its QR: derivative columns go through it as through L and U
    if (opt.derivatives) schedule_jacobian(P, sys, model, xs[0], solve, tail.rows.size() == tail.cols.size(), opt.omit_structured_term, opt.lanes, out);
    merge_and_count(sys, opt.derivatives, out);
    out.order = order;
    return true;
}

}  // namespace nelu
