// driver.cpp: runs generated solvers on 100 deterministic states and prints every output bit for
// bit, for scripts/firmware.sh. The same source is built for the host (the reference), for
// Cortex-M under QEMU (semihosting) and for aarch64 Linux under qemu-user.
//
// fw_table.inc (written by firmware.sh) includes the solvers' headers and defines fw_solvers[].
// States come from a 64-bit LCG and exact arithmetic only (integer to double, scaling by powers of
// two, one correctly rounded sqrt), so every target sees bit-identical inputs; an input hash per
// solver is printed so that the comparison can check that.
//
// Built with -DFW_BATCH (host and aarch64 Linux), fw_table.inc also names the batch forms
// (nelu compile --batch): variants db and fb run every state through NAME_batch and NAME_f_batch in
// two calls (97 states and 3: each ends with a short block of lanes) and print the same rows.
//
// Output lines:  N solver name nout | I solver hash | S solver variant stack_bytes
//                R solver variant state status hex... | E (end)
// Built with -DFW_TRACE, it only calls every variant once between two calls of fw_mark(), for
// counting instructions in QEMU's execution trace (see fwtool.cpp); a batch variant's call runs
// kTraceStates states (fwtool divides its count by them).
#include <cstdint>
#include <cstdio>
#include <cstring>

struct FwSolver {
    const char* name;
    int nq, nv, nin, nout;
    int (*d)(const double*, const double*, const double*, double*);
    int (*f)(const float*, const float*, const float*, float*);
    int (*dws)(const double*, const double*, const double*, double*, void*);
    int (*fws)(const float*, const float*, const float*, float*, void*);
    unsigned long dws_bytes, fws_bytes;
    int (*db)(int, const double*, const double*, const double*, double*, int*);
    int (*fb)(int, const float*, const float*, const float*, float*, int*);
};

#ifdef FW_BATCH
#define FW_BATCH_FN(f) f
#else
#define FW_BATCH_FN(f) nullptr
#endif

#include "fw_table.inc"

namespace {

constexpr int kStates = 100;
constexpr int kMax = 2048;  // largest nq, nv, nin, nout
#ifdef FW_BATCH
constexpr unsigned long kStackPaint = 512 * 1024;  // bytes painted below the stack pointer (Linux: the lanes of a batch form)
#else
constexpr unsigned long kStackPaint = 48 * 1024;  // bytes painted below the stack pointer
#endif
alignas(16) unsigned char g_work[FW_WORK_BYTES + 16];

std::uint64_t g_lcg;
double uniform(double lo, double hi) {  // exact: 53 random bits scaled by 2^-53, then lo + (hi - lo) u
    g_lcg = g_lcg * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (static_cast<double>(g_lcg >> 11) * 0x1p-53);
}

struct State {
    double q[kMax], qd[kMax], in[kMax];
    float qf[kMax], qdf[kMax], inf[kMax];
};
State g_s;

void make_state(const FwSolver& s, int k) {
    g_lcg = 0x9e3779b97f4a7c15ull ^ (static_cast<std::uint64_t>(k) * 0x100000001b3ull);
    for (int i = 0; i < s.nq; ++i) g_s.q[i] = uniform(-3, 3);
    if (s.nq == s.nv + 1) {  // floating base: q = [x y z qx qy qz qw ...], a unit quaternion
        for (int i = 0; i < 3; ++i) g_s.q[i] = uniform(-1, 1);
        double n = 0;
        for (int i = 3; i < 7; ++i) g_s.q[i] = uniform(-1, 1), n += g_s.q[i] * g_s.q[i];
        n = __builtin_sqrt(n);  // correctly rounded (IEEE 754), in hardware or in libm
        for (int i = 3; i < 7; ++i) g_s.q[i] /= n;
    }
    for (int i = 0; i < s.nv; ++i) g_s.qd[i] = uniform(-2, 2);
    for (int i = 0; i < s.nin; ++i) g_s.in[i] = uniform(-5, 5);
    for (int i = 0; i < s.nq; ++i) g_s.qf[i] = static_cast<float>(g_s.q[i]);
    for (int i = 0; i < s.nv; ++i) g_s.qdf[i] = static_cast<float>(g_s.qd[i]);
    for (int i = 0; i < s.nin; ++i) g_s.inf[i] = static_cast<float>(g_s.in[i]);
}

constexpr int kVariants = 6;
const char* const kVariant[kVariants] = {"d", "f", "dws", "fws", "db", "fb"};
[[maybe_unused]] bool is_batch(int v) { return v >= 4; }
bool has(const FwSolver& s, int v) {
    const void* f[kVariants] = {reinterpret_cast<const void*>(s.d), reinterpret_cast<const void*>(s.f), reinterpret_cast<const void*>(s.dws),
                                reinterpret_cast<const void*>(s.fws), reinterpret_cast<const void*>(s.db), reinterpret_cast<const void*>(s.fb)};
    return f[v] != nullptr;
}

double g_out[kMax];
float g_outf[kMax];
void clear() { std::memset(g_out, 0, sizeof g_out), std::memset(g_outf, 0, sizeof g_outf); }

#ifdef FW_BATCH
// every state's arguments and outputs, state-major, for the batch forms
constexpr int kBatchMax = 512;  // largest nq, nv, nin, nout of a batch form
constexpr int kTraceStates = 8;
double g_bq[kStates * kBatchMax], g_bqd[kStates * kBatchMax], g_bin[kStates * kBatchMax], g_bout[kStates * kBatchMax];
float g_bqf[kStates * kBatchMax], g_bqdf[kStates * kBatchMax], g_binf[kStates * kBatchMax], g_boutf[kStates * kBatchMax];
int g_bstatus[kStates];

void make_batch(const FwSolver& s) {
    for (int k = 0; k < kStates; ++k) {
        make_state(s, k);
        std::memcpy(g_bq + k * s.nq, g_s.q, 8 * s.nq), std::memcpy(g_bqd + k * s.nv, g_s.qd, 8 * s.nv), std::memcpy(g_bin + k * s.nin, g_s.in, 8 * s.nin);
        std::memcpy(g_bqf + k * s.nq, g_s.qf, 4 * s.nq), std::memcpy(g_bqdf + k * s.nv, g_s.qdf, 4 * s.nv), std::memcpy(g_binf + k * s.nin, g_s.inf, 4 * s.nin);
    }
    std::memset(g_bout, 0, sizeof g_bout), std::memset(g_boutf, 0, sizeof g_boutf);
}

/// States [k0, k0 + n) through batch variant v.
int call_batch(const FwSolver& s, int v, int k0, int n) {
    if (v == 4) return s.db(n, g_bq + k0 * s.nq, g_bqd + k0 * s.nv, g_bin + k0 * s.nin, g_bout + k0 * s.nout, g_bstatus + k0);
    return s.fb(n, g_bqf + k0 * s.nq, g_bqdf + k0 * s.nv, g_binf + k0 * s.nin, g_boutf + k0 * s.nout, g_bstatus + k0);
}
#endif

/// The outputs variant v wrote for state k (the batch forms' rows are in their state-major arrays).
const double* outputs_d([[maybe_unused]] const FwSolver& s, [[maybe_unused]] int v, [[maybe_unused]] int k) {
#ifdef FW_BATCH
    if (is_batch(v)) return g_bout + k * s.nout;
#endif
    return g_out;
}
const float* outputs_f([[maybe_unused]] const FwSolver& s, [[maybe_unused]] int v, [[maybe_unused]] int k) {
#ifdef FW_BATCH
    if (is_batch(v)) return g_boutf + k * s.nout;
#endif
    return g_outf;
}

__attribute__((noinline)) int call(const FwSolver& s, int v) {
    switch (v) {
        case 0: return s.d(g_s.q, g_s.qd, g_s.in, g_out);
        case 1: return s.f(g_s.qf, g_s.qdf, g_s.inf, g_outf);
        case 2: return s.dws(g_s.q, g_s.qd, g_s.in, g_out, g_work);
        case 3: return s.fws(g_s.qf, g_s.qdf, g_s.inf, g_outf, g_work);
#ifdef FW_BATCH
        default: return call_batch(s, v, 0, kTraceStates);
#else
        default: return -1;
#endif
    }
}

[[maybe_unused]] void print_outputs(const FwSolver& s, int v, int k, int status) {
    std::printf("R %s %s %d %d", s.name, kVariant[v], k, status);
    for (int i = 0; i < s.nout; ++i) {
        if (v % 2 == 0) {
            std::uint64_t b;
            std::memcpy(&b, outputs_d(s, v, k) + i, 8);
            std::printf(" %08lx%08lx", static_cast<unsigned long>(b >> 32), static_cast<unsigned long>(b & 0xffffffffu));
        } else {
            std::uint32_t b;
            std::memcpy(&b, outputs_f(s, v, k) + i, 4);
            std::printf(" %08lx", static_cast<unsigned long>(b));
        }
    }
    std::printf("\n");
}

std::uintptr_t stack_pointer() {
    std::uintptr_t sp;
#if defined(__aarch64__) || defined(__arm__)
    __asm__ volatile("mov %0, sp" : "=r"(sp));
#elif defined(__x86_64__)
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#else
    sp = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
#endif
    return sp;
}

/// Stack bytes one call of variant v takes (the solver, its callees such as sin and cos, and the
/// small call() wrapper): the stack below this frame is painted, the call made, and the deepest
/// word that changed found.
[[maybe_unused]] __attribute__((noinline)) unsigned long stack_use(const FwSolver& s, int v) {
    const std::uintptr_t sp = stack_pointer() & ~static_cast<std::uintptr_t>(7);
    volatile std::uint32_t* lo = reinterpret_cast<volatile std::uint32_t*>(sp - kStackPaint);
    volatile std::uint32_t* hi = reinterpret_cast<volatile std::uint32_t*>(sp - 64);
    clear();
    for (volatile std::uint32_t* p = lo; p < hi; ++p) *p = 0x5eb1ab1eu;
    call(s, v);
    for (volatile std::uint32_t* p = lo; p < hi; ++p)
        if (*p != 0x5eb1ab1eu) return static_cast<unsigned long>(sp - reinterpret_cast<std::uintptr_t>(p));
    return 0;
}

[[maybe_unused]] std::uint64_t input_hash(const FwSolver& s) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](const void* p, std::size_t n) {
        const unsigned char* c = static_cast<const unsigned char*>(p);
        for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 0x100000001b3ull;
    };
    for (int k = 0; k < kStates; ++k) {
        make_state(s, k);
        mix(g_s.q, 8 * s.nq), mix(g_s.qd, 8 * s.nv), mix(g_s.in, 8 * s.nin);
    }
    return h;
}

}  // namespace

extern "C" __attribute__((noinline)) void fw_mark(void) { __asm__ volatile(""); }

int main() {
    const int n = static_cast<int>(sizeof fw_solvers / sizeof fw_solvers[0]);
    for (int i = 0; i < n; ++i) {
        const FwSolver& s = fw_solvers[i];
        if (s.nq > kMax || s.nv > kMax || s.nin > kMax || s.nout > kMax || s.dws_bytes > FW_WORK_BYTES || s.fws_bytes > FW_WORK_BYTES) {
            std::printf("X %s: too large for this driver\n", s.name);
            return 1;
        }
#ifdef FW_BATCH
        if ((s.db || s.fb) && (s.nq > kBatchMax || s.nv > kBatchMax || s.nin > kBatchMax || s.nout > kBatchMax)) {
            std::printf("X %s: too large for this driver's batch arrays\n", s.name);
            return 1;
        }
#endif
    }
#ifdef FW_TRACE
    fw_mark(), fw_mark();  // the baseline: two marks with nothing between them
    for (int i = 0; i < n; ++i)
        for (int v = 0; v < kVariants; ++v)
            if (has(fw_solvers[i], v)) {
                make_state(fw_solvers[i], 0);
#ifdef FW_BATCH
                if (is_batch(v)) make_batch(fw_solvers[i]);
#endif
                clear();
                fw_mark();
                call(fw_solvers[i], v);
                fw_mark();
                std::printf("T %s %s\n", fw_solvers[i].name, kVariant[v]);
            }
#else
    for (int i = 0; i < n; ++i) {
        const FwSolver& s = fw_solvers[i];
        std::printf("N %s %d\nI %s %016llx\n", s.name, s.nout, s.name, static_cast<unsigned long long>(input_hash(s)));
        for (int v = 0; v < kVariants; ++v) {
            if (!has(s, v)) continue;
            make_state(s, 0);
#ifdef FW_BATCH
            if (is_batch(v)) {  // every state, in two calls: 97 states, then 3
                make_batch(s);
                std::printf("S %s %s %lu\n", s.name, kVariant[v], stack_use(s, v));
                make_batch(s);
                call_batch(s, v, 0, kStates - 3), call_batch(s, v, kStates - 3, 3);
                for (int k = 0; k < kStates; ++k) print_outputs(s, v, k, g_bstatus[k]);
                continue;
            }
#endif
            std::printf("S %s %s %lu\n", s.name, kVariant[v], stack_use(s, v));
            for (int k = 0; k < kStates; ++k) {
                make_state(s, k);
                clear();
                print_outputs(s, v, k, call(s, v));
            }
        }
    }
#endif
    std::printf("E\n");
    return 0;
}
