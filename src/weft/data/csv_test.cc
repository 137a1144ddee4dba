#include "weft/data/csv.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/data/dataset.h"
#include "weft/data/testing/data_test_util.h"

namespace weft::data {
namespace {

using testing::Collect;
using testing::Scalars;

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Writes `contents` to a fresh file named after the running test.
std::string WriteFile(const std::string& contents) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path path = std::filesystem::path(::testing::TempDir()) /
                               (std::string("weft_csv_") + info->name() + ".csv");
  std::ofstream(path, std::ios::binary) << contents;
  return path.string();
}

// Designated initializers naming one member: every other member has a default initializer, so
// this compiles without -Wmissing-field-initializers (an error here, whatever the build's flags).
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wmissing-field-initializers"
CsvOptions FourColumns() {
  return CsvOptions{
      .column_types = {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kInt64}};
}
#pragma GCC diagnostic pop

// The error GetNext returns for the first bad row of `contents`.
Status FirstError(const std::string& path, const CsvOptions& options) {
  StatusOr<std::vector<Element>> rows = Collect(Dataset::FromCsvFile(path, options));
  return rows.ok() ? Status::OK() : rows.status();
}

TEST(CsvTest, ParsesTypedColumnsAfterHeader) {
  const std::string path =
      WriteFile("a,b,c,d\n1.5,2.25,3,9000000000\r\n-0.5, 1e3 ,-7,+4\n\n0,0,0,0\n");
  CsvOptions options = FourColumns();
  options.header = true;
  StatusOr<std::vector<Element>> rows = Collect(Dataset::FromCsvFile(path, options));
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0][0].dtype(), DataType::kFloat);
  EXPECT_EQ((*rows)[0][1].dtype(), DataType::kDouble);
  EXPECT_EQ((*rows)[0][2].dtype(), DataType::kInt32);
  EXPECT_EQ((*rows)[0][3].dtype(), DataType::kInt64);
  EXPECT_EQ((*rows)[0][0].shape(), TensorShape());
  EXPECT_THAT(Scalars<float>(*rows, 0), ElementsAre(1.5f, -0.5f, 0.0f));
  EXPECT_THAT(Scalars<double>(*rows, 1), ElementsAre(2.25, 1000.0, 0.0));
  EXPECT_THAT(Scalars<int32_t>(*rows, 2), ElementsAre(3, -7, 0));
  EXPECT_THAT(Scalars<int64_t>(*rows, 3), ElementsAre(9000000000, 4, 0));
}

TEST(CsvTest, DelimiterAndDefaults) {
  const std::string path = WriteFile("1;;3\n4;5;\n");
  CsvOptions options;
  options.column_types = {DataType::kInt64, DataType::kInt64, DataType::kFloat};
  options.delimiter = ';';
  options.defaults = {std::nullopt, "-1", "0.5"};
  StatusOr<std::vector<Element>> rows = Collect(Dataset::FromCsvFile(path, options));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(Scalars<int64_t>(*rows, 1), ElementsAre(-1, 5));
  EXPECT_THAT(Scalars<float>(*rows, 2), ElementsAre(3.0f, 0.5f));
}

TEST(CsvTest, WrongColumnCountNamesFileLineAndColumn) {
  const std::string path = WriteFile("h\n1,2,3,4\n1,2,3\n");
  CsvOptions options = FourColumns();
  options.header = true;
  Status error = FirstError(path, options);
  EXPECT_TRUE(IsInvalidArgument(error));
  EXPECT_THAT(error.message(), HasSubstr(path));
  EXPECT_THAT(error.message(), HasSubstr("line 3"));
  EXPECT_THAT(error.message(), HasSubstr("column 4 is missing"));
  EXPECT_THAT(FirstError(WriteFile("1,2,3,4,5\n"), FourColumns()).message(),
              HasSubstr("column 5 is extra"));
}

TEST(CsvTest, UnparsableNumberNamesFileLineAndColumn) {
  const std::string path = WriteFile("1,2,3,4\n1,2,x3,4\n");
  Status error = FirstError(path, FourColumns());
  EXPECT_TRUE(IsInvalidArgument(error));
  EXPECT_THAT(error.message(), HasSubstr(path));
  EXPECT_THAT(error.message(), HasSubstr("line 2, column 3"));
  EXPECT_THAT(error.message(), HasSubstr("'x3' is not a valid int32"));
  // Out of range for the column type is unparsable too.
  EXPECT_THAT(FirstError(WriteFile("1,2,3000000000,4\n"), FourColumns()).message(),
              HasSubstr("line 1, column 3"));
}

TEST(CsvTest, EmptyFieldWithoutDefaultNamesFileLineAndColumn) {
  const std::string path = WriteFile("1,2,3,4\n\n1,,3,4\n");
  Status error = FirstError(path, FourColumns());
  EXPECT_TRUE(IsInvalidArgument(error));
  EXPECT_THAT(error.message(), HasSubstr(path));
  EXPECT_THAT(error.message(), HasSubstr("line 3, column 2"));
  EXPECT_THAT(error.message(), HasSubstr("no default"));
}

TEST(CsvTest, BadRowFailsOnlyThatGetNext) {
  const std::string path = WriteFile("1\nx\n3\n");
  CsvOptions options;
  options.column_types = {DataType::kInt32};
  StatusOr<std::unique_ptr<Iterator>> iterator = Dataset::FromCsvFile(path, options).MakeIterator();
  ASSERT_TRUE(iterator.ok());
  Element element;
  bool end = false;
  EXPECT_TRUE((*iterator)->GetNext(&element, &end).ok());
  EXPECT_TRUE(IsInvalidArgument((*iterator)->GetNext(&element, &end)));
  ASSERT_TRUE((*iterator)->GetNext(&element, &end).ok());
  EXPECT_EQ(element[0].flat<int32_t>()[0], 3);
  ASSERT_TRUE((*iterator)->GetNext(&element, &end).ok());
  EXPECT_TRUE(end);
}

TEST(CsvTest, MissingFileIsNotFoundNamingPath) {
  const std::string path = ::testing::TempDir() + "/weft_no_such_file.csv";
  StatusOr<std::unique_ptr<Iterator>> iterator =
      Dataset::FromCsvFile(path, FourColumns()).MakeIterator();
  EXPECT_TRUE(IsNotFound(iterator.status()));
  EXPECT_THAT(iterator.status().message(), HasSubstr(path));
}

TEST(CsvTest, BadOptionsAreInvalidArgument) {
  CsvOptions none;
  EXPECT_TRUE(IsInvalidArgument(Dataset::FromCsvFile("x.csv", none).status()));
  CsvOptions bad_type;
  bad_type.column_types = {DataType::kBool};
  EXPECT_TRUE(IsInvalidArgument(Dataset::FromCsvFile("x.csv", bad_type).status()));
  CsvOptions bad_defaults = FourColumns();
  bad_defaults.defaults = {"1"};
  EXPECT_TRUE(IsInvalidArgument(Dataset::FromCsvFile("x.csv", bad_defaults).status()));
  CsvOptions bad_default = FourColumns();
  bad_default.defaults = {"1", "2", "three", "4"};
  EXPECT_THAT(Dataset::FromCsvFile("x.csv", bad_default).status().message(), HasSubstr("column 3"));
}

}  // namespace
}  // namespace weft::data
