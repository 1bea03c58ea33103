// load.cpp: URDF -> Model (see load.hpp).
//
// Two readers cooperate: tinyxml2 checks the XML and the tree structure first, so that every
// structural error names its line; urdfdom then reads the values, and its messages are captured
// rather than printed. The model is built by a depth-first walk in document order.
#include "load.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>

#include <Eigen/Eigenvalues>
#include <console_bridge/console.h>
#include <fmt/format.h>
#include <tinyxml2.h>
#include <urdf_parser/urdf_parser.h>

#include "diagnostics.hpp"
#include "io.hpp"
#include "numeric.hpp"

namespace nelu {
namespace {

// ---------------------------------------------------------------------------------------------
// Structural pre-pass (tinyxml2)

struct XmlJoint {
    std::string name, type, parent, child;
    int line = 0;
};

struct XmlTree {
    std::vector<std::string> links;  // document order
    std::vector<XmlJoint> joints;    // document order
    std::map<std::string, int> link_line, joint_line;
    std::string root;
};

/// Attribute `name` of `e`, or an InputError naming the element.
std::string required_attribute(const tinyxml2::XMLElement* e, const char* name, const std::string& src) {
    const char* v = e->Attribute(name);
    if (!v || !*v)
        throw InputError(fmt::format("{}<{}> has no '{}' attribute", location(src, e->GetLineNum()),
                                     e->Name(), name));
    return v;
}

/// The name of `e` (<robot>, <link>, <joint>): an attribute it must have when `required`, and one
/// nelu can write into the generated code's comments (refuse_unwritable_name).
std::string element_name(const tinyxml2::XMLElement* e, const std::string& src, bool required = true) {
    const std::string name = required || e->Attribute("name") ? required_attribute(e, "name", src) : std::string();
    refuse_unwritable_name(location(src, e->GetLineNum()), name, fmt::format("<{} name=\"", e->Name()), "\">");
    return name;
}

/// The `link` attribute of the child element `tag` (<parent>, <child>) of joint `j`.
std::string joint_link(const tinyxml2::XMLElement* j, const char* tag, const std::string& jname,
                       const std::string& src) {
    const tinyxml2::XMLElement* e = j->FirstChildElement(tag);
    if (!e)
        throw InputError(fmt::format("{}joint '{}' has no <{}> element", location(src, j->GetLineNum()),
                                     jname, tag));
    const char* v = e->Attribute("link");
    if (!v || !*v)
        throw InputError(fmt::format("{}joint '{}': <{}> has no 'link' attribute",
                                     location(src, e->GetLineNum()), jname, tag));
    return v;
}

/// Links and joints with their lines; duplicate names and dangling references are errors.
XmlTree scan_xml(const std::string& xml, const std::string& src) {
    tinyxml2::XMLDocument doc;
    if (doc.Parse(xml.data(), xml.size()) != tinyxml2::XML_SUCCESS)
        throw InputError(fmt::format("{}malformed XML: {}", location(src, doc.ErrorLineNum()),
                                     doc.ErrorStr() ? doc.ErrorStr() : "parse error"));
    const tinyxml2::XMLElement* robot = doc.RootElement();
    if (!robot || std::string(robot->Name()) != "robot")
        throw InputError(fmt::format("{}the root element is not <robot>",
                                     location(src, robot ? robot->GetLineNum() : 0)));
    element_name(robot, src, /*required=*/false);
    XmlTree t;
    for (auto* e = robot->FirstChildElement("link"); e; e = e->NextSiblingElement("link")) {
        std::string name = element_name(e, src);
        if (!t.link_line.emplace(name, e->GetLineNum()).second)
            throw InputError(fmt::format("{}link '{}' is defined twice (first at line {})",
                                         location(src, e->GetLineNum()), name, t.link_line[name]));
        t.links.push_back(name);
        if (const auto* first = e->FirstChildElement("inertial"))  // (urdfdom reads the first and drops the others)
            if (const auto* second = first->NextSiblingElement("inertial"))
                throw InputError(fmt::format("{}link '{}' has a second <inertial> (the first at line {}); a link has one",
                                             location(src, second->GetLineNum()), name, first->GetLineNum()));
    }
    if (t.links.empty()) throw InputError(fmt::format("{}the robot has no <link>", location(src, robot->GetLineNum())));
    for (auto* e = robot->FirstChildElement("joint"); e; e = e->NextSiblingElement("joint")) {
        XmlJoint j;
        j.name = element_name(e, src);
        j.type = required_attribute(e, "type", src);
        j.line = e->GetLineNum();
        j.parent = joint_link(e, "parent", j.name, src);
        j.child = joint_link(e, "child", j.name, src);
        if (!t.joint_line.emplace(j.name, j.line).second)
            throw InputError(fmt::format("{}joint '{}' is defined twice (first at line {})",
                                         location(src, j.line), j.name, t.joint_line[j.name]));
        for (const std::string* l : {&j.parent, &j.child})
            if (!t.link_line.count(*l))
                throw InputError(fmt::format("{}joint '{}': {} link '{}' is not defined", location(src, j.line),
                                             j.name, l == &j.parent ? "parent" : "child", *l));
        t.joints.push_back(j);
    }
    return t;
}

/// One root, one parent joint per link, no cycles; sets t.root.
void check_tree(XmlTree& t, const std::string& src) {
    std::map<std::string, const XmlJoint*> parent_joint;
    for (const XmlJoint& j : t.joints) {
        if (j.child == j.parent)
            throw InputError(fmt::format("{}joint '{}' has link '{}' as both its parent and its child", location(src, j.line), j.name, j.child));
        auto [it, fresh] = parent_joint.emplace(j.child, &j);
        if (!fresh)
            throw InputError(fmt::format("{}link '{}' has two parent joints: '{}' (line {}) and '{}'",
                                         location(src, j.line), j.child, it->second->name,
                                         it->second->line, j.name));
    }
    std::vector<std::string> roots;
    for (const std::string& l : t.links)
        if (!parent_joint.count(l)) roots.push_back(l);
    if (roots.size() > 1) {
        std::string list;
        for (const std::string& r : roots) list += fmt::format("{}'{}' (line {})", list.empty() ? "" : ", ", r, t.link_line[r]);
        throw InputError(fmt::format("{}several root links (links without a parent joint): {}; a robot is one tree",
                                     location(src, 0), list));
    }
    // With one parent per link, a link not reachable from the root lies on a cycle.
    std::set<std::string> reached;
    if (!roots.empty()) {
        std::vector<std::string> stack{roots[0]};
        while (!stack.empty()) {
            std::string l = stack.back();
            stack.pop_back();
            reached.insert(l);
            for (const XmlJoint& j : t.joints)
                if (j.parent == l && !reached.count(j.child)) stack.push_back(j.child);
        }
    }
    for (const XmlJoint& j : t.joints)
        if (!reached.count(j.child))
            throw InputError(fmt::format("{}joint '{}' closes a kinematic loop (link '{}' is on a cycle{})",
                                         location(src, j.line), j.name, j.child,
                                         roots.empty() ? ", and no link is a root" : ""));
    t.root = roots[0];
}

// ---------------------------------------------------------------------------------------------
// urdfdom with captured messages

class CaptureOutput : public console_bridge::OutputHandler {
  public:
    std::string text;
    void log(const std::string& msg, console_bridge::LogLevel level, const char*, int) override {
        if (level >= console_bridge::CONSOLE_BRIDGE_LOG_ERROR) text += (text.empty() ? "" : "; ") + msg;
    }
};

/// Line of the first link or joint a urdfdom message names ("Link [x]", "joint [x]"), or 0.
int urdfdom_line(const std::string& msg, const XmlTree& t) {
    std::size_t best = std::string::npos;
    int line = 0;
    for (const char* key : {"Link [", "link [", "Joint [", "joint ["}) {
        const auto& lines = key[0] == 'L' || key[0] == 'l' ? t.link_line : t.joint_line;
        for (std::size_t p = msg.find(key); p != std::string::npos && p < best; p = msg.find(key, p + 1)) {
            std::size_t b = p + std::strlen(key), e = msg.find(']', b);
            auto it = e == std::string::npos ? lines.end() : lines.find(msg.substr(b, e - b));
            if (it != lines.end()) best = p, line = it->second;
        }
    }
    return line;
}

// ---------------------------------------------------------------------------------------------
// --snap: idealization of the URDF's values, reported value by value

/// The numbers of a space-separated attribute, or nothing when it does not parse (urdfdom then
/// reports it).
std::vector<double> numbers(const char* text) {
    std::vector<double> v;
    if (!text) return v;
    const char* p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') ++p;
        if (!*p) return v;
        char* end = nullptr;
        const double x = std::strtod(p, &end);
        if (end == p) return {};
        v.push_back(x), p = end;
    }
}

struct Snapper {
    double tol;
    const std::string& src;
    std::vector<SnapChange>& changes;

    /// Replaces attribute `attr` of `e` by `snapped` where a component changed, and records it.
    void rewrite(tinyxml2::XMLElement* e, const char* attr, const std::vector<double>& before,
                 const std::vector<double>& after, const std::string& element, const std::string& field) {
        bool changed = false;
        for (std::size_t k = 0; k < before.size(); ++k)
            if (after[k] != before[k]) {
                changes.push_back({e->GetLineNum(), element, field, before.size() > 1 ? static_cast<int>(k) : -1, before[k], after[k]});
                changed = true;
            }
        if (!changed) return;
        std::string text;
        for (double x : after) text += fmt::format("{}{:.17g}", text.empty() ? "" : " ", x);
        e->SetAttribute(attr, text.c_str());
    }
    /// xyz within tol of 0 (metres); rpy within tol of a multiple of pi/2.
    void origin(tinyxml2::XMLElement* o, const std::string& element, const std::string& prefix) {
        if (!o) return;
        std::vector<double> xyz = numbers(o->Attribute("xyz")), rpy = numbers(o->Attribute("rpy"));
        if (xyz.size() == 3) {
            std::vector<double> to = xyz;
            for (double& x : to) x = std::abs(x) < tol ? 0.0 : x;
            rewrite(o, "xyz", xyz, to, element, prefix + "origin xyz");
        }
        if (rpy.size() == 3) {
            std::vector<double> to = rpy;
            for (double& a : to) {
                const double k = std::round(a / (M_PI / 2));
                if (std::abs(a - k * (M_PI / 2)) < tol) a = k == 0 ? 0.0 : k * (M_PI / 2);
            }
            rewrite(o, "rpy", rpy, to, element, prefix + "origin rpy");
        }
    }
    /// Axis components within tol (relative to its length) of 0.
    void axis(tinyxml2::XMLElement* a, const std::string& element) {
        if (!a) return;
        std::vector<double> u = numbers(a->Attribute("xyz"));
        if (u.size() != 3) return;
        const double n = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        std::vector<double> to = u;
        for (double& x : to) x = std::abs(x) < tol * n ? 0.0 : x;
        rewrite(a, "xyz", u, to, element, "axis");
    }
    /// Products of inertia within tol (relative to the largest moment) of 0.
    void inertia(tinyxml2::XMLElement* in, const std::string& element) {
        if (!in) return;
        double largest = 0;
        for (const char* d : {"ixx", "iyy", "izz"}) largest = std::max(largest, std::abs(in->DoubleAttribute(d, 0.0)));
        for (const char* o : {"ixy", "ixz", "iyz"}) {
            const std::vector<double> v = numbers(in->Attribute(o));
            if (v.size() == 1) rewrite(in, o, v, {std::abs(v[0]) < tol * largest ? 0.0 : v[0]}, element, std::string("inertia ") + o);
        }
    }
    void run(tinyxml2::XMLElement* robot) {
        for (auto* j = robot->FirstChildElement("joint"); j; j = j->NextSiblingElement("joint")) {
            const std::string element = fmt::format("joint '{}'", j->Attribute("name"));
            origin(j->FirstChildElement("origin"), element, "");
            axis(j->FirstChildElement("axis"), element);
        }
        for (auto* l = robot->FirstChildElement("link"); l; l = l->NextSiblingElement("link")) {
            auto* inertial = l->FirstChildElement("inertial");
            if (!inertial) continue;
            const std::string element = fmt::format("link '{}'", l->Attribute("name"));
            origin(inertial->FirstChildElement("origin"), element, "inertial ");
            inertia(inertial->FirstChildElement("inertia"), element);
        }
    }
};

/// The <robot> element as tinyxml2 read it, printed back: urdfdom's own XML reader (TinyXML 1 on
/// Debian) then sees exactly the tree that the structural checks passed, whatever declarations,
/// entities or encodings the file had (the fuzzer found inputs the two readers disagree on). With
/// `snap` > 0 the values are idealized first (LoadOptions::snap), each change recorded.
/// urdfdom 3.0 builds some error messages from the attribute values it failed to read and passes
/// them to console_bridge as printf formats: a '%' there is read as a conversion ("%0999999999d"
/// pads for seconds; the fuzzer found it). A '%' belongs to no URDF value but a file name (a
/// URL-escaped mesh path), so any other attribute with one is refused here, before urdfdom.
void refuse_percent(const tinyxml2::XMLElement* e, const std::string& src) {
    for (const tinyxml2::XMLAttribute* a = e->FirstAttribute(); a; a = a->Next())
        if (std::string(a->Name()) != "filename" && std::string(a->Value()).find('%') != std::string::npos)
            throw InputError(fmt::format("{}<{}> attribute '{}' contains '%': not a URDF value", location(src, e->GetLineNum()),
                                         e->Name(), a->Name()));
    for (const tinyxml2::XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) refuse_percent(c, src);
}

std::string canonical_xml(const std::string& xml, double snap, const std::string& src, std::vector<SnapChange>& changes) {
    tinyxml2::XMLDocument doc;
    doc.Parse(xml.data(), xml.size());  // parsed without error by scan_xml already
    refuse_percent(doc.RootElement(), src);
    if (snap > 0) Snapper{snap, src, changes}.run(doc.RootElement());
    tinyxml2::XMLPrinter printer;
    doc.RootElement()->Accept(&printer);
    return printer.CStr();
}

/// urdfdom's links own their children through shared pointers, so a model that urdfdom read with
/// a cycle (which nelu then rejects) would never be freed. Break that ownership before release.
void release(urdf::ModelInterface& m) {
    for (auto& entry : m.links_)
        if (entry.second) entry.second->child_links.clear(), entry.second->child_joints.clear(), entry.second->parent_joint.reset();
}

/// Releases a urdfdom model, cycles included, when it goes out of scope.
struct UrdfModelGuard {
    urdf::ModelInterfaceSharedPtr model;
    ~UrdfModelGuard() {
        if (model) release(*model);
    }
};

/// urdfdom's model; any error it logs is an InputError (urdfdom 3.0 logs some errors, such as a
/// mass "nan", and still returns a model with the value left at 0).
urdf::ModelInterfaceSharedPtr parse_with_urdfdom(const std::string& xml, const std::string& src, const XmlTree& t) {
    static std::mutex mutex;  // console_bridge's output handler is process-wide
    std::lock_guard<std::mutex> lock(mutex);
    CaptureOutput capture;
    console_bridge::useOutputHandler(&capture);
    urdf::ModelInterfaceSharedPtr m;
    try {
        m = urdf::parseURDF(xml);
    } catch (const std::exception& e) {
        capture.text += (capture.text.empty() ? "" : "; ") + std::string(e.what());
        m.reset();
    }
    console_bridge::restorePreviousOutputHandler();
    if (m && !capture.text.empty()) release(*m);
    if (!m || !capture.text.empty())
        throw InputError(fmt::format("{}invalid URDF: {}", location(src, urdfdom_line(capture.text, t)),
                                     capture.text.empty() ? "urdfdom rejected the model" : capture.text));
    return m;
}

/// urdfdom reads the XML with its own parser (TinyXML 1 on Debian), which decodes some text
/// differently from tinyxml2 (an unknown entity such as "a&b" loses its '&'). The model is walked
/// over the pre-pass tree and its values looked up in urdfdom's model by name, so both must see the
/// same links and joints with the same parent and child.
void check_same_tree(const urdf::ModelInterface& um, const XmlTree& t, const std::string& src) {
    auto disagree = [&](int line, const std::string& what) {
        return InputError(fmt::format("{}{} is read differently by the XML parsers (tinyxml2 and urdfdom); "
                                      "avoid entity references and unusual characters in names",
                                      location(src, line), what));
    };
    for (const std::string& l : t.links)
        if (!um.getLink(l)) throw disagree(t.link_line.at(l), "link '" + l + "'");
    for (const XmlJoint& xj : t.joints) {
        auto j = um.getJoint(xj.name);
        if (!j || j->parent_link_name != xj.parent || j->child_link_name != xj.child)
            throw disagree(xj.line, "joint '" + xj.name + "'");
    }
    if (um.links_.size() != t.links.size() || um.joints_.size() != t.joints.size())
        throw disagree(0, "the set of links and joints");
}

// ---------------------------------------------------------------------------------------------
// Values

bool finite3(double a, double b, double c) { return std::isfinite(a) && std::isfinite(b) && std::isfinite(c); }

/// `v` with rounding noise removed: URDF angles such as pi/2 (rpy="1.5707963267949") give sines and
/// cosines of 1e-17 that are zeros of the robot's structure, not data. Values within 1e-14 of 0 or
/// +-1 snap to them, so that the model (and every algorithm run on it) sees the exact structure.
double snap(double v) { return snap_unit(v, 1e-14); }

/// Rotation matrix of a URDF quaternion, snapped (see snap).
Mat3<double> rotation_of(const urdf::Rotation& q) {
    Mat3<double> R = quat_to_rotation(q.x, q.y, q.z, q.w);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) R(i, j) = snap(R(i, j));
    return R;
}

/// The Pluecker transform from the parent frame to the frame at `pose` (URDF origin: the pose of
/// the new frame in the parent frame).
Xform<double> pose_to_xform(const urdf::Pose& p) {
    Mat3<double> R = rotation_of(p.rotation);
    return {transpose(R), {{snap(p.position.x), snap(p.position.y), snap(p.position.z)}}};
}

bool finite_pose(const urdf::Pose& p) {
    return finite3(p.position.x, p.position.y, p.position.z) &&
           finite3(p.rotation.x, p.rotation.y, p.rotation.z) && std::isfinite(p.rotation.w);
}

struct Context {
    const std::string& src;
    LoadResult& out;
    std::map<std::string, std::array<double, 3>>& out_link_moments;  ///< principal moments of each link's inertia
    int link_line(const std::string& l) const { auto it = out.link_line.find(l); return it == out.link_line.end() ? 0 : it->second; }
    int joint_line(const std::string& j) const { auto it = out.joint_line.find(j); return it == out.joint_line.end() ? 0 : it->second; }
    void warn(int line, const std::string& msg) const { out.warnings.push_back(location(src, line) + msg); }
};

/// The largest mass (kg) and inertia entry (kg m^2) a link may have.
constexpr double kMaxInertial = 1e18;

/// Spatial inertia of a link in its own frame; errors and warnings name the link.
Inertia<double> link_inertia(const urdf::Link& link, const Context& cx) {
    Inertia<double> zero{0, zero3<double>(), zero_mat3<double>()};
    if (!link.inertial) return zero;
    const urdf::Inertial& in = *link.inertial;
    const int line = cx.link_line(link.name);
    const std::string where = location(cx.src, line) + "link '" + link.name + "': ";
    if (!std::isfinite(in.mass) || !finite3(in.ixx, in.ixy, in.ixz) || !finite3(in.iyy, in.iyz, in.izz) ||
        !finite_pose(in.origin))
        throw InputError(where + "non-finite inertial value");
    if (in.mass < 0) throw InputError(where + fmt::format("negative mass {}", in.mass));
    // Products of two masses (or moments) must stay finite in the solvers' arithmetic: float's range
    // ends at 3.4e38, so 1.8e19 is about the largest whose square it holds; a robot is far below.
    const double largest_moment = std::max({std::abs(in.ixx), std::abs(in.iyy), std::abs(in.izz), std::abs(in.ixy), std::abs(in.ixz), std::abs(in.iyz)});
    if (in.mass > kMaxInertial || largest_moment > kMaxInertial)
        throw InputError(where + fmt::format("{} is above {:g}: products of two such values overflow the solvers' float arithmetic "
                                             "(and double's above 1e154); give masses in kg and inertias in kg m^2",
                                             in.mass > kMaxInertial ? fmt::format("mass {:g} kg", in.mass)
                                                                    : fmt::format("inertia entry {:g} kg m^2", largest_moment),
                                             kMaxInertial));
    if (in.mass == 0 && (in.ixx != 0 || in.iyy != 0 || in.izz != 0 || in.ixy != 0 || in.ixz != 0 || in.iyz != 0))
        cx.warn(line, fmt::format("link '{}': mass 0 with a rotational inertia (no body without mass has one); loaded as is", link.name));
    Eigen::Matrix3d Iin;
    Iin << in.ixx, in.ixy, in.ixz, in.ixy, in.iyy, in.iyz, in.ixz, in.iyz, in.izz;
    Eigen::Vector3d lam = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(Iin, Eigen::EigenvaluesOnly).eigenvalues();
    // Negative principal moments are judged on the bodies, after fixed links are merged
    // (check_body_inertias): a defect of a tiny link can vanish in its body.
    cx.out_link_moments[link.name] = {lam(0), lam(1), lam(2)};
    const double tol = 1e-6 * std::max(std::abs(lam(0)), std::abs(lam(2))) + 1e-12;
    if (lam(0) >= -tol && lam(0) + lam(1) < lam(2) - tol)
        cx.warn(line, fmt::format("link '{}': principal moments {:.6g}, {:.6g}, {:.6g} violate the triangle "
                                  "inequality (no rigid body has them); loaded as is", link.name, lam(0), lam(1), lam(2)));
    Mat3<double> R = rotation_of(in.origin.rotation);
    Mat3<double> Ii{{{in.ixx, in.ixy, in.ixz}, {in.ixy, in.iyy, in.iyz}, {in.ixz, in.iyz, in.izz}}};
    Mat3<double> Ic = R * Ii * transpose(R);
    for (int i = 0; i < 3; ++i)  // symmetric exactly, not up to rounding
        for (int j = 0; j < i; ++j) Ic(i, j) = Ic(j, i);
    Vec3<double> c{{in.origin.position.x, in.origin.position.y, in.origin.position.z}};
    return inertia_from_com(in.mass, c, Ic);
}

/// Joint type and unit axis of a movable joint; errors name the joint.
void read_joint(const urdf::Joint& j, Body& b, const Context& cx) {
    const int line = cx.joint_line(j.name);
    const std::string where = location(cx.src, line) + "joint '" + j.name + "': ";
    switch (j.type) {
        case urdf::Joint::REVOLUTE: b.type = JointType::Revolute; break;
        case urdf::Joint::CONTINUOUS: b.type = JointType::Revolute, b.continuous = true; break;
        case urdf::Joint::PRISMATIC: b.type = JointType::Prismatic; break;
        case urdf::Joint::FLOATING: b.type = JointType::Floating; break;
        case urdf::Joint::FIXED: b.type = JointType::Fixed; break;
        case urdf::Joint::PLANAR: throw InputError(where + "planar joints are not supported yet");
        default: throw InputError(where + "unknown joint type");
    }
    if (!finite_pose(j.parent_to_joint_origin_transform)) throw InputError(where + "non-finite <origin>");
    if (b.type == JointType::Revolute || b.type == JointType::Prismatic) {
        const urdf::Vector3& a = j.axis;
        if (!finite3(a.x, a.y, a.z)) throw InputError(where + "non-finite <axis>");
        const double big = std::max({std::abs(a.x), std::abs(a.y), std::abs(a.z)});
        if (big == 0) throw InputError(where + "<axis> is zero");
        // an axis given at a scale whose squares overflow (1e300) or underflow (1e-300) is scaled by
        // its largest component first; any other is normalized as given (the same bits as always)
        const double scale = big > 1e150 || big < 1e-150 ? big : 1.0;
        const double x = a.x / scale, y = a.y / scale, z = a.z / scale, s = std::sqrt(x * x + y * y + z * z);
        const double n = scale * s;
        if (std::abs(n - 1) > 1e-6) cx.warn(line, fmt::format("joint '{}': axis has norm {:.6g}; normalized", j.name, n));
        b.axis = {{x / s, y / s, z / s}};
        if (j.limits && !b.continuous) {
            b.lower = j.limits->lower, b.upper = j.limits->upper;
            if (!std::isfinite(b.lower) || !std::isfinite(b.upper) || b.lower > b.upper)
                throw InputError(where + fmt::format("invalid limits [{}, {}]", b.lower, b.upper));
            b.has_limits = b.lower < b.upper;  // lower == upper (often 0 0) says nothing about the range
        }
    }
    if (j.mimic)  // recorded as written; resolve_mimics checks and resolves it once the tree is built
        cx.out.mimics.push_back({j.name, j.mimic->joint_name, j.mimic->joint_name, j.mimic->multiplier, j.mimic->offset});
}

// ---------------------------------------------------------------------------------------------
// Tree walk

struct Pending {
    std::string link;
    LinkFrame frame;
};

/// Body for the root link: the world (fixed base) or body 0 on a 6-DoF joint.
LinkFrame add_root(const urdf::ModelInterface& um, const std::string& root, bool floating, const Context& cx) {
    if (!floating) return {-1, identity_xform<double>()};
    Body b;
    b.name = root, b.joint_name = "root_joint", b.type = JointType::Floating, b.parent = -1;
    b.I = link_inertia(*um.getLink(root), cx);
    cx.out.model.bodies.push_back(b);
    return {0, identity_xform<double>()};
}

/// Attach link `child` across joint `j` to the body of `parent`: a new body, or merged.
LinkFrame attach(const urdf::ModelInterface& um, const urdf::Joint& j, const LinkFrame& parent,
                 const std::set<std::string>& keep_fixed, const Context& cx) {
    Model& m = cx.out.model;
    Body b;
    read_joint(j, b, cx);
    Inertia<double> I = link_inertia(*um.getLink(j.child_link_name), cx);
    Xform<double> X = compose(pose_to_xform(j.parent_to_joint_origin_transform), parent.X_link_body);
    if (b.type == JointType::Fixed && !keep_fixed.count(j.name)) {
        if (parent.body >= 0) m.bodies[parent.body].I = m.bodies[parent.body].I + transform_to_parent(X, I);
        cx.out.merged.push_back({j.name, j.child_link_name,
                                 parent.body >= 0 ? m.bodies[parent.body].name : std::string("world")});
        return {parent.body, X};
    }
    b.name = j.child_link_name, b.joint_name = j.name, b.parent = parent.body, b.X_tree = X, b.I = I;
    m.bodies.push_back(b);
    return {m.num_bodies() - 1, identity_xform<double>()};
}

void build_model(const urdf::ModelInterface& um, const XmlTree& t, const LoadOptions& opt, const Context& cx) {
    std::set<std::string> keep(opt.keep_fixed.begin(), opt.keep_fixed.end());
    for (const std::string& k : keep) {
        auto j = um.getJoint(k);
        if (!j) throw InputError(location(cx.src, 0) + "--keep-fixed: no joint named '" + k + "'");
        if (j->type != urdf::Joint::FIXED)
            throw InputError(location(cx.src, cx.joint_line(k)) + "joint '" + k + "' is not fixed; only fixed joints can be kept");
    }
    std::map<std::string, std::vector<const XmlJoint*>> children;
    for (const XmlJoint& j : t.joints) children[j.parent].push_back(&j);
    std::vector<Pending> stack{{t.root, add_root(um, t.root, opt.floating_base, cx)}};
    while (!stack.empty()) {  // depth first, children in document order
        Pending p = stack.back();
        stack.pop_back();
        cx.out.links[p.link] = p.frame;
        const auto& ch = children[p.link];
        std::vector<Pending> next;
        for (const XmlJoint* xj : ch) {
            cx.out.joint_parent[xj->name] = p.link;
            next.push_back({xj->child, attach(um, *um.getJoint(xj->name), p.frame, keep, cx)});
        }
        // bodies were appended in document order, but the walk must be depth first: renumber below
        for (auto it = next.rbegin(); it != next.rend(); ++it) stack.push_back(*it);
    }
}

/// Renumber bodies depth first (parent < child, subtrees contiguous), keeping sibling order.
void renumber_depth_first(LoadResult& r) {
    Model& m = r.model;
    const int nb = m.num_bodies();
    std::vector<std::vector<int>> kids(nb + 1);
    for (int i = 0; i < nb; ++i) kids[m.bodies[i].parent + 1].push_back(i);
    std::vector<int> order, stack{-1};
    while (!stack.empty()) {
        int i = stack.back();
        stack.pop_back();
        if (i >= 0) order.push_back(i);
        for (auto it = kids[i + 1].rbegin(); it != kids[i + 1].rend(); ++it) stack.push_back(*it);
    }
    std::vector<int> new_index(nb);
    for (int k = 0; k < nb; ++k) new_index[order[k]] = k;
    std::vector<Body> bodies(nb);
    for (int k = 0; k < nb; ++k) {
        bodies[k] = m.bodies[order[k]];
        if (bodies[k].parent >= 0) bodies[k].parent = new_index[bodies[k].parent];
    }
    m.bodies = bodies;
    for (auto& [name, f] : r.links)
        if (f.body >= 0) f.body = new_index[f.body];
}

/// Principal moments of a body's rotational inertia about its centre of mass, ascending, and the
/// rounding its computation from (m, h, Ibar) can carry.
std::array<double, 4> body_moments(const Inertia<double>& I) {
    Vec3<double> c;
    Mat3<double> Icm;
    com_inertia(I, c, Icm);
    Eigen::Matrix3d Ic;
    double size = I.m * (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k) Ic(r, k) = Icm(r, k), size = std::max(size, std::abs(I.Ibar(r, k)));
    const Eigen::Vector3d lam = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(Ic, Eigen::EigenvaluesOnly).eigenvalues();
    return {lam(0), lam(1), lam(2), 1e-14 * size};
}

/// Physical validity judged on the bodies (after fixed links are merged): a negative principal
/// moment beyond 1e-6 of the body's largest, 1e-12 of the robot's largest and the rounding of
/// the body's own composition is a defect of the body (BodyDefect: refused where forward dynamics
/// needs it); a link whose defect vanishes in its body is a warning naming the link.
void check_body_inertias(LoadResult& r, const std::map<std::string, std::array<double, 3>>& link_moments) {
    const Model& m = r.model;
    const int nb = m.num_bodies();
    std::vector<std::array<double, 4>> moments(nb);
    double robot = 0;
    for (int i = 0; i < nb; ++i) {  // the robot's scale: the largest body inertia, about the COM or the body origin
        moments[i] = body_moments(m.bodies[i].I), robot = std::max(robot, moments[i][2]);
        for (int r = 0; r < 3; ++r) robot = std::max(robot, std::abs(m.bodies[i].I.Ibar(r, r)));
    }
    for (const auto& [link, lam] : link_moments) robot = std::max(robot, lam[2]);
    auto tolerance = [&](double largest, double rounding) { return 1e-6 * std::abs(largest) + 1e-12 * robot + rounding; };
    std::vector<std::vector<std::string>> links(nb);  // document order of the links on each body
    std::vector<std::pair<int, std::string>> by_line;
    for (const auto& [l, line] : r.link_line) by_line.push_back({line, l});
    std::sort(by_line.begin(), by_line.end());
    std::vector<bool> body_bad(nb, false);
    for (int i = 0; i < nb; ++i) body_bad[i] = moments[i][0] < -tolerance(moments[i][2], moments[i][3]);
    for (const auto& [line, l] : by_line) {
        auto f = r.links.find(l);
        if (f == r.links.end()) continue;
        if (f->second.body >= 0) links[f->second.body].push_back(l);
        auto lm = link_moments.find(l);
        if (lm == link_moments.end()) continue;
        const auto& lam = lm->second;
        const double tol = tolerance(lam[2], 0);
        if (lam[0] < -tol) {
            const int b = f->second.body;
            if (b < 0)
                r.warnings.push_back(location(r.source, line) + fmt::format(
                    "link '{}': inertia is not physical (principal moments {:.6g}, {:.6g}, {:.6g}); it is fixed to the world "
                    "and does not move: ignored", l, lam[0], lam[1], lam[2]));
            else if (!body_bad[b] && m.bodies[b].name != l)
                r.warnings.push_back(location(r.source, line) + fmt::format(
                    "link '{}': inertia is not physical (principal moments {:.6g}, {:.6g}, {:.6g}); merged into body '{}', "
                    "whose inertia is (principal moments {:.6g}, {:.6g}, {:.6g}): loaded as is", l, lam[0], lam[1], lam[2],
                    m.bodies[b].name, moments[b][0], moments[b][1], moments[b][2]));
        } else if (lam[0] < 0) {
            r.warnings.push_back(location(r.source, line) + fmt::format(
                "link '{}': inertia has a rounding-level negative principal moment {:.3g}; loaded as is", l, lam[0]));
        }
    }
    for (int i = 0; i < nb; ++i) {
        if (!body_bad[i]) continue;
        const Body& b = m.bodies[i];
        std::string which;
        for (const std::string& l : links[i]) {
            auto lm = link_moments.find(l);
            which += fmt::format("{}'{}'", which.empty() ? "" : ", ", l);
            if (lm != link_moments.end())
                which += fmt::format(" ({:.6g}, {:.6g}, {:.6g})", lm->second[0], lm->second[1], lm->second[2]);
        }
        auto line = r.link_line.find(b.name);
        const std::string msg = location(r.source, line == r.link_line.end() ? 0 : line->second) + fmt::format(
            "body '{}': inertia is not physical: principal moments about its centre of mass {:.6g}, {:.6g}, {:.6g} "
            "(the smallest is negative beyond rounding); links on it, with their own principal moments: {}",
            b.name, moments[i][0], moments[i][1], moments[i][2], which);
        r.body_defects.push_back({i, msg});
        r.warnings.push_back(msg + "; inverse dynamics is computed as given, forward dynamics refuses it");
    }
}

/// Mimic joints: checked, chains resolved to their ultimate master, and set on the bodies
/// (Body::mimic, multiplier, offset); with `ignore`, reported as independent joints instead.
void resolve_mimics(LoadResult& r, bool ignore) {
    const std::vector<MimicJoint> raw = std::move(r.mimics);
    r.mimics.clear();
    auto line = [&](const std::string& j) { auto it = r.joint_line.find(j); return it == r.joint_line.end() ? 0 : it->second; };
    auto where = [&](const std::string& j) { return location(r.source, line(j)) + "joint '" + j + "': "; };
    Model& m = r.model;
    std::map<std::string, int> body;  // joint name -> body, for every joint kept as a body
    for (int i = 0; i < m.num_bodies(); ++i) body[m.bodies[i].joint_name] = i;
    std::map<std::string, const MimicJoint*> direct;
    for (const MimicJoint& mj : raw) {
        if (ignore) {
            r.mimic_joints.push_back(mj.joint);
            r.warnings.push_back(location(r.source, line(mj.joint)) + fmt::format("joint '{}' mimics '{}': treated as an independent joint (--ignore-mimic)", mj.joint, mj.urdf_master));
            continue;
        }
        auto it = body.find(mj.joint);
        if (it == body.end() || m.bodies[it->second].type == JointType::Fixed) {  // merged away or kept as a boundary
            r.warnings.push_back(location(r.source, line(mj.joint)) + fmt::format("joint '{}' is fixed: its <mimic> of '{}' is ignored", mj.joint, mj.urdf_master));
            continue;
        }
        if (m.bodies[it->second].type == JointType::Floating)
            throw InputError(where(mj.joint) + "a floating joint cannot mimic another joint");
        if (!std::isfinite(mj.multiplier) || !std::isfinite(mj.offset))
            throw InputError(where(mj.joint) + fmt::format("<mimic> has a non-finite multiplier or offset ({}, {})", mj.multiplier, mj.offset));
        if (!r.joint_line.count(mj.urdf_master))
            throw InputError(where(mj.joint) + fmt::format("mimics '{}', which is not a joint of the robot", mj.urdf_master));
        auto mt = body.find(mj.urdf_master);
        if (mt == body.end() || m.bodies[mt->second].type == JointType::Fixed)
            throw InputError(where(mj.joint) + fmt::format("mimics '{}', a fixed joint: there is no coordinate to follow", mj.urdf_master));
        if (m.bodies[mt->second].type == JointType::Floating)
            throw InputError(where(mj.joint) + fmt::format("mimics '{}', a floating joint: only a 1-DoF joint can be mimicked", mj.urdf_master));
        direct[mj.joint] = &mj;
    }
    for (Body& b : m.bodies) {
        auto it = direct.find(b.joint_name);
        if (it == direct.end()) continue;
        MimicJoint res = *it->second;  // q = multiplier q_master + offset, composed along the chain
        std::vector<std::string> chain{b.joint_name};
        for (auto next = direct.find(res.master); next != direct.end(); next = direct.find(res.master)) {
            if (std::find(chain.begin(), chain.end(), res.master) != chain.end()) {
                std::string cycle;
                for (const std::string& j : chain) cycle += "'" + j + "' -> ";
                throw InputError(where(b.joint_name) + fmt::format("mimic joints form a cycle: {}'{}'", cycle, res.master));
            }
            chain.push_back(res.master);
            res.offset += res.multiplier * next->second->offset;
            res.multiplier *= next->second->multiplier;
            res.master = next->second->urdf_master;
        }
        b.mimic = body.at(res.master), b.multiplier = res.multiplier, b.offset = res.offset;
        r.mimics.push_back(res);
    }
}

}  // namespace

LoadResult load_urdf_string(const std::string& xml, const std::string& source, const LoadOptions& options) {
    if (!(options.snap >= 0 && options.snap < 0.1))  // NaN too
        throw InputError(fmt::format("--snap {}: the tolerance must be at least 0 and below 0.1", options.snap));
    XmlTree t = scan_xml(xml, source);
    check_tree(t, source);
    LoadResult r;
    r.snap = options.snap;
    urdf::ModelInterfaceSharedPtr um = parse_with_urdfdom(canonical_xml(xml, options.snap, source, r.snapped), source, t);
    UrdfModelGuard guard{um};
    check_same_tree(*um, t, source);
    r.source = source, r.root_link = t.root, r.link_line = t.link_line, r.joint_line = t.joint_line;
    r.model.name = um->getName();
    std::map<std::string, std::array<double, 3>> link_moments;
    Context cx{source, r, link_moments};
    build_model(*um, t, options, cx);
    renumber_depth_first(r);
    resolve_mimics(r, options.ignore_mimic);
    r.model.assign_indices();
    check_body_inertias(r, link_moments);
    return r;
}

LoadResult load_urdf_file(const std::string& path, const LoadOptions& options) {
    return load_urdf_string(read_file(path), path, options);
}

std::string format_snap_change(const std::string& source, const SnapChange& c) {
    const char* xyz[] = {"x", "y", "z"};
    const char* rpy[] = {"roll", "pitch", "yaw"};
    const bool angles = c.field.find("rpy") != std::string::npos;
    const std::string component = c.index < 0 ? std::string() : fmt::format(" {}", angles ? rpy[c.index] : xyz[c.index]);
    return location(source, c.line) + fmt::format("{}: {}{} {:.17g} -> {:.17g} (changed by {:.2g})", c.element, c.field, component,
                                                  c.from, c.to, std::abs(c.to - c.from));
}

}  // namespace nelu
