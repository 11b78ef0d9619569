// The AWS configuration chain for s3://: which endpoint, region, addressing,
// CA bundle and keys a source uses. The order follows the AWS CLI's; the whole
// table is in docs/object-store.md.
#pragma once
#include "data/store/aws_credentials.h"
#include "data/store/source.h"

namespace strata::data {

// Fills the unset fields of `options` (a set field always wins):
//   endpoint  AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, S3_ENDPOINT, the profile's
//             s3.endpoint_url, its endpoint_url, else https://s3.REGION.amazonaws.com
//   region    AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else us-east-1
//   addressing the profile's s3.addressing_style, else auto
//   ca_bundle AWS_CA_BUNDLE, the profile's ca_bundle
//   credentials  resolve_s3_credentials
// The profile is options.profile, else AWS_PROFILE, else "default", read from
// AWS_CONFIG_FILE (~/.aws/config). Throws ConfigError when no credentials are found.
SourceOptions resolve_s3_options(const SourceOptions& options);

// The keys, first match wins: options.credentials; options.access_key +
// secret_key; AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN),
// skipped when options.profile names a profile, as `aws --profile` skips them;
// web identity (AWS_WEB_IDENTITY_TOKEN_FILE / web_identity_token_file with
// AWS_ROLE_ARN / role_arn); the profile in the shared credentials file; the
// profile's credential_process; aws_access_key_id in the config file.
// `resolved` carries the profile ("" = AWS_PROFILE or default), the CA bundle
// and the STS endpoint to use.
std::shared_ptr<CredentialProvider> resolve_s3_credentials(const SourceOptions& resolved);

}  // namespace strata::data
