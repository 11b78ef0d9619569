#include "data/store/s3_xml.h"

#include <cstdlib>

namespace strata::data {
namespace {

// Text of the first <tag>...</tag> in xml[from, to), unescaped; "" if absent.
std::string tag(const std::string& xml, const std::string& name, size_t from = 0,
                size_t to = std::string::npos) {
  const std::string open = "<" + name + ">", close = "</" + name + ">";
  const size_t b = xml.find(open, from);
  if (b == std::string::npos || b >= to) return "";
  const size_t e = xml.find(close, b);
  if (e == std::string::npos || e > to) return "";
  return xml_unescape(xml.substr(b + open.size(), e - b - open.size()));
}

void append_utf8(std::string& out, unsigned long cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::string xml_unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    const size_t semi = s.find(';', i);
    if (semi == std::string::npos) {
      out += s[i];
      continue;
    }
    const std::string ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp")
      out += '&';
    else if (ent == "lt")
      out += '<';
    else if (ent == "gt")
      out += '>';
    else if (ent == "quot")
      out += '"';
    else if (ent == "apos")
      out += '\'';
    else if (!ent.empty() && ent[0] == '#')
      append_utf8(out, std::strtoul(ent.c_str() + (ent.size() > 1 && ent[1] == 'x' ? 2 : 1), nullptr,
                                    ent.size() > 1 && ent[1] == 'x' ? 16 : 10));
    else {
      out += s[i];
      continue;
    }
    i = semi;
  }
  return out;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string xml_element_text(const std::string& xml, const std::string& name) { return tag(xml, name); }

S3Error parse_s3_error(const std::string& xml) {
  return S3Error{tag(xml, "Code"), tag(xml, "Message"), tag(xml, "RequestId")};
}

ListPage parse_list_page(const std::string& xml) {
  ListPage page;
  page.truncated = tag(xml, "IsTruncated") == "true";
  page.next_token = tag(xml, "NextContinuationToken");
  size_t pos = 0;
  while ((pos = xml.find("<Contents>", pos)) != std::string::npos) {
    const size_t end = xml.find("</Contents>", pos);
    if (end == std::string::npos) break;
    ObjectInfo o;
    o.key = tag(xml, "Key", pos, end);
    o.size = std::strtoull(tag(xml, "Size", pos, end).c_str(), nullptr, 10);
    o.etag = tag(xml, "ETag", pos, end);
    if (o.etag.size() >= 2 && o.etag.front() == '"') o.etag = o.etag.substr(1, o.etag.size() - 2);
    page.objects.push_back(std::move(o));
    pos = end;
  }
  return page;
}

}  // namespace strata::data
