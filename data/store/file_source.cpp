// FileSource: objects are files under a root directory; keys use '/'.
#include "data/store/file_source.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_write.h"

namespace strata::data {
namespace fs = std::filesystem;
namespace {

// Temporaries of uploads by earlier versions (now base/atomic_file.h names them).
constexpr const char* kOldTempPrefix = ".strata-tmp-";

std::vector<uint8_t> read_bytes(const fs::path& p, uint64_t offset, uint64_t length, const std::string& key) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw IoError("cannot read object '" + key + "' (" + p.string() + "): " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  if (offset >= size) return {};
  const uint64_t n = std::min(length, size - offset);
  std::vector<uint8_t> out(n);
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
  if (static_cast<uint64_t>(in.gcount()) != n) throw IoError("short read of " + p.string());
  return out;
}

}  // namespace

FileSource::FileSource(fs::path root) : root_(std::move(root)) {}

std::string FileSource::url() const { return "file://" + fs::absolute(root_).string(); }

fs::path FileSource::path_of(const std::string& key) const {
  if (key.empty()) throw ConfigError("empty object key for " + url());
  fs::path rel(key);
  if (rel.is_absolute()) throw ConfigError("object key '" + key + "' must be relative (" + url() + ")");
  for (const auto& part : rel)
    if (part == "..") throw ConfigError("object key '" + key + "' must not contain '..' (" + url() + ")");
  return root_ / rel;
}

std::vector<uint8_t> FileSource::get(const std::string& key) {
  ++stats_.requests;
  auto out = read_bytes(path_of(key), 0, UINT64_MAX, key);
  stats_.bytes += static_cast<int64_t>(out.size());
  return out;
}

std::vector<uint8_t> FileSource::get_range(const std::string& key, uint64_t offset, uint64_t length) {
  ++stats_.requests;
  auto out = read_bytes(path_of(key), offset, length, key);
  stats_.bytes += static_cast<int64_t>(out.size());
  return out;
}

void FileSource::get_to_file(const std::string& key, const fs::path& dest) {
  ++stats_.requests;
  const fs::path src = path_of(key);
  try {
    stats_.bytes += static_cast<int64_t>(copy_file_bytes(src, dest));  // ENOSPC said as such, with sizes
  } catch (const IoError& e) {
    throw IoError("cannot copy object '" + key + "' of " + url() + ": " + e.what());
  }
}

ObjectInfo FileSource::head(const std::string& key) {
  ++stats_.requests;
  const fs::path p = path_of(key);
  std::error_code ec;
  auto st = fs::status(p, ec);
  if (ec || !fs::is_regular_file(st))
    throw IoError("no object '" + key + "' in " + url() + " (" + p.string() + ")");
  return ObjectInfo{key, fs::file_size(p), ""};
}

void FileSource::put_with(const std::string& key, const std::function<void(const fs::path&)>& write) {
  const fs::path dest = path_of(key);
  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  if (ec) throw IoError("cannot create directory " + dest.parent_path().string() + ": " + ec.message());
  // No fsync, as before: readers check every shard against the manifest's checksum.
  write_file_atomically(dest, write, {}, {.sync = false});
}

void FileSource::put(const std::string& key, const std::vector<uint8_t>& bytes) {
  ++stats_.requests;
  put_with(key, [&](const fs::path& tmp) { write_bytes(tmp, bytes.data(), bytes.size()); });
  stats_.bytes += static_cast<int64_t>(bytes.size());
}

void FileSource::put_file(const std::string& key, const fs::path& src) {
  ++stats_.requests;
  uint64_t copied = 0;
  put_with(key, [&](const fs::path& tmp) { copied = copy_file_bytes(src, tmp); });
  stats_.bytes += static_cast<int64_t>(copied);
}

void FileSource::remove(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    ++stats_.requests;
    std::error_code ec;
    fs::remove(path_of(key), ec);
    if (ec) throw IoError("cannot delete " + path_of(key).string() + ": " + ec.message());
  }
}

std::vector<ObjectInfo> FileSource::list(const std::string& prefix) {
  ++stats_.requests;
  std::vector<ObjectInfo> out;
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return out;  // like an empty bucket prefix
  for (auto it = fs::recursive_directory_iterator(root_, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string name = it->path().filename().string();
    if (is_temporary_name(name) || name.rfind(kOldTempPrefix, 0) == 0) continue;  // an upload in progress
    std::string key = fs::relative(it->path(), root_).generic_string();
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    out.push_back(ObjectInfo{std::move(key), it->file_size(), ""});
  }
  if (ec) throw IoError("cannot list " + root_.string() + ": " + ec.message());
  std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

}  // namespace strata::data
