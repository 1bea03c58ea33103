// order.cpp: see order.hpp.
#include "order.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>
#include <map>
#include <queue>
#include <random>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <btf.h>
#include <umfpack.h>

#include "diagnostics.hpp"
#include "nelu/state.hpp"

namespace nelu {
namespace {

struct Candidate {
    std::string name;
    PivotOrder order;
    bool nullspace_too = false;  ///< its tail can also be solved by the null-space method (Tail)
};

void push_block(Candidate& c, const std::vector<int>& rows, const std::vector<int>& cols, bool articulated = false) {
    // Sensor problems: a joint whose torque and acceleration are both known has (3tau) rows but no
    // column to pair them with; those rows are left to the trailing block.
    for (std::size_t k = 0; k < rows.size() && k < cols.size(); ++k) c.order.pivots.push_back({rows[k], cols[k]}), c.order.articulated.push_back(articulated);
}

/// Nori's inverse-dynamics permutations: accelerations root to leaves, forces leaves to root.
Candidate tree_rnea(const System& sys) {
    Candidate c{"tree-rnea", {}, false};
    const int nb = static_cast<int>(sys.blocks.size());
    for (int i = 0; i < nb; ++i) {
        const BodyBlock& B = sys.blocks[i];
        for (std::size_t s = 0; s < B.y.size(); ++s) push_block(c, B.row_y[s], B.y[s]);
        push_block(c, B.row_a, B.a);
    }
    for (int i = nb - 1; i >= 0; --i) {
        const BodyBlock& B = sys.blocks[i];
        push_block(c, B.row_f, B.f);
        for (std::size_t s = 0; s < B.z.size(); ++s) push_block(c, B.row_z[s], B.z[s]);
        push_block(c, B.row_tau, B.joint);
    }
    return c;
}

/// The articulated-body algorithm as an elimination order (leaves to root).
Candidate tree_aba(const System& sys) {
    Candidate c{"tree-aba", {}, false};
    const int nb = static_cast<int>(sys.blocks.size());
    for (int i = nb - 1; i >= 0; --i) {
        const BodyBlock& B = sys.blocks[i];
        push_block(c, B.row_f, B.f);
        push_block(c, B.row_a, B.a);
        push_block(c, B.row_tau, B.joint, B.joint_is_qdd && !B.mimic);  // a coupling pivot is 1, not S^T IA S
        const int m = static_cast<int>(B.z.size());  // m = factors - 1
        for (int s = 0; s < m; ++s) {
            push_block(c, B.row_z[s], B.z[s]);
            push_block(c, B.row_y[m - 1 - s], B.y[m - 1 - s]);
        }
    }
    return c;
}

/// Sensor problems: the articulated-body order over every body's own rows and columns, then the
/// rest (measurement rows, conditions, the (3tau) rows of joints with both quantities known; the
/// unknown wrenches and the accelerations of joints with neither known) as a Gram-matrix block.
/// The tree's pivots stay articulated inertias (a joint with both quantities unknown acts as rigid
/// in them), and the block is small: the coupling the sensors add.
Candidate tree_aba_gram(const System& sys) {
    Candidate c = tree_aba(sys);
    c.name = "tree-gram";
    const bool least_squares = sys.m() > sys.n();
    std::vector<bool> row_used(sys.m(), false), col_used(sys.n(), false);
    for (const Pivot& p : c.order.pivots) row_used[p.row] = col_used[p.col] = true;
    for (int r = 0; r < sys.m(); ++r)
        if (!row_used[r]) c.order.tail.rows.push_back(r), c.order.tail.weights.push_back(!least_squares ? 1.0 : sys.soft[r] ? 1.0 / sys.variance[r] : 0.0);
    for (int j = 0; j < sys.n(); ++j)
        if (!col_used[j]) c.order.tail.cols.push_back(j);
    return c;
}

/// UMFPACK's pivot sequence for D at a random configuration.
bool umfpack_order(const Model& model, const System& sys, Candidate& c, std::string& why) {
    c.name = "umfpack";
    std::mt19937_64 rng(0x756d6670);
    std::vector<double> q = random_configuration(model, rng), qd(model.nv, 0.0);
    Csc A = values_of(sys, q, qd);
    double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
    umfpack_di_defaults(control);
    control[UMFPACK_SCALE] = UMFPACK_SCALE_NONE;
    void *sym = nullptr, *num = nullptr;
    int st = umfpack_di_symbolic(A.n, A.n, A.p.data(), A.i.data(), A.x.data(), &sym, control, info);
    if (st == UMFPACK_OK) st = umfpack_di_numeric(A.p.data(), A.i.data(), A.x.data(), sym, &num, control, info);
    if (sym) umfpack_di_free_symbolic(&sym);
    if (st != UMFPACK_OK) {
        if (num) umfpack_di_free_numeric(&num);
        why = fmt::format("UMFPACK status {}", st);
        return false;
    }
    std::vector<int> P(A.n), Q(A.n);
    int do_recip = 0;
    st = umfpack_di_get_numeric(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, P.data(), Q.data(), nullptr, &do_recip, nullptr, num);
    umfpack_di_free_numeric(&num);
    if (st != UMFPACK_OK) {
        why = fmt::format("UMFPACK get_numeric status {}", st);
        return false;
    }
    for (int k = 0; k < A.n; ++k) c.order.pivots.push_back({P[k], Q[k]});
    return true;
}

/// A right-looking elimination of D's pattern with IR entries (products of constants fold; fill that
/// cancels for every q is dropped), for the orders that need to see the partly eliminated matrix.
struct Elimination {
    ir::Program P;
    ir::ZeroTest zt;
    std::vector<std::map<int, ir::Id>> A;  // active rows
    std::vector<std::set<int>> col_rows;   // active rows with an entry in each column
    std::vector<bool> row_done, col_done;

    explicit Elimination(const System& sys)
        : P(sys.prog), A(sys.entries), col_rows(sys.n()), row_done(sys.m(), false), col_done(sys.n(), false) {
        for (int r = 0; r < sys.m(); ++r)
            for (const auto& [j, v] : A[r]) col_rows[j].insert(r);
    }

    /// Pivot (r, j); `touched(i)` is called for every row the step updates.
    void pivot(int r, int j, const std::function<void(int)>& touched = nullptr) {
        const ir::Id p = A[r].at(j);
        const std::map<int, ir::Id> pivot_row = A[r];
        for (const auto& [jj, v] : pivot_row) col_rows[jj].erase(r);
        std::vector<int> rows(col_rows[j].begin(), col_rows[j].end());
        for (int i : rows) {
            const ir::Id l = P.div(A[i].at(j), p);
            A[i].erase(j);
            for (const auto& [jj, u] : pivot_row) {
                if (jj == j) continue;
                auto e = A[i].find(jj);
                const ir::Id v = P.sub(e == A[i].end() ? P.zero() : e->second, P.mul(l, u));
                if (v == P.zero() || zt.is_zero(P, v)) {
                    if (e != A[i].end()) A[i].erase(e), col_rows[jj].erase(i);
                } else {
                    A[i][jj] = v, col_rows[jj].insert(i);
                }
            }
            if (touched) touched(i);
        }
        col_rows[j].clear();
        A[r].clear();
        row_done[r] = col_done[j] = true;
    }

    /// The rows and columns not yet pivoted on.
    void remaining(std::vector<int>& rows, std::vector<int>& cols) const {
        for (int r = 0; r < static_cast<int>(row_done.size()); ++r)
            if (!row_done[r]) rows.push_back(r);
        for (int j = 0; j < static_cast<int>(col_done.size()); ++j)
            if (!col_done[j]) cols.push_back(j);
    }
};

/// The matrix `rows` x `cols` of the partly eliminated matrix at one configuration.
Eigen::MatrixXd block_values(Elimination& e, ir::PointValues& at, const std::vector<int>& rows, const std::vector<int>& cols) {
    Eigen::MatrixXd B = Eigen::MatrixXd::Zero(static_cast<long>(rows.size()), static_cast<long>(cols.size()));
    for (std::size_t a = 0; a < rows.size(); ++a)
        for (std::size_t j = 0; j < cols.size(); ++j)
            if (auto it = e.A[rows[a]].find(cols[j]); it != e.A[rows[a]].end()) B(static_cast<long>(a), static_cast<long>(j)) = at.at(e.P, it->second);
    return B;
}

/// Numeric rank: singular values above 1e-9 of the largest.
int numeric_rank(const Eigen::MatrixXd& B) {
    if (B.size() == 0) return 0;
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(B);
    const Eigen::VectorXd& sv = svd.singularValues();
    int r = 0;
    for (long k = 0; k < sv.size(); ++k) r += sv(k) > 1e-9 * sv(0);
    return r;
}

/// Random configurations at which the exact rows of a trailing block are sampled to choose its basis.
constexpr int kBasisConfigs = 8;

/// A least-squares tail with exact rows E (after the order's pivots in `e`): Tail::basis for direct
/// elimination, columns of E that span E's range at a few random configurations, chosen by column
/// pivoting over them (validated with the other pivots later). When E has full row rank,
/// `nullspace` says that the null-space method applies too (Tail::nullspace); when no basis is
/// found it is then the only method. False (with `why`) when neither applies.
bool constraint_basis(const Model& model, const System& sys, Elimination& e, Tail& tail, bool& nullspace, std::string& why) {
    std::vector<int> exact;
    bool soft = false;
    for (std::size_t a = 0; a < tail.rows.size(); ++a) (tail.weights[a] == 0 ? exact.push_back(tail.rows[a]) : void(soft = true));
    tail.basis.clear(), tail.nullspace = nullspace = false;
    if (exact.empty() || !soft || tail.cols.empty()) return true;
    std::mt19937_64 rng(0x62617369);
    std::vector<Eigen::MatrixXd> E;
    int rank = 0;
    bool full = true;
    for (int k = 0; k < kBasisConfigs; ++k) {
        ir::PointValues at(random_configuration(model, rng), std::vector<double>(model.nv, 0.0),
                           std::vector<double>(std::max<std::size_t>(1, sys.in.size()), 0.0));
        E.push_back(block_values(e, at, exact, tail.cols));
        const int r = numeric_rank(E.back());
        rank = std::max(rank, r), full = full && r == static_cast<int>(exact.size());
    }
    // Column pivoting over the configurations: each step takes the column whose part outside the
    // span of those taken is largest at its worst configuration (relative to the largest column
    // there), so that the basis is as far from dependent as the samples can tell.
    std::vector<Eigen::MatrixXd> R = E;  // the columns with the basis' span projected out, per configuration
    std::vector<double> scale;
    for (const Eigen::MatrixXd& Ek : E) scale.push_back(std::max(Ek.colwise().norm().maxCoeff(), 1e-300));
    while (static_cast<int>(tail.basis.size()) < rank) {
        int best = -1;
        double best_norm = 0;
        for (int j = 0; j < static_cast<int>(tail.cols.size()); ++j) {
            if (std::find(tail.basis.begin(), tail.basis.end(), j) != tail.basis.end()) continue;
            double worst = INFINITY;
            for (std::size_t k = 0; k < R.size(); ++k) worst = std::min(worst, R[k].col(j).norm() / scale[k]);
            if (worst > best_norm) best = j, best_norm = worst;
        }
        if (best < 0 || !(best_norm > 1e-9)) break;
        tail.basis.push_back(best);
        for (Eigen::MatrixXd& Rk : R) {  // project the new direction out of every column (modified Gram-Schmidt)
            const Eigen::VectorXd q = Rk.col(best) / Rk.col(best).norm();
            Rk -= q * (q.transpose() * Rk);
        }
    }
    nullspace = full;
    if (static_cast<int>(tail.basis.size()) == rank) return true;
    tail.basis.clear();
    if (full) return tail.nullspace = true;
    why = fmt::format("the {} exact equations left with the measurements have rank {} at random configurations, and no fixed set of "
                      "their unknowns spans them", exact.size(), rank);
    return false;
}

/// Completes `c` with UMFPACK's pivot order for the active block (rows x cols of the partly
/// eliminated matrix A, entries in P) at a random configuration.
bool order_block(const Model& model, const System& sys, const Elimination& e, const std::vector<int>& rows,
                 const std::vector<int>& cols, int variant, Candidate& c, std::string& why) {
    const ir::Program& P = e.P;
    const auto& A = e.A;
    const int m = static_cast<int>(rows.size());
    std::vector<int> col_index(sys.n(), -1);
    for (std::size_t k = 0; k < cols.size(); ++k) col_index[cols[k]] = static_cast<int>(k);
    if (static_cast<int>(cols.size()) != m) {
        why = fmt::format("the remaining block is {}x{}", rows.size(), cols.size());
        return false;
    }
    std::vector<ir::Id> roots;
    for (int r : rows)
        for (const auto& [j, v] : A[r]) roots.push_back(v);
    std::mt19937_64 rng(0x636f6e73 + static_cast<unsigned>(variant));
    std::vector<double> q = random_configuration(model, rng), qd(model.nv, 0.0), in(std::max<std::size_t>(1, sys.in.size()), 0.0);
    std::vector<double> val = P.evaluate(q.data(), qd.data(), in.data(), P.live_nodes(roots));
    std::vector<std::vector<std::pair<int, double>>> by_col(m);
    for (int a = 0; a < m; ++a)
        for (const auto& [j, v] : A[rows[a]]) by_col[col_index[j]].push_back({a, val[v]});
    std::vector<int> Ap(m + 1, 0), Ai;
    std::vector<double> Ax;
    for (int b = 0; b < m; ++b) {
        for (const auto& [a, x] : by_col[b]) Ai.push_back(a), Ax.push_back(x);
        Ap[b + 1] = static_cast<int>(Ai.size());
    }
    double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
    umfpack_di_defaults(control);
    control[UMFPACK_SCALE] = UMFPACK_SCALE_NONE;
    if (variant % 2 == 1) control[UMFPACK_PIVOT_TOLERANCE] = 1.0;  // strict partial pivoting
    void *sym = nullptr, *num = nullptr;
    int st = umfpack_di_symbolic(m, m, Ap.data(), Ai.data(), Ax.data(), &sym, control, info);
    if (st == UMFPACK_OK) st = umfpack_di_numeric(Ap.data(), Ai.data(), Ax.data(), sym, &num, control, info);
    if (sym) umfpack_di_free_symbolic(&sym);
    std::vector<int> Pm(m), Qm(m);
    if (st == UMFPACK_OK) st = umfpack_di_get_numeric(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, Pm.data(), Qm.data(), nullptr, nullptr, nullptr, num);
    if (num) umfpack_di_free_numeric(&num);
    if (st != UMFPACK_OK) {
        why = fmt::format("UMFPACK status {} on the remaining {}x{} block", st, m, m);
        return false;
    }
    for (int k = 0; k < m; ++k) c.order.pivots.push_back({rows[Pm[k]], cols[Qm[k]]}), c.order.articulated.push_back(false);
    return true;
}

/// The elimination of `order` (false, with `why`, when a pivot is structurally zero at its turn).
bool eliminate(const System& sys, const std::vector<Pivot>& order, Elimination& e, std::string& why) {
    for (const Pivot& p : order) {
        if (!e.A[p.row].count(p.col)) {
            why = fmt::format("pivot ({}, {}) is structurally zero", sys.rows[p.row].label, sys.cols[p.col].label);
            return false;
        }
        e.pivot(p.row, p.col);
    }
    return true;
}

/// tree-gram's Tail::basis (constraint_basis), from the elimination of its order.
bool tree_gram_basis(const Model& model, const System& sys, Candidate& c, std::string& why) {
    bool exact = false, soft = false;
    for (double w : c.order.tail.weights) (w == 0 ? exact : soft) = true;
    if (!exact || !soft) return true;
    Elimination e(sys);
    return eliminate(sys, c.order.pivots, e, why) && constraint_basis(model, sys, e, c.order.tail, c.nullspace_too, why);
}

/// Rigid contacts (forward dynamics and impulses): the articulated-body order over the
/// bodies' own rows and columns, then the Baumgarte references' rows u - in = 0 on their u
/// (constant pivots), then what the contact rows leave, the contacts' Schur complement
/// J M^-1 J^T + mu 1 (up to the rows' common scaling), by its diagonal: each contact row with its
/// own force component, contacts in the spec's order, as the contact Cholesky of
/// constraintDynamics orders it. The pivots are those of an LDL^T of a definite matrix, bounded
/// away from zero wherever the contact set is regular, where UMFPACK's choice for the same block
/// at one configuration (tree-lu) may pair a row with another component's force, whose value
/// crosses zero elsewhere (the Solo-12's four feet).
bool tree_contact(const System& sys, Candidate& c, std::string& why) {
    Candidate t = tree_aba(sys);
    c.name = "tree-contact";
    c.order.pivots = t.order.pivots, c.order.articulated = t.order.articulated;
    if (sys.contacts.empty()) {
        why = "no contacts";
        return false;
    }
    for (const ContactBlock& cb : sys.contacts)
        for (std::size_t k = 0; k < cb.reference.size(); ++k) c.order.pivots.push_back({cb.reference_rows[k], cb.reference[k]}), c.order.articulated.push_back(false);
    for (const ContactBlock& cb : sys.contacts)
        for (std::size_t k = 0; k < cb.rows.size(); ++k) c.order.pivots.push_back({cb.rows[k], cb.force[k]}), c.order.articulated.push_back(false);
    if (static_cast<int>(c.order.pivots.size()) != sys.n() || sys.m() != sys.n()) {
        why = fmt::format("the tree's and the contacts' pivots leave {} of {} columns", sys.n() - static_cast<int>(c.order.pivots.size()), sys.n());
        return false;
    }
    Elimination e(sys);
    return eliminate(sys, c.order.pivots, e, why);
}

/// Sensor problems: the articulated-body order over the bodies' own rows and columns (see
/// tree_aba_gram), then UMFPACK's order for the remaining block of the partly eliminated matrix.
bool tree_aba_lu(const Model& model, const System& sys, Candidate& c, std::string& why) {
    Candidate t = tree_aba(sys);
    c.name = "tree-lu";
    c.order.pivots = t.order.pivots, c.order.articulated = t.order.articulated;
    const int n = sys.n(), mrows = sys.m();
    if (mrows != n) {
        why = "an over-determined system is solved by least squares (const-gram, tree-gram)";
        return false;
    }
    Elimination e(sys);
    if (!eliminate(sys, c.order.pivots, e, why)) return false;
    std::vector<int> rows, cols;
    e.remaining(rows, cols);
    return order_block(model, sys, e, rows, cols, 0, c, why);
}

/// A constant pivot must be at least this fraction of every other entry of its column, or of every
/// other entry of its row (their largest |value| at a few random configurations): threshold
/// pivoting among the constants, in either direction because the rows and the columns of D carry
/// different units (a (3a) row's -1 on a_i beside inertias in a_i's column is a fine pivot, and so
/// is a (3f) row's -1 on f_i beside inertias in its row). A CAD exporter's cos(1.57079632679) =
/// 4.9e-12 is a constant too, small in its row and in its column: as a pivot it would multiply the
/// rest of its column by 1e11.
constexpr double kConstantPivotThreshold = 0.1;

/// The largest |value| of IR node x of the elimination at the sample configurations.
double magnitude(Elimination& e, std::vector<ir::PointValues>& at, ir::Id x) {
    double v = 0;
    for (ir::PointValues& p : at) v = std::max(v, std::abs(p.at(e.P, x)));
    return v;
}

/// Constant pivots first: a right-looking elimination of the pattern (in the IR, so that products of
/// constants fold) that always takes, among the active entries that are structural constants and
/// not small in their column (kConstantPivotThreshold), one of least Markowitz cost (r - 1)(c - 1);
/// when none is left, the remaining block (the part of the problem that couples through
/// q-dependent entries, e.g. the joint-space block of a sensor problem) is ordered by UMFPACK at a
/// random configuration. Every pivot of the first phase is a nonzero constant; only the block's
/// need validation.
/// variant < 0: the block is left to Gram-Schmidt (Tail), with pivot rows restricted to the exact
/// rows when the system is over-determined.
bool constant_first(const Model& model, const System& sys, Candidate& c, std::string& why, int variant) {
    c.name = variant < 0 ? "const-gram" : variant == 0 ? "const-first" : fmt::format("const-first/{}", variant);
    const int n = sys.n(), mrows = sys.m();
    const bool least_squares = mrows > n;
    Elimination e(sys);
    std::vector<ir::PointValues> at;  // the entries' values at a few configurations, as they are formed
    std::mt19937_64 rng(0x6d61676e);
    for (int k = 0; k < 3; ++k)
        at.emplace_back(random_configuration(model, rng), std::vector<double>(model.nv, 0.0),
                        std::vector<double>(std::max<std::size_t>(1, sys.in.size()), 0.0));
    using Item = std::tuple<long, int, int>;  // cost, row, col
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
    std::vector<std::vector<Item>> deferred(n);  // per column: constants too small in it, for now
    auto cost = [&](int r, int j) { return static_cast<long>(e.A[r].size() - 1) * static_cast<long>(e.col_rows[j].size() - 1); };
    auto push_row = [&](int r) {
        if (least_squares && sys.soft[r]) return;  // a measurement is never used as an exact equation
        for (const auto& [j, v] : e.A[r])
            if (e.P.is_const(v)) heap.push({cost(r, j), r, j});
    };
    auto large_enough = [&](int r, int j) {
        const double p = std::abs(e.P.value(e.A[r].at(j)));
        bool in_column = true, in_row = true;
        for (int i : e.col_rows[j])
            if (i != r && p < kConstantPivotThreshold * magnitude(e, at, e.A[i].at(j))) in_column = false;
        for (const auto& [jj, v] : e.A[r])
            if (jj != j && p < kConstantPivotThreshold * magnitude(e, at, v)) in_row = false;
        return in_column || in_row;
    };
    for (int r = 0; r < mrows; ++r) push_row(r);
    int done = 0;
    while (!heap.empty()) {
        auto [k, r, j] = heap.top();
        heap.pop();
        if (e.row_done[r] || e.col_done[j]) continue;
        auto it = e.A[r].find(j);
        if (it == e.A[r].end() || !e.P.is_const(it->second)) continue;
        const long now = cost(r, j);
        if (now != k) {  // the cost changed since it was queued: queue it again
            heap.push({now, r, j});
            continue;
        }
        if (!large_enough(r, j)) {  // queued again when its column or its row changes
            deferred[j].push_back({now, r, j});
            continue;
        }
        c.order.pivots.push_back({r, j}), c.order.articulated.push_back(false);
        ++done;
        std::vector<int> changed;  // the columns of the pivot row, whose deferred pivots are queued again
        for (const auto& entry : e.A[r]) changed.push_back(entry.first);
        e.pivot(r, j, push_row);
        for (int jj : changed) {
            for (const Item& d : deferred[jj]) heap.push(d);
            deferred[jj].clear();
        }
    }
    if (done == n && !least_squares) return true;
    std::vector<int> rows, cols;
    e.remaining(rows, cols);
    if (variant < 0) {  // the block by Gram-Schmidt (Tail)
        c.order.tail.rows = rows, c.order.tail.cols = cols;
        for (int r : rows) c.order.tail.weights.push_back(!least_squares ? 1.0 : sys.soft[r] ? 1.0 / sys.variance[r] : 0.0);
        return constraint_basis(model, sys, e, c.order.tail, c.nullspace_too, why);
    }
    if (least_squares) {
        why = "an over-determined system is solved by least squares (const-gram, tree-gram)";
        return false;
    }
    return order_block(model, sys, e, rows, cols, variant, c, why);
}

/// The triangular order of btf_order (its blocks are 1x1; the form is upper triangular, so the
/// last block is eliminated first).
Candidate btf_triangular(const Analysis& an) {
    Candidate c{"btf", {}, false};
    for (int k = an.n - 1; k >= 0; --k) {
        int col = an.btf_Q[k] < 0 ? BTF_UNFLIP(an.btf_Q[k]) : an.btf_Q[k];
        c.order.pivots.push_back({an.btf_P[k], col});
    }
    return c;
}

/// Configurations for validation: the special ones, every joint alike and then each at its own
/// multiple of pi/2 or limit with the floating base turned (mixed_configurations; their number in
/// `special`), then random ones up to `count` in all and at least `random` of them. A pivot that
/// vanishes where two joints meet at multiples of pi/2 (a pose users hold, and one the random
/// configurations come near but never reach) is caught here, not at run time as
/// NELU_STATUS_SMALL_PIVOT on a problem that is regular there.
std::vector<std::vector<double>> validation_configurations(const Model& model, int count, bool random_only = false, int* special = nullptr,
                                                           int random = 0) {
    std::mt19937_64 rng(0x76616c69);
    std::vector<std::vector<double>> qs;
    if (!random_only) {
        qs = special_configurations(model, rng);
        for (auto& q : mixed_configurations(model, rng)) qs.push_back(std::move(q));
    }
    if (special) *special = static_cast<int>(qs.size());
    const std::size_t total = std::max(static_cast<std::size_t>(std::max(count, 0)), qs.size() + static_cast<std::size_t>(random));
    while (qs.size() < total) qs.push_back(random_configuration(model, rng));
    return qs;
}

/// Configuration q for a message: a floating base's orientation, then the one-DoF joints, "joint =
/// pi/2, ..." (angles that are multiples of pi/2 as such), up to 40 joints and how many more.
std::string configuration_text(const Model& model, const std::vector<double>& q) {
    std::string s;
    int shown = 0, more = 0;
    for (const Body& b : model.bodies)
        if (b.type == JointType::Floating) {
            const double* x = q.data() + b.q_index + 3;
            s += fmt::format("{}{} turned by the quaternion [x y z w] = [{:.6g} {:.6g} {:.6g} {:.6g}]", shown++ ? ", " : "", b.joint_name, x[0], x[1], x[2], x[3]);
        }
    for (const Body& b : model.bodies) {
        if (b.nq() != 1 || b.is_mimic()) continue;
        if (shown == 40) {
            ++more;
            continue;
        }
        const double x = q[static_cast<std::size_t>(b.q_index)];
        std::string v = fmt::format("{:.6g}", x);
        if (b.type == JointType::Revolute)
            for (const auto& [a, name] : {std::pair<double, const char*>{0.0, "0"}, {M_PI / 2, "pi/2"}, {-M_PI / 2, "-pi/2"}, {M_PI, "pi"}, {-M_PI, "-pi"}})
                if (x == a) v = name;
        s += fmt::format("{}{} = {}", shown++ ? ", " : "", b.joint_name, v);
    }
    return more ? fmt::format("{} and {} more", s, more) : s;
}

/// A basis pivot of a trailing block's exact rows (Tail::basis) that is not safe: the candidate is
/// refused, and when no candidate is left, `diagnosis` says why the exact rows may be to blame.
struct BasisPivotError : IllPosedError {
    BasisPivotError(const std::string& why, std::string d) : IllPosedError(why), diagnosis(std::move(d)) {}
    std::string diagnosis;
};

/// Why exact rows that lose rank at configuration q (where the trailing block `t`'s exact rows lose
/// it) make the problem ill-posed (PivotKind::Constraint): which equations combine there.
std::string conflict_diagnosis(const System& sys, const Tail& t, const std::vector<double>& q, const std::vector<double>& qd, bool special_only) {
    std::string rows = sys.n() <= 4000 ? dependent_exact_rows(sys, q, qd) : std::string();
    if (rows.empty()) {  // (too large, or the loss is below the dense threshold there): the block's own rows
        int named = 0;
        for (std::size_t a = 0; a < t.rows.size(); ++a)
            if (t.weights[a] == 0 && named++ < 8) rows += (rows.empty() ? "" : ", ") + sys.rows[t.rows[a]].label;
    }
    return fmt::format("ill-posed: exact equations in conflict at some configurations: {} combine there, and the known quantities "
                       "would then have to satisfy them by themselves, which general inputs do not.\n"
                       "  Measure one of those known quantities instead of knowing it (a sensor's reading is fitted, not imposed), "
                       "or know fewer of them{}", rows,
                       special_only ? "\n  (only at special configurations: 'allow_singular_configurations: true' in the spec generates a "
                                      "solver that returns NELU_STATUS_SMALL_PIVOT near them)" : "");
}

/// Growth of the factorization: max |value| of its nodes over max |entry of D|, at a few configurations.
double factorization_growth(const Model& model, const System& sys, const Factorization& f) {
    std::vector<ir::Id> entries, roots;
    for (const auto& row : sys.entries)
        for (const auto& [c, v] : row)
            if (f.system_map[v] >= 0) entries.push_back(f.system_map[v]);
    roots = entries;  // the factorization proper: pivots and what they need (no inputs involved)
    for (const ScheduledPivot& p : f.pivots) roots.push_back(p.value);
    std::vector<bool> live = f.prog.live_nodes(roots);
    std::vector<double> qd(model.nv, 0.0), in(std::max<std::size_t>(1, sys.in.size()), 0.0);
    double growth = 0;
    for (const auto& q : validation_configurations(model, 0, sys.allow_special_singularities, nullptr, 6)) {  // the special ones and 6 random
        std::vector<double> val = f.prog.evaluate(q.data(), qd.data(), in.data(), live);
        double a = 0, u = 0;
        for (ir::Id e : entries) a = std::max(a, std::abs(val[e]));
        for (int i = f.first_factor_node; i < f.first_solve_node; ++i)
            if (live[i]) u = std::max(u, std::abs(val[i]));
        if (a > 0) growth = std::max(growth, u / a);
    }
    return growth;
}

/// A validated pivot whose |value| ranges over more than six decades across the configurations is
/// refused: sampled pivots that come this close to zero are crossing it somewhere between the
/// samples (the range keeps widening with more samples), and a six-decade range already costs a
/// float solver all of its digits. Pivots that are bounded away from zero sit far above this (the
/// shipped problems' worst is 2.7e-5), so the choice of order does not depend on how many
/// configurations were sampled.
constexpr double kMinPivotRatio = 1e-6;
constexpr int kLambdaConfigs = 200;  ///< configurations that set Lambda's pivot thresholds

PivotValidation validate_pivots(const Model& model, const System& sys, Factorization& f, const OrderOptions& opt) {
    PivotValidation v;
    const Tail& tail = f.order.tail;
    v.growth = factorization_growth(model, sys, f);
    std::vector<ir::Id> roots;
    std::vector<int> which;
    bool needs_full = false;
    for (std::size_t k = 0; k < f.pivots.size(); ++k)
        if (f.pivots[k].kind != PivotKind::Constant) {
            roots.push_back(f.pivots[k].value), which.push_back(static_cast<int>(k));
            needs_full = needs_full || f.pivots[k].kind == PivotKind::Validated || f.pivots[k].kind == PivotKind::Gram ||
                         f.pivots[k].kind == PivotKind::Constraint;
        }
    v.checked_pivots = static_cast<int>(roots.size());
    if (roots.empty()) return v;
    const int count = needs_full ? opt.validation_configs : std::min(opt.validation_configs, 200);
    std::vector<bool> live = f.prog.live_nodes(roots);
    std::vector<double> lo(roots.size(), INFINITY), hi(roots.size(), 0.0), qd(model.nv, 0.0),
        in(std::max<std::size_t>(1, sys.in.size()), 0.0);
    std::vector<double> lo_random(roots.size(), INFINITY);  // over the random configurations only
    std::vector<int> where(roots.size(), -1);  // the configuration of the smallest |pivot|
    int special = 0;
    const std::vector<std::vector<double>> qs = validation_configurations(model, count, sys.allow_special_singularities, &special);
    for (const auto& q : qs) {
        std::vector<double> val = f.prog.evaluate(q.data(), qd.data(), in.data(), live);
        for (std::size_t k = 0; k < roots.size(); ++k) {
            double a = std::abs(val[roots[k]]);
            if (!std::isfinite(a)) a = 0;  // NaN or infinity (after an exact zero pivot) counts as a zero pivot
            if (a < lo[k]) where[k] = v.configurations;
            lo[k] = std::min(lo[k], a);
            if (v.configurations >= special) lo_random[k] = std::min(lo_random[k], a);
            // Lambda's thresholds come from the first kLambdaConfigs configurations only, so that
            // the emitted code does not depend on --validate
            if (f.pivots[which[k]].kind != PivotKind::Lambda || v.configurations < kLambdaConfigs) hi[k] = std::max(hi[k], a);
        }
        ++v.configurations;
    }
    double lambda_scale = 0;  // the largest Lambda pivot seen
    for (std::size_t k = 0; k < roots.size(); ++k)
        if (f.pivots[which[k]].kind == PivotKind::Lambda) lambda_scale = std::max(lambda_scale, hi[k]);
    v.worst_ratio = 1;
    std::map<int, std::string> rank_losses;  // configuration -> rank_loss_at there
    int conflict = -1;  // a configuration where the exact rows of the trailing block lose rank
    bool conflict_random = false;  // ... and whether they do at random configurations
    for (std::size_t k = 0; k < roots.size(); ++k)
        if (f.pivots[which[k]].kind == PivotKind::Constraint && (!(lo[k] > 0) || lo[k] < kMinPivotRatio * hi[k])) {
            if (conflict < 0) conflict = where[k];
            conflict_random = conflict_random || !(lo_random[k] > 0) || lo_random[k] < kMinPivotRatio * hi[k];
        }
    if (conflict >= 0) throw OrderIndependentError(conflict_diagnosis(sys, tail, qs[static_cast<std::size_t>(conflict)], qd, !conflict_random));
    for (std::size_t k = 0; k < roots.size(); ++k) {
        double ratio = hi[k] > 0 ? lo[k] / hi[k] : 0;
        ScheduledPivot& p = f.pivots[which[k]];
        if (p.kind == PivotKind::Lambda) {
            // Lambda does not exist at a kinematic singularity, which the configurations may well
            // include: no refusal here. At run time a pivot d_j under its threshold (or negative:
            // the check is signed) returns NELU_STATUS_SMALL_PIVOT. The thresholds are relative to
            // the largest d_j seen and rounded down to a power of ten (for determinism): 1e-10 in
            // double and 1e-4 in float, so that a Lambda returned keeps about six digits in double
            // and three in float (its relative error grows like the rounding unit over d_j / max).
            if (!(hi[k] > 1e-9 * lambda_scale))
                throw OrderIndependentError(fmt::format(
                    "Lambda does not exist: Lambda^-1 is singular at every one of {} configurations (its pivot {} never "
                    "exceeds 1e-9 of the largest): the robot cannot move the operational points' coordinates independently. "
                    "Drop 'lambda', or use fewer points or fewer coordinates per point (dof: 3 keeps the linear ones)",
                    std::min(v.configurations, kLambdaConfigs), p.lambda_index));
            p.threshold = std::pow(10.0, std::floor(std::log10(1e-10 * hi[k])));
            p.threshold_float = std::pow(10.0, std::floor(std::log10(1e-4 * hi[k])));
            continue;
        }
        // 1e-6 of the smallest |pivot| seen, rounded down to a power of ten so that the emitted
        // code does not depend on the last bits of the validation
        p.threshold = p.threshold_float = lo[k] > 0 ? std::pow(10.0, std::floor(std::log10(1e-6 * lo[k]))) : 0.0;
        if (ratio < v.worst_ratio) {
            v.worst_ratio = ratio;
            v.worst_pivot = fmt::format("({}, {})", sys.rows[p.at.row].label, sys.cols[p.at.col].label);
        }
        // A pivot that vanishes (or comes within kMinPivotRatio of it) at a special configuration:
        // D itself may lose rank there, whatever the order (the problem is ill-posed there: said
        // so, with the remedy when the random configurations are regular). Otherwise a validated
        // pivot that small is this order's own (the candidate is refused below); a Gram pivot (a
        // norm of a trailing block's column, r_jj of its QR) stays positive wherever the block has
        // full rank, and a small one is the problem's conditioning, which the QR solves backward
        // stably: it is refused only at exactly zero.
        const bool validated_like = p.kind == PivotKind::Validated || p.kind == PivotKind::Gram;
        const bool small = !(lo[k] > 0) || (validated_like && ratio < kMinPivotRatio);
        const bool unsafe = !(lo[k] > 0) || (p.kind == PivotKind::Validated && ratio < kMinPivotRatio);
        // (D's rank is looked at where a special configuration is the worst, or a norm is exactly zero:
        // a candidate refused at a random configuration costs no dense factorization)
        if (small && validated_like && sys.n() <= 4000 && (where[k] < special || (p.kind == PivotKind::Gram && !(lo[k] > 0)))) {
            auto at = rank_losses.find(where[k]);  // (one dense factorization per configuration)
            if (at == rank_losses.end()) at = rank_losses.emplace(where[k], rank_loss_at(model, sys, qs[static_cast<std::size_t>(where[k])], qd)).first;
            const std::string& loss = at->second;
            // the remedy where the loss is at a special configuration only: D has full rank at
            // random ones (checked before the orders: analyze.cpp check_configurations)
            if (!loss.empty())
                throw OrderIndependentError(fmt::format(
                    "ill-posed: the equations lose rank at {} ({} of the {} configurations that validate the pivots: {}): {}{}",
                    where[k] < special ? "a special configuration (the joints at multiples of pi/2 or at limits)" : "a random configuration",
                    where[k] + 1, v.configurations, configuration_text(model, qs[static_cast<std::size_t>(where[k])]), loss,
                    where[k] < special
                        ? "\n  (the rank is full at random configurations: 'allow_singular_configurations: true' in the spec "
                          "generates a solver that returns NELU_STATUS_SMALL_PIVOT near the singular configurations)" : ""));
        }
        if (unsafe) {
            const auto row = std::find(tail.rows.begin(), tail.rows.end(), p.at.row);
            const bool basis = !tail.basis.empty() && row != tail.rows.end() && tail.weights[static_cast<std::size_t>(row - tail.rows.begin())] == 0;
            const std::string why = fmt::format("pivot ({}, {}) of ordering {} is not safe: |pivot| ranges over [{:.3g}, {:.3g}] "
                                                "across {} configurations", sys.rows[p.at.row].label, sys.cols[p.at.col].label,
                                                f.ordering, lo[k], hi[k], v.configurations);
            if (basis) throw BasisPivotError(why + " (it eliminates the exact equations left with the measurements)",
                                             conflict_diagnosis(sys, tail, qs[static_cast<std::size_t>(where[k])], qd, false));
            throw IllPosedError(why);
        }
    }
    return v;
}

}  // namespace

/// A candidate whose L and U grow past this many times the entries of the best one factored so far
/// is abandoned (run_schedule): it is unlikely to win, and would cost the most to finish.
constexpr long kAbandonFactor = 4;

OrderResult run_order(const Model& model, const System& sys, const Analysis& an, const OrderOptions& opt) {
    // The most promising candidate first: its size bounds the others'.
    bool seeks_qdd = false;
    for (const BodyBlock& B : sys.blocks) seeks_qdd = seeks_qdd || (B.joint_is_qdd && !B.joint.empty());
    std::vector<Candidate> cands;
    OrderResult res;
    if (!seeks_qdd && sys.classical) cands.push_back(tree_rnea(sys));
    // The tree orders again, eliminating symmetrically (PivotOrder::symmetric): where the system is
    // proven symmetric under its pairing each mirrored Schur entry is computed once; the value
    // numbering of the plain elimination sometimes shares more, so both are costed.
    auto push_symmetric = [&](const Candidate& c) {
        Candidate s = c;
        s.name += "/symmetric", s.order.symmetric = true;
        cands.push_back(s);
    };
    if (sys.classical) cands.push_back(tree_aba(sys)), push_symmetric(cands.back());
    if (an.triangular && sys.m() == sys.n()) cands.push_back(btf_triangular(an));
    Candidate um;
    std::string why;
    if (sys.m() == sys.n()) {
        if (umfpack_order(model, sys, um, why)) cands.push_back(um);
        else res.candidates.push_back({"umfpack", false, why, {}, 0});
    }
    if (!sys.classical) {
        // a Gram candidate whose exact rows can also be eliminated by the null-space method: both
        auto push_gram = [&](const Candidate& c) {
            cands.push_back(c);
            if (!c.nullspace_too || c.order.tail.nullspace) return;
            Candidate ns = c;
            ns.name += "/nullspace", ns.order.tail.nullspace = true, ns.order.tail.basis.clear();
            cands.push_back(ns);
        };
        if (!sys.contacts.empty()) {
            Candidate tc;
            if (tree_contact(sys, tc, why)) cands.push_back(tc), push_symmetric(tc);
            else res.candidates.push_back({"tree-contact", false, why, {}, 0});
        }
        Candidate tg = tree_aba_gram(sys);
        if (tree_gram_basis(model, sys, tg, why)) push_gram(tg);
        else res.candidates.push_back({tg.name, false, why, {}, 0});
        Candidate tl;
        if (tree_aba_lu(model, sys, tl, why)) cands.push_back(tl);
        else if (sys.m() == sys.n()) res.candidates.push_back({"tree-lu", false, why, {}, 0});
        for (int variant = -1; variant < (sys.m() > sys.n() ? 0 : 2); ++variant) {
            Candidate cf;
            if (constant_first(model, sys, cf, why, variant)) (variant < 0 ? push_gram(cf) : cands.push_back(cf));
            else res.candidates.push_back({cf.name, false, why, {}, 0});
        }
    }
    if (seeks_qdd && sys.classical) cands.push_back(tree_rnea(sys));  // forms a dense joint-space block: last, bounded
    std::vector<Factorization> ok;
    long best_entries = 0;
    for (const Candidate& c : cands) {
        if (opt.progress) std::fprintf(stderr, "nelu: order: factoring with candidate %s (%d columns)\n", c.name.c_str(), sys.n());
        Factorization f;
        CandidateReport rep{c.name, false, "", {}, 0};
        ScheduleOptions so;
        so.best_entries = best_entries, so.abandon_factor = kAbandonFactor;
        rep.ok = run_schedule(model, sys, c.name, c.order, so, f, rep.why);
        if (rep.ok) {
            rep.ops = f.ops, rep.fill = f.fill();
            const long entries = f.nnz_L + f.nnz_U;
            best_entries = best_entries == 0 ? entries : std::min(best_entries, entries);
            ok.push_back(std::move(f));
        }
        res.candidates.push_back(rep);
    }
    // Fewest operations first (stable: ties keep the candidate order); the first whose pivots are
    // safe wins.
    std::stable_sort(ok.begin(), ok.end(), [](const Factorization& a, const Factorization& b) { return a.ops.total() < b.ops.total(); });
    std::string reasons, diagnosis;
    std::vector<std::string> judged;  // candidates refused below (their reasons are in `reasons`)
    for (Factorization& f : ok) {
        if (opt.progress) std::fprintf(stderr, "nelu: order: validating the pivots of %s\n", f.ordering.c_str());
        try {
            res.validation = validate_pivots(model, sys, f, opt);
            if (opt.accurate)
                if (const std::string why = opt.accurate(f); !why.empty())
                    throw IllPosedError(fmt::format("ordering {} is not accurate: {}", f.ordering, why));
        } catch (const OrderIndependentError&) {
            throw;
        } catch (const IllPosedError& e) {
            if (const auto* b = dynamic_cast<const BasisPivotError*>(&e); b && diagnosis.empty()) diagnosis = b->diagnosis;
            for (auto& r : res.candidates)
                if (r.name == f.ordering) r.ok = false, r.why = e.what();
            reasons += fmt::format("\n  {}: {}", f.ordering, e.what());
            judged.push_back(f.ordering);
            continue;
        }
        res.best = std::move(f);
        return res;
    }
    for (const auto& r : res.candidates)
        if (!r.ok && std::find(judged.begin(), judged.end(), r.name) == judged.end()) reasons += fmt::format("\n  {}: {}", r.name, r.why);
    if (!diagnosis.empty())  // the exact rows left with the measurements are dependent in a way no fixed basis resolves
        throw IllPosedError(diagnosis + "\n  (no candidate ordering eliminates them with safe pivots:" + reasons + ")");
    // every candidate with safe pivots, and none accurate enough: the states, not the orders, may be at fault
    const bool only_accuracy = !judged.empty() && judged.size() == res.candidates.size() &&
                               std::all_of(res.candidates.begin(), res.candidates.end(),
                                           [](const CandidateReport& r) { return r.why.find(" is not accurate: ") != std::string::npos; });
    if (only_accuracy)
        throw IllPosedError("no candidate ordering meets the verifier's tolerance, though every one's pivots are safe: at some sample "
                            "states the problem is ill-conditioned (near a singularity the references themselves lose digits), or "
                            "every order loses accuracy there:" + reasons);
    throw IllPosedError("no candidate ordering gives a safe pivot sequence:" + reasons);
}

}  // namespace nelu
