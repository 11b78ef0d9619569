// s3://bucket/prefix through the S3 REST API (path or virtual-host addressing),
// signed with SigV4 by libcurl. Endpoint, region, addressing and credentials
// come from SourceOptions or, where unset, the AWS configuration chain
// (data/store/s3_options.h).
#pragma once
#include <mutex>
#include <string>

#include "data/store/s3_endpoint.h"
#include "data/store/s3_multipart.h"
#include "data/store/s3_options.h"
#include "data/store/source.h"

namespace strata::data {

struct HttpResponse;

class S3Source final : public Source {
 public:
  // `url` is "s3://bucket" or "s3://bucket/prefix"; keys are relative to prefix.
  S3Source(const std::string& url, const SourceOptions& options);
  std::string url() const override;
  std::vector<uint8_t> get(const std::string& key) override;
  std::vector<uint8_t> get_range(const std::string& key, uint64_t offset, uint64_t length) override;
  void get_to_file(const std::string& key, const std::filesystem::path& dest) override;
  ObjectInfo head(const std::string& key) override;
  void put(const std::string& key, const std::vector<uint8_t>& bytes) override;
  void put_file(const std::string& key, const std::filesystem::path& src) override;
  std::vector<ObjectInfo> list(const std::string& prefix) override;
  void remove(const std::vector<std::string>& keys) override;

  // Multipart uploads under `prefix` (relative to this source's) that were
  // started and never completed or aborted, e.g. by a process that was killed.
  std::vector<OpenUpload> open_uploads(const std::string& prefix = "");
  // Aborts one of those: S3 drops its parts.
  void abort_upload(const OpenUpload& upload);
  // What the last put_file sent (parts 1 for a single PUT).
  UploadReport last_upload() const;

  // ListObjectsV2 page size (max-keys), 1..1000; small values exercise paging.
  void set_list_page_size(int n) { page_size_ = n; }
  const SourceOptions& options() const { return opt_; }
  const std::string& bucket() const { return bucket_; }
  bool virtual_host() const { return endpoint_.virtual_host(); }

 private:
  std::string object_url(const std::string& full_key) const;
  MultipartTarget multipart_target(const std::string& full_key) const;
  [[noreturn]] void fail(const std::string& op, const std::string& full_key, const HttpResponse& r) const;

  std::string prefix_;  // "" or ending in '/'; declared first: bucket_'s initialiser fills it
  std::string bucket_;
  SourceOptions opt_;
  S3Endpoint endpoint_;
  int page_size_ = 1000;
  mutable std::mutex upload_mu_;
  UploadReport last_upload_;
};

// Creates a bucket ("s3://name", "s3://name/anything" or "name"). Idempotent:
// a bucket this user already owns is fine. Throws RemoteError otherwise.
void create_bucket(const std::string& s3_url_or_bucket, const SourceOptions& options);

}  // namespace strata::data
