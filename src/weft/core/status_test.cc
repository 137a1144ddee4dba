#include "weft/core/status.h"

#include <gtest/gtest.h>

#include "weft/core/statusor.h"

namespace weft {
namespace {

TEST(StatusTest, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), Code::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, FactoriesConcatenateTheirArguments) {
  Status s = InvalidArgument("node '", "x", "' has ", 3, " inputs");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_EQ(s.message(), "node 'x' has 3 inputs");
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: node 'x' has 3 inputs");
}

TEST(StatusTest, EveryCanonicalCodeHasAName) {
  EXPECT_EQ(CodeName(Code::kUnavailable), "UNAVAILABLE");
  EXPECT_EQ(CodeName(Code::kResourceExhausted), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(CodeName(Code::kDeadlineExceeded), "DEADLINE_EXCEEDED");
  EXPECT_EQ(Aborted("x").code(), Code::kAborted);
  EXPECT_EQ(Cancelled("x").code(), Code::kCancelled);
  EXPECT_EQ(Unimplemented("x").code(), Code::kUnimplemented);
  EXPECT_EQ(FailedPrecondition("x").code(), Code::kFailedPrecondition);
  EXPECT_EQ(NotFound("x").code(), Code::kNotFound);
  EXPECT_EQ(Internal("x").code(), Code::kInternal);
}

TEST(StatusTest, WithContextPrefixesTheMessageAndKeepsTheCode) {
  Status s = NotFound("no such node").WithContext("fetch 'y:0'");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "fetch 'y:0': no such node");
  EXPECT_TRUE(Status::OK().WithContext("anything").ok());
}

TEST(StatusTest, CancelledAndAbortedAreDerivedErrors) {
  EXPECT_TRUE(IsDerivedError(Cancelled("the step was cancelled")));
  EXPECT_TRUE(IsDerivedError(Aborted("the rendezvous was aborted")));
  EXPECT_FALSE(IsDerivedError(Internal("x")));
  EXPECT_FALSE(IsDerivedError(DeadlineExceeded("x")));
  EXPECT_FALSE(IsDerivedError(Status::OK()));
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument(x, " is odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  WEFT_ASSIGN_OR_RETURN(int half, Half(x));
  WEFT_ASSIGN_OR_RETURN(*out, Half(half));
  return Status::OK();
}

TEST(StatusOrTest, MacrosPropagateTheFirstError) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.message(), "3 is odd");
}

}  // namespace
}  // namespace weft
