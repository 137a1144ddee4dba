#include "weft/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <exception>
#include <limits>
#include <set>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/io/crc32c.h"
#include "weft/io/durable_file.h"
#include "weft/io/durable_file_internal.h"
#include "weft/io/json_util.h"

namespace weft::io {
namespace {

// Tensor bytes go between memory and the file as they are, and the format is little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

// nlohmann::json (a std::map per object) for whole headers: ordered_json finds each key by a
// linear search, so a header of many tensors would parse in quadratic time. Key order is recorded
// separately where it matters; ordered_json only lays out the three fields of one entry.
using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr uint64_t kMaxHeaderBytes = 100 << 20;
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::string_view kCrcPrefix = "crc32c/";
constexpr size_t kMaxReadBytes = size_t{1} << 30;

// The dtypes Weft reads and writes, by their safetensors names. BF16 is the upper half of a
// float32, as weft::bfloat16 stores it.
constexpr std::pair<DataType, std::string_view> kDtypeNames[] = {
    {DataType::kFloat, "F32"},    {DataType::kDouble, "F64"}, {DataType::kInt32, "I32"},
    {DataType::kInt64, "I64"},    {DataType::kUInt8, "U8"},   {DataType::kBool, "BOOL"},
    {DataType::kBFloat16, "BF16"}};
constexpr std::string_view kDtypeList = "F32, F64, I32, I64, U8, BOOL, BF16";

std::string Quoted(std::string_view name) { return StrCat("'", name, "'"); }

// pread(2) until `size` bytes or end of file; `*got` says how many arrived.
Status PreadFully(int fd, uint64_t offset, void* data, size_t size, const std::string& path,
                  size_t* got) {
  char* p = static_cast<char*>(data);
  *got = 0;
  while (*got < size) {
    const ssize_t n = ::pread(fd, p + *got, std::min(size - *got, kMaxReadBytes),
                              static_cast<off_t>(offset + *got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return internal::ErrnoToStatus(errno, "pread", path);
    }
    if (n == 0) break;
    *got += static_cast<size_t>(n);
  }
  return Status::OK();
}

// Collects the keys of the outermost JSON object, in order, from nlohmann's SAX events.
class TopLevelKeys final : public Json::json_sax_t {
 public:
  const std::vector<std::string>& keys() const { return keys_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(size_t) override {
    ++depth_;
    return true;
  }
  bool key(string_t& key) override {
    if (depth_ == 1) keys_.push_back(key);
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(size_t) override {
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  // Returning false (rather than throwing, as the DOM builder does) makes sax_parse return false.
  bool parse_error(size_t, const std::string&, const Json::exception&) override { return false; }

 private:
  int depth_ = 0;
  std::vector<std::string> keys_;
};

// The header's JSON, and in *keys its top-level keys in file order; DataLoss naming `path` when it
// is not a JSON object or names a key twice.
StatusOr<Json> ParseHeaderJson(const std::string& text, const std::string& path,
                               std::vector<std::string>* keys) {
  // A first, DOM-less pass records the top-level keys in file order, which the std::map inside
  // Json forgets, and reveals duplicate names, which the map would silently merge. (nlohmann's
  // parser callback could record them too, but it rescans the enclosing object after every
  // entry: quadratic in the number of tensors.)
  TopLevelKeys recorder;
  if (!Json::sax_parse(text, &recorder)) {
    return DataLoss("the header of ", path, " is not valid JSON");
  }
  Json header = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return DataLoss("the header of ", path, " is not valid JSON");
  if (!header.is_object()) return DataLoss("the header of ", path, " is not a JSON object");
  if (recorder.keys().size() != header.size()) {
    std::set<std::string_view> seen;
    for (const std::string& key : recorder.keys()) {
      if (!seen.insert(key).second) {
        return DataLoss("the header of ", path, " names ", Quoted(key), " twice");
      }
    }
  }
  *keys = recorder.keys();
  return header;
}

// The "__metadata__" entry of `path`'s header: string values by key, into *metadata.
Status ParseMetadataEntry(const Json& value, const std::string& path,
                          std::map<std::string, std::string>* metadata) {
  if (!value.is_object()) return DataLoss(kMetadataKey, " of ", path, " is not an object");
  for (const auto& [key, text_value] : value.items()) {
    if (!text_value.is_string()) {
      return DataLoss(kMetadataKey, " of ", path, " holds a non-string value for key ",
                      Quoted(key));
    }
    (*metadata)[key] = text_value.get<std::string>();
  }
  return Status::OK();
}

// The header entry of the tensor `name` in `path`: its dtype, shape and data offsets, checked to
// agree with one another.
StatusOr<SafetensorsEntry> ParseTensorEntry(const std::string& name, const Json& value,
                                            const std::string& path) {
  const std::string tensor = StrCat("tensor ", Quoted(name), " in file ", path);
  if (!value.is_object()) return DataLoss(tensor, ": its header entry is not a JSON object");
  SafetensorsEntry entry;
  entry.name = name;
  const auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string()) {
    return DataLoss(tensor, ": \"dtype\" is missing or not a string");
  }
  const std::string dtype_name = dtype->get<std::string>();
  entry.dtype = DataTypeFromSafetensorsName(dtype_name);
  if (entry.dtype == DataType::kInvalid) {
    return DataLoss(tensor, " has dtype ", Quoted(dtype_name.substr(0, 32)),
                    ", which Weft does not read (it reads ", kDtypeList, ")");
  }
  const auto shape = value.find("shape");
  std::string why;
  if (shape == value.end()) return DataLoss(tensor, ": \"shape\" is missing");
  if (!internal::JsonShape(*shape, &entry.shape, &why)) return DataLoss(tensor, ": ", why);
  const auto offsets = value.find("data_offsets");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2) {
    return DataLoss(tensor, ": \"data_offsets\" is missing or not a pair [begin, end]");
  }
  const std::optional<uint64_t> begin = internal::JsonUint64((*offsets)[0]);
  const std::optional<uint64_t> end = internal::JsonUint64((*offsets)[1]);
  if (!begin.has_value() || !end.has_value() || *begin > *end) {
    return DataLoss(tensor, ": data_offsets [", internal::JsonForMessage((*offsets)[0]), ", ",
                    internal::JsonForMessage((*offsets)[1]), "]",
                    " are not two non-negative integers with begin <= end");
  }
  entry.begin = *begin;
  entry.end = *end;
  const uint64_t elements = static_cast<uint64_t>(entry.shape.num_elements());
  const uint64_t element_bytes = DataTypeSize(entry.dtype);
  if (elements > std::numeric_limits<uint64_t>::max() / element_bytes ||
      elements * element_bytes != entry.end - entry.begin) {
    return DataLoss(tensor, ": data_offsets [", entry.begin, ", ", entry.end, ") hold ",
                    entry.end - entry.begin, " bytes, but dtype ", dtype_name, " and shape ",
                    entry.shape, " need ", elements, " x ", element_bytes);
  }
  return entry;
}

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Checks each of `tensors` and lays it out after the one before: its entry (offsets, CRC32C) into
// info->tensors, its header entry into *entries and its CRC32C into *metadata_json. Returns the
// data section's size.
StatusOr<uint64_t> LayOutTensors(const std::string& path, const NamedTensors& tensors,
                                 SafetensorsFileInfo* info, std::vector<OrderedJson>* entries,
                                 Json* metadata_json) {
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == kMetadataKey) {
      return InvalidArgument("cannot write ", path, ": ", Quoted(name),
                             " is not a valid tensor name");
    }
    if (!names.insert(name).second) {
      return InvalidArgument("cannot write ", path, ": tensor ", Quoted(name), " appears twice");
    }
    StatusOr<std::string> dtype_name = SafetensorsDtypeName(tensor.dtype());
    if (!dtype_name.ok()) {
      return InvalidArgument("cannot write tensor ", Quoted(name), " to ", path, ": ",
                             dtype_name.status().message());
    }
    const uint64_t bytes = tensor.TotalBytes();
    if (bytes > 0 && tensor.raw_data() == nullptr) {
      return InvalidArgument("cannot write tensor ", Quoted(name), " to ", path,
                             ": it has no buffer");
    }
    SafetensorsEntry entry;
    entry.name = name;
    entry.dtype = tensor.dtype();
    entry.shape = tensor.shape();
    entry.begin = offset;
    entry.end = offset + bytes;
    entry.has_crc32c = true;
    entry.crc32c = Crc32c(tensor.raw_data(), bytes);
    offset = entry.end;
    entries->push_back({{"dtype", *dtype_name},
                        {"shape", tensor.shape().dim_sizes()},
                        {"data_offsets", {entry.begin, entry.end}}});
    (*metadata_json)[StrCat(kCrcPrefix, name)] = Crc32cToHex(entry.crc32c);
    info->tensors.push_back(std::move(entry));
  }
  return offset;
}

// The header: the metadata, then each tensor's entry in the order given, padded with spaces to a
// multiple of 8 bytes.
StatusOr<std::string> HeaderText(const std::string& path, const NamedTensors& tensors,
                                 const Json& metadata_json,
                                 const std::vector<OrderedJson>& entries) {
  // The header is put together by hand so that the tensors keep the order given.
  std::string header_text;
  try {
    header_text = StrCat("{", Json(kMetadataKey).dump(), ":", metadata_json.dump());
    for (size_t i = 0; i < entries.size(); ++i) {
      header_text += StrCat(",", Json(tensors[i].first).dump(), ":", entries[i].dump());
    }
    header_text += "}";
  } catch (const std::exception& e) {
    // dump() throws on strings that are not UTF-8, which JSON cannot hold.
    return InvalidArgument("cannot write ", path,
                           ": a tensor name or metadata entry is not valid UTF-8 (", e.what(), ")");
  }
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  if (header_text.size() > kMaxHeaderBytes) {
    return InvalidArgument("cannot write ", path, ": its header would take ", header_text.size(),
                           " bytes, beyond the ", kMaxHeaderBytes, " that readers accept");
  }
  return header_text;
}

// The header's length, the header and the tensors' bytes, to `path` through a DurableFileWriter.
Status WriteFileContents(const std::string& path, const std::string& header_text,
                         const NamedTensors& tensors, const SafetensorsWriteOptions& options) {
  char length[8];
  const uint64_t header_bytes = header_text.size();
  std::memcpy(length, &header_bytes, sizeof(length));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<DurableFileWriter> writer, DurableFileWriter::Create(path));
  WEFT_RETURN_IF_ERROR(writer->Append(length, sizeof(length)));
  WEFT_RETURN_IF_ERROR(writer->Append(header_text));
  for (const auto& [name, tensor] : tensors) {
    const char* data = static_cast<const char*>(tensor.raw_data());
    const size_t bytes = tensor.TotalBytes();
    const size_t piece = options.piece_bytes > 0 ? options.piece_bytes : bytes;
    for (size_t done = 0; done < bytes; done += piece) {
      WEFT_RETURN_IF_ERROR(writer->Append(data + done, std::min(piece, bytes - done)));
      if (options.piece_bytes > 0 && options.between_pieces) options.between_pieces();
    }
  }
  return writer->Commit();
}

uint64_t CurrentFileBytes(int fd, uint64_t fallback) {
  struct stat info;
  return ::fstat(fd, &info) == 0 ? static_cast<uint64_t>(info.st_size) : fallback;
}

}  // namespace

StatusOr<std::string> SafetensorsDtypeName(DataType dtype) {
  for (const auto& [known, name] : kDtypeNames) {
    if (known == dtype) return std::string(name);
  }
  return InvalidArgument("dtype ", DataTypeName(dtype), " has no safetensors name (Weft writes ",
                         kDtypeList, ")");
}

DataType DataTypeFromSafetensorsName(std::string_view name) {
  for (const auto& [dtype, known] : kDtypeNames) {
    if (known == name) return dtype;
  }
  return DataType::kInvalid;
}

StatusOr<SafetensorsFileInfo> WriteSafetensorsFile(
    const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata, const SafetensorsWriteOptions& options) {
  Json metadata_json = Json::object();
  for (const auto& [key, value] : metadata) {
    if (key.starts_with(kCrcPrefix)) {
      return InvalidArgument("cannot write ", path, ": metadata key ", Quoted(key),
                             " is reserved for Weft's checksums");
    }
    metadata_json[key] = value;
  }
  SafetensorsFileInfo info;
  std::vector<OrderedJson> entries;
  entries.reserve(tensors.size());
  WEFT_ASSIGN_OR_RETURN(const uint64_t data_bytes,
                        LayOutTensors(path, tensors, &info, &entries, &metadata_json));
  WEFT_ASSIGN_OR_RETURN(const std::string header_text,
                        HeaderText(path, tensors, metadata_json, entries));
  WEFT_RETURN_IF_ERROR(WriteFileContents(path, header_text, tensors, options));
  info.file_bytes = 8 + header_text.size() + data_bytes;
  return info;
}

StatusOr<std::unique_ptr<SafetensorsReader>> SafetensorsReader::Open(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound("safetensors file ", path, " does not exist");
    return internal::ErrnoToStatus(err, "open", path);
  }
  std::unique_ptr<SafetensorsReader> reader(new SafetensorsReader());
  reader->path_ = path;
  reader->fd_ = fd;
  struct stat info;
  if (::fstat(fd, &info) != 0) return internal::ErrnoToStatus(errno, "fstat", path);
  if (!S_ISREG(info.st_mode)) return FailedPrecondition(path, " is not a regular file");
  reader->file_bytes_ = static_cast<uint64_t>(info.st_size);
  // nlohmann may still throw (bad_alloc on a huge header); no exception leaves Weft.
  try {
    WEFT_RETURN_IF_ERROR(reader->ParseHeader());
  } catch (const std::exception& e) {
    return DataLoss("cannot read the header of ", path, ": ", e.what());
  }
  return reader;
}

SafetensorsReader::~SafetensorsReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status SafetensorsReader::ParseHeader() {
  WEFT_ASSIGN_OR_RETURN(const std::string text, ReadHeaderText());
  std::vector<std::string> keys;
  WEFT_ASSIGN_OR_RETURN(const Json header, ParseHeaderJson(text, path_, &keys));
  for (const std::string& name : keys) {
    const Json& value = header.at(name);
    if (name == kMetadataKey) {
      WEFT_RETURN_IF_ERROR(ParseMetadataEntry(value, path_, &metadata_));
      continue;
    }
    WEFT_ASSIGN_OR_RETURN(SafetensorsEntry entry, ParseTensorEntry(name, value, path_));
    tensors_.push_back(std::move(entry));
  }
  WEFT_RETURN_IF_ERROR(CheckDataLayout());
  return ReadChecksums();
}

StatusOr<std::string> SafetensorsReader::ReadHeaderText() {
  if (file_bytes_ < 8) {
    return DataLoss("file ", path_, " is truncated: it has ", file_bytes_,
                    " bytes, fewer than the 8-byte header length");
  }
  unsigned char length[8];
  size_t got = 0;
  WEFT_RETURN_IF_ERROR(PreadFully(fd_, 0, length, sizeof(length), path_, &got));
  if (got < sizeof(length)) return DataLoss("file ", path_, " is truncated while being read");
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | length[i];
  if (header_bytes > kMaxHeaderBytes) {
    return DataLoss("file ", path_, " has a header length of ", header_bytes,
                    " bytes, beyond the limit of ", kMaxHeaderBytes);
  }
  if (header_bytes > file_bytes_ - 8) {
    return DataLoss("file ", path_, " is truncated: its header length of ", header_bytes,
                    " bytes runs past the end of the file (", file_bytes_, " bytes)");
  }
  std::string text(header_bytes, '\0');
  WEFT_RETURN_IF_ERROR(PreadFully(fd_, 8, text.data(), text.size(), path_, &got));
  if (got < text.size()) return DataLoss("file ", path_, " is truncated while being read");
  data_start_ = 8 + header_bytes;
  return text;
}

Status SafetensorsReader::CheckDataLayout() {
  // File order is data order; the stable sort keeps header order among empty tensors.
  std::stable_sort(
      tensors_.begin(), tensors_.end(),
      [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.begin < b.begin; });
  const uint64_t data_bytes = file_bytes_ - data_start_;
  uint64_t expected = 0;
  for (const SafetensorsEntry& entry : tensors_) {
    const std::string tensor = StrCat("tensor ", Quoted(entry.name), " in file ", path_);
    if (entry.begin < expected) {
      return DataLoss(tensor, " overlaps the tensor before it: its data starts at byte ",
                      entry.begin, " of the data section, before byte ", expected);
    }
    if (entry.begin > expected) {
      return DataLoss(tensor, " leaves a hole: its data starts at byte ", entry.begin,
                      " of the data section, but the tensor before it ends at byte ", expected);
    }
    if (entry.end > data_bytes) {
      return DataLoss("file ", path_, " is truncated: tensor ", Quoted(entry.name),
                      " needs bytes [", data_start_ + entry.begin, ", ", data_start_ + entry.end,
                      ") but the file has only ", file_bytes_);
    }
    expected = entry.end;
  }
  if (expected != data_bytes) {
    return DataLoss("file ", path_, " has ", data_bytes - expected,
                    " bytes after the last tensor's data (the tensors take ", expected,
                    " bytes of a data section of ", data_bytes, ")");
  }
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
  return Status::OK();
}

Status SafetensorsReader::ReadChecksums() {
  for (const auto& [key, value] : metadata_) {
    if (!key.starts_with(kCrcPrefix)) continue;
    const std::string name = key.substr(kCrcPrefix.size());
    const auto it = index_.find(name);
    if (it == index_.end()) {
      return DataLoss("the metadata of ", path_, " has a CRC32C for tensor ", Quoted(name),
                      ", which the file does not hold");
    }
    SafetensorsEntry& entry = tensors_[it->second];
    if (!ParseCrc32cHex(value, &entry.crc32c)) {
      return DataLoss("tensor ", Quoted(name), " in file ", path_, ": its CRC32C ",
                      Quoted(value.substr(0, 16)), " is not 8 hex digits");
    }
    entry.has_crc32c = true;
  }
  // Weft writes a CRC for every tensor or (another tool) for none; a file with some is damaged,
  // most likely in the metadata key of the missing one.
  const auto with_crc = std::count_if(tensors_.begin(), tensors_.end(),
                                      [](const SafetensorsEntry& e) { return e.has_crc32c; });
  if (with_crc != 0 && static_cast<size_t>(with_crc) != tensors_.size()) {
    for (const SafetensorsEntry& entry : tensors_) {
      if (!entry.has_crc32c) {
        return DataLoss("tensor ", Quoted(entry.name), " in file ", path_,
                        " has no CRC32C in the metadata, though other tensors have one");
      }
    }
  }
  return Status::OK();
}

const SafetensorsEntry* SafetensorsReader::Find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

StatusOr<Tensor> SafetensorsReader::Read(std::string_view name) const {
  const SafetensorsEntry* entry = Find(name);
  if (entry == nullptr) return NotFound("file ", path_, " has no tensor ", Quoted(name));
  StatusOr<Tensor> tensor = Tensor::Allocate(entry->dtype, entry->shape);
  if (!tensor.ok()) {
    return tensor.status().WithContext(
        StrCat("reading tensor ", Quoted(name), " from file ", path_));
  }
  WEFT_RETURN_IF_ERROR(ReadInto(*entry, &tensor.value()));
  return tensor;
}

Status SafetensorsReader::ReadInto(const SafetensorsEntry& entry, Tensor* out) const {
  const std::string tensor = StrCat("tensor ", Quoted(entry.name), " in file ", path_);
  if (out == nullptr || out->dtype() != entry.dtype || !(out->shape() == entry.shape)) {
    return InvalidArgument(
        "cannot read ", tensor, " (", DataTypeName(entry.dtype), " ", entry.shape,
        ") into a tensor of ",
        out == nullptr ? "nothing" : StrCat(DataTypeName(out->dtype()), " ", out->shape()));
  }
  const uint64_t bytes = entry.end - entry.begin;
  if (entry.end < entry.begin || bytes != out->TotalBytes() ||
      entry.end > file_bytes_ - data_start_) {
    return InvalidArgument("cannot read ", tensor, ": the entry's offsets [", entry.begin, ", ",
                           entry.end, ") do not belong to this file");
  }
  if (bytes > 0) {
    size_t got = 0;
    WEFT_RETURN_IF_ERROR(
        PreadFully(fd_, data_start_ + entry.begin, out->raw_data(), bytes, path_, &got));
    if (got < bytes) {
      return DataLoss("file ", path_, " is truncated: tensor ", Quoted(entry.name),
                      " needs bytes [", data_start_ + entry.begin, ", ", data_start_ + entry.end,
                      ") but the file has only ", CurrentFileBytes(fd_, data_start_ + got));
    }
  }
  if (entry.has_crc32c) {
    const uint32_t computed = Crc32c(out->raw_data(), bytes);
    if (computed != entry.crc32c) {
      return DataLoss(tensor, ": CRC32C mismatch (stored 0x", Crc32cToHex(entry.crc32c),
                      ", computed 0x", Crc32cToHex(computed), ")");
    }
  }
  if (entry.dtype == DataType::kBool) {
    // Any byte but 0 and 1 is not a bool, and reading one as bool is undefined behaviour.
    const unsigned char* p = static_cast<const unsigned char*>(out->raw_data());
    for (uint64_t i = 0; i < bytes; ++i) {
      if (p[i] > 1) {
        return DataLoss(tensor, ": element ", i, " of a BOOL tensor is ", static_cast<int>(p[i]),
                        ", not 0 or 1");
      }
    }
  }
  return Status::OK();
}

}  // namespace weft::io
