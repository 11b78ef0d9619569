#include "data/store/sts_client.h"

#include <fstream>
#include <sstream>

#include "data/store/curl_transfer.h"
#include "data/store/s3_xml.h"

namespace strata::data {
namespace {

std::string read_token(const std::filesystem::path& file, const std::string& what) {
  std::ifstream in(file);
  if (!in) throw CredentialError(what + ": cannot read the web identity token file " + file.string());
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
    token.pop_back();
  if (token.empty())
    throw CredentialError(what + ": the web identity token file " + file.string() + " is empty");
  return token;
}

}  // namespace

AwsCredentials parse_assume_role_response(const std::string& xml, const std::string& where) {
  const std::string creds = xml_element_text(xml, "Credentials");
  AwsCredentials c;
  c.access_key = xml_element_text(xml, "AccessKeyId");
  c.secret_key = xml_element_text(xml, "SecretAccessKey");
  c.session_token = xml_element_text(xml, "SessionToken");
  const std::string expiration = xml_element_text(xml, "Expiration");
  if (creds.empty() || c.access_key.empty() || c.secret_key.empty() || c.session_token.empty() ||
      expiration.empty())
    throw CredentialError(where +
                          ": the STS answer has no complete <Credentials> (AccessKeyId, "
                          "SecretAccessKey, SessionToken, Expiration): '" +
                          xml.substr(0, 300) + "'");
  c.expires = parse_iso8601(expiration, where);
  return c;
}

WebIdentityCredentialProvider::WebIdentityCredentialProvider(WebIdentitySettings settings,
                                                             RefreshPolicy policy)
    : RefreshingCredentialProvider(std::move(policy)), s_(std::move(settings)) {
  while (!s_.sts_endpoint.empty() && s_.sts_endpoint.back() == '/') s_.sts_endpoint.pop_back();
}

std::string WebIdentityCredentialProvider::describe() const {
  return "web identity (role " + s_.role_arn + ", token file " + s_.token_file.string() + ", STS at " +
         s_.sts_endpoint + ")";
}

AwsCredentials WebIdentityCredentialProvider::fetch() {
  const std::string what = "STS AssumeRoleWithWebIdentity for " + describe();
  const std::string token = read_token(s_.token_file, what);
  std::string form =
      "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=" + percent_encode(s_.role_arn, false) +
      "&RoleSessionName=" + percent_encode(s_.session_name, false) +
      "&WebIdentityToken=" + percent_encode(token, false);
  if (s_.duration_s > 0) form += "&DurationSeconds=" + std::to_string(s_.duration_s);
  const std::vector<uint8_t> body_in(form.begin(), form.end());
  std::vector<uint8_t> body;
  HttpRequest r;
  r.method = "POST";
  r.url = s_.sts_endpoint + "/";
  r.headers.push_back("Content-Type: application/x-www-form-urlencoded");
  r.upload_bytes = &body_in;
  r.body = &body;
  r.ca_bundle = s_.ca_bundle;
  HttpResponse resp = perform_with_retry(r, s_.retry, stats_, what);
  if (resp.status != 200) {
    S3Error e = parse_s3_error(resp.error_body);  // STS errors carry <Code> and <Message> too
    throw CredentialError(what + ": HTTP " + std::to_string(resp.status) +
                          (e.code.empty() ? "" : " " + e.code) +
                          (e.message.empty() ? "" : " (" + e.message + ")"));
  }
  return parse_assume_role_response(std::string(body.begin(), body.end()), what);
}

}  // namespace strata::data
