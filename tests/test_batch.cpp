// The batch forms (nelu compile --batch, docs/batch.md): NAME_batch.hpp and NAME_batch.cpp beside
// NAME.hpp and NAME.cpp, which stay byte for byte what they are without --batch; the manifest's
// batch block and the header's declarations; the calling convention on a linked solver (n = 0 or
// negative, a null status, short last blocks of lanes read and written within arrays of exactly n
// rows, which the sanitizer build checks byte for byte, a failing state among good ones); and, in
// the sanitizer build, nelu check of the UR5e's batch forms built with the sanitizers too; and that
// the batch check (check_batch.hpp) counts the failing states its NaN and infinite inputs make, and
// fails a batch form that writes their rows or miscounts them. test_batch_check.cpp runs nelu check
// on the batch forms of every shipped robot and problem kind.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "batch_probe.hpp"
#include "check_batch.hpp"
#include "layout.hpp"
#include "pipeline.hpp"
#include "solver_library.hpp"
#include "test_support.hpp"
#include "ur5e_fd_b_batch.hpp"

namespace {

std::string robot(const std::string& name) { return nelu::test::source_dir() + "/robots/" + name; }

std::string text(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

/// Whether this file's build fuses a * b + c into one rounding (then the generated lanes may round
/// differently from the scalar function, and rows are compared to 1e-12 instead of bit for bit).
bool contracted() {
    volatile double a = 1 + 0x1p-30, b = 1 - 0x1p-30, c = -1;
    const double x = a, y = b, z = c;
    return x * y + z != 0;
}

/// States of the UR5e fd solver: q, qd, in (state-major), from a fixed seed.
struct States {
    std::vector<double> q, qd, in;
};
States states(int n) {
    States s;
    unsigned long long x = 12345;
    auto u = [&] { return (x = x * 6364136223846793005ull + 1442695040888963407ull) / 0x1p64 * 2 - 1; };
    for (int k = 0; k < n; ++k) {
        for (int i = 0; i < ur5e_fd_b_NQ; ++i) s.q.push_back(3 * u());
        for (int i = 0; i < ur5e_fd_b_NV; ++i) s.qd.push_back(2 * u());
        for (int i = 0; i < ur5e_fd_b_NIN; ++i) s.in.push_back(5 * u());
    }
    return s;
}

/// Whether this machine runs AVX2 and FMA (the lanes of -march=x86-64-v3).
bool has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

}  // namespace

TEST_CASE("batch: NAME.hpp and NAME.cpp are the same with and without --batch; the batch files, header and manifest") {
    const std::string plain = nelu::test::scratch_dir("batch_plain"), batch = nelu::test::scratch_dir("batch_files");
    for (const std::string& dir : {plain, batch}) {
        const nelu::test::CliResult c = nelu::test::run_nelu("compile '" + robot("ur5e.urdf") + "' --problem fd --derivatives --name b -o '" + dir +
                                                             "'" + (dir == batch ? " --batch" : "") + (nelu::test::sanitized() ? " --verify 3 --validate 2000" : ""));
        INFO(c.out << c.err);
        REQUIRE(c.exit_code == 0);
    }
    CHECK(text(plain + "/b.hpp") == text(batch + "/b.hpp"));
    CHECK(text(plain + "/b.cpp") == text(batch + "/b.cpp"));
    CHECK(!std::ifstream(plain + "/b_batch.cpp").good());
    const std::string header = text(batch + "/b_batch.hpp"), source = text(batch + "/b_batch.cpp");
    CHECK(header.find("#include \"b.hpp\"") != std::string::npos);
    for (const char* decl : {"int b_batch(int n, const double* q, const double* qd, const double* in, double* out, int* status);",
                             "int b_f_batch(int n, const float* q, const float* qd, const float* in, float* out, int* status);",
                             "int b_derivatives_batch(int n, const double* q, const double* qd, const double* in, double* out, double* jac, int* status);",
                             "int b_derivatives_f_batch(int n, const float* q, const float* qd, const float* in, float* out, float* jac, int* status);",
                             "int b_batch_width(void);", "int b_f_batch_width(void);"})
        CHECK_MESSAGE(header.find(decl) != std::string::npos, decl);
    // the lanes are the scalar program's statements: the same statements in the same order
    auto statements = [](const std::string& s, const char* type) {
        std::size_t count = 0;
        for (std::size_t at = s.find(type); at != std::string::npos; at = s.find(type, at + 1)) ++count;
        return count;
    };
    // (the batch forms are column by column: the scalar file's variant without vector lanes, when it
    // has one for the Jacobian's columns in lanes)
    std::string scalar = text(batch + "/b.cpp");
    if (const std::size_t lanes = scalar.find("#if NELU_LANE_BYTES"); lanes != std::string::npos)
        scalar.erase(lanes, scalar.find("#else  // no vector lanes", lanes) - lanes);
    CHECK(statements(source, "    const V t") == statements(scalar, "    const T t"));
    CHECK(source.find("nelu::lanes::sincos(angle") != std::string::npos);  // every angle of the solver in one call
    const nlohmann::json m = nlohmann::json::parse(text(batch + "/b.json"));
    REQUIRE(m.contains("batch"));
    CHECK(!nlohmann::json::parse(text(plain + "/b.json")).contains("batch"));
    const nlohmann::json& b = m.at("batch");
    CHECK(b.at("source") == "b_batch.cpp");
    CHECK(b.at("header") == "b_batch.hpp");
    REQUIRE(b.at("entry_points").size() == 4);
    CHECK(b.at("entry_points")[2].at("function") == "b_derivatives_batch");
    CHECK(b.at("entry_points")[2].at("of") == "b_derivatives");
    CHECK(b.at("entry_points")[0].at("stack_bytes_per_lane").get<long>() > 0);
    CHECK(b.at("lanes").at("avx (__AVX__, -march=x86-64-v3)").at("float") == 8);
    // --scalar double: no float batch form
    const std::string single = nelu::test::scratch_dir("batch_double");
    const nelu::test::CliResult d = nelu::test::run_nelu("compile '" + robot("ur5e.urdf") + "' --problem id --scalar double --batch --name b -o '" +
                                                         single + "'" + (nelu::test::sanitized() ? " --verify 3 --validate 2000" : ""));
    REQUIRE(d.exit_code == 0);
    CHECK(text(single + "/b_batch.hpp").find("b_f_batch") == std::string::npos);
    CHECK(nlohmann::json::parse(text(single + "/b.json")).at("batch").at("entry_points").size() == 1);
}

TEST_CASE("batch: the work struct's values share its elements, the outputs are written in place, nothing is overwritten before its last reader") {
    // the Mini Cheetah on four point feet, values and derivatives: both in parts (layout.hpp, batch_memory)
    nelu::CompileOptions o;
    o.urdf = robot("quadruped_minicheetah.urdf");
    o.problem = nelu::test::source_dir() + "/robots/specs/minicheetah_point_feet.yaml";
    o.derivatives = true, o.batch = true, o.verify_states = 2, o.validation_configs = 200;
    const nelu::CompileResult r = nelu::compile(o);
    nelu::EmitInput in;
    in.name = r.name, in.load = &r.load, in.problem = &r.problem, in.system = &r.system, in.factorization = &r.order.best, in.batch = true;
    const nelu::emit::Layouts planned = nelu::emit::plan_layouts(in);
    REQUIRE(planned.batch.size() == 2);
    const nelu::ir::Program& P = r.order.best.prog;
    for (const nelu::emit::Layout& L : planned.batch) {
        CAPTURE(L.fn);
        REQUIRE(L.parts > 1);
        REQUIRE(L.work_slot.size() == P.size());
        REQUIRE(L.place.size() == P.size());
        CHECK(L.staged.empty());  // no `kept` array to copy from
        // each computed output in place: at the first entry of out, then jac, that holds it
        const std::vector<nelu::ir::Id> written = L.written();
        std::map<nelu::ir::Id, int> first;
        for (std::size_t e = 0; e < written.size(); ++e)
            if (!P.is_const(written[e]) && P.node(written[e]).op != nelu::ir::Op::Input) first.emplace(written[e], static_cast<int>(e));
        for (const auto& [x, e] : first) CHECK(L.place[x] == e);
        // replay the emitted order: every operand read from the struct is still the value its element holds
        std::map<int, nelu::ir::Id> holds;
        long members = 0, stale = 0, crossing = 0;
        int elements = 0;
        for (nelu::ir::Id x : L.stmts) {
            const nelu::ir::Node& n = P.node(x);
            for (nelu::ir::Id a : {n.a, n.b})
                if (a >= 0 && L.work_slot[a] >= 0) stale += holds[L.work_slot[a]] != a;
            crossing += L.shared[x] && L.place[x] < 0;  // the values crossing parts, outputs aside
            if (L.work_slot[x] < 0) continue;
            CHECK((L.shared[x] && L.place[x] < 0));
            holds[L.work_slot[x]] = x, ++members, elements = std::max(elements, L.work_slot[x] + 1);
        }
        CHECK(stale == 0);
        CHECK(members == crossing);  // every one has an element
        MESSAGE(L.fn, ": ", members, " values crossing parts in ", elements, " elements");
        CHECK(elements < members);  // measured: 831 elements for 1,301 values, 1,223 for 4,968 (derivatives)
    }
    for (const nelu::emit::Layout& L : planned.scalar) CHECK((L.work_slot.empty() && L.place.empty()));
    CHECK(r.emitted.batch_source.find("    T v[") != std::string::npos);
    CHECK(r.emitted.batch_source.find("kept[") == std::string::npos);
    CHECK(r.emitted.source.find("    T v[") == std::string::npos);
    CHECK(r.emitted.source.find("kept[") != std::string::npos);
}

TEST_CASE("batch: n = 0, a null status, short last blocks within the arrays, a failing state among good ones") {
    const int W = ur5e_fd_b_batch_width();
    MESSAGE("lanes in this build: ", W, " double, ", ur5e_fd_b_f_batch_width(), " float");
    CHECK(W >= 1);
    const States s = states(3 * W + 1);
    std::vector<double> out(ur5e_fd_b_NOUT, 7.0);
    std::vector<int> status(1, 9);
    CHECK(ur5e_fd_b_batch(0, s.q.data(), s.qd.data(), s.in.data(), out.data(), status.data()) == 0);
    CHECK(ur5e_fd_b_batch(-3, s.q.data(), s.qd.data(), s.in.data(), out.data(), status.data()) == 0);
    CHECK(out[0] == 7.0);
    CHECK(status[0] == 9);
    const bool fused = contracted();
    for (int n = 1; n <= 3 * W + 1; ++n) {
        CAPTURE(n);
        // arrays of exactly n rows (the sanitizers see a read or write past them), one state failing
        std::vector<double> q(s.q.begin(), s.q.begin() + n * ur5e_fd_b_NQ), qd(s.qd.begin(), s.qd.begin() + n * ur5e_fd_b_NV),
            in(s.in.begin(), s.in.begin() + n * ur5e_fd_b_NIN), rows(static_cast<std::size_t>(n * ur5e_fd_b_NOUT), 7.0);
        const int bad = n / 2;
        qd[static_cast<std::size_t>(bad * ur5e_fd_b_NV)] = std::numeric_limits<double>::quiet_NaN();
        std::vector<int> st(static_cast<std::size_t>(n), 9);
        CHECK(ur5e_fd_b_batch(n, q.data(), qd.data(), in.data(), rows.data(), st.data()) == 1);
        for (int k = 0; k < n; ++k) {
            CAPTURE(k);
            double ref[ur5e_fd_b_NOUT];
            const int expected = ur5e_fd_b(&q[k * ur5e_fd_b_NQ], &qd[k * ur5e_fd_b_NV], &in[k * ur5e_fd_b_NIN], ref);
            CHECK(st[static_cast<std::size_t>(k)] == expected);
            CHECK(expected == (k == bad ? NELU_STATUS_NOT_FINITE : NELU_STATUS_OK));
            for (int i = 0; i < ur5e_fd_b_NOUT; ++i) {
                const double got = rows[static_cast<std::size_t>(k * ur5e_fd_b_NOUT + i)];
                if (k == bad) CHECK(got == 7.0);  // untouched
                else if (fused) CHECK(std::fabs(got - ref[i]) <= 1e-12 * (1 + std::fabs(ref[i])));
                else CHECK(std::memcmp(&got, &ref[i], sizeof got) == 0);
            }
        }
        // without status: the same rows, the same count
        std::vector<double> again(rows.size(), 7.0);
        CHECK(ur5e_fd_b_batch(n, q.data(), qd.data(), in.data(), again.data(), nullptr) == 1);
        CHECK(std::memcmp(again.data(), rows.data(), rows.size() * sizeof(double)) == 0);
        // float: the same statuses, rows within float's accuracy of the double ones
        std::vector<float> qf(q.begin(), q.end()), qdf(qd.begin(), qd.end()), inf(in.begin(), in.end()), rf(rows.size(), 7.0f);
        CHECK(ur5e_fd_b_f_batch(n, qf.data(), qdf.data(), inf.data(), rf.data(), st.data()) == 1);
        CHECK(st[static_cast<std::size_t>(bad)] == NELU_STATUS_NOT_FINITE);
        for (std::size_t i = 0; i < rows.size(); ++i) CHECK(std::fabs(rf[i] - rows[i]) <= 1e-3 * (1 + std::fabs(rows[i])));
    }
}

// sanitizer build only (NELU_SANITIZE=ON); test_batch_check checks every robot's batch forms in the release build
TEST_CASE("batch under the sanitizers: the UR5e's batch forms, the generated code sanitized too" * doctest::skip(!nelu::test::sanitized())) {
    std::string flags = std::string(nelu::test::kSanitizedCodeFlags) + " -fno-omit-frame-pointer";
    const std::string cxx = "--cxx '" + nelu::test::cxx_with(flags) + "'";
    nelu::test::compile_and_check(robot("ur5e.urdf"), "fd", "ur5e_fd_bsan", "--batch --derivatives", cxx);
    nelu::test::compile_and_check(robot("ur5e.urdf"), robot("specs/ur5e_wrist_ft.yaml"), "ur5e_ft_bsan", "--batch", cxx);
    if (has_avx2()) {  // 4 and 8 lanes, as -march=x86-64-v3 builds them
        const std::string avx = "--cxx '" + nelu::test::cxx_with(flags + " -march=x86-64-v3") + "'";
        nelu::test::compile_and_check(robot("ur5e.urdf"), "id", "ur5e_id_bsan_avx2", "--batch", avx);
        nelu::test::compile_and_check(robot("quadruped_minicheetah.urdf"), "fd", "mc_fd_bsan_avx2", "--batch --floating-base", avx);
    }
}

TEST_CASE("batch check: it counts the failing states, and fails a batch form that writes their rows or miscounts them") {
    const nelu::SolverLibrary lib = nelu::SolverLibrary::load(NELU_BATCH_PROBE);
    const int count = 40;
    const States s = states(count);
    nelu::BatchStates st;
    for (int k = 0; k < count; ++k) {
        st.q.emplace_back(s.q.begin() + k * ur5e_fd_b_NQ, s.q.begin() + (k + 1) * ur5e_fd_b_NQ);
        st.qd.emplace_back(s.qd.begin() + k * ur5e_fd_b_NV, s.qd.begin() + (k + 1) * ur5e_fd_b_NV);
        st.in.emplace_back(s.in.begin() + k * ur5e_fd_b_NIN, s.in.begin() + (k + 1) * ur5e_fd_b_NIN);
    }
    // rows that are not bit for bit (a build that fuses a * b + c): against the scalar function's
    const nelu::BatchJudge judge{[&](std::size_t k, const std::vector<double>& row, bool) {
                                     std::vector<double> ref(ur5e_fd_b_NOUT);
                                     ur5e_fd_b(st.q[k].data(), st.qd[k].data(), st.in[k].data(), ref.data());
                                     return nelu::test::rel_error(row, ref);
                                 },
                                 1e-12, 1e-5};
    auto check = [&](probe::Fault fault) {
        probe::fault = fault, probe::states = probe::failed = 0;
        const nelu::BatchReport r = nelu::check_batch(lib, "probe_fd", ur5e_fd_b_NOUT, 0, st, judge, judge);
        REQUIRE(r.entries.size() == 1);  // no float form exported
        return r.entries[0];
    };
    auto any_error = [](const nelu::BatchEntryReport& e, const char* what) {
        return std::any_of(e.errors.begin(), e.errors.end(), [&](const std::string& x) { return x.find(what) != std::string::npos; });
    };
    const nelu::BatchEntryReport ok = check(probe::Fault::None);
    INFO((ok.errors.empty() ? std::string() : ok.errors.front()));
    CHECK(ok.errors.empty());
    // the report's counts are what the batch form was given and what it failed, as it saw them
    CHECK(ok.rows == probe::states);
    CHECK(ok.failing == probe::failed);
    // the check's NaN and infinite inputs make some states fail (else "untouched" says nothing), not all
    CHECK(ok.failing > 0);
    CHECK(ok.failing < ok.rows / 2);
    CHECK(ok.rows >= count);
    if (!contracted()) CHECK(ok.bitwise + ok.failing == ok.rows);  // every other row compared, bit for bit
    const nelu::BatchEntryReport written = check(probe::Fault::WritesFailingRows);
    CHECK(any_error(written, "failed but its rows were written"));
    const nelu::BatchEntryReport miscounted = check(probe::Fault::ReturnsZero);
    CHECK(any_error(miscounted, "returned 0, but"));
    // rows that are not bit for bit are judged: 1e-8 off fails the flat 1e-12 ...
    // (a build that does not contract also requires them bit for bit: that error aside)
    auto judgement_errors = [](const nelu::BatchEntryReport& e) {
        std::vector<std::string> r;
        for (const std::string& x : e.errors)
            if (x.find("differs from the scalar entry point's") == std::string::npos) r.push_back(x);
        return r;
    };
    const nelu::BatchEntryReport perturbed = check(probe::Fault::Perturbs);
    CHECK(perturbed.bitwise == 0);
    CHECK(perturbed.judged > 1e-11);  // (relative to the row's largest entry)
    CHECK(any_error(perturbed, "above 1.0e-12"));
    // ... passes where its state's tolerance is larger (a Jacobian's tolerance follows its state's
    // conditioning, as nelu check's scalar judgement sets it), and fails where that tolerance is
    // smaller than the row's error at one state
    auto judged_with = [&](double tolerance_of_state, std::size_t tight_state) {
        nelu::BatchJudge j = judge;
        j.state_tolerance = [=](std::size_t k, const std::vector<double>&, bool) { return k == tight_state ? 0.0 : tolerance_of_state; };
        probe::fault = probe::Fault::Perturbs, probe::states = probe::failed = 0;
        return nelu::check_batch(lib, "probe_fd", ur5e_fd_b_NOUT, 0, st, j, j).entries.at(0);
    };
    const nelu::BatchEntryReport loose = judged_with(1e-6, st.q.size());
    INFO((judgement_errors(loose).empty() ? std::string() : judgement_errors(loose).front()));
    CHECK(judgement_errors(loose).empty());
    CHECK(loose.judged_share <= 1e-2);
    const nelu::BatchEntryReport one_tight = judged_with(1e-6, 0);  // (state 0 gets no NaN or infinite input)
    CHECK(any_error(one_tight, "times their state's tolerance"));
    // a judge's values: the row's outputs judged as the value solver's, whatever the Jacobian's tolerance
    nelu::BatchJudge tight_values = judge;  // the flat 1e-12
    nelu::BatchJudge with_values = judge;
    with_values.state_tolerance = [](std::size_t, const std::vector<double>&, bool) { return 1.0; };
    with_values.values = &tight_values;
    probe::fault = probe::Fault::Perturbs, probe::states = probe::failed = 0;
    const nelu::BatchEntryReport values_judged = nelu::check_batch(lib, "probe_fd", ur5e_fd_b_NOUT, 0, st, with_values, with_values).entries.at(0);
    CHECK(values_judged.judged_share <= 1e-6);
    CHECK(any_error(values_judged, "the outputs' error"));
    probe::fault = probe::Fault::None;
}
