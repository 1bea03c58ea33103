// test_responses.cpp: the problem kinds osim (Chang & Khatib's inverse operational-space inertia)
// and iwim (Kroeg, Gattringer & Mueller's inertia-weighted input matrix M^-1 B): one factorization
// of forward dynamics, several right-hand sides. `nelu compile` verifies against the dense route
// (CRBA, body Jacobians); `nelu check` builds the generated C++ and compares again on 1006 states.
// One robot of each kind runs by default; the humanoid's solvers and the floating Mini Cheetah's iwim
// are in the test case marked "extended", run by test_responses_extended (ctest -L extended; CI
// builds and checks the floating humanoid's osim and the floating Mini Cheetah's iwim in
// test_batch_check, their --batch forms beside the scalar ones).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>

#include <Eigen/Dense>

#include "robot_gen.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using nelu::test::run_nelu;

namespace {

fs::path scratch(const std::string& name) { return nelu::test::scratch_dir("responses_" + name); }

/// compile_and_check of a spec given as text.
void check_kind(const std::string& urdf, const std::string& spec_text, const std::string& name, const std::string& flags = "") {
    fs::path d = scratch(name);
    std::ofstream(d / "spec.yaml") << spec_text;
    nelu::test::compile_and_check(urdf, (d / "spec.yaml").string(), name, flags);
    fs::remove_all(d);
}

}  // namespace

TEST_CASE("osim: Lambda^-1 of operational points on chains and branching trees") {
    const std::string robots = nelu::test::source_dir() + "/robots/";
    check_kind(robots + "ur5e.urdf", R"(version: 2
problem: osim
operational_points:
  - {link: wrist_3_link, point: [0, 0.1, 0.05], dof: 6}
  - {link: forearm_link, point: [0.2, 0, 0], dof: 3}
)", "ur5e_osim");
    // a body with five children (autoTree branching 5)
    fs::path d = scratch("tree");
    nelu::RobotGenOptions o;
    o.shape = nelu::RobotGenOptions::Shape::Tree, o.links = 16, o.branching = 5, o.seed = 3;
    std::ofstream(d / "tree.urdf") << nelu::generate_robot_urdf(o);
    check_kind((d / "tree.urdf").string(), R"(version: 2
problem: osim
operational_points:
  - {link: link7, point: [0.1, 0, 0]}
  - {link: link16, point: [0, 0.2, 0], dof: 3}
  - {link: link3, point: [0, 0, 0]}
)", "tree_osim");
    fs::remove_all(d);
}

TEST_CASE("osim with lambda: Lambda by a static LDL^T of Lambda^-1, refused only at kinematic singularities") {
    // Lambda is judged by its residual |Lambda^-1_ref Lambda - I| against the dense route's
    // Lambda^-1 (CRBA, body Jacobians, Eigen), and Lambda^-1 by its forward error. With every joint
    // at 0 the UR5e is stretched out (an elbow singularity): Lambda does not exist there, and the
    // solver must return NELU_STATUS_SMALL_PIVOT exactly at such states (nelu check counts a refusal
    // elsewhere as a failure).
    const std::string robots = nelu::test::source_dir() + "/robots/";
    fs::path d = scratch("lambda");
    std::ofstream(d / "spec.yaml") << R"(version: 2
problem: osim
lambda: true
operational_points:
  - {link: wrist_3_link, point: [0, 0.1, 0.05], dof: 6}
)";
    const std::string dir = nelu::test::scratch_dir("lambda_out");
    auto c = run_nelu(fmt::format("compile '{}' --problem '{}' --name ur5e_lambda -o '{}'{}", robots + "ur5e.urdf",
                                  (d / "spec.yaml").string(), dir, nelu::test::sanitized() ? " --verify 3 --validate 2000" : ""));
    INFO(c.out << c.err);
    REQUIRE(c.exit_code == 0);
    CHECK(c.out.find("where the reference is singular too") != std::string::npos);  // q = 0 is among the special states
    auto k = run_nelu(fmt::format("check '{}' '{}/ur5e_lambda.json' --problem '{}'{}", robots + "ur5e.urdf", dir,
                                  (d / "spec.yaml").string(), nelu::test::sanitized() ? " --states 20" : ""));
    INFO(k.out << k.err);
    MESSAGE("ur5e_lambda: " << k.out);
    CHECK(k.exit_code == 0);
    CHECK(k.out.find("PASS") != std::string::npos);
    CHECK(k.out.find("calls returned NELU_STATUS_SMALL_PIVOT where the reference is singular too") != std::string::npos);
    // 36 entries of Lambda^-1, then 36 of Lambda; the generated header says which is which
    std::ifstream h(dir + "/ur5e_lambda.hpp");
    const std::string header((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
    CHECK(header.find("#define ur5e_lambda_NOUT 72") != std::string::npos);
    // (row 0 of Lambda: the moment nx at the point per unit acceleration wx, the column's coordinate)
    CHECK(header.find("out[36]  Lambda [row 0: wrist_3_link at [0, 0.1, 0.05], nx][column 0: wrist_3_link at [0, 0.1, 0.05], wx]") != std::string::npos);
    CHECK(header.find("out[1]  Lambda^-1 [row 0: wrist_3_link at [0, 0.1, 0.05], wx][column 1: wrist_3_link at [0, 0.1, 0.05], ny]") != std::string::npos);
    // Towards the elbow singularity (elbow angle eps -> 0): each entry point either refuses or
    // returns a positive definite Lambda close to the double one. Without a signed, per-precision
    // check the float one returned an indefinite Lambda, off by 100%, with status OK.
    std::ofstream(dir + "/walk.cpp") << R"(#include <cmath>
#include <cstdio>
#include "ur5e_lambda.hpp"
int main() {
    for (int e = 1; e <= 8; ++e) {
        const double eps = std::pow(10.0, -e);
        double q[6] = {0.3, -1, eps, 0.5, 0.7, 0.2}, qd[6] = {0}, out[72] = {0};
        float qf[6], qdf[6] = {0}, outf[72] = {0};
        for (int i = 0; i < 6; ++i) qf[i] = static_cast<float>(q[i]);
        const int sd = ur5e_lambda(q, qd, nullptr, out), sf = ur5e_lambda_f(qf, qdf, nullptr, outf);
        std::printf("%d %d", sd, sf);
        for (int i = 0; i < 72; ++i) std::printf(" %.17g", out[i]);
        for (int i = 0; i < 72; ++i) std::printf(" %.9g", static_cast<double>(outf[i]));
        std::printf("\n");
    }
}
)";
    const std::string cxx = std::getenv("NELU_TEST_CXX") ? std::getenv("NELU_TEST_CXX") : "c++";
    const std::string build = fmt::format("cd '{}' && {} -std=c++17 -O2 -I. -I'{}' walk.cpp ur5e_lambda.cpp -o walk && ./walk > walk.txt", dir, cxx,
                                          nelu::test::source_dir() + "/runtime/include");
    REQUIRE(std::system(build.c_str()) == 0);
    std::ifstream walk(dir + "/walk.txt");
    int steps = 0, refused_double = 0, refused_float = 0;
    std::string walked;
    for (int sd, sf; walk >> sd >> sf; ++steps) {
        walked += fmt::format("{}({}, {})", steps ? " " : "", sd, sf);
        Eigen::Matrix<double, 6, 6, Eigen::RowMajor> Ad, Ld, Af, Lf;
        for (auto* M : {&Ad, &Ld})
            for (int i = 0; i < 36; ++i) walk >> M->data()[i];
        for (auto* M : {&Af, &Lf})
            for (int i = 0; i < 36; ++i) walk >> M->data()[i];
        CHECK((sd == 0 || sd == 1));  // NELU_STATUS_OK or NELU_STATUS_SMALL_PIVOT
        CHECK((sf == 0 || sf == 1));
        refused_double += sd, refused_float += sf;
        if (sd == 0) {
            CHECK(Eigen::LLT<Eigen::MatrixXd>(Ld).info() == Eigen::Success);
            const double norms = Ad.cwiseAbs().rowwise().sum().maxCoeff() * Ld.cwiseAbs().rowwise().sum().maxCoeff();
            CHECK((Ad * Ld - Eigen::MatrixXd::Identity(6, 6)).cwiseAbs().maxCoeff() <= 1e-13 * norms);
        }
        if (sf == 0) {
            INFO("step " << steps);
            CHECK(Eigen::LLT<Eigen::MatrixXd>(Lf).info() == Eigen::Success);
            if (sd == 0) CHECK((Lf - Ld).cwiseAbs().maxCoeff() <= 1e-2 * Ld.cwiseAbs().maxCoeff());
        }
    }
    CHECK(steps == 8);
    CHECK(refused_float >= 1);               // float gives up well before the singularity ...
    CHECK(refused_double >= 1);              // ... and double close to it
    CHECK(refused_double < refused_float);
    MESSAGE("walk to the elbow singularity, status (double, float) per step: " << walked);
    fs::remove_all(dir);
    fs::remove_all(d);
}

TEST_CASE("iwim: M^-1 B and qdd_0 for joint torques and contact forces") {
    const std::string robots = nelu::test::source_dir() + "/robots/";
    check_kind(robots + "ur5e.urdf", R"(version: 2
problem: iwim
inputs:
  joints: all
  contacts: [{link: wrist_3_link, point: [0, 0.1, 0.05]}]
)", "ur5e_iwim");
}

TEST_CASE("iwim: B's columns in the spec's order, each named in the header and the manifest") {
    // (they were sorted into slot order silently, and neither file said which input a column was)
    fs::path d = scratch("order");
    std::ofstream(d / "spec.yaml") << "version: 2\nproblem: iwim\ninputs:\n  joints: [elbow_joint, shoulder_pan_joint]\n"
                                      "  contacts: [{link: wrist_3_link, point: [0, 0.1, 0.05]}]\n";
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}' --name iw", urdf, (d / "spec.yaml").string(), d.string()));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::ifstream hin(d / "iw.hpp"), jin(d / "iw.json");
    const std::string h((std::istreambuf_iterator<char>(hin)), {}), j((std::istreambuf_iterator<char>(jin)), {});
    for (const char* s : {"M^-1 B [qdd shoulder_pan_joint][input 0: tau elbow_joint]", "M^-1 B [qdd elbow_joint][input 1: tau shoulder_pan_joint]",
                          "[input 2: force on wrist_3_link at [0, 0.1, 0.05], fx (wrist_3_link's axes)]",
                          "[input 4: force on wrist_3_link at [0, 0.1, 0.05], fz (wrist_3_link's axes)]"}) {
        INFO(s);
        CHECK(h.find(s) != std::string::npos);
    }
    CHECK(j.find("\"input\": \"tau elbow_joint\"") != std::string::npos);
    // the columns' values, in that order, are what nelu check compares with the dense route
    nelu::test::compile_and_check(urdf, (d / "spec.yaml").string(), "ur5e_iwim_order");
    fs::remove_all(d);
}

TEST_CASE("iwim: a contact force nearly along a straight arm's last axis (a column 1e-11 of the others) verifies") {
    // The iiwa straight up (its special configurations), a force at a point on the last link's
    // axis: B's column of the force along that axis is J_p^T e_z = 4e-12 against 0.58, its value
    // rounding of terms of B's size. Judged by its own size, a correct solver's backward error was
    // 4e-6 and nelu compile refused every ordering.
    const std::string shared = nelu::test::shared_dir();
    if (shared.empty() || !fs::exists(shared + "/robots/iiwa.urdf")) {
        MESSAGE("skipped: ../shared/robots/iiwa.urdf is not present");
        return;
    }
    check_kind(shared + "/robots/iiwa.urdf", "version: 2\nproblem: iwim\ninputs:\n  contacts: [{link: lbr_iiwa_link_7, point: [0, 0, 0.1]}]\n",
               "iiwa_iwim_axial");
}

TEST_CASE("iwim in float where a right-hand side cancels: judged against what rounding its inputs costs") {
    // The UR5e along its first joint's axis (shoulder_lift +-pi/2, elbow 0 or pi, wrist_1 -+pi/2:
    // mixed special configurations) has h(q, qd) of 1e-15 whatever qd, computed from terms of order
    // 10 N m: float rounds them to 1e-6, so qdd_0 = -M^-1 h in float has a backward error of 0.3
    // against the vanishing right-hand side, as has the double solver on the inputs rounded to
    // float. nelu check judges such a state against 100 times the latter, every other one against 1e-4.
    const std::string root = nelu::test::source_dir();
    const nelu::test::CliResult k =
        nelu::test::compile_and_check(root + "/robots/ur5e.urdf", root + "/bench/specs/iwim_all.yaml", "ur5e_iwim_upright");
    CHECK(k.out.find("states 100 times the double solver's backward error on the inputs rounded to float") != std::string::npos);
    const std::size_t at = k.out.find("max backward error", k.out.find("float:"));
    REQUIRE(at != std::string::npos);
    CHECK(std::stod(k.out.substr(at + 19)) > 1e-4);  // (what the flat tolerance refused)
}

TEST_CASE("osim and iwim specs: errors name the file and line") {
    fs::path d = scratch("errors");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    struct Case {
        std::string text, expect;
    } cases[] = {
        {"version: 2\nproblem: osim\n", "needs 'operational_points'"},
        {"version: 2\nproblem: osim\noperational_points:\n  - {link: nowhere}\n", "no link named 'nowhere'"},
        {"version: 2\nproblem: osim\noperational_points:\n  - {link: wrist_3_link, dof: 4}\n", "dof must be 6 or 3"},
        {"version: 2\nproblem: iwim\ninputs: {joints: [elbow]}\n", "inputs.joints: no joint named 'elbow'"},
        // (an audit against Pinocchio: these were accepted, or named wrongly)
        {"version: 2\nproblem: iwim\ninputs: {joints: [elbow_joint, elbow_joint]}\n", "inputs.joints: joint 'elbow_joint' is listed twice"},
        {"version: 2\nproblem: iwim\ninputs: {joints: [flange_joint]}\n", "inputs.joints: joint 'flange_joint' is fixed"},
        {"version: 2\nproblem: iwim\ninputs: {contacts: [{link: tool0, point: [0, 0.1, 0], dof: 6}]}\n",
         "a contact input is a point force"},
        {"version: 2\nproblem: osim\noperational_points: []\n", "spec.yaml:3: problem osim needs 'operational_points': a non-empty list"},
        {"version: 2\nproblem: iwim\ninputs: {torques: all}\n", "unknown key 'inputs.torques'"},
        {"version: 1\nproblem: iwim\n", "needs 'version: 2'"},
        {"version: 2\nproblem: iwim\njoints: {default: tau}\ninputs: {joints: all}\n", "'joints' does not apply to problem iwim"},
        {"version: 2\nproblem: iwim\nlambda: true\ninputs: {joints: all}\n", "'lambda' belongs to problem osim"},
        {"version: 2\nproblem: osim\nlambda: maybe\noperational_points:\n  - {link: wrist_3_link}\n", "'lambda' must be true or false"},
    };
    for (const Case& c : cases) {
        std::ofstream(d / "spec.yaml") << c.text;
        auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}'", urdf, (d / "spec.yaml").string(), d.string()));
        INFO(c.text << "\n" << r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(c.expect) != std::string::npos);
        CHECK(r.err.find("spec.yaml:") != std::string::npos);
    }
    // Lambda of more coordinates than the robot moves independently: ill-posed, exit 1, says why
    std::ofstream(d / "spec.yaml") << "version: 2\nproblem: osim\nlambda: true\noperational_points:\n"
                                      "  - {link: l_forearm, point: [0, 0, -0.45], dof: 6}\n"
                                      "  - {link: r_forearm, point: [0, 0, -0.45], dof: 6}\n";
    auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}' --validate 1000", nelu::test::source_dir() + "/robots/humanoid_winter.urdf",
                                  (d / "spec.yaml").string(), d.string()));
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("Lambda does not exist") != std::string::npos);
    CHECK(r.err.find("r_forearm") != std::string::npos);
    fs::remove_all(d);
}

TEST_CASE("osim, osim with lambda and iwim (extended): the humanoid's solvers, a floating Mini Cheetah's iwim" * doctest::skip()) {
    const std::string robots = nelu::test::source_dir() + "/robots/";
    // the Chang-Khatib experiment: a 24-DoF humanoid, both hands, fixed and floating base
    const std::string hands = R"(version: 2
problem: osim
operational_points:
  - {link: l_forearm, point: [0, 0, -0.45], dof: 6}
  - {link: r_forearm, point: [0, 0, -0.45], dof: 6}
)";
    check_kind(robots + "humanoid_winter.urdf", hands, "humanoid_osim");
    check_kind(robots + "humanoid_winter.urdf", hands, "humanoid_osim_floating", "--floating-base");
    // Lambda of both hands of the floating humanoid (12 coordinates: the base's six DoF make them independent)
    check_kind(robots + "humanoid_winter.urdf", R"(version: 2
problem: osim
lambda: true
operational_points:
  - {link: l_forearm, point: [0, 0, -0.45], dof: 6}
  - {link: r_forearm, point: [0, 0, -0.45], dof: 6}
)", "humanoid_lambda_floating", "--floating-base");
    check_kind(robots + "quadruped_minicheetah.urdf", R"(version: 2
problem: iwim
inputs:
  joints: [FR_abad_joint, FR_hip_joint, FR_knee_joint]
  contacts: [{link: FR_foot, point: [0, 0, 0]}, {link: RL_foot, point: [0, 0.01, 0]}]
)", "cheetah_iwim", "--floating-base");
}
