// The test RGW's coordinates, which ctest's "rgw" fixture (scripts/rgw.sh) puts
// in the environment; shared by every test that talks to it.
#pragma once
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "data/store/source.h"

namespace strata::data::testing {

inline std::string need_env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw std::runtime_error(std::string(name) + " is not set: run through ctest (fixture rgw)");
  return v;
}

// `endpoint` replaces the RGW's own (e.g. a strata-proxy in front of it).
inline SourceOptions rgw_options(const std::string& endpoint = "") {
  SourceOptions o;
  o.endpoint = endpoint.empty() ? need_env("STRATA_TEST_S3_ENDPOINT") : endpoint;
  o.access_key = need_env("STRATA_TEST_S3_ACCESS_KEY");
  o.secret_key = need_env("STRATA_TEST_S3_SECRET_KEY");
  o.region = "us-east-1";
  return o;
}

}  // namespace strata::data::testing
