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

/// What in a name from the input (a URDF's robot, link or joint, a sensor, a contact) could not be
/// written into the generated code's comments, where names appear: a control character (a line
/// break would end a `//` comment), a backslash (one at a line's end continues a `//` comment) or
/// "*/" and "/*" (they end or nest a `/* */` comment). Empty when the name is fine.
inline std::string unwritable_in_comments(const std::string& name) {
    for (char ch : name) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) return "a control character (a line break, a tab, ...)";
        if (c == '\\') return "a backslash";
    }
    if (name.find("*/") != std::string::npos) return "'*/'";
    if (name.find("/*") != std::string::npos) return "'/*'";
    // a trigraph: compilers in ISO mode (-std=c++17) read '??/' at a comment's end as a backslash
    // that continues the comment onto the next line of code
    for (std::size_t k = name.find("??"); k != std::string::npos && k + 2 < name.size(); k = name.find("??", k + 1))
        if (std::string("=/'()!<>-").find(name[k + 2]) != std::string::npos) return "the trigraph '" + name.substr(k, 3) + "'";
    return {};
}

/// `text` with its control characters and backslashes escaped (\\n, \\t, \\xHH, \\\\), for an error message
/// that quotes a name.
inline std::string escaped(const std::string& text) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\\') out += "\\\\";
        else if (c < 0x20 || c == 0x7f) out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
        else out += ch;
    }
    return out;
}

/// Throws InputError "WHERE`open`NAME`close`: the name contains ..." when `name` could not be written
/// into the generated code's comments (unwritable_in_comments); NAME is `name` escaped. `where`: the
/// location prefix ("FILE:LINE: "); `open` and `close` name the element: "sensor '" and "'", or
/// "<link name=\"" and "\">".
inline void refuse_unwritable_name(const std::string& where, const std::string& name, const std::string& open, const std::string& close) {
    if (const std::string bad = unwritable_in_comments(name); !bad.empty())
        throw InputError(where + open + escaped(name) + close + ": the name contains " + bad + ", which nelu cannot write into the generated code");
}

/// Whether `name` is a word of letters, digits, '_' and '-' (the names the problem spec gives
/// sensors and contacts, which become the output slots' names, `NAME.fx`).
inline bool is_slot_word(const std::string& name) {
    if (name.empty()) return false;
    for (char ch : name) {
        const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        if (!ok) return false;
    }
    return true;
}

}  // namespace nelu
