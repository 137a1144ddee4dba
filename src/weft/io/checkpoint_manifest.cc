#include "weft/io/checkpoint_manifest.h"

#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "weft/io/crc32c.h"
#include "weft/io/durable_file.h"
#include "weft/io/json_util.h"
#include "weft/io/safetensors.h"

namespace weft::io {
namespace {

// A std::map per object (keys in sorted order on output): ordered_json finds keys by linear
// search, quadratic in the number of tensors.
using Json = nlohmann::json;

std::string Quoted(std::string_view text) { return StrCat("'", text, "'"); }

std::string DtypeText(DataType dtype) {
  StatusOr<std::string> name = SafetensorsDtypeName(dtype);
  return name.ok() ? *name : std::string(DataTypeName(dtype));
}

// Shard names come from the file, and a restore opens them: anything but a relative path that
// stays inside the checkpoint directory could make it read elsewhere.
bool IsSafeShardName(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

// A partitioned tensor's parts are saved tensors of its dtype and trailing dimensions that cover
// its rows in order, each once.
template <typename Fail>
Status CheckPartitioned(const CheckpointManifest& manifest, const std::string& name,
                        const ManifestPartitioned& whole, Fail fail) {
  const std::string what = StrCat("partitioned tensor ", Quoted(name));
  if (manifest.tensors.contains(name)) return fail(StrCat(what, " is also a saved tensor's name"));
  if (whole.shape.dims() < 1) return fail(StrCat(what, " is a scalar"));
  if (whole.parts.empty()) return fail(StrCat(what, " has no parts"));
  int64_t next_row = 0;
  for (const ManifestPart& part : whole.parts) {
    auto saved = manifest.tensors.find(part.tensor);
    if (saved == manifest.tensors.end()) {
      return fail(StrCat(what, ": part ", Quoted(part.tensor), " is not a saved tensor"));
    }
    const TensorShape& shape = saved->second.shape;
    bool same_rows = saved->second.dtype == whole.dtype && shape.dims() == whole.shape.dims();
    for (int d = 1; same_rows && d < shape.dims(); ++d) {
      same_rows = shape.dim_size(d) == whole.shape.dim_size(d);
    }
    if (!same_rows) {
      return fail(StrCat(what, " is ", DtypeText(whole.dtype), " ", whole.shape.DebugString(),
                         " but its part ", Quoted(part.tensor), " is ",
                         DtypeText(saved->second.dtype), " ", shape.DebugString()));
    }
    if (part.offset != next_row) {
      return fail(StrCat(what, ": part ", Quoted(part.tensor), " starts at row ", part.offset,
                         " where row ", next_row, " was due"));
    }
    next_row += shape.dim_size(0);
  }
  if (next_row != whole.shape.dim_size(0)) {
    return fail(
        StrCat(what, " has ", whole.shape.dim_size(0), " rows but its parts hold ", next_row));
  }
  return Status::OK();
}

// The checks FromJson makes on a parsed manifest, shared with Write so that what is written can
// always be read back. `fail` builds the error (DataLoss for a file read, InvalidArgument for a
// manifest about to be written).
template <typename Fail>
Status Check(const CheckpointManifest& manifest, Fail fail) {
  if (manifest.step < 0) return fail(StrCat("step ", manifest.step, " is negative"));
  if (manifest.replicas < 1)
    return fail(StrCat("replicas ", manifest.replicas, " is not positive"));
  std::set<std::string_view> shards;
  for (const ManifestShard& shard : manifest.shards) {
    if (!IsSafeShardName(shard.file)) {
      return fail(StrCat("shard file ", Quoted(shard.file),
                         " is not a relative path inside the checkpoint directory"));
    }
    if (!shards.insert(shard.file).second) {
      return fail(StrCat("shard file ", Quoted(shard.file), " is listed twice"));
    }
  }
  for (const auto& [name, tensor] : manifest.tensors) {
    if (!shards.contains(tensor.shard)) {
      return fail(StrCat("tensor ", Quoted(name), " is in shard ", Quoted(tensor.shard),
                         ", which the manifest does not list"));
    }
    if (!SafetensorsDtypeName(tensor.dtype).ok()) {
      return fail(StrCat("tensor ", Quoted(name), " has dtype ", DataTypeName(tensor.dtype),
                         ", which checkpoints cannot hold"));
    }
  }
  for (const auto& [name, whole] : manifest.partitioned) {
    WEFT_RETURN_IF_ERROR(CheckPartitioned(manifest, name, whole, fail));
  }
  return Status::OK();
}

// A DataLoss naming the manifest's file and what is wrong with it.
using BadManifest = std::function<Status(std::string_view why)>;

// The version comes first: a newer format may change every other field.
Status ParseVersion(const Json& json, const std::string& path, const BadManifest& bad) {
  const auto version = json.find("format_version");
  if (version == json.end() || !version->is_number_integer()) {
    return bad("\"format_version\" is missing or not an integer");
  }
  const std::optional<uint64_t> version_value = internal::JsonUint64(*version);
  if (!version_value.has_value() || *version_value != kCheckpointFormatVersion) {
    return FailedPrecondition("checkpoint manifest ", path, " has format version ",
                              internal::JsonForMessage(*version), "; this Weft reads version ",
                              kCheckpointFormatVersion);
  }
  return Status::OK();
}

Status ParseStep(const Json& json, const BadManifest& bad, CheckpointManifest* manifest) {
  const auto step = json.find("step");
  if (step == json.end() || !step->is_number_integer()) {
    return bad("\"step\" is missing or not an integer");
  }
  const std::optional<uint64_t> step_value = internal::JsonUint64(*step);
  if (!step_value.has_value() || *step_value > uint64_t{std::numeric_limits<int64_t>::max()}) {
    return bad(StrCat("step ", internal::JsonForMessage(*step), " is negative or too large"));
  }
  manifest->step = static_cast<int64_t>(*step_value);
  return Status::OK();
}

Status ParseReplicas(const Json& json, const BadManifest& bad, CheckpointManifest* manifest) {
  const auto replicas = json.find("replicas");
  if (replicas == json.end()) return bad("\"replicas\" is missing");
  const std::optional<uint64_t> replicas_value = internal::JsonUint64(*replicas);
  if (!replicas_value.has_value() || *replicas_value < 1 ||
      *replicas_value > uint64_t{std::numeric_limits<int>::max()}) {
    return bad(
        StrCat("replicas ", internal::JsonForMessage(*replicas), " is not a positive integer"));
  }
  manifest->replicas = static_cast<int>(*replicas_value);
  return Status::OK();
}

Status ParseShards(const Json& json, const BadManifest& bad, CheckpointManifest* manifest) {
  const auto shards = json.find("shards");
  if (shards == json.end() || !shards->is_array()) {
    return bad("\"shards\" is missing or not an array");
  }
  for (size_t i = 0; i < shards->size(); ++i) {
    const Json& shard = (*shards)[i];
    const auto file = shard.is_object() ? shard.find("file") : shard.end();
    const auto bytes = shard.is_object() ? shard.find("bytes") : shard.end();
    if (!shard.is_object() || file == shard.end() || !file->is_string() || bytes == shard.end() ||
        !internal::JsonUint64(*bytes).has_value()) {
      return bad(
          StrCat("shard ", i, " is not an object with a string \"file\" and an integer \"bytes\""));
    }
    manifest->shards.push_back({file->get<std::string>(), *internal::JsonUint64(*bytes)});
  }
  return Status::OK();
}

StatusOr<ManifestTensor> ParseTensor(const std::string& name, const Json& value,
                                     const BadManifest& bad) {
  const std::string tensor = StrCat("tensor ", Quoted(name));
  if (!value.is_object()) return bad(StrCat(tensor, ": not an object"));
  ManifestTensor entry;
  const auto shard = value.find("shard");
  if (shard == value.end() || !shard->is_string()) {
    return bad(StrCat(tensor, ": \"shard\" is missing or not a string"));
  }
  entry.shard = shard->get<std::string>();
  const auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string()) {
    return bad(StrCat(tensor, ": \"dtype\" is missing or not a string"));
  }
  entry.dtype = DataTypeFromSafetensorsName(dtype->get<std::string>());
  if (entry.dtype == DataType::kInvalid) {
    return bad(StrCat(tensor, ": unknown dtype ", internal::JsonForMessage(*dtype),
                      " (checkpoints hold F32, F64, I32, I64, U8, BOOL)"));
  }
  const auto shape = value.find("shape");
  std::string why;
  if (shape == value.end()) return bad(StrCat(tensor, ": \"shape\" is missing"));
  if (!internal::JsonShape(*shape, &entry.shape, &why)) return bad(StrCat(tensor, ": ", why));
  const auto crc = value.find("crc32c");
  if (crc == value.end() || !crc->is_string() ||
      !ParseCrc32cHex(crc->get<std::string>(), &entry.crc32c)) {
    return bad(StrCat(tensor, ": \"crc32c\" is missing or not 8 hex digits"));
  }
  return entry;
}

Status ParseTensors(const Json& json, const BadManifest& bad, CheckpointManifest* manifest) {
  const auto tensors = json.find("tensors");
  if (tensors == json.end() || !tensors->is_object()) {
    return bad("\"tensors\" is missing or not an object");
  }
  for (const auto& [name, value] : tensors->items()) {
    WEFT_ASSIGN_OR_RETURN(ManifestTensor entry, ParseTensor(name, value, bad));
    manifest->tensors.emplace(name, std::move(entry));
  }
  return Status::OK();
}

StatusOr<ManifestPartitioned> ParseOnePartitioned(const std::string& name, const Json& value,
                                                  const BadManifest& bad) {
  const std::string what = StrCat("partitioned tensor ", Quoted(name));
  if (!value.is_object()) return bad(StrCat(what, ": not an object"));
  ManifestPartitioned whole;
  const auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string()) {
    return bad(StrCat(what, ": \"dtype\" is missing or not a string"));
  }
  whole.dtype = DataTypeFromSafetensorsName(dtype->get<std::string>());
  if (whole.dtype == DataType::kInvalid) {
    return bad(StrCat(what, ": unknown dtype ", internal::JsonForMessage(*dtype)));
  }
  const auto shape = value.find("shape");
  std::string why;
  if (shape == value.end()) return bad(StrCat(what, ": \"shape\" is missing"));
  if (!internal::JsonShape(*shape, &whole.shape, &why)) return bad(StrCat(what, ": ", why));
  const auto parts = value.find("parts");
  if (parts == value.end() || !parts->is_array()) {
    return bad(StrCat(what, ": \"parts\" is missing or not an array"));
  }
  for (size_t i = 0; i < parts->size(); ++i) {
    const Json& part = (*parts)[i];
    const auto tensor = part.is_object() ? part.find("tensor") : part.end();
    const auto offset = part.is_object() ? part.find("offset") : part.end();
    const std::optional<uint64_t> row =
        offset != part.end() ? internal::JsonUint64(*offset) : std::nullopt;
    if (tensor == part.end() || !tensor->is_string() || !row.has_value() ||
        *row > uint64_t{std::numeric_limits<int64_t>::max()}) {
      return bad(StrCat(what, ": part ", i,
                        " is not an object with a string \"tensor\" and an integer \"offset\""));
    }
    whole.parts.push_back({tensor->get<std::string>(), static_cast<int64_t>(*row)});
  }
  return whole;
}

// "partitioned" is optional: a checkpoint without partitioned tensors has none.
Status ParsePartitioned(const Json& json, const BadManifest& bad, CheckpointManifest* manifest) {
  const auto partitioned = json.find("partitioned");
  if (partitioned == json.end()) return Status::OK();
  if (!partitioned->is_object()) return bad("\"partitioned\" is not an object");
  for (const auto& [name, value] : partitioned->items()) {
    WEFT_ASSIGN_OR_RETURN(ManifestPartitioned whole, ParseOnePartitioned(name, value, bad));
    manifest->partitioned.emplace(name, std::move(whole));
  }
  return Status::OK();
}

StatusOr<CheckpointManifest> Parse(const std::string& text, const std::string& path) {
  const BadManifest bad = [&path](std::string_view why) {
    return DataLoss("checkpoint manifest ", path, ": ", why);
  };
  const Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return bad("not valid JSON");
  if (!json.is_object()) return bad("not a JSON object");
  WEFT_RETURN_IF_ERROR(ParseVersion(json, path, bad));
  CheckpointManifest manifest;
  manifest.format_version = kCheckpointFormatVersion;
  WEFT_RETURN_IF_ERROR(ParseStep(json, bad, &manifest));
  WEFT_RETURN_IF_ERROR(ParseReplicas(json, bad, &manifest));
  WEFT_RETURN_IF_ERROR(ParseShards(json, bad, &manifest));
  WEFT_RETURN_IF_ERROR(ParseTensors(json, bad, &manifest));
  WEFT_RETURN_IF_ERROR(ParsePartitioned(json, bad, &manifest));
  WEFT_RETURN_IF_ERROR(Check(manifest, bad));
  return manifest;
}

}  // namespace

std::string CheckpointManifest::ToJson() const {
  Json json = Json::object();
  json["format_version"] = format_version;
  json["step"] = step;
  json["replicas"] = replicas;
  Json shard_list = Json::array();
  for (const ManifestShard& shard : shards) {
    shard_list.push_back({{"file", shard.file}, {"bytes", shard.bytes}});
  }
  json["shards"] = std::move(shard_list);
  Json tensor_map = Json::object();
  for (const auto& [name, tensor] : tensors) {
    tensor_map[name] = {{"shard", tensor.shard},
                        {"dtype", DtypeText(tensor.dtype)},
                        {"shape", tensor.shape.dim_sizes()},
                        {"crc32c", Crc32cToHex(tensor.crc32c)}};
  }
  json["tensors"] = std::move(tensor_map);
  if (!partitioned.empty()) {
    Json partitioned_map = Json::object();
    for (const auto& [name, whole] : partitioned) {
      Json parts = Json::array();
      for (const ManifestPart& part : whole.parts) {
        parts.push_back({{"tensor", part.tensor}, {"offset", part.offset}});
      }
      partitioned_map[name] = {{"dtype", DtypeText(whole.dtype)},
                               {"shape", whole.shape.dim_sizes()},
                               {"parts", std::move(parts)}};
    }
    json["partitioned"] = std::move(partitioned_map);
  }
  // ToJson cannot fail, so bytes that are not UTF-8 are replaced rather than thrown about; Write
  // refuses such names before it gets here.
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

StatusOr<CheckpointManifest> CheckpointManifest::FromJson(const std::string& json,
                                                          const std::string& path) {
  // Every field is type-checked before it is read; this only catches what cannot be checked
  // (bad_alloc on a huge file), so that no exception leaves Weft.
  try {
    return Parse(json, path);
  } catch (const std::exception& e) {
    return DataLoss("checkpoint manifest ", path, ": cannot be read: ", e.what());
  }
}

StatusOr<CheckpointManifest> CheckpointManifest::Read(const std::string& directory) {
  const std::string path = JoinPath(directory, kCheckpointManifestName);
  WEFT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return FromJson(text, path);
}

Status CheckpointManifest::Write(const std::string& directory) const {
  const std::string path = JoinPath(directory, kCheckpointManifestName);
  const auto bad = [&path](std::string_view why) {
    return InvalidArgument("cannot write checkpoint manifest ", path, ": ", why);
  };
  if (format_version != kCheckpointFormatVersion) {
    return bad(StrCat("format version ", format_version, " is not ", kCheckpointFormatVersion));
  }
  WEFT_RETURN_IF_ERROR(Check(*this, bad));
  // A name that is not UTF-8 would be mangled by ToJson and no longer match its tensor.
  try {
    Json names = Json::array();
    for (const auto& [name, tensor] : tensors) names.push_back(name);
    for (const auto& [name, whole] : partitioned) names.push_back(name);
    for (const ManifestShard& shard : shards) names.push_back(shard.file);
    names.dump();
  } catch (const std::exception& e) {
    return bad(StrCat("a tensor or shard name is not valid UTF-8 (", e.what(), ")"));
  }
  return WriteFileDurably(path, ToJson());
}

}  // namespace weft::io
