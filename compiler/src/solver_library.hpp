// solver_library.hpp: a generated solver's shared library as `nelu check` loads it (built from the
// generated sources in a private temporary directory, or given with --library), and the types of
// its entry points.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace nelu {

/// The entry points of a generated solver in scalar S (double or float): NAME, NAME_derivatives and
/// their batch forms (docs/batch.md), NAME_f and the others in float.
template <class S>
using ValueFn = int (*)(const S* q, const S* qd, const S* in, S* out);
template <class S>
using DerivativesFn = int (*)(const S* q, const S* qd, const S* in, S* out, S* jac);
template <class S>
using ValueBatchFn = int (*)(int n, const S* q, const S* qd, const S* in, S* out, int* status);
template <class S>
using DerivativesBatchFn = int (*)(int n, const S* q, const S* qd, const S* in, S* out, S* jac, int* status);
using BatchWidthFn = int (*)();
/// The workspace forms (NAME_ws, NAME_derivatives_ws: docs/firmware.md, "Stack").
template <class S>
using WsValueFn = int (*)(const S* q, const S* qd, const S* in, S* out, void* work);
template <class S>
using WsDerivativesFn = int (*)(const S* q, const S* qd, const S* in, S* out, S* jac, void* work);

/// A solver's arguments in scalar S: the independent coordinates q and qd and the inputs, rounded
/// from double (or from another scalar).
template <class S>
struct Arguments {
    std::vector<S> q, qd, in;
    Arguments(const std::vector<double>& q_, const std::vector<double>& qd_, const std::vector<double>& in_)
        : q(q_.begin(), q_.end()), qd(qd_.begin(), qd_.end()), in(in_.begin(), in_.end()) {}
    template <class T>
    explicit Arguments(const Arguments<T>& a) : q(a.q.begin(), a.q.end()), qd(a.qd.begin(), a.qd.end()), in(a.in.begin(), a.in.end()) {}
};

/// What the entry points in scalar S append to the solver's name: "" in double, "_f" in float.
template <class S>
constexpr const char* scalar_suffix() {
    static_assert(std::is_same_v<S, double> || std::is_same_v<S, float>, "the solvers compute in double or float");
    return std::is_same_v<S, float> ? "_f" : "";
}

/// Whether a build fuses a * b + c into one rounding (FMA contraction): known when `nelu check`
/// built the library with its probe, unknown for a library built elsewhere.
enum class Contraction { Absent, Present, Unknown };

/// A fresh directory of its own under the system's temporary directory (mkdtemp: a unique name,
/// mode 0700), removed with everything in it when the object goes away; and, for the one directory
/// of the process that asks (`remove_on_signal`), also when SIGINT, SIGTERM or SIGHUP ends it.
class TempDir {
  public:
    explicit TempDir(const std::string& prefix);
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir();
    const std::filesystem::path& path() const { return path_; }
    /// On SIGINT, SIGTERM or SIGHUP while this object lives: unlink `files` (the names in it this
    /// process writes) and the directory, then end as the signal would have. One directory a
    /// process (a later call replaces an earlier one's); a path too long for the handler's buffers
    /// is left to the destructor alone.
    void remove_on_signal(const std::vector<std::string>& files);

  private:
    std::filesystem::path path_;
    bool on_signal_ = false;
};

/// A solver's shared library, loaded. The handle is closed, and the directory it was built in
/// removed, when the object goes away, on every path (errors included).
class SolverLibrary {
  public:
    /// Compile `sources` (NAME.cpp, and NAME_batch.cpp) with the contraction probe into a shared
    /// object in a private temporary directory, and load it. `cxx` is a compiler and optional flags
    /// ("g++ -O3 -march=x86-64-v3"); the flags come after nelu's own (-std=c++17 -O2 -Wall -Wextra
    /// -Werror), so that they can override them (-O0, -O3). Throws InputError when the compiler is
    /// not found and std::runtime_error when the sources do not build or the result does not load.
    static SolverLibrary build(const std::vector<std::filesystem::path>& sources, const std::string& cxx);
    /// Load a library built elsewhere (nelu check --library; the Python package's build). Throws
    /// InputError when it does not exist or does not load.
    static SolverLibrary load(const std::string& path);

    /// Symbol `name` as a function of type F, or null when the library has none.
    template <class F>
    F find(const std::string& name) const {
        return reinterpret_cast<F>(address(name));
    }
    /// Symbol `name`, which the solver must have (`reason` says why when it has not): an
    /// InputError for a given library, a std::runtime_error for one nelu check built.
    template <class F>
    F require(const std::string& name, const std::string& reason = "") const {
        return reinterpret_cast<F>(required_address(name, reason));
    }
    /// Whether the build contracts a * b + c, as the probe built with it says; Unknown without it.
    Contraction contraction() const;

  private:
    struct Close {
        void operator()(void* handle) const;
    };
    SolverLibrary(std::unique_ptr<TempDir> dir, std::unique_ptr<void, Close> handle, std::string given);
    void* address(const std::string& name) const;
    void* required_address(const std::string& name, const std::string& reason) const;

    // Members are destroyed in reverse: the handle is closed before its directory is removed.
    std::unique_ptr<TempDir> dir_;         ///< where nelu check built it (null for a given library)
    std::unique_ptr<void, Close> handle_;  ///< dlopen's
    std::string given_;                    ///< the path of a given library, "" for a build
};

}  // namespace nelu
