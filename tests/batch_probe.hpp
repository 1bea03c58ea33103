// batch_probe.hpp: the UR5e's batch form wrapped as a solver library (libtest_batch_probe.so) that
// test_batch links and that the batch check loads by path, as it loads a user's library. The
// wrapper counts the states it was given and those it failed, and can be made to break the calling
// convention in one of two ways, so that the test sees the check fail it.
#pragma once

namespace probe {
/// What the probe's batch form does wrong: nothing; writes the rows of failing states; returns 0
/// whatever failed; changes each computed row's first output by 1e-8 relative (rows that are not
/// bit for bit, for the judgement).
enum class Fault { None, WritesFailingRows, ReturnsZero, Perturbs };
extern Fault fault;
extern long states, failed;
}  // namespace probe

extern "C" {
int probe_fd(const double* q, const double* qd, const double* in, double* out);
int probe_fd_batch_width(void);
int probe_fd_batch(int n, const double* q, const double* qd, const double* in, double* out, int* status);
/// The contraction probe nelu check compiles into the libraries it builds (solver_library.cpp),
/// compiled here with the flags of the wrapped batch form.
double nelu_check_contraction(double a, double b, double c);
}
