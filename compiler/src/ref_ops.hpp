// ref_ops.hpp: exact operation counts of the reference algorithms, by the counting scalar.
#pragma once

#include <string>
#include <vector>

#include "nelu/counting.hpp"
#include "nelu/model.hpp"

namespace nelu {

struct ReferenceOps {
    OpCounts rnea, aba, crba;
};

/// Counts of RNEA (with external wrenches), ABA (with external wrenches) and CRBA on `m`.
ReferenceOps count_reference_ops(const Model& m);

/// Published counts for an unbranched chain of n revolute joints with DH-type transforms.
/// RNEA: Balafoutis & Patel, as tabulated in Featherstone's RBDA Table 10.1; ABA: McMillan et al.
inline OpCounts published_rnea(int n) { OpCounts c; c.mul = 93 * n - 108; c.add = 81 * n - 100; return c; }
inline OpCounts published_aba(int n) { OpCounts c; c.mul = 224 * n - 259; c.add = 205 * n - 248; return c; }

struct NamedModel {
    std::string name;
    Model model;
};

/// Markdown table: counted RNEA and ABA beside the published counts (for chains marked `dh_chain_n`
/// > 0) for each model.
std::string format_reference_ops_table(const std::vector<NamedModel>& models, const std::vector<int>& dh_chain_n);

}  // namespace nelu
