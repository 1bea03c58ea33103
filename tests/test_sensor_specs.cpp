// test_sensor_specs.cpp: the property suite of sensor specs. Random version-2 specs on every robot
// of robots/ and ../shared/robots, fixed and floating base, mixing what users write: joints whose
// acceleration, torque, both or neither is known, F/T sensors in random joints (moving or fixed, in
// the child, parent or a sensor frame, either direction, subsets of components), accelerometers on
// random links at random poses, unknown contact wrenches on random links (bodies or links merged
// through fixed joints) with load cells or contact-wrench sensors, joint torque and acceleration
// sensors, rigid contacts, variances. For each spec exactly one of:
//   - exit 1 whose message names the quantities that are not determined or the equations in
//     conflict (and what the message says to change, applied, gives a spec that compiles or is
//     refused the same way);
//   - the solver compiles, passes `nelu check`, and recovers a drawn truth: states, accelerations and
//     contact wrenches drawn at random, torques, joint wrenches and link accelerations from the
//     reference RNEA, every reading formed from them by the sensor conventions of docs/sensors.md
//     (written here, independently of the compiler's sensor code), the generated C++ run on them,
//     and its outputs compared with the drawn truth, in double and float.
// Never exit 2 (the specs are well formed) or 3. The seeds in CI are fixed (one spec per robot and
// base); the test case marked "extended" runs more (test_sensor_specs_extended, ctest -L extended).
// Every failure it finds becomes a fixture in tests/fixtures/sensor_specs, run by the regression
// test case below.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <Eigen/Dense>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "check.hpp"
#include "diagnostics.hpp"
#include "load.hpp"
#include "nelu/mimic.hpp"
#include "nelu/reference.hpp"
#include "nelu/state.hpp"
#include "nelu/status.h"
#include "pipeline.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

using nelu::SVec;
using nelu::Xform;

const char* kWrench[6] = {"nx", "ny", "nz", "fx", "fy", "fz"};
const char* kPoint[3] = {"x", "y", "z"};

// ---------------------------------------------------------------------------------------------
// The spec, as the suite draws and writes it

/// A component's index from its name in a spec or a manifest: nx..fz or wx..vz (0-5), x y z, or a
/// joint coordinate's number.
int component_index_of(const std::string& name) {
    for (int k = 0; k < 6; ++k)
        if (name == kWrench[k] || name == nelu::component_name(nelu::Quantity::LinkAcceleration, k)) return k;
    for (int k = 0; k < 3; ++k)
        if (name == kPoint[k]) return k;
    return std::atoi(name.c_str());
}

struct SensorDraw {
    std::string name, type, joint, link, frame = "child", direction = "child_to_parent";
    double xyz[3] = {0, 0, 0}, rpy[3] = {0, 0, 0};
    bool origin = false;
    std::vector<int> components;  ///< measured components; empty: the type's default (all, or fz nx ny)
    std::vector<int> zero;        ///< contact_wrench: components known to vanish
    bool slippery = false;        ///< load_cell
    std::vector<double> value;    ///< link_acceleration (6), or empty for zero
    std::vector<double> variance;
};

struct SpecDraw {
    bool floating = false;
    std::map<std::string, std::string> joints;  ///< movable joint -> qdd | tau | unknown | both
    std::string wrench_default = "zero";        ///< for the bodies' own links
    std::map<std::string, std::string> wrenches;  ///< link -> input | zero | unknown
    std::vector<SensorDraw> sensors;
    bool allow_singular = false;
};

std::string list(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return "[" + s + "]";
}

std::string numbers(const double* v, int n) {
    std::string s;
    for (int k = 0; k < n; ++k) s += fmt::format("{}{:.17g}", k ? ", " : "", v[k]);
    return "[" + s + "]";
}

std::string yaml(const SpecDraw& d) {
    std::string y = "version: 2\nproblem: hybrid\n";
    if (d.floating) y += "floating_base: true\n";
    std::map<std::string, std::vector<std::string>> by_mode;
    for (const auto& [j, mode] : d.joints) by_mode[mode].push_back(j);
    y += "joints:\n  default: tau\n";
    for (const char* mode : {"qdd", "unknown", "both"})
        if (by_mode.count(mode)) y += fmt::format("  {}: {}\n", mode, list(by_mode[mode]));
    std::map<std::string, std::vector<std::string>> wr;
    for (const auto& [l, mode] : d.wrenches) wr[mode].push_back(l);
    y += fmt::format("external_wrenches:\n  default: {}\n", d.wrench_default);
    for (const char* mode : {"input", "zero", "unknown"})
        if (wr.count(mode)) y += fmt::format("  {}: {}\n", mode, list(wr[mode]));
    if (!d.sensors.empty()) y += "sensors:\n";
    for (const SensorDraw& s : d.sensors) {
        y += fmt::format("  - {{name: {}, type: {}", s.name, s.type);
        if (!s.joint.empty()) y += ", joint: " + s.joint;
        if (!s.link.empty()) y += ", link: " + s.link;
        if (s.type == "force_torque") y += fmt::format(", frame: {}, measure_direction: {}", s.frame, s.direction);
        if (s.origin) y += fmt::format(", origin: {{xyz: {}, rpy: {}}}", numbers(s.xyz, 3), numbers(s.rpy, 3));
        const char* const* names = s.type == "accelerometer" ? kPoint : kWrench;
        if (!s.components.empty() && s.type != "load_cell") {
            std::vector<std::string> c;
            for (int k : s.components) c.push_back(names[k]);
            y += ", components: " + list(c);
        }
        if (!s.zero.empty()) {
            std::vector<std::string> c;
            for (int k : s.zero) c.push_back(kWrench[k]);
            y += ", zero: " + list(c);
        }
        if (s.slippery) y += ", slippery: true";
        if (!s.value.empty()) y += ", value: " + numbers(s.value.data(), 6);
        if (s.variance.size() == 1) y += fmt::format(", variance: {:.17g}", s.variance[0]);
        if (s.variance.size() > 1) y += ", variance: " + numbers(s.variance.data(), static_cast<int>(s.variance.size()));
        y += "}\n";
    }
    y += "outputs: [joint_torques, joint_accelerations, contact_wrenches, link_accelerations, joint_wrenches]\n";
    if (d.allow_singular) y += "allow_singular_configurations: true\n";
    return y;
}

/// A random spec for the robot `l` (loaded with every fixed joint merged).
SpecDraw draw_spec(const nelu::LoadResult& l, bool floating, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(0, 1), sym(-1, 1);
    auto chance = [&](double p) { return u(rng) < p; };
    auto pick = [&](const auto& v) { return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)]; };
    auto subset = [&](int n) {  // a random non-empty subset of 0..n-1, in random order
        std::vector<int> all(n), out;
        for (int k = 0; k < n; ++k) all[k] = k;
        std::shuffle(all.begin(), all.end(), rng);
        out.assign(all.begin(), all.begin() + std::uniform_int_distribution<int>(1, n)(rng));
        return out;
    };
    const nelu::Model& m = l.model;
    SpecDraw d;
    d.floating = floating;
    std::vector<std::string> movable, moving_links, merged_links, fixed_joints;
    for (const nelu::Body& b : m.bodies)
        if (b.nv() > 0 && !b.is_mimic()) movable.push_back(b.joint_name);
    for (const auto& [name, lf] : l.links)
        if (lf.body >= 0) (m.body_index(name) >= 0 ? moving_links : merged_links).push_back(name);
    for (const nelu::MergedJoint& mj : l.merged)
        if (mj.into != "world") fixed_joints.push_back(mj.joint);
    for (const std::string& j : movable) {
        const double r = u(rng);
        d.joints[j] = r < 0.5 ? "qdd" : r < 0.82 ? "tau" : r < 0.92 ? "unknown" : "both";
    }
    d.wrench_default = chance(0.25) ? "input" : "zero";
    std::vector<std::string> unknown;
    for (int k = 0, n = std::uniform_int_distribution<int>(0, 2)(rng); k < n; ++k) {
        const std::string link = !merged_links.empty() && chance(0.4) ? pick(merged_links) : pick(moving_links);
        if (d.wrenches.count(link)) continue;
        d.wrenches[link] = "unknown", unknown.push_back(link);
    }
    if (!merged_links.empty() && chance(0.2)) d.wrenches.emplace(pick(merged_links), "input");
    auto variance = [&](SensorDraw& s, int n) {
        if (chance(0.5)) return;
        if (chance(0.5)) s.variance = {std::pow(10.0, 2 * sym(rng))};
        else for (int k = 0; k < n; ++k) s.variance.push_back(std::pow(10.0, 2 * sym(rng)));
    };
    auto origin = [&](SensorDraw& s) {
        s.origin = true;
        for (int k = 0; k < 3; ++k) s.xyz[k] = 0.2 * sym(rng), s.rpy[k] = M_PI * sym(rng);
    };
    int index = 0;
    auto name = [&](const char* what) { return fmt::format("{}{}", what, index++); };
    for (int k = 0, n = std::uniform_int_distribution<int>(0, 2)(rng); k < n; ++k) {  // F/T sensors
        SensorDraw s;
        s.name = name("ft"), s.type = "force_torque";
        s.joint = !fixed_joints.empty() && chance(0.3) ? pick(fixed_joints) : pick(movable);
        const double r = u(rng);
        s.frame = r < 0.4 ? "child" : r < 0.7 ? "parent" : "sensor";
        if (s.frame == "sensor") origin(s);
        s.direction = chance(0.5) ? "child_to_parent" : "parent_to_child";
        if (chance(0.5)) s.components = subset(6);
        variance(s, s.components.empty() ? 6 : static_cast<int>(s.components.size()));
        d.sensors.push_back(s);
    }
    for (int k = 0, n = std::uniform_int_distribution<int>(0, 2)(rng); k < n; ++k) {  // accelerometers
        SensorDraw s;
        s.name = name("acc"), s.type = "accelerometer", s.link = pick(chance(0.3) && !merged_links.empty() ? merged_links : moving_links);
        origin(s);
        if (chance(0.4)) s.components = subset(3);
        variance(s, s.components.empty() ? 3 : static_cast<int>(s.components.size()));
        d.sensors.push_back(s);
    }
    for (const std::string& link : unknown) {  // contact sensors on the unknown wrenches
        if (chance(0.15)) continue;
        SensorDraw s;
        s.link = link;
        if (chance(0.5)) {
            s.name = name("load"), s.type = "load_cell", s.slippery = chance(0.5);
            if (chance(0.7)) origin(s);
            variance(s, 3);
        } else {
            s.name = name("contact"), s.type = "contact_wrench";
            if (chance(0.7)) origin(s);
            std::vector<int> all = subset(6);
            if (chance(0.5)) all = {0, 1, 2, 3, 4, 5};
            const int nz = chance(0.3) ? std::uniform_int_distribution<int>(0, static_cast<int>(all.size()) - 1)(rng) : 0;
            s.zero.assign(all.begin(), all.begin() + nz);
            s.components.assign(all.begin() + nz, all.end());
            variance(s, static_cast<int>(s.components.size()));
        }
        d.sensors.push_back(s);
    }
    auto joint_sensor = [&](const char* what, const char* type, const std::string& j) {
        SensorDraw s;
        s.name = name(what), s.type = type, s.joint = j;
        variance(s, 1);
        if (s.variance.size() > 1) s.variance.resize(1);
        d.sensors.push_back(s);
    };
    for (const std::string& j : movable) {  // joint sensors on what is sought
        const std::string& mode = d.joints[j];
        if ((mode == "qdd" || mode == "unknown") && chance(mode == "unknown" ? 0.4 : 0.1)) joint_sensor("torque", "joint_torque", j);
        if ((mode == "tau" || mode == "unknown") && chance(mode == "unknown" ? 0.6 : 0.1)) joint_sensor("qdd", "joint_acceleration", j);
    }
    if (chance(0.2)) {  // a rigid contact
        SensorDraw s;
        s.name = name("contact_condition"), s.type = "link_acceleration", s.link = pick(moving_links);
        if (chance(0.5))
            for (int k = 0; k < 6; ++k) s.value.push_back(sym(rng));
        d.sensors.push_back(s);
    }
    return d;
}

/// A spec file in the form the suite writes (tests/fixtures/sensor_specs), read back for the truth:
/// its joints (every movable joint of `l`, the default applied), wrenches and sensors.
SpecDraw read_spec(const std::string& path, const nelu::LoadResult& l) {
    const YAML::Node y = YAML::LoadFile(path);
    SpecDraw d;
    d.floating = y["floating_base"] && y["floating_base"].as<bool>();
    d.allow_singular = y["allow_singular_configurations"] && y["allow_singular_configurations"].as<bool>();
    const std::string problem = y["problem"] ? y["problem"].as<std::string>() : "hybrid";
    std::string fallback = problem == "id" ? "qdd" : "tau";
    if (y["joints"] && y["joints"]["default"]) fallback = y["joints"]["default"].as<std::string>();
    for (const nelu::Body& b : l.model.bodies)
        if (b.nv() > 0 && !b.is_mimic()) d.joints[b.joint_name] = fallback;
    for (const char* mode : {"qdd", "tau", "unknown", "both"})
        if (y["joints"] && y["joints"][mode])
            for (const auto& j : y["joints"][mode]) d.joints[j.as<std::string>()] = mode;
    const YAML::Node w = y["external_wrenches"];
    if (w && w.IsScalar()) d.wrench_default = w.as<std::string>();
    if (w && w.IsMap()) {
        if (w["default"]) d.wrench_default = w["default"].as<std::string>();
        for (const char* mode : {"input", "zero", "unknown"})
            if (w[mode])
                for (const auto& link : w[mode]) d.wrenches[link.as<std::string>()] = mode;
    }
    auto index = [](const std::string& c) { return component_index_of(c); };
    for (const auto& n : y["sensors"]) {
        SensorDraw s;
        s.name = n["name"].as<std::string>(), s.type = n["type"].as<std::string>();
        if (n["joint"]) s.joint = n["joint"].as<std::string>();
        if (n["link"]) s.link = n["link"].as<std::string>();
        if (n["frame"]) s.frame = n["frame"].as<std::string>();
        if (n["measure_direction"]) s.direction = n["measure_direction"].as<std::string>();
        if (n["origin"]) {
            s.origin = true;
            for (int k = 0; k < 3; ++k) {
                if (n["origin"]["xyz"]) s.xyz[k] = n["origin"]["xyz"][k].as<double>();
                if (n["origin"]["rpy"]) s.rpy[k] = n["origin"]["rpy"][k].as<double>();
            }
        }
        if (n["components"])
            for (const auto& c : n["components"]) s.components.push_back(index(c.as<std::string>()));
        if (n["zero"])
            for (const auto& c : n["zero"]) s.zero.push_back(index(c.as<std::string>()));
        if (n["slippery"]) s.slippery = n["slippery"].as<bool>();
        if (n["value"])
            for (const auto& v : n["value"]) s.value.push_back(v.as<double>());
        if (n["variance"]) {
            if (n["variance"].IsScalar()) s.variance.push_back(n["variance"].as<double>());
            else for (const auto& v : n["variance"]) s.variance.push_back(v.as<double>());
        }
        d.sensors.push_back(s);
    }
    return d;
}

// ---------------------------------------------------------------------------------------------
// The truth, and what the sensors read in it (docs/sensors.md, docs/problem-spec.md)

/// The URDF origin (xyz, rpy: the frame turned by yaw about z, then pitch about the new y, then roll
/// about the newer x) as the motion transform from the link frame to the frame: E = rx(roll)
/// ry(pitch) rz(yaw) in Featherstone's coordinate rotations.
Xform<double> origin_xform(const double xyz[3], const double rpy[3]) {
    Xform<double> X;
    X.E = nelu::rot_x(std::cos(rpy[0]), std::sin(rpy[0])) * nelu::rot_y(std::cos(rpy[1]), std::sin(rpy[1])) *
          nelu::rot_z(std::cos(rpy[2]), std::sin(rpy[2]));
    for (int i = 0; i < 3; ++i) X.r[i] = xyz[i];
    return X;
}

/// A world consistent with the spec: every quantity at one random state.
struct Truth {
    std::vector<double> q, qd, qdd;        ///< full slots (mimic joints follow their masters)
    std::vector<double> tau;               ///< generalized forces of the independent coordinates (full slots)
    std::map<std::string, SVec<double>> wrench;  ///< per link with a wrench: in its frame at its origin
    nelu::BodyDynamics<double> bd;         ///< a_i (gravity folded in), f_i, kinematics
    std::vector<SVec<double>> g;           ///< per body: X_{i<-0} a_g
    bool consistent = true;                ///< the rigid contacts could be met at this state
};

/// The mode of the wrench on `link` (a body's own link falls back to the default).
std::string wrench_mode(const SpecDraw& d, const nelu::LoadResult& l, const std::string& link) {
    for (const SensorDraw& s : d.sensors)
        if ((s.type == "load_cell" || s.type == "contact_wrench") && s.link == link) return "unknown";
    auto it = d.wrenches.find(link);
    if (it != d.wrenches.end()) return it->second;
    return l.model.body_index(link) >= 0 ? d.wrench_default : "zero";
}

const SensorDraw* contact_sensor(const SpecDraw& d, const std::string& link) {
    for (const SensorDraw& s : d.sensors)
        if ((s.type == "load_cell" || s.type == "contact_wrench") && s.link == link) return &s;
    return nullptr;
}

/// The spatial acceleration of every body (true: gravity not folded in) for joint accelerations qdd.
std::vector<SVec<double>> true_accelerations(const nelu::Model& m, const Truth& t, const std::vector<double>& qdd) {
    const nelu::BodyDynamics<double> b = nelu::rnea_bodies(m, t.q.data(), t.qd.data(), qdd.data(), static_cast<const SVec<double>*>(nullptr), true);
    std::vector<SVec<double>> a;
    for (int i = 0; i < m.num_bodies(); ++i) a.push_back(b.a[i] + nelu::apply(b.k.X_world[i], m.gravity));
    return a;
}

Truth draw_truth(const SpecDraw& d, const nelu::LoadResult& l, std::mt19937_64& rng) {
    const nelu::Model& m = l.model;
    std::uniform_real_distribution<double> sym(-1, 1);
    Truth t;
    t.q = nelu::random_configuration(m, rng);
    nelu::couple_positions(m, t.q.data());
    for (int k = 0; k < m.nv; ++k) t.qd.push_back(sym(rng)), t.qdd.push_back(2 * sym(rng));
    nelu::couple_velocities(m, t.qd.data());
    nelu::couple_velocities(m, t.qdd.data());
    // rigid contacts: the joint accelerations projected onto a_true(link) = value (affine in qdd)
    std::vector<std::pair<int, Eigen::Matrix<double, 6, 1>>> conditions;
    for (const SensorDraw& s : d.sensors)
        if (s.type == "link_acceleration") {
            Eigen::Matrix<double, 6, 1> v = Eigen::Matrix<double, 6, 1>::Zero();
            for (std::size_t k = 0; k < s.value.size(); ++k) v(static_cast<long>(k)) = s.value[k];
            conditions.push_back({m.body_index(s.link), v});
        }
    if (!conditions.empty()) {
        const std::vector<int> free = nelu::independent_v_slots(m);
        const long rows = 6 * static_cast<long>(conditions.size()), cols = static_cast<long>(free.size());
        std::vector<double> zero(m.nv, 0.0);
        const std::vector<SVec<double>> a0 = true_accelerations(m, t, zero);
        Eigen::MatrixXd A(rows, cols);
        Eigen::VectorXd c(rows), x0(cols);
        for (long j = 0; j < cols; ++j) {
            std::vector<double> e(m.nv, 0.0);
            e[free[j]] = 1;
            nelu::couple_velocities(m, e.data());
            const std::vector<SVec<double>> aj = true_accelerations(m, t, e);
            for (std::size_t k = 0; k < conditions.size(); ++k)
                for (int r = 0; r < 6; ++r) A(6 * static_cast<long>(k) + r, j) = aj[conditions[k].first][r] - a0[conditions[k].first][r];
            x0(j) = t.qdd[free[j]];
        }
        for (std::size_t k = 0; k < conditions.size(); ++k)
            for (int r = 0; r < 6; ++r) c(6 * static_cast<long>(k) + r) = conditions[k].second(r) - a0[conditions[k].first][r];
        const Eigen::VectorXd x = x0 - A.completeOrthogonalDecomposition().solve(A * x0 - c);
        t.consistent = (A * x - c).cwiseAbs().maxCoeff() <= 1e-9 * (1 + c.cwiseAbs().maxCoeff());
        for (long j = 0; j < cols; ++j) t.qdd[free[j]] = x(j);
        nelu::couple_velocities(m, t.qdd.data());
    }
    // external wrenches: on every link with an input or unknown one, drawn in the frame of its contact
    // sensor (with the components known to vanish at zero) or in its own
    std::vector<SVec<double>> fext(m.num_bodies(), nelu::zero6<double>());
    for (const auto& [link, lf] : l.links) {
        if (lf.body < 0 || wrench_mode(d, l, link) == "zero") continue;
        SVec<double> w;
        for (int k = 0; k < 6; ++k) w[k] = 5 * sym(rng);
        if (const SensorDraw* s = contact_sensor(d, link)) {
            std::vector<int> zero = s->zero;
            if (s->slippery) zero.insert(zero.end(), {3, 4});
            for (int k : zero) w[k] = 0;
            w = nelu::apply_transpose(origin_xform(s->xyz, s->rpy), w);  // sensor frame -> link frame
        }
        t.wrench[link] = w;
        fext[lf.body] = fext[lf.body] + nelu::apply_transpose(lf.X_link_body, w);  // link frame -> body frame
    }
    t.bd = nelu::rnea_bodies(m, t.q.data(), t.qd.data(), t.qdd.data(), fext.data(), true);
    t.tau.assign(m.nv, 0.0);
    for (const nelu::Body& b : m.bodies) nelu::joint_project(b, t.bd.f[&b - m.bodies.data()], t.tau.data() + b.v_index);
    nelu::reduce_forces(m, t.tau.data());
    for (int i = 0; i < m.num_bodies(); ++i) t.g.push_back(nelu::apply(t.bd.k.X_world[i], m.gravity));
    return t;
}

int joint_body(const nelu::Model& m, const std::string& joint) {
    for (int i = 0; i < m.num_bodies(); ++i)
        if (m.bodies[i].joint_name == joint) return i;
    return -1;
}

/// Component `c` of what sensor `s` reads in the world `t`.
double reading(const SensorDraw& s, int c, const nelu::LoadResult& l, const Truth& t) {
    const nelu::Model& m = l.model;
    if (s.type == "force_torque") {  // the wrench the joint transmits to its child (sign: which side's)
        const int i = joint_body(m, s.joint);
        SVec<double> f = t.bd.f[i];  // on the child, child frame at its origin
        if (s.frame == "sensor") f = nelu::apply_force(origin_xform(s.xyz, s.rpy), f);
        if (s.frame == "parent") {  // as it acts on the parent body, then in the parent link's frame (the world's for root_joint)
            const auto parent = l.joint_parent.find(s.joint);
            f = nelu::apply_transpose(t.bd.k.X_up[i], f);
            if (parent != l.joint_parent.end()) f = nelu::apply_force(l.links.at(parent->second).X_link_body, f);
        }
        return (s.direction == "parent_to_child" ? 1.0 : -1.0) * f[c];
    }
    if (s.type == "accelerometer") {  // proper acceleration of the sensor's origin, sensor axes
        const nelu::LinkFrame& lf = l.links.at(s.link);
        const Xform<double> X = nelu::compose(origin_xform(s.xyz, s.rpy), lf.X_link_body);  // body -> sensor
        const SVec<double>& a = t.bd.a[lf.body];  // gravity folded in: a body at rest reads +g up
        const SVec<double>& v = t.bd.k.v[lf.body];
        const nelu::Vec3<double> acc = a.l + nelu::cross(v.w, v.l) + nelu::cross(a.w, X.r) + nelu::cross(v.w, nelu::cross(v.w, X.r));
        return (X.E * acc)[c];
    }
    if (s.type == "load_cell" || s.type == "contact_wrench")  // the link's wrench in the sensor frame
        return nelu::apply_force(origin_xform(s.xyz, s.rpy), t.wrench.at(s.link))[c];
    const nelu::Body& b = m.bodies[joint_body(m, s.joint)];
    return (s.type == "joint_torque" ? t.tau : t.qdd)[b.v_index + c];
}


/// The value of a manifest slot in the world `t` (inputs and outputs alike).
double slot_value(const nlohmann::json& slot, const SpecDraw& d, const nelu::LoadResult& l, const Truth& t) {
    const nelu::Model& m = l.model;
    const std::string q = slot["quantity"];
    const int c = slot.contains("component") ? component_index_of(slot["component"]) : 0;
    if (q == "joint_acceleration" || q == "joint_torque") {
        const nelu::Body& b = m.bodies[joint_body(m, slot["joint"])];
        return (q == "joint_torque" ? t.tau : t.qdd)[b.v_index + c];
    }
    if (q == "external_wrench") return t.wrench.at(slot["link"])[c];
    if (q == "link_acceleration") {
        const int i = m.body_index(slot["link"]);
        return (t.bd.a[i] + t.g[i])[c];
    }
    if (q == "joint_wrench") return t.bd.f[m.body_index(slot["link"])][c];
    if (q == "measurement")
        for (const SensorDraw& s : d.sensors)
            if (s.name == slot["sensor"]) return reading(s, c, l, t);
    FAIL("unknown slot " << slot.dump());
    return 0;
}

// ---------------------------------------------------------------------------------------------
// One spec, end to end

struct Outcome {
    int exit = 0;          ///< what `nelu compile` would exit with
    std::string message;   ///< its message
    std::string failure;   ///< why the property does not hold ("" when it does)
    double error = 0, error_float = 0;  ///< worst truth recovery (relative), double and float
    double rounding = 0;   ///< worst error of the double solver on the inputs rounded to float
};

/// The shared object of a generated solver, built with clang++ -O0 (c++ where it is absent).
std::string build_solver(const fs::path& cpp) {
    const fs::path so = fs::path(cpp).replace_extension(".so");
    const std::string cmd = fmt::format("{} -std=c++17 -O0 -shared -fPIC -I'{}' -I'{}/runtime/include' '{}' -o '{}' 2>&1",
                                        nelu::test::have_clang() ? "clang++" : "c++", cpp.parent_path().string(),
                                        nelu::test::source_dir(), cpp.string(), so.string());
    REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, cmd);
    return so.string();
}

/// Truth recovery: `states` drawn worlds, the generated solver (double and float) on their readings.
void recover(const SpecDraw& d, const nelu::LoadResult& l, const fs::path& dir, const std::string& name, std::mt19937_64& rng,
             int states, Outcome& o) {
    const nlohmann::json man = nlohmann::json::parse(std::ifstream(dir / (name + ".json")));
    void* lib = ::dlopen(build_solver(dir / (name + ".cpp")).c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(lib);
    using SolverD = int (*)(const double*, const double*, const double*, double*);
    using SolverF = int (*)(const float*, const float*, const float*, float*);
    auto fd = reinterpret_cast<SolverD>(::dlsym(lib, name.c_str()));
    auto ff = reinterpret_cast<SolverF>(::dlsym(lib, (name + "_f").c_str()));
    const bool found = fd != nullptr && ff != nullptr;
    REQUIRE_MESSAGE(found, "no entry points " << name << ", " << name << "_f");
    const std::vector<int> qs = nelu::independent_q_slots(l.model), vs = nelu::independent_v_slots(l.model);
    for (int k = 0; k < states; ++k) {
        const Truth t = draw_truth(d, l, rng);
        if (!t.consistent) {
            o.failure = "it compiles, but its rigid contacts cannot be met at a random state (conflicting conditions)";
            break;
        }
        std::vector<double> in, expected, out(man["out"].size(), NAN);
        for (const auto& s : man["in"]) in.push_back(slot_value(s, d, l, t));
        for (const auto& s : man["out"]) expected.push_back(slot_value(s, d, l, t));
        if (in.empty()) in.push_back(0);
        const std::vector<double> q = nelu::gather(t.q, qs), qd = nelu::gather(t.qd, vs);
        const int status = fd(q.data(), qd.data(), in.data(), out.data());
        std::vector<float> qf(q.begin(), q.end()), qdf(qd.begin(), qd.end()), inf(in.begin(), in.end()), outf(out.size(), NAN);
        const int status_f = ff(qf.data(), qdf.data(), inf.data(), outf.data());
        if (status != NELU_STATUS_OK || status_f != NELU_STATUS_OK) {
            o.failure = fmt::format("the solver returns status {} (float {}) at a random state", status, status_f);
            break;
        }
        o.error = std::max(o.error, nelu::test::rel_error(out, expected));
        o.error_float = std::max(o.error_float, nelu::test::rel_error(std::vector<double>(outf.begin(), outf.end()), expected));
        std::vector<double> qr(qf.begin(), qf.end()), qdr(qdf.begin(), qdf.end()), inr(inf.begin(), inf.end()), outr(out.size(), NAN);
        if (fd(qr.data(), qdr.data(), inr.data(), outr.data()) == NELU_STATUS_OK) o.rounding = std::max(o.rounding, nelu::test::rel_error(outr, expected));
    }
    ::dlclose(lib);
    if (!o.failure.empty()) return;
    // double: nelu check's tolerance for sensor problems; float: as good as the problem's conditioning
    // allows, by nelu check's rule (CheckReport::tolerance_float) with a margin of 10 for the few
    // states drawn here (the double error of 4 states underestimates the conditioning; nelu check
    // applies the rule itself on 40 states below)
    if (!(o.error <= 1e-9)) o.failure = fmt::format("the solver does not recover the truth: relative error {:.3g} (double)", o.error);
    else if (!(o.error_float <= std::max({1e-4, 1.07e10 * o.error, 1e3 * o.rounding})))
        o.failure = fmt::format("the float solver does not recover the truth: relative error {:.3g} (double {:.3g}, the double solver on "
                                "the inputs rounded to float {:.3g})", o.error_float, o.error, o.rounding);
}

/// Whether an exit-1 message names what is not determined or what conflicts.
bool names_quantities(const std::string& msg) {
    return msg.find("not determined: ") != std::string::npos || msg.find("in conflict") != std::string::npos ||
           msg.find("no mass or inertia resists") != std::string::npos;
}

/// Compiles `d` for `urdf` (in-process, as `nelu compile` does) and checks the property: with
/// `states` = 0, that it compiles or is refused naming the quantities (a spec a message suggested).
Outcome run_spec(const std::string& urdf, const SpecDraw& d, const std::string& name, std::uint64_t seed, int states) {
    Outcome o;
    const fs::path dir = nelu::test::scratch_dir("sensor_specs_" + name);
    std::ofstream(dir / "spec.yaml") << yaml(d);
    nelu::CompileOptions co;
    co.urdf = urdf, co.problem = (dir / "spec.yaml").string(), co.name = name, co.verify_states = 10;
    nelu::CompileResult r;
    try {
        r = nelu::compile(co);
    } catch (const nelu::InputError& e) {
        o.exit = 2, o.message = e.what();
    } catch (const nelu::IllPosedError& e) {
        o.exit = 1, o.message = e.what();
    } catch (const std::exception& e) {
        o.exit = 3, o.message = e.what();
    }
    if (o.exit == 2) o.failure = "bad input (exit 2) for a well-formed spec: " + o.message;
    if (o.exit == 3) o.failure = "internal error (exit 3): " + o.message;
    if (o.exit == 1 && !names_quantities(o.message)) o.failure = "ill-posed (exit 1) without naming the quantities: " + o.message;
    if (o.exit != 0 || states == 0) {
        fs::remove_all(dir);
        return o;
    }
    nelu::write_outputs(r, dir.string());
    std::mt19937_64 rng(seed);
    recover(d, r.load, dir, name, rng, states, o);
    if (o.failure.empty()) {
        nelu::CheckOptions ck;
        ck.urdf = urdf, ck.manifest = (dir / (name + ".json")).string(), ck.problem = (dir / "spec.yaml").string(), ck.states = 40;
        ck.cxx = nelu::test::cxx_with("-O0", nelu::test::have_clang() ? "clang++" : "c++");
        try {
            const nelu::CheckReport rep = nelu::run_check(ck);
            if (!rep.pass())
                o.failure = fmt::format("nelu check fails: double {:.3g}, float {:.3g}, {} failed calls", rep.decisive_double(),
                                        rep.decisive_float(), rep.failed_status);
        } catch (const std::exception& e) {
            o.failure = std::string("nelu check throws: ") + e.what();
        }
    }
    fs::remove_all(dir);
    return o;
}

/// The remedy an exit-1 message gives, applied to the spec: the accelerations it asks to make
/// known, or allow_singular_configurations. False when it gives none.
bool apply_remedy(const std::string& msg, SpecDraw& d) {
    if (msg.find("'allow_singular_configurations: true'") != std::string::npos && !d.allow_singular) return d.allow_singular = true;
    const std::size_t at = msg.find("      qdd: [");
    if (at == std::string::npos) return false;
    std::stringstream ss(msg.substr(at + 12, msg.find(']', at) - at - 12));
    bool changed = false;
    for (std::string j; std::getline(ss, j, ',');) {
        j.erase(0, j.find_first_not_of(' '));
        if (!d.joints.count(j) || d.joints[j] == "qdd" || d.joints[j] == "both") continue;
        d.joints[j] = "qdd", changed = true;  // its acceleration known: a sensor of it has nothing left to measure
        d.sensors.erase(std::remove_if(d.sensors.begin(), d.sensors.end(),
                                       [&](const SensorDraw& s) { return s.type == "joint_acceleration" && s.joint == j; }),
                        d.sensors.end());
    }
    return changed;
}

struct Target {
    std::string name, urdf;
    bool floating;
};

/// Every robot of robots/ and ../shared/robots, fixed and floating.
std::vector<Target> targets() {
    std::vector<Target> out;
    std::vector<std::string> files = nelu::test::shipped_robots();
    for (const std::string& f : nelu::test::shared_robots()) files.push_back(f);
    for (const std::string& f : files)
        for (bool floating : {false, true}) out.push_back({fs::path(f).stem().string() + (floating ? "_fb" : ""), f, floating});
    return out;
}

std::uint64_t seed_of(const std::string& s, int index) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a: the same seed on every platform
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h ^ (static_cast<std::uint64_t>(index) * 0x9E3779B97F4A7C15ull);
}

/// The property on `count` random specs per target, from `first`; prints a table.
void run_property(int first, int count, int states) {
    int compiled = 0, refused = 0, remedied = 0;
    double worst = 0, worst_float = 0;
    for (const Target& tg : targets()) {
        for (int k = first; k < first + count; ++k) {
            const std::uint64_t seed = seed_of(tg.name, k);
            std::mt19937_64 rng(seed);
            const nelu::LoadResult merged = nelu::load_urdf_file(tg.urdf, {tg.floating, {}});
            SpecDraw d = draw_spec(merged, tg.floating, rng);
            const std::string name = fmt::format("{}_{}", tg.name, k);
            const std::string what = fmt::format("{}{}, spec {}:\n{}", tg.urdf, tg.floating ? " (floating base)" : "", k, yaml(d));
            INFO(what);  // (INFO keeps a reference: no temporaries)
            const Outcome o = run_spec(tg.urdf, d, name, seed, states);
            CHECK_MESSAGE(o.failure.empty(), o.failure);
            // what the message says to change, applied, compiles or is refused naming the quantities
            SpecDraw changed = d;
            Outcome last = o;
            for (int tries = 0; last.exit == 1 && tries < 3 && apply_remedy(last.message, changed); ++tries) {
                last = run_spec(tg.urdf, changed, name, seed, 0);
                const std::string suggested = "as the message suggests:\n" + yaml(changed);
                INFO(suggested);
                CHECK_MESSAGE(last.failure.empty(), last.failure);
                ++remedied;
            }
            if (o.exit == 0) ++compiled, worst = std::max(worst, o.error), worst_float = std::max(worst_float, o.error_float);
            else ++refused;
            MESSAGE(fmt::format("{:<24} spec {:>3}: {}", tg.name, k,
                                o.exit == 0 ? fmt::format("compiled, truth recovered to {:.2e} (float {:.2e})", o.error, o.error_float)
                                            : fmt::format("exit {}: {}", o.exit, o.message.substr(0, o.message.find('\n')))));
        }
    }
    MESSAGE(fmt::format("{} specs compiled (truth recovered to {:.2e} in double, {:.2e} in float), {} refused (exit 1), {} specs "
                        "changed as a refusal suggested", compiled, worst, worst_float, refused, remedied));
}

}  // namespace

TEST_CASE("Sensor spec fixtures: every failure the property suite found, and issue 22's specs") {
    const fs::path dir = fs::path(nelu::test::source_dir()) / "tests" / "fixtures" / "sensor_specs";
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    REQUIRE(files.size() >= 10);
    for (const fs::path& f : files) {
        std::ifstream in(f);
        std::string robot, expect;
        for (std::string line; std::getline(in, line) && line.rfind('#', 0) == 0;) {
            if (line.rfind("# robot: ", 0) == 0) robot = line.substr(9);
            if (line.rfind("# expect: ", 0) == 0) expect = line.substr(10);
        }
        REQUIRE_MESSAGE(!robot.empty(), f.string() << ": no '# robot:' line");
        std::string urdf;
        if (robot.rfind("shared:", 0) == 0) {
            if (nelu::test::shared_robots().empty()) {
                MESSAGE(f.filename().string() << ": skipped, ../shared/robots is not present");
                continue;
            }
            urdf = nelu::test::shared_dir() + "/robots/" + robot.substr(7);
        } else {
            urdf = robot.rfind("fixture:", 0) == 0 ? (dir / robot.substr(8)).string() : nelu::test::source_dir() + "/" + robot;
        }
        const YAML::Node y = YAML::LoadFile(f.string());
        const bool floating = y["floating_base"] && y["floating_base"].as<bool>();
        const SpecDraw d = read_spec(f.string(), nelu::load_urdf_file(urdf, {floating, {}}));
        const std::string what = f.filename().string() + ":\n" + yaml(d);
        INFO(what);
        const Outcome o = run_spec(urdf, d, f.stem().string(), seed_of(f.stem().string(), 0), 4);
        CHECK_MESSAGE(o.failure.empty(), o.failure);
        if (expect == "compiles") CHECK_MESSAGE(o.exit == 0, o.message);
        else CHECK_MESSAGE((o.exit == 1 && expect.rfind("ill-posed: ", 0) == 0 && o.message.find(expect.substr(11)) != std::string::npos), o.message);
        MESSAGE(fmt::format("{:<40} {}", f.filename().string(),
                            o.exit == 0 ? fmt::format("compiled, truth recovered to {:.2e} (float {:.2e})", o.error, o.error_float)
                                        : fmt::format("exit {}: {}", o.exit, o.message.substr(0, o.message.find('\n')).substr(0, 120))));
    }
}

TEST_CASE("Random sensor specs on every robot, fixed and floating: exit 1 naming the quantities, or a solver that recovers the truth") {
    run_property(0, 1, 4);
}

TEST_CASE("Random sensor specs (extended): more seeds" * doctest::skip()) { run_property(1, 8, 4); }
