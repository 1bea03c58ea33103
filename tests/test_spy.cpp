// Tests of the spy plots (compiler/src/spy.hpp).
#include <doctest/doctest.h>
#include <tinyxml2.h>

#include <cstring>
#include <string>

#include "analyze.hpp"
#include "load.hpp"
#include "order.hpp"
#include "problem.hpp"
#include "robot_gen.hpp"
#include "spy.hpp"
#include "system.hpp"

namespace {

using Transforms = nelu::RobotGenOptions::Transforms;

struct Compiled {
    nelu::System sys;
    nelu::OrderResult order;
};

/// The system of a generated chain with `links` bodies for `problem`, factored by the order pass.
Compiled compile_chain(int links, const std::string& problem, Transforms tr) {
    nelu::RobotGenOptions o;
    o.links = links, o.transforms = tr, o.seed = 3;
    nelu::Model model = nelu::load_urdf_string(nelu::generate_robot_urdf(o), "chain").model;
    Compiled c;
    c.sys = nelu::run_system(model, nelu::run_problem({problem}, model));
    nelu::Analysis an = nelu::run_analyze(model, c.sys);
    c.order = nelu::run_order(model, c.sys, an, nelu::OrderOptions{200, false, {}});
    return c;
}

/// The element with attribute id == `id` under `e` (depth first), or null.
const tinyxml2::XMLElement* by_id(const tinyxml2::XMLElement* e, const char* id) {
    if (!e) return nullptr;
    const char* a = e->Attribute("id");
    if (a && std::strcmp(a, id) == 0) return e;
    for (const tinyxml2::XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement())
        if (const tinyxml2::XMLElement* f = by_id(c, id)) return f;
    return nullptr;
}

/// Number of <rect> children of the element with id `id`; -1 when there is no such element.
long squares(const tinyxml2::XMLDocument& doc, const char* id) {
    const tinyxml2::XMLElement* g = by_id(doc.RootElement(), id);
    if (!g) return -1;
    long n = 0;
    for (const tinyxml2::XMLElement* c = g->FirstChildElement("rect"); c; c = c->NextSiblingElement("rect")) ++n;
    return n;
}

}  // namespace

TEST_CASE("spy: inverse dynamics of a small chain, one square per nonzero and no fill") {
    Compiled c = compile_chain(3, "id", Transforms::General);
    REQUIRE(c.sys.n() <= 600);
    const std::string svg = nelu::spy_svg(c.sys, c.order.best, "chain3 id");
    tinyxml2::XMLDocument doc;
    REQUIRE(doc.Parse(svg.c_str(), svg.size()) == tinyxml2::XML_SUCCESS);
    REQUIRE(doc.RootElement() != nullptr);
    CHECK(std::string(doc.RootElement()->Name()) == "svg");
    CHECK(squares(doc, "D-nz") == c.sys.nnz());
    CHECK(squares(doc, "PDQ-nz") == c.sys.nnz());
    CHECK(c.order.best.fill() == 0);
    CHECK(squares(doc, "LU-fill") == 0);
    CHECK(squares(doc, "LU-nz") == c.sys.nnz());
    CHECK(svg.find("chain3 id") != std::string::npos);
}

TEST_CASE("spy: forward dynamics has fill-in, at least the factorization's") {
    Compiled c = compile_chain(4, "fd", Transforms::General);
    REQUIRE(c.sys.n() <= 600);
    const nelu::Factorization& f = c.order.best;
    const std::string svg = nelu::spy_svg(c.sys, f, "chain4 fd");
    tinyxml2::XMLDocument doc;
    REQUIRE(doc.Parse(svg.c_str(), svg.size()) == tinyxml2::XML_SUCCESS);
    CHECK(squares(doc, "D-nz") == c.sys.nnz());
    const long fill = squares(doc, "LU-fill"), kept = squares(doc, "LU-nz");
    CHECK(fill > 0);
    CHECK(kept == c.sys.nnz());  // every entry of D is an entry of L + U
    CHECK(kept + fill >= f.nnz_L + f.nnz_U);  // structural: no cancellation
    CHECK(fill >= f.fill());
}

TEST_CASE("spy: deterministic, and XML-escapes the title") {
    Compiled c = compile_chain(2, "fd", Transforms::Dh);
    const std::string a = nelu::spy_svg(c.sys, c.order.best, "a<b & \"c\"");
    const std::string b = nelu::spy_svg(c.sys, c.order.best, "a<b & \"c\"");
    CHECK(a == b);
    tinyxml2::XMLDocument doc;
    CHECK(doc.Parse(a.c_str(), a.size()) == tinyxml2::XML_SUCCESS);
    CHECK(a.find("a&lt;b &amp; &quot;c&quot;") != std::string::npos);
}

TEST_CASE("spy: large systems are drawn as density cells") {
    Compiled c = compile_chain(40, "fd", Transforms::General);
    REQUIRE(c.sys.n() > 600);
    const std::string svg = nelu::spy_svg(c.sys, c.order.best, "chain40 fd");
    tinyxml2::XMLDocument doc;
    REQUIRE(doc.Parse(svg.c_str(), svg.size()) == tinyxml2::XML_SUCCESS);
    CHECK(squares(doc, "D-nz") == -1);  // no per-entry squares
    CHECK(by_id(doc.RootElement(), "LU") != nullptr);
    CHECK(svg.find("<path fill=\"#d62728\"") != std::string::npos);  // some fill cells
    CHECK(svg.size() < 500000);
}
