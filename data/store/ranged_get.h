// Whole-object downloads in ranged parts, several at a time. One TCP stream
// is capped by its window and by the server's per-request pace, so a large
// shard arrives sooner over several connections. The first GET asks for part 0
// and learns the object's size (and ETag) from its answer, so an object of one
// part costs one request, as a plain GET does. The other parts follow on up to
// `connections` concurrent GETs, each written in place (pwrite at its offset)
// into the destination, and each sent with If-Match on part 0's ETag, so an
// object replaced mid-download fails instead of mixing two versions. Every
// part goes through perform_with_retry (the retry policy of a single GET); the
// first part that still fails fails the download, naming its byte range.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "data/store/curl_transfer.h"
#include "data/store/source.h"

namespace strata::data {

// How a source sends its GETs: `request` makes a GET of the whole object (URL,
// signing, headers); `fail` throws the source's error for a non-2xx answer to
// the request for `range` ("first-last", or "" for a plain GET); `what` names
// the object in messages ("S3 GET s3://bucket/key").
struct ObjectGet {
  std::function<HttpRequest()> request;
  std::function<void(const HttpResponse& response, const std::string& range)> fail;
  std::string what;
};

// Downloads the object into `dest` (created or truncated). The file is whole
// only when this returns; on an exception it holds an unspecified mixture
// (the caller writes to a temporary name, as the shard cache does).
void get_in_parts(const ObjectGet& object, const std::filesystem::path& dest, const PartedTransfer& parts,
                  const RetryPolicy& retry, SourceStats& stats);

}  // namespace strata::data
