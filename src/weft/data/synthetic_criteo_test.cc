#include "weft/data/synthetic_criteo.h"

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "weft/data/zipf_distribution.h"

namespace weft::data {
namespace {

double GeneralizedHarmonic(int64_t n, double s) {
  double sum = 0;
  for (int64_t k = n; k >= 1; --k) sum += std::pow(static_cast<double>(k), -s);
  return sum;
}

void ExpectZipfFrequencies(int64_t n, double s) {
  StatusOr<ZipfDistribution> zipf = ZipfDistribution::Make(n, s);
  ASSERT_TRUE(zipf.ok()) << zipf.status();
  std::mt19937_64 engine(3);
  std::uniform_real_distribution<double> uniform(0, 1);
  const int draws = 200'000;
  std::vector<int> counts(n + 1, 0);
  for (int i = 0; i < draws; ++i) {
    const int64_t k = (*zipf)([&] { return uniform(engine); });
    ASSERT_GE(k, 1);
    ASSERT_LE(k, n);
    ++counts[k];
  }
  const double total = GeneralizedHarmonic(n, s);
  for (int64_t k = 1; k <= n; ++k) {
    // Five standard deviations of a frequency from 200,000 draws is at most 0.0056.
    EXPECT_NEAR(counts[k] / double(draws), std::pow(double(k), -s) / total, 0.0056)
        << "n " << n << " s " << s << " k " << k;
  }
}

TEST(ZipfDistributionTest, FrequenciesFollowOneOverKToTheS) {
  ExpectZipfFrequencies(10, 1.05);
  ExpectZipfFrequencies(10, 1.0);
  ExpectZipfFrequencies(5, 2.5);
  ExpectZipfFrequencies(1, 1.05);
}

TEST(ZipfDistributionTest, AHugeTableDrawsItsHottestRowAsOftenAsTheLawSays) {
  StatusOr<ZipfDistribution> zipf = ZipfDistribution::Make(2'000'000, 1.05);
  ASSERT_TRUE(zipf.ok());
  std::mt19937_64 engine(5);
  std::uniform_real_distribution<double> uniform(0, 1);
  int ones = 0, tail = 0;
  for (int i = 0; i < 100'000; ++i) {
    const int64_t k = (*zipf)([&] { return uniform(engine); });
    ASSERT_TRUE(k >= 1 && k <= 2'000'000) << k;
    ones += k == 1;
    tail += k > 1000;
  }
  const double total = GeneralizedHarmonic(2'000'000, 1.05);
  EXPECT_NEAR(ones / 1e5, 1 / total, 0.005);
  EXPECT_NEAR(tail / 1e5, 1 - GeneralizedHarmonic(1000, 1.05) / total, 0.01);
}

TEST(ZipfDistributionTest, BadParametersAreErrors) {
  EXPECT_FALSE(ZipfDistribution::Make(0, 1.05).ok());
  EXPECT_FALSE(ZipfDistribution::Make(10, 0).ok());
  EXPECT_FALSE(ZipfDistribution::Make(10, NAN).ok());
  EXPECT_NE(ZipfDistribution::Make(0, 1.05).status().message().find("n = 0"), std::string::npos);
}

TEST(SyntheticCriteoTest, ShapesRangesAndTheSameExampleAtTheSameIndexWhateverTheBatch) {
  SyntheticCriteoOptions options;
  StatusOr<Element> all = GenerateSyntheticCriteo(options, 100, 10);
  StatusOr<Element> tail = GenerateSyntheticCriteo(options, 105, 5);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_TRUE(tail.ok()) << tail.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].shape(), TensorShape({10, 13}));
  EXPECT_EQ((*all)[1].shape(), TensorShape({10, 26}));
  EXPECT_EQ((*all)[2].shape(), TensorShape({10, 1}));
  for (int64_t i = 0; i < 10 * 26; ++i) {
    const int64_t id = (*all)[1].data<int64_t>()[i];
    EXPECT_TRUE(id >= 0 && id < options.table_rows[i % 26]) << id << " in table " << i % 26;
  }
  for (int c = 0; c < 3; ++c) {
    const Tensor& a = (*all)[c];
    const Tensor& b = (*tail)[c];
    const int64_t width = a.NumElements() / 10;
    const char* whole =
        static_cast<const char*>(a.raw_data()) + 5 * width * DataTypeSize(a.dtype());
    EXPECT_EQ(std::memcmp(whole, b.raw_data(), b.NumElements() * DataTypeSize(b.dtype())), 0)
        << "component " << c;
  }
  options.seed = 2;
  StatusOr<Element> other = GenerateSyntheticCriteo(options, 100, 10);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(std::memcmp((*other)[1].raw_data(), (*all)[1].raw_data(), 10 * 26 * 8), 0);
}

TEST(SyntheticCriteoTest, IdsAreZipfSkewedButScatteredAndLabelsAreMixed) {
  SyntheticCriteoOptions options;
  StatusOr<Element> batch = GenerateSyntheticCriteo(options, 0, 20'000);
  ASSERT_TRUE(batch.ok());
  std::map<int64_t, int> table0;
  double positives = 0;
  for (int64_t i = 0; i < 20'000; ++i) {
    ++table0[(*batch)[1].data<int64_t>()[i * 26]];
    positives += (*batch)[2].data<float>()[i];
  }
  int hottest_count = 0;
  int64_t hottest = -1;
  for (const auto& [id, count] : table0) {
    if (count > hottest_count) hottest_count = count, hottest = id;
  }
  // The hottest of 2,000,000 rows takes about 1 / H(2e6, 1.05) = 9% of the draws, and it is not
  // simply row 0 (rows are scattered so that range-sharded tables share the hot rows).
  EXPECT_NEAR(hottest_count / 20'000.0, 1 / GeneralizedHarmonic(2'000'000, 1.05), 0.01);
  EXPECT_NE(hottest, 0);
  EXPECT_GT(positives / 20'000, 0.1);
  EXPECT_LT(positives / 20'000, 0.5);
}

TEST(SyntheticCriteoTest, DatasetBatchesMatchTheGenerator) {
  SyntheticCriteoOptions options;
  options.table_rows = {50, 7};
  Dataset dataset = SyntheticCriteoDataset(options, 10, 1000, 512);
  StatusOr<std::unique_ptr<Iterator>> iterator = dataset.MakeIterator();
  ASSERT_TRUE(iterator.ok()) << iterator.status();
  std::vector<int64_t> sizes;
  for (int i = 0; i < 4; ++i) {
    Element element;
    bool end = false;
    ASSERT_TRUE((*iterator)->GetNext(&element, &end).ok());
    if (end) break;
    sizes.push_back(element[0].dim_size(0));
    StatusOr<Element> expected =
        GenerateSyntheticCriteo(options, 10 + 512 * (sizes.size() - 1), sizes.back());
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(
        std::memcmp(element[1].raw_data(), (*expected)[1].raw_data(), element[1].NumElements() * 8),
        0);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{512, 488}));
}

TEST(SyntheticCriteoTest, BadOptionsNameTheField) {
  SyntheticCriteoOptions options;
  options.table_rows = {10, 0};
  Status status = GenerateSyntheticCriteo(options, 0, 1).status();
  EXPECT_NE(status.message().find("table 1 must have at least one row"), std::string::npos)
      << status;
  StatusOr<std::unique_ptr<Iterator>> iterator =
      SyntheticCriteoDataset(options, 0, 10, 4).MakeIterator();
  ASSERT_TRUE(iterator.ok());
  Element element;
  bool end = false;
  status = (*iterator)->GetNext(&element, &end);
  EXPECT_NE(status.message().find("table 1 must have at least one row"), std::string::npos)
      << status;
  EXPECT_FALSE(GenerateSyntheticCriteo(SyntheticCriteoOptions(), -1, 4).ok());
}

}  // namespace
}  // namespace weft::data
