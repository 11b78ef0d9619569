#include "train/config/secret_values.h"

#include <cctype>

namespace strata {

bool looks_like_key(std::string_view v) {
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  auto all = [&](std::string_view s, auto pred) {
    for (char c : s)
      if (!pred(static_cast<unsigned char>(c))) return false;
    return true;
  };
  if (v.size() == 64 && all(v, [](unsigned char c) { return std::isxdigit(c) != 0; })) return true;
  // Base64 of 32 bytes: 43 characters and one '=' of padding. ('/' is in the
  // alphabet, but a path does not end in '='.)
  return v.size() == 44 && v.back() == '=' &&
         all(v.substr(0, 43), [](unsigned char c) { return std::isalnum(c) || c == '+' || c == '/'; });
}

std::string shown_value(const std::string& value) {
  return looks_like_key(value) ? "<a value that looks like a key, not shown>" : value;
}

}  // namespace strata
