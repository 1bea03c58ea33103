// schedule.cpp: see schedule.hpp.
#include "schedule.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "derivatives.hpp"
#include "diagnostics.hpp"

namespace nelu {
namespace {

using ir::Id;

struct Lu {
    std::vector<std::map<int, Id>> A;     // active matrix, by row
    std::vector<std::set<int>> col_rows;  // active rows with an entry in each column
    std::vector<std::vector<std::pair<int, Id>>> L;  // per pivot k: (row, multiplier)
    std::vector<std::map<int, Id>> U;     // per pivot k: the pivot row (columns -> entries)
    std::vector<Id> inv;                  // per pivot: 1/p when needed, else -1
};

/// 1/p, shared by every use of pivot k (one division per non-constant pivot).
Id inverse(ir::Program& P, Lu& lu, int k, Id p) {
    if (lu.inv[k] < 0) lu.inv[k] = P.div(P.one(), p);
    return lu.inv[k];
}

/// a / p for pivot k: folds for +-1 pivots, multiplies by the shared inverse otherwise.
Id divide(ir::Program& P, Lu& lu, int k, Id a, Id p) {
    if (P.is_const(p)) return P.div(a, p);  // (a product with 1/p would hide equal values from merging)
    return P.mul(a, inverse(P, lu, k, p));
}

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

/// Entry (row, col) of the partly eliminated matrix, or zero.
Id entry(const ir::Program& P, const std::vector<std::map<int, Id>>& A, int row, int col) {
    auto e = A[row].find(col);
    return e == A[row].end() ? P.zero() : e->second;
}

/// Column j of a row-major matrix.
std::vector<Id> column(const std::vector<std::vector<Id>>& M, int j) {
    std::vector<Id> c;
    for (const std::vector<Id>& row : M) c.push_back(row[static_cast<std::size_t>(j)]);
    return c;
}

bool factor_tail(ir::Program& P, ir::ZeroTest& zt, const System& sys, const std::vector<std::map<int, Id>>& A, const Tail& tail,
                 TailFactors& tf, Factorization& out, std::string& why) {
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
            for (int a = 0; a < rb; ++a) B[j][a] = weighted(tf.sw[a], entry(P, A, tail.rows[a], tail.cols[j]));
        if (const int j = gram_qr(P, zt, std::move(B), tf.block); j >= 0) return deficient("matrix", j);
        for (int j = 0; j < kb; ++j) pivot(std::min(j, rb - 1), j, tf.block.R[j][j], PivotKind::Gram);
        out.nnz_L += static_cast<long>(rb) * kb;
        out.nnz_U += static_cast<long>(kb) * (kb + 1) / 2;
        return true;
    }
    const int p = static_cast<int>(tf.exact.size()), s = static_cast<int>(tf.soft.size());
    std::vector<std::vector<Id>> E(p, std::vector<Id>(kb)), S(s, std::vector<Id>(kb));  // row-major
    for (int i = 0; i < p; ++i)
        for (int j = 0; j < kb; ++j) E[i][j] = entry(P, A, tail.rows[tf.exact[i]], tail.cols[j]);
    for (int a = 0; a < s; ++a) {
        tf.sw.push_back(P.constant(std::sqrt(tail.weights[tf.soft[a]])));
        for (int j = 0; j < kb; ++j) S[a][j] = entry(P, A, tail.rows[tf.soft[a]], tail.cols[j]);
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
/// least-squares block, extra right-hand sides or Lambda): a classical one, without mimic joints,
/// whose outputs are joint accelerations and torques. Then a column x of q or qd is the solution
/// for a right-hand side that is zero but in the (3tau) rows, where it is d ID / d x at the solved
/// accelerations: the (3a) and (3f) rows determine a_i and f_i from qdd as before, and the joint
/// rows read M dqdd - dtau + dID/dx = 0.
bool structured_applies(const System& sys) {
    if (!sys.classical) return false;
    for (const BodyKinematics& k : sys.kinematics)
        if (k.mimic) return false;
    for (const Slot& o : sys.out)
        if (o.column < 0 || o.rhs != 0 || (o.quantity != Quantity::JointTorque && o.quantity != Quantity::JointAcceleration)) return false;
    return true;
}

/// The Jacobian of the outputs (Factorization::jacobian), in the cheapest form this problem allows:
/// forward-mode differentiation of the program (derivatives.hpp, Differentiator), or the structured
/// derivatives of inverse dynamics with either pairing frame for the q and qd columns. Each column
/// can take several forms; a form of the whole starts from its natural choice per column and moves a
/// column to another choice while that lowers the count of the whole (shared values counted once).
/// Every form is built in P (dead code is removed later) and the one with the fewest operations is
/// kept; each form's count is recorded (Factorization::derivative_forms).
template <class Solve>
void schedule_jacobian(ir::Program& P, const System& sys, const Model& model, const std::vector<Id>& x, Solve&& solve,
                       Factorization& out, bool factors_only, StructuredTerm omit) {
    const std::vector<Tangent> cols = jacobian_columns(model, static_cast<int>(sys.in.size()));
    const int m = sys.m();
    const std::size_t nc = cols.size(), no = sys.out.size();
    // A square system solved by the factors alone: D(q) x + b = 0 gives D dx = -(dD x + db), one
    // more right-hand side per column through the same factors, solved plainly or with subtree
    // transfers (run_schedule). A least-squares tail, extra right-hand sides or Lambda: forward mode
    // through the whole program instead.
    const bool by_factors = factors_only && sys.rhs.empty() && sys.lambda_size == 0 && m == sys.n();
    std::vector<int> wanted;  // the columns of the solution that the outputs read
    for (const Slot& s : sys.out) {
        if (s.column >= 0) wanted.push_back(s.column);
        for (const auto& [c, coef] : s.terms) wanted.push_back(c);
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    using Column = std::vector<Id>;  // one column of jac: an entry per output
    std::vector<std::vector<Column>> forward(nc);  // per column: plain solve, then with transfers
    for (std::size_t j = 0; j < nc; ++j) {
        Differentiator dt(P, model, cols[j]);
        if (!by_factors) {
            Column c(no);
            for (std::size_t o = 0; o < no; ++o) c[o] = dt.d(out.outputs[o]);
            forward[j].push_back(c);
            continue;
        }
        std::vector<Id> rhs(m);
        for (int r = 0; r < m; ++r) {
            Id v = dt.d(sys.b.value[r]);
            for (const auto& [c, e] : sys.entries[r]) v = P.add(v, P.mul(dt.d(e), x[c]));
            rhs[r] = v;
        }
        for (const std::vector<Id>& dx : {solve(rhs, nullptr), solve(rhs, &wanted)}) {
            Column c(no);
            for (std::size_t o = 0; o < no; ++o) {
                const Slot& s = sys.out[o];
                Id v = s.column >= 0 ? dx[s.column] : s.bias >= 0 ? dt.d(s.bias) : P.zero();
                if (s.column < 0)
                    for (const auto& [col, coef] : s.terms) v = P.add(v, P.add(P.mul(dt.d(coef), x[col]), P.mul(coef, dx[col])));
                c[o] = v;
            }
            forward[j].push_back(c);
        }
    }
    std::vector<Id> values = out.outputs;
    for (const ScheduledPivot& pv : out.pivots) values.push_back(pv.value);
    std::vector<Id> jac(no * nc);
    // the options' local search, from `pick`; leaves the chosen columns in jac. The count of the
    // whole (values and Jacobian) follows each move incrementally (ir::LiveCount).
    auto choose = [&](const std::vector<std::vector<Column>>& options, std::vector<std::size_t> pick) {
        ir::LiveCount live(P);
        for (Id v : values) live.add(v);
        for (std::size_t j = 0; j < nc; ++j)
            for (std::size_t o = 0; o < no; ++o) live.add(jac[o * nc + j] = options[j][pick[j]][o]);
        auto set = [&](std::size_t j, std::size_t k) {
            for (std::size_t o = 0; o < no; ++o) {
                const Id was = jac[o * nc + j];
                live.add(jac[o * nc + j] = options[j][k][o]);
                live.remove(was);
            }
        };
        long now = live.total();
        for (bool moved = true; moved;) {
            moved = false;
            for (std::size_t j = 0; j < nc; ++j)
                for (std::size_t k = 0; k < options[j].size(); ++k) {
                    if (k == pick[j]) continue;
                    set(j, k);
                    const long c = live.total();
                    if (c < now) now = c, pick[j] = k, moved = true;
                    else set(j, pick[j]);
                }
        }
        return now;
    };
    // from the plain solves and from the transfers, the better of the two searches
    long best = choose(forward, std::vector<std::size_t>(nc, 0));
    std::vector<Id> kept = jac;
    if (by_factors) {
        const long t = choose(forward, std::vector<std::size_t>(nc, 1));
        if (t < best) best = t, kept = jac;
    }
    jac = kept;
    out.jacobian = jac;
    out.derivative_form = "forward";
    out.derivative_forms = {{"forward", best}};
    if (!by_factors || !structured_applies(sys)) return;
    // Forward dynamics (every torque an input, every output an acceleration) has M^-1 among its
    // columns, the responses to unit torques: dqdd/dx = -M^-1 dID/dx can also be formed from them.
    std::vector<int> tau_column(static_cast<std::size_t>(model.nv), -1);  // velocity slot -> its column of jac
    for (std::size_t j = 0; j < nc; ++j)
        if (cols[j].kind == Tangent::Kind::In && sys.in[cols[j].index].quantity == Quantity::JointTorque) {
            const Slot& s = sys.in[cols[j].index];
            tau_column[sys.kinematics[s.body].v_index + s.comp] = static_cast<int>(j);
        }
    bool forward_dynamics = std::find(tau_column.begin(), tau_column.end(), -1) == tau_column.end();
    for (const Slot& o : sys.out) forward_dynamics = forward_dynamics && o.quantity == Quantity::JointAcceleration;
    for (PairFrame frame : {PairFrame::Local, PairFrame::Root}) {
        const IdDerivatives D = structured_id_derivatives(P, sys, x, frame, omit);
        auto entry = [&](const std::vector<Id>& M, std::size_t row, int col) { return M[row * D.nv + static_cast<std::size_t>(col)]; };
        // Per column: forward mode's forms; the solution for d ID / dx in the (3tau) rows, plainly or
        // with transfers (the q, qd and known accelerations' columns); -M^-1 d ID / dx from the torque
        // columns (forward dynamics, which reads them in the form the column search leaves there).
        std::vector<std::vector<Column>> options = forward;
        std::vector<std::size_t> pick(nc, 0);
        for (std::size_t j = 0; j < nc; ++j) {
            const Tangent& t = cols[j];
            const std::vector<Id>* dID = t.kind == Tangent::Kind::Q ? &D.dq : t.kind == Tangent::Kind::Qd ? &D.dqd : nullptr;
            int slot = t.index;
            if (t.kind == Tangent::Kind::In) {  // a known acceleration: d ID / d qdd_k = M[:, k]
                const Slot& s = sys.in[t.index];
                if (s.quantity != Quantity::JointAcceleration) {
                    pick[j] = 1;  // torques and wrenches: forward mode, with transfers
                    continue;
                }
                dID = &D.M, slot = sys.kinematics[s.body].v_index + s.comp;
            }
            std::vector<Id> rhs(m, P.zero());
            for (std::size_t i = 0; i < sys.kinematics.size(); ++i)
                for (std::size_t d = 0; d < sys.blocks[i].row_tau.size(); ++d)
                    rhs[sys.blocks[i].row_tau[d]] = entry(*dID, static_cast<std::size_t>(sys.kinematics[i].v_index) + d, slot);
            for (const std::vector<Id>& dx : {solve(rhs, nullptr), solve(rhs, &wanted)}) {
                Column c(no);
                for (std::size_t o = 0; o < no; ++o) c[o] = dx[sys.out[o].column];
                options[j].push_back(c);
            }
            pick[j] = options[j].size() - 1;
            if (forward_dynamics && t.kind != Tangent::Kind::In)
                for (std::size_t form = 0; form < 2; ++form) {  // from the torque columns solved plainly, or with transfers
                    Column c(no);
                    for (std::size_t o = 0; o < no; ++o) {
                        Id v = P.zero();
                        for (std::size_t k = 0; k < tau_column.size(); ++k)
                            v = P.sub(v, P.mul(forward[static_cast<std::size_t>(tau_column[k])][form][o], entry(*dID, k, slot)));
                        c[o] = v;
                    }
                    options[j].push_back(c);
                }
        }
        long c = choose(options, pick);
        std::vector<Id> kept_here = jac;
        for (std::size_t j = 0; j < nc; ++j)  // the same, starting from the plain solves
            if (pick[j] > 1 && options[j].size() > 2) pick[j] -= 1;
            else if (pick[j] == 1) pick[j] = 0;
        if (const long p = choose(options, pick); p < c) c = p, kept_here = jac;
        jac = kept_here;
        const std::string name = frame == PairFrame::Local ? "structured, local frames" : "structured, root frame";
        out.derivative_forms.push_back({name, c});
        if (c < best) best = c, out.jacobian = jac, out.derivative_form = name;
    }
}

}  // namespace

bool run_schedule(const System& sys, const std::vector<Pivot>& order, const std::vector<bool>& articulated,
                  const std::string& name, Factorization& out, std::string& why, long max_entries, const Tail& tail,
                  const Model* derivatives, StructuredTerm omit) {
    const int n = sys.n(), m = sys.m();
    const int npiv = static_cast<int>(order.size());
    out = Factorization{};
    out.ordering = name;
    out.prog = sys.prog;
    ir::Program& P = out.prog;
    out.nnz_D = sys.nnz();
    out.first_factor_node = P.size();
    ir::ZeroTest zt;
    Lu lu;
    lu.A = sys.entries;
    lu.col_rows.resize(n);
    for (int r = 0; r < m; ++r)
        for (const auto& [c, v] : lu.A[r]) lu.col_rows[c].insert(r);
    lu.L.resize(npiv), lu.U.resize(npiv), lu.inv.assign(npiv, -1);
    std::vector<bool> row_done(m, false), col_done(n, false);
    if (npiv + static_cast<int>(tail.cols.size()) != n || npiv + static_cast<int>(tail.rows.size()) != m ||
        tail.rows.size() < tail.cols.size()) {
        why = fmt::format("the order has {} pivots and a {}x{} block for {} equations and {} unknowns", npiv, tail.rows.size(),
                          tail.cols.size(), m, n);
        return false;
    }
    for (int k = 0; k < npiv; ++k) {  // numeric factorization
        const auto [r, c] = order[k];
        auto it = lu.A[r].find(c);
        if (row_done[r] || col_done[c] || it == lu.A[r].end()) {
            why = fmt::format("pivot {} ({}, {}) is structurally zero", k, sys.rows[r].label, sys.cols[c].label);
            return false;
        }
        const Id p = it->second;
        const PivotKind kind = P.is_const(p) ? PivotKind::Constant : articulated.empty() || !articulated[k] ? PivotKind::Validated : PivotKind::Articulated;
        out.pivots.push_back({{r, c}, p, kind, 0});
        lu.U[k] = lu.A[r];
        for (const auto& [j, v] : lu.A[r]) lu.col_rows[j].erase(r);
        row_done[r] = col_done[c] = true;
        std::vector<int> rows(lu.col_rows[c].begin(), lu.col_rows[c].end());
        for (int i : rows) {
            Id l = divide(P, lu, k, lu.A[i].at(c), p);
            lu.L[k].push_back({i, l});
            lu.A[i].erase(c);
            for (const auto& [j, u] : lu.U[k]) {
                if (j == c) continue;
                auto e = lu.A[i].find(j);
                Id now = P.sub(e == lu.A[i].end() ? P.zero() : e->second, P.mul(l, u));
                // Sensor problems: fill that cancels for every q is no structure (classical problems
                // leave it to merge_equal_values, which finds it and more).
                if (now == P.zero() || (!sys.classical && zt.is_zero(P, now))) {
                    if (e != lu.A[i].end()) lu.A[i].erase(e), lu.col_rows[j].erase(i);
                } else {
                    lu.A[i][j] = now;
                    lu.col_rows[j].insert(i);
                }
            }
        }
        lu.col_rows[c].clear();
        lu.A[r].clear();
        out.nnz_L += static_cast<long>(lu.L[k].size());
        out.nnz_U += static_cast<long>(lu.U[k].size());
        if (max_entries > 0 && out.nnz_L + out.nnz_U > max_entries) {
            why = fmt::format("abandoned after {} of {} pivots: L and U already hold {} entries, more than 4x the best "
                              "candidate", k + 1, n, out.nnz_L + out.nnz_U);
            return false;
        }
    }
    // The trailing block (see Tail)
    const int kb = static_cast<int>(tail.cols.size());
    TailFactors tf;
    if (kb > 0 && !factor_tail(P, zt, sys, lu.A, tail, tf, out, why)) return false;
    out.first_solve_node = P.size();
    // x_c of pivot k = (c, r) from s = y_r and the columns its row of U reads: the back substitution's step
    auto back_step = [&](int k, Id s, std::vector<Id>& x) {
        const int c = order[k].col;
        for (const auto& [j, u] : lu.U[k])
            if (j != c) s = P.sub(s, P.mul(u, x[j]));
        x[c] = divide(P, lu, k, s, out.pivots[k].value);
    };
    // Derivative columns solve D x + bvec = 0 for many right-hand sides, most of them zero in whole
    // subtrees (a joint's column touches its path to the root and its own subtree). Where the
    // forward substitution leaves y = 0 on every pivot of a subtree T, the back substitution of T's
    // columns is linear in the few columns outside T that T's rows of U read (the parent's
    // acceleration in the tree orders): x_T = K_T x_B, with K_T formed once, by back-substituting
    // T with y = 0 and each column of B set to 1 in turn. `wanted` are the columns the caller reads;
    // only those are formed inside a transferred subtree.
    const int nbodies = static_cast<int>(sys.kinematics.size());
    std::vector<std::vector<int>> body_pivots(nbodies);
    std::vector<int> pivot_of_col(n, -1);
    for (int k = 0; k < npiv; ++k) {
        pivot_of_col[order[k].col] = k;
        const int b = sys.cols[order[k].col].body;
        if (b >= 0 && b < nbodies) body_pivots[b].push_back(k);
    }
    auto in_subtree = [&](int b, int t) {
        for (; b >= 0; b = sys.kinematics[b].parent)
            if (b == t) return true;
        return false;
    };
    struct Transfer {
        bool usable = false;
        std::vector<int> pivots;    // T's pivots, in order
        std::vector<int> boundary;  // B
        std::map<int, std::vector<Id>> K;  // wanted column of T -> its coefficient per column of B
    };
    std::map<std::pair<int, std::vector<int>>, Transfer> transfers;
    auto transfer = [&](int t, const std::vector<int>& wanted) -> const Transfer& {
        auto key = std::make_pair(t, wanted);
        auto it = transfers.find(key);
        if (it != transfers.end()) return it->second;
        Transfer& T = transfers[key];
        std::vector<bool> inT(npiv, false), colT(n, false);
        for (int b = t; b < nbodies; ++b)
            if (in_subtree(b, t))
                for (int k : body_pivots[b]) inT[k] = true, colT[order[k].col] = true;
        for (int k = 0; k < npiv; ++k)
            if (inT[k]) T.pivots.push_back(k);
        std::set<int> B;
        for (int k = 0; k < npiv; ++k)
            for (const auto& [j, u] : lu.U[k]) {
                if (j == order[k].col) continue;
                if (inT[k] && !colT[j]) B.insert(j);
                if (!inT[k] && colT[j]) return T;  // T's values are read outside T: no transfer
            }
        // B must be solved after T, in the back substitution (T's rows read it)
        for (int j : B)
            if (pivot_of_col[j] < 0 || pivot_of_col[j] < T.pivots.back()) return T;
        T.boundary.assign(B.begin(), B.end());
        for (int c : wanted)
            if (colT[c]) T.K[c].assign(T.boundary.size(), P.zero());
        for (std::size_t m = 0; m < T.boundary.size(); ++m) {
            std::vector<Id> x(n, P.zero());
            x[T.boundary[m]] = P.one();
            for (auto k = T.pivots.rbegin(); k != T.pivots.rend(); ++k) back_step(*k, P.zero(), x);
            for (auto& [c, coef] : T.K) coef[m] = x[c];
        }
        T.usable = true;
        return T;
    };
    // x with D x + bvec = 0, through the factors: y = L \ (-bvec), the tail, then x = U \ y. With
    // `wanted` (a derivative column's solve), every subtree that y leaves zero is transferred.
    auto solve = [&](const std::vector<Id>& bvec, const std::vector<int>* wanted) {
        std::vector<Id> y(m);  // y = L \ (-b), in row space
        for (int r = 0; r < m; ++r) y[r] = P.neg(bvec[r]);
        for (int k = 0; k < npiv; ++k)
            for (const auto& [i, l] : lu.L[k]) y[i] = P.sub(y[i], P.mul(l, y[order[k].row]));
        std::vector<Id> x(n, -1);
        if (kb > 0) solve_tail(P, tail, tf, y, x);
        std::vector<int> skip(npiv, -1);  // pivot -> the root of the transferred subtree it belongs to
        std::vector<int> roots;
        if (wanted) {  // bodies whose whole subtree has y = 0; the highest of each such subtree is transferred
            std::vector<bool> zero(nbodies, true);
            for (int b = 0; b < nbodies; ++b)
                for (int k : body_pivots[b]) zero[b] = zero[b] && y[order[k].row] == P.zero();
            for (int b = nbodies - 1; b >= 0; --b) {
                const int p = sys.kinematics[b].parent;
                if (p >= 0 && !zero[b]) zero[p] = false;
            }
            for (int b = 0; b < nbodies; ++b) {
                const int p = sys.kinematics[b].parent;
                if (!zero[b] || (p >= 0 && zero[p]) || p < 0) continue;
                if (!transfer(b, *wanted).usable) continue;
                roots.push_back(b);
                for (int k : transfer(b, *wanted).pivots) skip[k] = b;
            }
        }
        for (int k = npiv - 1; k >= 0; --k)  // x = U \ y, last pivot first
            if (skip[k] < 0) back_step(k, y[order[k].row], x);
        for (int t : roots) {
            const Transfer& T = transfer(t, *wanted);
            for (const auto& [c, coef] : T.K) {
                Id v = P.zero();
                for (std::size_t b = 0; b < T.boundary.size(); ++b) v = P.add(v, P.mul(coef[b], x[T.boundary[b]]));
                x[c] = v;
            }
        }
        return x;
    };
    std::vector<std::vector<Id>> xs;  // the solution for b, then for each extra right-hand side
    for (std::size_t which = 0; which <= sys.rhs.size(); ++which) xs.push_back(solve(which == 0 ? sys.b.value : sys.rhs[which - 1], nullptr));
    out.x = xs[0];
    for (const Slot& s : sys.out) {
        if (s.lambda) {  // filled in below, from the Lambda^-1 outputs
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
    if (sys.lambda_size > 0) invert_lambda(P, sys, out);
    if (derivatives) schedule_jacobian(P, sys, *derivatives, xs[0], solve, out, kb == 0, omit);
    // Merge equal values (symmetric halves of the Schur complements, among others), then count
    // what the outputs and pivot checks need, split by phase.
    std::vector<Id> roots = out.outputs;
    for (const ScheduledPivot& pv : out.pivots) roots.push_back(pv.value);
    roots.insert(roots.end(), out.jacobian.begin(), out.jacobian.end());
    // Merging maps a value to its earliest occurrence, which can bring back to life a costlier
    // computation than the one it replaces: keep the merged program only when it is cheaper.
    auto cost = [&](const ir::Rewrite& r) {
        std::vector<Id> mapped;
        for (Id x : roots) mapped.push_back(r.map[x]);
        return r.prog.count(r.prog.live_nodes(mapped)).total();
    };
    std::vector<int> bounds{out.first_factor_node, out.first_solve_node};
    ir::Rewrite rw = ir::merge_equal_values(P, roots, bounds, true);
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
        out.ops_derivatives = P.count(P.live_nodes(all));
    }
    out.order = order, out.articulated = articulated, out.tail = tail;
    return true;
}

}  // namespace nelu
