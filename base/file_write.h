// Writing and copying whole files with errors that say what the file system
// said. A full disk is the failure users meet most on a shared node, and the
// C++ streams and std::filesystem::copy_file report it as a bare "Input/output
// error" or nothing at all; here it is "no space left on device" with the path,
// the bytes the write needed and the bytes the file system had free.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace strata {

// Creates or truncates `path` and writes `size` bytes to it (no fsync; atomic
// writers fsync when they commit). Throws strata::IoError naming the path.
void write_bytes(const std::filesystem::path& path, const void* data, size_t size);

// Writes `text` to `path` whole or not at all (base/atomic_file.h's
// write_file_atomically over write_bytes): a full disk never leaves a truncated
// summary.json, run.json or resolved.yaml.
void write_text_atomically(const std::filesystem::path& path, const std::string& text);

// Copies the regular file `src` to `dest` (created or truncated), with the
// same errors as write_bytes. Returns the bytes copied.
uint64_t copy_file_bytes(const std::filesystem::path& src, const std::filesystem::path& dest);

// Free bytes for an unprivileged writer on the file system holding `path` (or
// its nearest existing parent); -1 when it cannot be told.
int64_t free_bytes(const std::filesystem::path& path);

// The message for a write to `path` (to hold `total` bytes, `written` of them
// done) that failed with errno `err`: for ENOSPC and EDQUOT "no space left on
// device writing '<path>': the file needs <total> bytes, <written> were
// written, <free> bytes are free"; otherwise the errno's text.
std::string write_failure(const std::filesystem::path& path, int err, uint64_t total, uint64_t written);

}  // namespace strata
