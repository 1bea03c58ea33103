// main.cpp: a horizon of 50 knots of the Mini Cheetah's contact dynamics and their derivatives in
// one call of the batch form (examples/contacts/README.md). The solver is compiled at build time
// from minicheetah_feet.yaml (four point feet, local_world_aligned, Baumgarte kd 50) with
// nelu_add_solver(... BATCH DERIVATIVES).
//
// Checks, exit 1 when one fails (2 when a knot's status is not NELU_STATUS_OK):
//   - standing still in the crouch, with the motor torques that hold it (from the derivatives: qdd
//     is affine in the torques), the four forces add up to the robot's weight, upward, to 1e-8;
//   - every knot of the batch call equals the scalar entry point minicheetah_feet_derivatives, outputs
//     and Jacobian, to 1e-12 relative (bit for bit when both are built without FMA contraction);
//   - the outputs of the derivatives equal the value solver's (minicheetah_feet_batch) to 1e-12;
//   - the Jacobian's torque columns equal central differences of the value solver (qdd and the
//     forces are affine in the torques: the differences are exact but for rounding), to 1e-9.
// Then it times the batch call against a loop of scalar calls (median of repeats, per knot).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "minicheetah_feet_batch.hpp"

namespace {

constexpr int kKnots = 50;
constexpr int NQ = minicheetah_feet_NQ, NV = minicheetah_feet_NV, NIN = minicheetah_feet_NIN, NOUT = minicheetah_feet_NOUT;
constexpr int NJAC = minicheetah_feet_NJAC;
constexpr double kPi = 3.14159265358979323846;

/// |a - b|_inf / max(1, |b|_inf) over n entries.
double relative(const double* a, const double* b, int n) {
    double err = 0, scale = 1;
    for (int i = 0; i < n; ++i) err = std::max(err, std::fabs(a[i] - b[i])), scale = std::max(scale, std::fabs(b[i]));
    return err / scale;
}

/// The motor torques that hold the robot still at (q, qd = 0): qdd is affine in the torques, so
/// d qdd / d tau from the derivatives gives them, x = argmin |A x + b|^2 + mu |x|^2 (A = d qdd /
/// d tau_motor, 18 x 12 of rank 6: the legs hold the base in more ways than one; mu small, so that x
/// is the least-norm solution to about 1e-10), by Cholesky of A^T A + mu 1.
bool hold_torques(const double* q, double* tau_hold) {
    constexpr int M = 12;
    std::vector<double> in(NIN, 0.0), qd(NV, 0.0), out(NOUT), jac(NOUT * NJAC), G(M * M, 0.0), r(M, 0.0);
    if (minicheetah_feet_derivatives(q, qd.data(), in.data(), out.data(), jac.data()) != NELU_STATUS_OK) return false;
    auto A = [&](int row, int motor) { return jac[row * NJAC + 2 * NV + 6 + motor]; };
    double trace = 0;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < M; ++j) {
            for (int row = 0; row < NV; ++row) G[i * M + j] += A(row, i) * A(row, j);
            if (i == j) trace += G[i * M + i];
        }
    for (int i = 0; i < M; ++i) {
        G[i * M + i] += 1e-14 * trace;
        for (int row = 0; row < NV; ++row) r[i] -= A(row, i) * out[row];
    }
    for (int j = 0; j < M; ++j) {  // G = L L^T in place (lower triangle), then L L^T x = r
        for (int k = 0; k < j; ++k) G[j * M + j] -= G[j * M + k] * G[j * M + k];
        G[j * M + j] = std::sqrt(G[j * M + j]);
        for (int i = j + 1; i < M; ++i) {
            for (int k = 0; k < j; ++k) G[i * M + j] -= G[i * M + k] * G[j * M + k];
            G[i * M + j] /= G[j * M + j];
        }
    }
    for (int i = 0; i < M; ++i) {
        for (int k = 0; k < i; ++k) r[i] -= G[i * M + k] * r[k];
        r[i] /= G[i * M + i];
    }
    for (int i = M - 1; i >= 0; --i) {
        for (int k = i + 1; k < M; ++k) r[i] -= G[k * M + i] * r[k];
        r[i] /= G[i * M + i];
    }
    std::copy(r.begin(), r.end(), tau_hold);
    return true;
}

/// Median wall time of `repeats` runs of f, in seconds.
template <class F> double median_time(int repeats, F f) {
    std::vector<double> t;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(t.begin(), t.begin() + repeats / 2, t.end());
    return t[static_cast<std::size_t>(repeats / 2)];
}

}  // namespace

int main() {
    static_assert(NV == 18 && NIN == 18 && NOUT == 30 && NJAC == 2 * NV + NIN, "minicheetah_feet.yaml's slots");
    // The knots (state-major rows), as examples/python/contacts_horizon.py makes them: the standing
    // robot swaying, its base rolling and bobbing, every joint swinging about a crouch; the motors'
    // torques those that hold the crouch plus a PD law toward it (the base's six torques stay zero:
    // it is not actuated).
    // q = [x y z qx qy qz qw, 12 joints]; qd = [the base's body twist wx wy wz vx vy vz, 12 rates].
    std::vector<double> q(kKnots * NQ, 0.0), qd(kKnots * NV, 0.0), in(kKnots * NIN, 0.0);
    const double crouch[3] = {0.0, 0.8, -1.6};         // abad, hip, knee: the feet under the hips
    const double phase[4] = {0.0, kPi, kPi, 0.0};      // legs fr, fl, rr, rl: a trot's diagonal pairs
    const double kp = 40, kd = 1, dt = 0.02;

    // Standing still in the crouch with the torques that hold it, the feet carry the robot's weight
    // and nothing sideways (Newton's law; the mass is the URDF's, `nelu model --floating-base`).
    const double weight = 8.912 * 9.81;
    double rest[NQ] = {0, 0, 0.3, 0, 0, 0, 1}, tau_hold[12], held[NIN] = {}, zero[NV] = {}, still[NOUT];
    for (int s = 0; s < 12; ++s) rest[7 + s] = crouch[s % 3];
    if (!hold_torques(rest, tau_hold)) return std::puts("the derivatives at rest failed"), 2;
    std::copy(tau_hold, tau_hold + 12, held + 6);  // in = the base's six torques (zero), then the motors'
    if (minicheetah_feet(rest, zero, held, still) != NELU_STATUS_OK) return std::puts("the crouch at rest failed"), 2;
    double qdd_rest = 0, total[3] = {0, 0, 0};
    for (int i = 0; i < NV; ++i) qdd_rest = std::max(qdd_rest, std::fabs(still[i]));
    for (int foot = 0; foot < 4; ++foot)
        for (int c = 0; c < 3; ++c) total[c] += still[NV + 3 * foot + c];  // world axes: local_world_aligned
    const double still_err = std::max({qdd_rest, std::fabs(total[0]), std::fabs(total[1]), std::fabs(total[2] - weight)}) / weight;
    std::printf("standing: knee torques %.3f %.3f %.3f %.3f N m; |qdd| <= %.1e; the feet carry (%.2e, %.2e, %.6f) N, the robot "
                "weighs %.6f N: %s\n", tau_hold[2], tau_hold[5], tau_hold[8], tau_hold[11], qdd_rest, total[0], total[1], total[2], weight,
                still_err <= 1e-8 ? "ok" : "MISMATCH");
    for (int k = 0; k < kKnots; ++k) {
        const double t = dt * k, roll = 0.1 * std::sin(2 * kPi * t), roll_rate = 0.2 * kPi * std::cos(2 * kPi * t);
        const double height_rate = 0.08 * kPi * std::cos(4 * kPi * t);
        double* qk = &q[k * NQ];
        double* vk = &qd[k * NV];
        double* tau = &in[k * NIN];
        qk[2] = 0.3 + 0.02 * std::sin(4 * kPi * t);
        qk[3] = std::sin(roll / 2), qk[6] = std::cos(roll / 2);  // a roll about the base's x axis
        vk[0] = roll_rate;
        vk[4] = std::sin(roll) * height_rate, vk[5] = std::cos(roll) * height_rate;  // R^T (0, 0, dz/dt)
        for (int leg = 0; leg < 4; ++leg)
            for (int j = 0; j < 3; ++j) {
                const int s = 3 * leg + j;
                qk[7 + s] = crouch[j] + 0.15 * std::sin(2 * kPi * t + phase[leg]);
                vk[6 + s] = 0.3 * kPi * std::cos(2 * kPi * t + phase[leg]);
                tau[6 + s] = tau_hold[s] + kp * (crouch[j] - qk[7 + s]) - kd * vk[6 + s];
            }
    }

    // One call for the whole horizon: outputs (qdd, then the four feet's forces) and Jacobians.
    std::vector<double> out(kKnots * NOUT), jac(kKnots * NOUT * NJAC), values(kKnots * NOUT);
    std::vector<int> status(kKnots);
    const int failed = minicheetah_feet_derivatives_batch(kKnots, q.data(), qd.data(), in.data(), out.data(), jac.data(), status.data());
    if (failed != 0 || minicheetah_feet_batch(kKnots, q.data(), qd.data(), in.data(), values.data(), nullptr) != 0)
        return std::printf("%d of %d knots failed (first status %d)\n", failed, kKnots, status[0]), 2;
    std::printf("minicheetah_feet_derivatives_batch: %d knots in one call, %d lanes; out %d x %d, jac %d x %d x %d\n", kKnots,
                minicheetah_feet_batch_width(), kKnots, NOUT, kKnots, NOUT, NJAC);
    double fz_min = 1e300, fz_max = -1e300;
    for (int k = 0; k < kKnots; ++k) {
        double fz = 0;
        for (int foot = 0; foot < 4; ++foot) fz += out[k * NOUT + NV + 3 * foot + 2];  // world z: local_world_aligned
        fz_min = std::min(fz_min, fz), fz_max = std::max(fz_max, fz);
    }
    std::printf("the feet carry %.1f to %.1f N vertically in all\n", fz_min, fz_max);

    // Every knot against the scalar entry points.
    double batch_err = 0, value_err = 0, column_err = 0;
    int bitwise = 0;
    std::vector<double> o(NOUT), j(NOUT * NJAC), up(NOUT), down(NOUT), shifted(NIN);
    for (int k = 0; k < kKnots; ++k) {
        if (minicheetah_feet_derivatives(&q[k * NQ], &qd[k * NV], &in[k * NIN], o.data(), j.data()) != NELU_STATUS_OK)
            return std::printf("knot %d: minicheetah_feet_derivatives failed\n", k), 2;
        batch_err = std::max({batch_err, relative(&out[k * NOUT], o.data(), NOUT), relative(&jac[k * NOUT * NJAC], j.data(), NOUT * NJAC)});
        bitwise += std::equal(o.begin(), o.end(), &out[k * NOUT]) && std::equal(j.begin(), j.end(), &jac[k * NOUT * NJAC]);
        value_err = std::max(value_err, relative(&out[k * NOUT], &values[k * NOUT], NOUT));
        // d out / d tau_i: central differences of the value solver with a step of 1 N m
        for (int i = 0; i < NIN; ++i) {
            std::copy(&in[k * NIN], &in[k * NIN] + NIN, shifted.begin());
            shifted[i] += 1;
            minicheetah_feet(&q[k * NQ], &qd[k * NV], shifted.data(), up.data());
            shifted[i] -= 2;
            minicheetah_feet(&q[k * NQ], &qd[k * NV], shifted.data(), down.data());
            double err = 0, scale = 1;
            for (int r = 0; r < NOUT; ++r) {
                const double jr = j[r * NJAC + 2 * NV + i];
                err = std::max(err, std::fabs(jr - (up[r] - down[r]) / 2)), scale = std::max(scale, std::fabs(jr));
            }
            column_err = std::max(column_err, err / scale);
        }
    }
    const bool ok = still_err <= 1e-8 && batch_err <= 1e-12 && value_err <= 1e-12 && column_err <= 1e-9;
    std::printf("batch against %d scalar calls: max relative difference %.2e (%d knots bit for bit); outputs against the value "
                "solver %.2e; torque columns against central differences %.2e: %s\n",
                kKnots, batch_err, bitwise, value_err, column_err, ok ? "ok" : "MISMATCH");

    // Time per knot: the batch call against a loop of scalar calls.
    const int repeats = 51;
    const double batch_time = median_time(repeats, [&] {
        minicheetah_feet_derivatives_batch(kKnots, q.data(), qd.data(), in.data(), out.data(), jac.data(), status.data());
    });
    const double loop_time = median_time(repeats, [&] {
        for (int k = 0; k < kKnots; ++k) minicheetah_feet_derivatives(&q[k * NQ], &qd[k * NV], &in[k * NIN], &out[k * NOUT], &jac[k * NOUT * NJAC]);
    });
    const double value_time = median_time(repeats, [&] { minicheetah_feet_batch(kKnots, q.data(), qd.data(), in.data(), values.data(), nullptr); });
    std::printf("per knot (median of %d calls): derivatives %.2f us in the batch call, %.2f us in scalar calls; values %.2f us in the batch call\n",
                repeats, 1e6 * batch_time / kKnots, 1e6 * loop_time / kKnots, 1e6 * value_time / kKnots);
    return ok ? 0 : 1;
}
