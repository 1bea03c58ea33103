// robot_perturb.cpp: see robot_perturb.hpp.
#include "robot_perturb.hpp"

#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <tinyxml2.h>

#include "diagnostics.hpp"
#include "load.hpp"

namespace nelu {
namespace {

class Perturber {
  public:
    Perturber(const PerturbOptions& o) : o_(o), rng_(o.seed) {}

    /// Uniform in [lo, hi), from the top 53 bits (the same on every platform).
    double uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
    std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }

    /// Adds noise of amplitude `scale` * jitter to each number of attribute `attr`.
    void jitter(tinyxml2::XMLElement* e, const char* attr, double scale = 1) {
        const char* text = e ? e->Attribute(attr) : nullptr;
        if (!text) return;
        std::string out;
        const char* p = text;
        for (;;) {
            char* end = nullptr;
            const double x = std::strtod(p, &end);
            if (end == p) break;
            out += fmt::format("{}{:.17g}", out.empty() ? "" : " ", x + scale * uniform(-o_.jitter, o_.jitter));
            p = end;
        }
        if (!out.empty()) e->SetAttribute(attr, out.c_str());
    }

    void run(tinyxml2::XMLDocument& doc) {
        tinyxml2::XMLElement* robot = doc.RootElement();
        std::vector<tinyxml2::XMLElement*> links, joints;
        for (auto* l = robot->FirstChildElement("link"); l; l = l->NextSiblingElement("link")) links.push_back(l);
        for (auto* j = robot->FirstChildElement("joint"); j; j = j->NextSiblingElement("joint")) joints.push_back(j);
        if (o_.jitter > 0) {
            for (auto* j : joints) {
                if (auto* o = j->FirstChildElement("origin")) jitter(o, "xyz"), jitter(o, "rpy");
                jitter(j->FirstChildElement("axis"), "xyz");
            }
            for (auto* l : links) {
                auto* in = l->FirstChildElement("inertial");
                if (!in) continue;
                if (auto* o = in->FirstChildElement("origin")) jitter(o, "xyz"), jitter(o, "rpy");
                if (auto* m = in->FirstChildElement("mass")) jitter(m, "value", m->DoubleAttribute("value", 0.0));
                if (auto* I = in->FirstChildElement("inertia")) {
                    double largest = 0;
                    for (const char* d : {"ixx", "iyy", "izz"}) largest = std::max(largest, std::abs(I->DoubleAttribute(d, 0.0)));
                    for (const char* a : {"ixx", "ixy", "ixz", "iyy", "iyz", "izz"}) jitter(I, a, largest);
                }
            }
        }
        for (int k = 0; k < o_.tiny_links; ++k)
            add_leaf(robot, links[pick(links.size())]->Attribute("name"), fmt::format("nelu_tiny_{}", k), "fixed",
                     "<inertial><origin xyz=\"0.01 0.02 0.03\" rpy=\"0 0 0\"/><mass value=\"1e-6\"/>"
                     "<inertia ixx=\"-3.5e-8\" ixy=\"0\" ixz=\"0\" iyy=\"3.5e-8\" iyz=\"0\" izz=\"9.1e-8\"/></inertial>");
        for (int k = 0; k < o_.massless_leaves; ++k)
            add_leaf(robot, links[pick(links.size())]->Attribute("name"), fmt::format("nelu_massless_{}", k), "continuous", "");
        if (o_.mimic > 0) add_mimics(joints);
    }

  private:
    void add_leaf(tinyxml2::XMLElement* robot, const char* parent, const std::string& name, const char* type, const std::string& inertial) {
        const std::string xml = fmt::format(
            "<link name=\"{0}\">{1}</link><joint name=\"{0}\" type=\"{2}\"><parent link=\"{3}\"/><child link=\"{0}\"/>"
            "<origin xyz=\"{4:.17g} {5:.17g} {6:.17g}\" rpy=\"0 0 0\"/><axis xyz=\"0 0 1\"/></joint>",
            name, inertial, type, parent, uniform(-0.05, 0.05), uniform(-0.05, 0.05), uniform(-0.05, 0.05));
        tinyxml2::XMLDocument frag;
        frag.Parse(xml.c_str());
        for (auto* e = frag.FirstChildElement(); e; e = e->NextSiblingElement()) robot->InsertEndChild(e->DeepClone(robot->GetDocument()));
    }

    void add_mimics(const std::vector<tinyxml2::XMLElement*>& joints) {
        auto movable = [](const tinyxml2::XMLElement* j) {
            const std::string t = j->Attribute("type") ? j->Attribute("type") : "";
            return t == "revolute" || t == "continuous" || t == "prismatic";
        };
        auto kind = [](const tinyxml2::XMLElement* j) { return std::string(j->Attribute("type")) == "prismatic" ? 1 : 0; };
        std::vector<std::pair<tinyxml2::XMLElement*, const tinyxml2::XMLElement*>> candidates;  // (mimic, master)
        for (auto* j : joints) {
            if (!movable(j) || j->FirstChildElement("mimic")) continue;
            const auto* parent = j->FirstChildElement("parent");
            const char* plink = parent ? parent->Attribute("link") : nullptr;
            for (const auto* m : joints) {
                const auto* child = m->FirstChildElement("child");
                if (m != j && plink && child && child->Attribute("link") && std::string(child->Attribute("link")) == plink &&
                    movable(m) && kind(m) == kind(j) && !m->FirstChildElement("mimic"))
                    candidates.push_back({j, m});
            }
        }
        for (int k = 0; k < o_.mimic && !candidates.empty(); ++k) {
            const std::size_t c = pick(candidates.size());
            auto [j, m] = candidates[c];
            const double mult = (uniform(0, 1) < 0.5 ? -1 : 1) * uniform(0.5, 1.5), offset = uniform(-0.2, 0.2);
            auto* mimic = j->GetDocument()->NewElement("mimic");
            mimic->SetAttribute("joint", m->Attribute("name"));
            mimic->SetAttribute("multiplier", fmt::format("{:.17g}", mult).c_str());
            mimic->SetAttribute("offset", fmt::format("{:.17g}", offset).c_str());
            j->InsertEndChild(mimic);
            // a joint is a mimic once, and a master is not itself made a mimic (chains come from the file)
            std::vector<std::pair<tinyxml2::XMLElement*, const tinyxml2::XMLElement*>> rest;
            for (const auto& p : candidates)
                if (p.first != j && p.first != m) rest.push_back(p);
            candidates = rest;
        }
    }

    PerturbOptions o_;
    std::mt19937_64 rng_;
};

}  // namespace

std::string perturb_urdf(const std::string& urdf, const std::string& source, const PerturbOptions& o) {
    if (!(o.jitter >= 0 && o.jitter < 0.1))
        throw InputError(fmt::format("--jitter {}: the amplitude must be at least 0 and below 0.1", o.jitter));
    for (int n : {o.tiny_links, o.massless_leaves, o.mimic})
        if (n < 0 || n > 1000) throw InputError(fmt::format("nelu robot perturb: a count must be in [0, 1000], not {}", n));
    {  // a URDF nelu loads (names, links and joints that exist, a tree): the errors of `nelu model`
        LoadOptions lenient;
        lenient.ignore_mimic = true;  // (mimic joints are the perturbation's subject)
        load_urdf_string(urdf, source, lenient);
    }
    tinyxml2::XMLDocument doc;
    if (doc.Parse(urdf.data(), urdf.size()) != tinyxml2::XML_SUCCESS)
        throw InputError(fmt::format("{}malformed XML: {}", location(source, doc.ErrorLineNum()), doc.ErrorStr() ? doc.ErrorStr() : "parse error"));
    if (!doc.RootElement() || std::string(doc.RootElement()->Name()) != "robot" || !doc.RootElement()->FirstChildElement("link"))
        throw InputError(location(source, 0) + "not a URDF with a <robot> root and at least one <link>");
    Perturber(o).run(doc);
    tinyxml2::XMLPrinter printer;
    doc.Print(&printer);
    return printer.CStr();
}

}  // namespace nelu
