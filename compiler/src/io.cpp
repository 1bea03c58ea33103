// io.cpp: see io.hpp.
#include "io.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

#include "diagnostics.hpp"

namespace nelu {

namespace {

std::string temporary_path(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

/// `content` to the temporary file of `path`; throws InputError naming `path` (and removes the
/// temporary file) when it cannot be written.
void write_temporary(const std::string& path, const std::string& content) {
    const std::string tmp = temporary_path(path);
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot write the file (" + std::error_code(errno, std::generic_category()).message() + ")");
    out << content;
    out.close();
    // on disk before the rename that publishes it: after a crash the path holds the old file or
    // the new one, never a new name over lost data
    const int fd = ::open(tmp.c_str(), O_RDONLY);
    const bool synced = fd >= 0 && ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
    if (!out || !synced) {
        std::remove(tmp.c_str());
        throw InputError(path + ": error while writing the file");
    }
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) { (void)write_files_atomic({{path, content}}); }

std::vector<std::string> write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files,
                                            const std::vector<std::string>& stale) {
    std::size_t written = 0;
    auto remove_temporaries = [&](std::size_t from) {
        for (std::size_t k = from; k < written; ++k) std::remove(temporary_path(files[k].first).c_str());
    };
    try {
        for (; written < files.size(); ++written) write_temporary(files[written].first, files[written].second);
    } catch (...) {
        remove_temporaries(0);
        throw;
    }
    std::error_code ec;
    for (const auto& [path, content] : files)  // (a directory in a file's place fails its rename: found before any is replaced)
        if (std::filesystem::is_directory(path, ec)) {
            remove_temporaries(0);
            throw InputError(path + ": is a directory, where nelu writes a file; nothing was written");
        }
    // the files being replaced, kept under a second name (a hard link) until every rename is done,
    // so that a rename that fails puts them back
    std::vector<std::string> kept(files.size());
    std::vector<bool> existed(files.size());
    for (std::size_t k = 0; k < files.size(); ++k) {
        existed[k] = std::filesystem::exists(files[k].first, ec);
        const std::string old = files[k].first + ".old." + std::to_string(::getpid());
        std::remove(old.c_str());
        if (existed[k] && ::link(files[k].first.c_str(), old.c_str()) == 0) kept[k] = old;
    }
    for (std::size_t k = 0; k < files.size(); ++k) {
        const std::string& path = files[k].first;
        if (std::rename(temporary_path(path).c_str(), path.c_str()) == 0) continue;
        const std::string why = std::error_code(errno, std::generic_category()).message();
        remove_temporaries(k);
        bool restored = true;  // (a file that did not exist is restored by its removal)
        for (std::size_t j = 0; j < k; ++j) {
            if (!kept[j].empty() && std::rename(kept[j].c_str(), files[j].first.c_str()) == 0) continue;
            std::remove(files[j].first.c_str());
            if (existed[j]) restored = false;
        }
        for (std::size_t j = k; j < files.size(); ++j)
            if (!kept[j].empty()) std::remove(kept[j].c_str());
        throw InputError(path + ": cannot write the file (" + why + ")" +
                         (k == 0   ? std::string()
                          : restored ? "; the files this run had put in place before it are back as they were"
                                     : "; the files this run had written before it were removed"));
    }
    for (const std::string& old : kept)
        if (!old.empty()) std::remove(old.c_str());
    std::vector<std::string> removed;
    for (const std::string& path : stale)
        if (std::filesystem::is_regular_file(path, ec) && std::remove(path.c_str()) == 0) removed.push_back(path);
    return removed;
}

std::string read_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open the file");
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw InputError(path + ": cannot read the file");
    return ss.str();
}

std::string xml_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default: out += c;
        }
    }
    return out;
}

}  // namespace nelu
