// `nelu compile --batch` on every shipped robot and problem kind: inverse, forward and hybrid
// dynamics, a square and a least-squares sensor problem, osim (with Lambda), iwim, mimic joints and
// --derivatives, fixed and floating; each compiled and then checked by nelu check, which compares
// every state's row of every batch form with the scalar entry point on the same state in calls of
// n = 1 .. 3W + 1 states and all at once, with NaN and infinite inputs mixed in (their statuses must
// be the scalar's and their rows untouched), bit for bit where the build does not contract
// a * b + c (check_batch.hpp). The check's report must list every batch form, double rows bit for
// bit. Builds: clang++ -O0 (g++ -O0 without clang++), as test_derivatives builds its solvers (CI
// time is the C++ compiler's); the UR5e's with check's default c++ -O2, its x86-64-v3 build (AVX2,
// FMA: 4 and 8 lanes, where this machine has them) and its loop over states (NELU_LANES_SCALAR:
// float lanes bit for bit too). test_batch.cpp checks the UR5e's under the sanitizers.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace {

std::string robot(const std::string& name) { return nelu::test::source_dir() + "/robots/" + name; }
std::string spec(const std::string& name) { return nelu::test::source_dir() + "/robots/specs/" + name; }
std::string fixture(const std::string& name) { return nelu::test::source_dir() + "/tests/fixtures/" + name; }
std::string bench_spec(const std::string& name) { return nelu::test::source_dir() + "/bench/specs/" + name; }

std::string quick_cxx() {
    static const std::string cxx = nelu::test::cxx_with("-O0", nelu::test::have_clang() ? "clang++" : "c++");
    return cxx;
}

struct Case {
    std::string urdf, problem, name, flags;
};

/// `name`'s check report lists `count` batch forms and no failure, and each form's NaN and infinite
/// inputs made some of its states fail (whose rows the check found untouched: test_batch.cpp shows
/// that it fails a form that writes them) while most of them were compared.
void expect_batch_report(const std::string& out, int count) {
    int listed = 0;
    for (std::size_t at = out.find("_batch (W = "); at != std::string::npos; at = out.find("_batch (W = ", at + 1)) {
        ++listed;
        const std::string line = out.substr(at, out.find('\n', at) - at);
        CAPTURE(line);
        long rows = -1, failing = -1;
        REQUIRE(std::sscanf(line.c_str() + line.find("): ") + 3, "%ld rows, %ld failing states untouched", &rows, &failing) == 2);
        CHECK(failing > 0);
        CHECK(failing < rows / 2);
    }
    CHECK(listed == count);
    CHECK(out.find(": FAIL") == std::string::npos);
}

void run(const std::vector<Case>& cases, const std::string& cxx) {
    for (const Case& c : cases) {
        CAPTURE(c.name);
        const nelu::test::CliResult k = nelu::test::compile_and_check(c.urdf, c.problem, c.name, "--batch --validate 1000 " + c.flags,
                                                                      "--states 100 --cxx '" + cxx + "'");
        expect_batch_report(k.out, c.flags.find("--derivatives") != std::string::npos ? 4 : 2);
    }
}

}  // namespace

TEST_CASE("batch: every shipped robot, fixed base: id, fd, hybrid, a square and a least-squares sensor problem") {
    std::vector<Case> cases = {{robot("ur5e.urdf"), spec("ur5e_hybrid.yaml"), "ur5e_hybrid_b", ""},
                               {robot("ur5e.urdf"), spec("ur5e_wrist_ft.yaml"), "ur5e_ft_b", ""},
                               {robot("ur5e.urdf"), spec("ur5e_accelerometer.yaml"), "ur5e_acc_b", ""}};
    for (const auto& [urdf, s] : {std::pair<std::string, std::string>{"panda_gaz2019.urdf", "panda"},
                                  {"quadruped_minicheetah.urdf", "minicheetah"},
                                  {"humanoid_winter.urdf", "humanoid"}}) {
        cases.push_back({robot(urdf), "id", s + "_id_b", ""});
        cases.push_back({robot(urdf), "fd", s + "_fd_b", ""});
        cases.push_back({robot(urdf), fixture("derivatives/" + s + "_hybrid.yaml"), s + "_hybrid_b", ""});
        cases.push_back({robot(urdf), fixture("derivatives/" + s + "_ft.yaml"), s + "_ft_b", ""});
        cases.push_back({robot(urdf), fixture("derivatives/" + s + "_acc.yaml"), s + "_acc_b", ""});
    }
    run(cases, quick_cxx());
}

TEST_CASE("batch: floating bases, responses (osim with Lambda, iwim), mimic joints") {
    run({{robot("quadruped_minicheetah.urdf"), "id", "mc_id_fb_b", "--floating-base"},
         {robot("quadruped_minicheetah.urdf"), "fd", "mc_fd_fb_b", "--floating-base"},
         {robot("humanoid_winter.urdf"), "id", "humanoid_id_fb_b", "--floating-base"},
         {robot("humanoid_winter.urdf"), "fd", "humanoid_fd_fb_b", "--floating-base"},
         {robot("humanoid_winter.urdf"), spec("humanoid_slippery.yaml"), "humanoid_slippery_b", ""},
         {robot("humanoid_winter.urdf"), bench_spec("humanoid_hands_osim.yaml"), "humanoid_osim_fb_b", "--floating-base"},
         {robot("ur5e.urdf"), fixture("batch/ur5e_lambda.yaml"), "ur5e_lambda_b", ""},
         {robot("ur5e.urdf"), bench_spec("iwim_all.yaml"), "ur5e_iwim_b", ""},
         {robot("quadruped_minicheetah.urdf"), bench_spec("iwim_all.yaml"), "mc_iwim_fb_b", "--floating-base"},
         {fixture("mimic/mimic_gripper.urdf"), "fd", "gripper_fd_b", ""}},
        quick_cxx());
}

TEST_CASE("batch: derivatives") {
    run({{robot("ur5e.urdf"), "id", "ur5e_id_db", "--derivatives"},
         {robot("ur5e.urdf"), spec("ur5e_accelerometer.yaml"), "ur5e_acc_db", "--derivatives"},
         {robot("panda_gaz2019.urdf"), "fd", "panda_fd_db", "--derivatives"},
         {robot("quadruped_minicheetah.urdf"), "fd", "mc_fd_fb_db", "--derivatives --floating-base"}},
        quick_cxx());
}

TEST_CASE("batch: the UR5e as users build it: c++ -O2 (double rows bit for bit), x86-64-v3, and the loop over states") {
    const nelu::test::CliResult k = nelu::test::compile_and_check(robot("ur5e.urdf"), "fd", "ur5e_fd_o2_b", "--batch --derivatives");
    expect_batch_report(k.out, 4);
    CHECK(k.out.find("no FMA contraction: double rows bit for bit") != std::string::npos);
    const nelu::test::CliResult s =
        nelu::test::compile_and_check(robot("ur5e.urdf"), "id", "ur5e_id_w1_b", "--batch", "--cxx '" + nelu::test::cxx_with("-DNELU_LANES_SCALAR") + "'");
    expect_batch_report(s.out, 2);
    CHECK(s.out.find("ur5e_id_w1_b_f_batch (W = 1)") != std::string::npos);  // float lanes of one state: sinf and cosf, bit for bit
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        const nelu::test::CliResult v = nelu::test::compile_and_check(robot("ur5e.urdf"), "fd", "ur5e_fd_v3_b", "--batch --derivatives",
                                                                      "--cxx '" + nelu::test::cxx_with("-march=x86-64-v3", "g++") + "'");
        expect_batch_report(v.out, 4);
        CHECK(v.out.find("ur5e_fd_v3_b_batch (W = 4)") != std::string::npos);
        CHECK(v.out.find("ur5e_fd_v3_b_f_batch (W = 8)") != std::string::npos);
    } else {
        MESSAGE("this machine has no AVX2 and FMA: the x86-64-v3 build is not run");
    }
#endif
}
