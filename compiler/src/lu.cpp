// lu.cpp: see lu.hpp.
#include "lu.hpp"

#include <algorithm>

namespace nelu {

using ir::Id;

SparseLu::SparseLu(ir::Program& P, ir::ZeroTest& zt, const std::vector<std::map<int, Id>>& rows, int n, const std::vector<Pivot>& order,
                   bool prune)
    : P_(P), zt_(zt), prune_(prune), order_(order), A_(rows), col_rows_(static_cast<std::size_t>(n)), L_(order.size()), U_(order.size()),
      inv_(order.size(), -1), row_done_(rows.size(), false), col_done_(static_cast<std::size_t>(n), false) {
    for (std::size_t r = 0; r < A_.size(); ++r)
        for (const auto& [c, v] : A_[r]) col_rows_[static_cast<std::size_t>(c)].insert(static_cast<int>(r));
}

Id SparseLu::factor() {
    const int k = factored();
    const auto [r, c] = order_[static_cast<std::size_t>(k)];
    auto it = A_[r].find(c);
    if (row_done_[r] || col_done_[c] || it == A_[r].end()) return -1;
    const Id p = it->second;
    pivot_.push_back(p);
    U_[k] = A_[r];
    for (const auto& [j, v] : A_[r]) col_rows_[j].erase(r);
    row_done_[r] = col_done_[c] = true;
    const std::vector<int> rows(col_rows_[c].begin(), col_rows_[c].end());
    for (int i : rows) {  // A(i, :) -= l A(r, :), l = A(i, c) / p
        const Id l = divide(k, A_[i].at(c));
        L_[k].push_back({i, l});
        A_[i].erase(c);
        for (const auto& [j, u] : U_[k]) {
            if (j == c) continue;
            auto e = A_[i].find(j);
            const Id now = P_.sub(e == A_[i].end() ? P_.zero() : e->second, P_.mul(l, u));
            if (symmetric_) touched_.push_back({i, j});
            if (now == P_.zero() || (prune_ && zt_.is_zero(P_, now))) {
                if (e != A_[i].end()) A_[i].erase(e), col_rows_[j].erase(i);
            } else {
                A_[i][j] = now;
                col_rows_[j].insert(i);
            }
        }
    }
    col_rows_[c].clear();
    A_[r].clear();
    nnz_L_ += static_cast<long>(L_[k].size());
    nnz_U_ += static_cast<long>(U_[k].size());
    mirror_updates(r, c);
    return p;
}

bool SparseLu::keep_symmetry(const Pairing& pairing, Pivot& unmirrored) {
    const int m = static_cast<int>(A_.size()), n = static_cast<int>(col_rows_.size());
    if (factored() > 0 || static_cast<int>(pairing.col_of_row.size()) != m || static_cast<int>(pairing.row_of_col.size()) != n) return false;
    pairing_ = pairing;
    // The row signs S, component by component of the graph whose edges are the entries: a mirror
    // pair with D(mirror) = sigma D(i, j) needs s_mirror_row = sigma s_i.
    sign_.assign(static_cast<std::size_t>(m), 0);
    for (int start = 0; start < m; ++start) {
        if (sign_[start] != 0) continue;
        sign_[start] = 1;
        std::vector<int> stack{start};
        while (!stack.empty()) {
            const int i = stack.back();
            stack.pop_back();
            const int mj = pairing_.col_of_row[i];
            for (const auto& [j, v] : A_[i]) {
                const int mi = pairing_.row_of_col[j];
                if (mi < 0 || mj < 0) continue;
                unmirrored = {i, j};
                const auto w = A_[mi].find(mj);
                if (w == A_[mi].end()) return false;
                const int sigma = w->second == v ? 1 : w->second == P_.neg(v) ? -1 : 0;
                if (sigma == 0) return false;
                if (sign_[mi] == 0) {
                    sign_[mi] = sigma * sign_[i];
                    stack.push_back(mi);
                } else if (sign_[mi] != sigma * sign_[i]) {
                    return false;
                }
            }
        }
    }
    symmetric_ = true;
    return true;
}

void SparseLu::mirror_updates(int r, int c) {
    if (!symmetric_) return;
    auto paired = [&](int i, int j) { return pairing_.col_of_row[i] >= 0 && pairing_.row_of_col[j] >= 0; };
    const int mr = pairing_.row_of_col[c], mc = pairing_.col_of_row[r];
    if (mr < 0 || mc < 0) {  // outside the pairing: harmless while it updates no entry between paired rows and columns
        if (mr >= 0 || mc >= 0 || std::any_of(touched_.begin(), touched_.end(), [&](const auto& e) { return paired(e.first, e.second); }))
            symmetric_ = false, touched_.clear();
        return;
    }
    if (mr != r || mc != c) {
        if (unmatched_.erase({r, c}) == 0) unmatched_.insert({mr, mc});
    }
    if (!unmatched_.empty()) return;
    // Closed under the pairing: the Schur complement is symmetric, each entry the mirror of its mirror.
    for (const auto& [i, j] : touched_) {
        if (row_done_[i] || col_done_[j] || !paired(i, j)) continue;
        const int mi = pairing_.row_of_col[j], mj = pairing_.col_of_row[i];
        if (mi == i && mj == j) continue;
        // The value created first stays (its mirror's updates go dead): what the value numbering of
        // the elimination before shared with the L and U entries is kept.
        const bool first = entry(i, j) < entry(mi, mj);
        const int si = first ? mi : i, sj = first ? mj : j;  // the mirror computed second takes the first's value
        const Id v = entry(first ? i : mi, first ? j : mj);
        const Id want = sign_[i] == sign_[mi] || v == P_.zero() ? v : P_.neg(v);
        if (want == entry(si, sj)) continue;
        ++mirrored_;
        if (want == P_.zero()) {
            A_[si].erase(sj);
            col_rows_[sj].erase(si);
        } else {
            A_[si][sj] = want;
            col_rows_[sj].insert(si);
        }
    }
    touched_.clear();
}

Id SparseLu::entry(int row, int col) const {
    auto e = A_[row].find(col);
    return e == A_[row].end() ? P_.zero() : e->second;
}

void SparseLu::forward(std::vector<Id>& y) {
    for (std::size_t k = 0; k < L_.size(); ++k)
        for (const auto& [i, l] : L_[k]) y[i] = P_.sub(y[i], P_.mul(l, y[order_[k].row]));
}

void SparseLu::back_step(int k, Id s, std::vector<Id>& x) {
    const int c = order_[static_cast<std::size_t>(k)].col;
    for (const auto& [j, u] : U_[k])
        if (j != c) s = P_.sub(s, P_.mul(u, x[j]));
    x[c] = divide(k, s);
}

void SparseLu::back(const std::vector<Id>& y, std::vector<Id>& x, const std::vector<bool>& skip) {
    for (int k = static_cast<int>(order_.size()) - 1; k >= 0; --k)
        if (skip.empty() || !skip[k]) back_step(k, y[order_[k].row], x);
}

Id SparseLu::divide(int k, Id a) {
    const Id p = pivot_[k];
    if (P_.is_const(p)) return P_.div(a, p);  // (a product with 1/p would hide equal values from merging)
    if (inv_[k] < 0) inv_[k] = P_.div(P_.one(), p);  // one division per non-constant pivot, shared by its uses
    return P_.mul(a, inv_[k]);
}

}  // namespace nelu
