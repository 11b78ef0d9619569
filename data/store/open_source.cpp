// URL -> Source. Plain paths and file:// open a FileSource; s3:// and http(s)://
// open the remote sources.
#include "base/error.h"
#include "data/store/file_source.h"
#include "data/store/http_source.h"
#include "data/store/s3_source.h"
#include "data/store/source.h"

namespace strata::data {

std::unique_ptr<Source> open_source(const std::string& url, const SourceOptions& options) {
  if (url.empty()) throw ConfigError("empty dataset URL");
  const auto colon = url.find("://");
  if (colon == std::string::npos) return std::make_unique<FileSource>(url);
  const std::string scheme = url.substr(0, colon);
  if (scheme == "file") {
    std::string path = url.substr(7);
    if (path.empty()) throw ConfigError("file:// URL without a path: '" + url + "'");
    return std::make_unique<FileSource>(path);
  }
  if (scheme == "s3") return std::make_unique<S3Source>(url, options);
  if (scheme == "http" || scheme == "https") return std::make_unique<HttpSource>(url, options);
  throw ConfigError("unsupported URL scheme '" + scheme + "' in '" + url +
                    "' (expected file://, s3://, http://, https:// or a path)");
}

}  // namespace strata::data
