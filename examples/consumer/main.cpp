// main.cpp: inverse then forward dynamics of the UR5e with two nelu solvers, and the round trip.
// tau = ID(q, qd, qdd, f^x); qdd' = FD(q, qd, tau, f^x); succeed when |qdd' - qdd| <= 1e-9 |qdd|,
// and when FD's batch form gives every one of 5 copies of the state the same qdd'.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ur5e_fd_batch.hpp"
#include "ur5e_id.hpp"

static_assert(ur5e_id_NQ == ur5e_fd_NQ && ur5e_id_NV == ur5e_fd_NV && ur5e_id_NIN == ur5e_fd_NIN,
              "the two solvers are for the same robot");

int main() {
    constexpr int nv = ur5e_id_NV;
    // A state: q (rad), qd (rad/s), qdd (rad/s^2); an external wrench [n; f] on the last link.
    const double q[ur5e_id_NQ] = {0.3, -1.1, 1.4, -0.7, 1.2, 0.5};
    const double qd[nv] = {0.5, -0.2, 0.8, 1.1, -0.9, 0.4};
    const double qdd[nv] = {1.0, -0.5, 2.0, -1.5, 0.7, 3.0};

    // in = [qdd; f^x] for id and [tau; f^x] for fd: the first nv slots differ, the wrenches agree
    // (see the slot lists in ur5e_id.hpp and ur5e_fd.hpp).
    double in_id[ur5e_id_NIN] = {}, in_fd[ur5e_fd_NIN] = {};
    std::copy(qdd, qdd + nv, in_id);
    const double wrench[6] = {0.1, -0.2, 0.05, 1.0, 2.0, -3.0};  // on wrist_3_link, link frame
    std::copy(wrench, wrench + 6, in_id + ur5e_id_NIN - 6);

    double tau[ur5e_id_NOUT], qdd_fd[ur5e_fd_NOUT];
    if (ur5e_id(q, qd, in_id, tau) != NELU_STATUS_OK) return std::puts("ur5e_id failed"), 2;
    std::copy(tau, tau + nv, in_fd);
    std::copy(in_id + nv, in_id + ur5e_id_NIN, in_fd + nv);
    const int status = ur5e_fd(q, qd, in_fd, qdd_fd);
    if (status != NELU_STATUS_OK) return std::printf("ur5e_fd failed: status %d\n", status), 2;

    // |qdd_fd - qdd|_inf / |qdd|_inf
    double err = 0, scale = 0;
    std::printf("%-3s %22s %22s %22s\n", "i", "qdd", "tau = id(qdd)", "fd(tau)");
    for (int i = 0; i < nv; ++i) {
        std::printf("%-3d %22.15g %22.15g %22.15g\n", i, qdd[i], tau[i], qdd_fd[i]);
        err = std::max(err, std::fabs(qdd_fd[i] - qdd[i]));
        scale = std::max(scale, std::fabs(qdd[i]));
    }
    const double rel = err / scale;
    std::printf("relative error |fd(id(qdd)) - qdd| / |qdd| = %.3e (tolerance 1e-9): %s\n", rel, rel <= 1e-9 ? "ok" : "MISMATCH");

    // the batch form: 5 states (state-major rows), here the same one 5 times
    constexpr int n = 5;
    double qs[n][ur5e_fd_NQ], qds[n][ur5e_fd_NV], ins[n][ur5e_fd_NIN], outs[n][ur5e_fd_NOUT];
    for (int k = 0; k < n; ++k) {
        std::copy(q, q + ur5e_fd_NQ, qs[k]), std::copy(qd, qd + nv, qds[k]), std::copy(in_fd, in_fd + ur5e_fd_NIN, ins[k]);
    }
    int statuses[n];
    const int failed = ur5e_fd_batch(n, &qs[0][0], &qds[0][0], &ins[0][0], &outs[0][0], statuses);
    double batch_err = 0;
    for (int k = 0; k < n; ++k)
        for (int i = 0; i < nv; ++i) batch_err = std::max(batch_err, std::fabs(outs[k][i] - qdd_fd[i]) / scale);
    std::printf("ur5e_fd_batch: %d states, %d lanes, %d failed, largest relative difference from ur5e_fd %.3e: %s\n", n,
                ur5e_fd_batch_width(), failed, batch_err, failed == 0 && batch_err <= 1e-12 ? "ok" : "MISMATCH");
    return rel <= 1e-9 && failed == 0 && batch_err <= 1e-12 ? 0 : 1;
}
