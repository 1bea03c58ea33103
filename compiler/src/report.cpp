// report.cpp: see report.hpp.
#include "report.hpp"

#include <set>

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
    std::string est;
    for (const std::string& p : paths) {
        try {  // (not JSON, or a field of the wrong type or missing where it is read)
            nlohmann::json j = nlohmann::json::parse(read_file(p));
            if (!j.is_object()) throw InputError(p + ": not a nelu manifest (not a JSON object)");
            if (!j.contains("ops") || !j.contains("reference_ops")) throw InputError(p + ": not a nelu manifest (no ops or reference_ops)");
            const nlohmann::json& ops = j["ops"];
            const std::string kind = j["problem"].value("kind", "?");
            const bool id = kind == "id";
            const char* ref = id ? "rnea" : "aba";
            const long ref_total = total(j["reference_ops"][ref]);
            const int nv = j.value("nv", 0);
            const OpCounts pub = id ? published_rnea(nv) : published_aba(nv);
            std::string problem = kind, reference = id ? "RNEA" : "ABA", published = std::to_string(pub.mul + pub.add);
            // a contact problem (forces or impulses among its outputs; fd or impulse, so against ABA on
            // the same robot without its contacts)
            std::set<std::string> contacts;
            long forces = 0;
            for (const nlohmann::json& slot : j.value("out", nlohmann::json::array()))
                if (slot.value("quantity", "") == "contact_force" || slot.value("quantity", "") == "contact_impulse")
                    contacts.insert(slot.value("contact", "?")), ++forces;
            if (!contacts.empty()) {
                problem = fmt::format("{}, {} contact{} ({} components)", kind, contacts.size(), contacts.size() == 1 ? "" : "s", forces);
                reference = "ABA without the contacts", published = "-";
            } else if (j.contains("estimation")) {  // a sensor problem: compare the ways of solving the same system
                const nlohmann::json& e = j["estimation"];
                const nlohmann::json& c = e["factor_solve_ops"];
                const long ours = c.value("generated", 0L), dense = c.value("dense", 0L);
                const long umf = c["umfpack"].is_number() ? c["umfpack"].get<long>() : -1;
                est += fmt::format("| {} | {} | {} x {} | {} | {} | {} | {} | {} | {:.1f} |\n", j.value("name", "?"), j["robot"].value("name", "?"),
                                   e.value("equations", 0), e.value("unknowns", 0), e.value("weighted_least_squares", false) ? "WLS" : "square",
                                   e["sensors"].size(), ours, umf >= 0 ? std::to_string(umf) : std::string("-"), dense,
                                   umf > 0 ? double(umf) / double(ours) : double(dense) / double(ours));
                continue;
            }
            s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} | {:.2f} | {} |\n",
                             j.value("name", "?"), j["robot"].value("name", "?"), problem, nv, j["ordering"].value("winner", "?"),
                             ops.value("mul", 0L), ops.value("add", 0L), ops.value("div", 0L), ops.value("sincos", 0L), total(ops),
                             split(ops), j["pattern"].value("fill", 0L), reference, ref_total,
                             ref_total > 0 ? double(total(ops)) / double(ref_total) : 0.0, published);
        } catch (const nlohmann::json::exception& e) {
            throw InputError(p + ": not a nelu manifest (" + e.what() + ")");
        }
    }
    if (!est.empty())
        s += "\nSensor problems: factorization and solve of the same system (kinematics excluded)\n\n"
             "| solver | robot | equations x unknowns | kind | sensors | generated (static pivots) | UMFPACK at run time | "
             "dense | run-time sparse / generated |\n|---|---|---|---|---|---|---|---|---|\n" + est +
             "\nUMFPACK: its flop count for one factorization of D at a random configuration plus 2 (nnz(L) + nnz(U)) for the "
             "solves (for weighted least squares, of the augmented system [Sigma D; D^T 0]). dense: 2n^3/3 + 2n^2 (LU), "
             "or m n^2 + n^3/3 + 2mn + 2n^2 (normal equations) for weighted least squares.\n";
    s += "\nreference: the project's RNEA (inverse dynamics) or ABA (forward and hybrid dynamics) with external wrenches, "
         "run through the counting scalar on the same robot (sin and cos not counted). published: 93n-108 mul + 81n-100 add "
         "(RNEA) or 224n-259 mul + 205n-248 add (ABA) with n = nv; it applies to unbranched revolute chains with DH-type "
         "transforms only.\n";
    return s;
}

}  // namespace nelu
