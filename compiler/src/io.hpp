// io.hpp: file output that never leaves a half-written file behind.
#pragma once

#include <string>
#include <vector>

namespace nelu {

/// Write `content` to `path` atomically: to a temporary file in the same directory, then rename.
/// Throws InputError naming the path when it cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);

/// The whole file at `path`; throws InputError naming it when it cannot be read.
std::string read_file(const std::string& path);

}  // namespace nelu
