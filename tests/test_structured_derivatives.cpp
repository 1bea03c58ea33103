// The structured derivatives of inverse dynamics (derivatives.hpp, structured_id_derivatives): every
// term of their formulas is needed (dropping any one makes the compile's verification against
// complex-step differentiation fail), and on the shipped robots they are the form the compiler
// keeps, with fewer operations than forward-mode differentiation of the program (measured here
// with the compiler's Differentiator, apart from the schedule's own count of its forms). The emitted
// solvers are checked against central differences and Pinocchio in test_derivatives and test_oracle.
#include <doctest/doctest.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "derivatives.hpp"
#include "ir.hpp"
#include "pipeline.hpp"
#include "schedule.hpp"
#include "test_support.hpp"

namespace {

std::string robot(const std::string& name) { return nelu::test::source_dir() + "/robots/" + name; }
std::string spec(const std::string& name) { return nelu::test::source_dir() + "/bench/specs/" + name; }

nelu::CompileOptions options(const std::string& urdf, const std::string& problem, bool floating) {
    nelu::CompileOptions o;
    o.urdf = robot(urdf);
    o.problem = problem;
    o.floating_base = floating;
    o.derivatives = true;
    o.verify_states = 8;
    o.validation_configs = 200;
    return o;
}

long ops_of(const nelu::Factorization& f, nelu::JacobianForm form) {
    for (const auto& [name, ops] : f.derivative_forms)
        if (name == form) return ops;
    return -1;
}

/// The operations of a solver of the same outputs and pivot checks with its Jacobian formed by
/// forward-mode differentiation of the value program (derivatives.hpp's Differentiator, one column
/// at a time), measured here, apart from the schedule's own choice among its forms: counted as
/// Factorization::ops_derivatives counts (every live node of the outputs, the pivots that are not
/// constant and the Jacobian; the program is hash-consed, so shared values count once).
long forward_mode_ops(const nelu::CompileResult& r) {
    const nelu::Factorization& f = r.order.best;
    nelu::ir::Program P = f.prog;
    std::vector<nelu::ir::Id> roots = f.outputs;
    for (const nelu::ScheduledPivot& pv : f.pivots)
        if (pv.kind != nelu::PivotKind::Constant) roots.push_back(pv.value);
    for (const nelu::Tangent& t : nelu::jacobian_columns(r.load.model, static_cast<int>(r.system.in.size()))) {
        nelu::Differentiator d(P, r.load.model, t);
        for (nelu::ir::Id o : f.outputs) roots.push_back(d.d(o));
    }
    return P.count(P.live_nodes(roots)).total();
}

}  // namespace

TEST_CASE("structured derivatives: dropping any one term fails the verification against complex step") {
    const std::vector<std::string> terms = {
        "PsiParentVelocity", "UAcceleration", "UVelocity", "PhiVelocity", "OwnInertia", "ChildInertia", "OwnRate",
        "ChildRate", "OwnMomentum", "ChildMomentum", "BetaRate", "BetaMomentum", "GForce", "GInertia", "GRate",
        "GMomentum", "HInertia", "HRate", "HMomentum"};
    // a chain of one-DoF joints, and a floating base (a six-DoF joint) with four legs (the release
    // build only: under the sanitizers the chain covers the same compiler code)
    std::vector<nelu::CompileOptions> problems = {options("ur5e.urdf", "id", false)};
    if (!nelu::test::sanitized()) problems.push_back(options("quadruped_minicheetah.urdf", spec("id_zero_fx.yaml"), true));
    else MESSAGE("the floating Mini Cheetah's terms: dropped and checked in the release build only (sanitizer build)");
    for (const nelu::CompileOptions& base : problems) {
        CAPTURE(base.urdf);
        const nelu::CompileResult ok = nelu::compile(base);
        REQUIRE(ok.derivatives.max_error <= 1e-8);
        for (const std::string& t : terms) {
            CAPTURE(t);
            nelu::CompileOptions o = base;
            o.omit_structured_term = nelu::structured_term(t);
            CHECK_THROWS_WITH_AS(nelu::compile(o), doctest::Contains("verification of the derivatives failed"), std::runtime_error);
        }
    }
    CHECK_THROWS_AS(nelu::structured_term("NoSuchTerm"), std::invalid_argument);
}

TEST_CASE("structured derivatives: the form kept on the shipped robots, fewer operations than forward mode") {
    struct Case {
        std::string urdf, problem;
        bool floating;
    };
    const std::vector<Case> cases = {{"ur5e.urdf", "id", false},
                                     {"ur5e.urdf", "fd", false},
                                     {"panda_gaz2019.urdf", spec("id_zero_fx.yaml"), false},
                                     {"panda_gaz2019.urdf", spec("fd_zero_fx.yaml"), false},
                                     {"quadruped_minicheetah.urdf", spec("id_zero_fx.yaml"), true},
                                     {"quadruped_minicheetah.urdf", spec("fd_zero_fx.yaml"), true},
                                     {"humanoid_winter.urdf", spec("id_zero_fx.yaml"), true},
                                     {"humanoid_winter.urdf", "hybrid", false}};
    for (const Case& c : cases) {
        CAPTURE(c.urdf);
        CAPTURE(c.problem);
        CAPTURE(c.floating);
        const nelu::CompileResult r = nelu::compile(options(c.urdf, c.problem, c.floating));
        const nelu::Factorization& f = r.order.best;
        CHECK(f.derivative_form != nelu::JacobianForm::Forward);
        const long forward = ops_of(f, nelu::JacobianForm::Forward), kept = ops_of(f, f.derivative_form);
        REQUIRE(forward > 0);
        CHECK(kept < forward);
        const long differentiated = forward_mode_ops(r);
        MESSAGE(c.urdf << " " << c.problem << std::string(c.floating ? " floating" : "") << ": " << f.ops_derivatives.total()
                       << " operations with the Jacobian (" << f.derivative_form << "), " << differentiated
                       << " by forward-mode differentiation of the value program");
        CHECK(f.ops_derivatives.total() < differentiated);
        CHECK(r.derivatives.max_error <= 1e-8);
        // every column has the form the per-column search gave it; on the arms' forward dynamics,
        // -M^-1 dID/dx (M^-1 applied, Pinocchio's choice) is the cheaper form of most q and qd
        // columns (the UR5e's: 11 of 12, the Panda's 13 of 14), on the floating robots the solves
        const nelu::ColumnFormCounts& n = f.column_forms;
        CHECK(n.forward + n.structured + n.from_inverse_mass == static_cast<int>(f.jacobian.size() / r.system.out.size()));
        const bool id = c.problem == "id" || c.problem.find("id_zero") != std::string::npos, fd = c.problem == "fd" || c.problem.find("fd_zero") != std::string::npos;
        if (fd && !c.floating) CHECK(n.from_inverse_mass >= 10);
        if (id) CHECK(n.from_inverse_mass == 0);  // no M^-1 among inverse dynamics' columns
    }
}

TEST_CASE("structured derivatives: mimic joints (gripper fixture), id, fd and hybrid, fixed and floating") {
    // each mimic's row and column fold into its master's (G^T dID/dy G): the structured form is
    // kept, against complex step; the fixture has a prismatic master, a revolute mimic of it and a
    // mimic of that mimic
    const std::string dir = nelu::test::source_dir() + "/tests/fixtures/mimic/";
    // and generated robots whose last joints mimic the joint before them: in a chain the master is
    // the mimic's parent (a mimic of a mimic below it), in a tree a body of another branch or an ancestor
    const std::string gen = nelu::test::scratch_dir("structured_derivatives_mimic");
    for (const std::string& g : {std::string("chain --links 6 --mimic 2 --seed 7"), std::string("tree --links 9 --branching 2 --mimic 2 --seed 3")}) {
        const nelu::test::CliResult r = nelu::test::run_nelu("robot gen " + g + " -o '" + gen + "/" + g.substr(0, 4) + ".urdf'");
        REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    }
    for (const std::string& urdf : {dir + "mimic_gripper.urdf", dir + "mimic_gripper_reversed.urdf", gen + "/chai.urdf", gen + "/tree.urdf"})
        for (const std::string& problem : {std::string("id"), std::string("fd"), dir + "spec_hybrid.yaml"})
            for (bool floating : {false, true}) {
                // (the hybrid spec names the fixture's joints; the generated robots' base link has no inertia to float)
                if ((problem.find("hybrid") != std::string::npos || floating) && urdf.find("fixtures") == std::string::npos) continue;
                // (the sanitizer build, whose subject is the compiler's code paths: the first fixture, fixed, id and fd)
                if (nelu::test::sanitized() && (floating || problem.find("hybrid") != std::string::npos || urdf.find("reversed") != std::string::npos ||
                                                urdf.find("fixtures") == std::string::npos))
                    continue;
                CAPTURE(urdf);
                CAPTURE(problem);
                CAPTURE(floating);
                nelu::CompileOptions o = options("", problem, floating);
                o.urdf = urdf;
                const nelu::CompileResult r = nelu::compile(o);
                const nelu::Factorization& f = r.order.best;
                CHECK(f.derivative_form != nelu::JacobianForm::Forward);
                CHECK(ops_of(f, f.derivative_form) < ops_of(f, nelu::JacobianForm::Forward));
                CHECK(f.ops_derivatives.total() < forward_mode_ops(r));
                CHECK(r.derivatives.max_error <= 1e-10);
            }
}

TEST_CASE("structured derivatives: problems they do not apply to keep forward mode") {
    // a least-squares sensor problem, and forward dynamics whose outputs include the links'
    // accelerations (the structured form gives joint quantities only)
    const std::string outputs = nelu::test::scratch_dir("structured_derivatives") + "/fd_link_accelerations.yaml";
    {
        std::ofstream f(outputs);
        f << "version: 2\nproblem: fd\nexternal_wrenches: zero\noutputs: [joint_accelerations, link_accelerations]\n";
    }
    for (const std::string& problem : {nelu::test::source_dir() + "/robots/specs/ur5e_accelerometer.yaml", outputs}) {
        CAPTURE(problem);
        const nelu::CompileResult r = nelu::compile(options("ur5e.urdf", problem, false));
        CHECK(r.order.best.derivative_form == nelu::JacobianForm::Forward);
        CHECK(r.order.best.derivative_forms.size() == 1);
        CHECK(r.derivatives.max_error <= 1e-8);
    }
}
