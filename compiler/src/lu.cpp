// lu.cpp: see lu.hpp.
#include "lu.hpp"

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
    return p;
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
