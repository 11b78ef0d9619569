// s3://bucket/prefix through the S3 REST API (path-style), signed with SigV4 by
// libcurl. Endpoint, region and credentials come from SourceOptions or, where
// unset, from the AWS environment (see resolve_s3_options).
#pragma once
#include <string>

#include "data/source.h"

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

  // ListObjectsV2 page size (max-keys), 1..1000; small values exercise paging.
  void set_list_page_size(int n) { page_size_ = n; }
  const SourceOptions& options() const { return opt_; }
  const std::string& bucket() const { return bucket_; }

 private:
  std::string object_url(const std::string& full_key) const;
  [[noreturn]] void fail(const std::string& op, const std::string& full_key, const HttpResponse& r) const;

  std::string bucket_;
  std::string prefix_;  // "" or ending in '/'
  SourceOptions opt_;
  int page_size_ = 1000;
};

// Fills the unset fields of `options` from the environment: endpoint from
// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, S3_ENDPOINT (else AWS's regional
// endpoint); region from AWS_REGION, AWS_DEFAULT_REGION (else us-east-1);
// keys from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else
// the [AWS_PROFILE or default] section of AWS_SHARED_CREDENTIALS_FILE (default
// ~/.aws/credentials). Throws ConfigError when no credentials are found.
SourceOptions resolve_s3_options(const SourceOptions& options);

// Creates a bucket ("s3://name", "s3://name/anything" or "name"). Idempotent:
// a bucket this user already owns is fine. Throws RemoteError otherwise.
void create_bucket(const std::string& s3_url_or_bucket, const SourceOptions& options);

}  // namespace strata::data
