#include "data/store/s3_endpoint.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include "base/error.h"

namespace strata::data {
namespace {

struct UrlParts {
  std::string scheme, host, port_and_path;  // "http", "h.example", ":7480/x"
};

UrlParts split_endpoint(const std::string& endpoint) {
  const auto sep = endpoint.find("://");
  if (sep == std::string::npos)
    throw ConfigError("S3 endpoint '" + endpoint +
                      "' has no scheme (expected http://host:port or https://host)");
  UrlParts u;
  u.scheme = endpoint.substr(0, sep);
  const std::string rest = endpoint.substr(sep + 3);
  size_t host_end;
  if (!rest.empty() && rest[0] == '[')  // an IPv6 literal
    host_end = rest.find(']') == std::string::npos ? rest.size() : rest.find(']') + 1;
  else
    host_end = rest.find_first_of(":/");
  u.host = rest.substr(0, host_end);
  u.port_and_path = host_end == std::string::npos ? "" : rest.substr(host_end);
  if (u.host.empty()) throw ConfigError("S3 endpoint '" + endpoint + "' has no host");
  return u;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_ip_address(const std::string& host) {
  unsigned char buf[16];
  return host.front() == '[' || inet_pton(AF_INET, host.c_str(), buf) == 1;
}

// A bucket name usable as host-name labels (RFC 1123, lower case).
bool dns_compatible(const std::string& bucket, bool https) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  if (https && bucket.find('.') != std::string::npos) return false;
  if (!std::isalnum(static_cast<unsigned char>(bucket.front())) ||
      !std::isalnum(static_cast<unsigned char>(bucket.back())))
    return false;
  return std::all_of(bucket.begin(), bucket.end(), [](unsigned char c) {
    return (std::islower(c) || std::isdigit(c) || c == '-' || c == '.');
  });
}

}  // namespace

AddressingStyle choose_addressing(AddressingStyle requested, const std::string& endpoint,
                                  const std::string& bucket) {
  if (requested == AddressingStyle::kPath) return requested;
  const UrlParts u = split_endpoint(endpoint);
  const bool https = u.scheme == "https";
  if (requested == AddressingStyle::kVirtual) {
    if (is_ip_address(u.host))
      throw ConfigError("virtual-host addressing needs a host name, but the S3 endpoint '" + endpoint +
                        "' is an IP address; use addressing_style path");
    if (!dns_compatible(bucket, https))
      throw ConfigError("bucket '" + bucket + "' cannot be addressed virtual-host style at '" + endpoint +
                        "' (a DNS name needs 3-63 lower-case letters, digits, '-'" +
                        (https ? ", and no '.' over https" : ", '.'") + "); use addressing_style path");
    return requested;
  }
  const bool known_virtual = ends_with(u.host, ".amazonaws.com") || ends_with(u.host, ".myhuaweicloud.com");
  return known_virtual && dns_compatible(bucket, https) ? AddressingStyle::kVirtual : AddressingStyle::kPath;
}

S3Endpoint::S3Endpoint(const std::string& endpoint, const std::string& bucket, AddressingStyle requested) {
  virtual_host_ = choose_addressing(requested, endpoint, bucket) == AddressingStyle::kVirtual;
  if (!virtual_host_) {
    bucket_url_ = endpoint + "/" + bucket;
    return;
  }
  const UrlParts u = split_endpoint(endpoint);
  bucket_url_ = u.scheme + "://" + bucket + "." + u.host + u.port_and_path;
}

AddressingStyle parse_addressing_style(const std::string& text, const std::string& where) {
  if (text.empty()) return AddressingStyle::kUnset;
  if (text == "auto") return AddressingStyle::kAuto;
  if (text == "path") return AddressingStyle::kPath;
  if (text == "virtual") return AddressingStyle::kVirtual;
  throw ConfigError(where + ": addressing_style '" + text + "' is not one of path, virtual, auto");
}

const char* addressing_style_name(AddressingStyle style) {
  switch (style) {
    case AddressingStyle::kAuto:
      return "auto";
    case AddressingStyle::kPath:
      return "path";
    case AddressingStyle::kVirtual:
      return "virtual";
    case AddressingStyle::kUnset:
      break;
  }
  return "";
}

}  // namespace strata::data
