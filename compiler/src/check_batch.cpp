// check_batch.cpp: see check_batch.hpp.
#include "check_batch.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "nelu/status.h"
#include "verify.hpp"

namespace nelu {
namespace {

constexpr unsigned char kUntouched = 0x5a;  // every byte of the outputs a call must not write
constexpr int kGuardStatus = -12345;         // the statuses around a call's array
constexpr std::size_t kMaxErrors = 5;        // errors described per entry point

constexpr const char* kListed = "the manifest lists batch forms";

/// Which states get a failing input: a NaN velocity (every 7th), a NaN joint position (every 11th:
/// a pivot test fails where the position reaches a pivot), an infinite input (every 13th).
bool poisoned(std::size_t k) { return k % 7 == 3 || k % 11 == 5 || k % 13 == 6; }

BatchStates poison(BatchStates s) {
    for (std::size_t k = 0; k < s.q.size(); ++k) {
        if (k % 7 == 3 && !s.qd[k].empty()) s.qd[k][0] = std::numeric_limits<double>::quiet_NaN();
        if (k % 11 == 5 && !s.q[k].empty()) s.q[k].back() = std::numeric_limits<double>::quiet_NaN();
        if (k % 13 == 6 && !s.in[k].empty()) s.in[k][0] = std::numeric_limits<double>::infinity();
    }
    return s;
}

bool untouched(const void* p, std::size_t bytes) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    return std::all_of(b, b + bytes, [](unsigned char c) { return c == kUntouched; });
}

/// A scalar entry point and its batch form in scalar S, value or derivatives alike (jac null, and
/// njac 0, for a value solver).
template <class S>
struct Entry {
    std::function<int(const S* q, const S* qd, const S* in, S* out, S* jac)> scalar;
    std::function<int(int n, const S* q, const S* qd, const S* in, S* out, S* jac, int* status)> batch;
    std::size_t nout = 0, njac = 0;  // jac entries per state
    bool exact = false;              // rows must be the scalar's bit for bit
    bool single = false;
};

/// Rows of states k0, k0 + 1, .., k0 + n - 1 (taken in turn, wrapping around) gathered state-major
/// into an array of exactly their size (so that the sanitizers see a read past it).
template <class S>
std::vector<S> rows(const std::vector<std::vector<double>>& x, std::size_t k0, int n) {
    std::vector<S> r;
    for (std::size_t j = 0; j < static_cast<std::size_t>(n); ++j) r.insert(r.end(), x[(k0 + j) % x.size()].begin(), x[(k0 + j) % x.size()].end());
    return r;
}

/// One call of e.batch on states k0 .. k0 + n - 1 (wrapping around), against the scalar results
/// (status, out row and jac row per state) in `expected`.
template <class S>
void run_call(const Entry<S>& e, const BatchStates& st, std::size_t k0, int n, const std::vector<int>& status_of,
              const std::vector<std::vector<S>>& expected, const BatchJudge& judge, BatchEntryReport& r) {
    auto error = [&](const std::string& what) {
        if (r.errors.size() < kMaxErrors) r.errors.push_back(fmt::format("n = {}, first state {}: {}", n, k0, what));
    };
    const std::size_t row = e.nout + e.njac, un = static_cast<std::size_t>(n);
    const std::vector<S> q = rows<S>(st.q, k0, n), qd = rows<S>(st.qd, k0, n), in = rows<S>(st.in, k0, n);
    std::vector<S> out((un + 2) * e.nout), jac((un + 2) * e.njac);  // a guard row before and after
    for (std::vector<S>* v : {&out, &jac})
        if (!v->empty()) std::memset(v->data(), kUntouched, v->size() * sizeof(S));
    std::vector<int> status(un + 2, kGuardStatus);
    const int failed = e.batch(n, q.data(), qd.data(), in.data(), out.data() + e.nout, e.njac ? jac.data() + e.njac : nullptr, status.data() + 1);
    if (status[0] != kGuardStatus || status[un + 1] != kGuardStatus) error("a status outside the array was written");
    if (!untouched(out.data(), e.nout * sizeof(S)) || !untouched(out.data() + (un + 1) * e.nout, e.nout * sizeof(S)) ||
        (e.njac && (!untouched(jac.data(), e.njac * sizeof(S)) || !untouched(jac.data() + (un + 1) * e.njac, e.njac * sizeof(S)))))
        error("an output outside the array was written");
    int counted = 0;
    for (std::size_t j = 0; j < un; ++j) {
        const std::size_t k = (k0 + j) % st.q.size();
        const S* o = out.data() + (j + 1) * e.nout;
        const S* J = jac.data() + (j + 1) * e.njac;
        ++r.rows;
        if (status[j + 1] != status_of[k]) error(fmt::format("state {}: status {}, the scalar entry point's {}", k, status[j + 1], status_of[k]));
        if (status[j + 1] != NELU_STATUS_OK) {
            ++counted, ++r.failing;
            if (!untouched(o, e.nout * sizeof(S)) || !untouched(J, e.njac * sizeof(S))) error(fmt::format("state {} failed but its rows were written", k));
            continue;
        }
        std::vector<S> got(o, o + e.nout);
        got.insert(got.end(), J, J + e.njac);
        const bool bitwise = std::memcmp(got.data(), expected[k].data(), row * sizeof(S)) == 0;
        r.bitwise += bitwise;
        const std::vector<double> g(got.begin(), got.end()), x(expected[k].begin(), expected[k].end());
        const double vs_scalar = forward_error(g, x, /*nan_as_nan=*/true);  // two rows of one solver
        r.vs_scalar = std::max(r.vs_scalar, vs_scalar);
        if (e.exact && !bitwise) error(fmt::format("state {}: the row differs from the scalar entry point's (relative {:.3g})", k, vs_scalar));
        if (!bitwise && poisoned(k)) {  // (its inputs are not the reference's state): against the scalar row only
            const double flat = e.single ? judge.tolerance_float : judge.tolerance_double;
            if (!(vs_scalar <= flat)) error(fmt::format("state {} (a non-finite input): the row differs from the scalar entry point's by {:.3g}", k, vs_scalar));
        }
        if (!bitwise && !poisoned(k)) {
            const double err = judge.error(k, g, e.single);
            r.judged = std::max(r.judged, err);
            r.judged_share = std::max(r.judged_share, err / judge.tolerance(k, g, e.single));
            if (judge.values) {
                const std::vector<double> values(g.begin(), g.begin() + static_cast<long>(e.nout));
                const double ev = judge.values->error(k, values, e.single), tv = judge.values->tolerance(k, values, e.single);
                if (!(ev <= tv)) error(fmt::format("state {}: the outputs' error {:.3g} against the reference, above {:.1e}", k, ev, tv));
            }
        }
    }
    if (failed != counted) error(fmt::format("returned {}, but {} states failed", failed, counted));
}

/// Every state through e.batch in calls of 1, 2, .., 3W + 1 states (each size at least once), then
/// all at once.
template <class S>
BatchEntryReport check_entry(const std::string& function, int width, const Entry<S>& e, const BatchStates& clean, const BatchJudge& judge) {
    BatchEntryReport r;
    r.function = function, r.width = width;
    const BatchStates st = poison(clean);
    const std::size_t count = st.q.size(), row = e.nout + e.njac;
    std::vector<int> status_of(count);
    std::vector<std::vector<S>> expected(count, std::vector<S>(row));
    for (std::size_t k = 0; k < count; ++k) {
        const Arguments<S> a(st.q[k], st.qd[k], st.in[k]);
        status_of[k] = e.scalar(a.q.data(), a.qd.data(), a.in.data(), expected[k].data(), e.njac ? expected[k].data() + e.nout : nullptr);
    }
    // every call size from 1 to 3W + 1, the states taken in turn (wrapping around), and on until
    // every state was in a call; then all of them at once
    const int cycle = 3 * std::max(width, 1) + 1;
    std::size_t k = 0;
    for (int n = 1;; n = n % cycle + 1) {
        run_call(e, st, k % count, n, status_of, expected, judge, r);
        k += static_cast<std::size_t>(n);
        if (n == cycle && k >= count) break;
    }
    run_call(e, st, 0, static_cast<int>(count), status_of, expected, judge, r);
    const double tolerance = e.single ? judge.tolerance_float : judge.tolerance_double;
    if (!(r.judged_share <= 1))
        r.errors.push_back(judge.state_tolerance
                               ? fmt::format("rows that differ from the scalar entry point's: error {:.3g} against the reference, {:.3g} times "
                                             "their state's tolerance (at least {:.1e})",
                                             r.judged, r.judged_share, tolerance)
                               : fmt::format("rows that differ from the scalar entry point's: error {:.3g} against the reference, above {:.1e}",
                                             r.judged, tolerance));
    return r;
}

/// NAME or NAME_f (S float), or their _derivatives (`fn`), and their batch forms.
template <class S>
Entry<S> entry(const SolverLibrary& lib, const std::string& fn, std::size_t nout, std::size_t njac, bool exact) {
    Entry<S> e;
    e.nout = nout, e.njac = njac, e.exact = exact, e.single = std::is_same_v<S, float>;
    const std::string scalar = fn + scalar_suffix<S>(), batch = scalar + "_batch";
    if (njac == 0) {
        auto f = lib.require<ValueFn<S>>(scalar, kListed);
        auto b = lib.require<ValueBatchFn<S>>(batch, kListed);
        e.scalar = [f](const S* q, const S* qd, const S* in, S* out, S*) { return f(q, qd, in, out); };
        e.batch = [b](int n, const S* q, const S* qd, const S* in, S* out, S*, int* status) { return b(n, q, qd, in, out, status); };
    } else {
        e.scalar = lib.require<DerivativesFn<S>>(scalar, kListed);
        e.batch = lib.require<DerivativesBatchFn<S>>(batch, kListed);
    }
    return e;
}

}  // namespace

BatchReport check_batch(const SolverLibrary& lib, const std::string& name, std::size_t nout, std::size_t njac, const BatchStates& states,
                        const BatchJudge& value_judge, const BatchJudge& jac_judge, bool jac_exact) {
    if (states.q.empty()) throw std::invalid_argument("nelu check: no states to run the batch forms on");
    BatchReport rep;
    rep.contraction = lib.contraction();
    // bit for bit where the lanes compute the scalar arithmetic (double lanes, and float lanes of
    // width 1: sinf and cosf, as the scalar float function) in a build known not to contract
    const bool exact = rep.contraction == Contraction::Absent;
    const int wd = lib.require<BatchWidthFn>(name + "_batch_width", kListed)();
    const auto wf_fn = lib.find<BatchWidthFn>(name + scalar_suffix<float>() + "_batch_width");
    const int wf = wf_fn ? wf_fn() : 0;
    for (const std::string& fn : njac ? std::vector<std::string>{name, name + "_derivatives"} : std::vector<std::string>{name}) {
        const std::size_t nj = fn == name ? 0 : njac;
        const BatchJudge& judge = fn == name ? value_judge : jac_judge;
        const bool bits = exact && (nj == 0 || jac_exact);
        rep.entries.push_back(check_entry(fn + "_batch", wd, entry<double>(lib, fn, nout, nj, bits), states, judge));
        if (wf_fn) rep.entries.push_back(check_entry(fn + "_f_batch", wf, entry<float>(lib, fn, nout, nj, bits && wf == 1), states, judge));
    }
    return rep;
}

}  // namespace nelu
