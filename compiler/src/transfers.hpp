// transfers.hpp: subtree transfers, the back substitution of the schedule pass's derivative solves.
//
// The derivative columns solve D x + b = 0 for many right-hand sides, most of them zero in whole
// subtrees (a joint's column touches its path to the root and its own subtree). Where the forward
// substitution leaves y = 0 on every pivot of a subtree T, the back substitution of T's columns is
// linear in the few columns outside T that T's rows of U read (the parent's acceleration in the
// tree orders): x_T = K_T x_B, with K_T formed once, by back-substituting T with y = 0 and each
// column of B set to 1 in turn. Only the columns of the solution that the outputs read are formed
// inside a transferred subtree.
#pragma once

#include <map>
#include <vector>

#include "ir.hpp"
#include "lu.hpp"
#include "system.hpp"

namespace nelu {

class SubtreeTransfers {
  public:
    /// For solves of `sys` through its factors `lu` (every pivot factored), in `P`.
    SubtreeTransfers(ir::Program& P, const System& sys, SparseLu& lu);

    /// x = U^-1 y on the pivots' columns, with every subtree that y leaves zero transferred (only
    /// the columns the outputs read are set inside it).
    void back(const std::vector<ir::Id>& y, std::vector<ir::Id>& x);

  private:
    struct Transfer {
        bool usable = false;
        std::vector<int> pivots;            ///< T's pivots, in order
        std::vector<int> boundary;          ///< B
        std::map<int, std::vector<ir::Id>> K;  ///< a column of T the outputs read -> its coefficient per column of B
    };
    /// The transfer of the subtree of body t (built on first use).
    const Transfer& transfer(int t);
    /// Whether body b is in the subtree of body t.
    bool in_subtree(int b, int t) const;

    ir::Program& P_;
    const System& sys_;
    SparseLu& lu_;
    std::vector<int> wanted_;                  ///< the columns of the solution that the outputs read
    std::vector<std::vector<int>> body_pivots_;  ///< per body: its pivots
    std::vector<int> pivot_of_col_;            ///< per column: its pivot, or -1
    std::map<int, Transfer> transfers_;        ///< by subtree root
};

}  // namespace nelu
