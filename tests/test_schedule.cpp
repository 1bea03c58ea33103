// test_schedule.cpp: the schedule pass's parts, called directly. The sparse LU in the IR (lu.hpp)
// solves random sparse systems as a dense LU does; a candidate abandoned for its size says how
// far it got in the order's pivots (not the unknowns, which a trailing block outnumbers) and
// names the bound its caller set.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "lu.hpp"
#include "nelu/state.hpp"
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

namespace {

/// A random sparse symmetric saddle-point matrix B (the first `zeros` rows with a zero diagonal,
/// coupled pairwise), written as D = S B P^T: row i of B is row i of D times the sign s_i, column j
/// of B is D's column pc[j]. Entries are inputs of `P`, one per entry of B's upper triangle, so
/// that an entry of D and its mirror are the same node up to sign (as System builds them).
struct SymmetricCase {
    std::vector<std::map<int, Id>> rows;
    nelu::Pairing pairing;
    std::vector<double> values;
    Eigen::MatrixXd D;
};

SymmetricCase symmetric_case(nelu::ir::Program& P, int n, int zeros, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::bernoulli_distribution present(0.35), negative(0.5);
    SymmetricCase c;
    c.rows.resize(static_cast<std::size_t>(n));
    c.D = Eigen::MatrixXd::Zero(n, n);
    std::vector<int> pc(static_cast<std::size_t>(n)), s(static_cast<std::size_t>(n));
    std::iota(pc.begin(), pc.end(), 0);
    std::shuffle(pc.begin(), pc.end(), rng);
    for (int& si : s) si = negative(rng) ? -1 : 1;
    c.pairing.col_of_row = pc;
    c.pairing.row_of_col.assign(static_cast<std::size_t>(n), -1);
    for (int i = 0; i < n; ++i) c.pairing.row_of_col[pc[i]] = i;
    for (int i = 0; i < n; ++i)
        for (int j = i; j < n; ++j) {
            const bool pair_block = i < zeros && j == (i ^ 1) && j < zeros;  // the 2 x 2 blocks [0 x; x 0]
            if (i == j ? i < zeros : !pair_block && !present(rng)) continue;
            const double v = i == j ? n + u(rng) : pair_block ? 2 + u(rng) : u(rng);
            const Id x = P.input(nelu::ir::Source::In, static_cast<int>(c.values.size()));
            c.values.push_back(v);
            for (auto [r, k] : {std::pair{i, j}, std::pair{j, i}}) {
                c.rows[r][pc[k]] = s[r] > 0 ? x : P.neg(x);
                c.D(r, pc[k]) = s[r] * v;
            }
        }
    return c;
}

/// Factors `c` by `order` (with the pairing when `symmetric`) and solves D x = -b for b from `b`;
/// returns x's nodes and, in `ops`, the operations of everything x needs.
std::vector<Id> symmetric_solve(nelu::ir::Program& P, const SymmetricCase& c, const std::vector<nelu::Pivot>& order,
                                const std::vector<Id>& b, bool symmetric, long& mirrored, long& ops) {
    const int n = static_cast<int>(c.rows.size());
    nelu::ir::ZeroTest zt;
    nelu::SparseLu lu(P, zt, c.rows, n, order, false);
    nelu::Pivot unmirrored{-1, -1};
    if (symmetric) REQUIRE(lu.keep_symmetry(c.pairing, unmirrored));
    for (int k = 0; k < n; ++k) REQUIRE(lu.factor() >= 0);
    std::vector<Id> y;
    for (Id bi : b) y.push_back(P.neg(bi));
    lu.forward(y);
    std::vector<Id> x(static_cast<std::size_t>(n), -1);
    lu.back(y, x);
    mirrored = lu.mirrored();
    ops = P.count(P.live_nodes(x)).total();
    return x;
}

}  // namespace

TEST_CASE("schedule: the symmetric elimination computes each mirrored Schur entry once and solves as the LU does") {
    std::mt19937_64 rng(29);
    for (auto [n, zeros] : {std::pair{2, 2}, std::pair{6, 0}, std::pair{9, 4}, std::pair{16, 6}, std::pair{30, 10}}) {
        CAPTURE(n);
        CAPTURE(zeros);
        nelu::ir::Program P;
        const SymmetricCase c = symmetric_case(P, n, zeros, rng);
        // The zero-diagonal pairs by 2 x 2 block pivots (the off-diagonal entry, then its mirror),
        // the rest by 1 x 1 pivots on B's diagonal, in a random order of the blocks.
        std::vector<std::vector<nelu::Pivot>> blocks;
        for (int i = 0; i < zeros; i += 2)
            blocks.push_back({{i, c.pairing.col_of_row[i + 1]}, {i + 1, c.pairing.col_of_row[i]}});
        for (int i = zeros; i < n; ++i) blocks.push_back({{i, c.pairing.col_of_row[i]}});
        std::shuffle(blocks.begin(), blocks.end(), rng);
        std::vector<nelu::Pivot> order;
        for (const auto& bl : blocks) order.insert(order.end(), bl.begin(), bl.end());
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        std::vector<double> values = c.values;
        std::vector<Id> b;
        Eigen::VectorXd bv(n);
        for (int i = 0; i < n; ++i) {
            bv(i) = u(rng);
            b.push_back(P.input(nelu::ir::Source::In, static_cast<int>(values.size())));
            values.push_back(bv(i));
        }
        long mirrored_plain = 0, mirrored = 0, ops_plain = 0, ops = 0;
        const std::vector<Id> x_plain = symmetric_solve(P, c, order, b, false, mirrored_plain, ops_plain);
        const std::vector<Id> x = symmetric_solve(P, c, order, b, true, mirrored, ops);
        const std::vector<double> val = P.evaluate(nullptr, nullptr, values.data());
        const Eigen::VectorXd ref = c.D.fullPivLu().solve(-bv);
        std::vector<double> got, got_plain, want;
        for (int i = 0; i < n; ++i) got.push_back(val[x[i]]), got_plain.push_back(val[x_plain[i]]), want.push_back(ref(i));
        CHECK(nelu::test::rel_error(got, want) < 1e-11);
        CHECK(nelu::test::rel_error(got_plain, want) < 1e-11);
        CHECK(mirrored_plain == 0);
        CAPTURE(ops_plain);
        CAPTURE(ops);
        CAPTURE(mirrored);
        if (n >= 9) {  // enough fill for the mirrors to matter
            CHECK(mirrored > 0);
            CHECK(ops < ops_plain);
        }
        CHECK(ops <= ops_plain);
    }
}

TEST_CASE("schedule: the symmetric elimination is refused where an entry's mirror differs, and a pivot outside the pairing ends it") {
    std::mt19937_64 rng(31);
    nelu::ir::Program P;
    SymmetricCase c = symmetric_case(P, 8, 0, rng);
    // an entry whose mirror is another value: not proven, the LU stays plain
    const int i = 0, j = c.pairing.col_of_row[3];
    c.rows[i][j] = P.input(nelu::ir::Source::In, 99);
    nelu::ir::ZeroTest zt;
    std::vector<nelu::Pivot> order;
    for (int r = 0; r < 8; ++r) order.push_back({r, c.pairing.col_of_row[r]});
    nelu::SparseLu lu(P, zt, c.rows, 8, order, false);
    nelu::Pivot unmirrored{-1, -1};
    CHECK_FALSE(lu.keep_symmetry(c.pairing, unmirrored));
    const bool named = (unmirrored.row == i && unmirrored.col == j) || (unmirrored.row == 3 && unmirrored.col == c.pairing.col_of_row[0]);
    CHECK(named);
    for (int k = 0; k < 8; ++k) REQUIRE(lu.factor() >= 0);
    CHECK(lu.mirrored() == 0);

    // A row and a column outside the pairing (as a Baumgarte reference's): eliminated first, their
    // pivot updates entries between paired rows and columns, and the mirroring ends there; eliminated
    // last, they update nothing paired and the mirroring goes on. Both solve as a dense LU does.
    for (bool outside_first : {true, false}) {
        CAPTURE(outside_first);
        nelu::ir::Program Q;
        std::mt19937_64 rng2(37);
        SymmetricCase e = symmetric_case(Q, 16, 0, rng2);
        const int n = 17, a = 16;
        e.rows.emplace_back();
        e.D.conservativeResize(n, n);
        e.D.row(a).setZero(), e.D.col(a).setZero();
        auto put = [&](int row, int col, double v) {
            e.rows[row][col] = Q.input(nelu::ir::Source::In, static_cast<int>(e.values.size()));
            e.values.push_back(v), e.D(row, col) = v;
        };
        put(a, a, 3.0), put(a, e.pairing.col_of_row[2], 0.7), put(5, a, -0.4);
        e.pairing.col_of_row.push_back(-1), e.pairing.row_of_col.push_back(-1);
        std::vector<nelu::Pivot> ord;
        for (int r = 0; r < 16; ++r) ord.push_back({r, e.pairing.col_of_row[r]});
        ord.insert(outside_first ? ord.begin() : ord.end(), nelu::Pivot{a, a});
        nelu::SparseLu slu(Q, zt, e.rows, n, ord, false);
        REQUIRE(slu.keep_symmetry(e.pairing, unmirrored));
        for (int k = 0; k < n; ++k) REQUIRE(slu.factor() >= 0);
        CHECK((slu.mirrored() == 0) == outside_first);
        std::vector<double> values = e.values;
        std::vector<Id> y;
        Eigen::VectorXd bv(n);
        for (int r = 0; r < n; ++r) {
            bv(r) = std::sin(1.0 + r);
            y.push_back(Q.neg(Q.input(nelu::ir::Source::In, static_cast<int>(values.size()))));
            values.push_back(bv(r));
        }
        slu.forward(y);
        std::vector<Id> x(static_cast<std::size_t>(n), -1);
        slu.back(y, x);
        const std::vector<double> val = Q.evaluate(nullptr, nullptr, values.data());
        const Eigen::VectorXd ref = e.D.fullPivLu().solve(-bv);
        std::vector<double> got, want;
        for (int r = 0; r < n; ++r) got.push_back(val[x[r]]), want.push_back(ref(r));
        CHECK(nelu::test::rel_error(got, want) < 1e-11);
    }
}

TEST_CASE("schedule: the contact systems' elimination keeps the pairing: fewer operations, the same outputs") {
    const std::string spec = nelu::test::source_dir() + "/robots/specs/minicheetah_point_feet.yaml";
    nelu::CompileOptions o;
    o.urdf = nelu::test::source_dir() + "/robots/quadruped_minicheetah.urdf";
    o.problem = spec;
    o.floating_base = true;
    o.verify_states = -1, o.validation_configs = 200;
    const nelu::CompileResult r = nelu::compile(o);
    const nelu::PivotOrder& order = r.order.best.order;
    CHECK(order.symmetric);  // the winner
    nelu::PivotOrder plain = order;
    plain.symmetric = false;
    nelu::Factorization with, without;
    std::string why;
    const nelu::ScheduleOptions so;
    REQUIRE(nelu::run_schedule(r.load.model, r.system, "symmetric", order, so, with, why));
    REQUIRE(nelu::run_schedule(r.load.model, r.system, "plain", plain, so, without, why));
    CAPTURE(with.ops.total());
    CAPTURE(without.ops.total());
    CHECK(with.ops.total() < 0.9 * without.ops.total());  // 7,234 against 8,435 when this was written
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int trial = 0; trial < 20; ++trial) {
        std::vector<double> q = nelu::random_configuration(r.load.model, rng), qd(r.load.model.nv), in(std::max<std::size_t>(1, r.system.in.size()));
        for (double& v : qd) v = u(rng);
        for (double& v : in) v = u(rng);
        const std::vector<double> a = with.prog.evaluate(q.data(), qd.data(), in.data());
        const std::vector<double> b = without.prog.evaluate(q.data(), qd.data(), in.data());
        std::vector<double> ya, yb;
        for (std::size_t k = 0; k < with.outputs.size(); ++k) ya.push_back(a[with.outputs[k]]), yb.push_back(b[without.outputs[k]]);
        CHECK(nelu::test::rel_error(ya, yb) < 1e-12);
    }
}
