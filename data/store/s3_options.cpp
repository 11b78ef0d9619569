#include "data/store/s3_options.h"

#include <unistd.h>

#include <cstdlib>

#include "data/store/aws_config.h"
#include "data/store/credential_process.h"
#include "data/store/s3_endpoint.h"
#include "data/store/sts_client.h"

namespace strata::data {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string profile_name(const SourceOptions& o) {
  if (!o.profile.empty()) return o.profile;
  if (!env("AWS_PROFILE").empty()) return env("AWS_PROFILE");
  return "default";
}

// The first non-empty of `candidates`.
std::string first_of(std::initializer_list<std::string> candidates) {
  for (const auto& c : candidates)
    if (!c.empty()) return c;
  return "";
}

std::shared_ptr<CredentialProvider> static_keys(std::string access, std::string secret, std::string token,
                                                std::string where) {
  return std::make_shared<StaticCredentialProvider>(
      AwsCredentials{std::move(access), std::move(secret), std::move(token), std::nullopt}, std::move(where));
}

}  // namespace

SourceOptions resolve_s3_options(const SourceOptions& options) {
  SourceOptions o = options;
  const std::string profile = profile_name(options);
  const AwsProfile config = read_aws_profile(aws_config_file(), profile, AwsFileKind::kConfig);
  if (!options.profile.empty() && !config.found &&
      !read_aws_profile(aws_credentials_file(), profile, AwsFileKind::kCredentials).found)
    throw ConfigError("AWS profile '" + profile + "' (data.s3.profile) is in neither " +
                      aws_config_file().string() + " nor " + aws_credentials_file().string());
  o.region =
      first_of({o.region, env("AWS_REGION"), env("AWS_DEFAULT_REGION"), config.get("region"), "us-east-1"});
  o.endpoint = first_of({o.endpoint, env("AWS_ENDPOINT_URL_S3"), env("AWS_ENDPOINT_URL"), env("S3_ENDPOINT"),
                         config.get("s3", "endpoint_url"), config.get("endpoint_url"),
                         "https://s3." + o.region + ".amazonaws.com"});
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  if (o.addressing == AddressingStyle::kUnset)
    o.addressing = parse_addressing_style(config.get("s3", "addressing_style"), config.describe());
  if (o.addressing == AddressingStyle::kUnset) o.addressing = AddressingStyle::kAuto;
  o.ca_bundle = first_of({o.ca_bundle, env("AWS_CA_BUNDLE"), config.get("ca_bundle")});
  o.sts_endpoint = first_of({o.sts_endpoint, env("AWS_ENDPOINT_URL_STS"), env("AWS_ENDPOINT_URL"),
                             config.get("sts", "endpoint_url"), config.get("endpoint_url"),
                             "https://sts." + o.region + ".amazonaws.com"});
  if (!o.credentials) o.credentials = resolve_s3_credentials(o);
  return o;
}

std::shared_ptr<CredentialProvider> resolve_s3_credentials(const SourceOptions& o) {
  if (o.credentials) return o.credentials;
  if (!o.access_key.empty() || !o.secret_key.empty()) {
    if (o.access_key.empty() || o.secret_key.empty())
      throw ConfigError("S3 options set only one of access_key and secret_key; set both");
    return static_keys(o.access_key, o.secret_key, o.session_token, "the source options");
  }
  // An explicit profile replaces the environment's keys, as `aws --profile` does.
  if (o.profile.empty() && !env("AWS_ACCESS_KEY_ID").empty() && !env("AWS_SECRET_ACCESS_KEY").empty())
    return static_keys(env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN"),
                       "the environment (AWS_ACCESS_KEY_ID)");
  const std::string profile = profile_name(o);
  const AwsProfile config = read_aws_profile(aws_config_file(), profile, AwsFileKind::kConfig);

  WebIdentitySettings wi;
  wi.token_file = first_of({env("AWS_WEB_IDENTITY_TOKEN_FILE"), config.get("web_identity_token_file")});
  wi.role_arn = first_of({env("AWS_ROLE_ARN"), config.get("role_arn")});
  if (!wi.token_file.empty() && !wi.role_arn.empty()) {
    wi.session_name = first_of({env("AWS_ROLE_SESSION_NAME"), config.get("role_session_name"),
                                "strata-" + std::to_string(::getpid())});
    wi.sts_endpoint = o.sts_endpoint;
    wi.ca_bundle = o.ca_bundle;
    wi.retry = o.retry;
    return std::make_shared<WebIdentityCredentialProvider>(std::move(wi));
  }
  if (!wi.token_file.empty())
    throw ConfigError("web identity token file " + wi.token_file.string() +
                      " is set but no role: set AWS_ROLE_ARN or role_arn in " + config.describe());

  const AwsProfile shared = read_aws_profile(aws_credentials_file(), profile, AwsFileKind::kCredentials);
  if (!shared.get("aws_access_key_id").empty() && !shared.get("aws_secret_access_key").empty())
    return static_keys(shared.get("aws_access_key_id"), shared.get("aws_secret_access_key"),
                       shared.get("aws_session_token"), shared.describe());
  if (!config.get("credential_process").empty())
    return std::make_shared<ProcessCredentialProvider>(config.get("credential_process"), config.describe());
  if (!config.get("aws_access_key_id").empty() && !config.get("aws_secret_access_key").empty())
    return static_keys(config.get("aws_access_key_id"), config.get("aws_secret_access_key"),
                       config.get("aws_session_token"), config.describe());
  if (!config.get("role_arn").empty())
    throw ConfigError(config.describe() +
                      " sets role_arn without web_identity_token_file; AssumeRole with "
                      "source_profile is not supported (docs/object-store.md)");
  throw ConfigError("no S3 credentials for profile '" + profile +
                    "': set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_WEB_IDENTITY_TOKEN_FILE and "
                    "AWS_ROLE_ARN, keys in " +
                    aws_credentials_file().string() + ", or credential_process in " +
                    aws_config_file().string() + " (AWS_PROFILE / data.s3.profile pick the profile)");
}

}  // namespace strata::data
