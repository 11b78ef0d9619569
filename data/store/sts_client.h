// Web-identity credentials (what a Kubernetes pod on EKS is given): a token
// file (AWS_WEB_IDENTITY_TOKEN_FILE) and a role (AWS_ROLE_ARN) are exchanged
// for temporary keys through STS AssumeRoleWithWebIdentity, an unsigned POST.
#pragma once
#include <filesystem>
#include <string>

#include "data/store/aws_credentials.h"
#include "data/store/source.h"

namespace strata::data {

struct WebIdentitySettings {
  std::string sts_endpoint;  // e.g. https://sts.us-east-1.amazonaws.com
  std::filesystem::path token_file;
  std::string role_arn;
  std::string session_name;
  int duration_s = 0;  // DurationSeconds; 0 = the role's default (1 hour on AWS)
  std::string ca_bundle;
  RetryPolicy retry;
};

// The keys in an AssumeRoleWithWebIdentity answer. Throws CredentialError
// naming `where` when the document has no complete <Credentials>.
AwsCredentials parse_assume_role_response(const std::string& xml, const std::string& where);

// Reads the token file anew on every fetch (the kubelet rotates it), so a
// refresh presents the current token.
class WebIdentityCredentialProvider final : public RefreshingCredentialProvider {
 public:
  explicit WebIdentityCredentialProvider(WebIdentitySettings settings, RefreshPolicy policy = {});
  std::string describe() const override;

 protected:
  AwsCredentials fetch() override;

 private:
  WebIdentitySettings s_;
  SourceStats stats_;
};

}  // namespace strata::data
