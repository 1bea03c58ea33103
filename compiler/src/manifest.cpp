// manifest.cpp: see manifest.hpp.
#include "manifest.hpp"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "derivatives.hpp"
#include "nelu/mimic.hpp"
#include "nelu/status.h"
#include "version.hpp"

namespace nelu::emit {
namespace {

/// The form of the emitted code, for the manifest (and code_comment for the header).
nlohmann::ordered_json code_json(const Layout& L) {
    return {{"form", "straight-line"},
            {"statements", L.stmts.size()},
            {"functions", L.parts},
            {"statements_per_function", L.per_part},
            {"work_struct_values", L.work_values},
            {"sincos", {{"angles", L.sincos_first.size()}, {"routine", "nelu::sincos (runtime trig.hpp)"}}}};
}

/// Lane widths of the batch form per target (runtime lanes.hpp): doubles in a vector register; a
/// float lane holds twice as many where there are vector registers (one state at a time without).
const std::vector<std::pair<const char*, int>> kLaneTargets = {
    {"avx512 (__AVX512F__, -march=x86-64-v4)", 8}, {"avx (__AVX__, -march=x86-64-v3)", 4}, {"sse2 (x86-64)", 2},
    {"neon (aarch64)", 2}, {"other targets and compilers, or NELU_LANES_SCALAR", 1}};


/// The workspace form's shape (Layout::work_in_caller): "shape" for programs (nelu check), "values"
/// for readers.
void add_workspace_shape(nlohmann::ordered_json& w, const Layout& L) {
    w["shape"] = L.work_in_caller ? "ordinary_parts" : "every_value";
    w["values"] = L.work_in_caller ? "those crossing its functions (the ordinary form's code, one function's frame on the stack at a time)"
                                   : "every intermediate value (a program of its own)";
}

nlohmann::ordered_json ops_json(const ir::OpCount& c) {
    nlohmann::ordered_json j{{"mul", c.mul}, {"add", c.add}, {"div", c.div}, {"sqrt", c.sqrt}, {"sincos", c.sincos}, {"neg", c.neg}};
    if (c.log) j["rotation_log"] = c.log;  // calls of the rotation-log functions (a 6-D contact's Baumgarte Kp)
    return j;
}

nlohmann::ordered_json slot_json(const Model& m, const Problem& p, const System& sys, const Slot& s) {
    nlohmann::ordered_json j;
    const Body& b = m.bodies[s.body];
    j["quantity"] = quantity_name(s.quantity);
    if (p.response_kind()) {  // an entry of a result matrix, row major
        j["matrix"] = p.kind == "iwim" ? (s.column_of_b < 0 ? "qdd_0" : "M^-1 B") : (s.lambda ? "Lambda" : "Lambda^-1");
        if (s.column_of_b >= 0) j["column"] = s.column_of_b;
        if (s.column_of_b >= 0 && p.kind == "iwim") j["input"] = sys.result_labels.at(static_cast<std::size_t>(s.column_of_b));
        if (p.kind == "osim") {  // which coordinates of which points (a link may carry several)
            j["row"] = s.row_of_result;
            j["row_coordinate"] = osim_label(sys, static_cast<std::size_t>(s.row_of_result), s.lambda);
            j["column_coordinate"] = osim_label(sys, static_cast<std::size_t>(s.column_of_b), !s.lambda);
        }
    }
    if (s.quantity == Quantity::Measurement) {
        const Sensor& sn = p.sensors[s.sensor];
        j["sensor"] = sn.name;
        j["type"] = sn.type_word;
        j["component"] = measurement_component(sn, m, s.comp);  // (as the header names it)
        j["unit"] = measurement_unit(sn, m, s.comp);
        if (sn.type != SensorType::JointTorque && sn.type != SensorType::JointAcceleration) j["variance"] = sn.variance[static_cast<std::size_t>(std::find(sn.components.begin(), sn.components.end(), s.comp) - sn.components.begin())];
    } else if (s.quantity == Quantity::LinkAcceleration || s.quantity == Quantity::JointWrench) {
        j["link"] = b.name;
        j["component"] = component_name(s.quantity, s.comp);
        j["frame"] = b.name;
    } else if (s.contact >= 0) {  // a contact's force, impulse or Baumgarte reference
        const ContactSpec& cs = p.contacts[static_cast<std::size_t>(s.contact)];
        j["contact"] = cs.contact.name;
        j["link"] = cs.link;
        j["component"] = contact_component_name(cs.contact, s.quantity, s.comp);
        j["frame"] = s.quantity == Quantity::ContactReference ? "world"
                     : cs.contact.frame == ContactFrame::Local ? "local" : "local_world_aligned";
    } else if (s.quantity == Quantity::ExternalWrench) {
        j["link"] = s.link.empty() ? b.name : s.link;
        j["component"] = component_name(s.quantity, s.comp);
        j["frame"] = s.link.empty() ? b.name : s.link;
    } else {
        j["joint"] = b.joint_name;
        if (b.nv() > 1)
            j["component"] = component_name(s.quantity == Quantity::JointAcceleration || s.quantity == Quantity::JointVelocity ? Quantity::LinkAcceleration : Quantity::JointWrench, s.comp);
    }
    return j;
}

/// The manifest's account of NAME_derivatives: its columns, the entries of jac that are zero for
/// every input (structure known at compile time), its operations and stack.
nlohmann::ordered_json derivatives_json(const EmitInput& in, const Layout& D) {
    const Model& m = in.load->model;
    const System& sys = *in.system;
    const Factorization& f = *in.factorization;
    const std::vector<Tangent> cols = jacobian_columns(m, static_cast<int>(sys.in.size()));
    nlohmann::ordered_json j;
    j["function"] = D.fn;  // (the name the scalars' entry points take: entry_points)
    nlohmann::ordered_json entries = nlohmann::ordered_json::object();
    if (in.scalar_double) entries["double"] = D.fn;
    if (in.scalar_float) entries["float"] = D.fn + "_f";
    j["entry_points"] = entries;
    j["jac_rows"] = sys.out.size();
    j["jac_cols"] = cols.size();
    j["layout"] = "row-major, rows = out slots, columns = [q-tangent (nv), qd (nv), in (n_in)]";
    j["floating_base_tangent"] = "q (+) d, d = [dw; dv] in the base frame: R(q (+) d) = R(q) exp([dw]x), p(q (+) d) = p + R(q) dv";
    nlohmann::ordered_json columns = nlohmann::ordered_json::array();
    static const char* twist[6] = {"wx", "wy", "wz", "vx", "vy", "vz"};
    for (const Tangent& t : cols) {
        nlohmann::ordered_json c;
        if (t.kind == Tangent::Kind::In) {
            c = slot_json(m, *in.problem, sys, sys.in[static_cast<std::size_t>(t.index)]);
            c["input"] = t.index;
        } else {
            c["quantity"] = t.kind == Tangent::Kind::Q ? "q_tangent" : "qd";
            for (const Body& b : m.bodies)
                if (t.index >= b.v_index && t.index < b.v_index + b.nv()) {
                    c["joint"] = b.joint_name;
                    if (b.nv() > 1) c["component"] = twist[t.index - b.v_index];
                }
        }
        columns.push_back(c);
    }
    j["jac_columns"] = columns;
    nlohmann::ordered_json zeros = nlohmann::ordered_json::array();  // per row: the columns whose entry is structurally 0
    long nzero = 0;
    for (std::size_t r = 0; r < sys.out.size(); ++r) {
        nlohmann::ordered_json row = nlohmann::ordered_json::array();
        for (std::size_t c = 0; c < cols.size(); ++c)
            if (f.jacobian[r * cols.size() + c] == f.prog.zero()) row.push_back(c), ++nzero;
        zeros.push_back(row);
    }
    j["structural_zeros"] = {{"count", nzero}, {"per_row", zeros}};
    j["ops"] = ops_json(f.ops_derivatives);
    // how the Jacobian is formed (docs/derivatives.md, "Method"), and each form's operations as built
    // (outputs and Jacobian, before value numbering): the fewest won
    nlohmann::ordered_json forms = nlohmann::ordered_json::array();
    for (const auto& [form, ops] : f.derivative_forms) forms.push_back({{"form", jacobian_form_name(form)}, {"ops", ops}});
    j["form"] = jacobian_form_name(f.derivative_form);
    j["forms"] = forms;
    if (!f.lane_groups.empty()) {  // docs/derivatives.md, "Columns in lanes"
        long columns = 0;
        for (const LaneGroup& G : f.lane_groups) columns += static_cast<long>(G.columns.size());
        j["lanes"] = {{"columns", columns}, {"groups", f.lane_groups.size()}, {"group_columns", kLaneGroup}, {"kernels", f.lane_kernels.size()},
                      {"ops_per_call", {{"W1", f.lane_ops[0]}, {"W2", f.lane_ops[1]}, {"W4", f.lane_ops[2]}, {"W8", f.lane_ops[3]}}}};
    }
    j["code"] = code_json(D);
    j["stack"] = {{"values_live", D.values}, {"estimate_double", D.stack(sizeof(double))}, {"estimate_float", D.stack(sizeof(float))},
                  {"form", D.workspace ? "ordinary+workspace" : "ordinary"}};
    if (D.workspace) {  // the scalars emitted (a --scalar double solver has no float workspace form)
        nlohmann::ordered_json work = nlohmann::ordered_json::object();
        if (in.scalar_double) work["double"] = {{"entry", D.fn + "_ws"}, {"bytes", D.work_bytes(sizeof(double))}, {"align", alignof(double)}};
        if (in.scalar_float) work["float"] = {{"entry", D.fn + "_f_ws"}, {"bytes", D.work_bytes(sizeof(float))}, {"align", alignof(float)}};
        j["workspace"] = work;
        add_workspace_shape(j["workspace"], D);
    }
    return j;
}

/// The manifest's account of the batch forms (--batch): files, entry points, layout, lane widths.
nlohmann::ordered_json batch_json(const EmitInput& in, const std::vector<Layout>& layouts) {
    const std::string& N = in.name;
    nlohmann::ordered_json j, entries = nlohmann::ordered_json::array(), lanes, widths;
    j["header"] = N + "_batch.hpp";
    j["source"] = N + "_batch.cpp";
    for (const BatchEntry& e : batch_entries(in, layouts)) {
        entries.push_back({{"function", e.name}, {"of", e.of}, {"scalar", e.scalar},
                           {"stack_bytes_per_lane", batch_lane_bytes(in, *e.layout, e.scalar_size())}, {"stack_bytes_fixed", kStackAllowance}});
    }
    j["entry_points"] = entries;
    if (in.scalar_double) widths["double"] = N + "_batch_width";
    if (in.scalar_float) widths["float"] = N + "_f_batch_width";
    j["width_functions"] = widths;
    j["layout"] = "state-major (row-major): q n x nq, qd n x nv, in n x n_in, out n x n_out, jac n x n_out x jac_cols; status n "
                  "(a state that fails leaves its rows untouched)";
    for (const auto& [target, w] : kLaneTargets) lanes[target] = {{"double", w}, {"float", w > 1 ? 2 * w : 1}};
    j["lanes"] = lanes;
    j["sincos"] = {{"double", "nelu::lanes::sincos: nelu::sincos's arithmetic in every lane (bit for bit)"},
                   {"float", "nelu::lanes::sincos: float Cody-Waite reduction and Cephes' sinf/cosf polynomials (the scalar float "
                             "solver calls sinf and cosf)"}};
    return j;
}

/// What the solver was compiled from and the layout of its arguments (name through out).
void add_arguments(nlohmann::ordered_json& j, const EmitInput& in) {
    const Model& m = in.load->model;
    j["name"] = in.name;
    j["generator"] = std::string("nelu ") + NELU_VERSION;
    j["robot"] = {{"name", m.name}, {"urdf", in.urdf_path}, {"fnv1a64", content_hash(in.urdf_text)}};
    j["problem"] = {{"kind", in.problem->kind}, {"spec", spec_name(in)}};
    if (!in.problem->spec_file.empty()) j["problem"]["fnv1a64"] = content_hash(in.spec_text);  // (nelu check compares)
    j["nq"] = independent_q_slots(m).size();
    j["nv"] = independent_v_slots(m).size();
    j["floating_base"] = in.problem->floating_base;
    if (in.ignore_mimic) j["ignore_mimic"] = true;
    j["gravity"] = {in.problem->gravity.l[0], in.problem->gravity.l[1], in.problem->gravity.l[2]};
    if (in.load->snap > 0) {  // the idealization the solver computes (nelu check reloads with it)
        nlohmann::ordered_json changes = nlohmann::ordered_json::array();
        for (const SnapChange& c : in.load->snapped)
            changes.push_back({{"line", c.line}, {"element", c.element}, {"field", c.field}, {"index", c.index}, {"from", c.from}, {"to", c.to}});
        j["snap"] = {{"tolerance", in.load->snap}, {"changes", changes}};
    }
    nlohmann::ordered_json q = nlohmann::ordered_json::array(), qd = nlohmann::ordered_json::array();
    for (const Body& b : m.bodies) {
        if (b.is_mimic()) continue;  // only the independent coordinates
        for (int k = 0; k < b.nq(); ++k) q.push_back(b.joint_name);
        for (int k = 0; k < b.nv(); ++k) qd.push_back(b.joint_name);
    }
    j["q"] = q;
    j["qd"] = qd;
    if (!in.load->mimics.empty()) {
        nlohmann::ordered_json mimic = nlohmann::ordered_json::array();
        for (const MimicJoint& mj : in.load->mimics)
            mimic.push_back({{"joint", mj.joint}, {"master", mj.master}, {"multiplier", mj.multiplier}, {"offset", mj.offset}});
        j["mimic"] = mimic;
    }
    if (in.problem->floating_base)
        j["floating_base_layout"] = {{"joint", "root_joint"},
                                     {"q", "x y z qx qy qz qw: base position in the world and unit quaternion (body to world)"},
                                     {"qd", "wx wy wz vx vy vz: body-frame twist, angular first"}};
    nlohmann::ordered_json ins = nlohmann::ordered_json::array(), outs = nlohmann::ordered_json::array();
    for (const Slot& s : in.system->in) ins.push_back(slot_json(m, *in.problem, *in.system, s));
    for (const Slot& s : in.system->out) outs.push_back(slot_json(m, *in.problem, *in.system, s));
    j["in"] = ins;
    j["out"] = outs;
}

/// What the solver costs, beside the references (ops through ordering).
void add_costs(nlohmann::ordered_json& j, const EmitInput& in) {
    const Factorization& f = *in.factorization;
    nlohmann::ordered_json ops = ops_json(f.ops);
    ops["kinematics"] = ops_json(f.ops_kinematics);
    ops["factorization"] = ops_json(f.ops_factorization);
    ops["solve"] = ops_json(f.ops_solve);
    j["ops"] = ops;
    auto ref = [](const OpCounts& c) {
        return nlohmann::ordered_json{{"mul", c.mul}, {"add", c.add}, {"div", c.div}, {"sqrt", c.sqrt}, {"sin", c.sin}, {"cos", c.cos}};
    };
    j["reference_ops"] = {{"rnea", ref(in.reference_rnea)}, {"aba", ref(in.reference_aba)}};
    j["pattern"] = {{"rows", in.system->m()}, {"cols", in.system->n()}, {"nnz_D", f.nnz_D}, {"nnz_L", f.nnz_L},
                    {"nnz_U", f.nnz_U}, {"fill", f.fill()}};
    if (!in.system->classical) {  // sensor problems: what they measure, and the costs of other routes
        const double n = in.system->n(), mrows = in.system->m();
        nlohmann::ordered_json sensors = nlohmann::ordered_json::array();
        for (const Sensor& s : in.problem->sensors)
            sensors.push_back({{"name", s.name}, {"type", s.type_word}, {"link", s.link}, {"joint", s.joint}, {"reads", s.reads},
                               {"frame", s.frame}, {"components", s.components.size()}, {"variance", s.variance}});
        const long ours = f.ops_factorization.mul + f.ops_factorization.add + f.ops_factorization.div + f.ops_factorization.sqrt +
                          f.ops_solve.mul + f.ops_solve.add + f.ops_solve.div + f.ops_solve.sqrt;
        // dense LU with partial pivoting: 2n^3/3 to factor, 2n^2 to solve; least squares by the
        // normal equations: m n^2 to form them, n^3/3 Cholesky, 2 m n + 2 n^2 to solve
        const double dense = mrows > n ? mrows * n * n + n * n * n / 3 + 2 * mrows * n + 2 * n * n : 2 * n * n * n / 3 + 2 * n * n;
        j["estimation"] = {{"equations", in.system->m()}, {"unknowns", in.system->n()}, {"weighted_least_squares", mrows > n},
                           {"sensors", sensors},
                           {"factor_solve_ops", {{"generated", ours}, {"dense", static_cast<long>(dense)},
                                                 {"umfpack", in.umfpack_flops >= 0 ? nlohmann::ordered_json(static_cast<long>(in.umfpack_flops)) : nlohmann::ordered_json()}}}};
    }
    int nonconst = 0;
    for (const ScheduledPivot& p : f.pivots) nonconst += !f.prog.is_const(p.value);
    j["ordering"] = {{"winner", f.ordering}, {"pivots", f.pivots.size()}, {"non_constant_pivots", nonconst}};
}

/// The entry points' scalars, code and stack, and the workspace form when emitted.
void add_code(nlohmann::ordered_json& j, const EmitInput& in, const Layout& L) {
    j["scalars"] = nlohmann::ordered_json::array();
    if (in.scalar_double) j["scalars"].push_back("double");
    if (in.scalar_float) j["scalars"].push_back("float");
    // what every entry point returns (runtime nelu/status.h), so that a caller reading the manifest
    // alone can name it
    j["status_codes"] = {
        {{"code", NELU_STATUS_OK}, {"name", "NELU_STATUS_OK"}, {"meaning", "solved; out (and jac) written"}},
        {{"code", NELU_STATUS_SMALL_PIVOT}, {"name", "NELU_STATUS_SMALL_PIVOT"},
         {"meaning", "a pivot fell below its threshold (singular or nearly so at this state, or a NaN angle); out untouched"}},
        {{"code", NELU_STATUS_NOT_FINITE}, {"name", "NELU_STATUS_NOT_FINITE"},
         {"meaning", "an output is not finite (a NaN or infinite input, or overflow); out untouched"}}};
    nlohmann::ordered_json estimate, work;
    if (in.scalar_double) {
        estimate["double"] = L.stack(sizeof(double));
        work["double"] = {{"entry", in.name + "_ws"}, {"bytes", L.work_bytes(sizeof(double))}, {"align", alignof(double)}};
    }
    if (in.scalar_float) {
        estimate["float"] = L.stack(sizeof(float));
        work["float"] = {{"entry", in.name + "_f_ws"}, {"bytes", L.work_bytes(sizeof(float))}, {"align", alignof(float)}};
    }
    j["code"] = code_json(L);
    j["stack"] = {{"budget", in.max_stack}, {"values_live", L.values}, {"estimate", estimate},
                  {"form", L.workspace ? "ordinary+workspace" : "ordinary"},
                  {"reason", L.workspace ? "the estimate exceeds the budget (nelu compile --max-stack)" : "the estimate is within the budget"}};
    if (L.workspace) j["workspace"] = work, add_workspace_shape(j["workspace"], L);
}

}  // namespace

std::string manifest(const EmitInput& in, const std::vector<Layout>& layouts, const std::vector<Layout>& batch_layouts) {
    nlohmann::ordered_json j;
    add_arguments(j, in);
    add_costs(j, in);
    add_code(j, in, layouts.front());
    if (in.verified_error >= 0) j["verified"] = {{"states", in.verified_states}, {"tolerance", 1e-9}};
    if (layouts.size() > 1) j["derivatives"] = derivatives_json(in, layouts[1]);
    if (in.batch) j["batch"] = batch_json(in, batch_layouts);
    return j.dump(2) + "\n";
}

std::string spec_name(const EmitInput& in) {
    return in.problem->spec_file.empty() ? std::string() : std::filesystem::path(in.problem->spec_file).filename().string();
}

}  // namespace nelu::emit
