// schedule.cpp: see schedule.hpp.
#include "schedule.hpp"

#include <map>
#include <set>

#include <fmt/format.h>

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
    if (P.is_const(p)) return P.div(a, p);
    return P.mul(a, inverse(P, lu, k, p));
}

/// A dense symmetric LDL^T in the IR (natural order, unit lower L): the lower triangle of A in.
struct Ldl {
    std::vector<std::vector<Id>> L;
    std::vector<Id> d, dinv;  ///< pivots and, for non-constant ones, their shared inverses (-1 otherwise)
    std::vector<bool> skip;   ///< dependent rows (identically zero pivot) when allowed: left out
};

/// With `drop_dependent`, a row whose pivot is identically zero (a linear combination of the rows
/// before it for every q) is left out instead of failing: for exact equations that only restate
/// others (a consistency condition on the inputs), the rest determines the same solution.
bool ldl_factor(ir::Program& P, ir::ZeroTest& zt, const std::vector<std::vector<Id>>& A, Ldl& f, std::string& why,
                const char* what, const std::vector<std::string>& labels, bool drop_dependent) {
    const int k = static_cast<int>(A.size());
    f.L.assign(k, std::vector<Id>(k, P.zero()));
    f.d.assign(k, P.one()), f.dinv.assign(k, -1), f.skip.assign(k, false);
    for (int j = 0; j < k; ++j) {  // D_j = A_jj - sum L_jk^2 D_k;  L_ij = (A_ij - sum L_ik L_jk D_k) / D_j
        Id d = A[j][j];
        for (int m = 0; m < j; ++m)
            if (!f.skip[m]) d = P.sub(d, P.mul(P.mul(f.L[j][m], f.L[j][m]), f.d[m]));
        if (d == P.zero() || zt.is_zero(P, d)) {
            if (drop_dependent) {
                f.skip[j] = true;
                continue;
            }
            why = fmt::format("{} is structurally singular at {}", what, labels[j]);
            return false;
        }
        f.d[j] = d;
        if (!P.is_const(d)) f.dinv[j] = P.div(P.one(), d);
        for (int i = j + 1; i < k; ++i) {
            Id g = A[i][j];
            for (int m = 0; m < j; ++m)
                if (!f.skip[m]) g = P.sub(g, P.mul(P.mul(f.L[i][m], f.L[j][m]), f.d[m]));
            f.L[i][j] = f.dinv[j] >= 0 ? P.mul(g, f.dinv[j]) : P.div(g, d);
        }
    }
    return true;
}

std::vector<Id> ldl_solve(ir::Program& P, const Ldl& f, std::vector<Id> z) {
    const int k = static_cast<int>(z.size());
    for (int i = 0; i < k; ++i) {
        if (f.skip[i]) {
            z[i] = P.zero();
            continue;
        }
        for (int m = 0; m < i; ++m) z[i] = P.sub(z[i], P.mul(f.L[i][m], z[m]));
    }
    for (int i = 0; i < k; ++i) z[i] = f.skip[i] ? P.zero() : f.dinv[i] >= 0 ? P.mul(z[i], f.dinv[i]) : P.div(z[i], f.d[i]);
    for (int i = k - 1; i >= 0; --i)
        for (int m = i + 1; m < k; ++m) z[i] = P.sub(z[i], P.mul(f.L[m][i], z[m]));
    return z;
}

}  // namespace

bool run_schedule(const System& sys, const std::vector<Pivot>& order, const std::vector<bool>& articulated,
                  const std::string& name, Factorization& out, std::string& why, long max_entries, const Tail& tail) {
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
    // The trailing block (see Tail): G = S^T W S + H^T H = L D L^T; C = H G^-1 H^T = L' D' L'^T.
    const int kb = static_cast<int>(tail.cols.size()), rb = static_cast<int>(tail.rows.size());
    std::vector<std::vector<Id>> S(rb, std::vector<Id>(kb));
    std::vector<Id> W(rb);
    std::vector<int> hard;  // block rows that are exact
    Ldl G, C;
    std::vector<std::vector<Id>> Z;  // G^-1 H^T, one column per exact row
    if (kb > 0) {
        for (int a = 0; a < rb; ++a) {
            const double w = tail.weights.empty() ? 1.0 : tail.weights[a];
            if (w == 0) hard.push_back(a);
            W[a] = P.constant(w == 0 ? 1.0 : w);
            for (int b = 0; b < kb; ++b) {
                auto e = lu.A[tail.rows[a]].find(tail.cols[b]);
                S[a][b] = e == lu.A[tail.rows[a]].end() ? P.zero() : e->second;
            }
        }
        std::vector<std::vector<Id>> Gm(kb, std::vector<Id>(kb));
        for (int i = 0; i < kb; ++i)
            for (int j = 0; j <= i; ++j) {
                std::vector<Id> u, v;
                for (int a = 0; a < rb; ++a)
                    if (S[a][i] != P.zero() && S[a][j] != P.zero()) u.push_back(P.mul(W[a], S[a][i])), v.push_back(S[a][j]);
                Gm[i][j] = P.dot(u, v);
            }
        std::vector<std::string> labels;
        for (int b = 0; b < kb; ++b) labels.push_back(sys.cols[tail.cols[b]].label);
        if (!ldl_factor(P, zt, Gm, G, why, "the Gram matrix of the trailing block", labels, false)) return false;
        for (int b = 0; b < kb; ++b)
            out.pivots.push_back({{tail.rows[std::min(b, rb - 1)], tail.cols[b]}, G.d[b], P.is_const(G.d[b]) ? PivotKind::Constant : PivotKind::Gram, 0});
        const int kh = static_cast<int>(hard.size());
        if (kh > 0) {
            for (int h : hard) {
                std::vector<Id> col(kb);
                for (int b = 0; b < kb; ++b) col[b] = S[h][b];
                Z.push_back(ldl_solve(P, G, col));
            }
            std::vector<std::vector<Id>> Cm(kh, std::vector<Id>(kh));
            for (int i = 0; i < kh; ++i)
                for (int j = 0; j <= i; ++j) {
                    std::vector<Id> u, v;
                    for (int b = 0; b < kb; ++b)
                        if (S[hard[i]][b] != P.zero()) u.push_back(S[hard[i]][b]), v.push_back(Z[j][b]);
                    Cm[i][j] = P.dot(u, v);
                }
            std::vector<std::string> hl;
            for (int h : hard) hl.push_back(sys.rows[tail.rows[h]].label);
            if (!ldl_factor(P, zt, Cm, C, why, "the constraint block H G^-1 H^T", hl, true)) return false;
            for (int i = 0; i < kh; ++i)
                if (!C.skip[i]) out.pivots.push_back({{tail.rows[hard[i]], tail.cols[0]}, C.d[i], P.is_const(C.d[i]) ? PivotKind::Constant : PivotKind::Gram, 0});
        }
        out.nnz_L += static_cast<long>(kb) * (kb - 1) / 2 + static_cast<long>(kh) * (kh - 1) / 2 + static_cast<long>(kb) * kh;
        out.nnz_U += static_cast<long>(kb) * (kb + 1) / 2 + static_cast<long>(kh) * (kh + 1) / 2;
    }
    out.first_solve_node = P.size();
    std::vector<Id> y(m);  // y = L \ (-b), in row space
    for (int r = 0; r < m; ++r) y[r] = P.neg(sys.b[r]);
    for (int k = 0; k < npiv; ++k)
        for (const auto& [i, l] : lu.L[k]) y[i] = P.sub(y[i], P.mul(l, y[order[k].row]));
    out.x.assign(n, -1);
    if (kb > 0) {  // u = G^-1 (S^T W y); with exact rows: C lambda = H u - y_H, x = u - Z lambda
        std::vector<Id> r(kb);
        for (int i = 0; i < kb; ++i) {
            std::vector<Id> u, v;
            for (int a = 0; a < rb; ++a)
                if (S[a][i] != P.zero()) u.push_back(P.mul(W[a], S[a][i])), v.push_back(y[tail.rows[a]]);
            r[i] = P.dot(u, v);
        }
        std::vector<Id> u = ldl_solve(P, G, r);
        if (!hard.empty()) {
            std::vector<Id> t(hard.size());
            for (std::size_t i = 0; i < hard.size(); ++i) {
                std::vector<Id> a, b;
                for (int c2 = 0; c2 < kb; ++c2)
                    if (S[hard[i]][c2] != P.zero()) a.push_back(S[hard[i]][c2]), b.push_back(u[c2]);
                t[i] = P.sub(P.dot(a, b), y[tail.rows[hard[i]]]);
            }
            std::vector<Id> lambda = ldl_solve(P, C, t);
            for (int c2 = 0; c2 < kb; ++c2)
                for (std::size_t i = 0; i < hard.size(); ++i) u[c2] = P.sub(u[c2], P.mul(Z[i][c2], lambda[i]));
        }
        for (int i = 0; i < kb; ++i) out.x[tail.cols[i]] = u[i];
    }
    for (int k = npiv - 1; k >= 0; --k) {  // x = U \ y, last pivot first
        const auto [r, c] = order[k];
        Id s = y[r];
        for (const auto& [j, u] : lu.U[k])
            if (j != c) s = P.sub(s, P.mul(u, out.x[j]));
        out.x[c] = divide(P, lu, k, s, out.pivots[k].value);
    }
    for (const Slot& s : sys.out) {
        if (s.column >= 0) {
            out.outputs.push_back(out.x[s.column]);
            continue;
        }
        Id v = s.bias >= 0 ? s.bias : P.zero();
        for (const auto& [c, coef] : s.terms) v = P.add(v, P.mul(coef, out.x[c]));
        out.outputs.push_back(v);
    }
    // Merge equal values (symmetric halves of the Schur complements, among others), then count
    // what the outputs and pivot checks need, split by phase.
    std::vector<Id> roots = out.outputs;
    for (const ScheduledPivot& pv : out.pivots) roots.push_back(pv.value);
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
    return true;
}

}  // namespace nelu
