// Secrets do not belong in a config: a config is echoed in error messages and
// written to resolved.yaml, train.log and every checkpoint. These tell a value
// that looks like a key pasted in (a 256-bit key as 64 hex digits or as base64)
// so that the parser can refuse it and its messages never repeat it.
#pragma once
#include <string>
#include <string_view>

namespace strata {

// True for 64 hex digits, or 44 base64 characters ending in one '=' (32 bytes),
// surrounding whitespace ignored.
bool looks_like_key(std::string_view value);

// `value`, or a placeholder saying that a key-like value is not shown.
std::string shown_value(const std::string& value);

}  // namespace strata
