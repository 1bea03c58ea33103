// `nelu compile --derivatives`: the emitted NAME_derivatives, built by the system compiler, against
// the compiler's own derivative program and central differences of the value solver (nelu check),
// on inverse, forward and hybrid dynamics, a square and a least-squares sensor problem, on every
// shipped robot, fixed and floating, and a robot with mimic joints; the manifest's account of the
// Jacobian. The derivative program itself is checked against complex-step differentiation by every
// compile (verify.cpp), and against Pinocchio's analytic derivatives in test_oracle.cpp; the
// sanitizer build runs test_derivatives_sanitized.cpp instead.
//
// CI time is the C++ compiler's: the fixed humanoid's id derivative solver (1.4 MB of C++, double and
// float) took 65 s with g++ -O2 on a loaded 2-core machine, 10.3 s of CPU with g++ -O0 and 3.7 s
// with clang++ -O0 (the floating humanoid's fd with every link's wrench, 10 MB: 16 min with g++
// -O2). So nelu check builds the test solvers with clang++ -O0 (g++ -O0 where clang++ is absent)
// but the UR5e's id and fd, which stay at check's c++ -O2, as users build them. The largest solvers
// (the floating Panda, the floating humanoid's hybrid problem and its fd with every link's wrench:
// over 20 MB of C++) are in the test case marked "extended", skipped by default and registered as
// test_derivatives_extended (ctest -L extended; not in CI).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace {

using nelu::test::compile_and_check;
using nelu::test::run_nelu;

std::string robot(const std::string& name) { return nelu::test::source_dir() + "/robots/" + name; }
std::string spec(const std::string& name) { return nelu::test::source_dir() + "/robots/specs/" + name; }
std::string fixture(const std::string& name) { return nelu::test::source_dir() + "/tests/fixtures/derivatives/" + name; }

/// nelu check's arguments for a test solver: built with clang++ -O0 (see above), on 100 states.
std::string quick_check() {
    static const std::string cxx = nelu::test::cxx_with("-O0", nelu::test::have_clang() ? "clang++" : "c++");
    return " --states 100 --cxx '" + cxx + "'";
}

/// One robot and problem: compiled with --derivatives and checked.
struct Case {
    std::string urdf, problem, name;
    bool floating;
};

void run(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
        CAPTURE(c.name);
        compile_and_check(robot(c.urdf), c.problem, c.name, std::string("--derivatives") + (c.floating ? " --floating-base" : ""),
                          quick_check());
    }
}

/// The hybrid and square / least-squares sensor problems of tests/fixtures/derivatives (the UR5e's
/// are in robots/specs), for robot file `urdf` (short name `s`), fixed or floating.
std::vector<Case> sensor_and_hybrid(const std::string& urdf, const std::string& s, bool floating) {
    const std::string f = floating ? "_fb" : "";
    return {{urdf, fixture(s + "_hybrid.yaml"), s + "_hybrid" + f, floating},
            {urdf, fixture(s + "_ft.yaml"), s + "_ft" + f, floating},
            {urdf, fixture(s + "_acc.yaml"), s + "_acc" + f, floating}};
}

}  // namespace

TEST_CASE("derivatives: the emitted NAME_derivatives pass nelu check") {
    SUBCASE("UR5e id (check's -O2)") { compile_and_check(robot("ur5e.urdf"), "id", "ur5e_id_d", "--derivatives"); }
    SUBCASE("UR5e fd (check's -O2)") { compile_and_check(robot("ur5e.urdf"), "fd", "ur5e_fd_d", "--derivatives"); }
    SUBCASE("UR5e hybrid") {
        compile_and_check(robot("ur5e.urdf"), spec("ur5e_hybrid.yaml"), "ur5e_hybrid_d", "--derivatives", quick_check());
    }
    SUBCASE("UR5e wrist F/T sensor (square)") {
        compile_and_check(robot("ur5e.urdf"), spec("ur5e_wrist_ft.yaml"), "ur5e_ft_d", "--derivatives", quick_check());
    }
    SUBCASE("UR5e accelerometer (least squares)") {
        compile_and_check(robot("ur5e.urdf"), spec("ur5e_accelerometer.yaml"), "ur5e_acc_d", "--derivatives", quick_check());
    }
    SUBCASE("Mini Cheetah, floating base, id and fd") {
        run({{"quadruped_minicheetah.urdf", "id", "mc_id_d", true}, {"quadruped_minicheetah.urdf", "fd", "mc_fd_d", true}});
    }
    SUBCASE("mimic joints (gripper fixture), fd") {
        compile_and_check(nelu::test::source_dir() + "/tests/fixtures/mimic/mimic_gripper.urdf", "fd", "gripper_fd_d", "--derivatives",
                          quick_check());
    }
}

TEST_CASE("derivatives: every shipped robot, fixed base: id, fd, hybrid, a square and a least-squares sensor problem") {
    // the UR5e's are above
    for (const auto& [urdf, s] : {std::pair<std::string, std::string>{"panda_gaz2019.urdf", "panda"},
                                  {"quadruped_minicheetah.urdf", "minicheetah"},
                                  {"humanoid_winter.urdf", "humanoid"}}) {
        std::vector<Case> cases = {{urdf, "id", s + "_id", false}, {urdf, "fd", s + "_fd", false}};
        for (const Case& c : sensor_and_hybrid(urdf, s, false)) cases.push_back(c);
        run(cases);
    }
}

/// A floating arm's id, the spec its refused fd prints (the base's acceleration known: a hybrid
/// problem, see below), and its square and least-squares sensor problems.
static std::vector<Case> floating_arm(const std::string& urdf, const std::string& s, const std::string& ft, const std::string& acc) {
    const nelu::test::CliResult f = run_nelu("compile '" + robot(urdf) + "' --problem fd --floating-base -o '" +
                                             nelu::test::scratch_dir("derivatives_printed") + "'");
    const std::string printed = nelu::test::printed_spec(f.err);
    INFO(f.out << f.err);
    REQUIRE(!printed.empty());
    const std::string file = nelu::test::scratch_dir("derivatives_spec_" + s) + "/fd_base_known.yaml";
    std::ofstream(file) << printed;
    return {{urdf, "id", s + "_id_fb", true}, {urdf, file, s + "_fd_base_known_fb", true}, {urdf, ft, s + "_ft_fb", true},
            {urdf, acc, s + "_acc_fb", true}};
}

TEST_CASE("derivatives: floating bases") {
    // the Mini Cheetah's id and fd are above; the humanoid's fd without external wrenches here (90
    // columns, 6.8 MB of C++), with them (240 columns, 10 MB) in the extended case, with its hybrid
    // problem (6.6 MB) and the floating Panda
    std::vector<Case> cases = sensor_and_hybrid("quadruped_minicheetah.urdf", "minicheetah", true);
    cases.push_back({"humanoid_winter.urdf", "id", "humanoid_id_fb", true});
    cases.push_back({"humanoid_winter.urdf", nelu::test::source_dir() + "/bench/specs/fd_zero_fx.yaml", "humanoid_fd0_fb", true});
    cases.push_back({"humanoid_winter.urdf", fixture("humanoid_ft.yaml"), "humanoid_ft_fb", true});
    cases.push_back({"humanoid_winter.urdf", fixture("humanoid_acc.yaml"), "humanoid_acc_fb", true});
    for (const Case& c : floating_arm("ur5e.urdf", "ur5e", spec("ur5e_wrist_ft.yaml"), spec("ur5e_accelerometer.yaml"))) cases.push_back(c);
    run(cases);
}

TEST_CASE("derivatives: a floating arm on a massless base link is refused forward dynamics") {
    // The UR5e's base_link and the Panda's panda_link0 carry no inertia: with a floating base, a
    // torque-controlled first joint leaves the base free to turn about that joint's axis with
    // nothing resisting (forward dynamics is singular, docs/problem-spec.md). fd and the hybrid
    // specs (first joint torque-controlled) are refused, naming root_joint; the spec printed for fd
    // (the base's acceleration known, its wrench sought) compiles with --derivatives and checks
    // (floating_arm).
    for (const auto& [urdf, hybrid] : {std::pair<std::string, std::string>{"ur5e.urdf", spec("ur5e_hybrid.yaml")},
                                       {"panda_gaz2019.urdf", fixture("panda_hybrid.yaml")}}) {
        CAPTURE(urdf);
        const std::string dir = nelu::test::scratch_dir("derivatives_refused");
        const nelu::test::CliResult f = run_nelu("compile '" + robot(urdf) + "' --problem fd --floating-base --derivatives -o '" + dir + "'");
        INFO(f.out << f.err);
        CHECK(f.exit_code == 1);
        CHECK(f.err.find("the acceleration of joint 'root_joint' is sought, but no mass or inertia resists its motion") != std::string::npos);
        CHECK(nelu::test::printed_spec(f.err).find("qdd: [root_joint]") != std::string::npos);
        const nelu::test::CliResult h = run_nelu("compile '" + robot(urdf) + "' --problem '" + hybrid + "' --floating-base --derivatives -o '" + dir + "'");
        INFO(h.out << h.err);
        CHECK(h.exit_code == 1);
        CHECK(h.err.find("'root_joint'") != std::string::npos);
        CHECK(h.err.find("qdd: [root_joint]") != std::string::npos);
    }
}

TEST_CASE("derivatives (extended): the floating Panda and the floating humanoid's largest solvers" * doctest::skip()) {
    std::vector<Case> cases = floating_arm("panda_gaz2019.urdf", "panda", fixture("panda_ft.yaml"), fixture("panda_acc.yaml"));
    cases.push_back({"humanoid_winter.urdf", fixture("humanoid_hybrid.yaml"), "humanoid_hybrid_fb", true});
    cases.push_back({"humanoid_winter.urdf", "fd", "humanoid_fd_fb", true});
    run(cases);
}

TEST_CASE("derivatives: the manifest lists the columns and the structural zeros; the header declares the entry points") {
    const std::string dir = nelu::test::scratch_dir("derivatives_manifest");
    const nelu::test::CliResult c = run_nelu("compile '" + robot("ur5e.urdf") + "' --problem id --derivatives --name d -o '" + dir + "'");
    INFO(c.out << c.err);
    REQUIRE(c.exit_code == 0);
    std::ifstream mf(dir + "/d.json"), hf(dir + "/d.hpp");
    const nlohmann::json m = nlohmann::json::parse(mf);
    std::stringstream header;
    header << hf.rdbuf();
    const nlohmann::json& d = m.at("derivatives");
    CHECK(d.at("function") == "d_derivatives");
    CHECK(d.at("jac_rows") == 6);
    CHECK(d.at("jac_cols") == 6 + 6 + m.at("in").size());  // q-tangent, qd, in
    REQUIRE(d.at("jac_columns").size() == d.at("jac_cols").get<std::size_t>());
    CHECK(d.at("jac_columns")[0].at("quantity") == "q_tangent");
    CHECK(d.at("jac_columns")[0].at("joint") == "shoulder_pan_joint");
    CHECK(d.at("jac_columns")[6].at("quantity") == "qd");
    CHECK(d.at("jac_columns")[12].at("quantity") == "joint_acceleration");
    // the torque of the first joint does not depend on its own angle (its axis is along gravity);
    // the wrist's torque does not depend on the shoulder pan's angle (the same reason), nor on a
    // wrench on the shoulder link (columns 12 + 6 .. 12 + 11: outside the wrist's subtree); it does
    // depend on the shoulder pan's velocity (gyroscopic terms)
    const nlohmann::json& zeros = d.at("structural_zeros").at("per_row");
    auto zero = [&](int row, int col) {
        for (const auto& c2 : zeros[row]) if (c2.get<int>() == col) return true;
        return false;
    };
    CHECK(zero(0, 0));                // d tau_shoulder_pan / d q_shoulder_pan
    CHECK(zero(5, 0));                // d tau_wrist_3 / d q_shoulder_pan
    CHECK(!zero(5, 6));               // d tau_wrist_3 / d qd_shoulder_pan
    CHECK(zero(5, 18));               // d tau_wrist_3 / d f^x_shoulder_link.nx
    CHECK(zero(0, 18));               // d tau_shoulder_pan / d f^x_shoulder_link.nx: the moment about x, not the pan axis z
    CHECK(!zero(0, 20));              // d tau_shoulder_pan / d f^x_shoulder_link.nz
    CHECK(!zero(0, 1));               // d tau_shoulder_pan / d q_shoulder_lift
    CHECK(d.at("structural_zeros").at("count").get<int>() > 0);
    CHECK(d.at("ops").at("mul").get<long>() > m.at("ops").at("mul").get<long>());
    CHECK(header.str().find("int d_derivatives(const double* q, const double* qd, const double* in, double* out, double* jac);") != std::string::npos);
    CHECK(header.str().find("int d_derivatives_f(const float* q, const float* qd, const float* in, float* out, float* jac);") != std::string::npos);
    CHECK(header.str().find("#define d_NJAC ") != std::string::npos);
}

namespace {

/// `check` (a nelu check command line of a solver with columns in lanes) run on builds of the
/// generated file: the generic build's lanes (SSE2 or NEON), none (NELU_LANES_SCALAR), and where this
/// machine has them, AVX2 and AVX-512; each passes and compares jac with the compiler's derivative
/// program.
void check_lane_builds(const std::string& check) {
    std::vector<std::pair<std::string, std::string>> builds{{"SSE2 / NEON lanes", ""}, {"no lanes", "-DNELU_LANES_SCALAR"}};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) builds.push_back({"AVX2 lanes", "-march=x86-64-v3"});
    else MESSAGE("no AVX2 on this machine: the -march=x86-64-v3 build of the lanes is not run");
    if (__builtin_cpu_supports("avx512f")) builds.push_back({"AVX-512 lanes", "-march=x86-64-v4"});
    else MESSAGE("no AVX-512 on this machine: the -march=x86-64-v4 build of the lanes is not run");
#endif
    for (const auto& [what, flags] : builds) {
        CAPTURE(what);
        const nelu::test::CliResult k = run_nelu(check + (flags.empty() ? "" : " --cxx '" + nelu::test::cxx_with(flags) + "'"));
        INFO(k.out << k.err);
        CHECK(k.exit_code == 0);
        CHECK(k.out.find("PASS") != std::string::npos);
        CHECK(k.out.find("jac against the compiler's derivative program") != std::string::npos);
    }
}

}  // namespace

TEST_CASE("derivatives: columns in lanes, with and without vector lanes, agree with the derivative program") {
    // the UR5e's hybrid problem: 18 columns, 4 groups, small enough for several builds; the build
    // without lanes (NELU_LANES_SCALAR) runs the column-by-column program of the #else branch
    const std::string dir = nelu::test::scratch_dir("derivatives_lanes"), spec_file = spec("ur5e_hybrid.yaml");
    const nelu::test::CliResult c =
        run_nelu("compile '" + robot("ur5e.urdf") + "' --problem '" + spec_file + "' --derivatives --name h -o '" + dir + "' --verify 20");
    INFO(c.out << c.err);
    REQUIRE(c.exit_code == 0);
    CHECK(c.out.find("columns in lanes: 4 groups of up to 4 columns") != std::string::npos);
    CHECK(c.out.find("kernels against the program") != std::string::npos);
    std::ifstream mf(dir + "/h.json"), sf(dir + "/h.cpp");
    const nlohmann::json m = nlohmann::json::parse(mf);
    std::stringstream source;
    source << sf.rdbuf();
    const nlohmann::json& lanes = m.at("derivatives").at("lanes");
    // 17 columns have a right-hand side (the 18th's is structurally zero: a zero column of the
    // program); 4 of them, whose kernel costs more with two columns per instruction than they cost
    // in the program, are left to it (schedule.cpp prune_lanes)
    CHECK(lanes.at("columns") == 13);
    CHECK(lanes.at("groups") == 4);
    // fewer instructions per call with wider lanes, each below the program's column by column from W = 2
    const long w1 = lanes.at("ops_per_call").at("W1"), w2 = lanes.at("ops_per_call").at("W2"), w4 = lanes.at("ops_per_call").at("W4");
    CHECK(w4 < w2);
    CHECK(w2 < w1);
    const nlohmann::json& ops = m.at("derivatives").at("ops");
    CHECK(w2 < ops.at("mul").get<long>() + ops.at("add").get<long>() + ops.at("div").get<long>() + ops.at("sqrt").get<long>());
    CHECK(source.str().find("#if NELU_LANE_BYTES") != std::string::npos);
    const std::string check = "check '" + robot("ur5e.urdf") + "' '" + dir + "/h.json' --problem '" + spec_file + "' --states " +
                              (nelu::test::sanitized() ? "20" : "200");
    check_lane_builds(check);
    // --no-lanes: the column-by-column program only
    const nelu::test::CliResult n = run_nelu("compile '" + robot("ur5e.urdf") + "' --problem '" + spec_file +
                                             "' --derivatives --no-lanes --name h -o '" + dir + "/off' --verify 2");
    INFO(n.out << n.err);
    REQUIRE(n.exit_code == 0);
    CHECK(n.out.find("columns in lanes") == std::string::npos);
    std::ifstream of(dir + "/off/h.cpp"), om(dir + "/off/h.json");
    std::stringstream off;
    off << of.rdbuf();
    CHECK(off.str().find("NELU_LANE_BYTES") == std::string::npos);
    CHECK(!nlohmann::json::parse(om).at("derivatives").contains("lanes"));
}

TEST_CASE("derivatives: columns in lanes in a solver of one function (a two-link chain), with and without vector lanes") {
    // below kOneFunction statements the lane blocks are printed inside NAME_derivatives_impl, with
    // no work struct: the kernels read the program's locals, and the table of broadcast operands is
    // a local too
    const std::string dir = nelu::test::scratch_dir("derivatives_lanes_one_function");
    const std::string urdf = dir + "/chain2.urdf", spec_file = dir + "/hybrid.yaml";
    REQUIRE(run_nelu("robot gen chain --links 2 --seed 1 -o '" + urdf + "'").exit_code == 0);
    {
        std::ofstream y(spec_file);
        y << "version: 1\nproblem: hybrid\njoints:\n  default: tau\n  qdd: [joint2]\nexternal_wrenches: zero\n";
    }
    const nelu::test::CliResult c = run_nelu("compile '" + urdf + "' --problem '" + spec_file + "' --derivatives --name c -o '" + dir + "'");
    INFO(c.out << c.err);
    REQUIRE(c.exit_code == 0);
    CHECK(c.out.find("columns in lanes") != std::string::npos);
    std::ifstream sf(dir + "/c.cpp");
    std::stringstream source;
    source << sf.rdbuf();
    CHECK(source.str().find("nelu::lanes::Block") != std::string::npos);
    CHECK(source.str().find("c_derivatives_part") == std::string::npos);  // one function
    const std::string check = "check '" + urdf + "' '" + dir + "/c.json' --problem '" + spec_file + "' --states 100";
    check_lane_builds(check);
}
