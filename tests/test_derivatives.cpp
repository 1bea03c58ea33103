// `nelu compile --derivatives`: the emitted NAME_derivatives, built by the system compiler, against
// the compiler's own derivative program and central differences of the value solver (nelu check),
// on inverse, forward and hybrid dynamics, a floating base, a square and a least-squares sensor
// problem and a robot with mimic joints; the manifest's account of the Jacobian. The derivative
// program itself is checked against complex-step differentiation by every compile (verify.cpp),
// and against Pinocchio's analytic derivatives in test_oracle.cpp.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace {

using nelu::test::compile_and_check;
using nelu::test::run_nelu;

std::string robot(const std::string& name) { return nelu::test::source_dir() + "/robots/" + name; }

}  // namespace

TEST_CASE("derivatives: the emitted NAME_derivatives pass nelu check") {
    const std::string specs = nelu::test::source_dir() + "/robots/specs/";
    SUBCASE("UR5e id") { compile_and_check(robot("ur5e.urdf"), "id", "ur5e_id_d", "--derivatives"); }
    SUBCASE("UR5e fd") { compile_and_check(robot("ur5e.urdf"), "fd", "ur5e_fd_d", "--derivatives"); }
    SUBCASE("UR5e hybrid") { compile_and_check(robot("ur5e.urdf"), specs + "ur5e_hybrid.yaml", "ur5e_hybrid_d", "--derivatives"); }
    SUBCASE("UR5e wrist F/T sensor (square)") {
        compile_and_check(robot("ur5e.urdf"), specs + "ur5e_wrist_ft.yaml", "ur5e_ft_d", "--derivatives");
    }
    SUBCASE("UR5e accelerometer (least squares)") {
        compile_and_check(robot("ur5e.urdf"), specs + "ur5e_accelerometer.yaml", "ur5e_acc_d", "--derivatives");
    }
    SUBCASE("Mini Cheetah, floating base, id and fd") {
        compile_and_check(robot("quadruped_minicheetah.urdf"), "id", "mc_id_d", "--derivatives --floating-base");
        compile_and_check(robot("quadruped_minicheetah.urdf"), "fd", "mc_fd_d", "--derivatives --floating-base");
    }
    SUBCASE("mimic joints (gripper fixture), fd") {
        compile_and_check(nelu::test::source_dir() + "/tests/fixtures/mimic/mimic_gripper.urdf", "fd", "gripper_fd_d", "--derivatives");
    }
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
