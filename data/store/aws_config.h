// The AWS CLI's two ini files, read the way the CLI reads them: the config file
// (AWS_CONFIG_FILE, default ~/.aws/config; sections "[default]" and
// "[profile NAME]") and the shared credentials file (AWS_SHARED_CREDENTIALS_FILE,
// default ~/.aws/credentials; sections "[NAME]"). A key with an empty value
// followed by indented "key = value" lines is a sub-section, as in
//   s3 =
//     addressing_style = virtual
#pragma once
#include <filesystem>
#include <map>
#include <string>

namespace strata::data {

struct AwsProfile {
  std::string name;
  std::filesystem::path file;  // where it was read from (for messages); empty if no file
  bool found = false;          // the file has a section for this profile
  std::map<std::string, std::string> values;
  std::map<std::string, std::map<std::string, std::string>> subsections;  // "s3" -> its keys

  // The value of `key` (or `sub`.`key`), "" when absent.
  std::string get(const std::string& key) const;
  std::string get(const std::string& sub, const std::string& key) const;
  // "profile 'dev' in /home/u/.aws/config", for messages.
  std::string describe() const;
};

enum class AwsFileKind { kConfig, kCredentials };

// The profile `name` of `file`. A missing file, or one without that profile,
// gives found = false. Throws ConfigError naming the file and line for a line
// that is neither a section, a comment nor "key = value".
AwsProfile read_aws_profile(const std::filesystem::path& file, const std::string& name, AwsFileKind kind);

// AWS_CONFIG_FILE or ~/.aws/config; AWS_SHARED_CREDENTIALS_FILE or
// ~/.aws/credentials (empty paths when neither the variable nor HOME is set).
std::filesystem::path aws_config_file();
std::filesystem::path aws_credentials_file();

}  // namespace strata::data
