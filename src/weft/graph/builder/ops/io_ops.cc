#include "weft/graph/builder/ops/io_ops.h"

#include <cstring>

#include "weft/framework/attr_value_util.h"
#include "weft/graph/builder/ops/op_helpers.h"

namespace weft::ops {

Output SaveV2(const Scope& scope, const Input& directory,
              const std::vector<std::string>& tensor_names, const std::string& shard_file,
              const std::vector<Output>& tensors, bool background) {
  if (tensor_names.size() != tensors.size()) {
    scope.UpdateStatus(InvalidArgument("SaveV2: ", tensor_names.size(), " names for ",
                                       tensors.size(), " tensors"));
    return Output();
  }
  Node* node = NodeBuilder(scope, "SaveV2")
                   .Input(directory)
                   .InputList(tensors)
                   .Attr("tensor_names", tensor_names)
                   .Attr("shard_file", std::string_view(shard_file))
                   .Attr("background", background)
                   .Finalize();
  return node ? Output(node) : Output();
}

std::vector<Output> RestoreV2(const Scope& scope, const Input& directory,
                              const std::vector<std::string>& tensor_names,
                              const std::vector<DataType>& dtypes,
                              const std::vector<TensorShape>& shapes,
                              const std::vector<RestorePart>& parts) {
  if (tensor_names.size() != dtypes.size() || tensor_names.size() != shapes.size() ||
      (!parts.empty() && parts.size() != tensor_names.size())) {
    scope.UpdateStatus(InvalidArgument("RestoreV2: ", tensor_names.size(), " names, ",
                                       dtypes.size(), " dtypes, ", shapes.size(), " shapes and ",
                                       parts.size(), " parts"));
    return {};
  }
  NodeBuilder builder(scope, "RestoreV2");
  builder.Input(directory)
      .Attr("tensor_names", tensor_names)
      .Attr("dtypes", dtypes)
      .Attr("shapes", shapes);
  if (!parts.empty()) {
    std::vector<std::string> whole_names;
    std::vector<int64_t> whole_rows, offsets;
    for (const RestorePart& part : parts) {
      whole_names.push_back(part.whole_name);
      whole_rows.push_back(part.whole_rows);
      offsets.push_back(part.offset);
    }
    builder.Attr("whole_names", whole_names)
        .Attr("whole_rows", whole_rows)
        .Attr("offsets", offsets);
  }
  Node* node = builder.Finalize();
  if (node == nullptr) return {};
  std::vector<Output> outputs;
  for (size_t i = 0; i < tensor_names.size(); ++i) outputs.emplace_back(node, static_cast<int>(i));
  return outputs;
}

Tensor PathTensor(const std::string& path) {
  Tensor bytes(DataType::kUInt8, TensorShape({static_cast<int64_t>(path.size())}));
  if (!path.empty()) std::memcpy(bytes.raw_data(), path.data(), path.size());
  return bytes;
}

}  // namespace weft::ops
