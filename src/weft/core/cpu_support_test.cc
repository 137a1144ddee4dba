// The CPU check on the machine running the tests: it must accept the CPU the tests run on (they
// would fault otherwise) and agree with the compiler's own view of the build's instruction set.
#include "weft/core/cpu_support.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(CpuSupportTest, TheCpuRunningTheTestsIsAccepted) {
  Status status = CheckCpuSupportsBuild();
  EXPECT_TRUE(status.ok()) << status;
#if defined(__x86_64__) && defined(__AVX2__)
  // This file is built for the build's level: AVX2 here means the level includes it.
  __builtin_cpu_init();
  EXPECT_TRUE(__builtin_cpu_supports("avx2"));
#endif
}

}  // namespace
}  // namespace weft
