// problem.cpp: see problem.hpp.
#include "problem.hpp"

#include "nelu/mimic.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <tinyxml2.h>
#include <yaml-cpp/yaml.h>

#include "diagnostics.hpp"
#include "load.hpp"
#include "numeric.hpp"

namespace nelu {
namespace {

bool is_preset(const std::string& p) { return p == "id" || p == "fd" || p == "hybrid"; }
bool is_kind(const std::string& p) { return is_preset(p) || p == "osim" || p == "iwim" || p == "impulse"; }

std::string where(const std::string& file, const YAML::Node& n) {
    return location(file, n.Mark().line >= 0 ? n.Mark().line + 1 : 0);
}

/// A key given twice in one map of the spec (YAML's maps have unique keys; yaml-cpp keeps both and
/// reads the first): an error naming the key and both lines.
void refuse_duplicate_keys(const YAML::Node& n, const std::string& file) {
    if (n.IsSequence())
        for (const YAML::Node& e : n) refuse_duplicate_keys(e, file);
    if (!n.IsMap()) return;
    std::map<std::string, int> seen;  // key -> its line
    for (const auto& kv : n) {
        if (kv.first.IsScalar()) {
            const std::string key = kv.first.Scalar();
            const int line = kv.first.Mark().line + 1;
            if (key == "<<")  // (yaml-cpp reads a merge key as an ordinary key, and no spec key is named so)
                throw InputError(where(file, kv.first) + "YAML merge keys ('<<: *anchor') are not supported in a spec: "
                                                         "write the keys out (anchors and aliases of whole values work)");
            if (const auto [it, fresh] = seen.emplace(key, line); !fresh)
                throw InputError(where(file, kv.first) + fmt::format("duplicate key '{}' (first at line {})", key, it->second));
        }
        refuse_duplicate_keys(kv.second, file);
    }
}

YAML::Node load_spec(const std::string& file) {
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) throw InputError(file + ": is a directory, not a problem spec");
    try {
        YAML::Node spec = YAML::LoadFile(file);
        refuse_duplicate_keys(spec, file);
        return spec;
    } catch (const YAML::BadFile&) {
        throw InputError(file + ": cannot open the problem spec");
    } catch (const YAML::Exception& e) {
        throw InputError(fmt::format("{}{}", location(file, e.mark.line + 1), e.msg));
    }
}

/// A number of the spec: finite, and within [lo, hi].
double spec_number(const YAML::Node& n, const std::string& file, const std::string& what, double lo, double hi) {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v)) throw InputError(where(file, n) + fmt::format("{} must be a number", what));
    if (n.Tag() == "!") throw InputError(where(file, n) + fmt::format("{} must be a number, not a quoted string ('{}')", what, n.Scalar()));
    if (!std::isfinite(v) || v < lo || v > hi)
        throw InputError(where(file, n) + (lo <= -1e300 && hi >= 1e300 ? fmt::format("{} must be a finite number (here {})", what, n.as<std::string>())
                                                                       : fmt::format("{} must be a finite number in [{:g}, {:g}] (here {})", what, lo,
                                                                                     hi, n.as<std::string>())));
    return v;
}

/// A true/false key of the spec, or an error naming it. YAML 1.2's words only: yaml-cpp also
/// reads YAML 1.1's yes, no, on, off, y and n, which the spec's reference calls errors.
bool spec_bool(const YAML::Node& n, const std::string& file, const std::string& what) {
    static const std::set<std::string> yes{"true", "True", "TRUE"}, no{"false", "False", "FALSE"};
    if (n.IsScalar() && n.Tag() != "!" && (yes.count(n.Scalar()) || no.count(n.Scalar()))) return yes.count(n.Scalar()) > 0;
    throw InputError(where(file, n) + fmt::format("{} must be true or false (here {})", what, n.IsScalar() ? "'" + n.Scalar() + "'" : "not a word"));
}

/// A word of the spec (a name, a type, a mode), or an error naming its key: not a list or a map.
std::string spec_word(const YAML::Node& n, const std::string& file, const std::string& what) {
    if (!n.IsScalar())
        throw InputError(where(file, n) + fmt::format("{} must be a single word, not {}", what, n.IsSequence() ? "a list" : n.IsMap() ? "a map" : "empty"));
    return n.Scalar();
}

/// An integer of the spec, or an error naming its key.
int spec_int(const YAML::Node& n, const std::string& file, const std::string& what) {
    int v = 0;
    if (!n.IsScalar() || n.Tag() == "!" || !YAML::convert<int>::decode(n, v))
        throw InputError(where(file, n) + fmt::format("{} must be an integer (here {})", what, n.IsScalar() ? "'" + n.Scalar() + "'" : "not a number"));
    return v;
}

/// A list of n numbers of the spec into out: `shape` (the message) when it is not a list of n,
/// each element a finite number (spec_number, naming `what`).
void spec_numbers(const YAML::Node& v, const std::string& file, const std::string& shape, const std::string& what, std::size_t n, double* out) {
    if (!v.IsSequence() || v.size() != n) throw InputError(where(file, v) + shape);
    for (std::size_t k = 0; k < n; ++k) out[k] = spec_number(v[k], file, what, -HUGE_VAL, HUGE_VAL);
}

/// `origin: {xyz: [x, y, z], rpy: [r, p, y]}` of a sensor or a contact (either key optional), or
/// an error naming `what` (say "sensor 'ft'") and the key.
void spec_origin(const YAML::Node& o, const std::string& file, const std::string& what, double xyz[3], double rpy[3]) {
    if (!o.IsMap()) throw InputError(where(file, o) + fmt::format("{}: 'origin' must be a map {{xyz: [x, y, z], rpy: [r, p, y]}}", what));
    for (const auto& kv : o) {
        const std::string key = spec_word(kv.first, file, what + ": a key of 'origin'");
        if (key != "xyz" && key != "rpy") throw InputError(where(file, kv.first) + fmt::format("{}: unknown key 'origin.{}' (expected xyz, rpy)", what, key));
        spec_numbers(kv.second, file, fmt::format("{}: origin.{} must be [a, b, c]", what, key), fmt::format("{}: origin.{}", what, key), 3,
                     key == "xyz" ? xyz : rpy);
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
    for (const auto& e : n) v.push_back(spec_word(e, file, fmt::format("an entry of '{}'", what)));
    return v;
}

JointKnown joint_mode(const std::string& s, const std::string& file, const YAML::Node& n) {
    if (s == "qdd") return JointKnown::Qdd;
    if (s == "tau") return JointKnown::Tau;
    if (s == "unknown") return JointKnown::None;
    if (s == "both") return JointKnown::Both;
    throw InputError(where(file, n) + fmt::format("joint mode '{}': expected qdd, tau, unknown or both", s));
}

void read_joints(const YAML::Node& j, const std::string& file, const Model& m, Problem& p) {
    if (!j) return;
    if (!j.IsMap()) throw InputError(where(file, j) + "'joints' must be a map (default, qdd, tau, unknown, both)");
    static const char* keys[] = {"qdd", "tau", "unknown", "both"};
    for (const auto& kv : j) {
        const std::string key = kv.first.as<std::string>();
        if (key != "default" && key != "qdd" && key != "tau" && key != "unknown" && key != "both")
            throw InputError(where(file, kv.first) + fmt::format("unknown key 'joints.{}' (expected default, qdd, tau, unknown, both)", key));
    }
    if (j["default"]) std::fill(p.joint.begin(), p.joint.end(), joint_mode(spec_word(j["default"], file, "'joints.default'"), file, j["default"]));
    std::set<std::string> seen;
    for (const char* key : keys) {
        if (!j[key]) continue;
        for (const std::string& name : string_list(j[key], file, key)) {
            int b = find_joint(m, name);
            if (b < 0) throw InputError(where(file, j[key]) + fmt::format("joints.{}: no movable joint named '{}'", key, name));
            if (!seen.insert(name).second) throw InputError(where(file, j[key]) + fmt::format("joint '{}' is listed twice", name));
            if (m.bodies[b].is_mimic())
                throw InputError(where(file, j[key]) + fmt::format("joints.{}: joint '{}' mimics '{}': its acceleration and torque follow "
                                                                   "from those of '{}'; name '{}' instead (or compile with --ignore-mimic)",
                                                                   key, name, m.bodies[m.bodies[b].mimic].joint_name,
                                                                   m.bodies[m.bodies[b].mimic].joint_name, m.bodies[m.bodies[b].mimic].joint_name));
            p.joint[b] = joint_mode(key, file, j[key]);
        }
    }
}

/// A mimic joint knows what its master knows: its qdd follows the master's, and its torque is
/// part of the master's generalized force.
void couple_joint_modes(const Model& m, Problem& p) {
    for (int i = 0; i < m.num_bodies(); ++i)
        if (m.bodies[i].is_mimic()) p.joint[i] = p.joint[m.bodies[i].mimic];
}

/// The wrench of a link merged into a body (Problem::link_wrenches), created with `mode` or set to it.
void set_link_wrench(const LoadResult& l, const std::string& link, WrenchMode mode, Problem& p) {
    auto it = std::find_if(p.link_wrenches.begin(), p.link_wrenches.end(), [&](const LinkWrench& w) { return w.link == link; });
    if (it == p.link_wrenches.end()) {
        const LinkFrame& lf = l.links.at(link);
        p.link_wrenches.push_back({link, lf.body, lf.X_link_body, mode});
        std::sort(p.link_wrenches.begin(), p.link_wrenches.end(),
                  [](const LinkWrench& a, const LinkWrench& b) { return std::tie(a.body, a.link) < std::tie(b.body, b.link); });
    } else {
        it->mode = mode;
    }
}

void read_wrenches(const YAML::Node& w, const std::string& file, const LoadResult& l, Problem& p) {
    const Model& m = l.model;
    if (!w) return;
    auto mode = [&](const YAML::Node& n) {
        const std::string s = spec_word(n, file, "an external wrench mode");
        if (s == "input") return WrenchMode::Input;
        if (s == "zero") return WrenchMode::Zero;
        if (s == "unknown") return WrenchMode::Unknown;
        throw InputError(where(file, n) + "external wrench mode must be input, zero or unknown");
    };
    if (w.IsScalar()) {
        std::fill(p.wrench.begin(), p.wrench.end(), mode(w));
        return;
    }
    if (!w.IsMap()) throw InputError(where(file, w) + "'external_wrenches' must be input, zero, unknown, or a map");
    for (const auto& kv : w) {
        const std::string key = kv.first.as<std::string>();
        if (key != "default" && key != "input" && key != "zero" && key != "unknown")
            throw InputError(where(file, kv.first) + fmt::format("unknown key 'external_wrenches.{}' (expected default, input, zero, unknown)", key));
    }
    if (w["default"]) std::fill(p.wrench.begin(), p.wrench.end(), mode(w["default"]));
    std::set<std::string> seen;
    for (const char* key : {"input", "zero", "unknown"}) {
        if (!w[key]) continue;
        for (const std::string& link : string_list(w[key], file, key)) {
            const WrenchMode mode = std::string(key) == "input" ? WrenchMode::Input : std::string(key) == "zero" ? WrenchMode::Zero : WrenchMode::Unknown;
            if (!seen.insert(link).second) throw InputError(where(file, w[key]) + fmt::format("link '{}' is listed twice", link));
            if (const int b = m.body_index(link); b >= 0) {
                p.wrench[b] = mode;
                continue;
            }
            auto it = l.links.find(link);
            if (it == l.links.end()) throw InputError(where(file, w[key]) + fmt::format("external_wrenches.{}: no link named '{}'", key, link));
            if (it->second.body < 0)
                throw InputError(where(file, w[key]) + fmt::format("external_wrenches.{}: link '{}' is fixed to the world: a wrench on it "
                                                                   "acts on no moving body", key, link));
            if (mode != WrenchMode::Zero) set_link_wrench(l, link, mode, p);  // a zero wrench on a merged link is nothing
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Sensors

/// Pluecker transform from a link frame to a frame at (xyz, rpy) in it (URDF origin convention).
Xform<double> origin_xform(const double xyz[3], const double rpy[3]) {
    const double cr = std::cos(rpy[0]), sr = std::sin(rpy[0]), cp = std::cos(rpy[1]), sp = std::sin(rpy[1]),
                 cy = std::cos(rpy[2]), sy = std::sin(rpy[2]);
    // R = Rz(y) Ry(p) Rx(r): sensor axes in link coordinates; E = R^T maps link to sensor coordinates
    const double R[3][3] = {{cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr},
                            {sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr},
                            {-sp, cp * sr, cp * cr}};
    Xform<double> X;
    for (int i = 0; i < 3; ++i) {
        X.r[i] = snap_unit(xyz[i], 1e-14) == 0 ? 0.0 : xyz[i];
        for (int k = 0; k < 3; ++k) X.E(i, k) = snap_unit(R[k][i], 1e-14);
    }
    return X;
}

/// A sensor as written (YAML or URDF), before it is resolved against the model.
struct SensorDecl {
    std::string name, type, link, joint, frame = "child", direction = "child_to_parent", where;
    double xyz[3] = {0, 0, 0}, rpy[3] = {0, 0, 0};
    std::vector<std::string> components, zero;
    bool components_given = false;  ///< `components:` present (an empty list is an error, not "all")
    std::vector<std::string> keys;  ///< the YAML keys given (besides name and type), in order
    std::vector<double> variance;
    bool slippery = false;
    std::vector<double> value;
    bool has_origin = false;  ///< an origin was given (else the sensor frame is its link's)
};

const char* kWrenchComp[6] = {"nx", "ny", "nz", "fx", "fy", "fz"};
const char* kPointComp[3] = {"x", "y", "z"};

std::vector<int> component_indices(const std::vector<std::string>& names, const char* const* table, int n, const SensorDecl& d) {
    std::vector<int> out;
    for (const std::string& c : names) {
        int k = -1;
        for (int i = 0; i < n; ++i)
            if (c == table[i]) k = i;
        if (k < 0) {
            std::string all;
            for (int i = 0; i < n; ++i) all += (i ? ", " : "") + std::string(table[i]);
            throw InputError(d.where + fmt::format("sensor '{}': unknown component '{}' (expected {})", d.name, c, all));
        }
        if (std::find(out.begin(), out.end(), k) != out.end())
            throw InputError(d.where + fmt::format("sensor '{}': component '{}' is listed twice", d.name, c));
        out.push_back(k);
    }
    return out;
}

/// The <sensor> elements at the top level of a URDF (iDynTree's convention): force_torque with
/// <parent joint>, accelerometer and gyroscope with <parent link>, each with an optional <origin>.
std::vector<SensorDecl> urdf_sensor_decls(const std::string& path) {
    tinyxml2::XMLDocument doc;
    if (doc.LoadFile(path.c_str()) != tinyxml2::XML_SUCCESS) throw InputError(path + ": cannot read the URDF for its <sensor> tags");
    std::vector<SensorDecl> out;
    const tinyxml2::XMLElement* robot = doc.FirstChildElement("robot");
    if (!robot) return out;
    auto numbers = [&](const char* text, double* v, const SensorDecl& d, const char* what) {
        if (!text) return;
        std::istringstream ss(text);
        for (int k = 0; k < 3; ++k)
            if (!(ss >> v[k]) || !std::isfinite(v[k])) throw InputError(d.where + fmt::format("sensor '{}': <origin {}> needs three finite numbers", d.name, what));
    };
    for (const tinyxml2::XMLElement* e = robot->FirstChildElement("sensor"); e; e = e->NextSiblingElement("sensor")) {
        SensorDecl d;
        d.where = location(path, e->GetLineNum());
        d.name = e->Attribute("name") ? e->Attribute("name") : "";
        d.type = e->Attribute("type") ? e->Attribute("type") : "";
        if (d.name.empty()) throw InputError(d.where + "<sensor> without a name");
        refuse_unwritable_name(d.where, d.name, "sensor '", "'");
        if (const auto* par = e->FirstChildElement("parent")) {
            if (par->Attribute("joint")) d.joint = par->Attribute("joint");
            if (par->Attribute("link")) d.link = par->Attribute("link");
        }
        if (const auto* o = e->FirstChildElement("origin")) {
            d.has_origin = true;
            numbers(o->Attribute("xyz"), d.xyz, d, "xyz");
            numbers(o->Attribute("rpy"), d.rpy, d, "rpy");
        }
        if (const auto* ft = e->FirstChildElement("force_torque")) {
            if (const auto* f = ft->FirstChildElement("frame"); f && f->GetText()) d.frame = f->GetText();
            if (const auto* md = ft->FirstChildElement("measure_direction"); md && md->GetText()) d.direction = md->GetText();
        }
        if (d.type == "force_torque" && !e->FirstChildElement("origin")) d.frame = d.frame == "sensor" ? "child" : d.frame;
        out.push_back(d);
    }
    return out;
}

std::vector<SensorDecl> yaml_sensor_decls(const YAML::Node& list, const std::string& file) {
    std::vector<SensorDecl> out;
    if (!list) return out;
    if (!list.IsSequence()) throw InputError(where(file, list) + "'sensors' must be a list of sensors");
    static const std::set<std::string> keys{"name", "type", "link", "joint", "origin", "frame", "measure_direction",
                                            "components", "zero", "slippery", "variance", "value"};
    int index = 0;
    for (const YAML::Node& n : list) {
        SensorDecl d;
        d.where = where(file, n);
        if (!n.IsMap()) throw InputError(d.where + "each sensor is a map (name, type, link or joint, ...)");
        for (const auto& kv : n) {
            const std::string key = spec_word(kv.first, file, "a sensor's key");
            if (!keys.count(key)) throw InputError(where(file, kv.first) + fmt::format("unknown sensor key '{}'", key));
            if (key != "name" && key != "type") d.keys.push_back(key);
        }
        d.type = n["type"] ? spec_word(n["type"], file, "a sensor's 'type'") : "";
        d.name = n["name"] ? spec_word(n["name"], file, "a sensor's 'name'") : fmt::format("{}{}", d.type, index);
        ++index;
        refuse_unwritable_name(where(file, n["name"] ? n["name"] : n), d.name, "sensor '", "'");
        const std::string sensor = fmt::format("sensor '{}'", d.name);
        if (n["link"]) d.link = spec_word(n["link"], file, sensor + ": 'link'");
        if (n["joint"]) d.joint = spec_word(n["joint"], file, sensor + ": 'joint'");
        if (n["frame"]) d.frame = spec_word(n["frame"], file, sensor + ": 'frame'");
        if (n["measure_direction"]) d.direction = spec_word(n["measure_direction"], file, sensor + ": 'measure_direction'");
        if (n["origin"]) spec_origin(n["origin"], file, sensor, d.xyz, d.rpy), d.has_origin = true;
        if (n["components"]) d.components = string_list(n["components"], file, "components"), d.components_given = true;
        if (n["zero"]) d.zero = string_list(n["zero"], file, "zero");
        if (n["slippery"]) d.slippery = spec_bool(n["slippery"], file, fmt::format("sensor '{}': 'slippery'", d.name));
        if (n["variance"]) {
            const YAML::Node v = n["variance"];
            const std::string what = sensor + ": 'variance'";
            if (v.IsSequence())
                for (const auto& x : v) d.variance.push_back(spec_number(x, file, what, -HUGE_VAL, HUGE_VAL));
            else
                d.variance.push_back(spec_number(v, file, what, -HUGE_VAL, HUGE_VAL));
            for (double x : d.variance)
                if (!(x > 0)) throw InputError(where(file, v) + fmt::format("{}: variances must be positive", sensor));
        }
        if (n["value"]) {
            const YAML::Node v = n["value"];
            d.value.resize(6);
            spec_numbers(v, file, sensor + ": value must be [wx, wy, wz, vx, vy, vz]", sensor + ": 'value'", 6, d.value.data());
        }
        out.push_back(d);
    }
    return out;
}

/// The body a URDF link ended up on and the transform from that body's frame to the link frame.
LinkFrame link_frame(const LoadResult& l, const std::string& link, const SensorDecl& d) {
    auto it = l.links.find(link);
    if (it == l.links.end()) throw InputError(d.where + fmt::format("sensor '{}': no link named '{}'", d.name, link));
    if (it->second.body < 0)
        throw InputError(d.where + fmt::format("sensor '{}': link '{}' is fixed to the world; nothing there is unknown", d.name, link));
    return it->second;
}

/// The robot's size: the sum of its joints' offsets (the reach of its longest chain and more), and
/// at least 1 m.
double robot_size(const LoadResult& l) {
    double size = 1;
    for (const Body& b : l.model.bodies) size += std::sqrt(dot(b.X_tree.r, b.X_tree.r));
    for (const auto& [name, lf] : l.links) size += std::sqrt(dot(lf.X_link_body.r, lf.X_link_body.r));
    return size;
}

/// A sensor's origin farther from its link than this many times the robot's size is a mistake (a
/// unit or an exponent), not a sensor: it would make every reading overflow or cancel.
constexpr double kMaxSensorReach = 1e3;

/// The keys a sensor of each type reads (besides name and type); any other is a mistake.
const std::map<std::string, std::set<std::string>>& sensor_keys() {
    static const std::map<std::string, std::set<std::string>> k{
        {"force_torque", {"joint", "frame", "measure_direction", "origin", "components", "variance"}},
        {"load_cell", {"link", "origin", "slippery", "zero", "variance", "components"}},  // (components, slippery: refused below, with
        {"contact_wrench", {"link", "origin", "components", "zero", "variance", "slippery"}},  //  what to write instead)
        {"accelerometer", {"link", "origin", "components", "variance"}},
        {"gyroscope", {"link", "origin", "components", "variance"}},
        {"joint_torque", {"joint", "variance"}},
        {"joint_acceleration", {"joint", "variance"}},
        {"link_acceleration", {"link", "value"}},
    };
    return k;
}

Sensor resolve(const SensorDecl& d, const LoadResult& l, Problem& p) {
    const Model& m = l.model;
    Sensor s;
    s.name = d.name, s.where = d.where, s.link = d.link, s.joint = d.joint, s.type_word = d.type;
    // (a sensor frame is named by the link it sits on; where the spec gives no origin, it is the link's frame)
    auto frame_on = [&](const std::string& link) { return d.has_origin ? "its sensor frame on link " + link : "the frame of link " + link; };
    auto need = [&](bool ok, const std::string& what) {
        if (!ok) throw InputError(d.where + fmt::format("sensor '{}' ({}): {}", d.name, d.type, what));
    };
    if (auto it = sensor_keys().find(d.type); it != sensor_keys().end())
        for (const std::string& key : d.keys) {
            std::string allowed;
            for (const std::string& a : it->second) allowed += (allowed.empty() ? "" : ", ") + a;
            need(it->second.count(key) > 0, fmt::format("'{}' does not apply to a {} sensor (it reads {})", key, d.type, allowed));
        }
    need(d.type != "force_torque" || d.frame == "sensor" || std::find(d.keys.begin(), d.keys.end(), "origin") == d.keys.end(),
         "'origin' is the pose of 'frame: sensor'; with frame child or parent the wrench is expressed in that link's frame");
    const double reach = std::hypot(d.xyz[0], std::hypot(d.xyz[1], d.xyz[2])), size = robot_size(l);
    need(reach <= kMaxSensorReach * size,
         fmt::format("its origin [{:g}, {:g}, {:g}] is {:.3g} m from the link's origin, more than {:g} times the robot's size ({:.3g} m, "
                     "the sum of its joint offsets); a sensor sits on its link", d.xyz[0], d.xyz[1], d.xyz[2], reach, kMaxSensorReach, size));
    need(!d.components_given || !d.components.empty(), "'components: []' measures nothing; list the components it measures, or leave "
                                                       "'components' out to measure all of them");
    const Xform<double> X_origin = origin_xform(d.xyz, d.rpy);
    auto joint_body = [&]() {
        need(!d.joint.empty(), "needs 'joint'");
        for (int i = 0; i < m.num_bodies(); ++i)
            if (m.bodies[i].joint_name == d.joint) return i;
        for (const MergedJoint& mj : l.merged)
            if (mj.joint == d.joint)
                throw InputError(d.where + fmt::format("sensor '{}': joint '{}' was merged away; a force/torque sensor needs it kept "
                                                       "as a body boundary", d.name, d.joint));
        throw InputError(d.where + fmt::format("sensor '{}': no joint named '{}'", d.name, d.joint));
    };
    if (d.type == "force_torque") {
        s.type = SensorType::ForceTorque;
        s.body = joint_body();
        s.link = m.bodies[s.body].name;
        need(d.direction == "child_to_parent" || d.direction == "parent_to_child", "measure_direction must be child_to_parent or parent_to_child");
        s.sign = d.direction == "parent_to_child" ? 1.0 : -1.0;
        need(d.frame == "child" || d.frame == "parent" || d.frame == "sensor", "frame must be child, parent or sensor");
        const auto parent = l.joint_parent.find(d.joint);
        const std::string parent_link = parent != l.joint_parent.end() ? parent->second : "world";
        if (d.frame == "parent") {  // the parent link's frame, relative to the parent body (or the world)
            s.frame_is_parent = true;
            s.X_sensor_body = parent != l.joint_parent.end() ? l.links.at(parent->second).X_link_body : identity_xform<double>();
            s.frame = "the frame of link " + parent_link;
        } else if (d.frame == "sensor") {
            s.X_sensor_body = X_origin;  // origin relative to the child link
            s.frame = frame_on(s.link);
        } else {
            s.frame = "the frame of link " + s.link;
        }
        s.reads = fmt::format("the wrench {} exerts on {} through joint {}", s.sign > 0 ? parent_link : s.link, s.sign > 0 ? s.link : parent_link, d.joint);
        s.components = d.components.empty() ? std::vector<int>{0, 1, 2, 3, 4, 5} : component_indices(d.components, kWrenchComp, 6, d);
    } else if (d.type == "load_cell" || d.type == "contact_wrench") {
        s.type = SensorType::ContactWrench;
        need(!d.link.empty(), "needs 'link'");
        LinkFrame lf = link_frame(l, d.link, d);
        s.body = lf.body;
        s.X_sensor_body = compose(X_origin, lf.X_link_body);
        s.frame = frame_on(d.link);
        s.reads = "the external wrench on link " + d.link;
        if (d.type == "load_cell") {
            need(d.components.empty(), "a load cell measures fz, nx, ny; use type contact_wrench to choose components");
            s.components = {5, 0, 1};
            if (d.slippery) s.zero_components = {3, 4};
        } else {
            need(!d.slippery, "'slippery' belongs to load cells; give 'zero: [fx, fy]' instead");
            s.components = d.components.empty() ? std::vector<int>{0, 1, 2, 3, 4, 5} : component_indices(d.components, kWrenchComp, 6, d);
        }
        if (!d.zero.empty()) {
            std::vector<int> z = component_indices(d.zero, kWrenchComp, 6, d);
            s.zero_components.insert(s.zero_components.end(), z.begin(), z.end());
        }
        for (int k : s.zero_components)
            need(std::find(s.components.begin(), s.components.end(), k) == s.components.end(),
                 fmt::format("component {} cannot be both measured and zero", kWrenchComp[k]));
        for (const Sensor& o : p.sensors)
            if (o.type == SensorType::ContactWrench && o.link == s.link)
                throw InputError(d.where + fmt::format("sensor '{}': link '{}' already has the contact sensor '{}' (one per link)", d.name, d.link, o.name));
        // it measures the wrench on its link, which is unknown: the body's own, or a merged link's
        if (m.bodies[s.body].name == d.link) p.wrench[s.body] = WrenchMode::Unknown;
        else set_link_wrench(l, d.link, WrenchMode::Unknown, p);
    } else if (d.type == "accelerometer") {
        s.type = SensorType::Accelerometer;
        need(!d.link.empty(), "needs 'link' (URDF: <parent link=...>)");
        LinkFrame lf = link_frame(l, d.link, d);
        s.body = lf.body;
        s.X_sensor_body = compose(X_origin, lf.X_link_body);
        s.frame = frame_on(d.link);
        s.reads = "the proper acceleration of its origin on link " + d.link + " (gravity included: at rest it reads +g upward)";
        s.components = d.components.empty() ? std::vector<int>{0, 1, 2} : component_indices(d.components, kPointComp, 3, d);
    } else if (d.type == "joint_torque" || d.type == "joint_acceleration") {
        s.type = d.type == "joint_torque" ? SensorType::JointTorque : SensorType::JointAcceleration;
        s.body = joint_body();
        const Body& b = m.bodies[s.body];
        need(b.nv() > 0, fmt::format("joint '{}' has no degree of freedom", d.joint));
        if (b.is_mimic()) need(false, fmt::format("joint '{}' mimics '{}': its acceleration is a multiple of that of '{}' and its torque "
                                        "is part of the generalized force of '{}'; put the sensor on '{}' (or compile with --ignore-mimic)",
                                        d.joint, m.bodies[b.mimic].joint_name, m.bodies[b.mimic].joint_name,
                                        m.bodies[b.mimic].joint_name, m.bodies[b.mimic].joint_name));
        const JointKnown k = p.joint[s.body];
        const bool known = s.type == SensorType::JointTorque ? (k == JointKnown::Tau || k == JointKnown::Both)
                                                             : (k == JointKnown::Qdd || k == JointKnown::Both);
        need(!known, fmt::format("the {} of joint '{}' is already known (joints:); measure an unknown", s.type == SensorType::JointTorque ? "torque" : "acceleration", d.joint));
        for (int k2 = 0; k2 < b.nv(); ++k2) s.components.push_back(k2);
        s.reads = fmt::format("the {} of joint {}", s.type == SensorType::JointTorque ? "generalized force" : "acceleration", d.joint);
    } else if (d.type == "link_acceleration") {
        s.type = SensorType::LinkAcceleration;
        need(!d.link.empty(), "needs 'link'");
        LinkFrame lf = link_frame(l, d.link, d);
        need(lf.X_link_body.E(0, 0) == 1 && lf.X_link_body.E(1, 1) == 1 && lf.X_link_body.E(2, 2) == 1 &&
                 lf.X_link_body.r[0] == 0 && lf.X_link_body.r[1] == 0 && lf.X_link_body.r[2] == 0,
             "the link was merged into its parent; name the body it was merged into");
        s.body = lf.body;
        s.frame = "the frame of link " + d.link;
        s.reads = "the spatial acceleration of link " + d.link + " (gravity excluded), known";
        if (!d.value.empty()) s.value = {{{d.value[0], d.value[1], d.value[2]}}, {{d.value[3], d.value[4], d.value[5]}}};
        s.components = {0, 1, 2, 3, 4, 5};
    } else {
        throw InputError(d.where + fmt::format("sensor '{}': unknown type '{}' (expected force_torque, load_cell, contact_wrench, "
                                               "accelerometer, gyroscope, joint_torque, joint_acceleration, link_acceleration)", d.name, d.type));
    }
    s.variance.assign(s.components.size(), 1.0);
    if (d.variance.size() == 1) std::fill(s.variance.begin(), s.variance.end(), d.variance[0]);
    else if (!d.variance.empty()) {
        need(d.variance.size() == s.components.size(), fmt::format("{} variances for {} measured components", d.variance.size(), s.components.size()));
        s.variance = d.variance;
    }
    return s;
}

/// The sensor types `resolve` knows (its error message lists them too).
const std::set<std::string> kSensorTypes{"force_torque", "load_cell", "contact_wrench", "accelerometer", "gyroscope",
                                         "joint_torque", "joint_acceleration", "link_acceleration"};

/// Which URDF sensors a spec uses: `urdf_sensors: all | none | [names]` (default none). `all`
/// takes the sensors of the types nelu knows (kSensorTypes) and leaves the others (a ROS camera or
/// laser, which has no 'type') to `skipped`, with a note each; a sensor named in a list is taken
/// whatever its type (resolve refuses an unknown one).
std::vector<SensorDecl> selected_urdf_sensors(const YAML::Node& sel, const std::string& file, const std::string& urdf,
                                              std::vector<std::string>* skipped = nullptr) {
    if (!sel) return {};
    std::vector<SensorDecl> all = urdf_sensor_decls(urdf);
    if (sel.IsScalar()) {
        const std::string v = sel.as<std::string>();
        if (v == "none") return {};
        if (v == "all") {
            std::vector<SensorDecl> kept;
            for (SensorDecl& d : all)
                if (kSensorTypes.count(d.type)) kept.push_back(std::move(d));
                else if (skipped)
                    skipped->push_back(d.where + fmt::format("sensor '{}' ({}) measures no dynamic quantity nelu knows: not used by "
                                                             "'urdf_sensors: all'", d.name, d.type.empty() ? "no type" : "type '" + d.type + "'"));
            return kept;
        }
        throw InputError(where(file, sel) + "'urdf_sensors' must be all, none or a list of sensor names");
    }
    std::vector<SensorDecl> out;
    for (const std::string& name : string_list(sel, file, "urdf_sensors")) {
        auto it = std::find_if(all.begin(), all.end(), [&](const SensorDecl& d) { return d.name == name; });
        if (it == all.end()) throw InputError(where(file, sel) + fmt::format("urdf_sensors: {} has no <sensor name=\"{}\">", urdf, name));
        out.push_back(*it);
    }
    return out;
}

void read_outputs(const YAML::Node& o, const std::string& file, Problem& p) {
    if (!o) return;
    if (o.IsSequence() && o.size() == 0) throw InputError(where(file, o) + "'outputs' is empty: a solver that outputs nothing computes nothing");
    Outputs out{false, false, false, false, false, false, false, {}};
    const bool impulse = p.impulse();
    for (const std::string& k : string_list(o, file, "outputs")) {
        auto only = [&](bool ok, const char* when) {
            if (!ok) throw InputError(where(file, o) + fmt::format("outputs: '{}' {}", k, when));
        };
        if (k == "joint_torques") only(!impulse, "does not apply to problem impulse (no torque acts during an impact)"), out.joint_torques = true;
        else if (k == "joint_accelerations") only(!impulse, "does not apply to problem impulse: its outputs are joint_velocities"), out.joint_accelerations = true;
        else if (k == "contact_wrenches") out.contact_wrenches = true;
        else if (k == "link_accelerations") only(p.contacts.empty(), "with 'contacts:' is not supported yet"), out.link_accelerations = true;
        else if (k == "joint_wrenches") only(p.contacts.empty(), "with 'contacts:' is not supported yet"), out.joint_wrenches = true;
        else if (k == "contact_forces") only(!impulse && !p.contacts.empty(), impulse ? "of problem impulse are 'contact_impulses'" : "needs 'contacts:'"), out.contact_forces = true;
        else if (k == "contact_impulses") only(impulse, "belongs to problem impulse (problem fd outputs 'contact_forces')"), out.contact_forces = true;
        else if (k == "joint_velocities") only(impulse, "belongs to problem impulse (the post-impact velocities)"), out.joint_velocities = true;
        else throw InputError(where(file, o) + fmt::format("outputs: unknown '{}' (expected joint_torques, joint_accelerations, "
                                                           "contact_wrenches, link_accelerations, joint_wrenches, contact_forces, "
                                                           "contact_impulses, joint_velocities)", k));
    }
    out.where = where(file, o);
    p.outputs = out;
}


/// `contacts:` (problems fd and impulse): a list of {name, link, type, origin, frame, baumgarte}.
void read_contacts(const YAML::Node& list, const std::string& file, const LoadResult& l, Problem& p) {
    if (!list) return;
    if (!list.IsSequence() || list.size() == 0) throw InputError(where(file, list) + "'contacts' must be a non-empty list of contacts");
    // a scalar key of a contact (name, link, type, frame), or an error naming it
    auto text = [&](const YAML::Node& v, const std::string& contact, const char* key) {
        return spec_word(v, file, fmt::format("{}'{}'", contact.empty() ? "" : "contact '" + contact + "': ", key));
    };
    if (p.kind != "fd" && p.kind != "impulse") {
        const YAML::Node first = list[0];
        const std::string name = first.IsMap() && first["name"] && first["name"].IsScalar() ? first["name"].as<std::string>() : "contact0";
        throw InputError(where(file, list) + fmt::format("contact '{}': 'contacts' applies to problems fd and impulse, not {}", name, p.kind));
    }
    static const std::set<std::string> keys{"name", "link", "type", "origin", "frame", "baumgarte"};
    std::set<std::string> names;
    const double size = robot_size(l);
    for (const YAML::Node& n : list) {
        ContactSpec cs;
        cs.where = where(file, n);
        if (!n.IsMap()) throw InputError(cs.where + "each contact is a map {name, link, type, origin, frame, baumgarte}");
        Contact& c = cs.contact;
        c.name = n["name"] ? text(n["name"], "", "name") : fmt::format("contact{}", p.contacts.size());
        if (!is_slot_word(c.name))
            throw InputError(where(file, n["name"]) + fmt::format("contact '{}': a name is a word of letters, digits, '_' and '-' (it names the "
                                                                  "output slots, NAME.fx)", escaped(c.name)));
        auto fail = [&](const YAML::Node& at, const std::string& what) {
            throw InputError((at ? where(file, at) : cs.where) + fmt::format("contact '{}': {}", c.name, what));
        };
        for (const auto& kv : n)
            if (!keys.count(kv.first.as<std::string>()))
                fail(kv.first, fmt::format("unknown key '{}' (expected name, link, type, origin, frame, baumgarte)", kv.first.as<std::string>()));
        if (!names.insert(c.name).second) fail(n["name"], "a second contact with this name");
        if (!n["link"]) fail(n, "needs 'link'");
        cs.link = text(n["link"], c.name, "link");
        const auto it = l.links.find(cs.link);
        if (it == l.links.end()) fail(n["link"], fmt::format("no link named '{}'", cs.link));
        if (it->second.body < 0) fail(n["link"], fmt::format("link '{}' is fixed to the world: a contact there constrains nothing", cs.link));
        c.body = it->second.body;
        if (!n["type"]) fail(n, "needs 'type' (point or 6d)");
        const std::string type = text(n["type"], c.name, "type");
        if (type == "point") c.type = ContactType::Point;
        else if (type == "6d" || type == "6D") c.type = ContactType::SixD;
        else fail(n["type"], fmt::format("type '{}': expected point or 6d", type));
        const std::string frame = n["frame"] ? text(n["frame"], c.name, "frame") : "local";
        if (frame == "local") c.frame = ContactFrame::Local;
        else if (frame == "local_world_aligned") c.frame = ContactFrame::LocalWorldAligned;
        else fail(n["frame"], fmt::format("frame '{}': expected local or local_world_aligned", frame));
        double xyz[3] = {0, 0, 0}, rpy[3] = {0, 0, 0};
        if (const YAML::Node o = n["origin"]) spec_origin(o, file, fmt::format("contact '{}'", c.name), xyz, rpy);
        const double reach = std::hypot(xyz[0], std::hypot(xyz[1], xyz[2]));
        if (reach > kMaxSensorReach * size)
            fail(n["origin"], fmt::format("its origin is {:.3g} m from the link's origin, more than {:g} times the robot's size ({:.3g} m); a "
                                          "contact sits on its link", reach, kMaxSensorReach, size));
        c.placement = compose(origin_xform(xyz, rpy), it->second.X_link_body);
        if (const YAML::Node g = n["baumgarte"]) {
            if (!g.IsMap()) fail(g, "'baumgarte' must be a map {kp: K, kd: K} (a number, or one per component)");
            for (const auto& kv : g) {
                const std::string key = kv.first.as<std::string>();
                if (key != "kp" && key != "kd") fail(kv.first, fmt::format("unknown key 'baumgarte.{}' (expected kp, kd)", key));
                double* gains = key == "kp" ? c.kp : c.kd;
                const YAML::Node v = kv.second;
                const std::string what = fmt::format("contact '{}': baumgarte.{}", c.name, key);
                if (v.IsScalar()) {
                    const double x = spec_number(v, file, what, 0, 1e12);
                    for (int k = 0; k < c.dim(); ++k) gains[k] = x;
                } else if (v.IsSequence() && static_cast<int>(v.size()) == c.dim()) {
                    for (int k = 0; k < c.dim(); ++k) gains[k] = spec_number(v[k], file, what, 0, 1e12);
                } else {
                    fail(v, fmt::format("baumgarte.{} must be a number or a list of {} ({})", key, c.dim(),
                                        c.dim() == 3 ? "x y z" : "angular x y z, then linear x y z"));
                }
            }
            if (p.impulse()) fail(g, "'baumgarte' does not apply to problem impulse (an impulse sets velocities, not accelerations)");
        }
        p.contacts.push_back(cs);
    }
}

/// osim and iwim: forward dynamics (every torque known, f^x inputs on the points' links), whose
/// responses to unit inputs the pipeline turns into the outputs.
void read_response_problem(const YAML::Node& spec, const std::string& file, const LoadResult& loaded, Problem& p) {
    const Model& m = loaded.model;
    for (const char* k : {"joints", "external_wrenches", "sensors", "urdf_sensors", "outputs"})
        if (spec[k]) throw InputError(where(file, spec[k]) + fmt::format("'{}' does not apply to problem {}", k, p.kind));
    std::fill(p.joint.begin(), p.joint.end(), JointKnown::Tau);
    std::fill(p.wrench.begin(), p.wrench.end(), WrenchMode::Zero);
    auto read_point = [&](const YAML::Node& n, int default_dof) {
        PointSpec ps;
        ps.where = where(file, n);
        if (!n.IsMap() || !n["link"]) throw InputError(ps.where + "a point is a map with 'link' and 'point' (and 'dof')");
        for (const auto& kv : n) {
            const std::string k = spec_word(kv.first, file, "a point's key");
            if (k != "link" && k != "point" && k != "dof") throw InputError(where(file, kv.first) + fmt::format("unknown key '{}' of a point", k));
        }
        ps.link = spec_word(n["link"], file, "a point's 'link'");
        auto it = loaded.links.find(ps.link);
        if (it == loaded.links.end()) throw InputError(ps.where + fmt::format("no link named '{}'", ps.link));
        if (it->second.body < 0) throw InputError(ps.where + fmt::format("link '{}' is fixed to the world", ps.link));
        if (n["point"]) spec_numbers(n["point"], file, "point must be [x, y, z] (link frame)", fmt::format("point of link '{}'", ps.link), 3, ps.xyz);
        const double rpy[3] = {0, 0, 0};
        ps.body = it->second.body;
        ps.X_point_body = compose(origin_xform(ps.xyz, rpy), it->second.X_link_body);
        ps.dof = n["dof"] ? spec_int(n["dof"], file, fmt::format("point of link '{}': 'dof'", ps.link)) : default_dof;
        if (ps.dof != 6 && ps.dof != 3) throw InputError(where(file, n["dof"]) + "dof must be 6 or 3");
        p.wrench[ps.body] = WrenchMode::Input;
        return ps;
    };
    if (p.kind == "osim") {
        const YAML::Node ops = spec["operational_points"];
        if (!ops || !ops.IsSequence() || ops.size() == 0)
            throw InputError((ops ? where(file, ops) : location(file, 1)) + "problem osim needs 'operational_points': a non-empty list of {link, point, dof}");
        if (spec["inputs"]) throw InputError(where(file, spec["inputs"]) + "'inputs' belongs to problem iwim");
        for (const YAML::Node& n : ops) p.points.push_back(read_point(n, 6));
        if (const YAML::Node l = spec["lambda"]) {
            p.lambda = spec_bool(l, file, "'lambda'");
        }
        return;
    }
    if (spec["operational_points"]) throw InputError(where(file, spec["operational_points"]) + "'operational_points' belongs to problem osim");
    const YAML::Node in = spec["inputs"];
    if (!in || !in.IsMap()) throw InputError(location(file, 1) + "problem iwim needs 'inputs': {joints: all | [names], contacts: [{link, point}]}");
    for (const auto& kv : in) {
        const std::string k = kv.first.as<std::string>();
        if (k != "joints" && k != "contacts") throw InputError(where(file, kv.first) + fmt::format("unknown key 'inputs.{}' (expected joints, contacts)", k));
    }
    if (const YAML::Node j = in["joints"]) {
        std::vector<int> bodies;
        if (j.IsScalar() && j.as<std::string>() == "all") {
            for (int b = 0; b < m.num_bodies(); ++b)
                if (m.bodies[b].nv() > 0 && m.bodies[b].type != JointType::Floating) bodies.push_back(b);
        } else {
            // (in the spec's order: column k of B is the k-th joint listed)
            if (!j.IsSequence()) throw InputError(where(file, j) + "'inputs.joints' must be all or a list of names");
            for (const YAML::Node& e : j) {
                const std::string name = spec_word(e, file, "an entry of 'inputs.joints'");
                int b = find_joint(m, name);
                if (b < 0) {
                    const bool fixed = std::any_of(m.bodies.begin(), m.bodies.end(), [&](const Body& x) { return x.joint_name == name; }) ||
                                       std::any_of(loaded.merged.begin(), loaded.merged.end(), [&](const MergedJoint& mj) { return mj.joint == name; });
                    throw InputError(where(file, e) + fmt::format(fixed ? "inputs.joints: joint '{}' is fixed: it has no torque to apply"
                                                                        : "inputs.joints: no joint named '{}'", name));
                }
                if (std::find(bodies.begin(), bodies.end(), b) != bodies.end())
                    throw InputError(where(file, e) + fmt::format("inputs.joints: joint '{}' is listed twice", name));
                bodies.push_back(b);
            }
        }
        for (int b : bodies)
            for (int k = 0; k < m.bodies[b].nv(); ++k) p.actuated.push_back(m.bodies[b].v_index + k);
    }
    if (const YAML::Node c = in["contacts"]) {
        if (!c.IsSequence()) throw InputError(where(file, c) + "inputs.contacts must be a list of {link, point}");
        for (const YAML::Node& n : c) {
            if (n.IsMap() && n["dof"])
                throw InputError(where(file, n["dof"]) + "inputs.contacts: a contact input is a point force (three columns of B, "
                                                         "its components along the link's axes); 'dof' belongs to operational points");
            p.points.push_back(read_point(n, 3));
        }
    }
    if (p.actuated.empty() && p.points.empty()) throw InputError(where(file, in) + "problem iwim needs at least one input");
}

/// What a contact problem (problem fd with `contacts:`, or impulse) allows besides its contacts:
/// known torques (zero for impulse), input or zero external wrenches (zero for impulse), no
/// sensors; `damping` and `restitution`. A contact set is singular where the robot cannot move its
/// contact frames independently (straight legs: the special configurations), which is physics, not
/// a defect of the problem: the solver refuses such states (NELU_STATUS_SMALL_PIVOT) and the
/// compiler validates its pivots away from them, unless the spec says
/// `allow_singular_configurations: false`.
void read_contact_problem(const YAML::Node& spec, const std::string& file, const Model& m, Problem& p) {
    if (spec["damping"]) {
        if (p.contacts.empty()) throw InputError(where(file, spec["damping"]) + "'damping' needs 'contacts:'");
        p.damping = spec_number(spec["damping"], file, "'damping'", 0, 1e12);
    }
    if (spec["restitution"]) {
        if (!p.impulse()) throw InputError(where(file, spec["restitution"]) + "'restitution' belongs to problem impulse");
        p.restitution = spec_number(spec["restitution"], file, "'restitution'", 0, 1);
    }
    if (p.impulse() && p.contacts.empty()) throw InputError(where(file, spec["problem"]) + "problem impulse needs 'contacts:'");
    if (p.contacts.empty()) return;
    const YAML::Node at = spec["contacts"];
    if (!p.sensors.empty())
        throw InputError(p.sensors[0].where + fmt::format("sensor '{}' and contact '{}': sensors and 'contacts:' in one problem are not "
                                                          "supported yet; a rigid contact without contacts: is an unknown external wrench "
                                                          "with a zero link_acceleration", p.sensors[0].name, p.contacts[0].contact.name));
    for (int i = 0; i < m.num_bodies(); ++i) {
        if (p.joint[i] != JointKnown::Tau && m.bodies[i].nv() > 0)
            throw InputError(where(file, spec["joints"]) + fmt::format("joint '{}': a problem with contacts knows every joint torque "
                                                                       "(its accelerations are sought)", m.bodies[i].joint_name));
        if (p.wrench[i] == WrenchMode::Unknown)
            throw InputError(where(file, spec["external_wrenches"]) + fmt::format("link '{}': unknown external wrenches and 'contacts:' in one "
                                                                                  "problem are not supported yet", m.bodies[i].name));
    }
    for (const LinkWrench& w : p.link_wrenches)
        if (w.mode == WrenchMode::Unknown)
            throw InputError(where(file, spec["external_wrenches"]) + fmt::format("link '{}': unknown external wrenches and 'contacts:' in one "
                                                                                  "problem are not supported yet", w.link));
    if (p.impulse()) {  // no torque and no external wrench acts during an impact
        if (spec["joints"]) throw InputError(where(file, spec["joints"]) + "'joints' does not apply to problem impulse (no torque impulse)");
        if (spec["external_wrenches"])
            throw InputError(where(file, spec["external_wrenches"]) + "'external_wrenches' does not apply to problem impulse (only the contacts' impulses act)");
        std::fill(p.wrench.begin(), p.wrench.end(), WrenchMode::Zero);
        p.link_wrenches.clear();
    }
    if (!spec["allow_singular_configurations"]) {
        p.allow_special_singularities = true;
        p.default_allow_note = where(file, at) + "contacts: the contact set is singular at a special configuration (allowed by default "
                                                 "with contacts): the solver returns NELU_STATUS_SMALL_PIVOT near it; "
                                                 "'allow_singular_configurations: false' makes that an error";
    }
}

}  // namespace

bool spec_requests_floating_base(const ProblemInput& in) {
    if (is_preset(in.problem)) return in.floating_base;
    YAML::Node spec = load_spec(in.problem);
    if (!spec.IsMap() || !spec["floating_base"]) return in.floating_base;
    const bool floating = spec_bool(spec["floating_base"], in.problem, "'floating_base'");
    if (in.floating_base && !floating)  // (the spec says so explicitly: the two cannot both hold)
        throw InputError(where(in.problem, spec["floating_base"]) +
                         "'floating_base: false' contradicts --floating-base: remove one of them");
    return floating || in.floating_base;
}

std::vector<std::string> sensor_joints(const ProblemInput& in, const std::string& urdf_path) {
    if (is_preset(in.problem)) return {};
    try {
        YAML::Node spec = load_spec(in.problem);
        if (!spec.IsMap()) return {};
        std::vector<std::string> joints;
        std::vector<SensorDecl> decls = selected_urdf_sensors(spec["urdf_sensors"], in.problem, urdf_path);
        for (const SensorDecl& d : yaml_sensor_decls(spec["sensors"], in.problem)) decls.push_back(d);
        std::set<std::string> fixed;  // only fixed joints need keeping (movable ones are boundaries anyway)
        tinyxml2::XMLDocument doc;
        if (doc.LoadFile(urdf_path.c_str()) == tinyxml2::XML_SUCCESS)
            if (const auto* robot = doc.FirstChildElement("robot"))
                for (const auto* j = robot->FirstChildElement("joint"); j; j = j->NextSiblingElement("joint"))
                    if (j->Attribute("name") && j->Attribute("type") && std::string(j->Attribute("type")) == "fixed") fixed.insert(j->Attribute("name"));
        for (const SensorDecl& d : decls)
            if (d.type == "force_torque" && fixed.count(d.joint)) joints.push_back(d.joint);
        return joints;
    } catch (const YAML::Exception& e) {
        throw InputError(fmt::format("{}{}", location(in.problem, e.mark.line + 1), e.msg));
    }
}

const char* measurement_unit(const Sensor& s, const Model& m, int comp) {
    switch (s.type) {
        case SensorType::ForceTorque:
        case SensorType::ContactWrench: return comp < 3 ? "N m" : "N";
        case SensorType::Accelerometer: return "m/s^2";
        case SensorType::LinkAcceleration: return comp < 3 ? "rad/s^2" : "m/s^2";
        case SensorType::JointTorque:
        case SensorType::JointAcceleration: {
            const Body& b = m.bodies[static_cast<std::size_t>(s.body)];
            const bool linear = b.type == JointType::Prismatic || (b.type == JointType::Floating && comp >= 3);
            if (s.type == SensorType::JointTorque) return linear ? "N" : "N m";
            return linear ? "m/s^2" : "rad/s^2";
        }
    }
    return "";
}

const char* sensor_type_name(SensorType t) {
    switch (t) {
        case SensorType::ForceTorque: return "force_torque";
        case SensorType::ContactWrench: return "contact_wrench";
        case SensorType::Accelerometer: return "accelerometer";
        case SensorType::JointTorque: return "joint_torque";
        case SensorType::JointAcceleration: return "joint_acceleration";
        case SensorType::LinkAcceleration: return "link_acceleration";
    }
    return "?";
}

bool Problem::classical() const {
    if (!sensors.empty() || !contacts.empty()) return false;
    for (JointKnown j : joint)
        if (j == JointKnown::None || j == JointKnown::Both) return false;
    for (WrenchMode w : wrench)
        if (w == WrenchMode::Unknown) return false;
    for (const LinkWrench& w : link_wrenches)
        if (w.mode == WrenchMode::Unknown) return false;
    return true;
}

static Problem read_problem(const ProblemInput& in, const LoadResult& loaded);

Problem run_problem(const ProblemInput& in, const LoadResult& loaded) {
    try {
        return read_problem(in, loaded);
    } catch (const YAML::Exception& e) {  // a value of the wrong type, for instance
        throw InputError(fmt::format("{}{}", location(in.problem, e.mark.line + 1), e.msg));
    }
}

Problem run_problem(const ProblemInput& in, const Model& model) {
    LoadResult l;
    l.model = model;
    for (int i = 0; i < model.num_bodies(); ++i) l.links[model.bodies[i].name] = {i, identity_xform<double>()};
    return run_problem(in, l);
}

static Problem read_problem(const ProblemInput& in, const LoadResult& loaded) {
    const Model& model = loaded.model;
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
    static const std::set<std::string> keys{"version", "name", "problem", "floating_base", "gravity", "joints",
                                            "external_wrenches", "urdf_sensors", "sensors", "outputs",
                                            "allow_singular_configurations", "inputs", "operational_points", "lambda",
                                            "contacts", "damping", "restitution"};
    for (const auto& kv : spec)
        if (!keys.count(kv.first.as<std::string>()))
            throw InputError(where(file, kv.first) + fmt::format("unknown key '{}'", kv.first.as<std::string>()));
    const int version = spec["version"] ? spec_int(spec["version"], file, "'version'") : 1;
    if (version != 1 && version != 2)
        throw InputError(where(file, spec["version"]) + "unsupported spec version (this nelu reads versions 1 and 2)");
    for (const char* k : {"urdf_sensors", "sensors", "outputs", "allow_singular_configurations", "inputs", "operational_points", "lambda",
                          "contacts", "damping", "restitution"})
        if (spec[k] && version < 2) throw InputError(where(file, spec[k]) + fmt::format("'{}' needs 'version: 2'", k));
    p.kind = spec["problem"] ? spec_word(spec["problem"], file, "'problem'") : "hybrid";
    if (!is_kind(p.kind)) throw InputError(where(file, spec["problem"]) + "'problem' must be id, fd, hybrid, osim, iwim or impulse");
    if ((p.kind == "osim" || p.kind == "iwim" || p.kind == "impulse") && version < 2)
        throw InputError(where(file, spec["problem"]) + fmt::format("problem '{}' needs 'version: 2'", p.kind));
    p.spec_file = file;
    p.joint.assign(nb, p.kind == "id" ? JointKnown::Qdd : JointKnown::Tau);
    if (spec["gravity"]) spec_numbers(spec["gravity"], file, "'gravity' must be [gx, gy, gz]", "'gravity'", 3, p.gravity.l.x);
    read_joints(spec["joints"], file, model, p);
    couple_joint_modes(model, p);
    read_wrenches(spec["external_wrenches"], file, loaded, p);
    if (version < 2)
        for (JointKnown& j : p.joint)
            if (j == JointKnown::None || j == JointKnown::Both)
                throw InputError(where(file, spec["joints"]) + "joints 'unknown' and 'both' need 'version: 2'");
    std::vector<std::string> skipped;
    std::vector<SensorDecl> decls = selected_urdf_sensors(spec["urdf_sensors"], file, loaded.source, &skipped);
    for (std::string& note : skipped) p.notes.push_back(std::move(note));
    for (const SensorDecl& d : yaml_sensor_decls(spec["sensors"], file)) decls.push_back(d);
    std::set<std::string> names;
    for (const SensorDecl& d : decls) {
        if (!names.insert(d.name).second) throw InputError(d.where + fmt::format("a second sensor named '{}'", d.name));
        if (d.type == "gyroscope") {
            p.notes.push_back(d.where + fmt::format("gyroscope '{}' measures a velocity, which is an input (qd); it does not enter the dynamic system", d.name));
            continue;
        }
        p.sensors.push_back(resolve(d, loaded, p));
    }
    read_contacts(spec["contacts"], file, loaded, p);
    read_contact_problem(spec, file, model, p);
    read_outputs(spec["outputs"], file, p);
    if (spec["lambda"] && p.kind != "osim") throw InputError(where(file, spec["lambda"]) + "'lambda' belongs to problem osim");
    if (p.response_kind() && has_mimics(model))
        throw InputError(where(file, spec["problem"]) + fmt::format("problem {} is not supported yet on a robot with mimic joints "
                                                                   "(here '{}'); compile with --ignore-mimic to treat them as independent joints",
                                                                   p.kind, loaded.mimics.empty() ? std::string() : loaded.mimics[0].joint));
    if (p.response_kind()) read_response_problem(spec, file, loaded, p);
    if (spec["allow_singular_configurations"]) p.allow_special_singularities = spec_bool(spec["allow_singular_configurations"], file, "'allow_singular_configurations'");
    return p;
}

}  // namespace nelu
