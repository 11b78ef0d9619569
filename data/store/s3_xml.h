// The two S3 XML documents the sources read: an error body and a
// ListObjectsV2 page. S3 documents are flat enough that tag search suffices.
#pragma once
#include <string>
#include <vector>

#include "data/store/source.h"

namespace strata::data {

struct S3Error {
  std::string code, message, request_id;
};

struct ListPage {
  std::vector<ObjectInfo> objects;
  bool truncated = false;
  std::string next_token;
};

S3Error parse_s3_error(const std::string& xml);
ListPage parse_list_page(const std::string& xml);
// Text of the first <name>...</name> element, unescaped; "" when absent. Also
// used for STS answers (data/store/sts_client.cpp), which are as flat.
std::string xml_element_text(const std::string& xml, const std::string& name);
// &amp; &lt; &gt; &quot; &apos; and numeric character references.
std::string xml_unescape(const std::string& s);
// The reverse for text in an element: & < > " ' escaped.
std::string xml_escape(const std::string& s);

}  // namespace strata::data
