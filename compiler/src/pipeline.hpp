// pipeline.hpp: the passes of `nelu compile` and `nelu analyze`, wired in order.
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "analyze.hpp"
#include "emit.hpp"
#include "load.hpp"
#include "order.hpp"
#include "problem.hpp"
#include "system.hpp"
#include "verify.hpp"

namespace nelu {

struct CompileOptions {
    std::string urdf;
    std::string problem = "id";     ///< id | fd | hybrid | SPEC.yaml
    bool floating_base = false;
    bool ignore_mimic = false;      ///< mimic joints as independent joints (LoadOptions::ignore_mimic)
    std::string name;               ///< default: <robot>_<problem>
    std::string scalar = "both";    ///< double | float | both
    std::string dump;               ///< pass whose output to print, or ""
    int verify_states = 20;         ///< random states for the interpreter check (plus special ones)
    int validation_configs = 10000; ///< configurations for pivot validation
    bool progress = false;
    bool advice = true;             ///< notes on stderr about the options of the compile (nelu check recompiles without them)
    double snap = 0;                ///< --snap TOL: idealize near-structure (LoadOptions::snap), reported
    bool derivatives = false;       ///< --derivatives: also NAME_derivatives (outputs and their Jacobian)
    bool lanes = true;              ///< derivatives: the Jacobian's columns in SIMD lanes where they pay (--no-lanes: not)
    long max_stack = 16384;         ///< stack budget (bytes) above which the workspace form is emitted too
    /// For tests only (no option of the command line): a term of the structured derivatives to drop
    /// (derivatives.hpp, StructuredTerm), so that the verification against complex step must fail.
    StructuredTerm omit_structured_term = StructuredTerm::None;
    bool batch = false;             ///< --batch: also the batch entry points, in NAME_batch.hpp and NAME_batch.cpp
};

struct CompileResult {
    LoadResult load;
    Problem problem;
    System system;
    Analysis analysis;
    OrderResult order;
    VerifyReport verify;
    DerivativeReport derivatives;  ///< with CompileOptions::derivatives
    Emitted emitted;
    std::string name;
    int equations = 0, unknowns = 0;  ///< of the physical system (before any least-squares augmentation)
};

/// Run every pass up to emission (nothing is written). `dump`, when not null, receives the output
/// of the pass named in options.dump. Throws InputError, IllPosedError, or std::runtime_error when
/// the verification of the program fails (an internal error).
CompileResult compile(const CompileOptions& options, std::ostream* dump = nullptr);

/// Write NAME.hpp, NAME.cpp and NAME.json (and with --batch NAME_batch.hpp and NAME_batch.cpp) into
/// `dir` (created when missing), with `extra` (path, content) files beside them (the spy plots),
/// all or none (write_files_atomic). Without --batch, an earlier compile's NAME_batch.hpp and
/// NAME_batch.cpp there (files whose first line says nelu generated them under that name) are
/// removed; returns the files removed.
std::vector<std::string> write_outputs(const CompileResult& r, const std::string& dir,
                                       std::vector<std::pair<std::string, std::string>> extra = {});

}  // namespace nelu
