// main.cpp: the `nelu` command line. Wires the passes together; no logic of its own.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "check.hpp"
#include "diagnostics.hpp"
#include "io.hpp"
#include "layout.hpp"
#include "load.hpp"
#include "model_check.hpp"
#include "model_summary.hpp"
#include "pipeline.hpp"
#include "ref_ops.hpp"
#include "report.hpp"
#include "robot_gen.hpp"
#include "robot_perturb.hpp"
#include "spy.hpp"
#include "version.hpp"

namespace {

struct ModelArgs {
    std::string urdf;
    bool floating_base = false;
    std::vector<std::string> keep_fixed;
    bool ignore_mimic = false;
    bool dynamics = false;
    bool json = false;
    std::uint64_t seed = 1;
    double snap = 0;
};

int run_model(const ModelArgs& a) {
    nelu::LoadResult r = nelu::load_urdf_file(a.urdf, {a.floating_base, a.keep_fixed, a.ignore_mimic, a.snap});
    if (a.json) {
        std::cout << nelu::format_model_summary_json(r, nelu::singular_fd_joints(r.model));
        return nelu::kExitOk;
    }
    std::cout << nelu::format_model_summary(r, nelu::singular_fd_joints(r.model));
    if (a.dynamics) std::cout << "\n" << nelu::format_reference_dynamics(r.model, a.seed);
    return nelu::kExitOk;
}

struct GenArgs {
    std::string shape, transforms = "general", output, name;
    int links = 0, branching = 2, mimic = 0;
    std::uint64_t seed = 1;
    bool no_base = false;
};

int run_robot_gen(const GenArgs& a) {
    nelu::RobotGenOptions o;
    o.shape = a.shape == "tree" ? nelu::RobotGenOptions::Shape::Tree : nelu::RobotGenOptions::Shape::Chain;
    o.transforms = a.transforms == "dh" ? nelu::RobotGenOptions::Transforms::Dh : nelu::RobotGenOptions::Transforms::General;
    o.links = a.links, o.branching = a.branching, o.seed = a.seed, o.name = a.name, o.mimic = a.mimic;
    o.base = !a.no_base;
    std::string urdf;
    try {
        urdf = nelu::generate_robot_urdf(o);
    } catch (const std::invalid_argument& e) {
        throw nelu::InputError(std::string("nelu robot gen: ") + e.what());
    }
    if (a.output == "-") std::cout << urdf;
    else nelu::write_file_atomic(a.output, urdf);
    return nelu::kExitOk;
}

struct PerturbArgs {
    std::string urdf, output;
    nelu::PerturbOptions o;
};

int run_robot_perturb(const PerturbArgs& a) {
    const std::string urdf = nelu::perturb_urdf(nelu::read_file(a.urdf), a.urdf, a.o);
    if (a.output == "-") std::cout << urdf;
    else nelu::write_file_atomic(a.output, urdf);
    return nelu::kExitOk;
}

struct CompileArgs {
    nelu::CompileOptions o;
    std::string out_dir = ".";
    std::string spy;  ///< SVG file for the spy plots of D, P D Q and L + U
};

/// One-line summary of a compiled solver, printed by compile and analyze.
void print_summary(const nelu::CompileResult& r) {
    const nelu::Factorization& f = r.order.best;
    std::cout << fmt::format("{}: {} unknowns, nnz(D) {}, structural rank {}, BTF blocks {}{}\n", r.name, r.system.n(),
                             f.nnz_D, r.analysis.structural_rank, r.analysis.blocks, r.analysis.triangular ? " (triangularizable)" : "");
    for (const auto& c : r.order.candidates)
        std::cout << (c.ok ? fmt::format("  candidate {:<10} ops {:>9} fill {}\n", c.name, c.ops.total(), c.fill)
                           : fmt::format("  candidate {:<10} rejected: {}\n", c.name, c.why));
    std::cout << fmt::format("  ordering {}: nnz(L) {}, nnz(U) {}, fill {}; ops mul {}, add {}, div {}, sqrt {}, sincos {} (total {})\n",
                             f.ordering, f.nnz_L, f.nnz_U, f.fill(), f.ops.mul, f.ops.add, f.ops.div, f.ops.sqrt, f.ops.sincos, f.ops.total());
    if (r.order.validation.checked_pivots > 0)
        std::cout << fmt::format("  pivots: {} non-constant, validated over {} configurations; worst min/max |pivot| {:.3g}; growth {:.3g}\n",
                                 r.order.validation.checked_pivots, r.order.validation.configurations, r.order.validation.worst_ratio,
                                 r.order.validation.growth);
    if (r.equations > r.unknowns)
        std::cout << fmt::format("  weighted least squares: {} equations for {} unknowns\n", r.equations, r.unknowns);
    if (!r.analysis.special_singularity.empty())
        std::cout << "  allowed: singular at a special configuration: " << r.analysis.special_singularity << "\n";
    for (const std::string& note : r.problem.notes) std::cerr << "note: " << note << "\n";
    if (!r.analysis.special_singularity.empty() && !r.problem.default_allow_note.empty())
        std::cerr << "note: " << r.problem.default_allow_note << "\n";
    if (r.verify.states > 0)
        std::cout << fmt::format("  verified against the reference on {} states: max relative error {:.2e}{}\n", r.verify.states,
                                 r.verify.max_rel_error, r.verify.seeks_qdd ? fmt::format(", max backward error {:.2e}", r.verify.max_backward_error) : std::string())
                  << (r.verify.reference_refused > 0 ? fmt::format("  ({} of them near a singular contact set, where the dense reference refuses: "
                                                                   "judged by the backward error alone)\n", r.verify.reference_refused)
                                                     : std::string());
    if (r.order.best.jacobian.size() > 0)
        std::cout << fmt::format("  derivatives: {} outputs x {} columns; ops of outputs and Jacobian {} (value solver {}){}\n",
                                 r.system.out.size(), r.order.best.jacobian.size() / std::max<std::size_t>(1, r.system.out.size()),
                                 r.order.best.ops_derivatives.total(), r.order.best.ops.total(),
                                 r.derivatives.states > 0 ? fmt::format("; against complex step on {} states: max relative error {:.2e}",
                                                                        r.derivatives.states, r.derivatives.max_error) : std::string());
    if (r.order.best.jacobian.size() > 0) {
        std::string forms;
        for (const auto& [form, ops] : r.order.best.derivative_forms)
            forms += fmt::format("{}{} {}", forms.empty() ? "" : ", ", jacobian_form_name(form), ops);
        const nelu::ColumnFormCounts& n = r.order.best.column_forms;
        std::cout << fmt::format("  derivative form: {} (operations of each form built: {}); columns by the per-column search: "
                                 "{} forward, {} structured, {} as -M^-1 dID/dx (M^-1 applied)\n",
                                 jacobian_form_name(r.order.best.derivative_form), forms, n.forward, n.structured, n.from_inverse_mass);
        const nelu::Factorization& f = r.order.best;
        if (!f.lane_groups.empty())
            std::cout << fmt::format("  columns in lanes: {} groups of up to {} columns through {} kernels; instructions per call with W "
                                     "columns per instruction: W=1 {}, W=2 {}, W=4 {}, W=8 {}{}\n",
                                     f.lane_groups.size(), nelu::kLaneGroup, f.lane_kernels.size(), f.lane_ops[0], f.lane_ops[1], f.lane_ops[2],
                                     f.lane_ops[3], r.derivatives.states > 0 ? fmt::format("; kernels against the program {:.2e}", r.derivatives.lanes_vs_program)
                                                                             : std::string());
    }
    if (r.verify.refused_singular > 0)
        std::cout << fmt::format("  and NELU_STATUS_SMALL_PIVOT, rightly, on {} more, where the reference is singular too (a kinematic singularity: "
                                 "Lambda does not exist, or the contacts' constraints are dependent)\n",
                                 r.verify.refused_singular);
}

int run_compile(const CompileArgs& a, bool write) {
    // an output path that cannot be a directory is named before the compile, not after it
    if (std::error_code ec; write && std::filesystem::exists(a.out_dir, ec) && !std::filesystem::is_directory(a.out_dir, ec))
        throw nelu::InputError(a.out_dir + ": exists and is not a directory (-o names the output directory)");
    nelu::CompileResult r = [&] {
        try {
            return nelu::compile(a.o, &std::cout);
        } catch (const nelu::IllPosedError& e) {  // which spec on which robot (a spec's input errors name their lines)
            const bool preset = a.o.problem == "id" || a.o.problem == "fd" || a.o.problem == "hybrid";
            throw nelu::IllPosedError(fmt::format("{}{} on {}: {}", preset ? "problem " : "", a.o.problem, a.o.urdf, e.what()));
        }
    }();
    for (const std::string& w : r.load.warnings) std::cerr << "warning: " << w << "\n";
    if (a.o.max_stack > 0 && a.o.max_stack < nelu::emit::kStackAllowance)
        std::cerr << fmt::format("note: --max-stack {} is under the {} bytes nelu allows any call for what it does not count (saved "
                                 "registers, call frames, the math library): no form is estimated to fit. The workspace form, the "
                                 "smallest, is emitted; measure its frames with -fstack-usage (docs/firmware.md, \"Stack\")\n",
                                 a.o.max_stack, nelu::emit::kStackAllowance);
    if (r.load.snap > 0) {
        std::cerr << fmt::format("note: --snap {:g} replaced {} value{} of {} by structure; the solver, the references and the "
                                 "verification use the idealized model:\n", r.load.snap, r.load.snapped.size(),
                                 r.load.snapped.size() == 1 ? "" : "s", r.load.source);
        for (const nelu::SnapChange& c : r.load.snapped) std::cerr << "  " << nelu::format_snap_change(r.load.source, c) << "\n";
    }
    if (a.o.dump.empty()) print_summary(r);
    std::vector<std::pair<std::string, std::string>> spy;
    if (!a.spy.empty()) spy.emplace_back(a.spy, nelu::spy_svg(r.system, r.order.best, r.name + " (" + r.problem.kind + ")"));
    if (write) {
        for (const std::string& f : nelu::write_outputs(r, a.out_dir, std::move(spy)))  // the spy plots with the solver: all or none
            std::cerr << "note: removed " << f << ", an earlier compile's batch form of " << r.name
                      << ", which this compile (without --batch) does not replace\n";
    } else if (!spy.empty())
        (void)nelu::write_files_atomic(spy);
    return nelu::kExitOk;
}

void add_problem_options(CLI::App* cmd, CompileArgs& a) {
    cmd->add_option("urdf", a.o.urdf, "URDF file")->required();
    cmd->add_option("--problem", a.o.problem, "id, fd, hybrid, or a YAML problem spec")->required();
    cmd->add_flag("--floating-base", a.o.floating_base, "Attach the root link to the world by a 6-DoF joint");
    cmd->add_flag("--ignore-mimic", a.o.ignore_mimic, "Treat mimic joints as independent joints (with a warning each)");
    cmd->add_option("--dump", a.o.dump, "Print the output of a pass: load, problem, system, analyze, order, schedule, ir, emit")
        ->check(CLI::IsMember({"load", "problem", "system", "analyze", "order", "schedule", "ir", "emit"}));
    cmd->add_option("--verify", a.o.verify_states, "Random states on which the interpreter checks the program (plus special ones)");
    cmd->add_option("--validate", a.o.validation_configs, "Configurations on which non-constant pivots are validated (default 10000)")
        ->check(CLI::Range(100, 10000000));
    cmd->add_flag("--progress", a.o.progress, "Report progress of long passes on stderr");
    cmd->add_flag("--derivatives", a.o.derivatives, "Also emit NAME_derivatives: the outputs and their Jacobian with respect to "
                  "[q-tangent, qd, in] (docs/derivatives.md)");
    cmd->add_flag("!--no-lanes", a.o.lanes, "With --derivatives: solve the Jacobian's columns one by one in NAME_derivatives, "
                  "not W at a time in the target's vector lanes (docs/derivatives.md, \"Columns in lanes\")");
    cmd->add_flag("--batch", a.o.batch, "Also emit the batch forms NAME_batch, NAME_f_batch (and of NAME_derivatives): n states per "
                  "call in the lanes of the target's vector registers, in NAME_batch.hpp and NAME_batch.cpp (docs/batch.md)");
    cmd->add_option("--snap", a.o.snap, "Idealize near-structure: axis components, rpy angles (to multiples of pi/2), "
                    "origin offsets [m] and products of inertia within TOL of it; every change is reported")
        ->type_name("TOL");
    cmd->add_option("--spy", a.spy, "Write spy plots of D, P D Q and L + U to this SVG file");
}

/// What the batch forms' report says of the build's FMA contraction, and so of bitwise double rows.
const char* contraction_note(nelu::Contraction c) {
    switch (c) {
        case nelu::Contraction::Absent: return "no FMA contraction: double rows bit for bit";
        case nelu::Contraction::Present: return "this build fuses a * b + c (FMA): rows that are not bitwise are judged as the scalar ones";
        case nelu::Contraction::Unknown: break;
    }
    return "a library built without nelu check's contraction probe, which may fuse a * b + c (FMA): rows that are not bitwise "
           "are judged as the scalar ones";
}

int run_check_command(const nelu::CheckOptions& o) {
    nelu::CheckReport r = nelu::run_check(o);
    std::cout << fmt::format("{}: {} and compared with the reference on {} states\n", r.name,
                             o.library.empty() ? "built with " + o.cxx : "loaded from " + o.library, r.states);
    std::cout << fmt::format("  double: max relative error {:.2e}{}\n", r.forward_double,
                             r.seeks_qdd ? fmt::format(", max backward error {:.2e}", r.backward_double) : std::string());
    if (!r.has_float) std::cout << "  float:  no float entry points (the manifest lists double only)\n";
    else if (r.sensor) std::cout << fmt::format("  float:  max relative error {:.2e} (the double solver on the inputs rounded to float: {:.2e})\n",
                                               r.forward_float, r.rounding);
    else std::cout << fmt::format("  float:  max relative error {:.2e}{}{}\n", r.forward_float,
                                  r.seeks_qdd ? fmt::format(", max backward error {:.2e}", r.backward_float) : std::string(),
                                  r.rounded_states ? fmt::format("; judged state by state: at {} states 100 times the double solver's {} error "
                                                                 "on the inputs rounded to float{} (up to {:.2e}) is the tolerance, worst error over "
                                                                 "its tolerance {:.3g}", r.rounded_states, r.seeks_qdd ? "backward" : "relative",
                                                                 r.mimics ? ", or the reference's at the mimic joints' angles and velocities as float arithmetic forms them" : "",
                                                                 r.rounding, r.float_judged)
                                                   : std::string());
    if (r.derivatives)
        std::cout << fmt::format("  derivatives on {} states: jac against the compiler's derivative program {:.2e} (tolerance 1e-10{}), "
                                 "against central differences of the value solver {:.2e} (1e-5{}); out against the value solver {:.2e} (1e-13)"
                                 "{}{}\n",
                                 r.derivative_states, r.jac_vs_ir, r.conditioned_states ? ", larger at the states below" : "",
                                 r.jac_vs_differences, r.conditioned_states ? ", idem" : "", r.out_vs_value,
                                 r.has_float ? fmt::format("; float jac against double {:.2e} (1e-4)", r.jac_float) : std::string(),
                                 r.conditioned_states == 0 ? std::string()
                                 : fmt::format("; at {} states the values' own forward error e set larger tolerances (10 e or 10 x the "
                                               "program's rounding error in double, 10 e / 1e-6, "
                                               "float: 100 e_float or 100 x the double jac's change on the arguments rounded to float): worst error over tolerance {:.2g}, {:.2g}, {:.2g}",
                                               r.conditioned_states, r.jac_vs_ir_judged, r.jac_vs_differences_judged, r.jac_float_judged));
    if (r.batch) {
        std::cout << fmt::format("  batch forms, each against its scalar entry point on every state in calls of n = 1 .. 3W + 1 states and all "
                                 "at once, NaN and infinite inputs mixed in; {}\n",
                                 contraction_note(r.batch_report.contraction));
        for (const nelu::BatchEntryReport& e : r.batch_report.entries) {
            std::cout << fmt::format("    {} (W = {}): {} rows, {} failing states untouched, {} bit for bit, max difference {:.2e}{}{}\n",
                                     e.function, e.width, e.rows, e.failing, e.bitwise, e.vs_scalar,
                                     e.bitwise + e.failing < e.rows ? fmt::format(", the others {:.2e} against the reference", e.judged) : "",
                                     e.errors.empty() ? "" : ": FAIL");
            for (const std::string& why : e.errors) std::cout << "      " << why << "\n";
        }
    }
    if (!r.workspace_entries.empty()) {
        std::string names;
        for (const std::string& n : r.workspace_entries) names += (names.empty() ? "" : ", ") + n;
        std::cout << fmt::format("  workspace forms ({}), each against its ordinary entry point on every state, the workspace full of NaN "
                                 "or huge values first: {} calls, {} {}{}\n",
                                 names, r.workspace_calls, r.workspace_calls - r.workspace_differing,
                                 r.workspace_jac_judged ? "agree (status and out bit for bit; jac, column by column beside the ordinary form's "
                                                          "lanes, within twice the state's Jacobian tolerance)"
                                                        : "bit for bit",
                                 r.workspace_differing ? ": FAIL" : "");
    }
    const bool ok = r.pass();
    std::cout << fmt::format("  {} (tolerances: double {:.0e}, float {:.1e}{}; {} error{})\n", ok ? "PASS" : "FAIL", r.tolerance_double(), r.tolerance_float(),
                             r.rounded_states ? " or per state larger" : "", r.seeks_qdd ? "backward" : "relative", r.failed_status ? fmt::format("; {} calls returned a non-zero status", r.failed_status) : "");
    if (r.special_states > 0)
        std::cout << fmt::format("  and at {} special configurations (the joints at multiples of pi/2 or at limits, all alike or mixed), where the contact set may be "
                                 "singular, whether it refuses only where the reference does\n", r.special_states);
    if (r.refused_singular > 0)
        std::cout << fmt::format("  {} calls returned NELU_STATUS_SMALL_PIVOT where the reference is singular too (a kinematic singularity: Lambda does "
                                 "not exist, or the contacts' constraints are dependent)\n",
                                 r.refused_singular);
    return ok ? nelu::kExitOk : nelu::kExitInternal;
}

struct ReportArgs {
    std::vector<std::string> urdfs;
    std::vector<int> chains;
};

int run_report(const ReportArgs& a) {
    std::vector<std::string> manifests, urdfs;
    for (const std::string& f : a.urdfs) (f.size() > 5 && f.substr(f.size() - 5) == ".json" ? manifests : urdfs).push_back(f);
    if (!manifests.empty()) {
        std::cout << "Operation counts of generated solvers (mul, add, div, sqrt; sincos separately)\n\n"
                  << nelu::format_solver_report(manifests);
        if (urdfs.empty() && a.chains.empty()) return nelu::kExitOk;
        std::cout << "\n";
    }
    std::vector<nelu::NamedModel> models;
    std::vector<int> dh_n;
    for (int n : a.chains) {
        nelu::RobotGenOptions o;
        o.links = n, o.transforms = nelu::RobotGenOptions::Transforms::Dh, o.seed = 1;
        std::string name = fmt::format("dh chain n={}", n);
        models.push_back({name, nelu::load_urdf_string(nelu::generate_robot_urdf(o), name).model});
        dh_n.push_back(n);
    }
    for (const std::string& u : urdfs) {
        models.push_back({u, nelu::load_urdf_file(u).model});
        dh_n.push_back(0);
    }
    std::cout << "Operation counts of the reference algorithms (counting scalar), mul / add; RNEA and ABA with\n"
                 "external wrenches; published counts for unbranched revolute chains with DH-type transforms.\n\n"
              << nelu::format_reference_ops_table(models, dh_n);
    return nelu::kExitOk;
}

/// A seed: a decimal integer in [0, 2^64) (CLI11 would wrap "-1" and saturate the too large).
const CLI::Validator kSeed(
    [](std::string& text) -> std::string {
        std::uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [at, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc() || at != end) return "a seed is an integer from 0 to 18446744073709551615, not '" + text + "'";
        return {};
    },
    "SEED");

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"nelu: sparse-structure compiler for rigid-body dynamics (version " NELU_VERSION ")"};
    app.set_version_flag("--version", NELU_VERSION);
    app.add_flag_callback("--runtime-include", [] {
        std::cout << nelu::runtime_include_dir() << "\n";
        throw CLI::Success();
    }, "Print the directory of the runtime headers that generated code includes (-I for building it) and exit");
    app.require_subcommand(1);

    ModelArgs ma;
    CLI::App* model = app.add_subcommand("model", "Load a URDF and print the model summary");
    model->add_option("urdf", ma.urdf, "URDF file")->required();
    model->add_flag("--floating-base", ma.floating_base, "Attach the root link to the world by a 6-DoF joint");
    model->add_option("--keep-fixed", ma.keep_fixed, "Keep this fixed joint as a body boundary (repeatable)");
    model->add_flag("--ignore-mimic", ma.ignore_mimic, "Treat mimic joints as independent joints (with a warning each)");
    CLI::Option* dynamics = model->add_flag("--dynamics", ma.dynamics, "Also print the reference dynamics at a random state");
    model->add_flag("--json", ma.json, "Print the summary as JSON (bodies, joints, masses, inertias; docs/python.md)")->excludes(dynamics);
    model->add_option("--seed", ma.seed, "Seed of the random state (with --dynamics)")->check(kSeed);
    model->add_option("--snap", ma.snap, "Print the model idealized as `nelu compile --snap TOL` compiles it, with every change")
        ->type_name("TOL");

    GenArgs ga;
    CLI::App* robot = app.add_subcommand("robot", "Robot utilities");
    robot->require_subcommand(1);
    CLI::App* gen = robot->add_subcommand("gen", "Generate a random robot URDF (like Featherstone's autoTree)");
    gen->add_option("shape", ga.shape, "chain or tree")->required()->check(CLI::IsMember({"chain", "tree"}));
    gen->add_option("--links", ga.links, "Number of moving bodies")->required();
    gen->add_option("--branching", ga.branching, "Children per body (tree)");
    gen->add_option("--transforms", ga.transforms, "dh (autoTree shape) or general (random rotations)")
        ->check(CLI::IsMember({"dh", "general"}));
    gen->add_option("--seed", ga.seed, "Random seed")->required()->check(kSeed);
    gen->add_option("--name", ga.name, "Robot name");
    gen->add_option("--mimic", ga.mimic, "The last K joints each mimic the joint before them (a mimic chain)");
    gen->add_flag("--no-base", ga.no_base,
                  "No massless root link 'base' and no joint1: link1 is the root (for --floating-base; the rest is unchanged)");
    gen->add_option("-o,--output", ga.output, "Output URDF file ('-' for standard output)")->required();

    PerturbArgs pa;
    CLI::App* perturb = robot->add_subcommand("perturb", "Write a copy of a URDF perturbed as exporters perturb real files "
                                                         "(robustness tests; see docs/opcounts.md)");
    perturb->add_option("urdf", pa.urdf, "URDF file")->required();
    perturb->add_option("--jitter", pa.o.jitter, "Uniform noise of this amplitude on axes, origins (m, rad) and inertias (relative)");
    perturb->add_option("--tiny-links", pa.o.tiny_links, "Add this many 1 mg links with indefinite inertias on fixed joints");
    perturb->add_option("--massless-leaves", pa.o.massless_leaves, "Add this many zero-mass links on continuous joints");
    perturb->add_option("--mimic", pa.o.mimic, "Make this many joints mimic their parent joint");
    perturb->add_option("--seed", pa.o.seed, "Random seed")->required()->check(kSeed);
    perturb->add_option("-o,--output", pa.output, "Output URDF file ('-' for standard output)")->required();

    CompileArgs ca;
    CLI::App* compile = app.add_subcommand("compile", "Compile a robot and a problem into an unrolled C++ solver");
    add_problem_options(compile, ca);
    compile->add_option("--name", ca.o.name, "C name of the solver (default ROBOT_PROBLEM)");
    compile->add_option("-o,--output", ca.out_dir, "Output directory");
    compile->add_option("--scalar", ca.o.scalar, "double, float or both")->check(CLI::IsMember({"double", "float", "both"}));
    compile->add_option("--max-stack", ca.o.max_stack,
                        "Stack budget in bytes (default 16384): a solver whose estimated stack exceeds it also gets the "
                        "workspace form NAME_ws, which keeps its values in caller-provided memory; 0 always emits it")
        ->check(CLI::Range(0L, 1L << 30));

    CompileArgs aa;
    CLI::App* analyze = app.add_subcommand("analyze", "Well-posedness, pattern and op counts; writes nothing");
    add_problem_options(analyze, aa);

    nelu::CheckOptions ko;
    CLI::App* check = app.add_subcommand("check", "Build a generated solver and compare it with the reference algorithms");
    check->add_option("urdf", ko.urdf, "URDF the solver was generated from")->required();
    check->add_option("manifest", ko.manifest, "DIR/NAME.json of the solver")->required();
    check->add_option("--states", ko.states, "Random states, at least 1 (special configurations are added)");
    check->add_option("--problem", ko.problem, "The problem spec the solver was compiled from (when it was)");
    CLI::Option* library = check->add_option("--library", ko.library, "Check this shared library, already built from NAME.cpp, "
                                              "instead of building one")->type_name("FILE.so");
    check->add_option("--cxx", ko.cxx, "C++ compiler, optionally with flags (\"g++ -O3 -march=x86-64-v3\"); the flags come after nelu's -std=c++17 -O2 -Wall -Wextra -Werror and can override them (default c++)");
    check->add_flag("--ignore-mimic", ko.ignore_mimic, "The solver was compiled with --ignore-mimic (the manifest records it)");
    check->get_option("--cxx")->excludes(library);

    ReportArgs ra;
    CLI::App* report = app.add_subcommand("report", "Operation-count tables");
    report->add_option("files", ra.urdfs, "Solver manifests (NAME.json) to tabulate, or URDF files whose reference algorithms to count");
    report->add_option("--chains", ra.chains, "Also count generated DH revolute chains of these sizes (1 to 10000 links)")
        ->delimiter(',')
        ->check(CLI::Range(1, 10000));

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? nelu::kExitOk : nelu::kExitBadInput;
    }
    try {
        if (*model) return run_model(ma);
        if (*compile) return run_compile(ca, true);
        if (*check) return run_check_command(ko);
        if (*analyze) return run_compile(aa, false);
        if (*gen) return run_robot_gen(ga);
        if (*perturb) return run_robot_perturb(pa);
        if (*report) {
            if (ra.urdfs.empty() && ra.chains.empty()) ra.chains = {7, 30, 100};
            return run_report(ra);
        }
    } catch (const nelu::InputError& e) {
        std::cerr << "error: " << e.what() << "\n";
        return nelu::kExitBadInput;
    } catch (const nelu::IllPosedError& e) {
        std::cerr << "error: " << e.what() << "\n";
        return nelu::kExitIllPosed;
    } catch (const std::exception& e) {
        std::cerr << "internal error: " << e.what() << "\n";
        return nelu::kExitInternal;
    }
    return nelu::kExitInternal;
}
