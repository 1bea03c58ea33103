// diagnostics.hpp: the compiler's error policy.
//
// Input is validated at the boundary and reported with the file, line and element it concerns;
// each error class maps to one exit code of the CLI contract (DESIGN.md):
//   1 the problem is ill-posed or a pivot cannot be made safe;  2 bad input;  3 internal error.
#pragma once

#include <stdexcept>
#include <string>

namespace nelu {

enum ExitCode : int { kExitOk = 0, kExitIllPosed = 1, kExitBadInput = 2, kExitInternal = 3 };

/// Bad input: a missing or malformed file, an invalid element. Exit code 2.
struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// A well-formed input describing a problem that cannot be solved (ill-posed, singular). Exit 1.
struct IllPosedError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Ill-posed whatever the pivot order (osim's Lambda does not exist at any configuration): the
/// order search stops at once instead of trying the next candidate. Exit 1.
struct OrderIndependentError : IllPosedError {
    using IllPosedError::IllPosedError;
};

/// "FILE:LINE: " or "FILE: " when the line is unknown (0).
inline std::string location(const std::string& file, int line) {
    return line > 0 ? file + ":" + std::to_string(line) + ": " : file + ": ";
}

}  // namespace nelu
