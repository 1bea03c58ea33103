// emit.hpp: the `emit` pass. C++ source and header, and the JSON manifest, from a factorized
// program. A thin printer: every decision was taken by the passes before. Its parts: layout.hpp
// (statement order, parts, values in registers or workspace slots, the stack estimate),
// printer.hpp (the program as C++ functions, in the form chosen for each), manifest.hpp (NAME.json).
#pragma once

#include <string>
#include <vector>

#include "load.hpp"
#include "nelu/counting.hpp"
#include "problem.hpp"
#include "schedule.hpp"
#include "system.hpp"

namespace nelu {

struct EmitInput {
    std::string name;          ///< C identifier of the entry point
    std::string urdf_path, urdf_text;
    std::string spec_text;     ///< the YAML spec's text, when the problem came from one
    bool scalar_double = true, scalar_float = true;
    const LoadResult* load = nullptr;
    const Problem* problem = nullptr;
    const System* system = nullptr;
    const Factorization* factorization = nullptr;
    double verified_error = -1;  ///< from the verify pass; -1 when not run
    OpCounts reference_rnea, reference_aba;  ///< the counting reference on the same model
    int verified_states = 0;
    double umfpack_flops = -1;  ///< sensor problems: a run-time sparse LU of the same D (analyze.hpp)
    long max_stack = 16384;     ///< stack budget in bytes: above it, the workspace form (NAME_ws) is emitted too
    bool ignore_mimic = false;  ///< loaded with --ignore-mimic (recorded in the manifest)
    bool batch = false;         ///< --batch: also NAME_batch.hpp and NAME_batch.cpp, the batch entry points
};

struct Emitted {
    std::string header, source, manifest;  ///< NAME.hpp, NAME.cpp, NAME.json
    std::string batch_header, batch_source;  ///< NAME_batch.hpp, NAME_batch.cpp (with --batch; else empty)
};

Emitted run_emit(const EmitInput& in);

/// FNV-1a 64-bit hash of `text` as 16 hex digits (names the inputs in banners and manifests).
std::string content_hash(const std::string& text);

/// `s` made into a C identifier ([A-Za-z_][A-Za-z0-9_]*).
std::string c_identifier(const std::string& s);

}  // namespace nelu
