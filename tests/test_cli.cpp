// Tests of the command-line contract (DESIGN.md, "Contract: the CLI"): version, exit codes, the
// robot generator's output file, the op-count report, `nelu model --json`, `--runtime-include` and
// `nelu check --library` (what the Python package uses).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <tinyxml2.h>

#include "diagnostics.hpp"
#include "load.hpp"
#include "nelu/status.h"
#include "test_support.hpp"
#include "version.hpp"

namespace {

namespace fs = std::filesystem;
using nelu::test::run_nelu;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// A fresh empty directory, removed with everything in it when the object goes away.
struct ScratchDir {
    fs::path path;
    explicit ScratchDir(const std::string& tag)
        : path(fs::temp_directory_path() / ("nelu_test_cli_" + tag + "_" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~ScratchDir() { fs::remove_all(path); }
    /// Names of the entries in the directory, sorted.
    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    }
};

/// An environment variable set for the object's lifetime (for the nelu processes run meanwhile), then restored.
struct Environment {
    std::string name;
    std::optional<std::string> previous;
    Environment(std::string variable, const std::string& value) : name(std::move(variable)) {
        if (const char* v = std::getenv(name.c_str())) previous = v;
        ::setenv(name.c_str(), value.c_str(), 1);
    }
    Environment(const Environment&) = delete;
    Environment& operator=(const Environment&) = delete;
    ~Environment() {
        if (previous) ::setenv(name.c_str(), previous->c_str(), 1);
        else ::unsetenv(name.c_str());
    }
};

TEST_CASE("cli: --version prints the tool version") {
    const nelu::test::CliResult r = run_nelu("--version");
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, NELU_VERSION));
}

TEST_CASE("cli: an unknown subcommand or a missing argument is bad input (exit 2)") {
    for (const char* args : {"frobnicate", "", "model", "robot gen chain --seed 1 -o -", "model --no-such-flag x.urdf"}) {
        CAPTURE(args);
        const nelu::test::CliResult r = run_nelu(args);
        CHECK(r.exit_code == nelu::kExitBadInput);
        CHECK_FALSE(r.err.empty());
    }
}

TEST_CASE("cli: `nelu model` on a missing file exits 2 naming the file") {
    ScratchDir dir("missing");
    const std::string path = (dir.path / "no_robot_here.urdf").string();
    const nelu::test::CliResult r = run_nelu("model " + quoted(path));
    CHECK(r.exit_code == nelu::kExitBadInput);
    CHECK(r.err == "error: " + path + ": cannot open the file\n");
    CHECK(r.out.empty());
}

TEST_CASE("cli: `nelu robot gen` writes a URDF that loads, atomically") {
    ScratchDir dir("gen");
    const std::string file = (dir.path / "chain3.urdf").string();
    const nelu::test::CliResult r = run_nelu("robot gen chain --links 3 --seed 1 -o " + quoted(file));
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(dir.entries() == std::vector<std::string>{"chain3.urdf"});  // no *.tmp.* left behind
    const nelu::LoadResult loaded = nelu::load_urdf_file(file);
    CHECK(loaded.model.num_bodies() == 3);
    CHECK(loaded.model.nv == 3);
    CHECK(loaded.warnings.empty());
    const nelu::test::CliResult model = run_nelu("model " + quoted(file));
    CHECK(model.exit_code == 0);

    // The same options print the same bytes to standard output.
    const nelu::test::CliResult out = run_nelu("robot gen chain --links 3 --seed 1 -o -");
    CHECK(out.exit_code == 0);
    CHECK(out.out == read_text(file));

    // Overwriting replaces the file whole.
    const nelu::test::CliResult again = run_nelu("robot gen tree --links 5 --branching 2 --seed 2 -o " + quoted(file));
    CHECK(again.exit_code == 0);
    CHECK(dir.entries() == std::vector<std::string>{"chain3.urdf"});
    CHECK(read_text(file) == run_nelu("robot gen tree --links 5 --branching 2 --seed 2 -o -").out);
    CHECK(nelu::load_urdf_file(file).model.num_bodies() == 5);
}

TEST_CASE("cli: `nelu robot gen --links 0` exits 2 naming --links and writes nothing") {
    ScratchDir dir("links0");
    const std::string file = (dir.path / "bad.urdf").string();
    const nelu::test::CliResult r = run_nelu("robot gen chain --links 0 --seed 1 -o " + quoted(file));
    CHECK(r.exit_code == nelu::kExitBadInput);
    CHECK(contains(r.err, "error: "));
    CHECK(contains(r.err, "--links"));
    CHECK(dir.entries().empty());
}

TEST_CASE("cli: an unwritable output path exits 2 naming it and leaves nothing") {
    SUBCASE("a directory that does not exist") {
        const std::string file = "/nonexistent/dir/x.urdf";
        const nelu::test::CliResult r = run_nelu("robot gen chain --links 3 --seed 1 -o " + file);
        CHECK(r.exit_code == nelu::kExitBadInput);
        CHECK(contains(r.err, "error: " + file));
        CHECK_FALSE(fs::exists("/nonexistent/dir"));
    }
    SUBCASE("the output path is a directory: the temporary file is written, the rename fails") {
        ScratchDir dir("isdir");
        const fs::path target = dir.path / "out.urdf";
        fs::create_directory(target);
        const nelu::test::CliResult r = run_nelu("robot gen chain --links 3 --seed 1 -o " + quoted(target.string()));
        CHECK(r.exit_code == nelu::kExitBadInput);
        CHECK(contains(r.err, "error: " + target.string()));
        CHECK(dir.entries() == std::vector<std::string>{"out.urdf"});  // the temporary file was removed
        CHECK(fs::is_directory(target));
        CHECK(fs::is_empty(target));
    }
}

TEST_CASE("cli: compile writes its files all or none: a spy plot or an output that cannot be written leaves no solver behind") {
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const std::string base = "compile " + quoted(urdf) + " --problem id --verify 0 -o ";
    SUBCASE("the spy plot's directory does not exist: no solver files either") {
        ScratchDir dir("spy_fails");
        const nelu::test::CliResult r = run_nelu(base + quoted(dir.path.string()) + " --spy /nonexistent/dir/d.svg");
        CHECK(r.exit_code == nelu::kExitBadInput);
        CHECK(contains(r.err, "error: /nonexistent/dir/d.svg: cannot write the file"));
        CHECK(dir.entries().empty());
    }
    SUBCASE("the manifest's path is a directory: nothing is written") {
        ScratchDir dir("manifest_is_dir");
        fs::create_directory(dir.path / "ur5e_id.json");
        const nelu::test::CliResult r = run_nelu(base + quoted(dir.path.string()));
        CHECK(r.exit_code == nelu::kExitBadInput);
        CHECK(contains(r.err, (dir.path / "ur5e_id.json").string() + ": is a directory, where nelu writes a file; nothing was written"));
        CHECK(dir.entries() == std::vector<std::string>{"ur5e_id.json"});
        CHECK(fs::is_empty(dir.path / "ur5e_id.json"));
    }
    SUBCASE("a compile that cannot write its files leaves an earlier compile's as they were") {
        ScratchDir dir("keeps_old");
        REQUIRE(run_nelu(base + quoted(dir.path.string())).exit_code == 0);
        const std::string cpp = read_text(dir.path / "ur5e_id.cpp"), json = read_text(dir.path / "ur5e_id.json");
        fs::create_directory(dir.path / "d.svg");  // (the spy plot is written last)
        const nelu::test::CliResult r = run_nelu("compile " + quoted(urdf) + " --problem fd --verify 0 --name ur5e_id -o " +
                                                 quoted(dir.path.string()) + " --spy " + quoted((dir.path / "d.svg").string()));
        CHECK(r.exit_code == nelu::kExitBadInput);
        CHECK(dir.entries() == std::vector<std::string>{"d.svg", "ur5e_id.cpp", "ur5e_id.hpp", "ur5e_id.json"});
        CHECK(read_text(dir.path / "ur5e_id.cpp") == cpp);
        CHECK(read_text(dir.path / "ur5e_id.json") == json);
    }
    SUBCASE("without --batch, an earlier compile's batch form of the same name is removed, a file of the user's is not") {
        ScratchDir dir("stale_batch");
        REQUIRE(run_nelu(base + quoted(dir.path.string()) + " --batch").exit_code == 0);
        CHECK(dir.entries() == std::vector<std::string>{"ur5e_id.cpp", "ur5e_id.hpp", "ur5e_id.json", "ur5e_id_batch.cpp", "ur5e_id_batch.hpp"});
        std::ofstream(dir.path / "ur5e_id_batch.hpp") << "// mine\n";
        const nelu::test::CliResult r = run_nelu("compile " + quoted(urdf) + " --problem fd --verify 0 --name ur5e_id -o " + quoted(dir.path.string()));
        REQUIRE_MESSAGE(r.exit_code == 0, r.err);
        CHECK(contains(r.err, "note: removed " + (dir.path / "ur5e_id_batch.cpp").string() + ", an earlier compile's batch form of ur5e_id"));
        CHECK_FALSE(contains(r.err, "ur5e_id_batch.hpp"));
        CHECK(dir.entries() == std::vector<std::string>{"ur5e_id.cpp", "ur5e_id.hpp", "ur5e_id.json", "ur5e_id_batch.hpp"});
        CHECK(read_text(dir.path / "ur5e_id_batch.hpp") == "// mine\n");
    }
    SUBCASE("-o names an existing file: exit 2 before the compile, the file untouched") {
        ScratchDir dir("out_is_file");
        const fs::path file = dir.path / "solver";
        std::ofstream(file) << "mine";
        const nelu::test::CliResult r = run_nelu(base + quoted(file.string()));
        CHECK(r.exit_code == nelu::kExitBadInput);
        CHECK(contains(r.err, "error: " + file.string() + ": exists and is not a directory"));
        CHECK(r.out.empty());  // (nothing compiled: no summary)
        CHECK(read_text(file) == "mine");
    }
    SUBCASE("with a writable spy path, the four files") {
        ScratchDir dir("all_written");
        const nelu::test::CliResult r = run_nelu(base + quoted(dir.path.string()) + " --spy " + quoted((dir.path / "d.svg").string()));
        REQUIRE_MESSAGE(r.exit_code == 0, r.err);
        CHECK(dir.entries() == std::vector<std::string>{"d.svg", "ur5e_id.cpp", "ur5e_id.hpp", "ur5e_id.json"});
    }
}

TEST_CASE("cli: the manifest names the status codes as nelu/status.h defines them, and a joint sensor's reading as the header does") {
    ScratchDir dir("status_codes");
    const std::string src = nelu::test::source_dir();
    const nelu::test::CliResult c = run_nelu("compile " + quoted(src + "/robots/ur5e.urdf") + " --problem " +
                                             quoted(src + "/robots/specs/ur5e_accelerometer.yaml") + " --verify 0 --name acc -o " +
                                             quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    const nlohmann::json m = nlohmann::json::parse(read_text(dir.path / "acc.json"));
    REQUIRE(m["status_codes"].size() == 3);
    CHECK(m["status_codes"][0]["code"] == NELU_STATUS_OK);
    CHECK(m["status_codes"][0]["name"] == "NELU_STATUS_OK");
    CHECK(m["status_codes"][1]["code"] == NELU_STATUS_SMALL_PIVOT);
    CHECK(m["status_codes"][1]["name"] == "NELU_STATUS_SMALL_PIVOT");
    CHECK(m["status_codes"][2]["code"] == NELU_STATUS_NOT_FINITE);
    CHECK(m["status_codes"][2]["name"] == "NELU_STATUS_NOT_FINITE");
    const std::string header = read_text(dir.path / "acc.hpp");
    int joint_sensors = 0;
    for (const nlohmann::json& slot : m["in"])
        if (slot.value("type", "") == "joint_torque" || slot.value("type", "") == "joint_acceleration") {
            ++joint_sensors;
            CHECK(slot["component"] == "value");
            CHECK_MESSAGE(contains(header, slot["sensor"].get<std::string>() + ".value ("), slot.dump());
        }
    CHECK(joint_sensors == 2);
}

TEST_CASE("cli: --dump prints each pass's own output: the schedule's pivots, the program, the emitted C++") {
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    ScratchDir dir("dumps");
    const std::string base = "compile " + quoted(urdf) + " --problem fd --verify 0 -o " + quoted(dir.path.string()) + " --dump ";
    const nelu::test::CliResult emit = run_nelu(base + "emit");
    REQUIRE_MESSAGE(emit.exit_code == 0, emit.err);
    CHECK(emit.out == read_text(dir.path / "ur5e_fd.cpp"));
    const nlohmann::json m = nlohmann::json::parse(read_text(dir.path / "ur5e_fd.json"));
    const nelu::test::CliResult schedule = run_nelu(base + "schedule");
    REQUIRE_MESSAGE(schedule.exit_code == 0, schedule.err);
    CHECK_MESSAGE(schedule.out.rfind("schedule: " + std::to_string(m["ordering"]["pivots"].get<int>()) + " pivots (" +
                                         m["ordering"]["winner"].get<std::string>() + ")", 0) == 0, schedule.out.substr(0, 200));
    const nelu::test::CliResult ir = run_nelu(base + "ir");
    REQUIRE_MESSAGE(ir.exit_code == 0, ir.err);
    CHECK(ir.out != emit.out);
    // every output is a node the dump defines before it, or an input or constant
    std::set<std::string> defined;
    int outputs = 0;
    const std::regex node(R"(^  (t[0-9]+) = )"), output(R"(^  out\[[0-9]+\] = (t[0-9]+)$)");
    std::istringstream lines(ir.out);
    for (std::string line; std::getline(lines, line);) {
        std::smatch x;
        if (std::regex_search(line, x, node)) defined.insert(x[1]);
        if (!std::regex_search(line, x, output)) continue;
        ++outputs;
        CHECK_MESSAGE(defined.count(x[1]) == 1, line);
    }
    CHECK(outputs == static_cast<int>(m["out"].size()));
}

TEST_CASE("cli: --floating-base against a spec's explicit 'floating_base: false' exits 2 naming the line; with 'true' it agrees") {
    const std::string urdf = nelu::test::source_dir() + "/robots/quadruped_minicheetah.urdf";
    ScratchDir dir("floating_conflict");
    const fs::path fixed = dir.path / "fixed.yaml", floating = dir.path / "floating.yaml";
    std::ofstream(fixed) << "version: 1\nproblem: fd\nfloating_base: false\n";
    std::ofstream(floating) << "version: 1\nproblem: fd\nfloating_base: true\n";
    const nelu::test::CliResult bad = run_nelu("analyze " + quoted(urdf) + " --floating-base --problem " + quoted(fixed.string()));
    CHECK(bad.exit_code == nelu::kExitBadInput);
    CHECK_MESSAGE(contains(bad.err, fixed.string() + ":3: 'floating_base: false' contradicts --floating-base"), bad.err);
    const nelu::test::CliResult plain = run_nelu("analyze " + quoted(urdf) + " --problem " + quoted(fixed.string()));
    const nelu::test::CliResult both = run_nelu("analyze " + quoted(urdf) + " --floating-base --problem " + quoted(floating.string()));
    const nelu::test::CliResult flag = run_nelu("analyze " + quoted(urdf) + " --floating-base --problem fd");
    CHECK_MESSAGE(plain.exit_code == 0, plain.err);
    CHECK_MESSAGE(both.exit_code == 0, both.err);
    CHECK(both.out == flag.out);  // (the same floating problem)
    CHECK(plain.out != flag.out);
}

TEST_CASE("cli: a problem spec that is a directory, and a --name the generated code cannot take, exit 2 naming them") {
    ScratchDir dir("spec_dir");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const nelu::test::CliResult d = run_nelu("analyze " + quoted(urdf) + " --problem " + quoted(dir.path.string()));
    CHECK(d.exit_code == nelu::kExitBadInput);
    CHECK(contains(d.err, "error: " + dir.path.string() + ": is a directory, not a problem spec"));
    for (const char* name : {"int", "double", "std", "__solver", "_Solver", "sin", "sqrtf", "memcpy", "size_t", "NAN", "NELU_STATUS_OK"}) {
        const nelu::test::CliResult r = run_nelu("compile " + quoted(urdf) + " --problem id --verify 0 --name " + name + " -o " +
                                                 quoted((dir.path / "out").string()));
        CHECK_MESSAGE(r.exit_code == nelu::kExitBadInput, name);
        CHECK_MESSAGE(contains(r.err, std::string("--name '") + name + "' is a C++ keyword or a name reserved"), r.err);
        CHECK(!fs::exists(dir.path / "out"));
    }
}

TEST_CASE("cli: `nelu report` gives a contact solver its row, against ABA without the contacts") {
    ScratchDir dir("report_contacts");
    const std::string src = nelu::test::source_dir();
    const nelu::test::CliResult c = run_nelu("compile " + quoted(src + "/robots/quadruped_minicheetah.urdf") + " --problem " +
                                             quoted(src + "/robots/specs/minicheetah_point_feet.yaml") + " --verify 0 --name feet -o " +
                                             quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    const nlohmann::json m = nlohmann::json::parse(read_text(dir.path / "feet.json"));
    const nelu::test::CliResult r = run_nelu("report " + quoted((dir.path / "feet.json").string()));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const long ops = m["ops"]["mul"].get<long>() + m["ops"]["add"].get<long>() + m["ops"]["div"].get<long>() + m["ops"]["sqrt"].get<long>();
    const long aba = m["reference_ops"]["aba"]["mul"].get<long>() + m["reference_ops"]["aba"]["add"].get<long>() +
                     m["reference_ops"]["aba"]["div"].get<long>() + m["reference_ops"]["aba"]["sqrt"].get<long>();
    CHECK_MESSAGE(contains(r.out, "| feet | minicheetah | fd, 4 contacts (12 components) | 18 | "), r.out);
    CHECK_MESSAGE(contains(r.out, "| " + std::to_string(ops) + " ("), r.out);
    CHECK_MESSAGE(contains(r.out, "| ABA without the contacts | " + std::to_string(aba) + " |"), r.out);
    CHECK_FALSE(contains(r.out, "Sensor problems"));
}

TEST_CASE("cli: `nelu report --chains 7` prints the published RNEA and ABA counts") {
    const nelu::test::CliResult r = run_nelu("report --chains 7");
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    std::istringstream lines(r.out);
    std::string row;
    for (std::string line; std::getline(lines, line);)
        if (contains(line, "n=7")) row = line;
    CAPTURE(r.out);
    REQUIRE_FALSE(row.empty());
    CHECK(row.rfind("|", 0) == 0);  // a Markdown table row
    CHECK(contains(row, "| 7 |"));  // nv
    CHECK(contains(row, "543 / 467"));    // RNEA: 93n - 108 mul, 81n - 100 add
    CHECK(contains(row, "1309 / 1187"));  // ABA: 224n - 259 mul, 205n - 248 add
    CHECK(contains(r.out, "RNEA published"));
}

}  // namespace

TEST_CASE("cli: compile writes the three outputs and a spy plot; check builds and verifies them") {
    ScratchDir dir("compile");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const fs::path spy = dir.path / "ur5e_fd.svg";
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf) + " --problem fd -o " + quoted(dir.path.string()) +
                                             " --spy " + quoted(spy.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    CHECK(contains(c.out, "verified against the reference"));
    CHECK(dir.entries() == std::vector<std::string>{"ur5e_fd.cpp", "ur5e_fd.hpp", "ur5e_fd.json", "ur5e_fd.svg"});
    CHECK(contains(read_text(spy), "<svg"));
    const nelu::test::CliResult k = run_nelu("check " + quoted(urdf) + " " + quoted((dir.path / "ur5e_fd.json").string()) +
                                             " --states 50");
    CHECK_MESSAGE(k.exit_code == 0, (k.out + k.err));
    CHECK(contains(k.out, "PASS"));
    const nelu::test::CliResult rep = run_nelu("report " + quoted((dir.path / "ur5e_fd.json").string()));
    CHECK(rep.exit_code == 0);
    CHECK(contains(rep.out, "| ur5e_fd | ur5e | fd | 6 |"));
}

TEST_CASE("cli: a preset's derivatives on a long robot note the external wrenches' columns; check does not repeat it") {
    ScratchDir dir("wrench_note");
    const std::string urdf = (dir.path / "chain10.urdf").string();
    REQUIRE(run_nelu("robot gen chain --links 10 --seed 3 -o " + quoted(urdf)).exit_code == 0);
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf) + " --problem id --derivatives --verify 0 --scalar double -o " +
                                             quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    // 10 links: 60 wrench columns beside 2 x 10 (q, qd) and the 10 qdd
    CHECK_MESSAGE(contains(c.err, "note: the Jacobian has 90 columns, 60 of them the external wrenches of every link"), c.err);
    CHECK(contains(c.err, "{version: 1, problem: id, external_wrenches: zero}"));
    const nelu::test::CliResult k = run_nelu("check " + quoted(urdf) + " " + quoted((dir.path / "chain10_s3_id.json").string()) +
                                             " --states 5");
    CHECK_MESSAGE(k.exit_code == 0, (k.out + k.err));
    CHECK_MESSAGE(!contains(k.out + k.err, "note: the Jacobian has"), k.err);
    // below 60 columns of wrenches (9 links), and from a spec, no note
    REQUIRE(run_nelu("robot gen chain --links 9 --seed 3 -o " + quoted(urdf)).exit_code == 0);
    const nelu::test::CliResult nine = run_nelu("compile " + quoted(urdf) + " --problem id --derivatives --verify 0 --scalar double -o " +
                                                quoted(dir.path.string()));
    CHECK_MESSAGE(nine.exit_code == 0, nine.err);
    CHECK(!contains(nine.err, "note: the Jacobian has"));
    // with mimic joints (no columns of their own) the count is the Jacobian's, as the compile reports it
    REQUIRE(run_nelu("robot gen chain --links 10 --mimic 2 --seed 3 -o " + quoted(urdf)).exit_code == 0);
    const nelu::test::CliResult mimic = run_nelu("compile " + quoted(urdf) + " --problem id --derivatives --verify 0 --scalar double -o " +
                                                 quoted(dir.path.string()));
    REQUIRE_MESSAGE(mimic.exit_code == 0, mimic.err);
    CHECK_MESSAGE(contains(mimic.out, " x 84 columns;"), mimic.out);  // 2 x 8 independent joints, 8 qdd, 60 wrenches
    CHECK_MESSAGE(contains(mimic.err, "note: the Jacobian has 84 columns, 60 of them"), mimic.err);
}

TEST_CASE("cli: check --cxx takes a compiler and its flags, which come last; a missing compiler is named") {
    ScratchDir dir("check_cxx");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf) + " --problem id --verify 0 -o " + quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    const std::string check = "check " + quoted(urdf) + " " + quoted((dir.path / "ur5e_id.json").string()) + " --states 20 --cxx ";
    const nelu::test::CliResult ok = run_nelu(check + "'c++ -O0'");
    CHECK_MESSAGE(ok.exit_code == 0, (ok.out + ok.err));
    CHECK(contains(ok.out, "built with c++ -O0"));
    // a flag that breaks the build shows that the flags reach the compiler, after nelu's own
    const nelu::test::CliResult flagged = run_nelu(check + "'c++ -include nelu_no_such_header.h'");
    CHECK(flagged.exit_code == nelu::kExitInternal);
    CHECK(contains(flagged.err, "-Werror -shared -fPIC '-include' 'nelu_no_such_header.h'"));
    const nelu::test::CliResult missing = run_nelu(check + "'nelu-no-such-compiler -O2'");
    CHECK(missing.exit_code == nelu::kExitBadInput);
    CHECK(contains(missing.err, "the compiler 'nelu-no-such-compiler' is not found"));
}

TEST_CASE("cli: analyze writes nothing; an ill-posed forward dynamics exits 1 naming the joint") {
    ScratchDir dir("analyze");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const nelu::test::CliResult a = run_nelu("analyze " + quoted(urdf) + " --problem id");
    CHECK(a.exit_code == 0);
    CHECK(contains(a.out, "fill 0"));
    const std::string massless = nelu::test::source_dir() + "/tests/fixtures/malformed/warn_massless_subtree.urdf";
    const nelu::test::CliResult fd = run_nelu("compile " + quoted(massless) + " --problem fd -o " + quoted(dir.path.string()));
    CHECK(fd.exit_code == nelu::kExitIllPosed);
    CHECK(contains(fd.err, "ill-posed"));
    CHECK(contains(fd.err, "joint '"));
    CHECK(dir.entries().empty());
    const nelu::test::CliResult id = run_nelu("compile " + quoted(massless) + " --problem id -o " + quoted(dir.path.string()));
    CHECK_MESSAGE(id.exit_code == 0, id.err);  // inverse dynamics needs no inertia to be well posed
}

TEST_CASE("cli: a problem spec's errors name the file and line (exit 2); a valid hybrid spec compiles") {
    ScratchDir dir("spec");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    struct Bad {
        const char* text;
        const char* message;
    };
    const Bad cases[] = {
        {"version: 1\nproblem: hybrid\njoints:\n  qdd: [no_such_joint]\n", "spec.yaml:4: joints.qdd: no movable joint named 'no_such_joint'"},
        {"version: 1\nproblem: sideways\n", "spec.yaml:2: 'problem' must be id, fd, hybrid, osim, iwim or impulse"},
        {"version: 1\nunknown_key: 3\n", "spec.yaml:2: unknown key 'unknown_key'"},
        {"version: 1\njoints:\n  default: [1, 2]\n", "spec.yaml:3:"},
        {"version: 1\nfloating_base: maybe\n", "spec.yaml:2: 'floating_base' must be true or false (here 'maybe')"},
        {"version: 1\njoints: [\n", "spec.yaml:"},
    };
    for (const Bad& b : cases) {
        const fs::path spec = dir.path / "spec.yaml";
        std::ofstream(spec) << b.text;
        const nelu::test::CliResult r = run_nelu("compile " + quoted(urdf) + " --problem " + quoted(spec.string()) + " -o " +
                                                 quoted((dir.path / "out").string()));
        INFO("spec: ", b.text, "stderr: ", r.err);
        CHECK(r.exit_code == nelu::kExitBadInput);
        CHECK(contains(r.err, b.message));
        CHECK(!fs::exists(dir.path / "out"));
    }
    const std::string hybrid = nelu::test::source_dir() + "/robots/specs/ur5e_hybrid.yaml";
    const nelu::test::CliResult ok = run_nelu("compile " + quoted(urdf) + " --problem " + quoted(hybrid) + " -o " +
                                              quoted(dir.path.string()));
    CHECK_MESSAGE(ok.exit_code == 0, ok.err);
}

TEST_CASE("cli: contact spec errors (tests/fixtures/contacts): exit 2 naming the file, line and contact; a redundant set exit 1") {
    // each fixture's header: the robot, the exit code, the line the message must start with (0: no
    // location) and what the message must contain (several parts separated by '|')
    ScratchDir dir("contacts");
    const fs::path fixtures = fs::path(nelu::test::source_dir()) / "tests" / "fixtures" / "contacts";
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(fixtures))
        if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    REQUIRE(files.size() >= 17);
    for (const fs::path& f : files) {
        std::ifstream in(f);
        std::string robot, expect, line;
        int exit_code = -1, at = -1;
        for (std::string l; std::getline(in, l) && l.rfind('#', 0) == 0;) {
            if (l.rfind("# robot: ", 0) == 0) robot = l.substr(9);
            if (l.rfind("# exit: ", 0) == 0) exit_code = std::stoi(l.substr(8));
            if (l.rfind("# line: ", 0) == 0) at = std::stoi(l.substr(8));
            if (l.rfind("# expect: ", 0) == 0) expect = l.substr(10);
        }
        REQUIRE_MESSAGE((!robot.empty() && exit_code >= 0 && at >= 0 && !expect.empty()), f.string() << ": incomplete header");
        const nelu::test::CliResult r = run_nelu("compile " + quoted(nelu::test::source_dir() + "/" + robot) + " --problem " +
                                                 quoted(f.string()) + " -o " + quoted((dir.path / "out").string()));
        INFO(f.filename().string(), ": ", r.err);
        CHECK(r.exit_code == exit_code);
        if (at > 0) CHECK(contains(r.err, "error: " + f.string() + ":" + std::to_string(at) + ": "));
        for (std::size_t b = 0, e; b <= expect.size(); b = e + 1) {
            e = std::min(expect.find('|', b), expect.size());
            CHECK(contains(r.err, expect.substr(b, e - b)));
        }
        CHECK(!fs::exists(dir.path / "out"));
    }
}

TEST_CASE("cli: --max-stack: bad values exit 2 naming the option; the budget decides which form is emitted") {
    ScratchDir dir("max_stack");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const std::string base = "compile " + quoted(urdf) + " --problem id --verify 0 -o " + quoted(dir.path.string());
    for (const char* bad : {"-1", "abc", "12kB", "2000000000", ""}) {
        const nelu::test::CliResult r = run_nelu(base + " --max-stack " + quoted(bad));
        CHECK_MESSAGE(r.exit_code == nelu::kExitBadInput, bad);
        CHECK_MESSAGE(contains(r.err, "--max-stack"), bad << ": " << r.err);
        CHECK(dir.entries().empty());
    }
    // the default budget: within it, no workspace form; the manifest gives the estimate
    const nelu::test::CliResult d = run_nelu(base);
    REQUIRE_MESSAGE(d.exit_code == 0, d.err);
    const std::string manifest = read_text(dir.path / "ur5e_id.json");
    CHECK(contains(manifest, "\"budget\": 16384"));
    CHECK(contains(manifest, "\"form\": \"ordinary\""));
    CHECK(!contains(read_text(dir.path / "ur5e_id.hpp"), "_ws("));
    const auto at = manifest.find("\"double\": ", manifest.find("\"estimate\""));
    REQUIRE(at != std::string::npos);
    const long estimate = std::stol(manifest.substr(at + 10));
    CHECK(estimate > 512);
    // exactly at the estimate: still the ordinary form only; one byte less: the workspace form too
    const nelu::test::CliResult eq = run_nelu(base + " --max-stack " + std::to_string(estimate));
    REQUIRE(eq.exit_code == 0);
    CHECK(!contains(read_text(dir.path / "ur5e_id.hpp"), "_ws("));
    const nelu::test::CliResult less = run_nelu(base + " --max-stack " + std::to_string(estimate - 1));
    REQUIRE(less.exit_code == 0);
    const std::string header = read_text(dir.path / "ur5e_id.hpp");
    CHECK(contains(header, "int ur5e_id_ws(const double* q, const double* qd, const double* in, double* out, void* work);"));
    CHECK(contains(header, "int ur5e_id_f_ws(const float* q, const float* qd, const float* in, float* out, void* work);"));
    CHECK(contains(header, "#define ur5e_id_WORK_BYTES "));
    CHECK(contains(header, "Over the budget of " + std::to_string(estimate - 1) + " bytes"));
    CHECK(contains(read_text(dir.path / "ur5e_id.json"), "\"form\": \"ordinary+workspace\""));
    // one function: every value in the workspace; nelu check compares both workspace forms with
    // the ordinary entry points, bit for bit
    CHECK(contains(read_text(dir.path / "ur5e_id.json"), "\"shape\": \"every_value\""));
    const nelu::test::CliResult k = run_nelu("check " + quoted(urdf) + " " + quoted((dir.path / "ur5e_id.json").string()) + " --states 20");
    INFO(k.out << k.err);
    CHECK(k.exit_code == 0);
    CHECK(contains(k.out, "workspace forms (ur5e_id_ws, ur5e_id_f_ws), each against its ordinary entry point"));
    std::smatch m;  // every call bit for bit, two per state (double and float)
    REQUIRE(std::regex_search(k.out, m, std::regex("first: ([0-9]+) calls, ([0-9]+) bit for bit\n")));
    CHECK(m[1] == m[2]);
    CHECK(std::stoi(m[1]) >= 2 * 20);
}

TEST_CASE("cli: `nelu model --json`: the summary as data, the URDF's total mass, each body's inertia as loaded") {
    for (const std::string& urdf : nelu::test::shipped_robots()) {
        for (const bool floating : {false, true}) {
            CAPTURE(urdf);
            CAPTURE(floating);
            const nelu::test::CliResult r = run_nelu("model --json " + quoted(urdf) + (floating ? " --floating-base" : ""));
            REQUIRE_MESSAGE(r.exit_code == 0, r.err);
            const nlohmann::json j = nlohmann::json::parse(r.out);
            // the total mass from the URDF text itself: merging fixed links keeps it
            tinyxml2::XMLDocument doc;
            REQUIRE(doc.LoadFile(urdf.c_str()) == tinyxml2::XML_SUCCESS);
            double urdf_mass = 0;
            for (auto* link = doc.RootElement()->FirstChildElement("link"); link; link = link->NextSiblingElement("link"))
                if (auto* in = link->FirstChildElement("inertial"))
                    if (auto* m = in->FirstChildElement("mass")) urdf_mass += m->DoubleAttribute("value");
            const nelu::LoadResult loaded = nelu::load_urdf_file(urdf, {floating, {}, false, 0});
            // a fixed base leaves out the root link and the links merged into it (the world)
            std::vector<std::string> fixed_links;
            if (!floating) fixed_links.push_back(loaded.root_link);
            for (const auto& mj : j["merged_fixed_joints"])
                if (!floating && mj["into"] == "world") fixed_links.push_back(mj["link"]);
            for (auto* link = doc.RootElement()->FirstChildElement("link"); link; link = link->NextSiblingElement("link"))
                if (std::count(fixed_links.begin(), fixed_links.end(), link->Attribute("name")))
                    if (auto* in = link->FirstChildElement("inertial"))
                        if (auto* m = in->FirstChildElement("mass")) urdf_mass -= m->DoubleAttribute("value");
            CHECK(j["moving_mass"].get<double>() == doctest::Approx(urdf_mass).epsilon(1e-14));
            const nelu::Model& m = loaded.model;
            CHECK(j["floating_base"] == floating);
            CHECK(j["nq"] == m.nq);
            CHECK(j["nv"] == m.nv);
            REQUIRE(j["bodies"].size() == m.bodies.size());
            double sum = 0;
            for (std::size_t i = 0; i < m.bodies.size(); ++i) {
                const nlohmann::json& b = j["bodies"][i];
                const nelu::Body& body = m.bodies[i];
                CHECK(b["link"] == body.name);
                CHECK(b["joint"] == body.joint_name);
                CHECK(b["nv"] == body.nv());
                if (i == 0) CHECK(b["type"] == (floating ? "floating" : "revolute"));
                // mass, centre of mass and inertia about it give back the loaded spatial inertia
                nelu::Vec3<double> c;
                nelu::Mat3<double> Ic;
                for (int k = 0; k < 3; ++k) {
                    c[k] = b["com"][k];
                    for (int l = 0; l < 3; ++l) Ic(k, l) = b["inertia_com"][k][l];
                }
                const nelu::Inertia<double> I = nelu::inertia_from_com(b["mass"].get<double>(), c, Ic);
                CHECK(I.m == body.I.m);
                for (int k = 0; k < 3; ++k) {
                    CHECK(I.h[k] == doctest::Approx(body.I.h[k]).epsilon(1e-12).scale(1e-12));
                    for (int l = 0; l < 3; ++l) CHECK(I.Ibar(k, l) == doctest::Approx(body.I.Ibar(k, l)).epsilon(1e-12).scale(1e-12));
                }
                sum += b["mass"].get<double>();
            }
            CHECK(sum == doctest::Approx(j["moving_mass"].get<double>()).epsilon(1e-15));
        }
    }
    const std::string ur5e = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const nelu::test::CliResult both = run_nelu("model --json --dynamics " + quoted(ur5e));
    CHECK(both.exit_code == nelu::kExitBadInput);
    CHECK(contains(both.err, "--dynamics excludes --json"));
}

TEST_CASE("cli: --runtime-include prints the directory of the runtime headers; check --library checks a built library") {
    const nelu::test::CliResult inc = run_nelu("--runtime-include");
    REQUIRE(inc.exit_code == 0);
    REQUIRE(!inc.out.empty());
    const fs::path dir_include = inc.out.substr(0, inc.out.size() - 1);
    CHECK(inc.out.back() == '\n');
    CHECK(fs::exists(dir_include / "nelu" / "status.h"));
    CHECK(fs::exists(dir_include / "nelu" / "trig.hpp"));

    ScratchDir dir("library");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf) + " --problem id --verify 0 -o " + quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    auto build_library = [&](const fs::path& source, const fs::path& library) {  // as a user would, with the runtime headers
        const std::string build = "c++ -std=c++17 -O0 -shared -fPIC -I" + quoted(dir_include.string()) + " " + quoted(source.string()) +
                                  " -o " + quoted(library.string());
        return std::system(build.c_str()) == 0;
    };
    const fs::path so = dir.path / "libur5e_id.so";
    REQUIRE(build_library(dir.path / "ur5e_id.cpp", so));
    const std::string check = "check " + quoted(urdf) + " " + quoted((dir.path / "ur5e_id.json").string()) + " --states 20 --library ";
    const nelu::test::CliResult ok = run_nelu(check + quoted(so.string()));
    CHECK_MESSAGE(ok.exit_code == 0, (ok.out + ok.err));
    CHECK(contains(ok.out, "ur5e_id: loaded from " + so.string()));
    CHECK(contains(ok.out, "PASS"));
    // a library that does not compute this robot fails the check: ur5e_id of a UR5e whose shoulder link is 1 kg heavier
    std::string heavier = read_text(urdf);
    const std::string mass = "<mass value=\"3.761\"/>";
    REQUIRE(heavier.find(mass) != std::string::npos);
    heavier.replace(heavier.find(mass), mass.size(), "<mass value=\"4.761\"/>");
    std::ofstream(dir.path / "heavier.urdf") << heavier;
    // ur5e_id compiled into dir/sub with `flags`, and built as dir/lib<sub>.so
    auto compiled_library = [&](const fs::path& robot, const std::string& flags, const std::string& sub) {
        const nelu::test::CliResult r = run_nelu("compile " + quoted(robot.string()) + " --problem id --name ur5e_id --verify 0 " + flags +
                                                 " -o " + quoted((dir.path / sub).string()));
        REQUIRE_MESSAGE(r.exit_code == 0, r.err);
        const fs::path library = dir.path / ("lib" + sub + ".so");
        REQUIRE(build_library(dir.path / sub / "ur5e_id.cpp", library));
        return library;
    };
    const fs::path wrong = compiled_library(dir.path / "heavier.urdf", "", "wrong");
    const nelu::test::CliResult bad = run_nelu(check + quoted(wrong.string()));
    CHECK(bad.exit_code == nelu::kExitInternal);
    CHECK(contains(bad.out, "FAIL"));
    const nelu::test::CliResult missing = run_nelu(check + quoted((dir.path / "none.so").string()));
    CHECK(missing.exit_code == nelu::kExitBadInput);
    CHECK(contains(missing.err, "none.so: no such file"));
    const nelu::test::CliResult both = run_nelu(check + quoted(so.string()) + " --cxx g++");
    CHECK(both.exit_code == nelu::kExitBadInput);
    // every entry point the manifest lists is required: a library of the double entry point alone
    // is refused for a manifest that lists float too (it was checked in double only, and passed)
    const fs::path so_double = compiled_library(urdf, "--scalar double", "double");
    const nelu::test::CliResult no_float = run_nelu(check + quoted(so_double.string()));
    CHECK(no_float.exit_code == nelu::kExitBadInput);
    CHECK(contains(no_float.err, "has no entry point ur5e_id_f (the manifest lists float)"));
    const nelu::test::CliResult own = run_nelu("check " + quoted(urdf) + " " + quoted((dir.path / "double" / "ur5e_id.json").string()) +
                                               " --states 20 --library " + quoted(so_double.string()));
    CHECK_MESSAGE(own.exit_code == 0, (own.out + own.err));
    CHECK(contains(own.out, "float:  no float entry points (the manifest lists double only)"));
}

TEST_CASE("cli: check --library of a library with batch forms, built without check's contraction probe, judges rows as if contracted") {
    ScratchDir dir("batch_library");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf) + " --problem id --batch --verify 0 -o " + quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    // as the Python package builds it: NAME.cpp and NAME_batch.cpp, nothing else
    const nelu::test::CliResult inc = run_nelu("--runtime-include");
    REQUIRE(inc.exit_code == 0);
    const fs::path so = dir.path / "libur5e_id.so";
    const std::string build = "c++ -std=c++17 -O0 -shared -fPIC -I" + quoted(inc.out.substr(0, inc.out.size() - 1)) + " -I" +
                              quoted(dir.path.string()) + " " + quoted((dir.path / "ur5e_id.cpp").string()) + " " +
                              quoted((dir.path / "ur5e_id_batch.cpp").string()) + " -o " + quoted(so.string());
    REQUIRE(std::system(build.c_str()) == 0);
    const nelu::test::CliResult k = run_nelu("check " + quoted(urdf) + " " + quoted((dir.path / "ur5e_id.json").string()) +
                                             " --states 20 --library " + quoted(so.string()));
    CHECK_MESSAGE(k.exit_code == 0, (k.out + k.err));
    CHECK(contains(k.out, "ur5e_id_batch (W = "));
    CHECK(contains(k.out, "ur5e_id_f_batch (W = "));
    CHECK(contains(k.out, "PASS"));
    CHECK(!contains(k.out, ": FAIL"));
    // nothing tells whether this build contracts a * b + c: bitwise double rows are not claimed
    CHECK(contains(k.out, "without nelu check's contraction probe"));
    CHECK(!contains(k.out, "double rows bit for bit"));
}

TEST_CASE("cli: check compares with the solver's own program: a manifest whose ordering the recompile does not give is exit 2 naming both") {
    ScratchDir dir("winner");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf) + " --problem id --verify 0 -o " + quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    const fs::path manifest = dir.path / "ur5e_id.json";
    std::string text = read_text(manifest);
    const std::string winner = "\"winner\": \"";
    const auto at = text.find(winner);
    REQUIRE(at != std::string::npos);
    const auto end = text.find('"', at + winner.size());
    const std::string own = text.substr(at + winner.size(), end - at - winner.size());
    text.replace(at + winner.size(), end - at - winner.size(), "umfpack-of-another-nelu");
    std::ofstream(manifest) << text;
    const nelu::test::CliResult k = run_nelu("check " + quoted(urdf) + " " + quoted(manifest.string()));
    CHECK(k.exit_code == nelu::kExitBadInput);
    CHECK_MESSAGE(contains(k.err, "the solver's ordering is 'umfpack-of-another-nelu', but " + urdf + " compiled with problem 'id' gives '" +
                                      own + "'"), k.err);
}

TEST_CASE("cli: check refuses fewer than one random state (exit 2), which compared nothing or divided by zero") {
    ScratchDir dir("states");
    // a spec that allows singular configurations leaves the special states out: none is left with --states 0
    const std::string urdf = nelu::test::source_dir() + "/robots/humanoid_winter.urdf";
    const std::string spec = nelu::test::source_dir() + "/robots/specs/humanoid_slippery.yaml";
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf) + " --problem " + quoted(spec) +
                                             " --name slippery --batch --verify 0 --validate 100 -o " + quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    const std::string manifest = (dir.path / "slippery.json").string();
    for (const char* states : {"0", "-3"}) {
        CAPTURE(states);
        const nelu::test::CliResult k = run_nelu("check " + quoted(urdf) + " " + quoted(manifest) + " --problem " + quoted(spec) +
                                                 " --states " + states);
        CHECK(k.exit_code == nelu::kExitBadInput);
        CHECK(contains(k.err, std::string("--states ") + states + ": check at least one random state"));
        CHECK(!contains(k.out, "PASS"));
    }
}

TEST_CASE("cli: check builds in a directory of its own and removes it, also when the build or the check fails") {
    ScratchDir dir("tmpdir");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf) + " --problem id --verify 0 -o " + quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    const fs::path tmp = dir.path / "tmp";
    fs::create_directories(tmp);
    const Environment tmpdir("TMPDIR", tmp.string());  // check's temporary directory for these runs
    auto left = [&] {  // what the runs left in the temporary directory (run_nelu's own files removed)
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(tmp))
            if (e.path().filename().string().rfind("nelu-check", 0) == 0) names.push_back(e.path().filename().string());
        return names;
    };
    const std::string check = "check " + quoted(urdf) + " " + quoted((dir.path / "ur5e_id.json").string()) + " --states 5 --cxx ";
    const nelu::test::CliResult failed_build = run_nelu(check + "false");  // a "compiler" that fails
    CHECK(failed_build.exit_code == nelu::kExitInternal);
    CHECK(contains(failed_build.err, "does not compile"));
    CHECK(left().empty());
    // a build without the entry point (renamed by a macro): an error after the library was loaded
    const nelu::test::CliResult renamed = run_nelu(check + "'c++ -O0 -Dur5e_id=ur5e_id_renamed'");
    CHECK(renamed.exit_code == nelu::kExitInternal);
    CHECK(contains(renamed.err, "has no entry point ur5e_id"));
    CHECK(left().empty());
    const nelu::test::CliResult ok = run_nelu(check + "'c++ -O0'");
    CHECK_MESSAGE(ok.exit_code == 0, (ok.out + ok.err));
    CHECK(left().empty());
    // ended by a signal once the library is built (a million states take long): the directory goes too
    const fs::path script = dir.path / "interrupt.sh";
    std::ofstream(script) << "TMPDIR=" << quoted(tmp.string()) << " " << NELU_BINARY << " check " << quoted(urdf) << " "
                          << quoted((dir.path / "ur5e_id.json").string()) << " --states 1000000 --cxx 'c++ -O0' >/dev/null 2>&1 &\n"
                          << "pid=$!\nfor i in $(seq 1200); do ls " << quoted(tmp.string()) << "/nelu-check-*/*.so >/dev/null 2>&1 && break; sleep 0.1; done\n"
                          << "sleep 1\nkill -TERM $pid\nwait $pid\ntest $? -eq 143\n";  // ended by SIGTERM (128 + 15)
    CHECK(std::system(("bash " + quoted(script.string())).c_str()) == 0);
    CHECK(left().empty());
}

// Found by an audit run as a user would (2026-12-06): each was exit 3, a crash or a silent wrong
// choice; each is now exit 2 naming the file or option.
TEST_CASE("cli: check, report, robot gen and perturb refuse bad input with exit 2 naming it") {
    ScratchDir dir("audit");
    const std::string urdf = nelu::test::source_dir() + "/robots/ur5e.urdf";
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf) + " --problem id --verify 0 -o " + quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    const std::string manifest = (dir.path / "ur5e_id.json").string();
    auto bad = [&](const std::string& args, const std::string& message) {
        CAPTURE(args);
        const nelu::test::CliResult r = run_nelu(args);
        CHECK(r.exit_code == nelu::kExitBadInput);
        CHECK_MESSAGE(contains(r.err, message), r.err);
        CHECK(!contains(r.err, "internal error"));
    };
    // manifests that are JSON but not nelu's
    std::ofstream(dir.path / "list.json") << "[]";
    bad("check " + quoted(urdf) + " " + quoted((dir.path / "list.json").string()), "list.json: not a nelu manifest (not a JSON object)");
    bad("report " + quoted((dir.path / "list.json").string()), "list.json: not a nelu manifest (not a JSON object)");
    nlohmann::json m = nlohmann::json::parse(read_text(manifest));
    m["floating_base"] = "yes";
    std::ofstream(dir.path / "typed.json") << m.dump();
    bad("check " + quoted(urdf) + " " + quoted((dir.path / "typed.json").string()), "typed.json: not a nelu manifest");
    m = nlohmann::json::parse(read_text(manifest));
    m["ops"] = 5;
    std::ofstream(dir.path / "ops.json") << m.dump();
    bad("report " + quoted((dir.path / "ops.json").string()), "ops.json: not a nelu manifest");
    // the solver's source missing beside its manifest
    fs::create_directories(dir.path / "nosrc");
    fs::copy_file(manifest, dir.path / "nosrc" / "ur5e_id.json");
    bad("check " + quoted(urdf) + " " + quoted((dir.path / "nosrc" / "ur5e_id.json").string()), "ur5e_id.cpp is missing");
    // another URDF than the solver's: the manifest's hash names it (a heavier link would fail the numbers instead)
    std::string heavier = read_text(urdf);
    heavier.replace(heavier.find("<mass value=\"3.761\"/>"), 21, "<mass value=\"4.761\"/>");
    std::ofstream(dir.path / "heavier.urdf") << heavier;
    bad("check " + quoted((dir.path / "heavier.urdf").string()) + " " + quoted(manifest), "generated from another URDF than");
    // --library is a file, never a name the dynamic loader searches for
    bad("check " + quoted(urdf) + " " + quoted(manifest) + " --library libm.so.6", "--library libm.so.6: no such file");
    bad("check " + quoted(urdf) + " " + quoted(manifest) + " --states 2147483647", "at most 1000000 random states");
    {  // a TMPDIR that does not exist (set for nelu alone: run_nelu's own files go to the temporary directory)
        const fs::path err = dir.path / "tmpdir.err";
        const int status = std::system(("TMPDIR=" + quoted((dir.path / "none").string()) + " " + NELU_BINARY + " check " + quoted(urdf) +
                                        " " + quoted(manifest) + " --states 2 2>" + quoted(err.string()) + " >/dev/null").c_str());
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == nelu::kExitBadInput));
        CHECK_MESSAGE(contains(read_text(err), "TMPDIR"), read_text(err));
    }
    // a float-only solver: check compares the double entry points
    const nelu::test::CliResult f = run_nelu("compile " + quoted(urdf) + " --problem id --scalar float --verify 0 -o " +
                                             quoted((dir.path / "float").string()));
    REQUIRE_MESSAGE(f.exit_code == 0, f.err);
    bad("check " + quoted(urdf) + " " + quoted((dir.path / "float" / "ur5e_id.json").string()), "compile it with --scalar both");
    // another spec than the solver's (its manifest records the spec's hash too)
    fs::copy_file(nelu::test::source_dir() + "/robots/specs/ur5e_hybrid.yaml", dir.path / "hybrid.yaml");
    const nelu::test::CliResult h = run_nelu("compile " + quoted(urdf) + " --problem " + quoted((dir.path / "hybrid.yaml").string()) +
                                             " --verify 0 -o " + quoted((dir.path / "hybrid").string()));
    REQUIRE_MESSAGE(h.exit_code == 0, h.err);
    std::ofstream(dir.path / "hybrid.yaml", std::ios::app) << "# edited\n";
    bad("check " + quoted(urdf) + " " + quoted((dir.path / "hybrid" / "ur5e_hybrid.json").string()) + " --problem " +
            quoted((dir.path / "hybrid.yaml").string()),
        "compiled from another spec than");
    // report --chains and the generators' seeds: their ranges
    for (const char* n : {"0", "-5", "100001"}) bad(std::string("report --chains ") + n, "--chains");
    const std::string out = quoted((dir.path / "gen.urdf").string());
    for (const char* seed : {"-1", "99999999999999999999999", "1.5"}) bad(std::string("robot gen chain --links 3 --seed ") + seed + " -o " + out, "--seed");
    CHECK(run_nelu("robot gen chain --links 3 --seed 18446744073709551615 -o " + out).exit_code == 0);
    // robot perturb reads its URDF as nelu model does (a joint without a name crashed --mimic)
    std::ofstream(dir.path / "unnamed.urdf")
        << "<robot name=\"r\"><link name=\"a\"/><link name=\"b\"/><link name=\"c\"/><joint type=\"revolute\"><parent link=\"a\"/>"
           "<child link=\"b\"/></joint><joint name=\"j2\" type=\"revolute\"><parent link=\"b\"/><child link=\"c\"/></joint></robot>";
    bad("robot perturb " + quoted((dir.path / "unnamed.urdf").string()) + " --mimic 1 --seed 1 -o " + out, "<joint> has no 'name' attribute");
}

namespace {

/// A two-link URDF written by the test: link l1 on revolute j1 about z, l2 on `second` (the joint's
/// element's inside, say its axis and mimic), each link 1 kg.
std::string two_links(const std::string& robot, const std::string& second_type, const std::string& second) {
    const std::string inertial = "<inertial><origin xyz=\"0 0 0.1\"/><mass value=\"1\"/>"
                                 "<inertia ixx=\"0.01\" ixy=\"0\" ixz=\"0\" iyy=\"0.01\" iyz=\"0\" izz=\"0.01\"/></inertial>";
    return "<robot name=\"" + robot + "\"><link name=\"base\"/><link name=\"l1\">" + inertial + "</link><link name=\"l2\">" + inertial +
           "</link><joint name=\"j1\" type=\"continuous\"><parent link=\"base\"/><child link=\"l1\"/><origin xyz=\"0 0 0.1\"/>"
           "<axis xyz=\"0 0 1\"/></joint><joint name=\"j2\" type=\"" + second_type + "\"><parent link=\"l1\"/><child link=\"l2\"/>"
           "<origin xyz=\"0 0 0.1\"/>" + second + "</joint></robot>\n";
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

}  // namespace

TEST_CASE("cli: a robot without a moving joint is exit 2 naming it, and moves with --floating-base") {
    ScratchDir dir("no_dof");
    const fs::path urdf = dir.path / "fixed.urdf";
    std::string fixed = two_links("allfixed", "fixed", "");
    fixed.replace(fixed.find("type=\"continuous\""), 17, "type=\"fixed\"");  // both joints fixed
    write_text(urdf, fixed);
    const fs::path one = dir.path / "one.urdf";
    write_text(one, "<robot name=\"one\"><link name=\"base\"><inertial><mass value=\"1\"/>"
                    "<inertia ixx=\"0.01\" ixy=\"0\" ixz=\"0\" iyy=\"0.01\" iyz=\"0\" izz=\"0.01\"/></inertial></link></robot>\n");
    for (const fs::path& p : {urdf, one})
        for (const char* cmd : {"analyze", "compile"}) {
            // (it crashed in the structural analysis: an empty system)
            const std::string out = std::string(cmd) == "compile" ? " -o " + quoted((dir.path / "out").string()) : std::string();
            const nelu::test::CliResult r = run_nelu(std::string(cmd) + " " + quoted(p.string()) + " --problem id" + out);
            CHECK_MESSAGE(r.exit_code == nelu::kExitBadInput, r.err);
            CHECK_MESSAGE(contains(r.err, p.string() + ": robot '"), r.err);
            CHECK_MESSAGE(contains(r.err, "has no moving joint"), r.err);
            CHECK(!fs::exists(dir.path / "out"));
        }
    const nelu::test::CliResult f = run_nelu("analyze " + quoted(one.string()) + " --problem fd --floating-base");
    CHECK_MESSAGE(f.exit_code == 0, f.err);
}

TEST_CASE("cli: the solver's name from a robot name that C++ reserves is made a plain one; a trigraph in a name is refused") {
    ScratchDir dir("names");
    const fs::path urdf = dir.path / "r.urdf";
    for (const auto& [robot, name] : std::vector<std::pair<std::string, std::string>>{
             {"robot__v2", "robot_v2_id"}, {"_Robot", "Robot_id"}, {"NELU_STATUS_OK", "robot_NELU_STATUS_OK_id"}, {"9dof", "robot_9dof_id"}}) {
        write_text(urdf, two_links(robot, "continuous", "<axis xyz=\"1 0 0\"/>"));
        const fs::path out = dir.path / robot;
        const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf.string()) + " --problem id --verify 2 -o " + quoted(out.string()));
        REQUIRE_MESSAGE(c.exit_code == 0, c.err);
        CHECK_MESSAGE(fs::exists(out / (name + ".json")), robot);  // (check refused the names compile wrote)
        const nelu::test::CliResult k = run_nelu("check " + quoted(urdf.string()) + " " + quoted((out / (name + ".json")).string()) + " --states 5");
        CHECK_MESSAGE(k.exit_code == 0, (k.out + k.err));
    }
    // '??/' ending a comment line continues the comment under -std=c++17 (ISO trigraphs)
    std::string text = two_links("trigraph", "continuous", "<axis xyz=\"1 0 0\"/>");
    text.replace(text.find("name=\"j2\""), 9, "name=\"j2?" "?/\"");  // (split: this file is C++ too)
    write_text(urdf, text);
    const nelu::test::CliResult t = run_nelu("compile " + quoted(urdf.string()) + " --problem id -o " + quoted((dir.path / "t").string()));
    CHECK(t.exit_code == nelu::kExitBadInput);
    CHECK_MESSAGE(contains(t.err, "the name contains the trigraph '\?\?/'"), t.err);
    CHECK(!fs::exists(dir.path / "t"));
}

TEST_CASE("cli: a mimic joint geared 100:1 checks in float against what the rounding of its inputs allows") {
    ScratchDir dir("gear");
    const fs::path urdf = dir.path / "gear.urdf";
    // j2 turns 100 times j1: the rounding of j1's angle to float, times 100, is what float can give
    write_text(urdf, two_links("gear", "continuous", "<axis xyz=\"1 0 0\"/><mimic joint=\"j1\" multiplier=\"100\" offset=\"0\"/>"));
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf.string()) + " --problem id --verify 5 -o " + quoted(dir.path.string()));
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    const nelu::test::CliResult k = run_nelu("check " + quoted(urdf.string()) + " " + quoted((dir.path / "gear_id.json").string()) + " --states 300");
    CHECK_MESSAGE(k.exit_code == 0, (k.out + k.err));  // (exit 3 with the flat 1e-4: float's error 2e-4)
    CHECK_MESSAGE(contains(k.out, "100 times the double solver's relative error on the inputs rounded to float"), k.out);
    // 1000:1, forward dynamics: the float solver forms j2's angle, 1000 q1, itself, rounded at 1000
    // times q1's magnitude, which no input's rounding carries (exit 3 at 1.01 times the tolerance
    // when only the inputs' rounding counted)
    write_text(urdf, two_links("gear", "continuous", "<axis xyz=\"1 0 0\"/><mimic joint=\"j1\" multiplier=\"1000\" offset=\"0\"/>"));
    const nelu::test::CliResult c2 = run_nelu("compile " + quoted(urdf.string()) + " --problem fd --verify 5 -o " + quoted(dir.path.string()));
    REQUIRE_MESSAGE(c2.exit_code == 0, c2.err);
    const nelu::test::CliResult k2 = run_nelu("check " + quoted(urdf.string()) + " " + quoted((dir.path / "gear_fd.json").string()));
    CHECK_MESSAGE(k2.exit_code == 0, (k2.out + k2.err));
    CHECK_MESSAGE(contains(k2.out, "or the reference's at the mimic joints' angles and velocities as float arithmetic forms them"), k2.out);
}

TEST_CASE("cli: a lane kernel that reads no operand of the model builds under -Werror (a single floating body's fd derivatives)") {
    ScratchDir dir("lanes_no_operand");
    const fs::path urdf = dir.path / "body.urdf";
    REQUIRE(run_nelu("robot gen chain --links 1 --no-base --seed 1 -o " + quoted(urdf.string())).exit_code == 0);
    const nelu::test::CliResult c = run_nelu("compile " + quoted(urdf.string()) + " --floating-base --problem fd --derivatives --verify 2 -o " +
                                             quoted(dir.path.string()) + " --name body_fd");
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    // (check builds with -Wall -Wextra -Werror: an unused 'splats' or 's' was exit 3)
    const nelu::test::CliResult k = run_nelu("check " + quoted(urdf.string()) + " " + quoted((dir.path / "body_fd.json").string()) + " --states 20");
    CHECK_MESSAGE(k.exit_code == 0, (k.out + k.err));
}

TEST_CASE("cli: a directory given as the URDF is named as one; urdf_sensors: all leaves a ROS camera out with a note") {
    ScratchDir dir("urdf_dir");
    const nelu::test::CliResult d = run_nelu("analyze " + quoted(dir.path.string()) + " --problem id");
    CHECK(d.exit_code == nelu::kExitBadInput);
    CHECK_MESSAGE(contains(d.err, dir.path.string() + ": is a directory, not a file"), d.err);  // (was "malformed XML: ... EMPTY_DOCUMENT")
    // an accelerometer (iDynTree's convention) and a camera (ROS's: no 'type')
    std::string urdf = two_links("cam", "continuous", "<axis xyz=\"1 0 0\"/>");
    urdf.insert(urdf.rfind("</robot>"), "<sensor name=\"acc\" type=\"accelerometer\"><parent link=\"l2\"/><origin xyz=\"0.05 0 0.1\"/></sensor>"
                                        "<sensor name=\"cam\" update_rate=\"20\"><parent link=\"l2\"/><camera><image width=\"640\" height=\"480\"/></camera></sensor>");
    write_text(dir.path / "cam.urdf", urdf);
    write_text(dir.path / "spec.yaml", "version: 2\nproblem: id\njoints: {default: qdd, unknown: [j2]}\nexternal_wrenches: zero\nurdf_sensors: all\n");
    const nelu::test::CliResult r = run_nelu("analyze " + quoted((dir.path / "cam.urdf").string()) + " --problem " + quoted((dir.path / "spec.yaml").string()));
    CHECK_MESSAGE(r.exit_code == 0, r.err);  // (was exit 2: "unknown type ''")
    CHECK_MESSAGE(contains(r.err, "note: " + (dir.path / "cam.urdf").string() + ":1: sensor 'cam' (no type) measures no dynamic quantity"), r.err);
    // a joint torque sensor is a type nelu knows: 'all' takes it (without it j2's torque is not determined)
    std::string torque = two_links("tq", "continuous", "<axis xyz=\"1 0 0\"/>");
    torque.insert(torque.rfind("</robot>"), "<sensor name=\"tq\" type=\"joint_torque\"><parent joint=\"j2\"/></sensor>");
    write_text(dir.path / "tq.urdf", torque);
    const nelu::test::CliResult t = run_nelu("analyze " + quoted((dir.path / "tq.urdf").string()) + " --problem " + quoted((dir.path / "spec.yaml").string()));
    CHECK_MESSAGE(t.exit_code == 0, t.err);
    CHECK_MESSAGE(!contains(t.err, "sensor 'tq'"), t.err);
}
