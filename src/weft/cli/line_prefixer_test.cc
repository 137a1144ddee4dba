#include "weft/cli/line_prefixer.h"

#include <gtest/gtest.h>

namespace weft::cli {
namespace {

TEST(LinePrefixerTest, PrefixesEachWholeLine) {
  LinePrefixer prefixer("[worker 1] ");
  EXPECT_EQ(prefixer.Feed("a\nb\n"), "[worker 1] a\n[worker 1] b\n");
  EXPECT_EQ(prefixer.Finish(), "");
}

TEST(LinePrefixerTest, JoinsLinesSplitAcrossChunks) {
  LinePrefixer prefixer("> ");
  EXPECT_EQ(prefixer.Feed("hel"), "");
  EXPECT_EQ(prefixer.Feed("lo\nwor"), "> hello\n");
  EXPECT_EQ(prefixer.Feed("ld"), "");
  EXPECT_EQ(prefixer.Feed("\n\n"), "> world\n> \n");
}

TEST(LinePrefixerTest, FinishEndsALastLineWithoutNewline) {
  LinePrefixer prefixer("> ");
  EXPECT_EQ(prefixer.Feed("done"), "");
  EXPECT_EQ(prefixer.Finish(), "> done\n");
  EXPECT_EQ(prefixer.Finish(), "");
}

TEST(LinePrefixerTest, CutsOverlongLines) {
  LinePrefixer prefixer("> ");
  const std::string long_line(LinePrefixer::kMaxLineBytes + 10, 'x');
  std::string out = prefixer.Feed(long_line);
  EXPECT_EQ(out, "> " + std::string(LinePrefixer::kMaxLineBytes, 'x') + "\n");
  EXPECT_EQ(prefixer.Feed("\n"), "> " + std::string(10, 'x') + "\n");
}

TEST(LinePrefixerTest, KeepsBinaryBytes) {
  LinePrefixer prefixer("> ");
  EXPECT_EQ(prefixer.Feed(std::string("a\0b\n", 4)), std::string("> a\0b\n", 6));
}

}  // namespace
}  // namespace weft::cli
