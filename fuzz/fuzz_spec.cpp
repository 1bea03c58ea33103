// fuzz_spec.cpp: libFuzzer target for the problem spec reader (problem.cpp).
//
// Arbitrary bytes are written to a spec file and read as `nelu compile --problem SPEC.yaml` reads
// it, against each of two shipped robots: robots/ur5e.urdf (the robot of the UR5e specs) and
// robots/humanoid_winter.urdf (F/T sensors on fixed joints, an accelerometer and a gyroscope in its
// URDF, merged links, 24 joints): the floating_base and F/T sensor joints peeked at first, the robot
// loaded accordingly (once per variant), then the whole spec. Every
// problem that reads is checked against what problem.hpp promises and turned into the equation
// system (system.hpp), which consumes everything the reader resolved. nelu::InputError (exit 2)
// and IllPosedError (exit 1) are the expected outcomes of bad specs. Anything else is a finding:
// another exception type (libFuzzer reports it as a deadly signal), a crash, a hang, a sanitizer
// report, or a broken invariant (abort with a message).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "diagnostics.hpp"
#include "load.hpp"
#include "problem.hpp"
#include "system.hpp"

namespace {

constexpr std::size_t kMaxInput = 16 * 1024;  // larger inputs are skipped: keep each run fast

std::string spec_path;  // the file the reader is given, rewritten for every input

[[noreturn]] void fail(const char* what, const std::string& detail = {}) {
    std::fprintf(stderr, "fuzz_spec: invariant violated: %s %s\n", what, detail.c_str());
    std::abort();
}

const char* const kRobots[] = {NELU_FUZZ_ROBOTS "/ur5e.urdf", NELU_FUZZ_ROBOTS "/humanoid_winter.urdf"};

/// `urdf` as compile loads it for this spec: with or without a floating base, keeping the fixed
/// joints that F/T sensors sit on. Loaded once per variant (a handful: the humanoid has two such
/// joints, the UR5e none).
const nelu::LoadResult& robot(const std::string& urdf, bool floating, const std::vector<std::string>& keep_fixed) {
    using Key = std::tuple<std::string, bool, std::vector<std::string>>;
    static std::map<Key, nelu::LoadResult> loaded;
    const Key key{urdf, floating, keep_fixed};
    auto it = loaded.find(key);
    if (it == loaded.end()) it = loaded.emplace(key, nelu::load_urdf_file(urdf, {floating, keep_fixed, false, 0})).first;
    return it->second;
}

/// What problem.hpp promises about a problem that was read: per-body vectors of the model's size,
/// every sensor, point and merged link resolved to a body, components and variances that match.
void check_invariants(const nelu::Problem& p, const nelu::Model& m) {
    const std::size_t nb = static_cast<std::size_t>(m.num_bodies());
    if (p.joint.size() != nb || p.wrench.size() != nb) fail("per-body joint and wrench modes");
    for (const nelu::Sensor& s : p.sensors) {
        if (s.body < 0 || s.body >= m.num_bodies()) fail("sensor body", s.name);
        if (s.components.empty()) fail("a sensor measures something", s.name);
        for (int c : s.components)
            if (c < 0 || c >= 6) fail("sensor component", s.name);
        for (int c : s.zero_components)
            if (c < 0 || c >= 6) fail("sensor zero component", s.name);
        if (!s.variance.empty() && s.variance.size() != s.components.size()) fail("a variance per component", s.name);
        for (double v : s.variance)
            if (!(v > 0)) fail("positive variances", s.name);
    }
    for (const nelu::PointSpec& pt : p.points) {
        if (pt.body < 0 || pt.body >= m.num_bodies()) fail("point body", pt.link);
        if (pt.dof != 3 && pt.dof != 6) fail("point dof", pt.link);
    }
    for (const nelu::LinkWrench& w : p.link_wrenches)
        if (w.body < 0 || w.body >= m.num_bodies()) fail("merged link body", w.link);
    for (int v : p.actuated)
        if (v < 0 || v >= m.nv) fail("actuated velocity slot");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    char path[] = "/tmp/nelu-fuzz-spec-XXXXXX.yaml";
    const int fd = ::mkstemps(path, 5);
    if (fd < 0) fail("cannot create the spec file in /tmp");
    ::close(fd);
    spec_path = path;
    std::atexit([] { std::remove(spec_path.c_str()); });
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > kMaxInput) return 0;
    std::FILE* f = std::fopen(spec_path.c_str(), "wb");
    if (!f) fail("cannot write the spec file", spec_path);
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    for (const char* urdf : kRobots) {
        try {
            nelu::ProblemInput in{spec_path, false};
            in.floating_base = nelu::spec_requests_floating_base(in);
            const nelu::LoadResult& l = robot(urdf, in.floating_base, nelu::sensor_joints(in, urdf));
            const nelu::Problem p = nelu::run_problem(in, l);
            check_invariants(p, l.model);
            (void)nelu::run_system(l.model, p);
        } catch (const nelu::InputError&) {
            // a bad spec, reported with its file and line: the expected outcome
        } catch (const nelu::IllPosedError&) {
            // a well-formed spec of a problem that cannot be solved: reported as such
        }
    }
    return 0;
}
