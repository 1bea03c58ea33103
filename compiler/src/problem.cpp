// problem.cpp: see problem.hpp.
#include "problem.hpp"

#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "diagnostics.hpp"

namespace nelu {
namespace {

bool is_preset(const std::string& p) { return p == "id" || p == "fd" || p == "hybrid"; }

std::string where(const std::string& file, const YAML::Node& n) {
    return location(file, n.Mark().line >= 0 ? n.Mark().line + 1 : 0);
}

YAML::Node load_spec(const std::string& file) {
    try {
        return YAML::LoadFile(file);
    } catch (const YAML::BadFile&) {
        throw InputError(file + ": cannot open the problem spec");
    } catch (const YAML::Exception& e) {
        throw InputError(fmt::format("{}{}", location(file, e.mark.line + 1), e.msg));
    }
}

/// Joint name -> body index (bodies with a movable joint).
int find_joint(const Model& m, const std::string& name) {
    for (int i = 0; i < m.num_bodies(); ++i)
        if (m.bodies[i].joint_name == name && m.bodies[i].nv() > 0) return i;
    return -1;
}

std::vector<std::string> string_list(const YAML::Node& n, const std::string& file, const char* what) {
    if (!n.IsSequence()) throw InputError(where(file, n) + fmt::format("'{}' must be a list of names", what));
    std::vector<std::string> v;
    for (const auto& e : n) v.push_back(e.as<std::string>());
    return v;
}

void read_joints(const YAML::Node& j, const std::string& file, const Model& m, Problem& p) {
    if (!j) return;
    if (!j.IsMap()) throw InputError(where(file, j) + "'joints' must be a map (default, qdd, tau)");
    for (const auto& kv : j) {
        const std::string key = kv.first.as<std::string>();
        if (key != "default" && key != "qdd" && key != "tau")
            throw InputError(where(file, kv.first) + fmt::format("unknown key 'joints.{}' (expected default, qdd, tau)", key));
    }
    if (j["default"]) {
        const std::string d = j["default"].as<std::string>();
        if (d != "qdd" && d != "tau") throw InputError(where(file, j["default"]) + "'joints.default' must be qdd or tau");
        std::fill(p.joint.begin(), p.joint.end(), d == "qdd" ? JointKnown::Qdd : JointKnown::Tau);
    }
    std::set<std::string> seen;
    for (const char* key : {"qdd", "tau"}) {
        if (!j[key]) continue;
        for (const std::string& name : string_list(j[key], file, key)) {
            int b = find_joint(m, name);
            if (b < 0) throw InputError(where(file, j[key]) + fmt::format("joints.{}: no movable joint named '{}'", key, name));
            if (!seen.insert(name).second) throw InputError(where(file, j[key]) + fmt::format("joint '{}' is listed twice", name));
            p.joint[b] = std::string(key) == "qdd" ? JointKnown::Qdd : JointKnown::Tau;
        }
    }
}

void read_wrenches(const YAML::Node& w, const std::string& file, const Model& m, Problem& p) {
    if (!w) return;
    auto mode = [&](const YAML::Node& n) {
        const std::string s = n.as<std::string>();
        if (s != "input" && s != "zero") throw InputError(where(file, n) + "external wrench mode must be input or zero");
        return s == "input" ? WrenchMode::Input : WrenchMode::Zero;
    };
    if (w.IsScalar()) {
        std::fill(p.wrench.begin(), p.wrench.end(), mode(w));
        return;
    }
    if (!w.IsMap()) throw InputError(where(file, w) + "'external_wrenches' must be input, zero, or a map");
    if (w["default"]) std::fill(p.wrench.begin(), p.wrench.end(), mode(w["default"]));
    for (const char* key : {"input", "zero"}) {
        if (!w[key]) continue;
        for (const std::string& link : string_list(w[key], file, key)) {
            int b = m.body_index(link);
            if (b < 0) throw InputError(where(file, w[key]) + fmt::format("external_wrenches.{}: no body named '{}' (merged links cannot carry a wrench yet)", key, link));
            p.wrench[b] = std::string(key) == "input" ? WrenchMode::Input : WrenchMode::Zero;
        }
    }
}

}  // namespace

bool spec_requests_floating_base(const ProblemInput& in) {
    if (in.floating_base) return true;
    if (is_preset(in.problem)) return false;
    YAML::Node spec = load_spec(in.problem);
    try {
        return spec.IsMap() && spec["floating_base"] && spec["floating_base"].as<bool>();
    } catch (const YAML::Exception& e) {
        throw InputError(fmt::format("{}floating_base: {}", location(in.problem, e.mark.line + 1), e.msg));
    }
}

static Problem read_problem(const ProblemInput& in, const Model& model);

Problem run_problem(const ProblemInput& in, const Model& model) {
    try {
        return read_problem(in, model);
    } catch (const YAML::Exception& e) {  // a value of the wrong type, for instance
        throw InputError(fmt::format("{}{}", location(in.problem, e.mark.line + 1), e.msg));
    }
}

static Problem read_problem(const ProblemInput& in, const Model& model) {
    Problem p;
    p.floating_base = in.floating_base;
    p.gravity = model.gravity;
    const int nb = model.num_bodies();
    p.wrench.assign(nb, WrenchMode::Input);
    if (is_preset(in.problem)) {
        p.kind = in.problem;
        p.joint.assign(nb, in.problem == "id" ? JointKnown::Qdd : JointKnown::Tau);
        return p;
    }
    const std::string& file = in.problem;
    YAML::Node spec = load_spec(file);
    if (!spec.IsMap()) throw InputError(location(file, 1) + "a problem spec is a YAML map");
    static const std::set<std::string> keys{"version", "name", "problem", "floating_base", "gravity", "joints", "external_wrenches"};
    for (const auto& kv : spec)
        if (!keys.count(kv.first.as<std::string>()))
            throw InputError(where(file, kv.first) + fmt::format("unknown key '{}'", kv.first.as<std::string>()));
    if (spec["version"] && spec["version"].as<int>() != 1)
        throw InputError(where(file, spec["version"]) + "unsupported spec version (this nelu reads version 1)");
    p.kind = spec["problem"] ? spec["problem"].as<std::string>() : "hybrid";
    if (!is_preset(p.kind)) throw InputError(where(file, spec["problem"]) + "'problem' must be id, fd or hybrid");
    p.spec_file = file;
    p.joint.assign(nb, p.kind == "id" ? JointKnown::Qdd : JointKnown::Tau);
    if (spec["gravity"]) {
        const YAML::Node g = spec["gravity"];
        if (!g.IsSequence() || g.size() != 3) throw InputError(where(file, g) + "'gravity' must be [gx, gy, gz]");
        for (int k = 0; k < 3; ++k) p.gravity.l[k] = g[k].as<double>();
    }
    read_joints(spec["joints"], file, model, p);
    read_wrenches(spec["external_wrenches"], file, model, p);
    return p;
}

}  // namespace nelu
