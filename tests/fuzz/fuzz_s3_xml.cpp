// The S3 server's XML: error bodies and ListObjectsV2 pages.
#include "data/store/s3_xml.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string xml(reinterpret_cast<const char*>(data), size);
  return strata::fuzz::run_one([&] {
    strata::data::parse_s3_error(xml);
    strata::data::parse_list_page(xml);
    strata::data::xml_unescape(xml);
  });
}
