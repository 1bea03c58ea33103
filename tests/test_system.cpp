// test_system.cpp: the system pass's right-hand side and input slots. b is affine in the solver's
// inputs, and the pass keeps it as IR (what the solver computes), as its part without inputs and as
// the inputs' coefficients (what osim/iwim responses and the analyzer read): the three must be one
// function, checked here by evaluating the IR at perturbed inputs. Each input slot must be read by
// the rows of its own quantity, which checks the one numbering of the slots against the rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "load.hpp"
#include "nelu/state.hpp"
#include "problem.hpp"
#include "system.hpp"
#include "verify.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

struct Built {
    nelu::Model model;
    nelu::System sys;
    nelu::Problem problem;
};

Built build(const std::string& urdf, const std::string& problem, bool floating = false) {
    nelu::ProblemInput pin{problem, floating};
    pin.floating_base = nelu::spec_requests_floating_base(pin);
    const nelu::LoadResult load = nelu::load_urdf_file(urdf, {pin.floating_base, nelu::sensor_joints(pin, urdf), false, 0});
    nelu::Problem p = nelu::run_problem(pin, load);
    nelu::System sys = nelu::run_system(load.model, p);
    return {load.model, std::move(sys), std::move(p)};
}

/// Which rows may read an input of quantity q: the equation the known quantity enters.
bool reads(nelu::Quantity q, nelu::RowKind row) {
    using nelu::Quantity;
    using nelu::RowKind;
    switch (q) {
        case Quantity::JointAcceleration: return row == RowKind::Acceleration || row == RowKind::Coupling;  // S qdd in (3a)
        case Quantity::JointTorque: return row == RowKind::Torque;                                          // (3tau)
        case Quantity::ExternalWrench: return row == RowKind::Force;                                        // (3f)
        case Quantity::Measurement: return row == RowKind::Measurement;
        case Quantity::ContactReference: return row == RowKind::Condition;  // u - in = 0: a Baumgarte reference's auxiliary rows
        default: return false;
    }
}

/// b.value at (q, qd, in) is b.constant plus the coefficients times in, and raising one input by 1
/// changes each row by that input's coefficient there and nothing else; each input is read by at
/// least one row, only by rows of its quantity, and a reading by exactly its measurement row.
void check_affine(const std::string& what, const Built& B) {
    CAPTURE(what);
    const nelu::System& sys = B.sys;
    const int nin = static_cast<int>(sys.in.size()), m = sys.m();
    REQUIRE(sys.b.value.size() == static_cast<std::size_t>(m));
    REQUIRE(sys.b.constant.size() == static_cast<std::size_t>(m));
    REQUIRE(sys.b.input.size() == static_cast<std::size_t>(m));
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    const std::vector<double> q = nelu::random_configuration(B.model, rng);
    std::vector<double> qd(static_cast<std::size_t>(B.model.nv)), in(static_cast<std::size_t>(std::max(1, nin)));
    for (double& v : qd) v = u(rng);
    for (double& v : in) v = u(rng);
    std::vector<nelu::ir::Id> roots(sys.b.value);
    roots.insert(roots.end(), sys.b.constant.begin(), sys.b.constant.end());
    const std::vector<bool> live = sys.prog.live_nodes(roots);
    for (int i = 0; i < sys.prog.size(); ++i) {
        const nelu::ir::Node& n = sys.prog.node(i);
        if (live[i] && n.op == nelu::ir::Op::Input && n.source == nelu::ir::Source::In) CHECK(n.index < nin);
    }
    const std::vector<double> at = sys.prog.evaluate(q.data(), qd.data(), in.data(), live);
    auto close = [](double a, double b) { return std::abs(a - b) <= 1e-10 * (1 + std::abs(a) + std::abs(b)); };
    int failures = 0;
    for (int r = 0; r < m; ++r) {
        double affine = at[sys.b.constant[r]];
        for (const auto& [slot, coef] : sys.b.input[r]) affine += coef * in[slot];
        if (!close(at[sys.b.value[r]], affine) && failures++ < 5)
            FAIL_CHECK(sys.rows[r].label << ": b " << at[sys.b.value[r]] << ", constant + coefficients . in " << affine);
    }
    for (int s = 0; s < nin; ++s) {
        std::vector<double> raised = in;
        raised[s] += 1;
        const std::vector<double> v = sys.prog.evaluate(q.data(), qd.data(), raised.data(), live);
        int read_by = 0, measured_by = 0;
        for (int r = 0; r < m; ++r) {
            double coef = 0;
            for (const auto& [slot, c] : sys.b.input[r]) coef += slot == s ? c : 0;
            if (coef != 0) {
                ++read_by;
                measured_by += coef == -1 && sys.rows[r].kind == nelu::RowKind::Measurement;
                if (!reads(sys.in[s].quantity, sys.rows[r].kind) && failures++ < 5)
                    FAIL_CHECK("in[" << s << "] (" << nelu::quantity_name(sys.in[s].quantity) << ") is read by " << sys.rows[r].label);
            }
            if ((!close(v[sys.b.value[r]] - at[sys.b.value[r]], coef) || v[sys.b.constant[r]] != at[sys.b.constant[r]]) && failures++ < 5)
                FAIL_CHECK(sys.rows[r].label << ": in[" << s << "] + 1 changes b by " << v[sys.b.value[r]] - at[sys.b.value[r]]
                                             << ", its coefficient is " << coef);
        }
        CHECK(read_by > 0);
        if (sys.in[s].quantity == nelu::Quantity::Measurement) CHECK(measured_by == 1);
    }
    CHECK(failures == 0);
}

std::string root() { return nelu::test::source_dir(); }

}  // namespace

TEST_CASE("system: b is one affine form in the inputs, and every input slot is read where its quantity enters") {
    for (const char* robot : {"ur5e", "panda_gaz2019", "quadruped_minicheetah", "humanoid_winter"})
        for (const char* problem : {"id", "fd"})
            for (bool floating : {false, true})
                check_affine(std::string(robot) + " " + problem + (floating ? " floating" : ""),
                             build(root() + "/robots/" + robot + ".urdf", problem, floating));
    for (const char* problem : {"id", "fd"}) check_affine(std::string("mimic gripper ") + problem, build(root() + "/tests/fixtures/mimic/mimic_gripper.urdf", problem));
    // every shipped spec, and the sensor fixtures on shipped robots (every sensor kind, F/T in the
    // parent frame, contact sensors on merged links)
    std::vector<std::string> specs;
    for (const char* dir : {"/robots/specs", "/tests/fixtures/sensor_specs"})
        for (const auto& e : fs::directory_iterator(root() + dir))
            if (e.path().extension() == ".yaml") specs.push_back(e.path().string());
    std::sort(specs.begin(), specs.end());
    for (const std::string& spec : specs) {
        std::string robot, line;
        std::ifstream f(spec);
        std::getline(f, line);
        const std::string stem = fs::path(spec).stem().string();
        if (line.rfind("# robot: robots/", 0) == 0) robot = root() + "/" + line.substr(9);
        else if (line.rfind("# robot: fixture:", 0) == 0) robot = root() + "/tests/fixtures/sensor_specs/" + line.substr(17);
        else if (stem.rfind("humanoid", 0) == 0) robot = root() + "/robots/humanoid_winter.urdf";
        else if (stem.rfind("ur5e", 0) == 0) robot = root() + "/robots/ur5e.urdf";
        if (robot.empty()) continue;  // ../shared robots: the shipped ones cover every kind
        check_affine(stem, build(robot, spec));
    }
    // input wrenches on links merged through fixed joints (a frame change the IR applies in factored form)
    const fs::path dir = nelu::test::scratch_dir("system_merged_inputs");
    const std::string merged = (dir / "merged_inputs.yaml").string();
    std::ofstream(merged) << "version: 2\nproblem: id\nfloating_base: true\njoints: {default: qdd}\n"
                             "external_wrenches: {default: zero, input: [l_foot, r_foot, l_ankle_roll_link]}\n";
    check_affine("humanoid merged-link inputs", build(root() + "/robots/humanoid_winter.urdf", merged));
    fs::remove_all(dir);
}

TEST_CASE("verification: forward dynamics' link outputs are judged beside the residual, which reads only qdd") {
    // fd and hybrid problems are judged by the backward error of M qdd + h = tau; the links'
    // accelerations and joint wrenches among their outputs are judged against their values from
    // the solver's own qdd (a wrong link output passed nelu check while the residual was exact)
    const fs::path dir = nelu::test::scratch_dir("system_fd_links");
    const std::string spec = (dir / "fd_links.yaml").string();
    std::ofstream(spec) << "version: 2\nproblem: fd\noutputs: [joint_accelerations, link_accelerations, joint_wrenches]\n";
    for (const auto& [robot, floating] : {std::pair<const char*, bool>{"ur5e", false}, {"quadruped_minicheetah", true}}) {
        CAPTURE(robot);
        const Built b = build(root() + "/robots/" + robot + ".urdf", spec, floating);
        REQUIRE(nelu::judged_by_backward_error(b.sys, b.problem));
        std::mt19937_64 rng(5);
        for (int k = 0; k < 5; ++k) {
            const nelu::State st = nelu::random_state(b.model, rng);
            const std::vector<double> ref = nelu::reference_outputs(b.sys, b.model, b.problem, st);
            CHECK(nelu::backward_error(b.sys, b.model, b.problem, st, ref) < 1e-14);
            for (const nelu::Quantity q : {nelu::Quantity::LinkAcceleration, nelu::Quantity::JointWrench}) {
                const auto at = std::find_if(b.sys.out.begin(), b.sys.out.end(), [&](const nelu::Slot& s) { return s.quantity == q; });
                REQUIRE(at != b.sys.out.end());
                std::vector<double> out = ref;
                double largest = 1;  // (the error is relative to the links' largest output)
                for (double x : ref) largest = std::max(largest, std::abs(x));
                out[static_cast<std::size_t>(at - b.sys.out.begin())] += 1e-6 * largest;
                CHECK(nelu::backward_error(b.sys, b.model, b.problem, st, out) > 1e-8);
                out[static_cast<std::size_t>(at - b.sys.out.begin())] = NAN;
                CHECK(std::isinf(nelu::backward_error(b.sys, b.model, b.problem, st, out)));
            }
        }
    }
    fs::remove_all(dir);
}

TEST_CASE("system: osim and iwim take no inputs, and b is its constant part") {
    for (const char* spec : {"/bench/specs/iwim_all.yaml", "/tests/fixtures/batch/ur5e_lambda.yaml"}) {
        CAPTURE(spec);
        const Built B = build(root() + "/robots/ur5e.urdf", root() + spec);
        CHECK(B.sys.in.empty());
        CHECK(!B.sys.rhs.empty());
        for (int r = 0; r < B.sys.m(); ++r) {
            CHECK(B.sys.b.value[r] == B.sys.b.constant[r]);
            CHECK(B.sys.b.input[r].empty());
        }
    }
}

// The verification's states (compiler/src/verify.hpp): after the special configurations and the
// random states, a floating base at its identity orientation and turned by 90 and 180 degrees
// about an axis (a random pose is never one), and velocities 10 and 100 times the random scale.
TEST_CASE("verification states: the floating base's axis-aligned orientations and large velocities are among them") {
    const std::string urdf = root() + "/robots/quadruped_minicheetah.urdf";
    const nelu::LoadResult floating = nelu::load_urdf_file(urdf, {true, {}, false, 0});
    const std::vector<nelu::State> states = nelu::verification_states(floating.model, 7, 3);
    std::mt19937_64 rng(7);
    const std::size_t special = nelu::special_configurations(floating.model, rng).size();
    REQUIRE(states.size() == special + 3 + 4);
    const nelu::Body& base = floating.model.bodies[0];
    REQUIRE(base.type == nelu::JointType::Floating);
    auto quaternion = [&](const nelu::State& s) {
        const double* q = s.q.data() + base.q_index + 3;
        return std::vector<double>{q[0], q[1], q[2], q[3]};
    };
    auto speed = [](const nelu::State& s) {
        double v = 0;
        for (double x : s.qd) v = std::max(v, std::abs(x));
        return v;
    };
    const double h = std::sqrt(0.5);
    const std::vector<std::vector<double>> expected{{0, 0, 0, 1}, {h, 0, 0, h}, {0, 1, 0, 0}, {0, 0, -h, h}};
    for (std::size_t k = 0; k < 4; ++k) {
        const nelu::State& s = states[special + 3 + k];
        CHECK(quaternion(s) == expected[k]);
        const double scale = k == 0 ? 1 : k == 2 ? 100 : 10;
        CHECK(speed(s) <= scale);
        CHECK(speed(s) > 0.2 * scale);  // (the largest of 18 uniform draws in [-scale, scale])
    }
    // a fixed base: the two velocity scales only
    const nelu::LoadResult fixed = nelu::load_urdf_file(urdf, {false, {}, false, 0});
    const std::vector<nelu::State> f = nelu::verification_states(fixed.model, 7, 0);
    std::mt19937_64 rng2(7);
    REQUIRE(f.size() == nelu::special_configurations(fixed.model, rng2).size() + 2);
    CHECK(speed(f[f.size() - 2]) > 2);
    CHECK(speed(f.back()) > 20);
}

// The pivot validation's special configurations (nelu/state.hpp): with every joint alike
// (special_configurations) and mixed (mixed_configurations), every two consecutive one-DoF joints
// meet at every pair of multiples of pi/2; the joints' limits alternate; a floating base takes its
// identity orientation and turns of 90 and 180 degrees about each axis.
TEST_CASE("special configurations: consecutive joints at every pair of multiples of pi/2, limits alternating, the base turned") {
    const double h = std::sqrt(0.5);
    for (const bool floating : {false, true}) {
        const nelu::LoadResult r = nelu::load_urdf_file(root() + "/robots/ur5e.urdf", {floating, {}, false, 0});
        const nelu::Model& m = r.model;
        std::mt19937_64 rng(3);
        std::vector<std::vector<double>> qs = nelu::special_configurations(m, rng);
        const std::vector<std::vector<double>> mixed = nelu::mixed_configurations(m, rng);
        REQUIRE(mixed.size() == 14);
        qs.insert(qs.end(), mixed.begin(), mixed.end());
        std::vector<const nelu::Body*> joints;
        for (const nelu::Body& b : m.bodies)
            if (b.nq() == 1) joints.push_back(&b);
        REQUIRE(joints.size() == 6);
        const double multiples[4] = {0.0, M_PI / 2, M_PI, -M_PI / 2};
        for (std::size_t k = 0; k + 1 < joints.size(); ++k)
            for (double a : multiples)
                for (double b : multiples) {
                    const bool met = std::any_of(qs.begin(), qs.end(), [&](const std::vector<double>& q) {
                        return q[joints[k]->q_index] == a && q[joints[k + 1]->q_index] == b;
                    });
                    CHECK_MESSAGE(met, joints[k]->joint_name << " at " << a << " and " << joints[k + 1]->joint_name << " at " << b);
                }
        // the last two: each limited joint at its lower limit in one and at its upper in the other,
        // neighbours at opposite ones
        for (int side = 0; side < 2; ++side) {
            const std::vector<double>& q = mixed[static_cast<std::size_t>(12 + side)];
            int k = 0;
            for (const nelu::Body* b : joints)
                if (b->has_limits) CHECK(q[b->q_index] == ((k++ + side) % 2 ? b->upper : b->lower));
            CHECK(k >= 2);
        }
        if (!floating) continue;
        const nelu::Body& base = m.bodies[0];
        REQUIRE(base.type == nelu::JointType::Floating);
        const std::vector<std::vector<double>> turns = {{0, 0, 0, 1}, {h, 0, 0, h}, {0, h, 0, h}, {0, 0, h, h}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}};
        for (std::size_t c = 0; c < mixed.size(); ++c) {
            const std::vector<double> xyzw(mixed[c].begin() + base.q_index + 3, mixed[c].begin() + base.q_index + 7);
            CHECK(xyzw == turns[c % turns.size()]);
        }
    }
}

// A mimic joint follows its master: the mixed configurations number the independent joints only,
// so that two of them with a mimic joint between them still meet at every pair of multiples.
TEST_CASE("special configurations: joints on either side of a mimic joint meet at every pair of multiples of pi/2") {
    auto link = [](const std::string& name) {
        return "<link name='" + name + "'><inertial><mass value='1'/><inertia ixx='0.01' ixy='0' ixz='0' iyy='0.02' iyz='0' izz='0.03'/></inertial></link>";
    };
    auto joint = [](const std::string& name, const std::string& parent, const std::string& child, const std::string& extra) {
        return "<joint name='" + name + "' type='continuous'><parent link='" + parent + "'/><child link='" + child +
               "'/><origin xyz='0 0 0.3'/><axis xyz='0 1 0'/>" + extra + "</joint>";
    };
    const std::string urdf = "<robot name='m'>" + link("l0") + link("l1") + link("l2") + link("l3") + joint("a", "l0", "l1", "") +
                             joint("b", "l1", "l2", "<mimic joint='a' multiplier='-1' offset='0.5'/>") + joint("c", "l2", "l3", "") + "</robot>";
    const nelu::Model m = nelu::load_urdf_string(urdf, "mimic chain").model;
    REQUIRE(m.bodies.size() == 3);
    REQUIRE(m.bodies[1].is_mimic());
    std::mt19937_64 rng(5);
    std::vector<std::vector<double>> qs = nelu::special_configurations(m, rng);
    for (auto& q : nelu::mixed_configurations(m, rng)) qs.push_back(std::move(q));
    const int a = m.bodies[0].q_index, b = m.bodies[1].q_index, c = m.bodies[2].q_index;
    const double multiples[4] = {0.0, M_PI / 2, M_PI, -M_PI / 2};
    for (double x : multiples)
        for (double y : multiples)
            CHECK_MESSAGE(std::any_of(qs.begin(), qs.end(), [&](const std::vector<double>& q) { return q[a] == x && q[c] == y; }),
                          "a at " << x << " and c at " << y);
    for (const auto& q : qs) CHECK(q[b] == doctest::Approx(0.5 - q[a]));  // the mimic joint follows
}

TEST_CASE("forward_error: a NaN is infinitely wrong, unless two rows of one solver are compared NaN as NaN") {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    CHECK(nelu::forward_error({1.0, 2.0}, {1.0, 2.0}) == 0);
    CHECK(nelu::forward_error({1.0, 2.5}, {1.0, 2.0}) == doctest::Approx(0.25));  // relative to max(|ref|, 1)
    CHECK(nelu::forward_error({0.5}, {0.0}) == doctest::Approx(0.5));               // absolute below 1
    CHECK(std::isinf(nelu::forward_error({nan, 2.0}, {nan, 2.0})));
    CHECK(std::isinf(nelu::forward_error({inf}, {inf})));
    CHECK(nelu::forward_error({nan, 2.0}, {nan, 2.0}, true) == 0);
    CHECK(nelu::forward_error({nan, 2.5}, {nan, 2.0}, true) == doctest::Approx(0.25));
    CHECK(nelu::forward_error({inf, 2.0}, {inf, 2.0}, true) == 0);
    CHECK(std::isinf(nelu::forward_error({nan, 2.0}, {1.0, 2.0}, true)));  // a NaN where the other row has a number
    CHECK(std::isinf(nelu::forward_error({1.0, 2.0}, {nan, 2.0}, true)));
    CHECK(std::isinf(nelu::forward_error({-inf}, {inf}, true)));
}
