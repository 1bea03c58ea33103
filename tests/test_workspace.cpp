// The workspace form (NAME_ws, NAME_f_ws: every intermediate value in caller-provided memory,
// emitted when a solver's estimated stack exceeds nelu compile --max-stack) computes exactly what
// the ordinary entry points do, bit for bit, in double and float, whatever the workspace held
// before the call, and with two workspaces used in turn (reentrancy). The solvers come from
// nelu_add_solver() in tests/CMakeLists.txt with MAX_STACK 0: the UR5e's FD (one function) and
// the floating Mini Cheetah's FD (parts sharing a work struct); the UR5e's ID with the default
// budget gets no workspace form. With a budget their parts fit, the workspace form runs the
// ordinary form's parts on the caller's memory (the floating Mini Cheetah's FD, and the held
// UR5e's contact derivatives with their columns in lanes).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <fstream>

#include <nlohmann/json.hpp>

#include "minicheetah_floating_fd_ws0.hpp"
#include "minicheetah_floating_fd_ws8k.hpp"
#include "test_support.hpp"
#include "ur5e_fd_ws0.hpp"
#include "ur5e_id_default.hpp"
#include "ur5e_tool_ws8k.hpp"

namespace {

template <class T>
using Solver = int (*)(const T*, const T*, const T*, T*);
template <class T>
using WsSolver = int (*)(const T*, const T*, const T*, T*, void*);
template <class T>
using DerivativesSolver = int (*)(const T*, const T*, const T*, T*, T*);
template <class T>
using WsDerivativesSolver = int (*)(const T*, const T*, const T*, T*, T*, void*);

struct Dims {
    int nq, nv, nin, nout;
    long work_bytes;
};

/// Random states (a unit quaternion when nq = nv + 1); the ordinary entry point and the workspace
/// form, the workspace filled with garbage first, must agree bit for bit, status included:
/// `plain(q, qd, in, out)` and `ws(q, qd, in, out, work)`, each output `out` (with jac after out).
/// At least min_ok of the 200 states must have status OK.
template <class T, class Plain, class Ws>
void compare_forms(const char* name, const Dims& d, int njac, int min_ok, Plain plain, Ws ws) {
    std::mt19937_64 rng(20260415);
    std::uniform_real_distribution<double> u(-1, 1);
    const std::size_t nres = static_cast<std::size_t>(d.nout) * static_cast<std::size_t>(1 + njac);
    std::vector<T> q(d.nq), qd(d.nv), in(d.nin), a(nres), b(nres);
    std::vector<double> work1(static_cast<std::size_t>(d.work_bytes) / sizeof(double) + 1), work2(work1.size());
    int compared = 0, differing = 0, ok_status = 0;
    for (int k = 0; k < 200; ++k) {
        for (T& x : q) x = T(3 * u(rng));
        if (d.nq == d.nv + 1) {
            double n = 0;
            for (int i = 3; i < 7; ++i) n += double(q[i]) * double(q[i]);
            for (int i = 3; i < 7; ++i) q[i] = T(q[i] / std::sqrt(n));
        }
        for (T& x : qd) x = T(2 * u(rng));
        for (T& x : in) x = T(5 * u(rng));
        std::vector<double>& work = k % 2 ? work1 : work2;  // two workspaces in turn
        for (double& w : work) w = k % 3 ? std::numeric_limits<double>::quiet_NaN() : 1e300 * u(rng);
        std::fill(a.begin(), a.end(), T(0)), std::fill(b.begin(), b.end(), T(0));
        const int sa = plain(q.data(), qd.data(), in.data(), a.data());
        const int sb = ws(q.data(), qd.data(), in.data(), b.data(), work.data());
        CHECK(sa == sb);
        ok_status += sa == 0;
        differing += std::memcmp(a.data(), b.data(), sizeof(T) * a.size()) != 0;
        ++compared;
    }
    MESSAGE(std::string(name) << ": " << compared << " states, " << ok_status << " with status OK, " << differing << " differing bit patterns");
    CHECK(ok_status >= min_ok);
    CHECK(differing == 0);
}

/// A value entry point and its workspace form (at least 151 states with status OK).
template <class T>
void check_identical(const char* name, Solver<T> plain, WsSolver<T> ws, const Dims& d) {
    compare_forms<T>(name, d, 0, 151, plain, ws);
}

/// A derivatives entry point and its workspace form, out and jac (at least 181 states with status OK).
template <class T>
void check_identical_derivatives(const char* name, DerivativesSolver<T> plain, WsDerivativesSolver<T> ws, const Dims& d, int njac) {
    const std::size_t nout = static_cast<std::size_t>(d.nout);
    compare_forms<T>(
        name, d, njac, 181, [&](const T* q, const T* qd, const T* in, T* r) { return plain(q, qd, in, r, r + nout); },
        [&](const T* q, const T* qd, const T* in, T* r, void* w) { return ws(q, qd, in, r, r + nout, w); });
}

/// NAME.json of a solver of this test, and its stack account (the value solver's, or with
/// `derivatives` NAME_derivatives').
nlohmann::json manifest(const std::string& name) {
    std::ifstream f(std::string(NELU_WORKSPACE_MANIFESTS) + "/" + name + ".json");
    REQUIRE(f.good());
    return nlohmann::json::parse(f);
}

}  // namespace

TEST_CASE("workspace form: identical to the ordinary entry points, one function (UR5e FD), double and float") {
    const Dims d{ur5e_fd_ws0_NQ, ur5e_fd_ws0_NV, ur5e_fd_ws0_NIN, ur5e_fd_ws0_NOUT, ur5e_fd_ws0_WORK_BYTES};
    check_identical<double>("ur5e_fd_ws", ur5e_fd_ws0, ur5e_fd_ws0_ws, d);
    const Dims df{ur5e_fd_ws0_NQ, ur5e_fd_ws0_NV, ur5e_fd_ws0_NIN, ur5e_fd_ws0_NOUT, ur5e_fd_ws0_F_WORK_BYTES};
    check_identical<float>("ur5e_fd_f_ws", ur5e_fd_ws0_f, ur5e_fd_ws0_f_ws, df);
    CHECK(ur5e_fd_ws0_WORK_ALIGN == alignof(double));
    CHECK(ur5e_fd_ws0_F_WORK_ALIGN == alignof(float));
    CHECK(ur5e_fd_ws0_F_WORK_BYTES * 2 == ur5e_fd_ws0_WORK_BYTES);
}

TEST_CASE("workspace form: identical to the ordinary entry points, several parts (floating Mini Cheetah FD)") {
    const Dims d{minicheetah_floating_fd_ws0_NQ, minicheetah_floating_fd_ws0_NV, minicheetah_floating_fd_ws0_NIN,
                 minicheetah_floating_fd_ws0_NOUT, minicheetah_floating_fd_ws0_WORK_BYTES};
    check_identical<double>("minicheetah_floating_fd_ws", minicheetah_floating_fd_ws0, minicheetah_floating_fd_ws0_ws, d);
    Dims df = d;
    df.work_bytes = minicheetah_floating_fd_ws0_F_WORK_BYTES;
    check_identical<float>("minicheetah_floating_fd_f_ws", minicheetah_floating_fd_ws0_f, minicheetah_floating_fd_ws0_f_ws, df);
}

TEST_CASE("workspace form on the ordinary form's parts: identical to the ordinary entry points (floating Mini Cheetah FD, 8 KiB budget)") {
    const nlohmann::json m = manifest("minicheetah_floating_fd_ws8k");
    INFO(m["workspace"].dump());
    CHECK(m["stack"]["form"] == "ordinary+workspace");  // over the budget,
    CHECK(m["workspace"]["shape"] == "ordinary_parts");  // and the parts fit it
    const Dims d{minicheetah_floating_fd_ws8k_NQ, minicheetah_floating_fd_ws8k_NV, minicheetah_floating_fd_ws8k_NIN,
                 minicheetah_floating_fd_ws8k_NOUT, minicheetah_floating_fd_ws8k_WORK_BYTES};
    check_identical<double>("minicheetah_floating_fd_ws8k_ws", minicheetah_floating_fd_ws8k, minicheetah_floating_fd_ws8k_ws, d);
    Dims df = d;
    df.work_bytes = minicheetah_floating_fd_ws8k_F_WORK_BYTES;
    check_identical<float>("minicheetah_floating_fd_ws8k_f_ws", minicheetah_floating_fd_ws8k_f, minicheetah_floating_fd_ws8k_f_ws, df);
    // the same solver with MAX_STACK 0 (no frame fits) keeps every value in the workspace
    const nlohmann::json m0 = manifest("minicheetah_floating_fd_ws0");
    CHECK(m0["workspace"]["shape"] == "every_value");
}

TEST_CASE("workspace form on the ordinary form's parts: derivatives with columns in lanes (held UR5e, 8 KiB budget)") {
    const nlohmann::json m = manifest("ur5e_tool_ws8k");
    INFO(m["derivatives"]["workspace"].dump());
    REQUIRE(m["derivatives"].contains("lanes"));
    CHECK(m["derivatives"]["workspace"]["shape"] == "ordinary_parts");
    const Dims d{ur5e_tool_ws8k_NQ, ur5e_tool_ws8k_NV, ur5e_tool_ws8k_NIN, ur5e_tool_ws8k_NOUT, ur5e_tool_ws8k_derivatives_WORK_BYTES};
    check_identical_derivatives<double>("ur5e_tool_ws8k_derivatives_ws", ur5e_tool_ws8k_derivatives, ur5e_tool_ws8k_derivatives_ws, d,
                                        ur5e_tool_ws8k_NJAC);
    Dims df = d;
    df.work_bytes = ur5e_tool_ws8k_derivatives_F_WORK_BYTES;
    check_identical_derivatives<float>("ur5e_tool_ws8k_derivatives_f_ws", ur5e_tool_ws8k_derivatives_f, ur5e_tool_ws8k_derivatives_f_ws, df,
                                       ur5e_tool_ws8k_NJAC);
}

TEST_CASE("workspace form: a NaN input gives NELU_STATUS_NOT_FINITE and leaves out untouched, as the ordinary form") {
    std::vector<double> q(ur5e_fd_ws0_NQ, 0.3), qd(ur5e_fd_ws0_NV, 0.1), in(ur5e_fd_ws0_NIN, 1.0), out(ur5e_fd_ws0_NOUT, 42.0);
    std::vector<double> work(ur5e_fd_ws0_WORK_BYTES / sizeof(double));
    in[0] = std::numeric_limits<double>::quiet_NaN();
    CHECK(ur5e_fd_ws0_ws(q.data(), qd.data(), in.data(), out.data(), work.data()) == NELU_STATUS_NOT_FINITE);
    for (double o : out) CHECK(o == 42.0);
}

#ifndef ur5e_id_default_WORK_BYTES
TEST_CASE("workspace form: not emitted for a solver within the default budget (UR5e ID)") {
    std::vector<double> q(ur5e_id_default_NQ, 0.3), qd(ur5e_id_default_NV, 0.1), in(ur5e_id_default_NIN, 1.0),
        out(ur5e_id_default_NOUT);
    CHECK(ur5e_id_default(q.data(), qd.data(), in.data(), out.data()) == NELU_STATUS_OK);
}
#else
#error "ur5e_id_default: the default stack budget should not need the workspace form"
#endif
