// http(s)://host/prefix: read-only objects over plain HTTP GET (whole or Range).
// put and list throw: a web server has no upload or listing API to rely on.
#pragma once
#include "data/store/source.h"

namespace strata::data {

class HttpSource final : public Source {
 public:
  HttpSource(std::string url, const SourceOptions& options);
  std::string url() const override { return base_; }
  std::vector<uint8_t> get(const std::string& key) override;
  std::vector<uint8_t> get_range(const std::string& key, uint64_t offset, uint64_t length) override;
  void get_to_file(const std::string& key, const std::filesystem::path& dest) override;
  ObjectInfo head(const std::string& key) override;
  void put(const std::string& key, const std::vector<uint8_t>& bytes) override;
  void put_file(const std::string& key, const std::filesystem::path& src) override;
  std::vector<ObjectInfo> list(const std::string& prefix) override;
  void remove(const std::vector<std::string>& keys) override;

 private:
  std::string object_url(const std::string& key) const;
  std::string base_;  // ends with '/'
  RetryPolicy retry_;
};

}  // namespace strata::data
