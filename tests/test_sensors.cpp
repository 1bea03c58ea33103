// test_sensors.cpp: sensor-based dynamics (Nori, section VI). Well-posedness as the paper states
// it (Property 3, Remark 5), the serial-chain experiment, every sensor type through `nelu
// compile`, the generated C++ built and compared with a consistent world computed by the reference
// RNEA (`nelu check`), and weighted least squares with noisy measurements against a dense solve.
// One case of each kind runs by default; the slower solvers (the humanoid's and iCub's, the 12-link
// chain) are in the test case marked "extended", run by test_sensors_extended (ctest -L extended).
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <Eigen/Dense>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <tinyxml2.h>

#include "analyze.hpp"
#include "diagnostics.hpp"
#include "load.hpp"
#include "nelu/reference.hpp"
#include "pipeline.hpp"
#include "robot_gen.hpp"
#include "test_support.hpp"
#include "verify.hpp"

namespace fs = std::filesystem;
using nelu::test::compile_and_check;
using nelu::test::run_nelu;
using nelu::test::source_dir;

namespace {

std::string robot(const std::string& name) { return source_dir() + "/robots/" + name; }
std::string spec(const std::string& name) { return source_dir() + "/robots/specs/" + name; }

fs::path scratch(const std::string& name) { return nelu::test::scratch_dir("sensors_" + name); }

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

/// The humanoid-sized solvers are compiled and checked in the release build only: under the
/// sanitizers each takes minutes (the compiler's interpreter runs 10^4 validations), and the code
/// paths they take are the ones the UR5e and 7-link cases run there too.
bool release_only(const char* what) {
    if (!nelu::test::sanitized()) return false;
    MESSAGE(what << ": compiled and checked in the release build only (sanitizer build)");
    return true;
}

/// The path of ../shared/robots/FILE, or "" with a message saying the case is skipped.
std::string shared_robot(const char* file) {
    const std::string shared = nelu::test::shared_dir();
    if (!shared.empty() && fs::exists(shared + "/robots/" + file)) return shared + "/robots/" + file;
    MESSAGE("skipped: ../shared/robots/" << file << " is not present");
    return "";
}

/// The serial-chain experiment of the paper (bnt_time_varying, computationalComplexity/SIE): external
/// wrenches known on links 1..N-1, the last link's wrench measured in n_x, n_y, f_x, f_y, f_z, the
/// wrench transmitted by the first joint measured in the same five components, joint accelerations
/// known only for joints 3..N-2 (every torque and the other accelerations sought).
std::string sie_spec(int n) {
    std::string known;
    for (int j = 3; j <= n - 2; ++j) known += fmt::format("{}joint{}", known.empty() ? "" : ", ", j);
    return fmt::format(R"(version: 2
problem: hybrid
joints:
  default: unknown
  qdd: [{}]
external_wrenches:
  default: input
  zero: [link{}]
sensors:
  - {{name: tip, type: contact_wrench, link: link{}, components: [nx, ny, fx, fy, fz]}}
  - {{name: base_ft, type: force_torque, joint: joint1, measure_direction: parent_to_child, components: [nx, ny, fx, fy, fz]}}
)",
                       known, n, n);
}

}  // namespace

TEST_CASE("Property 3 and Remark 5: a humanoid on load cells is ill-posed; on a slippery floor it is solvable") {
    SUBCASE("load cells (fz, nx, ny) on both soles: ill-posed, the contact wrenches named") {
        auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o /tmp", robot("humanoid_winter.urdf"), spec("humanoid_loadcells.yaml")));
        INFO(r.out << r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("ill-posed") != std::string::npos);
        CHECK(r.err.find("f^x[l_foot].fx (l_sole frame)") != std::string::npos);  // the tangential forces (l_foot: merged into l_ankle_roll_link)
        CHECK(r.err.find("f^x[r_foot].nz (r_sole frame)") != std::string::npos);  // and vertical moments
        CHECK(r.err.find("what would determine them") != std::string::npos);
        // singular at random configurations too: no offer of allow_singular_configurations
        CHECK(r.err.find("not only at special configurations") != std::string::npos);
        CHECK(r.err.find("allow_singular_configurations") == std::string::npos);
    }
    SUBCASE("load cells: ill-posed at every configuration, not only with the feet parallel") {
        fs::path d = scratch("loadcells_generic");
        std::ifstream in(spec("humanoid_loadcells.yaml"));
        std::string text((std::istreambuf_iterator<char>(in)), {});
        write(d / "spec.yaml", text + "allow_singular_configurations: true\n");
        auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}'", robot("humanoid_winter.urdf"), (d / "spec.yaml").string(), d.string()));
        INFO(r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("random configuration") != std::string::npos);  // the internal squeeze force between the feet
        fs::remove_all(d);
    }
    SUBCASE("slippery floor without allowing special configurations: singular with the feet parallel, and says so") {
        fs::path d = scratch("slippery_strict");
        std::ifstream in(spec("humanoid_slippery.yaml"));
        std::string text((std::istreambuf_iterator<char>(in)), {});
        text = text.substr(0, text.find("allow_singular_configurations"));
        write(d / "spec.yaml", text);
        auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}'", robot("humanoid_winter.urdf"), (d / "spec.yaml").string(), d.string()));
        INFO(r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("every revolute joint at 0") != std::string::npos);
        CHECK(r.err.find("f^x[l_foot].nz") != std::string::npos);
        CHECK(r.err.find("allow_singular_configurations") != std::string::npos);
        fs::remove_all(d);
    }
}

namespace {

/// The SIE chain of `n` links and its spec in a scratch directory, compiled and checked; returns
/// the directory (the caller removes it).
fs::path check_sie_chain(int n) {
    fs::path d = scratch(fmt::format("sie_chain{}", n));
    nelu::RobotGenOptions o;
    o.links = n, o.seed = 1;
    write(d / "chain.urdf", nelu::generate_robot_urdf(o));
    write(d / "sie.yaml", sie_spec(n));
    compile_and_check((d / "chain.urdf").string(), (d / "sie.yaml").string(), fmt::format("sie{}", n));
    return d;
}

}  // namespace

TEST_CASE("The paper's serial-chain experiment (SIE): square, solved with static pivots, verified") {
    const fs::path d = check_sie_chain(7);  // 12 links: the extended case
    // The order must not hinge on how many configurations validated its pivots: the coupled
    // block's LU pivots come ever closer to zero with more samples, so an order accepted on
    // a few thousand configurations and refused on 10^4 would make the sanitizer build
    // (which validates on fewer) emit a different, ill-conditioned solver.
    auto winner = [&](int configs) {
        nelu::test::CliResult r = run_nelu(fmt::format("analyze '{}' --problem '{}' --validate {}", (d / "chain.urdf").string(),
                                           (d / "sie.yaml").string(), configs));
        REQUIRE(r.exit_code == 0);
        const std::string log = r.out + r.err;
        const std::size_t at = log.find("\n  ordering ");
        REQUIRE(at != std::string::npos);
        return log.substr(at, log.find(':', at) - at);
    };
    const std::string few = winner(1000), many = winner(10000);
    CHECK(few == many);
    // no LU order of the coupled 5x5 block stays away from zero (docs/sensors.md)
    CHECK(many.find("gram") != std::string::npos);
    fs::remove_all(d);
}

TEST_CASE("Every sensor type through nelu compile and the generated C++") {
    SUBCASE("six-axis F/T in a wrist (YAML, sensor frame) with an unknown tool wrench") {
        compile_and_check(robot("ur5e.urdf"), spec("ur5e_wrist_ft.yaml"), "ur5e_wrist_ft");
    }
    SUBCASE("accelerometer and joint torque sensor, redundant: weighted least squares") {
        compile_and_check(robot("ur5e.urdf"), spec("ur5e_accelerometer.yaml"), "ur5e_accelerometer");
    }
    SUBCASE("F/T sensors and an accelerometer read from the URDF's <sensor> tags; the gyroscope is noted") {
        if (release_only("the humanoid's F/T solver")) return;
        fs::path d = scratch("humanoid_ft");
        auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}' --verify 0 --validate 2000", robot("humanoid_winter.urdf"),
                                      spec("humanoid_ft.yaml"), d.string()));
        INFO(r.out << r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.err.find("gyroscope 'chest_gyroscope'") != std::string::npos);
        fs::remove_all(d);  // its solver built and checked: the extended case
    }
    SUBCASE("known link accelerations (rigid contacts): forward dynamics of a humanoid on both feet") {
        if (release_only("the humanoid's contact solver")) return;
        compile_and_check(robot("humanoid_winter.urdf"), spec("humanoid_contacts.yaml"), "humanoid_contacts");
    }
}

namespace {

/// The solution of D x + b = 0 by dense linear algebra: the exact rows exactly and the soft rows
/// (measurements) in the weighted least-squares sense, from the KKT system of
/// min sum w_k r_k^2 subject to the exact rows (a complete orthogonal decomposition: exact rows
/// that restate others make it singular, and its least-norm solution still has the unique x).
Eigen::VectorXd dense_solution(const nelu::System& sys, const nelu::State& st, const std::vector<double>& in) {
    Eigen::MatrixXd D = nelu::dense_of(sys, st.q, st.qd);
    std::vector<double> bv = sys.prog.evaluate(st.q.data(), st.qd.data(), in.data(), sys.prog.live_nodes(sys.b.value));
    std::vector<int> hard, soft;
    for (int row = 0; row < sys.m(); ++row) (sys.soft[row] ? soft : hard).push_back(row);
    const int n = sys.n(), h = static_cast<int>(hard.size());
    Eigen::MatrixXd K = Eigen::MatrixXd::Zero(n + h, n + h);
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(n + h);
    for (int row : soft) {
        const double w = 1.0 / sys.variance[row];
        K.topLeftCorner(n, n) += w * D.row(row).transpose() * D.row(row);
        rhs.head(n) -= w * D.row(row).transpose() * bv[sys.b.value[row]];
    }
    for (int k = 0; k < h; ++k) {
        K.block(n + k, 0, 1, n) = D.row(hard[k]);
        K.block(0, n + k, n, 1) = D.row(hard[k]).transpose();
        rhs(n + k) = -bv[sys.b.value[hard[k]]];
    }
    return K.completeOrthogonalDecomposition().solve(rhs).head(n);
}

/// The outputs of a solution x of the system (System::out: a column, or a combination plus a bias).
std::vector<double> outputs_of(const nelu::System& sys, const nelu::State& st, const std::vector<double>& in, const Eigen::VectorXd& x) {
    std::vector<double> out;
    for (const nelu::Slot& s : sys.out) {
        double v = s.bias >= 0 ? sys.prog.evaluate(st.q.data(), st.qd.data(), in.data(), sys.prog.live_nodes({s.bias}))[s.bias] : 0.0;
        if (s.column >= 0) v += x(s.column);
        for (const auto& [c, coef] : s.terms) v += sys.prog.value(coef) * x(c);
        out.push_back(v);
    }
    return out;
}

/// How far the solver's outputs are from obeying the Newton-Euler equations: the reference RNEA
/// at the state's (q, qd) with the known and the returned joint accelerations and external wrenches
/// gives every link's acceleration, every joint wrench and every joint's torque (the floating
/// base's wrench included); their largest difference from the returned ones (or from the known
/// inputs) over the largest of them. Needs every output (joint_torques, joint_accelerations,
/// contact_wrenches, link_accelerations, joint_wrenches).
double newton_euler_residual(const nelu::System& sys, const nelu::LoadResult& load, const nelu::Problem& p, const nelu::State& st,
                             const std::vector<double>& in, const std::vector<double>& out) {
    using nelu::Quantity;
    const nelu::Model& model = load.model;
    const int nb = model.num_bodies();
    std::vector<double> qdd(model.nv, 0.0);
    std::vector<nelu::SVec<double>> fext(nb, nelu::zero6<double>());
    auto slot_v = [&](const nelu::Slot& s) { return model.bodies[s.body].v_index + s.comp; };
    auto add_wrench = [&](const nelu::Slot& s, double v) {  // a component in its link's frame, onto the body
        nelu::SVec<double> w = nelu::zero6<double>();
        w[s.comp] = v;
        fext[s.body] = fext[s.body] + nelu::apply_transpose(load.links.at(s.link.empty() ? model.bodies[s.body].name : s.link).X_link_body, w);
    };
    for (std::size_t k = 0; k < sys.in.size(); ++k) {
        const nelu::Slot& s = sys.in[k];
        if (s.quantity == Quantity::JointAcceleration) qdd[slot_v(s)] = in[k];
        if (s.quantity == Quantity::ExternalWrench) add_wrench(s, in[k]);
    }
    for (std::size_t k = 0; k < sys.out.size(); ++k) {
        const nelu::Slot& s = sys.out[k];
        if (s.quantity == Quantity::JointAcceleration) qdd[slot_v(s)] = out[k];
        if (s.quantity == Quantity::ExternalWrench) add_wrench(s, out[k]);
    }
    nelu::Model mg = model;
    mg.gravity = p.gravity;
    const nelu::BodyDynamics<double> d = nelu::rnea_bodies(mg, st.q.data(), st.qd.data(), qdd.data(), fext.data(), true);
    std::vector<double> tau(model.nv, 0.0);
    for (int i = 0; i < nb; ++i) nelu::joint_project(model.bodies[i], d.f[i], tau.data() + model.bodies[i].v_index);
    double diff = 0, scale = 1;
    auto compare = [&](double returned, double reference) {
        diff = nelu::test::worse(diff, std::abs(returned - reference)), scale = std::max(scale, std::abs(reference));
    };
    for (std::size_t k = 0; k < sys.in.size(); ++k)
        if (sys.in[k].quantity == Quantity::JointTorque) compare(in[k], tau[slot_v(sys.in[k])]);
    int checked = 0;
    for (std::size_t k = 0; k < sys.out.size(); ++k) {
        const nelu::Slot& s = sys.out[k];
        const int i = s.body;
        if (s.quantity == Quantity::JointTorque) compare(out[k], tau[slot_v(s)]), ++checked;
        if (s.quantity == Quantity::LinkAcceleration) compare(out[k], (d.a[i] + nelu::apply(d.k.X_world[i], mg.gravity))[s.comp]), ++checked;
        if (s.quantity == Quantity::JointWrench) compare(out[k], d.f[i][s.comp]), ++checked;
    }
    REQUIRE(checked >= 12 * nb);  // every link's acceleration and joint wrench
    return diff / scale;
}

/// `spec`'s solver (compiled through the API) on noisy readings: every Newton-Euler equation holds
/// to rounding, and the outputs are the dense equality-constrained weighted least-squares solution
/// (for the winning order, and for its null-space variant when it has one).
void check_exact_under_noise(const std::string& urdf, const std::string& spec_path, const std::string& what) {
    nelu::CompileOptions o;
    o.urdf = urdf, o.problem = spec_path, o.verify_states = 5, o.validation_configs = nelu::test::sanitized() ? 500 : 2000;
    nelu::CompileResult r = nelu::compile(o);
    const nelu::System& sys = r.system;
    REQUIRE(sys.m() > sys.n());
    std::vector<nelu::Factorization> solvers{r.order.best};
    const bool has_nullspace = std::any_of(r.order.candidates.begin(), r.order.candidates.end(),
                                           [&](const nelu::CandidateReport& c) { return c.name == r.order.best.ordering + "/nullspace"; });
    if (has_nullspace) {  // the same order with its exact rows (of full rank) eliminated by the null-space method
        nelu::PivotOrder order = r.order.best.order;
        order.tail.nullspace = true, order.tail.basis.clear();
        nelu::Factorization f;
        std::string why;
        REQUIRE(nelu::run_schedule(r.load.model, sys, "null space", order, {}, f, why));
        solvers.push_back(std::move(f));
    }
    std::mt19937_64 rng(7);
    std::normal_distribution<double> noise(0.0, 1.0);
    double worst_ne = 0, worst_dense = 0, moved = 0;
    for (const nelu::State& st : nelu::checked_states(r.load.model, sys, 11, 6)) {
        std::vector<double> in = nelu::solver_inputs(sys, r.load.model, r.problem, st);
        const std::vector<double> exact = nelu::reference_outputs(sys, r.load.model, r.problem, st);
        for (std::size_t k = 0; k < sys.in.size(); ++k)  // noise on the sensors' readings only: the exact inputs stay consistent
            if (sys.in[k].quantity == nelu::Quantity::Measurement) in[k] += 0.05 * noise(rng);
        const std::vector<double> dense = outputs_of(sys, st, in, dense_solution(sys, st, in));
        moved = std::max(moved, nelu::test::rel_error(dense, exact));
        for (const nelu::Factorization& f : solvers) {
            const std::vector<double> val = f.prog.evaluate(st.q.data(), st.qd.data(), in.data(), f.prog.live_nodes(f.outputs));
            std::vector<double> out;
            for (nelu::ir::Id id : f.outputs) out.push_back(val[id]);
            worst_dense = std::max(worst_dense, nelu::test::rel_error(out, dense));
            worst_ne = std::max(worst_ne, newton_euler_residual(sys, r.load, r.problem, st, in, out));
        }
    }
    MESSAGE(what << " (" << r.order.best.ordering << ", " << solvers.size() << " solver(s)), noisy readings: Newton-Euler residual "
                 << worst_ne << ", against the dense constrained solution " << worst_dense << ", the noise moved the estimate by " << moved);
    CHECK(moved > 1e-4);  // the readings are inconsistent: the comparison is not vacuous
    CHECK(worst_ne < 1e-12);
    CHECK(worst_dense < 1e-9);
}

/// check_exact_under_noise of a shipped humanoid spec with every output asked for (its `outputs`
/// line replaced).
void check_humanoid_exact_under_noise(const char* file, const std::string& outputs, const char* what) {
    if (release_only(what)) return;
    fs::path d = scratch(std::string("exact_") + file);
    std::ifstream in(spec(file));
    std::string text((std::istreambuf_iterator<char>(in)), {});
    text.replace(text.find(outputs), outputs.size(), "outputs: [joint_torques, joint_accelerations, contact_wrenches, link_accelerations, joint_wrenches]");
    write(d / "spec.yaml", text);
    check_exact_under_noise(robot("humanoid_winter.urdf"), (d / "spec.yaml").string(), what);
    fs::remove_all(d);
}

}  // namespace

TEST_CASE("Weighted least squares: exact equations stay exact under inconsistent readings, the optimum is the dense one") {
    SUBCASE("UR5e: accelerometer, torque and acceleration measurements (no exact row left with them)") {
        check_exact_under_noise(robot("ur5e.urdf"), spec("ur5e_accelerometer.yaml"), "ur5e_accelerometer");
    }
    SUBCASE("UR5e: a joint whose torque and acceleration are both known ties the tool wrench that an F/T sensor measures") {
        fs::path d = scratch("exact_ur5e");
        write(d / "spec.yaml", R"(version: 2
problem: id
joints: {default: qdd, both: [wrist_1_joint]}
external_wrenches: {default: zero, unknown: [wrist_3_link]}
sensors:
  - {name: ft, type: force_torque, joint: wrist_3_joint, frame: sensor, origin: {xyz: [0, 0, 0.05], rpy: [0.2, 0, 1.0]}, variance: [0.01, 0.01, 0.01, 1, 1, 1]}
outputs: [joint_torques, joint_accelerations, contact_wrenches, link_accelerations, joint_wrenches]
)");
        check_exact_under_noise(robot("ur5e.urdf"), (d / "spec.yaml").string(), "ur5e, wrist_1 both known");
        fs::remove_all(d);
    }
    SUBCASE("humanoid on a slippery floor (eq. 24): the base's balance, rank deficient, is met exactly") {
        check_humanoid_exact_under_noise("humanoid_slippery.yaml", "outputs: [joint_torques]", "humanoid_slippery");
    }
}

TEST_CASE("The header and the manifest say what each sensor reads, in which frame and unit") {
    // (a trial as an estimation engineer: every reading was "sensor frame", a load cell a
    // contact_wrench, and the manifest gave neither frames nor units)
    fs::path d = scratch("described");
    write(d / "spec.yaml", R"(version: 2
problem: id
joints: {default: qdd, unknown: [elbow_joint]}
external_wrenches: {default: zero, unknown: [wrist_3_link]}
sensors:
  - {name: up, type: force_torque, joint: wrist_3_joint, frame: parent, measure_direction: parent_to_child}
  - {name: down, type: force_torque, joint: wrist_2_joint, frame: child, measure_direction: child_to_parent}
  - {name: cell, type: load_cell, link: wrist_3_link, origin: {xyz: [0, 0, 0.02]}}
  - {name: acc, type: accelerometer, link: forearm_link}
  - {name: tq, type: joint_torque, joint: elbow_joint}
)");
    auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}' --name d", robot("ur5e.urdf"), (d / "spec.yaml").string(), d.string()));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::ifstream hin(d / "d.hpp");
    const std::string h((std::istreambuf_iterator<char>(hin)), {});
    for (const char* line : {
             "up.nx (force_torque: the wrench wrist_2_link exerts on wrist_3_link through joint wrist_3_joint, in the frame of link wrist_2_link, N m)",
             "up.fz (force_torque: the wrench wrist_2_link exerts on wrist_3_link through joint wrist_3_joint, in the frame of link wrist_2_link, N)",
             "down.fx (force_torque: the wrench wrist_2_link exerts on wrist_1_link through joint wrist_2_joint, in the frame of link wrist_2_link, N)",
             "cell.fz (load_cell: the external wrench on link wrist_3_link, in its sensor frame on link wrist_3_link, N)",
             "cell.nx (load_cell: the external wrench on link wrist_3_link, in its sensor frame on link wrist_3_link, N m)",
             "acc.x (accelerometer: the proper acceleration of its origin on link forearm_link (gravity included: at rest it reads +g "
             "upward), in the frame of link forearm_link, m/s^2)",
             "tq.value (joint_torque: the generalized force of joint elbow_joint, N m)",
             " * Units: SI (m, kg, s, rad)"}) {
        INFO(line);
        CHECK(h.find(line) != std::string::npos);
    }
    std::ifstream jin(d / "d.json");
    const nlohmann::json m = nlohmann::json::parse(jin);
    const nlohmann::json& sensors = m["estimation"]["sensors"];
    REQUIRE(sensors.size() == 5);
    CHECK(sensors[0]["frame"] == "the frame of link wrist_2_link");
    CHECK(sensors[2]["type"] == "load_cell");
    CHECK(sensors[2]["frame"] == "its sensor frame on link wrist_3_link");
    CHECK(sensors[3]["reads"].get<std::string>().find("gravity included") != std::string::npos);
    int slots = 0;
    for (const nlohmann::json& s : m["in"]) {
        if (!s.contains("sensor")) continue;
        ++slots;
        const std::string c = s["component"], type = s["type"];
        const char* unit = type == "accelerometer" ? "m/s^2" : type == "joint_torque" || c[0] == 'n' ? "N m" : "N";
        INFO(s.dump());
        CHECK(s["unit"] == unit);
    }
    CHECK(slots == 6 + 6 + 3 + 3 + 1);
    fs::remove_all(d);
}

TEST_CASE("Sensor specs: every error names the spec file and line, and the sensor, link or joint") {
    fs::path d = scratch("errors");
    const std::string urdf = robot("ur5e.urdf");
    struct Case {
        std::string text, expect;
    } cases[] = {
        {"version: 1\nsensors: []\n", "'sensors' needs 'version: 2'"},
        {"version: 2\nsensors:\n  - {name: t, type: thermometer, link: wrist_3_link}\n", "sensor 't': unknown type 'thermometer'"},
        {"version: 2\nsensors:\n  - {name: c, type: load_cell, link: nowhere}\n", "sensor 'c': no link named 'nowhere'"},
        {"version: 2\nsensors:\n  - {name: f, type: force_torque, joint: nowhere}\n", "sensor 'f': no joint named 'nowhere'"},
        {"version: 2\nsensors:\n  - {name: f, type: force_torque, joint: wrist_3_joint, components: [fq]}\n", "sensor 'f': unknown component 'fq'"},
        {"version: 2\nproblem: fd\nsensors:\n  - {name: tq, type: joint_torque, joint: elbow_joint}\n", "the torque of joint 'elbow_joint' is already known"},
        {"version: 2\nurdf_sensors: [imu]\n", "has no <sensor name=\"imu\">"},
        {"version: 2\nsensors:\n  - {name: a, type: accelerometer, link: wrist_3_link}\n  - {name: a, type: accelerometer, link: forearm_link}\n",
         "a second sensor named 'a'"},
        {"version: 2\nsensors:\n  - {name: w, type: contact_wrench, link: wrist_3_link, slippery: true}\n", "'slippery' belongs to load cells"},
        {"version: 2\nsensors:\n  - {name: a, type: accelerometer, link: wrist_3_link, variance: -1}\n", "sensor 'a': variances must be positive"},
        // issue 22: an absurd origin, an empty component list, keys that do not apply, non-finite numbers
        {"version: 2\njoints: {default: qdd, unknown: [elbow_joint]}\nsensors:\n  - {name: far, type: accelerometer, link: forearm_link, "
         "origin: {xyz: [1e308, 1e308, 1e308]}}\n", "sensor 'far' (accelerometer): its origin [1e+308, 1e+308, 1e+308] is 1.73e+308 m"},
        {"version: 2\nexternal_wrenches: {default: zero, unknown: [wrist_3_link]}\nsensors:\n  - {name: ft, type: force_torque, "
         "joint: wrist_3_joint, components: []}\n", "sensor 'ft' (force_torque): 'components: []' measures nothing"},
        {"version: 2\njoints: {default: qdd, unknown: [elbow_joint]}\nsensors:\n  - {name: t, type: joint_torque, joint: elbow_joint, "
         "components: [fx]}\n", "'components' does not apply to a joint_torque sensor"},
        {"version: 2\nsensors:\n  - {name: ft, type: force_torque, joint: wrist_3_joint, origin: {xyz: [0, 0, 0.1]}}\n",
         "'origin' is the pose of 'frame: sensor'"},
        {"version: 2\nsensors:\n  - {name: a, type: accelerometer, link: wrist_3_link, origin: {xyz: [.nan, 0, 0]}}\n",
         "sensor 'a': origin.xyz must be a finite number (here .nan)"},
        {"version: 2\ngravity: [0, 0, .inf]\n", "'gravity' must be a finite number (here .inf)"},
        // a trial as an estimation engineer: a misspelt origin was dropped silently, quoted numbers
        // were read, other types gave "bad conversion" naming no key, and YAML 1.1's yes was true
        {"version: 2\nsensors:\n  - {name: a, type: accelerometer, link: wrist_3_link, origin: [0, 0, 0.1]}\n",
         "sensor 'a': 'origin' must be a map {xyz: [x, y, z], rpy: [r, p, y]}"},
        {"version: 2\nsensors:\n  - {name: a, type: accelerometer, link: wrist_3_link, origin: {xyz: [0, 0, 0.1], quat: [0, 0, 0, 1]}}\n",
         "sensor 'a': unknown key 'origin.quat' (expected xyz, rpy)"},
        {"version: 2\nsensors:\n  - {name: a, type: accelerometer, link: wrist_3_link, origin: {xyz: [0, 0, \"0.1\"]}}\n",
         "sensor 'a': origin.xyz must be a number, not a quoted string ('0.1')"},
        {"version: 2\nsensors:\n  - {name: a, type: accelerometer, link: wrist_3_link, origin: {rpy: [0, 0, 90deg]}}\n",
         "sensor 'a': origin.rpy must be a number"},
        {"version: 2\nsensors:\n  - {name: a, type: accelerometer, link: wrist_3_link, variance: \"2.0\"}\n",
         "sensor 'a': 'variance' must be a number, not a quoted string ('2.0')"},
        {"version: 2\nsensors:\n  - {name: a, type: accelerometer, link: wrist_3_link, variance: high}\n", "sensor 'a': 'variance' must be a number"},
        {"version: 2\nsensors:\n  - {name: a, type: accelerometer, link: [wrist_3_link, forearm_link]}\n",
         "sensor 'a': 'link' must be a single word, not a list"},
        {"version: 2\nsensors:\n  - {name: [a], type: accelerometer, link: wrist_3_link}\n", "a sensor's 'name' must be a single word, not a list"},
        {"version: 2\nsensors:\n  - {name: c, type: load_cell, link: wrist_3_link, slippery: yes}\n",
         "sensor 'c': 'slippery' must be true or false (here 'yes')"},
        {"version: 2\ngravity: [0, 0, \"-9.81\"]\n", "'gravity' must be a number, not a quoted string ('-9.81')"},
        {"version: two\n", "'version' must be an integer (here 'two')"},
        {"version: 2\nproblem: [id]\n", "'problem' must be a single word, not a list"},
        {"version: 2\nsensors:\n  - {name: f, type: force_torque, joint: wrist_3_joint, components: [[fx]]}\n",
         "an entry of 'components' must be a single word, not a list"},
        {"version: 2\nproblem: id\nexternal_wrenches: zero\nsensors:\n  - {name: ft, type: force_torque, joint: wrist_3_joint}\n"
         "outputs: [contact_wrenches]\n",
         "'outputs' selects nothing this problem computes"},
        {"version: 2\nexternal_wrenches: {unknown: [nowhere]}\n", "external_wrenches.unknown: no link named 'nowhere'"},
        {"version: 2\nexternal_wrenches: {unknown: [base_link]}\n", "link 'base_link' is fixed to the world"},
        {"version: 2\nsensors:\n  - {name: c, type: load_cell, link: wrist_3_link}\n  - {name: d, type: contact_wrench, link: wrist_3_link}\n",
         "link 'wrist_3_link' already has the contact sensor 'c' (one per link)"},
        // names are written into the generated code's comments
        {"version: 2\nsensors:\n  - {name: 'a */ int x; /*', type: accelerometer, link: wrist_3_link}\n",
         "sensor 'a */ int x; /*': the name contains '*/', which nelu cannot write into the generated code"},
        {"version: 2\nsensors:\n  - {name: \"a\\n#define tau 0\", type: accelerometer, link: wrist_3_link}\n",
         "sensor 'a\\n#define tau 0': the name contains a control character"},
    };
    for (const Case& c : cases) {
        write(d / "spec.yaml", c.text);
        auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}'", urdf, (d / "spec.yaml").string(), d.string()));
        INFO(c.text << "\n" << r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(c.expect) != std::string::npos);
        CHECK(r.err.find("spec.yaml:") != std::string::npos);
    }
    fs::remove_all(d);
}

namespace {

/// The robot of the URDF at `path` in other units: every mass times `mass`, every origin's xyz
/// times `length`, every inertia times mass * length^2 (the robots have no prismatic joints, whose
/// limits would scale too). Its D is R0 D C0 for diagonal R0, C0 (units of rows and columns).
std::string scaled_urdf(const std::string& path, double mass, double length) {
    tinyxml2::XMLDocument doc;
    REQUIRE(doc.LoadFile(path.c_str()) == tinyxml2::XML_SUCCESS);
    auto scale = [](tinyxml2::XMLElement* e, const char* attr, double by) {
        const char* v = e->Attribute(attr);
        if (!v) return;
        std::istringstream in(v);
        std::string out;
        for (double x; in >> x;) out += fmt::format("{}{:.17g}", out.empty() ? "" : " ", x * by);
        e->SetAttribute(attr, out.c_str());
    };
    std::vector<tinyxml2::XMLElement*> stack{doc.RootElement()};
    while (!stack.empty()) {
        tinyxml2::XMLElement* e = stack.back();
        stack.pop_back();
        const std::string name = e->Name();
        if (name == "origin") scale(e, "xyz", length);
        if (name == "mass") scale(e, "value", mass);
        if (name == "inertia")
            for (const char* a : {"ixx", "ixy", "ixz", "iyy", "iyz", "izz"}) scale(e, a, mass * length * length);
        for (tinyxml2::XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) stack.push_back(c);
    }
    tinyxml2::XMLPrinter printer;
    doc.Print(&printer);
    return printer.CStr();
}

/// `nelu compile` of robots/specs/ur5e_accelerometer.yaml on the UR5e in other units (masses times
/// `mass`, lengths times `length`, the sensor's offset with them; the variances as given), in `d`.
nelu::test::CliResult compile_accelerometer_spec(const fs::path& d, double mass, double length) {
    write(d / "ur5e_scaled.urdf", scaled_urdf(robot("ur5e.urdf"), mass, length));
    std::ifstream in(spec("ur5e_accelerometer.yaml"));
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::string at = "xyz: [0.03, 0.02, 0.01]";
    REQUIRE(text.find(at) != std::string::npos);
    text.replace(text.find(at), at.size(), fmt::format("xyz: [{:.17g}, {:.17g}, {:.17g}]", 0.03 * length, 0.02 * length, 0.01 * length));
    write(d / "accelerometer.yaml", text);
    return run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}'", (d / "ur5e_scaled.urdf").string(), (d / "accelerometer.yaml").string(),
                                (d / "accelerometer").string()));
}

/// The smallest reciprocal condition of `nelu compile --dump analyze`, or -1.
double min_rcond(const std::string& err_and_out) {
    const std::size_t at = err_and_out.find("min rcond ");
    return at == std::string::npos ? -1 : std::stod(err_and_out.substr(at + 10));
}

}  // namespace

TEST_CASE("The well-posedness checks do not depend on the robot's units: a UR5e of 0.1 mg links 1 mm long") {
    // D mixes units (a link's mass beside the 1 of its force, lengths beside the 1 of a kinematic
    // row), so its condition fell with the robot's scale: this UR5e's fd was "numerically singular"
    // (reciprocal condition 3.7e-17) where the UR5e's is 5e-5. The checks now look at D
    // equilibrated before they call it singular (analyze.hpp, Equilibration).
    fs::path d = scratch("units");
    write(d / "ur5e_micro.urdf", scaled_urdf(robot("ur5e.urdf"), 1e-7, 1e-3));
    auto unit = run_nelu(fmt::format("compile '{}' --problem fd --dump analyze -o '{}'", robot("ur5e.urdf"), (d / "unit").string()));
    auto micro = run_nelu(fmt::format("compile '{}' --problem fd --dump analyze -o '{}'", (d / "ur5e_micro.urdf").string(), (d / "micro").string()));
    INFO(unit.out << unit.err << micro.out << micro.err);
    REQUIRE(unit.exit_code == 0);
    REQUIRE(micro.exit_code == 0);  // and its interpreter verification passed (compile fails otherwise)
    // the condition the check accepted: the UR5e's as it comes (5.0e-5), the micro UR5e's once
    // equilibrated (1.1e-3; the UR5e's equilibrated: 1.0e-3), far above the threshold of 1e-14
    const double a = min_rcond(unit.out + unit.err), b = min_rcond(micro.out + micro.err);
    CHECK(a > 1e-5);
    CHECK(b > 1e-4);
    auto check = run_nelu(fmt::format("check '{}' '{}'", (d / "ur5e_micro.urdf").string(), (d / "micro" / "ur5e_fd.json").string()));
    INFO(check.out << check.err);
    CHECK(check.exit_code == 0);

    SUBCASE("an over-determined problem in grams and centimetres: the UR5e's accelerometer spec") {
        // its exact rows in those units looked dependent (FullPivLU's threshold met units), and
        // their combination conflicted: "exact equations in conflict", where the UR5e in kg and m
        // compiles; the conflict is looked at again equilibrated
        auto r = compile_accelerometer_spec(d, 1e3, 1e2);
        INFO(r.err);
        CHECK(r.exit_code == 0);
    }
    SUBCASE("a least-squares problem regular only equilibrated, whose accuracy its units spoil, is no internal error") {
        // the UR5e at 1e9 times its masses and 100 times its lengths with the accelerometer spec
        // (variances as given): full rank only equilibrated, and the solver's forward error 5.5e-7
        // against the dense reference, which exit 3 (internal error) reported; it is the problem's
        // condition in these units (exit 1, saying so)
        auto r = compile_accelerometer_spec(d, 1e9, 1e2);
        INFO(r.err);
        CHECK(r.exit_code != 3);
        if (r.exit_code == 1) CHECK(r.err.find("ill-conditioned in these units") != std::string::npos);
    }
    SUBCASE("a true conflict stays one in milligrams and millimetres") {
        // (a first form of the second look accepted it: the exact rows looked dependent as they
        // come, and the conflict's residual fell under a threshold set by the Newton rows' m g,
        // while D's rank was full once equilibrated)
        write(d / "ur5e_mgmm.urdf", scaled_urdf(robot("ur5e.urdf"), 1e6, 1e3));
        write(d / "conflict.yaml", "version: 2\nproblem: hybrid\njoints: {default: tau}\nexternal_wrenches: zero\nsensors:\n"
                                   "  - {name: c, type: link_acceleration, link: shoulder_link, value: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}\n");
        auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}'", (d / "ur5e_mgmm.urdf").string(), (d / "conflict.yaml").string(), (d / "c").string()));
        INFO(r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("exact equations in conflict") != std::string::npos);
    }
    SUBCASE("a gimbal with an exporter's quarter turn (1.5707963), regular everywhere, stays accepted") {
        // its equilibrated D loses rank at every joint at pi (the fit spreads its scales over
        // 2^+-15), D itself does not: a loss counts only when both show it
        std::string links, joints;
        for (int k = 1; k <= 3; ++k)
            links += fmt::format(R"(<link name="l{}"><inertial><origin xyz="0 0 0.1"/><mass value="1"/>)"
                                 R"(<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>)", k);
        const char* rpy[3] = {"0.7 1.5707963267948966 0.3", "0 -1.5707963267948966 0", "1.2 1.5707963 -0.4"};
        const char* axis[3] = {"0 0 1", "1 0 0", "0 1 0"};
        for (int k = 1; k <= 3; ++k)
            joints += fmt::format(R"(<joint name="j{}" type="revolute"><parent link="{}"/><child link="l{}"/><origin xyz="0 0 0.1" rpy="{}"/>)"
                                  R"(<axis xyz="{}"/><limit lower="-4" upper="4" effort="10" velocity="2"/></joint>)",
                                  k, k == 1 ? "base" : fmt::format("l{}", k - 1), k, rpy[k - 1], axis[k - 1]);
        write(d / "gimbal.urdf", R"(<?xml version="1.0"?><robot name="gimbal"><link name="base"/>)" + links + joints + "</robot>\n");
        auto r = run_nelu(fmt::format("compile '{}' --problem fd -o '{}'", (d / "gimbal.urdf").string(), (d / "g").string()));
        INFO(r.err);
        CHECK(r.exit_code == 0);
    }
    SUBCASE("a loss of rank at a special configuration is still found at that scale: the humanoid on a slippery floor, feet parallel") {
        write(d / "humanoid_micro.urdf", scaled_urdf(robot("humanoid_winter.urdf"), 1e-3, 1e-2));
        std::ifstream in(spec("humanoid_slippery.yaml"));
        std::string text((std::istreambuf_iterator<char>(in)), {});
        text = text.substr(0, text.find("allow_singular_configurations"));
        const std::string at = "xyz: [0.04, 0, -0.08]";  // the soles' offsets, in the same units
        for (std::size_t k = text.find(at); k != std::string::npos; k = text.find(at)) text.replace(k, at.size(), "xyz: [0.0004, 0, -0.0008]");
        write(d / "spec.yaml", text);
        auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}'", (d / "humanoid_micro.urdf").string(), (d / "spec.yaml").string(), (d / "h").string()));
        INFO(r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("every revolute joint at 0") != std::string::npos);
        CHECK(r.err.find("f^x[l_foot].nz") != std::string::npos);
        CHECK(!fs::exists(d / "h"));
    }
    fs::remove_all(d);
}

TEST_CASE("Issue 22: under-determined and conflicting specs name their quantities (exit 1)") {
    fs::path d = scratch("ill_posed");
    const std::string urdf = robot("ur5e.urdf");
    struct Case {
        std::string text;
        std::vector<std::string> expect;
    } cases[] = {
        {"version: 2\nproblem: id\njoints: {default: unknown}\n",  // more unknowns than equations
         {"174 equations for 180 unknowns: at least 6 more measured or known quantities are needed", "not determined: qdd[shoulder_pan_joint]",
          "what would determine them: a joint_acceleration measurement"}},
        {"version: 2\nproblem: id\nexternal_wrenches: {default: unknown}\n",
         {"174 equations for 210 unknowns", "not determined: f^x[shoulder_link].nx", "a contact_wrench or load_cell sensor on the link"}},
        {"version: 2\nproblem: id\njoints: {default: qdd, unknown: [elbow_joint]}\n",
         {"174 equations for 175 unknowns: at least 1 more", "not determined: qdd[elbow_joint]"}},
        {"version: 2\nproblem: hybrid\njoints: {default: tau}\nexternal_wrenches: zero\nsensors:\n"
         "  - {name: c, type: link_acceleration, link: shoulder_link, value: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}\n",  // one joint, six conditions
         {"exact equations in conflict", "(known) a[shoulder_link]"}},
        // an F/T sensor without its moments: the remedy names it and what it leaves out
        {"version: 2\nproblem: id\nexternal_wrenches: {default: zero, unknown: [wrist_3_link]}\nsensors:\n"
         "  - {name: wrist_ft, type: force_torque, joint: wrist_3_joint, components: [fx, fy, fz]}\n",
         {"177 equations for 180 unknowns", "not determined: f^x[wrist_3_link].nx",
          "more components of the joint's force_torque sensor 'wrist_ft' (the components it does not measure: nx, ny, nz)"}},
        // one accelerometer for three unknown accelerations: its readings are surplus where they
        // are, not in conflict with anything
        {"version: 2\nproblem: id\njoints: {default: qdd, unknown: [shoulder_pan_joint, shoulder_lift_joint, elbow_joint]}\n"
         "external_wrenches: zero\nsensors:\n  - {name: acc, type: accelerometer, link: forearm_link}\n",
         {"the structural rank of D is 176 for 177 unknowns", "not determined: qdd[elbow_joint]", "equations in surplus", "(meas) acc.x"}},
    };
    for (const Case& c : cases) {
        write(d / "spec.yaml", c.text);
        auto r = run_nelu(fmt::format("compile '{}' --problem '{}' -o '{}'", urdf, (d / "spec.yaml").string(), d.string()));
        INFO(c.text << "\n" << r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("spec.yaml on " + urdf + ": ill-posed") != std::string::npos);  // which spec, on which robot
        for (const std::string& e : c.expect) CHECK(r.err.find(e) != std::string::npos);
    }
    fs::remove_all(d);
}

TEST_CASE("Issue 22: a CAD quarter turn's 4.9e-12 is no pivot (the cheaper order wins, and is accurate)") {
    // tests/fixtures/sensor_specs/cad_chain.urdf turns its joint origins by rpy 1.57079632679 as the
    // iiwa's URDF does; const-gram used to pivot on the constant cos(1.57079632679) (growth 8.6e20).
    const std::string fixtures = source_dir() + "/tests/fixtures/sensor_specs/";
    auto r = run_nelu(fmt::format("analyze '{}' --problem '{}' --dump order", fixtures + "cad_chain.urdf", fixtures + "cad_chain_accelerometer.yaml"));
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("winner: const-gram") != std::string::npos);
    CHECK(r.out.find("not accurate") == std::string::npos);
    const std::size_t at = r.out.find("growth ");
    REQUIRE(at != std::string::npos);
    CHECK(std::stod(r.out.substr(at + 7)) < 1e3);
}

// The slower solvers, run by test_sensors_extended (ctest -L extended; not in CI): the default run
// keeps one case of each kind above (the slippery humanoid's solver is also built and checked in CI
// by test_batch_check, its --batch form beside its scalar one).
TEST_CASE("Sensors (extended): the humanoid's and iCub's solvers, the 12-link SIE chain" * doctest::skip()) {
    SUBCASE("SIE: 12 links") { fs::remove_all(check_sie_chain(12)); }
    SUBCASE("a humanoid on a slippery floor: weighted least squares, the generated solver returns the joint torques") {
        compile_and_check(robot("humanoid_winter.urdf"), spec("humanoid_slippery.yaml"), "humanoid_slippery");
    }
    SUBCASE("the humanoid's F/T sensors and accelerometer read from the URDF's <sensor> tags: the generated solver") {
        compile_and_check(robot("humanoid_winter.urdf"), spec("humanoid_ft.yaml"), "humanoid_ft");
    }
    SUBCASE("iCub (../shared/robots) with the six F/T sensors of its URDF") {
        const std::string icub = shared_robot("icub_reduced.urdf");
        if (icub.empty()) return;
        fs::path d = scratch("icub");
        write(d / "icub_ft.yaml", R"(version: 2
problem: id
floating_base: true
joints: {default: qdd, both: [root_joint]}
external_wrenches: {default: zero, unknown: [l_foot, r_foot]}
urdf_sensors: all
outputs: [joint_torques, contact_wrenches]
)");
        compile_and_check(icub, (d / "icub_ft.yaml").string(), "icub_ft");
        fs::remove_all(d);
    }
    SUBCASE("weighted least squares: the humanoid on its foot F/T sensors: the base's balance is met exactly") {
        check_humanoid_exact_under_noise("humanoid_ft.yaml", "outputs: [joint_torques, contact_wrenches]", "humanoid_ft");
    }
    SUBCASE("weighted least squares: iCub (32 DoF, ../shared/robots) on a slippery floor: load cells at its soles, merged links turned from the feet") {
        const std::string icub = shared_robot("icub_reduced.urdf");
        if (icub.empty()) return;
        fs::path d = scratch("exact_icub");
        write(d / "spec.yaml", R"(version: 2
problem: id
floating_base: true
joints: {default: qdd, both: [root_joint]}
external_wrenches: zero
sensors:
  - {name: l_cell, type: load_cell, link: l_sole, slippery: true, variance: [1.0, 0.01, 0.01]}
  - {name: r_cell, type: load_cell, link: r_sole, slippery: true, variance: [1.0, 0.01, 0.01]}
outputs: [joint_torques, joint_accelerations, contact_wrenches, link_accelerations, joint_wrenches]
allow_singular_configurations: true
)");
        check_exact_under_noise(icub, (d / "spec.yaml").string(), "icub_reduced slippery");
        fs::remove_all(d);
    }
}
