// test_responses.cpp: the problem kinds osim (Chang & Khatib's inverse operational-space inertia)
// and iwim (Kroeg, Gattringer & Mueller's inertia-weighted input matrix M^-1 B): one factorization
// of forward dynamics, several right-hand sides. `nelu compile` verifies against the dense route
// (CRBA, body Jacobians); `nelu check` builds the generated C++ and compares again on 1006 states.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

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
    // the Chang-Khatib experiment: a 24-DoF humanoid, both hands, fixed and floating base
    const std::string hands = R"(version: 2
problem: osim
operational_points:
  - {link: l_forearm, point: [0, 0, -0.45], dof: 6}
  - {link: r_forearm, point: [0, 0, -0.45], dof: 6}
)";
    check_kind(robots + "humanoid_winter.urdf", hands, "humanoid_osim");
    check_kind(robots + "humanoid_winter.urdf", hands, "humanoid_osim_floating", "--floating-base");
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

TEST_CASE("iwim: M^-1 B and qdd_0 for joint torques and contact forces") {
    const std::string robots = nelu::test::source_dir() + "/robots/";
    check_kind(robots + "ur5e.urdf", R"(version: 2
problem: iwim
inputs:
  joints: all
  contacts: [{link: wrist_3_link, point: [0, 0.1, 0.05]}]
)", "ur5e_iwim");
    check_kind(robots + "quadruped_minicheetah.urdf", R"(version: 2
problem: iwim
inputs:
  joints: [FR_abad_joint, FR_hip_joint, FR_knee_joint]
  contacts: [{link: FR_foot, point: [0, 0, 0]}, {link: RL_foot, point: [0, 0.01, 0]}]
)", "cheetah_iwim", "--floating-base");
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
        {"version: 2\nproblem: iwim\ninputs: {joints: [elbow]}\n", "no movable joint named 'elbow'"},
        {"version: 2\nproblem: iwim\ninputs: {torques: all}\n", "unknown key 'inputs.torques'"},
        {"version: 1\nproblem: iwim\n", "needs 'version: 2'"},
        {"version: 2\nproblem: iwim\njoints: {default: tau}\ninputs: {joints: all}\n", "'joints' does not apply to problem iwim"},
    };
    for (const Case& c : cases) {
        std::ofstream(d / "spec.yaml") << c.text;
        auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}'", urdf, (d / "spec.yaml").string(), d.string()));
        INFO(c.text << "\n" << r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(c.expect) != std::string::npos);
        CHECK(r.err.find("spec.yaml:") != std::string::npos);
    }
    fs::remove_all(d);
}
