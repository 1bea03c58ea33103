// Tests of the committed solvers in generated/ (DESIGN.md, "Layout"): every entry of
// generated/MANIFEST.txt, compiled again by `nelu compile`, gives the committed NAME.hpp, NAME.cpp
// and NAME.json (and with --batch NAME_batch.hpp and NAME_batch.cpp) byte for byte. A deliberate change is accepted with scripts/regenerate.sh (the
// update mode), which reads the same manifest.
//
// Also nelu_add_solver() in nelu's own build tree: tests/CMakeLists.txt compiles ur5e_id and
// ur5e_fd into this suite at build time, and the round trip qdd -> tau -> qdd is checked here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "ur5e_fd.hpp"  // built by nelu_add_solver() (tests/CMakeLists.txt), not generated/
#include "ur5e_id.hpp"

namespace {

namespace fs = std::filesystem;

/// One line of generated/MANIFEST.txt: NAME URDF PROBLEM [FLAGS...].
struct Entry {
    std::string name, urdf, problem;
    std::vector<std::string> flags;
    int line = 0;
};

fs::path generated_dir() { return fs::path(nelu::test::source_dir()) / "generated"; }

std::vector<Entry> read_manifest() {
    std::ifstream in(generated_dir() / "MANIFEST.txt");
    REQUIRE_MESSAGE(in.good(), "cannot read generated/MANIFEST.txt");
    std::vector<Entry> entries;
    std::string text;
    for (int line = 1; std::getline(in, text); ++line) {
        std::istringstream words(text);
        Entry e;
        e.line = line;
        if (!(words >> e.name) || e.name[0] == '#') continue;
        INFO("generated/MANIFEST.txt:" << line << ": " << text);
        REQUIRE_MESSAGE(static_cast<bool>(words >> e.urdf >> e.problem), "expected NAME URDF PROBLEM [FLAGS...]");
        for (std::string f; words >> f;) e.flags.push_back(f);
        entries.push_back(e);
    }
    return entries;
}

std::string read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

/// The files an entry owns in generated/: NAME.hpp, NAME.cpp and NAME.json, and with --batch
/// NAME_batch.hpp and NAME_batch.cpp.
std::set<std::string> owned_files(const Entry& e) {
    std::set<std::string> files{e.name + ".hpp", e.name + ".cpp", e.name + ".json"};
    if (std::find(e.flags.begin(), e.flags.end(), "--batch") != e.flags.end())
        files.insert(e.name + "_batch.hpp"), files.insert(e.name + "_batch.cpp");
    return files;
}

/// The `nelu compile` arguments of an entry, writing into `out_dir`.
std::string compile_args(const Entry& e, const std::string& urdf, const fs::path& out_dir) {
    // A problem spec is a file relative to the repository root, like the URDF; presets are words.
    const fs::path spec = fs::path(nelu::test::source_dir()) / e.problem;
    const std::string problem = fs::is_regular_file(spec) ? spec.string() : e.problem;
    std::string args = "compile " + quoted(urdf) + " --problem " + quoted(problem) + " --name " + e.name + " -o " +
                       quoted(out_dir.string());
    for (const std::string& f : e.flags) args += " " + f;
    return args;
}

/// "line K" and both versions of the first line where `committed` and `now` differ.
std::string first_difference(const std::string& committed, const std::string& now) {
    std::istringstream a(committed), b(now);
    std::string la, lb;
    for (int line = 1;; ++line) {
        const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
        if (!more_a && !more_b) return "the files differ only in their final newline";
        if (!more_a) return "line " + std::to_string(line) + ": the committed file ends here; nelu now writes\n  " + lb;
        if (!more_b) return "line " + std::to_string(line) + ": nelu's output ends here; the committed file has\n  " + la;
        if (la != lb) return "line " + std::to_string(line) + ":\n  committed: " + la + "\n  nelu now:  " + lb;
    }
}

/// A fresh empty directory, removed with everything in it when the object goes away.
struct ScratchDir {
    fs::path path;
    ScratchDir() : path(fs::temp_directory_path() / ("nelu_test_generated_" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~ScratchDir() { fs::remove_all(path); }
};

TEST_CASE("generated: nelu compile reproduces every committed solver byte for byte") {
    const std::vector<Entry> entries = read_manifest();
    REQUIRE(!entries.empty());
    ScratchDir scratch;
    for (const Entry& e : entries) {
        // An absolute URDF path from another working directory than scripts/regenerate.sh's: the
        // outputs name the URDF by its file name only, so they must not change.
        const std::string urdf = (fs::path(nelu::test::source_dir()) / e.urdf).string();
        const fs::path out = scratch.path / e.name;  // one directory per entry: every file it writes is compared
        fs::create_directories(out);
        const std::string args = compile_args(e, urdf, out);
        INFO("generated/MANIFEST.txt:" << e.line << ": nelu " << args);
        const nelu::test::CliResult r = nelu::test::run_nelu(args);
        REQUIRE_MESSAGE(r.exit_code == 0, r.err);
        const std::set<std::string> files = owned_files(e);
        for (const auto& f : fs::directory_iterator(out)) {
            const std::string name = f.path().filename().string();
            CHECK_MESSAGE(files.count(name) == 1, "nelu wrote " << name << ", which generated/ does not hold");
        }
        for (const std::string& file : files) {
            const fs::path committed = generated_dir() / file;
            if (!fs::exists(committed)) {
                FAIL_CHECK("generated/" << file << " is missing; run scripts/regenerate.sh and commit generated/");
                continue;
            }
            const std::string want = read_bytes(committed), got = read_bytes(out / file);
            if (want != got)
                FAIL_CHECK("generated/" << file << " differs from what nelu generates now, at "
                                        << first_difference(want, got)
                                        << "\nIf the change is deliberate, run scripts/regenerate.sh, review `git diff generated/` and commit it.");
        }
        // Both scalars, so that the -Werror build of generated/ (tests/CMakeLists.txt) covers float too.
        const std::string header = read_bytes(generated_dir() / (e.name + ".hpp"));
        CHECK_MESSAGE(header.find("int " + e.name + "(const double*") != std::string::npos, "no double entry point");
        CHECK_MESSAGE(header.find("int " + e.name + "_f(const float*") != std::string::npos, "no float entry point");
    }
}

TEST_CASE("generated: every solver file in generated/ belongs to a manifest entry") {
    std::set<std::string> owned{"MANIFEST.txt"};
    for (const Entry& e : read_manifest()) {
        const bool fresh = owned.insert(e.name + ".hpp").second;
        CHECK_MESSAGE(fresh, "generated/MANIFEST.txt:" << e.line << ": " << e.name << " is listed twice");
        const std::set<std::string> files = owned_files(e);
        owned.insert(files.begin(), files.end());
    }
    for (const auto& f : fs::directory_iterator(generated_dir())) {
        const std::string name = f.path().filename().string();
        CHECK_MESSAGE(owned.count(name) == 1, "generated/" << name << " is not produced by any entry of generated/MANIFEST.txt; "
                                                  "run scripts/regenerate.sh (it removes stale solvers)");
    }
}

// The split into functions (docs/large-robots.md, "Part size"): a solver of at most 2000 statements
// is one function NAME_impl; a bigger one is parts NAME_partK of 250 statements (the last one
// fewer). Read from the committed sources, whose statements are counted here, against the
// manifest's "code" block.
TEST_CASE("generated: solvers over 2000 statements are split into parts of 250, smaller ones stay whole") {
    constexpr long kPart = 250;  // compiler/src/layout.hpp, kStatementsPerPart
    // (a value that crosses parts is an element of the work struct's array `t` or `kept`, named
    // directly or through one of the part's windows `w0`, `w1`...: layout.hpp, Layout::member and
    // Layout::staged; printer.hpp, Form::windows)
    const std::regex stmt(R"(^    (const T t[0-9]+|w\.t\[[0-9]+\]|w\.kept\[[0-9]+\]|w[0-9]+\[-?[0-9]+\]) = )");
    bool some_split = false, some_whole = false;
    for (const Entry& e : read_manifest()) {
        INFO("generated/" << e.name);
        const nlohmann::json code = nlohmann::json::parse(read_bytes(generated_dir() / (e.name + ".json"))).at("code");
        const long statements = code.at("statements"), functions = code.at("functions"), per = code.at("statements_per_function");
        // (a part is NELU_PART where the workspace form runs the ordinary form's parts: firmware.md "Stack")
        const std::regex def("^(?:NELU_PART )?int " + e.name + "_(impl|part([0-9]+))\\(");
        std::vector<long> counts;  // statements per function of the value solver, in order
        bool impl_has_statements = false, in_impl = false;
        std::istringstream src(read_bytes(generated_dir() / (e.name + ".cpp")));
        for (std::string line; std::getline(src, line);) {
            std::smatch m;
            if (std::regex_search(line, m, def)) {
                in_impl = m[1] == "impl";
                if (!in_impl || counts.empty()) counts.push_back(0);
                continue;
            }
            if (line.rfind("int ", 0) == 0 || line.rfind("NELU_PART int ", 0) == 0 || line.rfind("}  // namespace", 0) == 0)
                in_impl = false, counts.push_back(-1);
            if (!counts.empty() && counts.back() >= 0 && std::regex_search(line, stmt)) ++counts.back(), impl_has_statements |= in_impl;
        }
        counts.erase(std::remove(counts.begin(), counts.end(), -1L), counts.end());
        long total = 0;
        for (long c : counts) total += c;
        CHECK(total == statements);
        if (statements <= 2000) {
            some_whole = true;
            CHECK(functions == 1);
            CHECK(per == std::max(statements, 1L));
            CHECK(counts.size() == 1);
        } else {
            some_split = true;
            CHECK(per == kPart);
            CHECK(functions == (statements + kPart - 1) / kPart);
            CHECK(!impl_has_statements);
            REQUIRE(static_cast<long>(counts.size()) == functions);
            for (std::size_t k = 0; k + 1 < counts.size(); ++k) CHECK(counts[k] == kPart);
            CHECK(counts.back() == statements - kPart * (functions - 1));
        }
    }
    CHECK_MESSAGE(some_split, "no solver in generated/ is split: the rule's second half is not covered");
    CHECK_MESSAGE(some_whole, "every solver in generated/ is split");
}

/// tau = ID(q, qd, qdd, f^x) then FD(q, qd, tau, f^x); returns |qdd' - qdd|_inf / |qdd|_inf.
template <class T, class Id, class Fd>
double round_trip(Id id, Fd fd) {
    constexpr int nv = ur5e_id_NV, nin = ur5e_id_NIN;
    static_assert(ur5e_fd_NV == nv && ur5e_fd_NIN == nin, "same robot");
    const T q[ur5e_id_NQ] = {T(0.3), T(-1.1), T(1.4), T(-0.7), T(1.2), T(0.5)};
    const T qd[nv] = {T(0.5), T(-0.2), T(0.8), T(1.1), T(-0.9), T(0.4)};
    T in_id[nin] = {}, in_fd[nin] = {}, tau[nv] = {}, qdd[nv] = {};
    for (int i = 0; i < nin; ++i) in_id[i] = T(std::sin(1.0 + 0.7 * i));  // qdd, then f^x per link
    REQUIRE(id(q, qd, in_id, tau) == NELU_STATUS_OK);
    std::copy(in_id, in_id + nin, in_fd);
    std::copy(tau, tau + nv, in_fd);  // [tau; f^x]
    REQUIRE(fd(q, qd, in_fd, qdd) == NELU_STATUS_OK);
    double err = 0, scale = 0;
    for (int i = 0; i < nv; ++i) {
        const double e = std::fabs(double(qdd[i]) - double(in_id[i]));
        err = e == e ? std::max(err, e) : INFINITY;  // (a NaN fails)
        scale = std::max(scale, std::fabs(double(in_id[i])));
    }
    return err / scale;
}

TEST_CASE("generated: nelu_add_solver builds ur5e_id and ur5e_fd in nelu's own build tree") {
    const double rel = round_trip<double>(ur5e_id, ur5e_fd);
    const double rel_f = round_trip<float>(ur5e_id_f, ur5e_fd_f);
    std::printf("nelu_add_solver ur5e: |fd(id(qdd)) - qdd| / |qdd| = %.2e (double), %.2e (float)\n", rel, rel_f);
    CHECK(rel <= 1e-9);
    CHECK(rel_f <= 1e-3);
}

}  // namespace
