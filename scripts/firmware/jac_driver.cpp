// jac_driver.cpp: one derivative solver (nelu compile --derivatives) on 100 deterministic states,
// for scripts/firmware.sh: its columns in NEON lanes on aarch64, column by column on a Cortex-M
// (no lanes there), in SSE2 lanes on the host, each state's out and jac printed bit for bit.
//
// Built with -include DIR/NAME.hpp -DFW_JAC=NAME. States as driver.cpp draws them (a 64-bit LCG and
// exact arithmetic, so every target sees the same inputs).
// Output lines:  N name nout njac lane_bytes | J state status hex(out) hex(jac, row-major) | E
// (lane_bytes: the runtime's NELU_LANE_BYTES on this target, 0 where the columns are solved one by one)
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "nelu/lanes.hpp"

#define FW_CAT2(a, b) a##b
#define FW_CAT(a, b) FW_CAT2(a, b)
#define FW_NQ FW_CAT(FW_JAC, _NQ)
#define FW_NV FW_CAT(FW_JAC, _NV)
#define FW_NIN FW_CAT(FW_JAC, _NIN)
#define FW_NOUT FW_CAT(FW_JAC, _NOUT)
#define FW_NJAC FW_CAT(FW_JAC, _NJAC)
#define FW_DERIVATIVES FW_CAT(FW_JAC, _derivatives)
#define FW_STR2(a) #a
#define FW_STR(a) FW_STR2(a)

namespace {

constexpr int kStates = 100;

std::uint64_t g_lcg;
double uniform(double lo, double hi) {  // exact: 53 random bits scaled by 2^-53, then lo + (hi - lo) u
    g_lcg = g_lcg * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (static_cast<double>(g_lcg >> 11) * 0x1p-53);
}

// + 1: a solver without inputs has NIN 0
double g_q[FW_NQ], g_qd[FW_NV], g_in[FW_NIN + 1], g_out[FW_NOUT], g_jac[FW_NOUT * FW_NJAC];

void make_state(int k) {  // as driver.cpp's make_state
    g_lcg = 0x9e3779b97f4a7c15ull ^ (static_cast<std::uint64_t>(k) * 0x100000001b3ull);
    for (int i = 0; i < FW_NQ; ++i) g_q[i] = uniform(-3, 3);
    if (FW_NQ == FW_NV + 1) {  // floating base: q = [x y z qx qy qz qw ...], a unit quaternion
        for (int i = 0; i < 3; ++i) g_q[i] = uniform(-1, 1);
        double n = 0;
        for (int i = 3; i < 7; ++i) g_q[i] = uniform(-1, 1), n += g_q[i] * g_q[i];
        n = __builtin_sqrt(n);
        for (int i = 3; i < 7; ++i) g_q[i] /= n;
    }
    for (int i = 0; i < FW_NV; ++i) g_qd[i] = uniform(-2, 2);
    for (int i = 0; i < FW_NIN; ++i) g_in[i] = uniform(-5, 5);
}

void print_hex(const double* x, int n) {
    for (int i = 0; i < n; ++i) {
        std::uint64_t b;
        std::memcpy(&b, &x[i], 8);
        std::printf(" %016llx", static_cast<unsigned long long>(b));
    }
}

}  // namespace

int main() {
    std::printf("N %s %d %d %d\n", FW_STR(FW_JAC), FW_NOUT, FW_NJAC, NELU_LANE_BYTES);
    for (int k = 0; k < kStates; ++k) {
        make_state(k);
        std::memset(g_out, 0, sizeof g_out), std::memset(g_jac, 0, sizeof g_jac);
        const int status = FW_DERIVATIVES(g_q, g_qd, g_in, g_out, g_jac);
        std::printf("J %d %d", k, status);
        print_hex(g_out, FW_NOUT), print_hex(g_jac, FW_NOUT * FW_NJAC);
        std::printf("\n");
    }
    std::printf("E\n");
    return 0;
}
