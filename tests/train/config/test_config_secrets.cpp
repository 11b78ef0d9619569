// A key pasted into a config is refused and never repeated: not in the error,
// whichever key or override holds it, nor in a type error of another key.
#include <gtest/gtest.h>

#include <string>

#include "train/config/config.h"
#include "train/config/secret_values.h"

namespace strata {
namespace {

const std::string kHex = "00112233445566778899aabbccddeeff0123456789abcdef0f1e2d3c4b5a6978";
const std::string kBase64 = "ABEiM0RVZneImaq7zN3u/wEjRWeJq83vDx4tPEtaaXg=";

std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(yaml, "configs/x.yaml", overrides);
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find(kHex.substr(0, 16)), std::string::npos) << "the key is in: " << m;
    EXPECT_EQ(m.find(kBase64.substr(0, 16)), std::string::npos) << "the key is in: " << m;
    return m;
  }
  ADD_FAILURE() << "no ConfigError for:\n" << yaml;
  return "";
}

TEST(ConfigSecrets, KeyLikeValuesAreTold) {
  EXPECT_TRUE(looks_like_key(kHex));
  EXPECT_TRUE(looks_like_key(" " + kHex + "\n"));
  EXPECT_TRUE(looks_like_key(kBase64));
  EXPECT_FALSE(looks_like_key(kHex.substr(1)));
  EXPECT_FALSE(looks_like_key("/etc/strata/data.key"));
  EXPECT_FALSE(looks_like_key("s3://bucket/" + kHex));
  EXPECT_FALSE(looks_like_key(""));
  EXPECT_EQ(shown_value(kHex).find(kHex), std::string::npos);
  EXPECT_EQ(shown_value("/tmp/k"), "/tmp/k");
}

TEST(ConfigSecrets, AKeyAsTheKeyFileIsRefusedWithoutShowingIt) {
  const std::string m = error_of("data:\n  encryption_key_file: " + kHex + "\n");
  EXPECT_NE(m.find("config key 'data.encryption_key_file' holds what looks like a key itself"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("STRATA_DATA_KEY"), std::string::npos) << m;
  const std::string o = error_of("", {"data.encryption_key_file=" + kBase64});
  EXPECT_NE(o.find("'data.encryption_key_file' holds what looks like a key"), std::string::npos) << o;
  // in any other string key too: a config is copied into every checkpoint
  const std::string p = error_of("data:\n  s3:\n    profile: '" + kHex + "'\n");
  EXPECT_NE(p.find("'data.s3.profile' holds what looks like a key"), std::string::npos) << p;
  EXPECT_EQ(parse_config("data: {encryption_key_file: /etc/strata/data.key}\n").data.encryption_key_file,
            "/etc/strata/data.key");
}

TEST(ConfigSecrets, OtherErrorsDoNotRepeatAPastedKey) {
  // a type error and an unknown key, from the file and from overrides
  std::string m = error_of("data:\n  batch_size: " + kHex + "\n");
  EXPECT_NE(m.find("'data.batch_size'"), std::string::npos) << m;
  EXPECT_NE(m.find("looks like a key, not shown"), std::string::npos) << m;
  m = error_of("", {"data.batch_size=" + kHex});
  EXPECT_NE(m.find("command line override 'data.batch_size=<a value that looks like a key"),
            std::string::npos)
      << m;
  m = error_of("", {"data.encryption_key=" + kHex});
  EXPECT_NE(m.find("unknown config key 'data.encryption_key'"), std::string::npos) << m;
}

}  // namespace
}  // namespace strata
