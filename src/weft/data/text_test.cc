// The text corpus read from a directory (order, what is skipped, missing and empty ones named),
// its split, and the byte windows (targets shifted by one, repeatable, bounded, bad sizes named).
#include "weft/data/text.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace weft::data {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<Element> All(const Dataset& dataset) {
  std::vector<Element> elements;
  auto iterator = dataset.MakeIterator();
  EXPECT_TRUE(iterator.ok()) << iterator.status();
  if (!iterator.ok()) return elements;
  for (int i = 0; i < 10'000; ++i) {
    Element element;
    bool end = false;
    Status next = (*iterator)->GetNext(&element, &end);
    EXPECT_TRUE(next.ok()) << next;
    if (!next.ok() || end) break;
    elements.push_back(std::move(element));
  }
  return elements;
}

TEST(TextCorpusTest, ConcatenatesFilesWithoutAnExtensionSortedByName) {
  fs::path dir = TempDir("corpus");
  Write(dir / "b", "second ");
  Write(dir / "a", "first ");
  Write(dir / "a.dat", "skipped");
  Write(dir / "c.u8", "skipped");
  fs::create_directories(dir / "sub");
  fs::create_symlink(dir / "a", dir / "link");
  StatusOr<std::string> text = ReadTextCorpus(dir.string());
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "first second ");
}

TEST(TextCorpusTest, MissingAndEmptyDirectoriesAreNamed) {
  StatusOr<std::string> missing = ReadTextCorpus("/nonexistent/corpus");
  EXPECT_TRUE(IsNotFound(missing.status()));
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/corpus"));
  fs::path dir = TempDir("empty_corpus");
  Write(dir / "only.txt", "has an extension");
  Write(dir / "blank", "");
  StatusOr<std::string> empty = ReadTextCorpus(dir.string());
  EXPECT_TRUE(IsInvalidArgument(empty.status()));
  EXPECT_THAT(empty.status().message(), HasSubstr("holds no text"));
}

TEST(TextCorpusTest, SplitHoldsOutTheLastShare) {
  StatusOr<TextSplit> split = SplitText("0123456789", 0.2, 1);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(*split->train, "01234567");
  EXPECT_EQ(*split->validation, "89");
  EXPECT_THAT(SplitText("0123456789", 0.2, 3).status().message(), HasSubstr("at least 3"));
  EXPECT_THAT(SplitText("0123", 1.5, 1).status().message(), HasSubstr("held_out"));
}

TEST(ByteWindowsTest, TargetsAreTheInputsShiftedAndWindowsRepeat) {
  auto text = std::make_shared<const std::string>("abcdefghijklmnopqrstuvwxyz\xff");
  std::vector<Element> first = All(RandomByteWindows(text, 5, 50, 7));
  std::vector<Element> again = All(RandomByteWindows(text, 5, 50, 7));
  std::vector<Element> other = All(RandomByteWindows(text, 5, 50, 8));
  ASSERT_EQ(first.size(), 50u);
  bool differs = false, reaches_end = false;
  for (size_t i = 0; i < first.size(); ++i) {
    const int32_t* inputs = first[i][0].data<int32_t>();
    const int32_t* targets = first[i][1].data<int32_t>();
    ASSERT_EQ(first[i][0].shape(), TensorShape({5}));
    for (int j = 0; j < 5; ++j) {
      EXPECT_EQ(targets[j], inputs[j] + (inputs[j] == 'z' ? 0xff - 'z' : 1));
      EXPECT_EQ(inputs[j], again[i][0].data<int32_t>()[j]);
    }
    differs |= inputs[0] != other[i][0].data<int32_t>()[0];
    reaches_end |= targets[4] == 0xff;  // bytes are unsigned tokens
  }
  EXPECT_TRUE(differs);
  EXPECT_TRUE(reaches_end);
}

TEST(ByteWindowsTest, ConsecutiveWindowsStopBeforeTheTextEnds) {
  auto text = std::make_shared<const std::string>("0123456789");
  std::vector<Element> windows = All(ConsecutiveByteWindows(text, 3, 100));
  ASSERT_EQ(windows.size(), 3u);  // offsets 0, 3, 6: the last target is byte 9
  EXPECT_EQ(windows[2][0].data<int32_t>()[0], '6');
  EXPECT_EQ(windows[2][1].data<int32_t>()[2], '9');
}

TEST(ByteWindowsTest, BadSizesAreNamed) {
  auto text = std::make_shared<const std::string>("abc");
  auto iterator = RandomByteWindows(text, 3, 10, 1).MakeIterator();
  ASSERT_TRUE(iterator.ok());
  Element element;
  bool end = false;
  Status next = (*iterator)->GetNext(&element, &end);
  EXPECT_THAT(next.message(), HasSubstr("too short for a window of 3 bytes"));
  auto zero = ConsecutiveByteWindows(text, 0, 10).MakeIterator();
  ASSERT_TRUE(zero.ok());
  next = (*zero)->GetNext(&element, &end);
  EXPECT_THAT(next.message(), HasSubstr("context (0)"));
}

}  // namespace
}  // namespace weft::data
