// Tests of the `load` pass (compiler/src/load.hpp): every diagnosis of the malformed-input fixtures,
// through the library and through `nelu model`, and the semantics of a correct load: numbering,
// joint types, axes, transforms, spatial inertias, exact fixed-joint merging, the floating base.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "diagnostics.hpp"
#include "load.hpp"
#include "model_check.hpp"
#include "nelu/reference.hpp"
#include "nelu/state.hpp"
#include "test_support.hpp"

namespace {

using nelu::InputError;
using nelu::JointType;
using nelu::LoadOptions;
using nelu::LoadResult;
using nelu::Mat3;
using nelu::Model;
using nelu::Vec3;
using nelu::Xform;
using nelu::test::run_nelu;

constexpr double kPi = 3.14159265358979323846;

std::string fixture(const std::string& name) {
    return nelu::test::source_dir() + "/tests/fixtures/malformed/" + name;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The message of the InputError that loading `path` throws, or "" (and a failed check) if none.
std::string load_error(const std::string& path, const LoadOptions& opt = {}) {
    try {
        nelu::load_urdf_file(path, opt);
    } catch (const InputError& e) {
        return e.what();
    }
    FAIL_CHECK("no InputError for " << path);
    return "";
}

// ---------------------------------------------------------------------------------------------
// Errors

struct ErrorCase {
    const char* file;
    int line;                         ///< 0: the loader does not know it
    std::vector<const char*> parts;   ///< text the message must contain
    std::vector<std::string> keep_fixed;
};

const std::vector<ErrorCase>& error_cases() {
    static const std::vector<ErrorCase> cases = {
        {"malformed_xml.urdf", 5, {"malformed XML", "MISMATCHED_ELEMENT", "inertial"}, {}},
        {"root_not_robot.urdf", 2, {"the root element is not <robot>"}, {}},
        {"no_links.urdf", 2, {"the robot has no <link>"}, {}},
        {"link_without_name.urdf", 4, {"<link> has no 'name' attribute"}, {}},
        {"name_ends_comment.urdf", 4, {"<link name=\"arm */ int injected; /*\">: the name contains '*/', which nelu cannot write into the generated code"}, {}},
        {"name_with_line_break.urdf", 10, {"<joint name=\"shoulder\\n#define tau 0\">: the name contains a control character"}, {}},
        {"joint_without_type.urdf", 5, {"<joint> has no 'type' attribute"}, {}},
        {"duplicate_link.urdf", 5, {"link 'arm' is defined twice (first at line 4)"}, {}},
        {"duplicate_joint.urdf", 10, {"joint 'shoulder' is defined twice (first at line 6)"}, {}},
        {"joint_without_parent.urdf", 5, {"joint 'shoulder' has no <parent> element"}, {}},
        {"joint_without_child.urdf", 5, {"joint 'shoulder' has no <child> element"}, {}},
        {"parent_without_link.urdf", 6, {"joint 'shoulder': <parent> has no 'link' attribute"}, {}},
        {"unknown_parent_link.urdf", 5, {"joint 'shoulder': parent link 'torso' is not defined"}, {}},
        {"unknown_child_link.urdf", 5, {"joint 'shoulder': child link 'forearm' is not defined"}, {}},
        {"two_parent_joints.urdf", 19, {"link 'bar' has two parent joints: 'left_bar' (line 15) and 'right_bar'"}, {}},
        {"several_roots.urdf", 0, {"several root links", "'base' (line 3), 'table' (line 5)"}, {}},
        {"cycle_no_root.urdf", 6, {"joint 'a_b' closes a kinematic loop (link 'b' is on a cycle, and no link is a root)"}, {}},
        {"cycle_unreachable.urdf", 11, {"joint 'loop_12' closes a kinematic loop (link 'loop2' is on a cycle)"}, {}},
        {"negative_mass.urdf", 4, {"link 'arm': negative mass -1"}, {}},
        {"huge_mass.urdf", 4, {"link 'arm': mass 1e+300 kg is above 1e+18", "overflow"}, {}},
        {"huge_inertia.urdf", 4, {"link 'arm': inertia entry 2e+19 kg m^2 is above 1e+18"}, {}},
        {"nan_mass.urdf", 4, {"invalid URDF", "mass [nan] is not a float", "Link [arm]"}, {}},
        {"inf_inertia.urdf", 4, {"invalid URDF", "inertia element ixx is not a valid double", "Link [arm]"}, {}},
        {"zero_axis.urdf", 11, {"joint 'shoulder': <axis> is zero"}, {}},
        {"planar_joint.urdf", 11, {"joint 'shoulder': planar joints are not supported yet"}, {}},
        {"unknown_joint_type.urdf", 11, {"invalid URDF", "Joint [shoulder] has no known type [hinge]"}, {}},
        {"revolute_without_limit.urdf", 11, {"invalid URDF", "Joint [shoulder] is of type REVOLUTE but it does not specify limits"}, {}},
        {"limits_reversed.urdf", 11, {"joint 'shoulder': invalid limits [1, -1]"}, {}},
        {"bad_number.urdf", 11, {"invalid URDF", "[1 2]", "origin", "joint [shoulder]"}, {}},
        {"percent_in_value.urdf", 14, {"<origin> attribute 'xyz' contains '%': not a URDF value"}, {}},
        {"mimic_missing_master.urdf", 29, {"joint 'finger_right': mimics 'thumb', which is not a joint of the robot"}, {}},
        {"mimic_cycle.urdf", 23, {"joint 'finger_left': mimic joints form a cycle: 'finger_left' -> 'finger_right' -> 'finger_left'"}, {}},
        {"mimic_of_fixed.urdf", 27, {"joint 'finger_right': mimics 'finger_left', a fixed joint: there is no coordinate to follow"}, {}},
        {"mimic_of_floating.urdf", 27, {"joint 'finger_right': mimics 'finger_left', a floating joint: only a 1-DoF joint can be mimicked"}, {}},
        {"mimic_floating.urdf", 29, {"joint 'finger_right': a floating joint cannot mimic another joint"}, {}},
        {"mimic_nonfinite.urdf", 0, {"invalid URDF", "multiplier value (inf) is not a valid float", "finger_right"}, {}},
        {"keep_fixed_not_fixed.urdf", 11, {"joint 'shoulder' is not fixed; only fixed joints can be kept"}, {"shoulder"}},
        {"keep_fixed_not_fixed.urdf", 0, {"--keep-fixed: no joint named 'elbow'"}, {"elbow"}},
    };
    return cases;
}

/// "PATH:LINE: " or "PATH: ": how every message about `path` starts.
std::string prefix(const std::string& path, int line) { return nelu::location(path, line); }

TEST_CASE("load: every malformed fixture throws InputError naming the file, line and element") {
    for (const ErrorCase& c : error_cases()) {
        CAPTURE(c.file);
        const std::string path = fixture(c.file);
        const std::string msg = load_error(path, {false, c.keep_fixed});
        CAPTURE(msg);
        CHECK(msg.rfind(prefix(path, c.line), 0) == 0);
        for (const char* part : c.parts) CHECK(contains(msg, part));
    }
}

TEST_CASE("load: every malformed fixture makes `nelu model` exit 2 with the error on stderr") {
    for (const ErrorCase& c : error_cases()) {
        CAPTURE(c.file);
        const std::string path = fixture(c.file);
        std::string args = "model " + quoted(path);
        for (const std::string& k : c.keep_fixed) args += " --keep-fixed " + k;
        const nelu::test::CliResult r = run_nelu(args);
        CAPTURE(r.err);
        CHECK(r.exit_code == nelu::kExitBadInput);
        CHECK(r.err.rfind("error: " + prefix(path, c.line), 0) == 0);
        for (const char* part : c.parts) CHECK(contains(r.err, part));
        CHECK(r.out.empty());
    }
}

TEST_CASE("load: a missing file is an InputError naming it") {
    const std::string path = fixture("does_not_exist.urdf");
    const std::string msg = load_error(path);
    CHECK(msg == path + ": cannot open the file");
    const nelu::test::CliResult r = run_nelu("model " + quoted(path));
    CHECK(r.exit_code == nelu::kExitBadInput);
    CHECK(r.err == "error: " + path + ": cannot open the file\n");
}

TEST_CASE("load: errors in URDF text name the source given") {
    try {
        nelu::load_urdf_string("<robot name='r'><link name='a'/><link name='a'/></robot>", "inline.urdf");
        FAIL("no InputError");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) == "inline.urdf:1: link 'a' is defined twice (first at line 1)");
    }
}

// ---------------------------------------------------------------------------------------------
// Warnings

struct WarningCase {
    const char* file;
    int line;
    std::vector<const char*> parts;
};

TEST_CASE("load: fixtures that load with a warning naming the link or joint") {
    const std::vector<WarningCase> cases = {
        {"warn_rounding_eigenvalue.urdf", 4, {"link 'bob'", "rounding-level negative principal moment -1e-20", "loaded as is"}},
        {"negative_inertia.urdf", 4, {"body 'arm': inertia is not physical: principal moments about its centre of mass -0.01, 0.02, 0.02",
                                      "links on it, with their own principal moments: 'arm' (-0.01, 0.02, 0.02)",
                                      "forward dynamics refuses it"}},
        {"warn_indefinite_merged_link.urdf", 11, {"link 'antenna': inertia is not physical (principal moments -3.5e-08, 3.5e-08, 9.1e-08)",
                                                  "merged into body 'head'", "loaded as is"}},
        {"warn_triangle_inequality.urdf", 4, {"link 'arm'", "principal moments 1, 1, 3 violate the triangle inequality"}},
        {"warn_non_unit_axis.urdf", 11, {"joint 'shoulder'", "axis has norm 2; normalized"}},
        {"warn_mimic_on_fixed.urdf", 29, {"joint 'finger_right' is fixed: its <mimic> of 'finger_left' is ignored"}},
    };
    for (const WarningCase& c : cases) {
        CAPTURE(c.file);
        const std::string path = fixture(c.file);
        LoadResult r = nelu::load_urdf_file(path);
        REQUIRE(r.warnings.size() == 1);
        const std::string& w = r.warnings[0];
        CAPTURE(w);
        CHECK(w.rfind(prefix(path, c.line), 0) == 0);
        for (const char* part : c.parts) CHECK(contains(w, part));

        const nelu::test::CliResult cli = run_nelu("model " + quoted(path));
        CHECK(cli.exit_code == 0);
        CHECK(cli.err.empty());
        CHECK(contains(cli.out, "warnings (1):"));
        CHECK(contains(cli.out, "warning: " + w));
    }
}

TEST_CASE("load: physical validity is judged on the bodies, after fixed links are merged") {
    SUBCASE("a tiny indefinite link merged into a valid body: a warning, and forward dynamics compiles") {
        const std::string path = fixture("warn_indefinite_merged_link.urdf");
        LoadResult r = nelu::load_urdf_file(path);
        CHECK(r.body_defects.empty());
        const nelu::test::CliResult fd = run_nelu("analyze " + quoted(path) + " --problem fd");
        CAPTURE(fd.err);
        CHECK(fd.exit_code == 0);
        CHECK(contains(fd.err, "warning: " + prefix(path, 11) + "link 'antenna': inertia is not physical"));
    }
    SUBCASE("an indefinite body: inverse dynamics compiles with the warning, forward dynamics is refused naming it") {
        const std::string path = fixture("negative_inertia.urdf");
        LoadResult r = nelu::load_urdf_file(path);
        REQUIRE(r.body_defects.size() == 1);
        CHECK(r.body_defects[0].body == 0);
        const nelu::test::CliResult id = run_nelu("analyze " + quoted(path) + " --problem id");
        CAPTURE(id.err);
        CHECK(id.exit_code == 0);
        CHECK(contains(id.err, "warning: " + prefix(path, 4) + "body 'arm': inertia is not physical"));
        const nelu::test::CliResult fd = run_nelu("analyze " + quoted(path) + " --problem fd");
        CAPTURE(fd.err);
        CHECK(fd.exit_code == nelu::kExitBadInput);
        CHECK(fd.err.rfind("error: " + prefix(path, 4) + "body 'arm': inertia is not physical: principal moments about its "
                           "centre of mass -0.01, 0.02, 0.02", 0) == 0);
        CHECK(contains(fd.err, "forward dynamics (problem 'fd') needs every moving body's inertia positive semidefinite"));
    }
}

TEST_CASE("load: a joint that carries no inertia: fd names it and prints the spec that makes it solvable, which compiles") {
    const std::string path = fixture("warn_massless_subtree.urdf");
    const nelu::test::CliResult fd = run_nelu("analyze " + quoted(path) + " --problem fd");
    CAPTURE(fd.err);
    CHECK(fd.exit_code == nelu::kExitIllPosed);
    CHECK(contains(fd.err, "the acceleration of joint 'mount_pan' is sought, but no mass or inertia resists its motion"));
    const std::string spec = nelu::test::printed_spec(fd.err);
    REQUIRE(!spec.empty());
    CHECK(contains(spec, "qdd: [mount_pan]"));
    const std::string file = nelu::test::scratch_dir("test_load_massless_hint") + "/massless_hint.yaml";
    std::FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f);
    std::fputs(spec.c_str(), f);
    std::fclose(f);
    const nelu::test::CliResult hinted = run_nelu("analyze " + quoted(path) + " --problem " + quoted(file));
    CAPTURE(hinted.err);
    CHECK(hinted.exit_code == 0);
}

TEST_CASE("load: warned values are loaded as documented") {
    SUBCASE("a non-unit axis is normalized") {
        LoadResult r = nelu::load_urdf_file(fixture("warn_non_unit_axis.urdf"));
        const Vec3<double> a = r.model.bodies.at(0).axis;
        CHECK(a[0] == 0.0);
        CHECK(a[1] == 0.0);
        CHECK(a[2] == 1.0);
    }
    SUBCASE("with --ignore-mimic, a mimic joint is listed, warned about and stays an independent joint") {
        nelu::LoadOptions o;
        o.ignore_mimic = true;
        LoadResult r = nelu::load_urdf_file(fixture("warn_mimic.urdf"), o);
        CHECK(r.mimic_joints == std::vector<std::string>{"finger_right"});
        CHECK(r.mimics.empty());
        CHECK(r.model.nv == 2);
        CHECK(r.model.bodies.at(1).joint_name == "finger_right");
        CHECK(r.model.bodies.at(1).type == JointType::Prismatic);
        CHECK(!r.model.bodies.at(1).is_mimic());
        REQUIRE(r.warnings.size() == 1);
        CHECK(r.warnings[0].rfind(prefix(fixture("warn_mimic.urdf"), 29), 0) == 0);
        CHECK(contains(r.warnings[0], "joint 'finger_right' mimics 'finger_left': treated as an independent joint"));
        const std::string out = run_nelu("model --ignore-mimic " + quoted(fixture("warn_mimic.urdf"))).out;
        CHECK(contains(out, "mimic joints (treated as independent): finger_right"));
        CHECK(contains(out, "warning: " + r.warnings[0]));
    }
    SUBCASE("without it, a mimic joint follows its master (no warning)") {
        LoadResult r = nelu::load_urdf_file(fixture("warn_mimic.urdf"));
        CHECK(r.warnings.empty());
        CHECK(r.mimic_joints.empty());
        REQUIRE(r.mimics.size() == 1);
        CHECK(r.mimics[0].joint == "finger_right");
        CHECK(r.mimics[0].master == "finger_left");
        CHECK(r.model.nv == 2);  // the model keeps every joint's slots
        CHECK(r.model.bodies.at(1).mimic == 0);
        CHECK(contains(run_nelu("model " + quoted(fixture("warn_mimic.urdf"))).out, "finger_right = 1 * finger_left + 0"));
    }
    SUBCASE("a rounding-level eigenvalue is kept as given") {
        LoadResult r = nelu::load_urdf_file(fixture("warn_rounding_eigenvalue.urdf"));
        CHECK(r.model.bodies.at(0).I.m == 1.0);
    }
}

TEST_CASE("load: a movable joint carrying no mass loads; `nelu model` warns that FD is singular there") {
    const std::string path = fixture("warn_massless_subtree.urdf");
    LoadResult r = nelu::load_urdf_file(path);
    CHECK(r.warnings.empty());
    CHECK(nelu::singular_fd_joints(r.model) == std::vector<std::string>{"mount_pan"});
    const nelu::test::CliResult cli = run_nelu("model " + quoted(path));
    CHECK(cli.exit_code == 0);
    CHECK(contains(cli.out, "warning: forward dynamics is singular: no mass or inertia moves with joint(s) 'mount_pan'"));
    CHECK_FALSE(contains(cli.out, "'shoulder'"));
}

/// Largest absolute difference of two matrices, vectors, transforms or inertias.
double max_diff(const Mat3<double>& A, const Mat3<double>& B) {
    double d = 0;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) d = nelu::test::worse(d, std::abs(A(i, j) - B(i, j)));
    return d;
}
double max_diff(const Vec3<double>& a, const Vec3<double>& b) {
    return std::max({std::abs(a[0] - b[0]), std::abs(a[1] - b[1]), std::abs(a[2] - b[2])});
}
double max_diff(const Xform<double>& X, const Xform<double>& Y) { return std::max(max_diff(X.E, Y.E), max_diff(X.r, Y.r)); }
double max_diff(const nelu::Inertia<double>& I, const nelu::Inertia<double>& J) {
    return std::max({std::abs(I.m - J.m), max_diff(I.h, J.h), max_diff(I.Ibar, J.Ibar)});
}

/// Rotation matrices about the coordinate axes (test-local, independent of the loader).
Mat3<double> rot_x(double a) { return {{{1, 0, 0}, {0, std::cos(a), -std::sin(a)}, {0, std::sin(a), std::cos(a)}}}; }
Mat3<double> rot_y(double a) { return {{{std::cos(a), 0, std::sin(a)}, {0, 1, 0}, {-std::sin(a), 0, std::cos(a)}}}; }
Mat3<double> rot_z(double a) { return {{{std::cos(a), -std::sin(a), 0}, {std::sin(a), std::cos(a), 0}, {0, 0, 1}}}; }
/// URDF rpy: fixed axes x, y, z, i.e. R = Rz(yaw) Ry(pitch) Rx(roll); maps child to parent coordinates.
Mat3<double> rpy(double r, double p, double y) { return rot_z(y) * rot_y(p) * rot_x(r); }

TEST_CASE("load: massless frames on fixed joints are merged exactly, without a warning") {
    const std::string path = fixture("warn_massless_merged.urdf");
    LoadResult r = nelu::load_urdf_file(path);
    CHECK(r.warnings.empty());
    REQUIRE(r.model.num_bodies() == 1);
    REQUIRE(r.merged.size() == 2);
    CHECK(r.merged[0].joint == "arm_flange");
    CHECK(r.merged[0].link == "tool_flange");
    CHECK(r.merged[0].into == "arm");
    CHECK(r.merged[1].joint == "flange_tcp");
    CHECK(r.merged[1].link == "tcp");
    CHECK(r.merged[1].into == "arm");
    const nelu::Inertia<double> I = r.model.bodies[0].I;  // the arm's alone
    CHECK(I.m == 1.0);
    CHECK(max_diff(I.h, Vec3<double>{{0.2, 0, 0}}) < 1e-15);
    // tcp: 0.4 along x, then a quarter turn about y, then 0.1 along the new z (= the arm's x).
    const Mat3<double> R = rot_y(kPi / 2);
    CHECK(r.links.at("tcp").body == 0);
    CHECK(max_diff(r.links.at("tcp").X_link_body, Xform<double>{transpose(R), {{0.5, 0, 0}}}) < 1e-15);
    CHECK(max_diff(r.links.at("tool_flange").X_link_body, Xform<double>{transpose(R), {{0.4, 0, 0}}}) < 1e-15);

    const nelu::test::CliResult cli = run_nelu("model " + quoted(path));
    CHECK(cli.exit_code == 0);
    CHECK(contains(cli.out, "merged fixed joints (2):"));
    CHECK(contains(cli.out, "arm_flange: link 'tool_flange' into 'arm'"));
    CHECK(contains(cli.out, "flange_tcp: link 'tcp' into 'arm'"));
    CHECK_FALSE(contains(cli.out, "warning"));
}

// ---------------------------------------------------------------------------------------------
// Semantics

/// <link> with a valid inertial block.
std::string link_xml(const std::string& name, double mass, const std::string& com = "0.1 0 0",
                     const std::string& com_rpy = "0 0 0") {
    if (mass == 0) return "  <link name='" + name + "'/>\n";
    return "  <link name='" + name + "'><inertial><origin xyz='" + com + "' rpy='" + com_rpy + "'/><mass value='" +
           std::to_string(mass) +
           "'/><inertia ixx='0.05' ixy='0.004' ixz='-0.003' iyy='0.06' iyz='0.002' izz='0.04'/></inertial></link>\n";
}

/// <joint>; `type` revolute and prismatic get limits.
std::string joint_xml(const std::string& name, const std::string& type, const std::string& parent,
                      const std::string& child, const std::string& xyz = "0 0 0", const std::string& rpy_ = "0 0 0",
                      const std::string& axis = "0 0 1") {
    std::string j = "  <joint name='" + name + "' type='" + type + "'><parent link='" + parent + "'/><child link='" +
                    child + "'/><origin xyz='" + xyz + "' rpy='" + rpy_ + "'/>";
    if (type != "fixed" && type != "floating") j += "<axis xyz='" + axis + "'/>";
    if (type == "revolute") j += "<limit lower='-1' upper='2' effort='10' velocity='1'/>";
    if (type == "prismatic") j += "<limit lower='-0.3' upper='0.4' effort='10' velocity='1'/>";
    return j + "</joint>\n";
}

std::string robot_xml(const std::string& name, const std::string& body) {
    return "<?xml version='1.0'?>\n<robot name='" + name + "'>\n" + body + "</robot>\n";
}

std::vector<std::string> body_names(const Model& m) {
    std::vector<std::string> n;
    for (const auto& b : m.bodies) n.push_back(b.name);
    return n;
}

TEST_CASE("load: bodies are numbered depth first in URDF document order of the joints, parent < child") {
    // Alphabetical order (alpha, a_leaf, ...), joint document order (beta first) and breadth-first
    // order all differ from the expected depth-first order.
    const std::string xml = robot_xml(
        "order", link_xml("a_leaf", 1) + link_xml("alpha", 1) + link_xml("base", 0) + link_xml("beta", 1) +
                     link_xml("mid", 1) + link_xml("zeta", 1) +
                     joint_xml("j_beta", "continuous", "alpha", "beta") +
                     joint_xml("j_zeta", "continuous", "base", "zeta") +
                     joint_xml("j_mid", "continuous", "zeta", "mid") +
                     joint_xml("j_alpha", "continuous", "base", "alpha") +
                     joint_xml("j_leaf", "continuous", "mid", "a_leaf"));
    LoadResult r = nelu::load_urdf_string(xml, "order.urdf");
    const Model& m = r.model;
    CHECK(r.root_link == "base");
    CHECK(body_names(m) == std::vector<std::string>{"zeta", "mid", "a_leaf", "alpha", "beta"});
    std::vector<int> parents;
    for (const auto& b : m.bodies) parents.push_back(b.parent);
    CHECK(parents == std::vector<int>{-1, 0, 1, -1, 3});
    for (int i = 0; i < m.num_bodies(); ++i) {
        CHECK(m.bodies[i].parent < i);
        CHECK(m.bodies[i].q_index == i);
        CHECK(m.bodies[i].v_index == i);
        CHECK(m.bodies[i].joint_name == "j_" + std::string(m.bodies[i].name == "a_leaf" ? "leaf" : m.bodies[i].name));
        CHECK(r.links.at(m.bodies[i].name).body == i);
    }
    CHECK(r.links.at("base").body == -1);
    CHECK(r.link_line.at("zeta") == 8);
    CHECK(r.joint_line.at("j_beta") == 9);
}

TEST_CASE("load: joint types revolute, continuous, prismatic, fixed (merged) and floating") {
    const std::string xml = robot_xml(
        "types", link_xml("world", 0) + link_xml("base", 2) + link_xml("a", 1) + link_xml("b", 1) +
                     link_xml("c", 1) + link_xml("d", 1) +
                     joint_xml("free", "floating", "world", "base", "0 0 1") +
                     joint_xml("rev", "revolute", "base", "a") + joint_xml("cont", "continuous", "a", "b") +
                     joint_xml("slide", "prismatic", "b", "c", "0 0 0", "0 0 0", "1 0 0") +
                     joint_xml("weld", "fixed", "c", "d"));
    LoadResult r = nelu::load_urdf_string(xml, "types.urdf");
    const Model& m = r.model;
    REQUIRE(body_names(m) == std::vector<std::string>{"base", "a", "b", "c"});
    const auto& B = m.bodies;
    CHECK(B[0].type == JointType::Floating);
    CHECK(B[0].joint_name == "free");
    CHECK((B[0].nq() == 7 && B[0].nv() == 6));
    CHECK(B[1].type == JointType::Revolute);
    CHECK_FALSE(B[1].continuous);
    CHECK(B[1].has_limits);
    CHECK(B[1].lower == -1.0);
    CHECK(B[1].upper == 2.0);
    CHECK(B[2].type == JointType::Revolute);
    CHECK(B[2].continuous);
    CHECK_FALSE(B[2].has_limits);
    CHECK(B[3].type == JointType::Prismatic);
    CHECK(B[3].has_limits);
    CHECK(B[3].lower == -0.3);
    CHECK(B[3].upper == 0.4);
    CHECK(max_diff(B[3].axis, Vec3<double>{{1, 0, 0}}) == 0.0);
    CHECK(m.nq == 7 + 3);
    CHECK(m.nv == 6 + 3);
    CHECK((B[1].q_index == 7 && B[1].v_index == 6));
    REQUIRE(r.merged.size() == 1);
    CHECK(r.merged[0].joint == "weld");
    CHECK(r.merged[0].into == "c");
    CHECK(B[3].I.m == doctest::Approx(2.0));  // c and d
    CHECK(r.warnings.empty());
}

/// Rodrigues: the rotation by angle q about the unit axis a.
Mat3<double> axis_angle(const Vec3<double>& a, double q) {
    Mat3<double> R;
    const double c = std::cos(q), s = std::sin(q);
    const Mat3<double> K = nelu::skew(a);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) R(i, j) = (i == j ? c : 0.0) + s * K(i, j) + (1 - c) * a[i] * a[j];
    return R;
}

TEST_CASE("load: arbitrary unit axes are kept and the joint rotates or slides along them") {
    const std::string axis1 = "0.6 0 0.8", axis2 = "0.6666666666666666 0.3333333333333333 -0.6666666666666666";
    const std::string xml = robot_xml(
        "axes", link_xml("base", 0) + link_xml("a", 1) + link_xml("b", 1) +
                    joint_xml("r", "continuous", "base", "a", "0 0 0", "0 0 0", axis1) +
                    joint_xml("p", "prismatic", "a", "b", "0 0 0", "0 0 0", axis2));
    LoadResult r = nelu::load_urdf_string(xml, "axes.urdf");
    CHECK(r.warnings.empty());
    const Vec3<double> a1{{0.6, 0, 0.8}}, a2{{2.0 / 3, 1.0 / 3, -2.0 / 3}};
    CHECK(max_diff(r.model.bodies[0].axis, a1) < 1e-15);
    CHECK(max_diff(r.model.bodies[1].axis, a2) < 1e-15);
    const double q[2] = {0.7, 0.25};
    // Body frame after a rotation q about a1: E = R(a1, q)^T; after a slide: origin at q a2.
    const Xform<double> X0 = nelu::parent_to_body(r.model.bodies[0], q);
    CHECK(max_diff(X0.E, transpose(axis_angle(a1, 0.7))) < 1e-14);
    CHECK(max_diff(X0.r, nelu::zero3<double>()) == 0.0);
    const Xform<double> X1 = nelu::parent_to_body(r.model.bodies[1], q);
    CHECK(max_diff(X1.E, nelu::identity3<double>()) == 0.0);
    CHECK(max_diff(X1.r, 0.25 * a2) < 1e-15);
}

TEST_CASE("load: joint origin and inertial origin (xyz + rpy) give X_tree and the spatial inertia") {
    SUBCASE("a rod offset and turned a quarter about z") {
        // Rod of mass 2 and length 0.6 along its own x axis, centre at (0.3, -0.1, 0.2), turned to lie
        // along y. About the centre in the link frame: Ic = diag(m L^2/12, 0, m L^2/12) with
        // m L^2/12 = 0.06 (plus a small 0.001 about the rod's axis to keep it non-degenerate).
        const std::string xml = robot_xml(
            "rod", link_xml("base", 0) +
                       "  <link name='rod'><inertial><origin xyz='0.3 -0.1 0.2' rpy='0 0 1.5707963267948966'/>"
                       "<mass value='2'/><inertia ixx='0.001' ixy='0' ixz='0' iyy='0.06' iyz='0' izz='0.06'/>"
                       "</inertial></link>\n" +
                       joint_xml("j", "continuous", "base", "rod", "1 2 3", "0 0 1.5707963267948966"));
        LoadResult r = nelu::load_urdf_string(xml, "rod.urdf");
        const nelu::Body& b = r.model.bodies.at(0);
        // X_tree: parent -> joint frame turned a quarter about z: E = Rz(pi/2)^T, r = (1, 2, 3).
        const Mat3<double> Et{{{0, 1, 0}, {-1, 0, 0}, {0, 0, 1}}};
        CHECK(max_diff(b.X_tree.E, Et) < 1e-15);
        CHECK(max_diff(b.X_tree.r, Vec3<double>{{1, 2, 3}}) == 0.0);
        // By hand: Ic = diag(0.06, 0.001, 0.06); h = m c = (0.6, -0.2, 0.4);
        // Ibar = Ic + m (|c|^2 1 - c c^T), |c|^2 = 0.14:
        //   xx 0.06 + 2 (0.14 - 0.09) = 0.16     yy 0.001 + 2 (0.14 - 0.01) = 0.261   zz 0.06 + 2 (0.14 - 0.04) = 0.26
        //   xy -2 (0.3)(-0.1) = 0.06             xz -2 (0.3)(0.2) = -0.12             yz -2 (-0.1)(0.2) = 0.04
        const nelu::Inertia<double> expect{2, {{0.6, -0.2, 0.4}},
                                           {{{0.16, 0.06, -0.12}, {0.06, 0.261, 0.04}, {-0.12, 0.04, 0.26}}}};
        CHECK(max_diff(b.I, expect) < 1e-15);
    }
    SUBCASE("general rotations") {
        const double jr = 0.3, jp = -0.4, jy = 1.1, ir = -0.7, ip = 0.5, iy = 2.2;
        const std::string xml = robot_xml(
            "general", link_xml("base", 0) +
                           "  <link name='l'><inertial><origin xyz='0.2 0.3 -0.1' rpy='-0.7 0.5 2.2'/>"
                           "<mass value='1.5'/><inertia ixx='0.05' ixy='0.004' ixz='-0.003' iyy='0.06' iyz='0.002' izz='0.04'/>"
                           "</inertial></link>\n" +
                           joint_xml("j", "continuous", "base", "l", "-0.5 0.25 0.125", "0.3 -0.4 1.1"));
        LoadResult r = nelu::load_urdf_string(xml, "general.urdf");
        const nelu::Body& b = r.model.bodies.at(0);
        CHECK(max_diff(b.X_tree.E, transpose(rpy(jr, jp, jy))) < 1e-15);
        CHECK(max_diff(b.X_tree.r, Vec3<double>{{-0.5, 0.25, 0.125}}) == 0.0);
        const Mat3<double> R = rpy(ir, ip, iy);
        const Mat3<double> Ii{{{0.05, 0.004, -0.003}, {0.004, 0.06, 0.002}, {-0.003, 0.002, 0.04}}};
        const Mat3<double> Ic = R * Ii * transpose(R);
        const Vec3<double> c{{0.2, 0.3, -0.1}};
        const double m = 1.5;
        Mat3<double> Ibar;
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) Ibar(i, j) = Ic(i, j) + m * ((i == j ? dot(c, c) : 0.0) - c[i] * c[j]);
        const nelu::Inertia<double> expect{m, m * c, Ibar};
        CHECK(max_diff(b.I, expect) < 1e-15);
    }
}

// A chain with fixed joints in the middle, a branch hanging from a merged link, and a massless
// leaf: every fixed joint has a general origin, every link a general inertial.
std::string merge_robot_xml() {
    return robot_xml(
        "merge",
        link_xml("base", 0) + link_xml("l1", 1.3, "0.1 -0.05 0.2", "0.4 0.1 -0.3") +
            link_xml("l1b", 0.7, "-0.1 0.2 0.05", "1.0 -0.5 0.2") + link_xml("l1c", 0.4, "0.02 0.03 -0.1", "0 0.3 0") +
            link_xml("l2", 0.9, "0.3 0 0", "0 0 0.6") + link_xml("l3", 0.5) + link_xml("l4", 0.3, "0 0.1 0") +
            link_xml("tip", 0) +
            joint_xml("j1", "revolute", "base", "l1", "0.1 0.2 0.3", "0.3 -0.2 0.5") +
            joint_xml("f1", "fixed", "l1", "l1b", "0.4 -0.1 0.05", "1.0 0.4 -0.7") +
            joint_xml("j2", "revolute", "l1b", "l2", "0.2 0.1 -0.3", "-0.6 0.2 0.1", "0.6 0 0.8") +
            joint_xml("f2", "fixed", "l1b", "l1c", "-0.2 0.3 0.1", "0.2 0.9 -1.1") +
            joint_xml("j3", "prismatic", "l2", "l3", "0.3 0 0.1", "0 0.5 0", "0 1 0") +
            joint_xml("f3", "fixed", "l3", "tip", "0 0 0.2", "0 0 0.3") +
            joint_xml("j4", "continuous", "l1c", "l4", "0.1 0.1 0", "0.5 0 0", "1 0 0"));
}

/// max |a - b| / max |b|
double rel(const std::vector<double>& a, const std::vector<double>& b) {
    return nelu::test::rel_error(a, b, 1e-300);
}

/// CRBA and RNEA of two models with the same coordinates agree at seeded random states.
void check_same_dynamics(const Model& a, const Model& b, std::uint64_t seed) {
    REQUIRE(a.nq == b.nq);
    REQUIRE(a.nv == b.nv);
    std::mt19937_64 rng(seed);
    double worst_m = 0, worst_tau = 0;
    for (int k = 0; k < 20; ++k) {
        const nelu::State s = nelu::random_state(a, rng, /*with_fext=*/false);
        std::vector<double> Ma(a.nv * a.nv), Mb(b.nv * b.nv), ta(a.nv), tb(b.nv);
        nelu::crba(a, s.q.data(), Ma.data());
        nelu::crba(b, s.q.data(), Mb.data());
        const nelu::SVec<double>* nofext = nullptr;
        nelu::rnea(a, s.q.data(), s.qd.data(), s.qdd.data(), nofext, ta.data());
        nelu::rnea(b, s.q.data(), s.qd.data(), s.qdd.data(), nofext, tb.data());
        worst_m = std::max(worst_m, rel(Ma, Mb));
        worst_tau = std::max(worst_tau, rel(ta, tb));
    }
    std::printf("  merged vs kept: CRBA rel. error %.2e, RNEA rel. error %.2e\n", worst_m, worst_tau);
    CHECK(worst_m < 1e-12);
    CHECK(worst_tau < 1e-12);
}

TEST_CASE("load: fixed-joint merging is exact (same dynamics as the fixed joints kept)") {
    const std::string xml = merge_robot_xml();
    for (bool floating : {false, true}) {
        CAPTURE(floating);
        LoadResult merged = nelu::load_urdf_string(xml, "merge.urdf", {floating, {}});
        const int off = floating ? 1 : 0;
        std::vector<std::string> expect{"l1", "l2", "l3", "l4"};
        if (floating) expect.insert(expect.begin(), "base");
        CHECK(body_names(merged.model) == expect);
        CHECK(merged.model.bodies[3 + off].parent == off);  // l4 hangs from l1 through the merged l1b, l1c
        CHECK(merged.merged.size() == 3);
        for (const auto& keep : std::vector<std::vector<std::string>>{{"f1"}, {"f2"}, {"f1", "f2", "f3"}}) {
            CAPTURE(keep.size());
            LoadResult kept = nelu::load_urdf_string(xml, "merge.urdf", {floating, keep});
            CHECK(kept.model.num_bodies() == merged.model.num_bodies() + static_cast<int>(keep.size()));
            for (const std::string& k : keep) {
                const int i = kept.model.body_index(k == "f1" ? "l1b" : k == "f2" ? "l1c" : "tip");
                REQUIRE(i >= 0);
                CHECK(kept.model.bodies[i].type == JointType::Fixed);
                CHECK(kept.model.bodies[i].joint_name == k);
            }
            check_same_dynamics(merged.model, kept.model, 7);
        }
    }
}

TEST_CASE("load: LoadResult::links maps merged links to their body with X_link_body") {
    const std::string xml = merge_robot_xml();
    LoadResult merged = nelu::load_urdf_string(xml, "merge.urdf");
    LoadResult kept = nelu::load_urdf_string(xml, "merge.urdf", {false, {"f1", "f2", "f3"}});
    CHECK(merged.links.size() == 8);
    CHECK(merged.links.at("l1b").body == merged.model.body_index("l1"));
    CHECK(merged.links.at("l1c").body == merged.model.body_index("l1"));
    CHECK(merged.links.at("tip").body == merged.model.body_index("l3"));
    // tip: exactly the f3 origin, a translation 0.2 along z and a turn 0.3 about z.
    CHECK(max_diff(merged.links.at("tip").X_link_body, Xform<double>{transpose(rot_z(0.3)), {{0, 0, 0.2}}}) < 1e-15);
    // Every link's world pose agrees with the model where every link is a body.
    std::mt19937_64 rng(3);
    for (int k = 0; k < 5; ++k) {
        const std::vector<double> q = nelu::random_configuration(merged.model, rng);
        const auto km = nelu::forward_kinematics(merged.model, q.data(), static_cast<const double*>(nullptr));
        const auto kk = nelu::forward_kinematics(kept.model, q.data(), static_cast<const double*>(nullptr));
        for (const auto& [link, f] : merged.links) {
            CAPTURE(link);
            if (f.body < 0) continue;  // base: the world
            const Xform<double> X = nelu::compose(f.X_link_body, km.X_world[f.body]);
            CHECK(max_diff(X, kk.X_world[kept.model.body_index(link)]) < 1e-12);
        }
    }
    for (const auto& [link, f] : kept.links) {
        CHECK(f.body == kept.model.body_index(link));
        CHECK(max_diff(f.X_link_body, nelu::identity_xform<double>()) == 0.0);
    }
}

TEST_CASE("load: a fixed joint from the root merges into the world: its inertia drops, children stay right") {
    // pedestal welded to base 0.5 up and turned a quarter about z; arm 0.1 along the pedestal's x.
    const std::string welded = robot_xml(
        "welded", link_xml("base", 0) + link_xml("pedestal", 5) + link_xml("arm", 1.2, "0.2 0.1 0", "0.1 0.2 0.3") +
                      joint_xml("weld", "fixed", "base", "pedestal", "0 0 0.5", "0 0 1.5707963267948966") +
                      joint_xml("j", "revolute", "pedestal", "arm", "0.1 0 0", "0 0 0", "0 0.6 0.8"));
    // The same arm on base directly: 0.5 up, then Rz(pi/2) (0.1, 0, 0) = (0, 0.1, 0).
    const std::string direct = robot_xml(
        "direct", link_xml("base", 0) + link_xml("arm", 1.2, "0.2 0.1 0", "0.1 0.2 0.3") +
                      joint_xml("j", "revolute", "base", "arm", "0 0.1 0.5", "0 0 1.5707963267948966", "0 0.6 0.8"));
    LoadResult r = nelu::load_urdf_string(welded, "welded.urdf");
    LoadResult d = nelu::load_urdf_string(direct, "direct.urdf");
    REQUIRE(body_names(r.model) == std::vector<std::string>{"arm"});
    CHECK(r.model.bodies[0].parent == -1);
    CHECK(r.model.bodies[0].I.m == doctest::Approx(1.2));  // the pedestal's 5 kg are gone
    REQUIRE(r.merged.size() == 1);
    CHECK(r.merged[0].joint == "weld");
    CHECK(r.merged[0].link == "pedestal");
    CHECK(r.merged[0].into == "world");
    CHECK(r.links.at("pedestal").body == -1);
    CHECK(max_diff(r.links.at("pedestal").X_link_body, Xform<double>{transpose(rot_z(kPi / 2)), {{0, 0, 0.5}}}) < 1e-15);
    CHECK(max_diff(r.model.bodies[0].X_tree, d.model.bodies[0].X_tree) < 1e-15);
    check_same_dynamics(r.model, d.model, 11);
}

TEST_CASE("load: the floating-base option adds body 0 on root_joint") {
    const std::string xml = merge_robot_xml();
    LoadResult fixed = nelu::load_urdf_string(xml, "merge.urdf");
    LoadResult fl = nelu::load_urdf_string(xml, "merge.urdf", {true, {}});
    const Model& m = fl.model;
    REQUIRE(m.num_bodies() == fixed.model.num_bodies() + 1);
    const nelu::Body& b0 = m.bodies[0];
    CHECK(b0.name == "base");
    CHECK(b0.joint_name == "root_joint");
    CHECK(b0.type == JointType::Floating);
    CHECK(b0.parent == -1);
    CHECK((b0.q_index == 0 && b0.v_index == 0));
    CHECK(m.nq == 7 + fixed.model.nq);
    CHECK(m.nv == 6 + fixed.model.nv);
    CHECK(fl.links.at("base").body == 0);
    for (int i = 0; i < fixed.model.num_bodies(); ++i) {
        const nelu::Body &a = fixed.model.bodies[i], &b = m.bodies[i + 1];
        CHECK(a.name == b.name);
        CHECK(b.parent == a.parent + 1);
        CHECK(b.q_index == a.q_index + 7);
        CHECK(b.v_index == a.v_index + 6);
        CHECK(max_diff(a.I, b.I) == 0.0);
        CHECK(fl.links.at(a.name).body == i + 1);
    }
    // A root link with mass: body 0 carries it.
    const std::string heavy = robot_xml("heavy", link_xml("torso", 3, "0 0 0.1") + link_xml("leg", 1) +
                                                     joint_xml("hip", "continuous", "torso", "leg"));
    LoadResult h = nelu::load_urdf_string(heavy, "heavy.urdf", {true, {}});
    CHECK(h.model.bodies[0].I.m == doctest::Approx(3));
    CHECK(h.model.nq == 8);
    CHECK(h.model.nv == 7);
    LoadResult hf = nelu::load_urdf_string(heavy, "heavy.urdf");
    CHECK(hf.model.num_bodies() == 1);  // fixed base: the torso is the world
}

// ---------------------------------------------------------------------------------------------
// `nelu model` on real robots

/// `nelu model` on `path` exits 0 and prints every body, joint, merged joint and warning.
void check_model_cli(const std::string& path, bool floating) {
    CAPTURE(path);
    CAPTURE(floating);
    const LoadResult r = nelu::load_urdf_file(path, {floating, {}});
    const nelu::test::CliResult cli = run_nelu("model " + quoted(path) + (floating ? " --floating-base" : ""));
    CHECK(cli.exit_code == 0);
    CHECK(cli.err.empty());
    const std::string& out = cli.out;
    CHECK(contains(out, "bodies " + std::to_string(r.model.num_bodies()) + ", nq " + std::to_string(r.model.nq) +
                            ", nv " + std::to_string(r.model.nv)));
    CHECK(contains(out, "body (link)"));
    CHECK(contains(out, floating ? "floating base (body 0 on root_joint)" : "fixed base (the world)"));
    for (const auto& b : r.model.bodies) {
        CHECK(contains(out, " " + b.name + " "));
        CHECK(contains(out, " " + b.joint_name + " "));
    }
    if (!r.merged.empty()) {
        CHECK(contains(out, "merged fixed joints (" + std::to_string(r.merged.size()) + "):"));
        for (const auto& mj : r.merged)
            CHECK(contains(out, mj.joint + ": link '" + mj.link + "' into '" + mj.into + "'"));
    }
    if (!r.warnings.empty()) {
        CHECK(contains(out, "warnings (" + std::to_string(r.warnings.size()) + "):"));
        for (const auto& w : r.warnings) CHECK(contains(out, "warning: " + w));
    }
    CHECK(contains(out, "forward dynamics"));
}

TEST_CASE("load: `nelu model` succeeds on every shared robot, fixed and floating base") {
    const std::vector<std::string> robots = nelu::test::shared_robots();
    if (robots.empty()) std::printf("note: no ../shared/robots; skipped\n");
    for (const std::string& p : robots)
        for (bool floating : {false, true}) check_model_cli(p, floating);
}

TEST_CASE("load: `nelu model` succeeds on every shipped robot, fixed and floating base") {
    const std::vector<std::string> robots = nelu::test::shipped_robots();
    if (robots.empty()) std::printf("note: robots/ has no URDF yet; skipped\n");
    for (const std::string& p : robots)
        for (bool floating : {false, true}) check_model_cli(p, floating);
}

}  // namespace

TEST_CASE("load: a file the two XML readers would see differently is refused without a leak") {
    // Found by the fuzzer: urdfdom's own reader (TinyXML 1) reads this file's declaration
    // differently from tinyxml2 and built a tree with a cycle of shared pointers, which leaked.
    // urdfdom now reads the XML as tinyxml2 printed it back, and a refused model's cycles are
    // broken; LeakSanitizer (the ASan run of this suite) checks that nothing leaks.
    const std::string path = nelu::test::source_dir() + "/fuzz/seeds/regression_urdfdom_cycle.urdf";
    try {
        nelu::load_urdf_file(path);
        FAIL("the file loaded");
    } catch (const nelu::InputError& e) {
        CHECK(std::string(e.what()).find("regression_urdfdom_cycle.urdf:") != std::string::npos);
    }
}

TEST_CASE("load: an axis given at a scale whose squares overflow or underflow is normalized, not zero") {
    for (const auto& [given, expected] : std::vector<std::pair<std::string, Vec3<double>>>{
             {"1e300 1e300 0", {{std::sqrt(0.5), std::sqrt(0.5), 0}}},  // (its norm overflowed: the axis became 0 0 0)
             {"0 0 1e308", {{0, 0, 1}}},
             {"1e-300 0 0", {{1, 0, 0}}},  // (its norm underflowed: "<axis> is zero")
             {"4e-320 0 -4e-320", {{std::sqrt(0.5), 0, -std::sqrt(0.5)}}}}) {
        const std::string xml = robot_xml("scaled", link_xml("base", 0) + link_xml("a", 1) +
                                                        joint_xml("r", "continuous", "base", "a", "0 0 0", "0 0 0", given));
        LoadResult r = nelu::load_urdf_string(xml, "scaled.urdf");
        CHECK_MESSAGE(max_diff(r.model.bodies[0].axis, expected) < 1e-15, given);
        REQUIRE(r.warnings.size() == 1);
        CHECK_MESSAGE(r.warnings[0].find("joint 'r': axis has norm") != std::string::npos, r.warnings[0]);
    }
}

TEST_CASE("load: a joint whose parent is its child is named as such") {
    const std::string xml = robot_xml("loop", link_xml("base", 0) + link_xml("a", 1) +
                                                  joint_xml("j1", "continuous", "base", "a", "0 0 0", "0 0 0", "0 0 1") +
                                                  joint_xml("j2", "continuous", "a", "a", "0 0 0", "0 0 0", "0 0 1"));
    try {
        nelu::load_urdf_string(xml, "loop.urdf");
        FAIL("no InputError");
    } catch (const InputError& e) {
        CHECK_MESSAGE(std::string(e.what()).find("joint 'j2' has link 'a' as both its parent and its child") != std::string::npos, e.what());
    }
}

TEST_CASE("load: a link's second <inertial> is refused (urdfdom dropped it); mass 0 with a rotational inertia is warned") {
    std::string two = link_xml("a", 1);
    two.insert(two.find("</link>"), "<inertial><mass value='5'/><inertia ixx='1' ixy='0' ixz='0' iyy='1' iyz='0' izz='1'/></inertial>");
    try {
        nelu::load_urdf_string(robot_xml("two", link_xml("base", 0) + two + joint_xml("j", "continuous", "base", "a")), "two.urdf");
        FAIL("no InputError");
    } catch (const InputError& e) {
        CHECK_MESSAGE(std::string(e.what()).find("two.urdf:4: link 'a' has a second <inertial> (the first at line 4)") != std::string::npos, e.what());
    }
    std::string massless = link_xml("a", 1);
    massless.replace(massless.find("value='1.000000'"), 16, "value='0'");
    LoadResult r = nelu::load_urdf_string(robot_xml("m0", link_xml("base", 0) + massless + joint_xml("j", "continuous", "base", "a")), "m0.urdf");
    REQUIRE(r.warnings.size() == 1);
    CHECK_MESSAGE(r.warnings[0].find("link 'a': mass 0 with a rotational inertia") != std::string::npos, r.warnings[0]);
}

TEST_CASE("load: a joint carries no inertia judged in its own units: a point mass on a general axis is singular, a light rotor on a heavy body is not") {
    auto joints = [](const std::string& xml) { return nelu::singular_fd_joints(nelu::load_urdf_string(xml, "t.urdf").model); };
    const std::string base = "<link name='base'><inertial><mass value='1'/><inertia ixx='0.01' ixy='0' ixz='0' iyy='0.01' iyz='0' izz='0.01'/></inertial></link>";
    // a 2 kg point mass on the axis (1 2 3): its pivot and its M_ii are both rounding (the old global
    // floor found it; a test relative to M_ii alone did not)
    CHECK(joints("<robot name='p'>" + base +
                 "<link name='l1'><inertial><origin xyz='0.37 0.74 1.11'/><mass value='2'/><inertia ixx='0' ixy='0' ixz='0' iyy='0' iyz='0' izz='0'/></inertial></link>"
                 "<joint name='j1' type='continuous'><parent link='base'/><child link='l1'/><axis xyz='1 2 3'/></joint></robot>") ==
          std::vector<std::string>{"j1"});
    // a 1e-8 kg m^2 rotor about its own axis on a 1e4 kg body (was refused: 1e-12 times every mass and moment added)
    CHECK(joints("<robot name='r'><link name='base'/><link name='body'><inertial><mass value='1e4'/>"
                 "<inertia ixx='1e3' ixy='0' ixz='0' iyy='1e3' iyz='0' izz='1e3'/></inertial></link>"
                 "<link name='rotor'><inertial><mass value='1e-3'/><inertia ixx='1e-8' ixy='0' ixz='0' iyy='1e-8' iyz='0' izz='1e-8'/></inertial></link>"
                 "<joint name='lift' type='prismatic'><parent link='base'/><child link='body'/><axis xyz='0 0 1'/>"
                 "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
                 "<joint name='spin' type='continuous'><parent link='body'/><child link='rotor'/><axis xyz='0 0 1'/></joint></robot>")
              .empty());
}
