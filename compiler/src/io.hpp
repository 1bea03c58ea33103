// io.hpp: file output that never leaves a half-written file behind, and the text it writes.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace nelu {

/// Write `content` to `path` atomically: to a temporary file in the same directory, then rename.
/// Throws InputError naming the path when it cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);

/// Write several files as one: every content to a temporary file beside its path first, then the
/// renames. A file that cannot be written leaves none of them behind (nor any temporary file);
/// a rename that fails removes the files this call has already put in place. `files`: (path,
/// content) pairs. Throws InputError naming the path that failed.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

/// The whole file at `path`; throws InputError naming it when it cannot be read.
std::string read_file(const std::string& path);

/// `s` with XML's special characters replaced by entities (&amp; &lt; &gt; &quot; &apos;), for an
/// attribute value or text of the XML nelu writes (URDF, SVG).
std::string xml_escape(const std::string& s);

}  // namespace nelu
