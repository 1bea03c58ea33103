// Generated solvers never touch the heap (DESIGN.md, "Contract: generated code"): this suite
// replaces the process's allocation functions by counting ones and calls generated ID and FD
// solvers, double and float, many times, requiring that the count does not move.
//
// Counted: the global operator new / new[] (every form, aligned and nothrow included), and, in
// ordinary builds, the C allocation functions malloc, calloc, realloc, aligned_alloc, memalign and
// posix_memalign, which this file defines (noexcept, as glibc declares them) by forwarding to
// glibc's __libc_* entry points. Under
// AddressSanitizer the C functions are ASan's own (its interceptors must stay in charge of malloc),
// so only operator new is counted there. The first cases show that the counters do move, so that
// the zero below cannot be vacuous.
//
// The solvers come from nelu_add_solver() in tests/CMakeLists.txt: the Panda (fixed base) and the
// Mini Cheetah with a floating base (quaternion and 6-DoF root joint), ID and FD, with their batch
// forms (BATCH), whose lanes live on the stack.
#include <doctest/doctest.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "load.hpp"
#include "nelu/reference.hpp"
#include "nelu/state.hpp"
#include "panda_gaz2019_fd_batch.hpp"
#include "panda_gaz2019_id_batch.hpp"
#include "quadruped_minicheetah_floating_fd_batch.hpp"
#include "quadruped_minicheetah_floating_id_batch.hpp"
#include "test_support.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define NELU_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NELU_TEST_ASAN 1
#endif
#endif
#ifndef NELU_TEST_ASAN
#define NELU_TEST_ASAN 0
#endif

namespace {
std::atomic<long> g_allocations{0};  // every counted allocation since the start of the process
void count() { g_allocations.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

// ---------------------------------------------------------------------------------------------
// The C allocation functions (not under ASan: see above).
#if !NELU_TEST_ASAN
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t n) noexcept {
    count();
    return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) noexcept {
    count();
    return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) noexcept {
    count();
    return __libc_realloc(p, n);
}
void* memalign(size_t alignment, size_t n) noexcept {
    count();
    return __libc_memalign(alignment, n);
}
void* aligned_alloc(size_t alignment, size_t n) noexcept {
    count();
    return __libc_memalign(alignment, n);
}
int posix_memalign(void** p, size_t alignment, size_t n) noexcept {
    if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    count();
    void* q = __libc_memalign(alignment, n);
    if (!q) return ENOMEM;
    *p = q;
    return 0;
}
void free(void* p) noexcept { __libc_free(p); }
}
#endif

// ---------------------------------------------------------------------------------------------
// The global operator new and delete, every replaceable form.
namespace {
void* counted_new(size_t n, size_t alignment = 0) {
    count();
    void* p = nullptr;
    if (alignment <= alignof(std::max_align_t)) p = std::malloc(n ? n : 1);
    else if (posix_memalign(&p, alignment, n ? n : 1) != 0) p = nullptr;
    return p;
}
}  // namespace

void* operator new(size_t n) {
    if (void* p = counted_new(n)) return p;
    throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return counted_new(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return counted_new(n); }
void* operator new(size_t n, std::align_val_t a) {
    if (void* p = counted_new(n, static_cast<size_t>(a))) return p;
    throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return counted_new(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return counted_new(n, static_cast<size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

long allocations() { return g_allocations.load(std::memory_order_relaxed); }

void* volatile g_sink;  // keeps the compiler from removing an allocation it could prove unused

template <class T> using Solver = int (*)(const T*, const T*, const T*, T*);

/// Inputs of a generated `id` or `fd` solver at random states of the model, in scalar T.
template <class T> struct Inputs {
    std::vector<std::vector<T>> q, qd, in;
};

template <class T> Inputs<T> make_inputs(const nelu::Model& m, bool id, int states) {
    std::mt19937_64 rng(11);
    Inputs<T> x;
    for (int k = 0; k < states; ++k) {
        nelu::State s = nelu::random_state(m, rng);
        std::vector<double> in = id ? s.qdd : s.tau;
        for (const auto& f : s.fext)
            for (int c = 0; c < 6; ++c) in.push_back(f[c]);
        x.q.emplace_back(s.q.begin(), s.q.end());
        x.qd.emplace_back(s.qd.begin(), s.qd.end());
        x.in.emplace_back(in.begin(), in.end());
    }
    return x;
}

/// Allocations made by `calls` calls of the solver (after one call to warm up), and whether every
/// call succeeded with finite outputs.
template <class T> long allocations_per_calls(Solver<T> solver, const Inputs<T>& x, int nout, int calls, bool& ok) {
    std::vector<T> out(nout);
    ok = solver(x.q[0].data(), x.qd[0].data(), x.in[0].data(), out.data()) == 0;
    const long before = allocations();
    for (int i = 0; i < calls; ++i) {
        const size_t k = i % x.q.size();
        ok = (solver(x.q[k].data(), x.qd[k].data(), x.in[k].data(), out.data()) == 0) && ok;
    }
    const long after = allocations();
    for (T v : out) ok = ok && std::isfinite(v);
    return after - before;
}

template <class T> using Batch = int (*)(int, const T*, const T*, const T*, T*, int*);

/// Allocations made by `calls` calls of a batch form on every state of x at once and on all but one
/// (a short last block of lanes), after one call to warm up; and whether every state succeeded.
template <class T> long allocations_per_batch_calls(Batch<T> batch, const Inputs<T>& x, int nout, int calls, bool& ok) {
    std::vector<T> q, qd, in;  // state-major
    for (std::size_t k = 0; k < x.q.size(); ++k) {
        q.insert(q.end(), x.q[k].begin(), x.q[k].end());
        qd.insert(qd.end(), x.qd[k].begin(), x.qd[k].end());
        in.insert(in.end(), x.in[k].begin(), x.in[k].end());
    }
    const int n = static_cast<int>(x.q.size());
    std::vector<T> out(static_cast<std::size_t>(n * nout));
    std::vector<int> status(static_cast<std::size_t>(n));
    ok = batch(n, q.data(), qd.data(), in.data(), out.data(), status.data()) == 0;
    const long before = allocations();
    for (int i = 0; i < calls; ++i) ok = batch(n - i % 2, q.data(), qd.data(), in.data(), out.data(), status.data()) == 0 && ok;
    const long after = allocations();
    for (T v : out) ok = ok && std::isfinite(v);
    return after - before;
}

nelu::Model load(const char* robot, bool floating) {
    nelu::LoadOptions options;
    options.floating_base = floating;
    return nelu::load_urdf_file(nelu::test::source_dir() + "/robots/" + robot, options).model;
}

}  // namespace

TEST_CASE("the counters see allocations (so that zero below means something)") {
    long before = allocations();
    g_sink = ::operator new(64);
    ::operator delete(g_sink);
    CHECK(allocations() > before);

    before = allocations();
    auto* v = new std::vector<double>(100);  // operator new twice (the vector and its buffer)
    g_sink = v;
    delete v;
    CHECK(allocations() >= before + 2);

#if !NELU_TEST_ASAN
    for (int kind = 0; kind < 4; ++kind) {
        CAPTURE(kind);
        before = allocations();
        void* p = nullptr;
        if (kind == 0) p = std::malloc(32);
        if (kind == 1) p = std::calloc(4, 8);
        if (kind == 2) p = std::realloc(nullptr, 32);
        if (kind == 3) REQUIRE(posix_memalign(&p, 64, 32) == 0);
        g_sink = p;
        std::free(p);
        CHECK(allocations() == before + 1);
    }
#else
    MESSAGE("AddressSanitizer build: malloc and friends are ASan's, only operator new is counted");
#endif
}

TEST_CASE("the reference RNEA allocates: the counters catch it in real code") {
    const nelu::Model m = load("panda_gaz2019.urdf", false);
    std::mt19937_64 rng(3);
    const nelu::State s = nelu::random_state(m, rng);
    std::vector<double> tau(m.nv);
    const long before = allocations();
    nelu::rnea(m, s.q.data(), s.qd.data(), s.qdd.data(), s.fext.data(), tau.data());
    CHECK(allocations() > before);
}

TEST_CASE("generated ID and FD solvers make no heap allocation, double and float, their batch forms too") {
    constexpr int kCalls = 1000;
    struct Case {
        const char* name;
        const char* robot;
        bool floating, id;
        Solver<double> d;
        Solver<float> f;
        int nout;
        Batch<double> bd;
        Batch<float> bf;
    };
    const Case cases[] = {
        {"panda_gaz2019_id", "panda_gaz2019.urdf", false, true, panda_gaz2019_id, panda_gaz2019_id_f, panda_gaz2019_id_NOUT,
         panda_gaz2019_id_batch, panda_gaz2019_id_f_batch},
        {"panda_gaz2019_fd", "panda_gaz2019.urdf", false, false, panda_gaz2019_fd, panda_gaz2019_fd_f, panda_gaz2019_fd_NOUT,
         panda_gaz2019_fd_batch, panda_gaz2019_fd_f_batch},
        {"quadruped_minicheetah_floating_id", "quadruped_minicheetah.urdf", true, true, quadruped_minicheetah_floating_id,
         quadruped_minicheetah_floating_id_f, quadruped_minicheetah_floating_id_NOUT, quadruped_minicheetah_floating_id_batch,
         quadruped_minicheetah_floating_id_f_batch},
        {"quadruped_minicheetah_floating_fd", "quadruped_minicheetah.urdf", true, false, quadruped_minicheetah_floating_fd,
         quadruped_minicheetah_floating_fd_f, quadruped_minicheetah_floating_fd_NOUT, quadruped_minicheetah_floating_fd_batch,
         quadruped_minicheetah_floating_fd_f_batch},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        const nelu::Model m = load(c.robot, c.floating);
        const Inputs<double> xd = make_inputs<double>(m, c.id, 16);
        const Inputs<float> xf = make_inputs<float>(m, c.id, 16);
        bool ok_d = false, ok_f = false;
        const long n_d = allocations_per_calls(c.d, xd, c.nout, kCalls, ok_d);
        const long n_f = allocations_per_calls(c.f, xf, c.nout, kCalls, ok_f);
        CHECK(ok_d);
        CHECK(ok_f);
        CHECK_MESSAGE(n_d == 0, n_d << " allocations in " << kCalls << " calls of " << c.name);
        CHECK_MESSAGE(n_f == 0, n_f << " allocations in " << kCalls << " calls of " << c.name << "_f");
        // the batch forms: 16 and 15 states per call (a whole number of lanes, and a short last block)
        const long b_d = allocations_per_batch_calls(c.bd, xd, c.nout, kCalls / 10, ok_d);
        const long b_f = allocations_per_batch_calls(c.bf, xf, c.nout, kCalls / 10, ok_f);
        CHECK(ok_d);
        CHECK(ok_f);
        CHECK_MESSAGE(b_d == 0, b_d << " allocations in " << kCalls / 10 << " calls of " << c.name << "_batch");
        CHECK_MESSAGE(b_f == 0, b_f << " allocations in " << kCalls / 10 << " calls of " << c.name << "_f_batch");
    }
}
