// solver_library.cpp: see solver_library.hpp.
#include "solver_library.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <dlfcn.h>
#include <unistd.h>

#include <fmt/format.h>

#include "check.hpp"
#include "diagnostics.hpp"
#include "io.hpp"

namespace fs = std::filesystem;

namespace nelu {
namespace {

/// Shell-quote for /bin/sh.
std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

/// `cxx` split into words: the compiler, then its flags (no shell quoting inside a word).
std::vector<std::string> words(const std::string& cxx) {
    std::vector<std::string> w;
    std::istringstream in(cxx);
    for (std::string x; in >> x;) w.push_back(x);
    return w;
}

/// A function that tells whether the build fuses a * b + c into one rounding (FMA contraction,
/// -ffp-contract=fast where the target has FMA): built with the solver, it returns a * b + c for
/// a = 1 + 2^-30, b = 1 - 2^-30, c = -1, which is 0 rounded twice and -2^-60 fused.
constexpr const char* kContractionProbe = "nelu_check_contraction";
constexpr const char* kContractionProbeSource =
    "extern \"C\" double nelu_check_contraction(double a, double b, double c) { return a * b + c; }\n";

/// What the signal handler removes (TempDir::remove_on_signal): fixed buffers, read only by the
/// handler, which calls only async-signal-safe functions (unlink, rmdir, signal, raise).
struct SignalCleanup {
    static constexpr std::size_t kFiles = 4, kPath = 4096;
    char files[kFiles][kPath]{};
    char dir[kPath]{};
};
SignalCleanup g_cleanup;
volatile std::sig_atomic_t g_cleanup_armed = 0;

extern "C" void remove_and_reraise(int sig) {
    if (g_cleanup_armed) {
        for (const char* f : g_cleanup.files)
            if (f[0]) ::unlink(f);
        ::rmdir(g_cleanup.dir);
    }
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

}  // namespace

TempDir::TempDir(const std::string& prefix) {
    std::error_code ec;
    const fs::path tmp = fs::temp_directory_path(ec);
    std::string pattern = (tmp / (prefix + "XXXXXX")).string();
    if (ec || !::mkdtemp(pattern.data()))  // (the environment's TMPDIR: an input)
        throw InputError(ec ? fmt::format("cannot find a directory for temporary files: {} (TMPDIR names one)", ec.message())
                            : fmt::format("cannot create a temporary directory {}: {} (TMPDIR names the directory)", pattern, std::strerror(errno)));
    path_ = pattern;
}

TempDir::~TempDir() {
    if (on_signal_) g_cleanup_armed = 0;
    std::error_code ec;  // nothing to do about a directory that cannot be removed
    fs::remove_all(path_, ec);
}

void TempDir::remove_on_signal(const std::vector<std::string>& files) {
    g_cleanup_armed = 0;
    const std::string dir = path_.string();
    if (files.size() > SignalCleanup::kFiles || dir.size() >= SignalCleanup::kPath) return;
    for (std::size_t k = 0; k < SignalCleanup::kFiles; ++k) {
        const std::string f = k < files.size() ? (path_ / files[k]).string() : std::string();
        if (f.size() >= SignalCleanup::kPath) return;
        std::memcpy(g_cleanup.files[k], f.c_str(), f.size() + 1);
    }
    std::memcpy(g_cleanup.dir, dir.c_str(), dir.size() + 1);
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
        if (std::signal(sig, remove_and_reraise) == SIG_IGN) std::signal(sig, SIG_IGN);  // (ignored by the parent: kept so)
    g_cleanup_armed = 1, on_signal_ = true;
}

void SolverLibrary::Close::operator()(void* handle) const { ::dlclose(handle); }

SolverLibrary::SolverLibrary(std::unique_ptr<TempDir> dir, std::unique_ptr<void, Close> handle, std::string given)
    : dir_(std::move(dir)), handle_(std::move(handle)), given_(std::move(given)) {}

SolverLibrary SolverLibrary::build(const std::vector<fs::path>& sources, const std::string& cxx) {
    const std::vector<std::string> w = words(cxx);
    if (w.empty()) throw InputError("nelu check: --cxx is empty: name a C++ compiler, optionally followed by flags");
    if (std::system(fmt::format("command -v {} >/dev/null 2>&1", quote(w[0])).c_str()) != 0)
        throw InputError(fmt::format("nelu check: --cxx '{}': the compiler '{}' is not found", cxx, w[0]));
    std::string flags;
    for (std::size_t k = 1; k < w.size(); ++k) flags += " " + quote(w[k]);
    auto dir = std::make_unique<TempDir>("nelu-check-");
    const fs::path& source = sources.front();
    const fs::path so = dir->path() / (source.stem().string() + ".so"), probe = dir->path() / "contraction_probe.cpp";
    dir->remove_on_signal({so.filename().string(), probe.filename().string()});  // (an interrupted nelu check leaves nothing)
    write_file_atomic(probe.string(), kContractionProbeSource);
    std::string files;
    for (const fs::path& f : sources) files += " " + quote(f.string());
    files += " " + quote(probe.string());
    const std::string cmd = fmt::format("{} -std=c++17 -O2 -Wall -Wextra -Werror -shared -fPIC{} -I{} -I{}{} -o {} 2>&1", quote(w[0]), flags,
                                        quote(source.parent_path().empty() ? std::string(".") : source.parent_path().string()),
                                        quote(runtime_include_dir()), files, quote(so.string()));
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("nelu check: the generated code does not compile: " + cmd);
    std::unique_ptr<void, Close> handle(::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (!handle) throw std::runtime_error(std::string("nelu check: cannot load the solver: ") + ::dlerror());
    return SolverLibrary(std::move(dir), std::move(handle), "");
}

SolverLibrary SolverLibrary::load(const std::string& path) {
    if (!fs::is_regular_file(path)) throw InputError(fmt::format("nelu check: --library {}: no such file", path));
    // a path, never a name for the loader's search (a bare "x.so" is the file here, not a system library)
    const std::string file = fs::path(path).has_parent_path() ? path : "./" + path;
    std::unique_ptr<void, Close> handle(::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (!handle) throw InputError(fmt::format("nelu check: --library {}: cannot load it: {}", path, ::dlerror()));
    return SolverLibrary(nullptr, std::move(handle), path);
}

void* SolverLibrary::address(const std::string& name) const { return ::dlsym(handle_.get(), name.c_str()); }

void* SolverLibrary::required_address(const std::string& name, const std::string& reason) const {
    if (void* a = address(name)) return a;
    const std::string why = reason.empty() ? "" : " (" + reason + ")";
    if (!given_.empty()) throw InputError(fmt::format("nelu check: --library {} has no entry point {}{}", given_, name, why));
    throw std::runtime_error(fmt::format("nelu check: the solver has no entry point {}{}", name, why));
}

Contraction SolverLibrary::contraction() const {
    const auto probe = find<double (*)(double, double, double)>(kContractionProbe);
    if (!probe) return Contraction::Unknown;
    volatile double a = 1 + 0x1p-30, b = 1 - 0x1p-30, c = -1;  // volatile: computed at run time, by the build's code
    return probe(a, b, c) != 0 ? Contraction::Present : Contraction::Absent;
}

}  // namespace nelu
