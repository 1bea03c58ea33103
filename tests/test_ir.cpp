// test_ir.cpp: the scalar IR's value numbering (ir::merge_equal_values): equal values merge,
// values that are each other's negation merge into a free negation, other values stay apart, and
// the rewritten program computes what the original did.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ir.hpp"

namespace {

using nelu::ir::Id;
using nelu::ir::Program;
using nelu::ir::Source;

/// Total operations (mul + add + div + sqrt) of the live part of P for `roots`.
long ops(const Program& P, const std::vector<Id>& roots) { return P.count(P.live_nodes(roots)).total(); }

/// Where `roots` went in the rewritten program.
std::vector<Id> mapped(const nelu::ir::Rewrite& rw, const std::vector<Id>& roots) {
    std::vector<Id> out;
    for (Id r : roots) out.push_back(rw.map[r]);
    return out;
}

/// The rewritten program's roots, evaluated, against the original's at random inputs.
void check_same_values(const Program& P, const std::vector<Id>& roots, const nelu::ir::Rewrite& rw, int nin) {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    for (int trial = 0; trial < 20; ++trial) {
        std::vector<double> in(nin);
        for (double& x : in) x = u(rng);
        const std::vector<double> a = P.evaluate(nullptr, nullptr, in.data());
        const std::vector<double> b = rw.prog.evaluate(nullptr, nullptr, in.data());
        for (Id r : roots) CHECK(b[rw.map[r]] == doctest::Approx(a[r]).epsilon(1e-14));
    }
}

}  // namespace

TEST_CASE("ir: value numbering merges sums built in another order") {
    Program P;
    const Id a = P.input(Source::In, 0), b = P.input(Source::In, 1), c = P.input(Source::In, 2);
    const Id left = P.add(P.add(a, b), c), right = P.add(a, P.add(b, c));
    const std::vector<Id> roots = {P.mul(left, c), P.mul(right, a)};
    REQUIRE(ops(P, roots) == 6);  // hash-consing alone sees two different sums
    std::vector<int> bounds;
    const nelu::ir::Rewrite rw = nelu::ir::merge_equal_values(P, roots, bounds);
    const std::vector<Id> new_roots = mapped(rw, roots);
    CHECK(ops(rw.prog, new_roots) == 4);  // one sum of three, two products
    check_same_values(P, roots, rw, 3);
}

TEST_CASE("ir: value numbering turns b - a beside a - b into a free negation") {
    Program P;
    const Id a = P.input(Source::In, 0), b = P.input(Source::In, 1), c = P.input(Source::In, 2),
             d = P.input(Source::In, 3);
    // (a c - b c) and (b c - a c): the second is the negation of the first, though neither
    // hash-consing nor folding can see it (different operand order of the subtraction).
    const Id x = P.sub(P.mul(a, c), P.mul(b, c));
    const Id y = P.sub(P.mul(b, c), P.mul(a, c));
    const std::vector<Id> roots = {P.mul(x, d), P.add(y, d)};
    REQUIRE(ops(P, roots) == 6);
    std::vector<int> bounds;
    const nelu::ir::Rewrite rw = nelu::ir::merge_equal_values(P, roots, bounds);
    const std::vector<Id> new_roots = mapped(rw, roots);
    CHECK(ops(rw.prog, new_roots) == 5);  // y costs nothing; d + y became d - x
    check_same_values(P, roots, rw, 4);

    SUBCASE("without merging, the rewrite only compacts") {
        std::vector<int> none;
        const nelu::ir::Rewrite plain = nelu::ir::merge_equal_values(P, roots, none, false);
        CHECK(ops(plain.prog, mapped(plain, roots)) == 6);
    }
}

TEST_CASE("ir: value numbering keeps values that differ apart") {
    Program P;
    const Id a = P.input(Source::In, 0), b = P.input(Source::In, 1), c = P.input(Source::In, 2);
    // a - b, a + b, b - c and 2 (a - b): none equals another or another's negation.
    const Id s = P.sub(a, b), t = P.add(a, b), u = P.sub(b, c), v = P.add(P.sub(a, b), P.sub(a, b));
    const Id w = P.mul(P.constant(3.0), P.sub(a, b));
    const std::vector<Id> roots = {s, t, u, v, w};
    std::vector<int> bounds;
    const nelu::ir::Rewrite rw = nelu::ir::merge_equal_values(P, roots, bounds);
    const std::vector<Id> new_roots = mapped(rw, roots);
    for (std::size_t i = 0; i < new_roots.size(); ++i)
        for (std::size_t j = i + 1; j < new_roots.size(); ++j) CHECK(new_roots[i] != new_roots[j]);
    CHECK(ops(rw.prog, new_roots) == ops(P, roots));
    check_same_values(P, roots, rw, 3);
}

// ir::LiveCount, which the derivative column search moves roots through, against the count of the
// live nodes recomputed from scratch, over a random program and a random walk of roots.
TEST_CASE("ir: LiveCount follows count(live_nodes(roots)) as roots come and go") {
    Program P;
    std::mt19937_64 rng(7);
    std::vector<Id> nodes;
    for (int i = 0; i < 6; ++i) nodes.push_back(P.input(Source::In, i));
    for (int i = 0; i < 400; ++i) {  // sums, differences, products, quotients, roots, sines and negations
        const Id a = nodes[rng() % nodes.size()], b = nodes[rng() % nodes.size()];
        switch (rng() % 7) {
            case 0: nodes.push_back(P.add(a, b)); break;
            case 1: nodes.push_back(P.sub(a, b)); break;
            case 2: nodes.push_back(P.mul(a, b)); break;
            case 3: nodes.push_back(P.div(a, b)); break;
            case 4: nodes.push_back(P.sqrt(a)); break;
            case 5: nodes.push_back(P.sin(a)); break;
            default: nodes.push_back(P.negation(a)); break;
        }
    }
    nelu::ir::LiveCount live(P);
    std::vector<Id> roots;  // a multiset: the same node may be a root twice
    for (int step = 0; step < 600; ++step) {
        if (!roots.empty() && rng() % 3 == 0) {
            const std::size_t k = rng() % roots.size();
            live.remove(roots[k]);
            roots.erase(roots.begin() + static_cast<long>(k));
        } else {
            roots.push_back(nodes[rng() % nodes.size()]);
            live.add(roots.back());
        }
        REQUIRE(live.total() == ops(P, roots));
    }
    CHECK(ops(P, roots) > 0);
    for (Id r : roots) live.remove(r);
    CHECK(live.total() == 0);
}
