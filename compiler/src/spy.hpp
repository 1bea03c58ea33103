// spy.hpp: `nelu compile --spy FILE.svg`, spy plots of the factored system as one SVG figure.
//
// Three panels side by side: (1) the pattern of D in the system's natural row and column order,
// (2) the pattern of P D Q (rows and columns permuted into the pivot order of the factorization),
// (3) the pattern of L + U in pivot order, the fill-in (entries of L + U not in P D Q) in a second
// colour. The pattern of L and U is the structural one: the elimination is redone on the pattern
// alone, so entries the IR folds to zero during factorization still count (nnz(L+U) here is an
// upper bound of the factorization's nnz_L + nnz_U; the title gives both when they differ).
//
// Up to 600 unknowns every nonzero is a small square (<rect>, one per entry, in the groups
// id="D-nz", id="PDQ-nz", id="LU-nz" and id="LU-fill"); beyond that each panel is a grid of at
// most 200 x 200 cells shaded by the density of nonzeros (and, in panel 3, coloured by the share
// of fill), so the file stays small for any n. Light lines mark body boundaries when there are
// few bodies. The output is deterministic: no timestamps, fixed number formatting.
#pragma once

#include <string>

#include "schedule.hpp"
#include "system.hpp"

namespace nelu {

/// SVG text of the three spy panels of `sys` factored as `f`; `title` (e.g. "kuka_iiwa fd") heads
/// the figure, followed by n, nnz(D), nnz(L+U) and the fill.
std::string spy_svg(const System& sys, const Factorization& f, const std::string& title);

}  // namespace nelu
