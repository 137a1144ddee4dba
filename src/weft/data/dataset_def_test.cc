// Dataset::ToDef / FromDef: every describable source and transformation rebuilds into a pipeline
// that yields the same elements, after the def went through its wire form; what has no
// description (a Map) and what a peer could get wrong in a def are errors naming the place.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/data/dataset.h"
#include "weft/data/synthetic_criteo.h"
#include "weft/data/testing/data_test_util.h"
#include "weft/data/testing/idx_test_util.h"
#include "weft/dataset.pb.h"

namespace weft::data {
namespace {

using testing::Collect;
using ::testing::HasSubstr;

// `dataset` rebuilt from its def after a trip through the def's bytes.
Dataset RoundTrip(const Dataset& dataset) {
  StatusOr<proto::DatasetDef> def = dataset.ToDef();
  EXPECT_TRUE(def.ok()) << def.status();
  if (!def.ok()) return Dataset::FromTensors({});
  proto::DatasetDef parsed;
  EXPECT_TRUE(parsed.ParseFromString(def->SerializeAsString()));
  return Dataset::FromDef(parsed);
}

// Every element of both datasets, compared component by component, byte for byte.
void ExpectSameElements(const Dataset& expected, const Dataset& actual) {
  auto want = Collect(expected);
  auto got = Collect(actual);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(want->size(), got->size());
  for (size_t i = 0; i < want->size(); ++i) {
    ASSERT_EQ((*want)[i].size(), (*got)[i].size()) << "element " << i;
    for (size_t c = 0; c < (*want)[i].size(); ++c) {
      const Tensor& a = (*want)[i][c];
      const Tensor& b = (*got)[i][c];
      ASSERT_EQ(a.dtype(), b.dtype());
      ASSERT_EQ(a.shape(), b.shape());
      EXPECT_EQ(0, std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()))
          << "element " << i << " component " << c;
    }
  }
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / ("weft_dataset_def_" + name)).string();
}

TEST(DatasetDefTest, EveryTransformationOfTensorSlicesRoundTrips) {
  std::vector<float> features(100);
  std::vector<int64_t> ids(100);
  for (int i = 0; i < 100; ++i) {
    features[i] = 0.5f * static_cast<float>(i);
    ids[i] = 1000 + i;
  }
  const Dataset dataset =
      Dataset::FromTensors({Tensor::FromVector(features), Tensor::FromVector(ids)})
          .Shuffle(50, 3)
          .Shard(2, 1)
          .Batch(4, /*drop_remainder=*/true)
          .Repeat(2)
          .Take(17)
          .Prefetch(2);
  ExpectSameElements(dataset, RoundTrip(dataset));
}

TEST(DatasetDefTest, ACsvFileRoundTripsByPathWithItsOptions) {
  const std::string path = TempPath("rows.csv");
  std::ofstream(path, std::ios::binary) << "a;b;c\n1;;3\n4;5;\n7;8;9\n";
  CsvOptions options;
  options.column_types = {DataType::kInt64, DataType::kFloat, DataType::kInt32};
  options.header = true;
  options.delimiter = ';';
  options.defaults = {std::nullopt, std::string("-1"), std::string("0")};
  const Dataset dataset = Dataset::FromCsvFile(path, options);
  const proto::DatasetDef def = dataset.ToDef().value();
  EXPECT_EQ(def.csv_file().path(), path);  // the rows stay in the file
  ExpectSameElements(dataset, RoundTrip(dataset));
}

TEST(DatasetDefTest, IdxFilesRoundTripByPath) {
  const std::string images = TempPath("images.idx");
  const std::string labels = TempPath("labels.idx");
  testing::WriteBytes(images, testing::IdxBytes({6, 2, 2}, testing::RandomBytes(1, 24)));
  testing::WriteBytes(labels, testing::IdxBytes({6}, {0, 1, 2, 3, 4, 5}));
  const Dataset dataset = Dataset::FromIdxFiles(images, labels).Batch(4);
  const proto::DatasetDef def = dataset.ToDef().value();
  EXPECT_EQ(def.batch().input().idx_files().images_path(), images);
  ExpectSameElements(dataset, RoundTrip(dataset));
}

TEST(DatasetDefTest, SyntheticCriteoRoundTripsByItsOptions) {
  SyntheticCriteoOptions options;
  options.seed = 9;
  options.table_rows = {1000, 50, 7};
  const Dataset dataset = SyntheticCriteoDataset(options, 100, 70, 16).Shard(2, 0);
  const proto::DatasetDef def = dataset.ToDef().value();
  EXPECT_EQ(def.shard().input().synthetic_criteo().table_rows_size(), 3);
  ExpectSameElements(dataset, RoundTrip(dataset));
}

TEST(DatasetDefTest, AMapOfACppFunctionHasNoDescription) {
  const Dataset dataset =
      testing::Range(10).Map([](Element element) -> StatusOr<Element> { return element; }).Batch(2);
  StatusOr<proto::DatasetDef> def = dataset.ToDef();
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), Code::kUnimplemented);
  EXPECT_THAT(def.status().message(), HasSubstr("Map of a C++ function"));
}

TEST(DatasetDefTest, ADatasetCarryingAnErrorReturnsIt) {
  StatusOr<proto::DatasetDef> def = testing::Range(10).Batch(0).ToDef();
  ASSERT_FALSE(def.ok());
  EXPECT_THAT(def.status().message(), HasSubstr("Batch"));
}

TEST(DatasetDefTest, BadDefsAreErrorsNamingWhereInTheDefTheyAre) {
  proto::DatasetDef def = testing::Range(10).Shuffle(4, 1).Batch(2).ToDef().value();
  def.mutable_batch()->mutable_input()->mutable_shuffle()->set_buffer_size(0);
  Status status = Dataset::FromDef(def).status();
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("DatasetDef at batch.input.shuffle"));

  proto::DatasetDef no_input;
  no_input.mutable_take()->set_count(3);
  EXPECT_THAT(Dataset::FromDef(no_input).status().message(),
              HasSubstr("DatasetDef at take.input: no kind of dataset is set"));
  EXPECT_THAT(Dataset::FromDef(proto::DatasetDef()).status().message(),
              HasSubstr("DatasetDef at the top: no kind of dataset is set"));

  proto::DatasetDef short_tensor = testing::Range(4).ToDef().value();
  short_tensor.mutable_tensor_slices()->mutable_components(0)->mutable_tensor_content()->resize(3);
  status = Dataset::FromDef(short_tensor).status();
  EXPECT_THAT(status.message(), HasSubstr("DatasetDef at tensor_slices: component 0"));
  EXPECT_THAT(status.message(), HasSubstr("tensor content has 3 bytes"));

  proto::DatasetDef csv;
  csv.mutable_csv_file()->set_path(TempPath("absent.csv"));
  csv.mutable_csv_file()->add_column_types(static_cast<proto::DataType>(77));
  csv.mutable_csv_file()->set_delimiter(",");
  EXPECT_THAT(Dataset::FromDef(csv).status().message(), HasSubstr("column 1: unknown type 77"));
  csv.mutable_csv_file()->set_column_types(0, proto::DT_FLOAT);
  csv.mutable_csv_file()->set_delimiter(";;");
  EXPECT_THAT(Dataset::FromDef(csv).status().message(), HasSubstr("one character"));

  proto::DatasetDef huge = SyntheticCriteoDataset({}, 0, 10, 5).ToDef().value();
  huge.mutable_synthetic_criteo()->set_count(int64_t{1} << 40);
  EXPECT_THAT(Dataset::FromDef(huge).status().message(),
              HasSubstr("DatasetDef at synthetic_criteo: count 1099511627776"));

  proto::DatasetDef idx;
  idx.mutable_idx_files()->set_images_path(TempPath("absent-images"));
  idx.mutable_idx_files()->set_labels_path(TempPath("absent-labels"));
  status = Dataset::FromDef(idx).status();
  EXPECT_THAT(status.message(), HasSubstr("DatasetDef at idx_files"));
  EXPECT_THAT(status.message(), HasSubstr("absent-images"));
}

}  // namespace
}  // namespace weft::data
