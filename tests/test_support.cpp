// test_support.cpp: see test_support.hpp.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include "load.hpp"
#include "robot_gen.hpp"

namespace fs = std::filesystem;

namespace nelu::test {

std::string source_dir() { return NELU_SOURCE_DIR; }

std::string shared_dir() {
    fs::path p = fs::path(NELU_SHARED_DIR);
    return fs::is_directory(p) ? fs::canonical(p).string() : std::string();
}

static std::vector<std::string> urdfs_in(const fs::path& dir) {
    std::vector<std::string> files;
    if (!fs::is_directory(dir)) return files;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".urdf") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

std::vector<std::string> shipped_robots() { return urdfs_in(fs::path(source_dir()) / "robots"); }

std::vector<std::string> shared_robots() {
    std::string d = shared_dir();
    if (d.empty() || !fs::is_directory(fs::path(d) / "robots")) {
        static bool noted = false;
        if (!noted) std::printf("note: %s/robots not found: tests on the shared robots are skipped\n", NELU_SHARED_DIR);
        noted = true;
        return {};
    }
    return urdfs_in(fs::path(d) / "robots");
}

bool is_legged(const std::string& path) {
    std::string f = fs::path(path).filename().string();
    for (const char* k : {"quadruped", "humanoid", "solo", "icub", "biped"})
        if (f.find(k) != std::string::npos) return true;
    return false;
}

std::vector<TestRobot> all_test_robots() {
    std::vector<TestRobot> robots;
    auto add_file = [&](const std::string& path) {
        std::string stem = fs::path(path).stem().string();
        robots.push_back({stem, load_urdf_file(path).model});
        if (is_legged(path)) robots.push_back({stem + "+floating", load_urdf_file(path, {true, {}}).model});
    };
    for (const std::string& p : shipped_robots()) add_file(p);
    for (const std::string& p : shared_robots()) add_file(p);
    for (int n : {1, 2, 7, 30})
        for (auto shape : {RobotGenOptions::Shape::Chain, RobotGenOptions::Shape::Tree})
            for (auto tf : {RobotGenOptions::Transforms::General, RobotGenOptions::Transforms::Dh}) {
                RobotGenOptions o;
                o.shape = shape, o.links = n, o.transforms = tf, o.seed = 100 + n, o.branching = 2;
                std::string name = std::string(shape == RobotGenOptions::Shape::Chain ? "chain" : "tree") +
                                   std::to_string(n) + (tf == RobotGenOptions::Transforms::Dh ? "_dh" : "");
                robots.push_back({name, load_urdf_string(generate_robot_urdf(o), name).model});
            }
    return robots;
}

double rel_error(const std::vector<double>& a, const std::vector<double>& b, double floor) {
    double num = 0, den = floor;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        const double d = std::abs(a[i] - b[i]);
        num = d == d ? std::max(num, d) : INFINITY;  // (std::max would keep num beside a NaN)
        den = std::max(den, std::abs(b[i]));
    }
    if (a.size() != b.size()) return INFINITY;
    return num / den;
}

CliResult run_nelu(const std::string& args) {
    static int counter = 0;
    fs::path err = fs::temp_directory_path() / ("nelu_test_err_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::string cmd = std::string(NELU_BINARY) + " " + args + " 2>" + err.string();
    CliResult r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int status = ::pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream e(err);
    std::stringstream ss;
    ss << e.rdbuf();
    r.err = ss.str();
    fs::remove(err);
    return r;
}

std::string printed_spec(const std::string& err) {
    const std::size_t begin = err.find("SPEC.yaml being\n"), end = err.find("  (see docs/problem-spec.md)");
    if (begin == std::string::npos || end == std::string::npos) return "";
    std::string spec;
    for (std::size_t p = err.find('\n', begin) + 1; p < end;) {
        const std::size_t e = err.find('\n', p);
        spec += err.substr(p + 4, e - p - 4) + "\n";
        p = e + 1;
    }
    return spec;
}

std::string scratch_dir(const std::string& name) {
    fs::path d = fs::temp_directory_path() / ("nelu_test_" + name);
    fs::remove_all(d);
    fs::create_directories(d);
    return d.string();
}

std::string cxx_with(const std::string& flags, const std::string& compiler) { return compiler + " " + flags; }

bool have_clang() { return std::system("command -v clang++ >/dev/null 2>&1") == 0; }

CliResult compile_and_check(const std::string& urdf, const std::string& spec, const std::string& name, const std::string& flags,
                            const std::string& check_flags) {
    const std::string dir = scratch_dir("check_" + name);
    const std::string light = sanitized() ? " --verify 3 --validate 2000" : "";
    CliResult c = run_nelu("compile '" + urdf + "' --problem '" + spec + "' --name " + name + " -o '" + dir + "' " + flags + light);
    INFO(c.out << c.err);
    REQUIRE(c.exit_code == 0);
    CHECK(c.out.find("verified against the reference") != std::string::npos);
    CliResult k = run_nelu("check '" + urdf + "' '" + dir + "/" + name + ".json' --problem '" + spec + "'" + (sanitized() ? " --states 20" : "") + " " + check_flags);
    INFO(k.out << k.err);
    MESSAGE(name << ": " << k.out);
    CHECK(k.exit_code == 0);
    CHECK(k.out.find("PASS") != std::string::npos);
    fs::remove_all(dir);
    return k;
}

}  // namespace nelu::test
