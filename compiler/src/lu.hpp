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

/// Rows paired with columns (System: acceleration equation <-> f_i, force balance <-> a_i, tau_i
/// <-> qdd_i, yK <-> z(m-K), a contact's constraint rows <-> its force): Nori's system is the KKT
/// system of Gauss's principle, and under such a pairing D is symmetric up to the sign of rows,
/// S D P = (S D P)^T with S = diag(+-1) and P the pairing's column permutation. -1: unpaired.
struct Pairing {
    std::vector<int> col_of_row, row_of_col;
};

class SparseLu {
  public:
    /// The m x n matrix whose rows are `rows` (column -> entry, a node of `P`), to be factored by
    /// `order`. With `prune`, fill that cancels for every q (`zt`) is dropped as no structure.
    SparseLu(ir::Program& P, ir::ZeroTest& zt, const std::vector<std::map<int, ir::Id>>& rows, int n, const std::vector<Pivot>& order,
             bool prune);

    /// Keeps the active matrix symmetric under `pairing` where the elimination allows: whenever the
    /// pivots factored so far are closed under the pairing (each pivot (r, c) with its mirror
    /// (row_of_col[c], col_of_row[r])), the Schur complement left is symmetric again, and each
    /// entry updated since the last such point is computed once: its mirror becomes the same
    /// value, signed, and the mirror's own updates are left dead (a symmetric elimination's half
    /// of every Schur block). Only once the pairing is proven on D itself: every entry between
    /// paired rows and columns has its mirror, the same IR node up to the sign S gives it. Before
    /// the first factor(); false (with the first entry whose mirror differs) leaves the elimination a plain LU.
    bool keep_symmetry(const Pairing& pairing, Pivot& unmirrored);
    /// Entries set from their mirror so far.
    long mirrored() const { return mirrored_; }

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
    /// After pivot (r, c): the pairing's bookkeeping, and the mirrors of the entries updated since
    /// the last symmetric point once the pivots are closed under the pairing again.
    void mirror_updates(int r, int c);

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
    // keep_symmetry: the pairing, the row signs S, the mirrors of the pivots factored but not yet
    // matched, and the entries updated since the last symmetric point
    Pairing pairing_;
    std::vector<int> sign_;
    bool symmetric_ = false;
    std::set<std::pair<int, int>> unmatched_;
    std::vector<std::pair<int, int>> touched_;
    long mirrored_ = 0;
};

}  // namespace nelu
