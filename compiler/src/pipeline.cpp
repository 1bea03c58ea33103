// pipeline.cpp: see pipeline.hpp.
#include "pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>

#include "diagnostics.hpp"
#include "io.hpp"
#include "model_check.hpp"
#include "model_summary.hpp"
#include "ref_ops.hpp"

namespace nelu {
namespace {

/// Random states on which each candidate ordering is checked before it wins (besides the special
/// configurations).
constexpr int kCandidateStates = 4;

std::string dump_system(const System& s) {
    std::string out = fmt::format("system: {} unknowns, {} equations, nnz(D) {}\n", s.n(), s.rows.size(), s.nnz());
    for (int r = 0; r < s.m(); ++r) {
        out += fmt::format("  row {:>5} {:<28}", r, s.rows[r].label);
        for (const auto& [c, v] : s.entries[r]) out += fmt::format(" {}", s.cols[c].label);
        out += "\n";
    }
    return out;
}

std::string dump_order(const OrderResult& o) {
    std::string out = "candidates:\n";
    for (const auto& c : o.candidates)
        out += c.ok ? fmt::format("  {:<10} ops {:>8} (mul {}, add {}, div {}), fill {}\n", c.name, c.ops.total(), c.ops.mul, c.ops.add, c.ops.div, c.fill)
                    : fmt::format("  {:<10} rejected: {}\n", c.name, c.why);
    out += fmt::format("winner: {}\npivot validation: {} non-constant pivots over {} configurations, worst min/max |pivot| {:.3g} at {}, "
                       "growth {:.3g}\n",
                       o.best.ordering, o.validation.checked_pivots, o.validation.configurations, o.validation.worst_ratio,
                       o.validation.worst_pivot.empty() ? "-" : o.validation.worst_pivot, o.validation.growth);
    const Tail& t = o.best.order.tail;
    if (!t.empty()) {
        int exact = 0;
        for (double w : t.weights) exact += w == 0;
        out += fmt::format("trailing block: {} rows ({} exact, {} measurements) x {} columns{}\n", t.rows.size(), t.weights.empty() ? t.rows.size() : exact,
                           t.weights.empty() ? 0 : t.rows.size() - exact, t.cols.size(),
                           t.basis.empty() ? "" : fmt::format("; the exact rows have rank {} (reduced through {} basis columns)", t.basis.size(), t.basis.size()));
    }
    return out;
}

/// The schedule: the pivots in elimination order, each with its entry of D, its kind, its node of
/// the program and its run-time threshold.
std::string dump_schedule(const System& sys, const Factorization& f) {
    std::string out = fmt::format("schedule: {} pivots ({}), program of {} nodes\n", f.pivots.size(), f.ordering, f.prog.size());
    static const char* kinds[] = {"constant", "articulated", "validated", "gram", "constraint", "lambda"};
    for (std::size_t k = 0; k < f.pivots.size(); ++k) {
        const ScheduledPivot& p = f.pivots[k];
        out += fmt::format("  {:>5} ({}, {}) {} t{}", k, sys.rows[p.at.row].label, sys.cols[p.at.col].label,
                           kinds[static_cast<int>(p.kind)], p.value);
        out += p.threshold > 0 ? fmt::format(" |t| > {:g}\n", p.threshold) : "\n";
    }
    return out;
}

/// The program the emitter prints: every node the outputs (and the Jacobian) and the pivot tests
/// need, in id order, as `tN = a op b`; then which node each output is.
std::string dump_ir(const Factorization& f) {
    const ir::Program& P = f.prog;
    std::vector<ir::Id> roots = f.outputs;
    roots.insert(roots.end(), f.jacobian.begin(), f.jacobian.end());
    for (const ScheduledPivot& p : f.pivots) roots.push_back(p.value);
    const std::vector<bool> live = P.live_nodes(roots);
    auto operand = [&](ir::Id x) {
        const ir::Node& n = P.node(x);
        if (n.op == ir::Op::Const) return fmt::format("{:.17g}", n.value);
        if (n.op == ir::Op::Input) {
            static const char* src[] = {"q", "qd", "in", "lane"};
            return fmt::format("{}[{}]", src[static_cast<int>(n.source)], n.index);
        }
        return fmt::format("t{}", x);
    };
    std::string out = fmt::format("ir: {} live nodes of {}\n", std::count(live.begin(), live.end(), true), P.size());
    for (ir::Id x = 0; x < P.size(); ++x) {
        const ir::Node& n = P.node(x);
        if (!live[x] || n.op == ir::Op::Const || n.op == ir::Op::Input) continue;
        out += fmt::format("  t{} = {}\n", x, ir::spelled(n.op, operand(n.a), n.b >= 0 ? operand(n.b) : std::string()));
    }
    for (std::size_t k = 0; k < f.outputs.size(); ++k) out += fmt::format("  out[{}] = {}\n", k, operand(f.outputs[k]));
    for (std::size_t k = 0; k < f.jacobian.size(); ++k) out += fmt::format("  jac[{}] = {}\n", k, operand(f.jacobian[k]));
    return out;
}

std::string dump_analysis(const Analysis& a) {
    return fmt::format("analysis: n {}, nnz(D) {}, structural rank {}, BTF blocks {} (largest {}), triangularizable {}, "
                       "numeric check at {} configurations, min rcond {:.3g}\n",
                       a.n, a.nnz, a.structural_rank, a.blocks, a.largest_block, a.triangular ? "yes" : "no", a.numeric_configs, a.min_rcond);
}

/// Whether the problem seeks the acceleration of some joint (forward, hybrid, most sensor and
/// response problems): then the model's inertias must be physical.
bool seeks_accelerations(const Model& m, const Problem& p) {
    for (int i = 0; i < m.num_bodies(); ++i)
        if (m.bodies[i].nv() > 0 && (p.joint[i] == JointKnown::Tau || p.joint[i] == JointKnown::None)) return true;
    return false;
}

/// The spec lines that make the accelerations of `joints` known (docs/problem-spec.md), for a
/// problem whose other joints keep what they had.
std::string spec_hint(const Problem& p, const std::vector<std::string>& joints) {
    std::string list;
    for (const std::string& j : joints) list += (list.empty() ? "" : ", ") + j;
    const char* what = joints.size() == 1 ? "this joint's acceleration" : "these joints' accelerations";
    if (p.response_kind())  // (osim and iwim are forward dynamics with every torque known: no joints: key)
        return fmt::format("\n  problem {} is forward dynamics of the whole tree: give {} its subtree's inertia in the URDF{}", p.kind,
                           list, p.floating_base ? ", or compile without --floating-base" : "");
    if (!p.spec_file.empty())
        return fmt::format("\n  to make {} known (and {} sought), list {} in {} under\n    joints:\n      qdd: [{}]\n"
                           "  (see docs/problem-spec.md)", what, joints.size() == 1 ? "its torque" : "their torques",
                           joints.size() == 1 ? "it" : "them", p.spec_file, list);
    return fmt::format("\n  to make {} known (and {} sought), compile with --problem SPEC.yaml, SPEC.yaml being\n"
                       "    version: 1\n    problem: hybrid\n{}    joints:\n      default: {}\n      qdd: [{}]\n"
                       "    external_wrenches: input\n  (see docs/problem-spec.md)",
                       what, joints.size() == 1 ? "its torque" : "their torques", p.floating_base ? "    floating_base: true\n" : "",
                       p.kind == "id" ? "qdd" : "tau", list);
}

/// Joints whose acceleration is sought but around which no inertia moves, and bodies whose
/// inertia is not physical where accelerations are sought.
void check_forward_dynamics(const LoadResult& load, const Problem& p) {
    const Model& m = load.model;
    if (!seeks_accelerations(m, p)) return;
    if (!load.body_defects.empty())
        throw InputError(load.body_defects.front().message + fmt::format(
            "; forward dynamics (problem '{}') needs every moving body's inertia positive semidefinite{}",
            p.kind, load.body_defects.size() > 1 ? fmt::format(" ({} bodies are not)", load.body_defects.size()) : std::string()));
    std::vector<std::string> singular;
    for (const std::string& j : singular_fd_joints(m))
        for (int i = 0; i < m.num_bodies(); ++i)
            if (m.bodies[i].joint_name == j && (p.joint[i] == JointKnown::Tau || p.joint[i] == JointKnown::None)) singular.push_back(j);
    if (singular.empty()) return;
    std::string list;
    bool multi = false;
    for (const std::string& j : singular) {
        list += fmt::format("{}'{}'", list.empty() ? "" : ", ", j);
        for (const Body& b : m.bodies) multi = multi || (b.joint_name == j && b.nv() > 1);
    }
    const char* its = singular.size() > 1 ? "their" : "its";
    throw IllPosedError(fmt::format("ill-posed: the acceleration of joint{} {} is sought, but no mass or inertia resists {} motion{}: "
                                    "forward dynamics is singular there. Give {} subtree inertia, or make {} acceleration known.{}",
                                    singular.size() > 1 ? "s" : "", list, its, multi ? " (in some direction of a multi-DoF joint)" : "",
                                    its, its, spec_hint(p, singular)));
}

}  // namespace

namespace {

/// Whether `name` is an identifier of the C standard library that the generated code's headers
/// declare (<cmath>, <cstring>, <cstdlib>, <cstdio>, <cstddef>, <cstdint>): functions (the math
/// functions with their f and l forms), types and macros. An extern "C" solver of that name would
/// not compile, or would replace the library's function (memcpy) in the whole program.
bool c_library_name(const std::string& name) {
    static const std::set<std::string> math{
        "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos", "cosh", "erf", "erfc", "exp",
        "exp2", "expm1", "fabs", "fdim", "floor", "fma", "fmax", "fmin", "fmod", "frexp", "hypot", "ilogb", "ldexp", "lgamma",
        "llrint", "llround", "log", "log10", "log1p", "log2", "logb", "lrint", "lround", "modf", "nan", "nearbyint", "nextafter",
        "nexttoward", "pow", "remainder", "remquo", "rint", "round", "scalbln", "scalbn", "sin", "sinh", "sqrt", "tan", "tanh",
        "tgamma", "trunc", "sincos", "exp10", "pow10", "j0", "j1", "jn", "y0", "y1", "yn", "gamma", "drem", "significand"};
    static const std::set<std::string> other{
        // <cstring>, <cstdlib>, <cstdio>
        "memcpy", "memmove", "memset", "memcmp", "memchr", "strcpy", "strncpy", "strcat", "strncat", "strcmp", "strncmp", "strlen",
        "strchr", "strrchr", "strstr", "strtok", "strerror", "strcoll", "strxfrm", "strspn", "strcspn", "strpbrk", "strdup",
        "malloc", "calloc", "realloc", "free", "aligned_alloc", "abort", "exit", "quick_exit", "atexit", "at_quick_exit", "_Exit",
        "getenv", "system", "abs", "labs", "llabs", "div", "ldiv", "lldiv", "atof", "atoi", "atol", "atoll", "strtod", "strtof",
        "strtold", "strtol", "strtoll", "strtoul", "strtoull", "rand", "srand", "qsort", "bsearch", "printf", "fprintf", "sprintf",
        "snprintf", "puts", "putchar", "getchar", "fopen", "fclose", "fread", "fwrite", "fflush", "remove", "rename", "perror",
        // types and macros
        "size_t", "ptrdiff_t", "max_align_t", "nullptr_t", "div_t", "ldiv_t", "lldiv_t", "FILE", "fpos_t", "float_t", "double_t",
        "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "intptr_t", "uintptr_t",
        "intmax_t", "uintmax_t", "NULL", "EOF", "NAN", "INFINITY", "HUGE_VAL", "HUGE_VALF", "HUGE_VALL", "EXIT_SUCCESS",
        "EXIT_FAILURE", "RAND_MAX", "errno", "assert", "offsetof", "isfinite", "isinf", "isnan", "isnormal", "signbit",
        "fpclassify", "stdin", "stdout", "stderr", "FP_NAN", "FP_INFINITE", "FP_ZERO", "FP_NORMAL", "FP_SUBNORMAL"};
    if (other.count(name) || math.count(name)) return true;
    const char last = name.empty() ? '\0' : name.back();
    return (last == 'f' || last == 'l') && math.count(name.substr(0, name.size() - 1)) > 0;
}

}  // namespace

CompileResult compile(const CompileOptions& o, std::ostream* dump) {
    CompileResult r;
    auto want = [&](const char* pass) { return dump && o.dump == pass; };
    ProblemInput pin{o.problem, o.floating_base};
    pin.floating_base = spec_requests_floating_base(pin);
    r.load = load_urdf_file(o.urdf, {pin.floating_base, sensor_joints(pin, o.urdf), o.ignore_mimic, o.snap});
    if (r.load.model.num_bodies() == 0)
        throw InputError(fmt::format("{}: robot '{}' has no moving joint (every link is fixed to its root link), so there is nothing to "
                                     "compute; with --floating-base (or 'floating_base: true' in the spec) its root link moves",
                                     o.urdf, r.load.model.name));
    if (want("load")) *dump << format_model_summary(r.load, singular_fd_joints(r.load.model));
    r.problem = run_problem(pin, r.load);
    if (want("problem")) {
        static const char* known[] = {"qdd", "tau", "neither", "both"};
        static const char* wrench[] = {"input", "zero", "unknown"};
        *dump << fmt::format("problem: {}\n", r.problem.kind);
        for (int i = 0; i < r.load.model.num_bodies(); ++i)
            *dump << fmt::format("  {:<24} {} known; f^x {}\n", r.load.model.bodies[i].joint_name,
                                 known[static_cast<int>(r.problem.joint[i])], wrench[static_cast<int>(r.problem.wrench[i])]);
        for (const Sensor& s : r.problem.sensors)
            *dump << fmt::format("  sensor {} ({}) on {}: {} components\n", s.name, sensor_type_name(s.type), s.link.empty() ? s.joint : s.link, s.components.size());
    }
    check_forward_dynamics(r.load, r.problem);
    if (o.progress) std::fprintf(stderr, "nelu: system: building the equations of %d bodies\n", r.load.model.num_bodies());
    r.system = run_system(r.load.model, r.problem);
    if (want("system")) *dump << dump_system(r.system);
    r.equations = r.system.m(), r.unknowns = r.system.n();
    if (r.system.m() > r.system.n()) {  // redundant sensors: weighted least squares
        if (o.progress) std::fprintf(stderr, "nelu: analyze: %d equations for %d unknowns: weighted least squares\n", r.system.m(), r.system.n());
        r.analysis.special_singularity = check_full_column_rank(r.load.model, r.system, &r.analysis.equilibrated);
    }
    if (o.progress) std::fprintf(stderr, "nelu: analyze: %d unknowns\n", r.system.n());
    if (r.system.m() <= r.system.n()) r.analysis = run_analyze(r.load.model, r.system);  // fewer equations: names what is not determined
    else {  // already checked for full column rank; the order works on the rectangular system
        r.analysis.n = r.system.n(), r.analysis.nnz = r.system.nnz(), r.analysis.structural_rank = r.system.n();
    }
    if (want("analyze")) *dump << dump_analysis(r.analysis);
    OrderOptions oo{o.validation_configs, o.progress, nullptr};
    // A candidate whose pivots are safe must also be accurate: a few states through the interpreter
    // (the same check as --verify, whatever --verify says, so that `nelu check` picks the same winner)
    // 1e-10 where a backward error decides or inverse dynamics' forward error; 1e-9 for the forward
    // error of sensor problems and of contact problems that output some of their unknowns only
    const double tolerance = r.system.classical || contact_residual_applies(r.system, r.problem) ? 1e-10 : 1e-9;
    // Contact problems judged by their KKT residual: a candidate must be backward stable to 1e-12
    // (a few thousand rounding units) to win, so that an order whose static pivots amplify the
    // rounding (redundant contacts with a small damping: forward errors of 1e-9 where the dense
    // reference reaches 1e-11) gives way to one that does not; the final verification keeps 1e-10.
    const double selection = contact_residual_applies(r.system, r.problem) ? 1e-12 : tolerance;
    oo.accurate = [&](const Factorization& f) {
        const VerifyReport v = run_verify(r.load.model, r.problem, r.system, f, kCandidateStates);
        if (v.refused_regular > 0)
            return fmt::format("its pivot checks refuse {} of the sample states where the problem is regular (NELU_STATUS_SMALL_PIVOT "
                               "where the reference solves it)", v.refused_regular);
        return v.decisive() <= selection ? std::string()
                                         : fmt::format("forward relative error {:.3g}, backward error {:.3g} over {} states", v.max_rel_error,
                                                       v.max_backward_error, v.states);
    };
    r.order = run_order(r.load.model, r.system, r.analysis, oo);
    if (want("order")) *dump << dump_order(r.order);
    if (o.derivatives) {  // the winner again, with the Jacobian; its pivots keep the validated thresholds
        // a preset takes every link's external wrench as an input: six columns a link, which on a
        // long robot are most of the Jacobian and of its build (a 60-link chain's fd: 540 columns)
        const long wrench_columns = 6 * std::count(r.problem.wrench.begin(), r.problem.wrench.end(), WrenchMode::Input);
        if (o.advice && r.problem.spec_file.empty() && wrench_columns >= 60)
            std::fprintf(stderr, "note: the Jacobian has %ld columns, %ld of them the external wrenches of every link, which problem '%s' "
                                 "takes as inputs; the problem spec {version: 1, problem: %s, external_wrenches: zero} leaves them out "
                                 "(docs/problem-spec.md)\n",
                         static_cast<long>(jacobian_columns(r.load.model, static_cast<int>(r.system.in.size())).size()), wrench_columns,
                         r.problem.kind.c_str(), r.problem.kind.c_str());
        if (o.progress) std::fprintf(stderr, "nelu: schedule: derivatives of %zu outputs\n", r.system.out.size());
        const Factorization& best = r.order.best;
        Factorization f;
        std::string why;
        ScheduleOptions so;
        so.derivatives = true, so.omit_structured_term = o.omit_structured_term, so.lanes = o.lanes;
        if (!run_schedule(r.load.model, r.system, best.ordering, best.order, so, f, why))
            throw std::runtime_error("scheduling the derivatives failed: " + why);
        if (f.pivots.size() != best.pivots.size()) throw std::runtime_error("scheduling the derivatives changed the pivots");
        for (std::size_t k = 0; k < f.pivots.size(); ++k)
            f.pivots[k].threshold = best.pivots[k].threshold, f.pivots[k].threshold_float = best.pivots[k].threshold_float;
        r.order.best = std::move(f);
        if (o.verify_states >= 0) {
            r.derivatives = verify_derivatives(r.load.model, r.problem, r.system, r.order.best, std::max(2, o.verify_states / 4));
            // With redundant contacts the damped KKT system's condition grows as 1/damping, and the
            // Jacobian's rounding with it (measured on a held UR5e with an extra point contact: error
            // 2.8e-10, 3.6e-9, 4.7e-8, 4.8e-6 at damping 1e-6, 1e-7, 1e-8, 1e-10): a property of the
            // problem, not of the program, so exit 1 with what to change
            if (!(r.derivatives.max_error <= 1e-8) && r.system.damping > 0)
                throw IllPosedError(fmt::format("the derivatives cannot be verified to 1e-8: relative error {:.3g} against complex-step "
                                                "differentiation of the value program (at {}). With 'damping: {:g}' the contact forces "
                                                "are those of a damped KKT system whose condition grows as 1/damping, and the Jacobian's "
                                                "rounding error with it; give a larger damping (or fewer, independent contacts), or "
                                                "compile without --derivatives (the values are verified on their own)",
                                                r.derivatives.max_error, r.derivatives.worst, r.system.damping));
            if (r.derivatives.states == 0 && o.verify_states > 0)  // (every state refused: nothing was compared)
                throw std::runtime_error("verification of the derivatives compared no state: the value program refused every one");
            if (!(r.derivatives.max_error <= 1e-8))
                throw std::runtime_error(fmt::format("verification of the derivatives failed over {} states: relative error {:.3g} "
                                                     "against complex-step differentiation of the value program (at {})",
                                                     r.derivatives.states, r.derivatives.max_error, r.derivatives.worst));
        }
    }
    if (o.verify_states >= 0) {
        if (o.progress) std::fprintf(stderr, "nelu: verify: interpreting the program on %d random states\n", o.verify_states);
        r.verify = run_verify(r.load.model, r.problem, r.system, r.order.best, o.verify_states);
        if (r.verify.states == 0 && o.verify_states > 0)  // (every state refused: nothing was compared)
            throw std::runtime_error("verification compared no state: the program refused every one");
        if (!(r.verify.decisive() <= tolerance) && r.analysis.equilibrated && r.verify.refused_regular == 0)
            throw IllPosedError(fmt::format(
                "ill-conditioned in these units: the solver's forward relative error is {:.3g} (backward error {:.3g}) over {} states, "
                "above {:g}. D has full rank at random configurations only once its rows and columns are scaled to comparable "
                "magnitudes (as it comes, its units make it look singular), and the solution's accuracy follows the problem's "
                "condition in the units given: give masses in kg and lengths in m, and the sensors' variances in their units",
                r.verify.max_rel_error, r.verify.max_backward_error, r.verify.states, tolerance));
        if (!(r.verify.decisive() <= tolerance))
            throw std::runtime_error(fmt::format("verification failed over {} states: forward relative error {:.3g}, "
                                                 "backward error {:.3g}{}", r.verify.states, r.verify.max_rel_error, r.verify.max_backward_error,
                                                 r.verify.refused_regular > 0 ? fmt::format("; a pivot check fails at {} states where the "
                                                 "problem is regular", r.verify.refused_regular) : std::string()));
    }
    // the name is the solver function's own: a keyword or a name reserved to the implementation
    // (C++17 [lex.name]) would not compile or would clash with the standard library
    static const std::set<std::string> keywords{
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char",
        "char16_t", "char32_t", "char8_t", "class", "co_await", "co_return", "co_yield", "compl", "concept", "const",
        "const_cast", "consteval", "constexpr", "constinit", "continue", "decltype", "default", "delete", "do", "double",
        "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if",
        "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or",
        "or_eq", "private", "protected", "public", "register", "reinterpret_cast", "requires", "return", "short", "signed",
        "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw",
        "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
        "wchar_t", "while", "xor", "xor_eq", "std", "nelu", "main"};
    auto reserved = [&](const std::string& n) {
        return keywords.count(n) || n.find("__") != std::string::npos || (n.size() > 1 && n[0] == '_' && std::isupper(static_cast<unsigned char>(n[1]))) ||
               c_library_name(n) || n.rfind("NELU", 0) == 0;
    };
    if (o.name.empty()) {
        // from the robot's name: a C identifier without "__" or a leading '_' (both reserved), and
        // "robot_" before one that would still be reserved or begin with a digit
        std::string n;
        for (char ch : c_identifier(r.load.model.name + "_" + r.problem.kind))
            if (ch != '_' || (!n.empty() && n.back() != '_')) n += ch;
        if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0])) || reserved(n)) n = "robot_" + n;
        r.name = n;
    } else {
        r.name = o.name;
        if (r.name != c_identifier(r.name)) throw InputError(fmt::format("--name '{}' is not a C identifier", r.name));
        if (reserved(r.name))
            throw InputError(fmt::format("--name '{}' is a C++ keyword or a name reserved to the compiler, the standard library or nelu; "
                                         "choose another", r.name));
    }
    EmitInput ein;
    ein.name = r.name;
    ein.urdf_path = std::filesystem::path(o.urdf).filename().string();
    ein.urdf_text = read_file(o.urdf);
    if (!r.problem.spec_file.empty()) ein.spec_text = read_file(r.problem.spec_file);
    ein.scalar_double = o.scalar != "float";
    ein.scalar_float = o.scalar != "double";
    ein.max_stack = o.max_stack;
    ein.load = &r.load, ein.problem = &r.problem, ein.system = &r.system, ein.factorization = &r.order.best;
    ein.ignore_mimic = o.ignore_mimic;
    ein.batch = o.batch;
    ein.verified_error = o.verify_states >= 0 ? r.verify.max_rel_error : -1;
    ein.verified_states = r.verify.states;
    Model counted = r.load.model;
    counted.gravity = r.problem.gravity;
    ReferenceOps refops = count_reference_ops(counted);
    ein.reference_rnea = refops.rnea, ein.reference_aba = refops.aba;
    if (!r.system.classical) ein.umfpack_flops = umfpack_flops(r.load.model, r.system);
    r.emitted = run_emit(ein);
    if (want("schedule")) *dump << dump_schedule(r.system, r.order.best);
    if (want("ir")) *dump << dump_ir(r.order.best);
    if (want("emit")) *dump << r.emitted.source;
    return r;
}

std::vector<std::string> write_outputs(const CompileResult& r, const std::string& dir, std::vector<std::pair<std::string, std::string>> extra) {
    std::filesystem::path d(dir);
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    if (ec) throw InputError(dir + ": cannot create the output directory (" + ec.message() + ")");
    std::vector<std::pair<std::string, std::string>> files{{(d / (r.name + ".hpp")).string(), r.emitted.header},
                                                          {(d / (r.name + ".cpp")).string(), r.emitted.source}};
    if (!r.emitted.batch_source.empty()) {
        files.emplace_back((d / (r.name + "_batch.hpp")).string(), r.emitted.batch_header);
        files.emplace_back((d / (r.name + "_batch.cpp")).string(), r.emitted.batch_source);
    }
    files.emplace_back((d / (r.name + ".json")).string(), r.emitted.manifest);
    for (auto& f : extra) files.push_back(std::move(f));
    // an earlier compile's batch form under this name, which this one (without --batch) does not
    // replace: left there, it would build beside the new NAME.cpp and compute the old problem
    std::vector<std::string> stale;
    if (r.emitted.batch_source.empty())
        for (const char* ext : {".hpp", ".cpp"}) {
            const std::string file = r.name + "_batch" + ext, path = (d / file).string();
            std::ifstream in(path, std::ios::binary);
            std::string first;
            if (in && std::getline(in, first) && first.rfind("// " + file + ": generated by nelu", 0) == 0) stale.push_back(path);
        }
    return write_files_atomic(files, stale);
}

}  // namespace nelu
