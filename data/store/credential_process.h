// credential_process (AWS CLI "sourcing credentials with an external process"):
// the profile names a command; it prints JSON with the keys on stdout.
//
// What is run: the value is split into words as a POSIX shell would split it
// (whitespace separates; '...' and "..." quote; backslash escapes), and the
// first word is looked up in PATH and executed directly, with those words as
// its arguments and this process's environment. No shell sees the value: $VAR,
// ~, globs, ';', '|' and backquotes are passed through as literal characters.
#pragma once
#include <string>
#include <vector>

#include "data/store/aws_credentials.h"

namespace strata::data {

// The words of a credential_process value. Throws ConfigError for an
// unterminated quote or an empty command; `where` names the profile.
std::vector<std::string> split_command_line(const std::string& command, const std::string& where);

// The keys in the process's JSON output: {"Version": 1, "AccessKeyId": ...,
// "SecretAccessKey": ..., "SessionToken": ... (optional), "Expiration": ...
// (optional, ISO 8601)}. Throws CredentialError naming `where`.
AwsCredentials parse_credential_process_output(const std::string& json, const std::string& where);

class ProcessCredentialProvider final : public RefreshingCredentialProvider {
 public:
  // `where` names the profile for messages, e.g. "profile 'dev' in ~/.aws/config".
  ProcessCredentialProvider(std::string command, std::string where, RefreshPolicy policy = {});
  std::string describe() const override;

 protected:
  // Runs the command; throws CredentialError naming the profile and the command
  // (with its exit status and stderr) when it fails or prints bad JSON.
  AwsCredentials fetch() override;

 private:
  std::string command_;
  std::vector<std::string> argv_;
  std::string where_;
};

}  // namespace strata::data
