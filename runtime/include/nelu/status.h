/* nelu/status.h: status codes returned by every generated solver (C and C++). */
#ifndef NELU_STATUS_H
#define NELU_STATUS_H

/** The solve succeeded; `out` holds the unknowns. */
#define NELU_STATUS_OK 0
/** A pivot of the factorization fell below its safety threshold (or was not finite) at this
 *  state: the problem is singular or nearly so there, or an input that reaches a pivot before any
 *  output (a joint angle) was NaN or infinite. `out` is left untouched. */
#define NELU_STATUS_SMALL_PIVOT 1
/** An output is not finite: an input was NaN or infinite, or so large that the computation
 *  overflowed. `out` is left untouched. */
#define NELU_STATUS_NOT_FINITE 2

#endif /* NELU_STATUS_H */
