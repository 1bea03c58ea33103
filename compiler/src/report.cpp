// report.cpp: see report.hpp.
#include "report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "diagnostics.hpp"
#include "io.hpp"
#include "ref_ops.hpp"

namespace nelu {
namespace {

long total(const nlohmann::json& o) { return o.value("mul", 0L) + o.value("add", 0L) + o.value("div", 0L) + o.value("sqrt", 0L); }

std::string split(const nlohmann::json& o) {
    return fmt::format("{} / {} / {}", total(o["kinematics"]), total(o["factorization"]), total(o["solve"]));
}

}  // namespace

std::string format_solver_report(const std::vector<std::string>& paths) {
    std::string s =
        "| solver | robot | problem | nv | ordering | mul | add | div | sincos | total (kin / fact / solve) | "
        "fill | reference | reference total | ratio | published (DH chain formula) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const std::string& p : paths) {
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(read_file(p));
        } catch (const nlohmann::json::exception& e) {
            throw InputError(p + ": not a nelu manifest (" + e.what() + ")");
        }
        if (!j.contains("ops") || !j.contains("reference_ops")) throw InputError(p + ": not a nelu manifest (no ops or reference_ops)");
        const nlohmann::json& ops = j["ops"];
        const std::string kind = j["problem"].value("kind", "?");
        const bool id = kind == "id";
        const char* ref = id ? "rnea" : "aba";
        const long ref_total = total(j["reference_ops"][ref]);
        const int nv = j.value("nv", 0);
        OpCounts pub = id ? published_rnea(nv) : published_aba(nv);
        s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} | {:.2f} | {} |\n",
                         j.value("name", "?"), j["robot"].value("name", "?"), kind, nv, j["ordering"].value("winner", "?"),
                         ops.value("mul", 0L), ops.value("add", 0L), ops.value("div", 0L), ops.value("sincos", 0L), total(ops),
                         split(ops), j["pattern"].value("fill", 0L), id ? "RNEA" : "ABA", ref_total,
                         ref_total > 0 ? double(total(ops)) / double(ref_total) : 0.0, pub.mul + pub.add);
    }
    s += "\nreference: the project's RNEA (inverse dynamics) or ABA (forward and hybrid dynamics) with external wrenches, "
         "run through the counting scalar on the same robot (sin and cos not counted). published: 93n-108 mul + 81n-100 add "
         "(RNEA) or 224n-259 mul + 205n-248 add (ABA) with n = nv; it applies to unbranched revolute chains with DH-type "
         "transforms only.\n";
    return s;
}

}  // namespace nelu
