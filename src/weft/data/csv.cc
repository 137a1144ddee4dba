// The CSV source: each iterator opens the file and parses one line per GetNext, so a bad row is
// reported (file, 1-based line, 1-based column) when it is reached and the next call moves on.
#include "weft/data/csv.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/core/tensor.h"
#include "weft/data/dataset_node.h"

namespace weft::data {
namespace {

using IteratorPtr = std::unique_ptr<Iterator>;

bool SupportedColumnType(DataType type) {
  return type == DataType::kFloat || type == DataType::kDouble || type == DataType::kInt32 ||
         type == DataType::kInt64;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

template <typename T>
bool ParseNumber(std::string_view text, T* value) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const char* end = text.data() + text.size();
  std::from_chars_result result = std::from_chars(text.data(), end, *value);
  return result.ec == std::errc() && result.ptr == end && !text.empty();
}

template <typename T>
StatusOr<Tensor> ParseScalar(std::string_view text) {
  T value{};
  if (!ParseNumber(text, &value)) {
    return InvalidArgument("'", std::string(text), "' is not a valid ",
                           DataTypeName(DataTypeToEnum<T>::value));
  }
  return Tensor::Scalar<T>(value);
}

// Parses `text` as a scalar of `type`; the error says only what is wrong with the text.
StatusOr<Tensor> ParseField(std::string_view text, DataType type) {
  switch (type) {
    case DataType::kFloat:
      return ParseScalar<float>(text);
    case DataType::kDouble:
      return ParseScalar<double>(text);
    case DataType::kInt32:
      return ParseScalar<int32_t>(text);
    case DataType::kInt64:
      return ParseScalar<int64_t>(text);
    default:
      return InvalidArgument("unsupported CSV column type ", DataTypeName(type));
  }
}

class CsvIterator final : public Iterator {
 public:
  CsvIterator(std::string path, std::shared_ptr<const CsvOptions> options, std::ifstream file)
      : path_(std::move(path)), options_(std::move(options)), file_(std::move(file)) {}

  Status GetNext(Element* element, bool* end_of_sequence) override {
    std::string line;
    while (true) {
      if (!std::getline(file_, line)) {
        if (file_.bad()) return DataLoss("error reading '", path_, "' after line ", line_number_);
        *end_of_sequence = true;
        return Status::OK();
      }
      ++line_number_;
      if (line_number_ == 1 && options_->header) continue;
      if (!Trim(line).empty()) break;
    }
    *end_of_sequence = false;
    return ParseRow(line, element);
  }

 private:
  Status ParseRow(std::string_view line, Element* element) const {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::vector<DataType>& types = options_->column_types;
    std::vector<std::string_view> fields;
    size_t start = 0;
    while (true) {
      const size_t split = line.find(options_->delimiter, start);
      fields.push_back(line.substr(start, split == std::string_view::npos ? split : split - start));
      if (split == std::string_view::npos) break;
      start = split + 1;
    }
    if (fields.size() != types.size()) {
      return InvalidArgument("'", path_, "' line ", line_number_, ": ", fields.size(),
                             " fields, expected ", types.size(), " (column ",
                             std::min(fields.size(), types.size()) + 1, " is ",
                             fields.size() < types.size() ? "missing" : "extra", ")");
    }
    Element row;
    row.reserve(types.size());
    for (size_t c = 0; c < types.size(); ++c) {
      std::string_view text = Trim(fields[c]);
      if (text.empty()) {
        if (options_->defaults.empty() || !options_->defaults[c].has_value()) {
          return InvalidArgument("'", path_, "' line ", line_number_, ", column ", c + 1,
                                 ": empty field and the column has no default");
        }
        text = Trim(*options_->defaults[c]);
      }
      StatusOr<Tensor> value = ParseField(text, types[c]);
      if (!value.ok()) {
        return InvalidArgument("'", path_, "' line ", line_number_, ", column ", c + 1, ": ",
                               value.status().message());
      }
      row.push_back(std::move(value).value());
    }
    *element = std::move(row);
    return Status::OK();
  }

  std::string path_;
  std::shared_ptr<const CsvOptions> options_;
  std::ifstream file_;
  int64_t line_number_ = 0;  // of the last line read, 1-based
};

class CsvNode final : public DatasetNode {
 public:
  CsvNode(std::string path, CsvOptions options)
      : path_(std::move(path)), options_(std::make_shared<const CsvOptions>(std::move(options))) {}

  StatusOr<IteratorPtr> MakeIterator(const IteratorContext&) const override {
    std::error_code error;
    if (!std::filesystem::exists(path_, error)) {
      return NotFound("CSV file '", path_, "' does not exist");
    }
    std::ifstream file(path_, std::ios::binary);
    if (!file.is_open()) return PermissionDenied("cannot open CSV file '", path_, "'");
    return IteratorPtr(std::make_unique<CsvIterator>(path_, options_, std::move(file)));
  }

  Status ToDef(proto::DatasetDef* def) const override {
    proto::CsvFileDatasetDef* csv = def->mutable_csv_file();
    csv->set_path(path_);
    for (DataType type : options_->column_types) {
      csv->add_column_types(static_cast<proto::DataType>(type));
    }
    csv->set_header(options_->header);
    csv->set_delimiter(std::string(1, options_->delimiter));
    for (const std::optional<std::string>& value : options_->defaults) {
      proto::CsvFileDatasetDef::Default* field_default = csv->add_defaults();
      field_default->set_present(value.has_value());
      if (value.has_value()) field_default->set_text(*value);
    }
    return Status::OK();
  }

 private:
  std::string path_;
  std::shared_ptr<const CsvOptions> options_;
};

}  // namespace

Status ValidateCsvOptions(const CsvOptions& options) {
  if (options.column_types.empty()) return InvalidArgument("CsvOptions: no column types");
  for (size_t c = 0; c < options.column_types.size(); ++c) {
    if (!SupportedColumnType(options.column_types[c])) {
      return InvalidArgument("CsvOptions: column ", c + 1, " has type ",
                             DataTypeName(options.column_types[c]),
                             "; supported are float32, float64, int32 and int64");
    }
  }
  if (options.delimiter == '\n' || options.delimiter == '\r') {
    return InvalidArgument("CsvOptions: the delimiter cannot be a line break");
  }
  if (!options.defaults.empty()) {
    if (options.defaults.size() != options.column_types.size()) {
      return InvalidArgument("CsvOptions: ", options.defaults.size(), " defaults for ",
                             options.column_types.size(), " columns");
    }
    for (size_t c = 0; c < options.defaults.size(); ++c) {
      if (!options.defaults[c].has_value()) continue;
      Status parsed = ParseField(Trim(*options.defaults[c]), options.column_types[c]).status();
      if (!parsed.ok()) {
        return InvalidArgument("CsvOptions: default of column ", c + 1, ": ", parsed.message());
      }
    }
  }
  return Status::OK();
}

NodePtr MakeCsvNode(std::string path, CsvOptions options) {
  return std::make_shared<CsvNode>(std::move(path), std::move(options));
}

}  // namespace weft::data
