// test_mimic.cpp: mimic joints (URDF <mimic>): the loader's resolution, the system's coupling rows
// and columns, the reduced references, the generated solvers' independent coordinates and
// manifest, the problem-spec refusals and --ignore-mimic.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "diagnostics.hpp"
#include "io.hpp"
#include "load.hpp"
#include "nelu/contact.hpp"
#include "nelu/mimic.hpp"
#include "nelu/reference.hpp"
#include "nelu/state.hpp"
#include "pipeline.hpp"
#include "robot_gen.hpp"
#include "schedule.hpp"
#include "test_support.hpp"
#include "verify.hpp"

namespace fs = std::filesystem;
using nelu::test::run_nelu;

namespace {

std::string mimic_fixture(const std::string& name) { return nelu::test::source_dir() + "/tests/fixtures/mimic/" + name; }
std::string gripper() { return mimic_fixture("mimic_gripper.urdf"); }
std::string quoted(const std::string& s) { return "'" + s + "'"; }
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// ../shared/robots/panda.urdf (its fingers: panda_finger_joint2 mimics panda_finger_joint1), or ""
/// with a note when ../shared/robots is absent.
std::string shared_panda() {
    for (const std::string& u : nelu::test::shared_robots())
        if (fs::path(u).stem() == "panda") return u;
    MESSAGE("../shared/robots/panda.urdf is absent: its mimic cases are skipped");
    return "";
}

nelu::CompileResult compile(const std::string& urdf, const std::string& problem, bool floating = false, bool ignore = false) {
    nelu::CompileOptions o;
    o.urdf = urdf, o.problem = problem, o.floating_base = floating, o.ignore_mimic = ignore, o.verify_states = 20;
    return nelu::compile(o);
}

}  // namespace

TEST_CASE("mimic: the loader resolves chains to the ultimate master and composes the coupling") {
    const nelu::LoadResult r = nelu::load_urdf_file(gripper());
    CHECK(r.warnings.empty());
    REQUIRE(r.mimics.size() == 3);
    const nelu::Model& m = r.model;
    CHECK(m.nv == 6);  // every joint keeps its slots
    CHECK(nelu::independent_v_slots(m).size() == 3);
    CHECK(nelu::independent_q_slots(m).size() == 3);
    auto body = [&](const std::string& joint) {
        for (int i = 0; i < m.num_bodies(); ++i)
            if (m.bodies[i].joint_name == joint) return i;
        return -1;
    };
    const int left = body("finger_left"), tip = body("tip_joint"), knuckle = body("knuckle_joint");
    CHECK(m.bodies[body("finger_right")].mimic == left);
    CHECK(m.bodies[knuckle].mimic == left);
    CHECK(m.bodies[knuckle].multiplier == 12.5);
    CHECK(m.bodies[tip].mimic == left);  // its <mimic> names the knuckle, itself a mimic
    CHECK(m.bodies[tip].multiplier == doctest::Approx(-6.25).epsilon(1e-15));
    CHECK(m.bodies[tip].offset == doctest::Approx(-0.5 * 0.3 + 0.1).epsilon(1e-15));
    for (const nelu::MimicJoint& mj : r.mimics)
        if (mj.joint == "tip_joint") CHECK((mj.master == "finger_left" && mj.urdf_master == "knuckle_joint"));
    // A coupled random state satisfies q_m = k q_master + offset.
    std::mt19937_64 rng(3);
    const nelu::State s = nelu::random_state(m, rng);
    CHECK(s.q[m.bodies[tip].q_index] == doctest::Approx(-6.25 * s.q[m.bodies[left].q_index] - 0.05));
    CHECK(s.qdd[m.bodies[knuckle].v_index] == doctest::Approx(12.5 * s.qdd[m.bodies[left].v_index]));
    CHECK(s.tau[m.bodies[knuckle].v_index] == 0.0);
}

TEST_CASE("mimic: the system keeps the classical blocks; ID stays triangular with zero fill") {
    for (bool floating : {false, true}) {
        CAPTURE(floating);
        const nelu::CompileResult id = compile(gripper(), "id", floating);
        const nelu::CompileResult ign = compile(gripper(), "id", floating, true);
        CHECK(id.system.classical);
        CHECK(id.analysis.triangular);
        CHECK(id.order.best.fill() == 0);
        // no tau column and no (3tau) row per mimic; the master's (3tau) row reads their wrenches
        CHECK(id.system.n() == ign.system.n() - 3);
        CHECK(id.system.out.size() == ign.system.out.size() - 3);
        CHECK(id.system.in.size() == ign.system.in.size() - 3);
        const nelu::CompileResult fd = compile(gripper(), "fd", floating);
        int coupling = 0;
        for (const nelu::Row& row : fd.system.rows) coupling += row.kind == nelu::RowKind::Coupling;
        CHECK(coupling == 3);
        CHECK(fd.system.n() == fd.system.m());
        CHECK(fd.verify.max_backward_error < 1e-12);
        MESSAGE("gripper" << (floating ? " floating" : "") << ": ops id " << id.order.best.ops.total() << " (--ignore-mimic "
                          << ign.order.best.ops.total() << "), fd " << fd.order.best.ops.total() << " (" << fd.order.best.ordering
                          << "; --ignore-mimic " << compile(gripper(), "fd", floating, true).order.best.ops.total() << ")");
    }
}

TEST_CASE("mimic: a master declared after its mimic (the tree order meets it first) still gives safe pivots") {
    const std::string urdf = mimic_fixture("mimic_gripper_reversed.urdf");
    const nelu::CompileResult id = compile(urdf, "id");
    CHECK(id.order.best.fill() == 0);
    CHECK(id.verify.max_rel_error < 1e-12);
    nelu::CompileOptions o;
    o.urdf = urdf, o.problem = "fd", o.verify_states = 20, o.validation_configs = 2000;
    const nelu::CompileResult fd = nelu::compile(o);
    CHECK(fd.order.validation.worst_ratio > 0.1);
    CHECK(fd.verify.max_backward_error < 1e-12);
    MESSAGE("reversed gripper fd: " << fd.order.best.ordering << ", ops " << fd.order.best.ops.total() << ", worst pivot ratio "
                                    << fd.order.validation.worst_ratio);
}

TEST_CASE("mimic: the reduced references agree with each other (tau_r = G^T RNEA, M_r qdd_r + h_r = tau_r)") {
    nelu::CompileResult id = compile(gripper(), "id"), fd = compile(gripper(), "fd");
    const nelu::Model& m = id.load.model;
    std::mt19937_64 rng(11);
    for (int k = 0; k < 20; ++k) {
        nelu::State s = nelu::random_state(m, rng);
        const std::vector<double> tau_r = nelu::reference_outputs(id.system, m, id.problem, s);
        // fd with the id's torques gives back qdd_r
        const std::vector<int> v = nelu::independent_v_slots(m);
        for (std::size_t a = 0; a < v.size(); ++a) s.tau[v[a]] = tau_r[a];
        const std::vector<double> qdd_r = nelu::reference_outputs(fd.system, m, fd.problem, s);
        for (std::size_t a = 0; a < v.size(); ++a) CHECK(qdd_r[a] == doctest::Approx(s.qdd[v[a]]).epsilon(1e-9));
        CHECK(nelu::backward_error(fd.system, m, fd.problem, s, qdd_r) < 1e-13);
    }
}

namespace {

/// The KKT system of contacts on a robot with mimic joints in the full coordinates, each coupling
/// qdd_i = k qdd_master a constraint of its own (row e_i - k e_master, with its own multiplier):
/// [M -J^T -C^T; J mu 0; C 0 0] [x; lambda; nu] = [top; bottom; 0]. Returns x (nv) then lambda.
Eigen::VectorXd coupled_kkt(const nelu::Model& m, const Eigen::MatrixXd& M, const Eigen::MatrixXd& J, double mu,
                            const Eigen::VectorXd& top, const Eigen::VectorXd& bottom) {
    const long nv = m.nv, nc = J.rows();
    std::vector<std::pair<int, int>> couplings;  // (mimic slot, master slot)
    std::vector<double> k;
    for (const nelu::Body& b : m.bodies)
        if (b.is_mimic()) couplings.push_back({b.v_index, m.bodies[b.mimic].v_index}), k.push_back(b.multiplier);
    const long nk = static_cast<long>(couplings.size()), n = nv + nc + nk;
    Eigen::MatrixXd A = Eigen::MatrixXd::Zero(n, n);
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(n);
    A.topLeftCorner(nv, nv) = M;
    A.block(0, nv, nv, nc) = -J.transpose();
    A.block(nv, 0, nc, nv) = J;
    A.block(nv, nv, nc, nc) = mu * Eigen::MatrixXd::Identity(nc, nc);
    for (long a = 0; a < nk; ++a) {
        const long r = nv + nc + a;
        A(r, couplings[a].first) = 1, A(r, couplings[a].second) = -k[a];
        A(couplings[a].first, r) = -1, A(couplings[a].second, r) = k[a];
    }
    rhs.head(nv) = top, rhs.segment(nv, nc) = bottom;
    return A.fullPivLu().solve(rhs).head(nv + nc);
}

}  // namespace

TEST_CASE("mimic: contacts (runtime's dense KKT in the independent coordinates) equal the full KKT with each coupling a constraint") {
    // the floating gripper held at the arm and at the tip (below a chain of mimics), Baumgarte on the tip
    const nelu::CompileResult r = compile(gripper(), mimic_fixture("spec_contacts.yaml"));
    const nelu::Model& m = r.load.model;
    auto body = [&](const std::string& name) {
        for (std::size_t i = 0; i < m.bodies.size(); ++i)
            if (m.bodies[i].name == name) return static_cast<int>(i);
        FAIL("no body " << name);
        return -1;
    };
    std::vector<nelu::Contact> contacts(2);
    contacts[0].body = body("arm"), contacts[0].placement = nelu::origin_xform<double>({{0.01, 0, 0.05}}, {{0, 0, 0}});
    contacts[1].body = body("tip"), contacts[1].frame = nelu::ContactFrame::LocalWorldAligned;
    contacts[1].placement = nelu::origin_xform<double>({{0, 0.01, 0.02}}, {{0.3, -0.2, 0.1}});
    for (int k = 0; k < 3; ++k) contacts[1].kd[k] = 1.5;  // (no kp: no reference placement needed)
    const int nv = m.nv, nc = nelu::contact_rows(contacts);
    std::mt19937_64 rng(5);
    int compared = 0;
    for (int trial = 0; trial < 20; ++trial) {
        nelu::State s = nelu::random_state(m, rng);
        for (const nelu::Body& b : m.bodies)  // a mimic's own torque: part of its master's generalized force (G^T tau)
            if (b.is_mimic()) s.tau[b.v_index] = nelu::uniform(rng, -1.0, 1.0);
        const double mu = trial % 2 ? 1e-3 : 0.0;
        nelu::ContactSettings settings;
        settings.mu = mu, settings.max_iter = 1;
        std::vector<double> qdd(nv), lambda(nc), v(nv), impulse(nc);
        if (!nelu::contact_dynamics(m, contacts, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(), static_cast<const nelu::Xform<double>*>(nullptr),
                                    settings, qdd.data(), lambda.data()) ||
            !nelu::impulse_dynamics(m, contacts, s.q.data(), s.qd.data(), 0.4, settings, v.data(), impulse.data()))
            continue;  // a singular contact set at this state
        ++compared;
        std::vector<double> Mv(nv * nv), h(nv);
        nelu::crba(m, s.q.data(), Mv.data());
        nelu::nonlinear_effects(m, s.q.data(), s.qd.data(), s.fext.data(), h.data());
        const Eigen::MatrixXd M = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(Mv.data(), nv, nv);
        const nelu::ContactTerms<double> t = nelu::contact_terms<double>(m, contacts, s.q.data(), s.qd.data(), nullptr);
        const Eigen::MatrixXd J = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(t.J.data(), nc, nv);
        const Eigen::VectorXd tau = Eigen::Map<const Eigen::VectorXd>(s.tau.data(), nv), hv = Eigen::Map<const Eigen::VectorXd>(h.data(), nv),
                              vm = Eigen::Map<const Eigen::VectorXd>(s.qd.data(), nv);
        Eigen::VectorXd bottom(nc);
        for (int i = 0; i < nc; ++i) bottom(i) = -t.gamma[i] - t.corrector[i];
        const Eigen::VectorXd fd = coupled_kkt(m, M, J, mu, tau - hv, bottom);
        const Eigen::VectorXd im = coupled_kkt(m, M, J, mu, M * vm, -0.4 * J * vm);
        auto check = [&](const char* what, const Eigen::VectorXd& want, const std::vector<double>& x, const std::vector<double>& l) {
            CAPTURE(what);
            CAPTURE(trial);
            const double vs = want.head(nv).cwiseAbs().maxCoeff(), ls = want.tail(nc).cwiseAbs().maxCoeff();
            for (int j = 0; j < nv; ++j) CHECK(std::abs(x[j] - want(j)) <= 1e-10 * vs);
            for (int i = 0; i < nc; ++i) CHECK(std::abs(l[i] - want(nv + i)) <= 1e-10 * ls);
        };
        check("contact_dynamics", fd, qdd, lambda);
        check("impulse_dynamics", im, v, impulse);
    }
    CHECK(compared >= 15);
}

TEST_CASE("mimic: contacts on the gripper: compiled and verified, structured derivatives, nelu check") {
    // the compiler's verification compares with the reduced KKT above and judges the candidates by
    // the KKT residual in the independent coordinates (as on a robot without mimics); the
    // derivatives are the structured ones (each mimic's row and column folded into its master's),
    // against complex step
    nelu::CompileOptions o;
    o.urdf = gripper(), o.problem = mimic_fixture("spec_contacts.yaml"), o.derivatives = true, o.verify_states = 20;
    const nelu::CompileResult r = nelu::compile(o);
    REQUIRE(nelu::contact_residual_applies(r.system, r.problem));
    CHECK(r.order.best.derivative_form != nelu::JacobianForm::Forward);
    CHECK(r.derivatives.max_error <= 1e-10);
    std::mt19937_64 rng(9);
    for (int k = 0; k < 10; ++k) {  // the reference's own outputs have a residual of rounding size; perturbed ones do not
        const nelu::State s = nelu::random_state(r.load.model, rng);
        std::vector<double> out = nelu::reference_outputs(r.system, r.load.model, r.problem, s);
        CHECK(nelu::backward_error(r.system, r.load.model, r.problem, s, out) < 1e-14);
        out[0] += 1e-6 * std::max(1.0, std::abs(out[0]));  // the base's first acceleration component
        CHECK(nelu::backward_error(r.system, r.load.model, r.problem, s, out) > 1e-10);
    }
    if (nelu::test::sanitized()) return;  // (it builds the generated C++; the sanitizer build's subject is nelu)
    nelu::test::compile_and_check(gripper(), mimic_fixture("spec_contacts.yaml"), "mimic_gripper_contacts", "--derivatives");
}

TEST_CASE("mimic: generated solvers of the gripper fixture, a hybrid spec and a sensor spec pass nelu check") {
    nelu::test::compile_and_check(gripper(), "id", "mimic_gripper_id");
    nelu::test::compile_and_check(gripper(), "fd", "mimic_gripper_fd_fb", "--floating-base");
    nelu::test::compile_and_check(gripper(), mimic_fixture("spec_hybrid.yaml"), "mimic_gripper_hybrid");
    nelu::test::compile_and_check(gripper(), mimic_fixture("spec_sensors.yaml"), "mimic_gripper_sensors");
}

TEST_CASE("mimic: ../shared/robots/panda.urdf (mimic fingers): id and fd, fixed and floating, double and float") {
    const std::string panda = shared_panda();
    if (panda.empty()) return;
    nelu::test::compile_and_check(panda, "id", "panda_mimic_id");
    nelu::test::compile_and_check(panda, "fd", "panda_mimic_fd");
    nelu::test::compile_and_check(panda, "id", "panda_mimic_id_fb", "--floating-base");
    nelu::test::compile_and_check(panda, "fd", "panda_mimic_fd_fb", "--floating-base");
    nelu::test::compile_and_check(panda, "fd", "panda_ignore_mimic_fd", "--ignore-mimic");
}

TEST_CASE("mimic: the manifest and header list only the independent coordinates, and the mimic joints") {
    const std::string dir = nelu::test::scratch_dir("mimic_manifest");
    nelu::test::CliResult c = run_nelu("compile " + quoted(gripper()) + " --problem fd --name g -o " + quoted(dir));
    REQUIRE(c.exit_code == 0);
    const nlohmann::json j = nlohmann::json::parse(nelu::read_file(dir + "/g.json"));
    CHECK(j["nq"] == 3);
    CHECK(j["nv"] == 3);
    CHECK(j["q"] == nlohmann::json::array({"shoulder", "wrist", "finger_left"}));
    CHECK(j["qd"] == nlohmann::json::array({"shoulder", "wrist", "finger_left"}));
    CHECK_FALSE(j.contains("ignore_mimic"));
    REQUIRE(j["mimic"].size() == 3);
    CHECK(j["mimic"][0]["joint"] == "finger_right");
    CHECK(j["mimic"][0]["master"] == "finger_left");
    CHECK(j["mimic"][0]["multiplier"] == 1.0);
    CHECK(j["mimic"][2]["joint"] == "tip_joint");
    CHECK(j["mimic"][2]["master"] == "finger_left");
    CHECK(j["in"].size() == 3 + 6 * 6);  // tau of the independent joints, then every moving link's wrench
    CHECK(j["out"].size() == 3);
    const std::string hpp = nelu::read_file(dir + "/g.hpp");
    CHECK(contains(hpp, "#define g_NQ 3"));
    CHECK(contains(hpp, "tip_joint = -6.25 * finger_left + "));
    CHECK(contains(hpp, "mimic joints (not in q or qd"));

    c = run_nelu("compile " + quoted(gripper()) + " --problem fd --name gi --ignore-mimic -o " + quoted(dir));
    REQUIRE(c.exit_code == 0);
    const nlohmann::json ji = nlohmann::json::parse(nelu::read_file(dir + "/gi.json"));
    CHECK(ji["nq"] == 6);
    CHECK(ji["ignore_mimic"] == true);
    CHECK_FALSE(ji.contains("mimic"));
    // nelu check reads --ignore-mimic from the manifest, and refuses a contradicting flag
    nelu::test::CliResult k = run_nelu("check " + quoted(gripper()) + " " + quoted(dir + "/gi.json") + " --states 20");
    CHECK(k.exit_code == 0);
    CHECK(contains(k.out, "PASS"));
    k = run_nelu("check " + quoted(gripper()) + " " + quoted(dir + "/g.json") + " --states 5 --ignore-mimic");
    CHECK(k.exit_code == nelu::kExitBadInput);
    CHECK(contains(k.err, "compiled without it"));
    fs::remove_all(dir);
}

TEST_CASE("mimic: --ignore-mimic keeps the old behaviour (independent joints, a warning each)") {
    const nelu::test::CliResult m = run_nelu("model --ignore-mimic " + quoted(gripper()));
    CHECK(m.exit_code == 0);
    CHECK(contains(m.out, "mimic joints (treated as independent): finger_right knuckle_joint tip_joint"));
    CHECK(contains(m.out, "joint 'tip_joint' mimics 'knuckle_joint': treated as an independent joint"));
    const nelu::test::CliResult a = run_nelu("analyze --ignore-mimic " + quoted(gripper()) + " --problem " +
                                             quoted(mimic_fixture("spec_mimic_named.yaml")));
    CHECK(a.exit_code == 0);  // the mimic joint is an independent joint again, and may be named
    const nelu::CompileResult r = compile(gripper(), "id", false, true);
    CHECK(r.system.out.size() == 6);
    CHECK(!nelu::has_mimics(r.load.model));
}

TEST_CASE("mimic: problem specs that name a mimic joint's own quantities are refused (exit 2)") {
    nelu::test::CliResult r = run_nelu("analyze " + quoted(gripper()) + " --problem " + quoted(mimic_fixture("spec_mimic_named.yaml")));
    CHECK(r.exit_code == nelu::kExitBadInput);
    CHECK(contains(r.err, "spec_mimic_named.yaml:5: joints.qdd: joint 'knuckle_joint' mimics 'finger_left'"));
    CHECK(contains(r.err, "name 'finger_left' instead"));
    r = run_nelu("analyze " + quoted(gripper()) + " --problem " + quoted(mimic_fixture("spec_mimic_sensor.yaml")));
    CHECK(r.exit_code == nelu::kExitBadInput);
    CHECK(contains(r.err, "sensor 'tip_torque' (joint_torque): joint 'tip_joint' mimics 'finger_left'"));
    CHECK(contains(r.err, "put the sensor on 'finger_left'"));
    const std::string dir = nelu::test::scratch_dir("mimic_osim");
    const std::string spec = dir + "/osim.yaml";
    nelu::write_file_atomic(spec, "version: 2\nproblem: osim\noperational_points:\n  - {link: tip, point: [0, 0, 0], dof: 3}\n");
    r = run_nelu("analyze " + quoted(gripper()) + " --problem " + quoted(spec));
    CHECK(r.exit_code == nelu::kExitBadInput);
    CHECK(contains(r.err, "problem osim is not supported yet on a robot with mimic joints"));
    r = run_nelu("analyze --ignore-mimic " + quoted(gripper()) + " --problem " + quoted(spec));
    CHECK(r.exit_code == 0);
    fs::remove_all(dir);
}

TEST_CASE("mimic: nelu robot gen --mimic K makes the last K joints a mimic chain") {
    nelu::RobotGenOptions o;
    o.links = 5, o.mimic = 3, o.seed = 4;
    const std::string urdf = nelu::generate_robot_urdf(o);
    CHECK(contains(urdf, "<mimic joint=\"joint4\" multiplier=\"-1\" offset=\"1.5707963267948966\"/>"));
    CHECK(contains(urdf, "mimic=3"));
    const nelu::LoadResult r = nelu::load_urdf_string(urdf, "gen.urdf");
    REQUIRE(r.mimics.size() == 3);
    for (const nelu::MimicJoint& mj : r.mimics) CHECK(mj.master == "joint2");
    o.mimic = 5;
    CHECK_THROWS_AS(nelu::generate_robot_urdf(o), std::invalid_argument);
    o.mimic = 0;
    CHECK(!contains(nelu::generate_robot_urdf(o), "<mimic"));
    const nelu::test::CliResult c = run_nelu("robot gen chain --links 3 --mimic 3 --seed 1 -o -");
    CHECK(c.exit_code == nelu::kExitBadInput);
    CHECK(contains(c.err, "--mimic must be in [0, --links - 1]"));
}
