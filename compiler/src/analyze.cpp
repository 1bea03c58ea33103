// analyze.cpp: see analyze.hpp.
#include "analyze.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <btf.h>
#include <fmt/format.h>
#include <umfpack.h>

#include "diagnostics.hpp"
#include "nelu/state.hpp"

namespace nelu {
namespace {

/// Up to `limit` labels, physical quantities before auxiliaries.
std::string name_list(const System& sys, const std::vector<int>& cols, std::size_t limit = 12) {
    std::vector<int> sorted = cols;
    std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) {
        return (sys.cols[a].quantity == Quantity::Auxiliary) < (sys.cols[b].quantity == Quantity::Auxiliary);
    });
    std::string s;
    for (std::size_t k = 0; k < sorted.size() && k < limit; ++k) s += (k ? ", " : "") + sys.cols[sorted[k]].label;
    if (sorted.size() > limit) s += fmt::format(" and {} more", sorted.size() - limit);
    return s;
}

/// Columns of the under-determined part: reachable from unmatched columns by alternating paths
/// (column -> row with an entry in it -> the column matched to that row).
std::vector<int> underdetermined_columns(const System& sys, const std::vector<int>& row_match) {
    const int n = sys.n();
    std::vector<std::vector<int>> col_rows(n);
    for (int r = 0; r < n; ++r)
        for (const auto& [c, v] : sys.entries[r]) col_rows[c].push_back(r);
    std::vector<bool> matched_col(n, false), seen(n, false);
    for (int r = 0; r < n; ++r)
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
    const int n = sys.n();
    std::vector<int> col_match(n, -1);
    for (int r = 0; r < n; ++r)
        if (row_match[r] >= 0) col_match[row_match[r]] = r;
    std::vector<bool> seen(n, false);
    std::vector<int> stack, out;
    for (int r = 0; r < n; ++r)
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

}  // namespace

Csc pattern_of(const System& sys) {
    Csc A;
    A.n = sys.n();
    std::vector<int> count(A.n + 1, 0);
    for (const auto& row : sys.entries)
        for (const auto& [c, v] : row) ++count[c + 1];
    A.p.assign(A.n + 1, 0);
    for (int c = 0; c < A.n; ++c) A.p[c + 1] = A.p[c] + count[c + 1];
    A.i.resize(A.p[A.n]);
    std::vector<int> next(A.p.begin(), A.p.end() - 1);
    for (int r = 0; r < A.n; ++r)  // rows in increasing order: row indices come out sorted
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
    for (int r = 0; r < A.n; ++r)
        for (const auto& [c, v] : sys.entries[r]) A.x[next[c]++] = val[v];
    return A;
}

Analysis run_analyze(const Model& model, const System& sys) {
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
        std::string msg = fmt::format("ill-posed: the structural rank of D is {} for {} unknowns.\n  not determined: {}",
                                      an.structural_rank, n, name_list(sys, under));
        if (!over.empty()) {
            std::string rows;
            for (std::size_t k = 0; k < over.size() && k < 12; ++k) rows += (k ? ", " : "") + sys.rows[over[k]].label;
            msg += "\n  equations in conflict (more equations than their unknowns): " + rows;
        }
        msg += "\n  a measurement of one of the undetermined quantities (or a known value for it) would determine it";
        throw IllPosedError(msg);
    }
    an.btf_P.resize(n), an.btf_Q.resize(n), an.btf_R.resize(n + 1);
    int nmatch = 0;
    an.blocks = btf_order(n, A.p.data(), A.i.data(), 0.0, &w, an.btf_P.data(), an.btf_Q.data(), an.btf_R.data(), &nmatch, work.data());
    for (int b = 0; b < an.blocks; ++b) an.largest_block = std::max(an.largest_block, an.btf_R[b + 1] - an.btf_R[b]);
    an.triangular = an.blocks == n;
    // Numeric rank: the zero configuration, multiples of pi/2, and random ones.
    std::mt19937_64 rng(0x6e656c75);
    an.min_rcond = INFINITY;
    for (int trial = 0; trial < 6; ++trial) {
        std::vector<double> q = random_configuration(model, rng), qd(model.nv, 0.0);
        if (trial < 3)
            for (const Body& b : model.bodies)
                if (b.type == JointType::Revolute) q[b.q_index] = trial * M_PI / 2;
        double rc = umfpack_rcond(values_of(sys, q, qd));
        an.min_rcond = std::min(an.min_rcond, rc);
        ++an.numeric_configs;
        if (!(rc > 1e-14))
            throw IllPosedError(fmt::format("ill-posed: D is structurally regular but numerically singular at configuration {} "
                                            "(reciprocal condition {:.3g}); a joint may carry no inertia", trial, rc));
    }
    return an;
}

}  // namespace nelu
