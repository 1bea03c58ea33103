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

}  // namespace

bool run_schedule(const System& sys, const std::vector<Pivot>& order, const std::vector<bool>& articulated,
                  const std::string& name, Factorization& out, std::string& why, long max_entries) {
    const int n = sys.n();
    out = Factorization{};
    out.ordering = name;
    out.prog = sys.prog;
    ir::Program& P = out.prog;
    out.nnz_D = sys.nnz();
    out.first_factor_node = P.size();
    Lu lu;
    lu.A = sys.entries;
    lu.col_rows.resize(n);
    for (int r = 0; r < n; ++r)
        for (const auto& [c, v] : lu.A[r]) lu.col_rows[c].insert(r);
    lu.L.resize(n), lu.U.resize(n), lu.inv.assign(n, -1);
    std::vector<bool> row_done(n, false), col_done(n, false);
    if (static_cast<int>(order.size()) != n) {
        why = fmt::format("the order has {} pivots for {} columns", order.size(), n);
        return false;
    }
    for (int k = 0; k < n; ++k) {  // numeric factorization
        const auto [r, c] = order[k];
        auto it = lu.A[r].find(c);
        if (row_done[r] || col_done[c] || it == lu.A[r].end()) {
            why = fmt::format("pivot {} ({}, {}) is structurally zero", k, sys.rows[r].label, sys.cols[c].label);
            return false;
        }
        const Id p = it->second;
        PivotKind kind = P.is_const(p) ? PivotKind::Constant : articulated.empty() || !articulated[k] ? PivotKind::Validated : PivotKind::Articulated;
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
                if (now == P.zero()) {
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
    out.first_solve_node = P.size();
    std::vector<Id> y(n);  // y = L \ (-b), in row space
    for (int r = 0; r < n; ++r) y[r] = P.neg(sys.b[r]);
    for (int k = 0; k < n; ++k)
        for (const auto& [i, l] : lu.L[k]) y[i] = P.sub(y[i], P.mul(l, y[order[k].row]));
    out.x.assign(n, -1);  // x = U \ y, last pivot first
    for (int k = n - 1; k >= 0; --k) {
        const auto [r, c] = order[k];
        Id s = y[r];
        for (const auto& [j, u] : lu.U[k])
            if (j != c) s = P.sub(s, P.mul(u, out.x[j]));
        out.x[c] = divide(P, lu, k, s, out.pivots[k].value);
    }
    for (const Slot& s : sys.out) out.outputs.push_back(out.x[s.column]);
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
