// resolved.yaml writer: walks the schema in order, opening a mapping whenever
// the section (or a sub-section such as data.s3) changes; top-level keys come last.
#include "train/config/to_yaml.h"

#include "train/config/schema.h"

namespace strata {

std::string to_yaml(const TrainConfig& cfg) {
  std::string out = "# strata resolved config: every key, defaults filled in (docs/configuration.md)\n";
  std::string open_section, open_sub;
  for (const ConfigKey& key : config_schema()) {
    const std::string section = key.section();
    if (section != open_section) {
      out += "\n";
      if (!section.empty()) out += section + ":\n";
      open_section = section;
      open_sub.clear();
    }
    std::string indent = section.empty() ? "" : "  ";
    std::string leaf = section.empty() ? key.path : key.path.substr(section.size() + 1);
    const auto dot = leaf.find('.');  // data.s3.endpoint: a mapping "s3:" inside "data:"
    const std::string sub = dot == std::string::npos ? "" : leaf.substr(0, dot);
    if (sub != open_sub) {
      if (!sub.empty()) out += indent + sub + ":\n";
      open_sub = sub;
    }
    if (!sub.empty()) {
      indent += "  ";
      leaf = leaf.substr(dot + 1);
    }
    out += indent + leaf + ": " + format_config_value(key, cfg) + "  # " + key.doc + "\n";
  }
  return out;
}

}  // namespace strata
