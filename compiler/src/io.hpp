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
/// renames. A file that cannot be written leaves none of them behind (nor any temporary file), and
/// the files it would have replaced as they were; so does a file whose path is a directory. A
/// rename that fails (after another succeeded) puts back the files this call had replaced (kept
/// under a second name, a hard link, until every rename is done) and removes those it had
/// created. `files`: (path, content) pairs. Then the files of `stale` that exist are removed
/// (files of an earlier run that this one makes obsolete); returns those it removed. Throws
/// InputError naming the path that failed.
std::vector<std::string> write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files,
                                            const std::vector<std::string>& stale = {});

/// The whole file at `path`; throws InputError naming it when it cannot be read.
std::string read_file(const std::string& path);

/// `s` with XML's special characters replaced by entities (&amp; &lt; &gt; &quot; &apos;), for an
/// attribute value or text of the XML nelu writes (URDF, SVG).
std::string xml_escape(const std::string& s);

}  // namespace nelu
