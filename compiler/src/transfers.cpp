// transfers.cpp: see transfers.hpp.
#include "transfers.hpp"

#include <algorithm>
#include <set>

namespace nelu {

using ir::Id;

SubtreeTransfers::SubtreeTransfers(ir::Program& P, const System& sys, SparseLu& lu)
    : P_(P), sys_(sys), lu_(lu), body_pivots_(sys.kinematics.size()), pivot_of_col_(static_cast<std::size_t>(sys.n()), -1) {
    for (const Slot& s : sys.out) {
        if (s.column >= 0) wanted_.push_back(s.column);
        for (const auto& [c, coef] : s.terms) wanted_.push_back(c);
    }
    std::sort(wanted_.begin(), wanted_.end());
    wanted_.erase(std::unique(wanted_.begin(), wanted_.end()), wanted_.end());
    const std::vector<Pivot>& order = lu.order();
    for (std::size_t k = 0; k < order.size(); ++k) {
        pivot_of_col_[order[k].col] = static_cast<int>(k);
        const int b = sys.cols[order[k].col].body;
        if (b >= 0 && b < static_cast<int>(body_pivots_.size())) body_pivots_[b].push_back(static_cast<int>(k));
    }
}

bool SubtreeTransfers::in_subtree(int b, int t) const {
    for (; b >= 0; b = sys_.kinematics[b].parent)
        if (b == t) return true;
    return false;
}

const SubtreeTransfers::Transfer& SubtreeTransfers::transfer(int t) {
    if (auto it = transfers_.find(t); it != transfers_.end()) return it->second;
    Transfer& T = transfers_[t];
    const std::vector<Pivot>& order = lu_.order();
    const int npiv = static_cast<int>(order.size()), nbodies = static_cast<int>(body_pivots_.size());
    std::vector<bool> inT(order.size(), false), colT(static_cast<std::size_t>(sys_.n()), false);
    for (int b = t; b < nbodies; ++b)
        if (in_subtree(b, t))
            for (int k : body_pivots_[b]) inT[k] = true, colT[order[k].col] = true;
    for (int k = 0; k < npiv; ++k)
        if (inT[k]) T.pivots.push_back(k);
    std::set<int> B;
    for (int k = 0; k < npiv; ++k)
        for (const auto& [j, u] : lu_.u_row(k)) {
            if (j == order[k].col) continue;
            if (inT[k] && !colT[j]) B.insert(j);
            if (!inT[k] && colT[j]) return T;  // T's values are read outside T: no transfer
        }
    for (int j : B)  // B must be solved after T, in the back substitution (T's rows read it)
        if (pivot_of_col_[j] < 0 || pivot_of_col_[j] < T.pivots.back()) return T;
    T.boundary.assign(B.begin(), B.end());
    for (int c : wanted_)
        if (colT[c]) T.K[c].assign(T.boundary.size(), P_.zero());
    for (std::size_t m = 0; m < T.boundary.size(); ++m) {  // K_T's column m: T back-substituted with y = 0, x_B = e_m
        std::vector<Id> x(static_cast<std::size_t>(sys_.n()), P_.zero());
        x[T.boundary[m]] = P_.one();
        for (auto k = T.pivots.rbegin(); k != T.pivots.rend(); ++k) lu_.back_step(*k, P_.zero(), x);
        for (auto& [c, coef] : T.K) coef[m] = x[c];
    }
    T.usable = true;
    return T;
}

void SubtreeTransfers::back(const std::vector<Id>& y, std::vector<Id>& x) {
    const std::vector<Pivot>& order = lu_.order();
    const int nbodies = static_cast<int>(body_pivots_.size());
    // bodies whose whole subtree has y = 0; the highest of each such subtree is transferred
    std::vector<bool> zero(body_pivots_.size(), true);
    for (int b = 0; b < nbodies; ++b)
        for (int k : body_pivots_[b]) zero[b] = zero[b] && y[order[k].row] == P_.zero();
    for (int b = nbodies - 1; b >= 0; --b) {
        const int p = sys_.kinematics[b].parent;
        if (p >= 0 && !zero[b]) zero[p] = false;
    }
    std::vector<int> roots;
    std::vector<bool> skip(order.size(), false);  // the pivots of the transferred subtrees
    for (int b = 0; b < nbodies; ++b) {
        const int p = sys_.kinematics[b].parent;
        if (!zero[b] || p < 0 || zero[p] || !transfer(b).usable) continue;
        roots.push_back(b);
        for (int k : transfer(b).pivots) skip[k] = true;
    }
    lu_.back(y, x, skip);
    for (int t : roots) {  // x_T = K_T x_B
        const Transfer& T = transfer(t);
        for (const auto& [c, coef] : T.K) {
            Id v = P_.zero();
            for (std::size_t b = 0; b < T.boundary.size(); ++b) v = P_.add(v, P_.mul(coef[b], x[T.boundary[b]]));
            x[c] = v;
        }
    }
}

}  // namespace nelu
