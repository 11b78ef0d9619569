// A local directory behind the Source interface. Tests and single-node runs use
// it in place of the object store, so it keeps the same request/byte counters.
#pragma once
#include <filesystem>
#include <functional>

#include "data/store/source.h"

namespace strata::data {

class FileSource final : public Source {
 public:
  explicit FileSource(std::filesystem::path root);
  std::string url() const override;
  std::vector<uint8_t> get(const std::string& key) override;
  std::vector<uint8_t> get_range(const std::string& key, uint64_t offset, uint64_t length) override;
  void get_to_file(const std::string& key, const std::filesystem::path& dest) override;
  ObjectInfo head(const std::string& key) override;
  void put(const std::string& key, const std::vector<uint8_t>& bytes) override;
  void put_file(const std::string& key, const std::filesystem::path& src) override;
  std::vector<ObjectInfo> list(const std::string& prefix) override;
  void remove(const std::vector<std::string>& keys) override;

  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path path_of(const std::string& key) const;
  // Writes via a temporary name in the destination directory, then renames, so
  // a reader never sees a half-written object.
  void put_with(const std::string& key, const std::function<void(const std::filesystem::path&)>& write);

  std::filesystem::path root_;
};

}  // namespace strata::data
