// test_schedule.cpp: the schedule pass's parts, called directly. The sparse LU in the IR (lu.hpp)
// solves random sparse systems as a dense LU does; a candidate abandoned for its size says how
// far it got in the order's pivots (not the unknowns, which a trailing block outnumbers) and
// names the bound its caller set.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "lu.hpp"
#include "pipeline.hpp"
#include "schedule.hpp"
#include "test_support.hpp"

namespace {

using nelu::ir::Id;

/// A random sparse n x n matrix whose entries are inputs of `P` (numbered from 0, `values` gets
/// them), diagonally dominant so that its diagonal pivots stay away from zero in any order.
std::vector<std::map<int, Id>> random_matrix(nelu::ir::Program& P, int n, std::mt19937_64& rng, std::vector<double>& values,
                                             Eigen::MatrixXd& dense) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::bernoulli_distribution present(0.3);
    std::vector<std::map<int, Id>> rows(static_cast<std::size_t>(n));
    dense = Eigen::MatrixXd::Zero(n, n);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            if (i != j && !present(rng)) continue;
            const double v = i == j ? n + u(rng) : u(rng);
            rows[i][j] = P.input(nelu::ir::Source::In, static_cast<int>(values.size()));
            values.push_back(v), dense(i, j) = v;
        }
    return rows;
}

}  // namespace

TEST_CASE("schedule: the sparse LU in the IR solves D x + b = 0 as a dense LU does, in any diagonal pivot order") {
    std::mt19937_64 rng(11);
    for (int n : {1, 2, 5, 12, 30}) {
        CAPTURE(n);
        nelu::ir::Program P;
        std::vector<double> values;
        Eigen::MatrixXd D;
        const std::vector<std::map<int, Id>> rows = random_matrix(P, n, rng, values, D);
        std::vector<int> perm(static_cast<std::size_t>(n));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        std::vector<nelu::Pivot> order;
        for (int i : perm) order.push_back({i, i});
        Eigen::VectorXd b(n);
        std::vector<Id> y(static_cast<std::size_t>(n));  // y = -b, then L^-1 y
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        for (int i = 0; i < n; ++i) {
            b(i) = u(rng);
            y[i] = P.neg(P.input(nelu::ir::Source::In, static_cast<int>(values.size())));
            values.push_back(b(i));
        }
        nelu::ir::ZeroTest zt;
        nelu::SparseLu lu(P, zt, rows, n, order, false);
        for (int k = 0; k < n; ++k) REQUIRE(lu.factor() >= 0);
        lu.forward(y);
        std::vector<Id> x(static_cast<std::size_t>(n), -1);
        lu.back(y, x);
        const std::vector<double> val = P.evaluate(nullptr, nullptr, values.data());
        const Eigen::VectorXd ref = D.partialPivLu().solve(-b);
        std::vector<double> got, want;
        for (int i = 0; i < n; ++i) got.push_back(val[x[i]]), want.push_back(ref(i));
        CHECK(nelu::test::rel_error(got, want) < 1e-12);
        CHECK(lu.nnz_U() >= n);  // the diagonal, at least
    }
}

TEST_CASE("schedule: a pivot that is structurally zero at its turn is refused") {
    nelu::ir::Program P;
    const Id a = P.input(nelu::ir::Source::In, 0), c = P.input(nelu::ir::Source::In, 1);
    // [0 a; c 0]: the diagonal pivot (0, 0) has no entry; (0, 1) then (1, 0) works
    const std::vector<std::map<int, Id>> rows = {{{1, a}}, {{0, c}}};
    nelu::ir::ZeroTest zt;
    nelu::SparseLu diagonal(P, zt, rows, 2, {{0, 0}, {1, 1}}, false);
    CHECK(diagonal.factor() < 0);
    nelu::SparseLu crossed(P, zt, rows, 2, {{0, 1}, {1, 0}}, false);
    CHECK(crossed.factor() == a);
    CHECK(crossed.factor() == c);
}

TEST_CASE("schedule: an abandoned candidate counts the order's pivots and names its caller's bound") {
    // a least-squares sensor problem: its orders leave a trailing block, fewer pivots than unknowns
    nelu::CompileOptions o;
    o.urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    o.problem = nelu::test::source_dir() + "/robots/specs/ur5e_accelerometer.yaml";
    o.verify_states = -1, o.validation_configs = 200;
    const nelu::CompileResult r = nelu::compile(o);
    const nelu::PivotOrder& order = r.order.best.order;
    REQUIRE(order.pivots.size() < static_cast<std::size_t>(r.system.n()));
    const long entries = r.order.best.nnz_L + r.order.best.nnz_U;
    REQUIRE(entries > 0);

    auto schedule = [&](long best_entries, long factor, std::string& why) {
        nelu::ScheduleOptions so;
        so.best_entries = best_entries, so.abandon_factor = factor;
        nelu::Factorization f;
        return nelu::run_schedule(r.load.model, r.system, "bounded", order, so, f, why);
    };
    std::string why;
    REQUIRE_FALSE(schedule(1, 3, why));  // a bound of 3 entries: abandoned early
    CAPTURE(why);
    const std::regex said(R"(abandoned after (\d+) of (\d+) pivots: L and U already hold (\d+) entries, more than (\d+)x the best candidate)");
    std::smatch m;
    REQUIRE(std::regex_search(why, m, said));
    const long after = std::stol(m[1]), of = std::stol(m[2]), held = std::stol(m[3]), factor = std::stol(m[4]);
    CHECK(of == static_cast<long>(order.pivots.size()));
    CHECK(factor == 3);
    CHECK(after >= 1);
    CHECK(after <= of);
    CHECK(held > 3);
    // the bound is on the entries held: just under them the same pivot gives up, at them it passes
    std::string again;
    REQUIRE_FALSE(schedule(held - 1, 1, again));
    CHECK(again.find(fmt::format("abandoned after {} of {} pivots: L and U already hold {} entries", after, of, held)) == 0);
    std::string later;
    if (!schedule(held, 1, later)) {
        REQUIRE(std::regex_search(later, m, said));
        CHECK(std::stol(m[1]) > after);
    }
    // with the whole factorization's entries as the bound, no candidate this size is abandoned
    std::string none;
    CHECK(schedule(entries, 1, none));
    CHECK(none.empty());
}
