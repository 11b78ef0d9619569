// Where the requests for one bucket go: path style puts the bucket in the path
// (http://host:port/bucket/key), virtual-host style in the host name
// (https://bucket.host/key). SigV4 signs the Host header, which libcurl takes
// from the URL, so choosing the URL is all addressing takes.
#pragma once
#include <string>

#include "data/store/source.h"

namespace strata::data {

// kPath or kVirtual for `bucket` at `endpoint`. Auto means: virtual for AWS
// (*.amazonaws.com) and Huawei OBS (*.myhuaweicloud.com, which requires it),
// path for IP addresses, localhost and other custom endpoints, and path for a
// bucket name that cannot be a DNS label (upper case, '_', or, over https,
// '.', which the endpoint's wildcard certificate would not cover). Asking for
// virtual where it cannot work is a ConfigError naming the bucket and endpoint.
AddressingStyle choose_addressing(AddressingStyle requested, const std::string& endpoint,
                                  const std::string& bucket);

class S3Endpoint {
 public:
  // `endpoint` is "scheme://host[:port][/path]" without a trailing slash.
  S3Endpoint(const std::string& endpoint, const std::string& bucket, AddressingStyle requested);
  bool virtual_host() const { return virtual_host_; }
  // The bucket's URL without a trailing slash; object and query URLs extend it.
  const std::string& bucket_url() const { return bucket_url_; }
  // `encoded_key` is already percent-encoded.
  std::string object_url(const std::string& encoded_key) const { return bucket_url_ + "/" + encoded_key; }
  // The bucket itself (create, list): "http://host/bucket" or "http://bucket.host/".
  std::string bucket_resource() const { return virtual_host_ ? bucket_url_ + "/" : bucket_url_; }

 private:
  bool virtual_host_ = false;
  std::string bucket_url_;
};

// "path", "virtual", "auto" -> the style; "" -> kUnset. Throws ConfigError
// naming `where` for any other value.
AddressingStyle parse_addressing_style(const std::string& text, const std::string& where);
const char* addressing_style_name(AddressingStyle style);

}  // namespace strata::data
