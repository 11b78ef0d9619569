// Ini parsing as botocore does it: '#' and ';' start a comment only at the start
// of a line (a value may hold either), keys are case-sensitive, an indented line
// after "key =" belongs to that key's sub-section, and a later duplicate wins.
#include "data/store/aws_config.h"

#include <cstdlib>
#include <fstream>

#include "base/error.h"

namespace strata::data {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The profile a section header names, or "" when it is not a profile section
// (the config file's "[sso-session x]", "[services x]", or "[x]" without the
// "profile " prefix, which the CLI ignores too).
std::string profile_of_section(const std::string& header, AwsFileKind kind) {
  if (kind == AwsFileKind::kCredentials) return header;
  if (header == "default") return header;
  if (header.rfind("profile ", 0) == 0) return trim(header.substr(8));
  return "";
}

}  // namespace

std::string AwsProfile::get(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() ? "" : it->second;
}

std::string AwsProfile::get(const std::string& sub, const std::string& key) const {
  auto it = subsections.find(sub);
  if (it == subsections.end()) return "";
  auto kv = it->second.find(key);
  return kv == it->second.end() ? "" : kv->second;
}

std::string AwsProfile::describe() const {
  return "profile '" + name + "' in " + (file.empty() ? std::string("(no file)") : file.string());
}

AwsProfile read_aws_profile(const std::filesystem::path& file, const std::string& name, AwsFileKind kind) {
  AwsProfile p;
  p.name = name;
  p.file = file;
  if (file.empty()) return p;
  std::ifstream in(file);
  if (!in) return p;
  std::string raw, section, open_sub;
  bool in_profile = false;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const bool indented = raw[0] == ' ' || raw[0] == '\t';
    if (line.front() == '[') {
      if (line.back() != ']')
        throw ConfigError(file.string() + ":" + std::to_string(line_no) + ": unterminated section header '" +
                          line + "'");
      section = profile_of_section(trim(line.substr(1, line.size() - 2)), kind);
      in_profile = !section.empty() && section == name;
      p.found = p.found || in_profile;
      open_sub.clear();
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw ConfigError(file.string() + ":" + std::to_string(line_no) +
                        ": expected '[section]' or 'key = value', got '" + line + "'");
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (!in_profile) continue;
    if (indented && !open_sub.empty()) {
      p.subsections[open_sub][key] = value;
      continue;
    }
    open_sub = value.empty() ? key : "";
    if (value.empty())
      p.subsections[key];  // "s3 =" opens a sub-section (possibly left empty)
    else
      p.values[key] = value;
  }
  return p;
}

std::filesystem::path aws_config_file() {
  if (!env("AWS_CONFIG_FILE").empty()) return env("AWS_CONFIG_FILE");
  return env("HOME").empty() ? std::filesystem::path() : std::filesystem::path(env("HOME")) / ".aws/config";
}

std::filesystem::path aws_credentials_file() {
  if (!env("AWS_SHARED_CREDENTIALS_FILE").empty()) return env("AWS_SHARED_CREDENTIALS_FILE");
  return env("HOME").empty() ? std::filesystem::path()
                             : std::filesystem::path(env("HOME")) / ".aws/credentials";
}

}  // namespace strata::data
