// Tests of the synthetic robot generator (compiler/src/robot_gen.hpp).
#include <doctest/doctest.h>
#include <tinyxml2.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "load.hpp"
#include "robot_gen.hpp"

namespace {

using nelu::RobotGenOptions;
using Shape = RobotGenOptions::Shape;
using Transforms = RobotGenOptions::Transforms;

constexpr double kPi = 3.14159265358979323846;

/// Options with the given shape, size, branching, transforms and seed.
RobotGenOptions options(Shape shape, int links, int branching, Transforms tr, std::uint64_t seed) {
    RobotGenOptions o;
    o.shape = shape;
    o.links = links;
    o.branching = branching;
    o.transforms = tr;
    o.seed = seed;
    return o;
}

/// The whitespace-separated tokens of an attribute value.
std::vector<std::string> tokens(const char* s) {
    std::istringstream in(s ? s : "");
    std::vector<std::string> out;
    for (std::string t; in >> t;) out.push_back(t);
    return out;
}

/// The three numbers of an "x y z" attribute value.
std::array<double, 3> triple(const char* s) {
    const std::vector<std::string> t = tokens(s);
    REQUIRE(t.size() == 3);
    return {std::stod(t[0]), std::stod(t[1]), std::stod(t[2])};
}

/// Number of child elements of `parent` named `name`.
int count_children(const tinyxml2::XMLElement* parent, const char* name) {
    int n = 0;
    for (auto* e = parent->FirstChildElement(name); e; e = e->NextSiblingElement(name)) ++n;
    return n;
}

/// Eigenvalues of a symmetric 3x3 matrix, ascending (closed-form trigonometric method).
std::array<double, 3> symmetric_eigenvalues(const double a[3][3]) {
    const double p1 = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    const double q = (a[0][0] + a[1][1] + a[2][2]) / 3;
    if (p1 == 0) {
        std::array<double, 3> d{a[0][0], a[1][1], a[2][2]};
        std::sort(d.begin(), d.end());
        return d;
    }
    const double p2 = (a[0][0] - q) * (a[0][0] - q) + (a[1][1] - q) * (a[1][1] - q) +
                      (a[2][2] - q) * (a[2][2] - q) + 2 * p1;
    const double p = std::sqrt(p2 / 6);
    double b[3][3];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) b[i][j] = (a[i][j] - (i == j ? q : 0)) / p;
    const double det = b[0][0] * (b[1][1] * b[2][2] - b[1][2] * b[2][1]) -
                       b[0][1] * (b[1][0] * b[2][2] - b[1][2] * b[2][0]) +
                       b[0][2] * (b[1][0] * b[2][1] - b[1][1] * b[2][0]);
    const double r = std::max(-1.0, std::min(1.0, det / 2));
    const double phi = std::acos(r) / 3;
    const double e_max = q + 2 * p * std::cos(phi);
    const double e_min = q + 2 * p * std::cos(phi + 2 * kPi / 3);
    return {e_min, 3 * q - e_max - e_min, e_max};
}

/// Parsed robot: the document plus its links and joints by name.
struct Robot {
    tinyxml2::XMLDocument doc;
    const tinyxml2::XMLElement* root = nullptr;
    std::map<std::string, const tinyxml2::XMLElement*> links, joints;
};

/// Parses URDF text, requiring well-formed XML with a <robot> root.
void parse(const std::string& text, Robot& r) {
    REQUIRE(r.doc.Parse(text.c_str(), text.size()) == tinyxml2::XML_SUCCESS);
    r.root = r.doc.FirstChildElement("robot");
    REQUIRE(r.root != nullptr);
    for (auto* e = r.root->FirstChildElement("link"); e; e = e->NextSiblingElement("link"))
        r.links[e->Attribute("name")] = e;
    for (auto* e = r.root->FirstChildElement("joint"); e; e = e->NextSiblingElement("joint"))
        r.joints[e->Attribute("name")] = e;
}

/// Name of the parent link of joint<i>.
std::string parent_link(const Robot& r, int i) {
    const auto* j = r.joints.at("joint" + std::to_string(i));
    return j->FirstChildElement("parent")->Attribute("link");
}

/// Checks mass, positive definiteness and the triangle inequality of every link's inertia.
void check_inertias(const Robot& r, int links) {
    for (int i = 1; i <= links; ++i) {
        const auto* link = r.links.at("link" + std::to_string(i));
        const auto* inertial = link->FirstChildElement("inertial");
        REQUIRE(inertial != nullptr);
        const double m = inertial->FirstChildElement("mass")->DoubleAttribute("value");
        CHECK(m >= 0.5);
        CHECK(m <= 2.0);
        const auto* t = inertial->FirstChildElement("inertia");
        const double xx = t->DoubleAttribute("ixx"), xy = t->DoubleAttribute("ixy"),
                     xz = t->DoubleAttribute("ixz"), yy = t->DoubleAttribute("iyy"),
                     yz = t->DoubleAttribute("iyz"), zz = t->DoubleAttribute("izz");
        const double a[3][3] = {{xx, xy, xz}, {xy, yy, yz}, {xz, yz, zz}};
        const std::array<double, 3> e = symmetric_eigenvalues(a);
        CHECK(e[0] > 0);
        CHECK(e[0] + e[1] > e[2] * (1 + 1e-9));
    }
}

}  // namespace

TEST_CASE("robot_gen: the test's eigenvalue helper") {
    const double a[3][3] = {{2, 1, 0}, {1, 2, 0}, {0, 0, 5}};
    const std::array<double, 3> e = symmetric_eigenvalues(a);
    CHECK(e[0] == doctest::Approx(1));
    CHECK(e[1] == doctest::Approx(3));
    CHECK(e[2] == doctest::Approx(5));
    const double b[3][3] = {{4, -2, 1}, {-2, 3, 0.5}, {1, 0.5, 6}};
    const std::array<double, 3> f = symmetric_eigenvalues(b);
    CHECK(f[0] + f[1] + f[2] == doctest::Approx(13));
    CHECK(f[0] * f[1] * f[2] == doctest::Approx(4 * (18 - 0.25) + 2 * (-12 - 0.5) + (-1 - 3)));
}

TEST_CASE("robot_gen: output is deterministic and depends on the seed") {
    for (Transforms tr : {Transforms::General, Transforms::Dh}) {
        const RobotGenOptions a = options(Shape::Tree, 15, 3, tr, 42);
        CHECK(nelu::generate_robot_urdf(a) == nelu::generate_robot_urdf(a));
        RobotGenOptions b = a;
        b.seed = 43;
        CHECK(nelu::generate_robot_urdf(a) != nelu::generate_robot_urdf(b));
    }
}

TEST_CASE("robot_gen: header comment, default names and element counts") {
    const std::string chain =
        nelu::generate_robot_urdf(options(Shape::Chain, 7, 2, Transforms::General, 5));
    CHECK(chain.rfind("<!-- Generated by `nelu robot gen` with options: shape=chain links=7 "
                      "transforms=general seed=5 -->\n", 0) == 0);
    Robot rc;
    parse(chain, rc);
    CHECK(std::string(rc.root->Attribute("name")) == "chain7_s5");
    CHECK(count_children(rc.root, "link") == 8);
    CHECK(count_children(rc.root, "joint") == 7);

    const std::string tree =
        nelu::generate_robot_urdf(options(Shape::Tree, 12, 3, Transforms::Dh, 9));
    CHECK(tree.rfind("<!-- Generated by `nelu robot gen` with options: shape=tree links=12 "
                     "branching=3 transforms=dh seed=9 -->\n", 0) == 0);
    Robot rt;
    parse(tree, rt);
    CHECK(std::string(rt.root->Attribute("name")) == "tree12_b3_s9");
    CHECK(count_children(rt.root, "link") == 13);
    CHECK(count_children(rt.root, "joint") == 12);
    CHECK(rt.links.count("base") == 1);
    CHECK(rt.links.at("base")->FirstChildElement("inertial") == nullptr);
    for (const auto& [name, j] : rt.joints) {
        CHECK(std::string(j->Attribute("type")) == "revolute");
        const auto* lim = j->FirstChildElement("limit");
        REQUIRE(lim != nullptr);
        CHECK(lim->DoubleAttribute("lower") == doctest::Approx(-kPi));
        CHECK(lim->DoubleAttribute("upper") == doctest::Approx(kPi));
    }

    RobotGenOptions named = options(Shape::Chain, 1, 2, Transforms::General, 1);
    named.name = "a<b>&\"c\"";
    Robot rn;
    parse(nelu::generate_robot_urdf(named), rn);
    CHECK(std::string(rn.root->Attribute("name")) == named.name);
}

TEST_CASE("robot_gen: parent structure of chains and trees") {
    Robot chain;
    parse(nelu::generate_robot_urdf(options(Shape::Chain, 6, 4, Transforms::General, 1)), chain);
    CHECK(parent_link(chain, 1) == "base");
    for (int i = 2; i <= 6; ++i) CHECK(parent_link(chain, i) == "link" + std::to_string(i - 1));

    Robot tree;
    parse(nelu::generate_robot_urdf(options(Shape::Tree, 7, 2, Transforms::General, 1)), tree);
    const char* expected[] = {"base", "link1", "link1", "link2", "link2", "link3", "link3"};
    for (int i = 1; i <= 7; ++i) CHECK(parent_link(tree, i) == expected[i - 1]);

    for (int b : {1, 3, 5}) {
        const int n = 40;
        Robot r;
        parse(nelu::generate_robot_urdf(options(Shape::Tree, n, b, Transforms::Dh, 3)), r);
        std::map<std::string, int> children;
        for (int i = 1; i <= n; ++i) {
            const int p = (i + b - 2) / b;
            CHECK(parent_link(r, i) == (p == 0 ? std::string("base") : "link" + std::to_string(p)));
            CHECK(p < i);
            ++children[parent_link(r, i)];
        }
        CHECK(children["base"] == 1);
        for (const auto& [name, count] : children) CHECK(count <= b);
        CHECK(children["link1"] == std::min(b, n - 1));
    }

    Robot star;
    parse(nelu::generate_robot_urdf(options(Shape::Tree, 5, 2147483647, Transforms::Dh, 1)), star);
    for (int i = 2; i <= 5; ++i) CHECK(parent_link(star, i) == "link1");
}

TEST_CASE("robot_gen: dh transforms have the autoTree form") {
    const int n = 25;
    Robot r;
    parse(nelu::generate_robot_urdf(options(Shape::Tree, n, 2, Transforms::Dh, 11)), r);
    for (int i = 1; i <= n; ++i) {
        const auto* j = r.joints.at("joint" + std::to_string(i));
        CHECK(tokens(j->FirstChildElement("axis")->Attribute("xyz")) ==
              std::vector<std::string>{"0", "0", "1"});
        const auto* origin = j->FirstChildElement("origin");
        const std::vector<std::string> rpy = tokens(origin->Attribute("rpy"));
        const std::vector<std::string> xyz = tokens(origin->Attribute("xyz"));
        REQUIRE(rpy.size() == 3);
        REQUIRE(xyz.size() == 3);
        CHECK(rpy[1] == "0");
        CHECK(rpy[2] == "0");
        CHECK(std::abs(std::stod(rpy[0])) <= kPi);
        CHECK(xyz[1] == "0");
        CHECK(xyz[2] == "0");

        const std::string parent = parent_link(r, i);
        if (parent == "base") {
            CHECK(xyz[0] == "0");
        } else {
            // The joint sits at the tip of the parent link, whose centre of mass is its midpoint.
            const auto* pin = r.links.at(parent)->FirstChildElement("inertial");
            const std::array<double, 3> com =
                triple(pin->FirstChildElement("origin")->Attribute("xyz"));
            CHECK(std::stod(xyz[0]) == 2 * com[0]);
            CHECK(std::stod(xyz[0]) >= 0.2);
            CHECK(std::stod(xyz[0]) <= 1.0);
        }
        const auto* in = r.links.at("link" + std::to_string(i))->FirstChildElement("inertial");
        const std::array<double, 3> com = triple(in->FirstChildElement("origin")->Attribute("xyz"));
        CHECK(com[1] == 0);
        CHECK(com[2] == 0);
        const auto* t = in->FirstChildElement("inertia");
        CHECK(t->DoubleAttribute("ixy") == 0);
        CHECK(t->DoubleAttribute("ixz") == 0);
        CHECK(t->DoubleAttribute("iyz") == 0);
    }
    check_inertias(r, n);
}

TEST_CASE("robot_gen: general transforms are random within their ranges") {
    const int n = 60;
    Robot r;
    parse(nelu::generate_robot_urdf(options(Shape::Chain, n, 2, Transforms::General, 7)), r);
    int off_diagonal = 0;
    for (int i = 1; i <= n; ++i) {
        const auto* j = r.joints.at("joint" + std::to_string(i));
        const std::array<double, 3> axis = triple(j->FirstChildElement("axis")->Attribute("xyz"));
        CHECK(std::sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]) ==
              doctest::Approx(1.0).epsilon(1e-12));
        const auto* origin = j->FirstChildElement("origin");
        const std::array<double, 3> xyz = triple(origin->Attribute("xyz"));
        const std::array<double, 3> rpy = triple(origin->Attribute("rpy"));
        for (double v : xyz) CHECK(std::abs(v) <= 0.5);
        CHECK(std::abs(rpy[0]) <= kPi);
        CHECK(std::abs(rpy[1]) <= kPi / 2 + 1e-12);
        CHECK(std::abs(rpy[2]) <= kPi);
        const auto* in = r.links.at("link" + std::to_string(i))->FirstChildElement("inertial");
        const std::array<double, 3> com = triple(in->FirstChildElement("origin")->Attribute("xyz"));
        for (double v : com) CHECK(std::abs(v) <= 0.3);
        if (in->FirstChildElement("inertia")->DoubleAttribute("ixy") != 0) ++off_diagonal;
    }
    CHECK(off_diagonal == n);
    check_inertias(r, n);

    Robot tree;
    parse(nelu::generate_robot_urdf(options(Shape::Tree, 200, 4, Transforms::General, 123)), tree);
    check_inertias(tree, 200);
}

TEST_CASE("robot_gen: golden values pin the random stream and the arithmetic on every platform") {
    // A change here means the same options give a different robot: a deliberate format change,
    // or a platform whose arithmetic differs (e.g. multiply-add contraction forced by flags).
    const std::string general =
        nelu::generate_robot_urdf(options(Shape::Chain, 2, 1, Transforms::General, 1));
    CHECK(general.find(
              R"(<origin xyz="0.029937309738471307 -0.10162948783467618 -0.30964289100044073" )"
              R"(rpy="0.60941085774575976 0.88963287918744316 -0.81300993369226138"/>)") !=
          std::string::npos);
    CHECK(general.find(
              R"(<inertia ixx="0.015357446898311778" ixy="0.00036322887510687601" )"
              R"(ixz="-0.0021225683702986173" iyy="0.015828898230210959" )"
              R"(iyz="-0.0015808707250716631" izz="0.028864056212570103"/>)") != std::string::npos);
    const std::string dh = nelu::generate_robot_urdf(options(Shape::Tree, 3, 2, Transforms::Dh, 1));
    CHECK(dh.find(R"(<origin xyz="0.30912562909295782 0 0" rpy="2.5846388426255826 0 0"/>)") !=
          std::string::npos);
}

TEST_CASE("robot_gen: bad options throw invalid_argument naming the option") {
    auto message = [](const RobotGenOptions& o) -> std::string {
        try {
            nelu::generate_robot_urdf(o);
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
        return "no exception";
    };
    CHECK(message(options(Shape::Chain, 0, 2, Transforms::Dh, 1)) ==
          "--links must be at least 1 (got 0)");
    CHECK(message(options(Shape::Tree, -3, 2, Transforms::Dh, 1)).find("--links") == 0);
    CHECK(message(options(Shape::Tree, 100001, 2, Transforms::Dh, 1)).find("--links") == 0);
    CHECK(message(options(Shape::Tree, 5, 0, Transforms::General, 1)) ==
          "--branching must be at least 1 (got 0)");
    CHECK(message(options(Shape::Tree, 5, -1, Transforms::General, 1)).find("--branching") == 0);
    CHECK_NOTHROW(nelu::generate_robot_urdf(options(Shape::Chain, 1, 1, Transforms::General, 0)));
}

TEST_CASE("robot_gen: --no-base leaves out the root link `base` and joint1, and nothing else") {
    for (Shape shape : {Shape::Chain, Shape::Tree}) {
        RobotGenOptions o = options(shape, 9, 2, Transforms::General, 3);
        const std::string with = nelu::generate_robot_urdf(o);
        o.base = false;
        const std::string without = nelu::generate_robot_urdf(o);
        // the same text less the base link, joint1's element and the header's options
        std::string expected = with;
        const std::string base_link = "  <link name=\"base\"/>\n";
        REQUIRE(expected.find(base_link) != std::string::npos);
        expected.erase(expected.find(base_link), base_link.size());
        const std::size_t j1 = expected.find("  <joint name=\"joint1\"");
        REQUIRE(j1 != std::string::npos);
        const std::string close = "  </joint>\n";
        expected.erase(j1, expected.find(close, j1) + close.size() - j1);
        expected.replace(expected.find(" -->\n"), 5, " base=none -->\n");
        CHECK(without == expected);
        Robot r;
        parse(without, r);
        CHECK(count_children(r.root, "link") == 9);
        CHECK(count_children(r.root, "joint") == 8);
        CHECK(r.links.count("base") == 0);
        // link1 is the root: a floating base attaches it, nv = 6 + 8
        const nelu::Model m = nelu::load_urdf_string(without, "nobase", nelu::LoadOptions{true, {}}).model;
        CHECK(m.nv == 14);
    }
    RobotGenOptions bad = options(Shape::Chain, 3, 1, Transforms::Dh, 1);
    bad.base = false, bad.mimic = 2;
    CHECK_THROWS_WITH_AS(nelu::generate_robot_urdf(bad),
                         "--mimic must be in [0, --links - 2] with --no-base (got 2 for 3 links): joint2 would mimic the absent joint1",
                         std::invalid_argument);
}
