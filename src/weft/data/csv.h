// Options for reading CSV files into a Dataset (Dataset::FromCsvFile): typed columns, an optional
// header row, a one-character delimiter and per-column defaults for empty fields. Plain values,
// no quoting. Rows are parsed by the iterator, so errors name the file, line and column.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/status.h"

namespace weft::data {

// Every member has a default, so `CsvOptions{.column_types = {...}}` names only what it sets
// (without warnings under -Wextra).
struct CsvOptions {
  // One entry per column: kFloat, kDouble, kInt32 or kInt64. Each row must have exactly this
  // many fields.
  std::vector<DataType> column_types{};
  // Whether the first line is a header to skip (it still counts in line numbers).
  bool header = false;
  char delimiter = ',';
  // Empty, or one entry per column: the text used for an empty field (parsed like a field).
  // Without a default an empty field is an error. Empty lines are skipped.
  std::vector<std::optional<std::string>> defaults{};
};

// InvalidArgument when `options` cannot describe a CSV file (no columns, an unsupported type, a
// defaults list of the wrong length or an unparsable default, a newline delimiter).
Status ValidateCsvOptions(const CsvOptions& options);

}  // namespace weft::data
