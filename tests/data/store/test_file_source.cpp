// FileSource and open_source for local paths: every Source operation on real files.
#include <gtest/gtest.h>

#include "base/error.h"
#include "data/store/file_source.h"
#include "test_util.h"

namespace strata::data {
namespace {

TEST(FileSource, PutGetRangeHeadList) {
  auto dir = testing::scratch_dir("file-source");
  auto src = open_source(dir.string());
  EXPECT_EQ(src->url(), "file://" + dir.string());
  src->put("a/b/one.bin", testing::bytes_of("0123456789"));
  src->put("a/two.bin", testing::bytes_of("xy"));
  src->put("z", {});
  EXPECT_EQ(src->get("a/b/one.bin"), testing::bytes_of("0123456789"));
  EXPECT_EQ(src->get_range("a/b/one.bin", 3, 4), testing::bytes_of("3456"));
  EXPECT_EQ(src->get_range("a/b/one.bin", 8, 100), testing::bytes_of("89"));  // clipped
  EXPECT_TRUE(src->get_range("a/b/one.bin", 10, 5).empty());
  EXPECT_EQ(src->head("a/two.bin").size, 2u);
  EXPECT_TRUE(src->get("z").empty());

  auto all = src->list("");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].key, "a/b/one.bin");
  EXPECT_EQ(all[1].key, "a/two.bin");
  EXPECT_EQ(all[2].key, "z");
  EXPECT_EQ(src->list("a/").size(), 2u);
  EXPECT_EQ(src->list("a/b").size(), 1u);
  EXPECT_TRUE(src->list("q").empty());

  src->get_to_file("a/b/one.bin", dir / "copy");
  EXPECT_EQ(testing::read_file(dir / "copy"), "0123456789");
  testing::write_file(dir / "local.txt", "local file");
  src->put_file("up/loaded.txt", dir / "local.txt");
  EXPECT_EQ(src->get("up/loaded.txt"), testing::bytes_of("local file"));
  src->put("a/two.bin", testing::bytes_of("replaced"));
  EXPECT_EQ(src->get("a/two.bin"), testing::bytes_of("replaced"));

  EXPECT_GE(src->stats().requests.load(), 14);
  EXPECT_GT(src->stats().bytes.load(), 30);
  EXPECT_EQ(src->stats().retries.load(), 0);
}

TEST(FileSource, RemoveDeletesAndIgnoresMissingKeys) {
  auto dir = testing::scratch_dir("file-remove");
  FileSource src(dir.string());
  src.put("a/one", {'1'});
  src.put("a/two", {'2'});
  src.put("b", {'3'});
  src.remove({"a/one", "a/two", "not-there"});
  const auto left = src.list("");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].key, "b");
}

TEST(FileSource, MissingObjectsAndBadKeys) {
  auto dir = testing::scratch_dir("file-source-err");
  auto src = open_source("file://" + dir.string());
  try {
    src->get("nope.bin");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.bin"), std::string::npos) << e.what();
  }
  EXPECT_THROW(src->head("nope.bin"), IoError);
  EXPECT_THROW(src->get_to_file("nope.bin", dir / "x"), IoError);
  EXPECT_THROW(src->get("../escape"), ConfigError);
  EXPECT_THROW(src->put("/abs", {}), ConfigError);
  EXPECT_THROW(open_source("ftp://host/x"), ConfigError);
  EXPECT_TRUE(open_source((dir / "not-yet").string())->list("").empty());
}

TEST(FileSource, TemporaryUploadsAreNotListed) {
  auto dir = testing::scratch_dir("file-source-tmp");
  testing::write_file(dir / "d" / ".strata-tmp-1-0-x", "partial");
  testing::write_file(dir / "d" / "x", "whole");
  auto src = open_source(dir.string());
  auto l = src->list("");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].key, "d/x");
}

}  // namespace
}  // namespace strata::data
