#include "data/store/aws_credentials.h"

#include <cstdio>
#include <ctime>

namespace strata::data {

AwsCredentials RefreshingCredentialProvider::get() {
  std::lock_guard<std::mutex> lock(mu_);
  const WallClock::time_point now = policy_.now();
  const bool stale = !cached_ || (cached_->expires && now + policy_.margin >= *cached_->expires);
  if (!stale) return *cached_;
  ++fetches_;
  try {
    cached_ = fetch();
  } catch (const Error&) {
    // A refresh inside the margin that fails (an STS hiccup) keeps the keys
    // that are still valid; the next request tries again. Expired keys are no use.
    if (!cached_ || now >= *cached_->expires) throw;
  }
  return *cached_;
}

int64_t RefreshingCredentialProvider::fetches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

WallClock::time_point parse_iso8601(const std::string& text, const std::string& what) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
    throw CredentialError(what + ": expiration '" + text +
                          "' is not an ISO 8601 time (2026-12-01T20:15:00Z)");
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  size_t i = static_cast<size_t>(consumed);
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9';) ++i;  // sub-second digits: ignored
  long offset_s = 0;
  const std::string zone = text.substr(i);
  int hh = 0, mm = 0;
  if (zone == "Z" || zone == "z") {
    offset_s = 0;
  } else if ((zone[0] == '+' || zone[0] == '-') && std::sscanf(zone.c_str() + 1, "%2d:%2d", &hh, &mm) == 2) {
    offset_s = (zone[0] == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
  } else {
    throw CredentialError(what + ": expiration '" + text + "' has no time zone (Z or +hh:mm)");
  }
  return WallClock::from_time_t(timegm(&tm) - offset_s);
}

}  // namespace strata::data
