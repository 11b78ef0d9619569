// resolved.yaml writer: walks the schema in order, opening a mapping whenever
// the section changes; top-level keys come last.
#include "core/config/to_yaml.h"

#include "core/config/schema.h"

namespace strata {

std::string to_yaml(const TrainConfig& cfg) {
  std::string out = "# strata resolved config: every key, defaults filled in (docs/configuration.md)\n";
  std::string open_section;
  for (const ConfigKey& key : config_schema()) {
    const std::string section = key.section();
    if (section != open_section) {
      out += "\n";
      if (!section.empty()) out += section + ":\n";
      open_section = section;
    }
    const std::string indent = section.empty() ? "" : "  ";
    const std::string leaf = section.empty() ? key.path : key.path.substr(section.size() + 1);
    out += indent + leaf + ": " + format_config_value(key, cfg) + "  # " + key.doc + "\n";
  }
  return out;
}

}  // namespace strata
