// The schema against the struct it describes, and docs/configuration.md against
// the generator.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "source_dir.h"
#include "train/config/config.h"

namespace strata {
namespace {

// Number of members of an aggregate: the largest n with T{any x n} well formed.
// Sections hold scalars, strings and vectors (not aggregates), so no brace elision.
struct AnyField {
  template <class T>
  operator T() const;
};
template <class T, class... A>
constexpr size_t field_count() {
  if constexpr (requires { T{A{}..., AnyField{}}; })
    return field_count<T, A..., AnyField>();
  else
    return sizeof...(A);
}

size_t keys_in(const std::string& section) {
  size_t n = 0;
  for (const ConfigKey& k : config_schema()) n += k.section() == section;
  return n;
}

TEST(ConfigSchema, EveryStructFieldHasExactlyOneKey) {
  EXPECT_EQ(keys_in("model"), field_count<ModelConfig>());
  EXPECT_EQ(keys_in("data"), field_count<DataConfig>());
  EXPECT_EQ(keys_in("optimizer"), field_count<OptimizerConfig>());
  EXPECT_EQ(keys_in("schedule"), field_count<ScheduleConfig>());
  EXPECT_EQ(keys_in("precision"), field_count<PrecisionConfig>());
  EXPECT_EQ(keys_in("trainer"), field_count<TrainerConfig>());
  EXPECT_EQ(keys_in("clipping"), field_count<ClippingConfig>());
  EXPECT_EQ(keys_in("early_stopping"), field_count<EarlyStoppingConfig>());
  EXPECT_EQ(keys_in("checkpoint"), field_count<CheckpointConfig>());
  EXPECT_EQ(keys_in("logging"), field_count<LoggingConfig>());
  EXPECT_EQ(keys_in("distributed"), field_count<DistributedConfig>());
  EXPECT_EQ(keys_in(""), 2u);  // seed, device
  // one field per section struct, plus the top-level keys (whose section is "")
  EXPECT_EQ(config_sections().size() - 1 + keys_in(""), field_count<TrainConfig>());
}

TEST(ConfigSchema, KeysAreUniqueBoundToDistinctFieldsAndDocumented) {
  TrainConfig c;
  std::set<std::string> paths;
  std::set<const void*> fields;
  std::set<std::string> sections;
  for (const ConfigSection& s : config_sections()) sections.insert(s.name);
  for (const ConfigKey& k : config_schema()) {
    EXPECT_TRUE(paths.insert(k.path).second) << "duplicate " << k.path;
    const void* addr = std::visit([](auto* p) -> const void* { return p; }, k.field(c));
    EXPECT_TRUE(fields.insert(addr).second) << k.path << " shares a field";
    EXPECT_FALSE(k.doc.empty()) << k.path;
    EXPECT_EQ(k.doc.find('\n'), std::string::npos) << k.path;
    EXPECT_TRUE(sections.count(k.section())) << k.path;
    EXPECT_EQ(find_config_key(k.path), &k);
    EXPECT_EQ(k.kind == ValueKind::Enum, !k.choices.empty()) << k.path;
  }
}

TEST(ConfigSchema, DefaultsSatisfyTheirOwnValidators) {
  EXPECT_NO_THROW(parse_config(to_yaml(TrainConfig{})));
  for (const ConfigKey& k : config_schema())  // each default, given alone as an override
    EXPECT_NO_THROW(parse_config("", "x", {k.path + "=" + format_config_value(k, TrainConfig{})})) << k.path;
}

TEST(ConfigSchema, NearestKey) {
  EXPECT_EQ(nearest_config_key("optimizer.lrr"), "optimizer.lr");
  EXPECT_EQ(nearest_config_key("lr"), "optimizer.lr");
  EXPECT_EQ(nearest_config_key("data.batchsize"), "data.batch_size");
  EXPECT_EQ(nearest_config_key("earlystopping"), "early_stopping");
}

TEST(ConfigDocs, CommittedFileMatchesTheSchema) {
  const std::string path = strata_test_source_dir() + "/docs/configuration.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string committed = ss.str(), generated = config_docs_markdown();
  // The first line that differs, to show what drifted.
  std::istringstream a(committed), b(generated);
  std::string la, lb;
  int line = 1;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
  EXPECT_TRUE(committed == generated)
      << "docs/configuration.md is out of date with train/config/schema.cpp (first difference at line "
      << line << ":\n  committed: " << la << "\n  generated: " << lb << ")\nRegenerate it with\n"
      << "  cmake --build <build> --target strata-config-docs && <build>/bin/strata-config-docs > "
         "docs/configuration.md";
}

TEST(ConfigDocs, EveryKeyHasARow) {
  std::string md = config_docs_markdown();
  for (const ConfigKey& k : config_schema())
    EXPECT_NE(md.find("| `" + k.path + "` |"), std::string::npos) << k.path;
}

}  // namespace
}  // namespace strata
