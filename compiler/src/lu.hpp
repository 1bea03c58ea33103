// lu.hpp: the schedule pass's sparse LU of D in the IR (schedule.hpp), with a fixed pivot sequence.
//
// Right-looking elimination: pivot k = (row r, column c) takes the entry p = A(r, c); every other
// active row i with an entry in column c gets l = A(i, c) / p and A(i, j) -= l A(r, j). L keeps the
// multipliers per pivot, U the pivot rows. Each step is a node of the IR: folding turns +-1 pivots
// into sign changes and zero products into nothing.
#pragma once

#include <map>
#include <set>
#include <vector>

#include "ir.hpp"

namespace nelu {

struct Pivot {
    int row, col;
};

class SparseLu {
  public:
    /// The m x n matrix whose rows are `rows` (column -> entry, a node of `P`), to be factored by
    /// `order`. With `prune`, fill that cancels for every q (`zt`) is dropped as no structure.
    SparseLu(ir::Program& P, ir::ZeroTest& zt, const std::vector<std::map<int, ir::Id>>& rows, int n, const std::vector<Pivot>& order,
             bool prune);

    /// Eliminates the next pivot of the order: its entry, or -1 when it is structurally zero at its turn.
    ir::Id factor();
    /// Pivots factored so far.
    int factored() const { return static_cast<int>(pivot_.size()); }
    /// Entries of L (strictly lower) and U (with its diagonal) so far.
    long nnz_L() const { return nnz_L_; }
    long nnz_U() const { return nnz_U_; }
    /// The entry (row, col) of the active matrix left by the pivots so far, or zero.
    ir::Id entry(int row, int col) const;

    const std::vector<Pivot>& order() const { return order_; }
    /// Row k of U: column -> entry, the pivot's own column included.
    const std::map<int, ir::Id>& u_row(int k) const { return U_[static_cast<std::size_t>(k)]; }

    /// y = L^-1 y, in row space: the forward substitution.
    void forward(std::vector<ir::Id>& y);
    /// x_c of pivot k = (r, c) from s = y_r and the columns its row of U reads: the back substitution's step.
    void back_step(int k, ir::Id s, std::vector<ir::Id>& x);
    /// x = U^-1 y on the pivots' columns, last pivot first, but for the pivots marked in `skip` (empty: none).
    void back(const std::vector<ir::Id>& y, std::vector<ir::Id>& x, const std::vector<bool>& skip = {});

  private:
    /// a / p for pivot k: folds for +-1 pivots, multiplies by the shared inverse otherwise.
    ir::Id divide(int k, ir::Id a);

    ir::Program& P_;
    ir::ZeroTest& zt_;
    bool prune_;
    std::vector<Pivot> order_;
    std::vector<std::map<int, ir::Id>> A_;      ///< active matrix, by row
    std::vector<std::set<int>> col_rows_;       ///< active rows with an entry in each column
    std::vector<std::vector<std::pair<int, ir::Id>>> L_;  ///< per pivot: (row, multiplier)
    std::vector<std::map<int, ir::Id>> U_;      ///< per pivot: the pivot row
    std::vector<ir::Id> pivot_;                 ///< per pivot factored: its entry
    std::vector<ir::Id> inv_;                   ///< per pivot: 1/p once needed, else -1
    std::vector<bool> row_done_, col_done_;
    long nnz_L_ = 0, nnz_U_ = 0;
};

}  // namespace nelu
