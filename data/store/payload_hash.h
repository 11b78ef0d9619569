// Hex SHA-256 of a request body, for SigV4's x-amz-content-sha256 header: S3
// checks the body it received against it, so a signed hash is also the
// transfer's integrity check.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace strata::data {

std::string sha256_hex(const std::vector<uint8_t>& bytes);
std::string sha256_hex(const std::string& text);
// Bytes [offset, offset + length) of a file; length -1 = to the end.
// Base64 of the MD5 digest: the Content-MD5 header some S3 requests require.
std::string md5_base64(const std::vector<uint8_t>& bytes);
std::string sha256_hex_of_file(const std::filesystem::path& file, int64_t offset = 0, int64_t length = -1);

}  // namespace strata::data
