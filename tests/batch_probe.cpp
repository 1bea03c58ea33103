// batch_probe.cpp: see batch_probe.hpp.
#include "batch_probe.hpp"

#include "ur5e_fd_b_batch.hpp"

namespace probe {
Fault fault = Fault::None;
long states = 0, failed = 0;
}  // namespace probe

extern "C" {
int probe_fd(const double* q, const double* qd, const double* in, double* out) { return ur5e_fd_b(q, qd, in, out); }
int probe_fd_batch_width(void) { return ur5e_fd_b_batch_width(); }
int probe_fd_batch(int n, const double* q, const double* qd, const double* in, double* out, int* status) {
    const int failed = ur5e_fd_b_batch(n, q, qd, in, out, status);
    for (int k = 0; k < n; ++k) {
        ++probe::states;
        if (status[k] == NELU_STATUS_OK) {
            if (probe::fault == probe::Fault::Perturbs) out[k * ur5e_fd_b_NOUT] *= 1 + 1e-8;
            continue;
        }
        ++probe::failed;
        if (probe::fault == probe::Fault::WritesFailingRows) out[k * ur5e_fd_b_NOUT] = 0.0;
    }
    return probe::fault == probe::Fault::ReturnsZero ? 0 : failed;
}
double nelu_check_contraction(double a, double b, double c) { return a * b + c; }
}
