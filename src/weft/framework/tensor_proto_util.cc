#include "weft/framework/tensor_proto_util.h"

#include <cstring>

namespace weft {

proto::DataType ToProto(DataType type) { return static_cast<proto::DataType>(type); }

StatusOr<DataType> FromProto(proto::DataType type) {
  if (!IsValidDataType(static_cast<int>(type))) {
    return InvalidArgument("unknown data type enum value ", static_cast<int>(type));
  }
  return static_cast<DataType>(type);
}

proto::TensorShapeProto ToProto(const TensorShape& shape) {
  proto::TensorShapeProto out;
  for (int64_t d : shape.dim_sizes()) out.add_dim()->set_size(d);
  return out;
}

proto::TensorShapeProto ToProto(const PartialShape& shape) {
  proto::TensorShapeProto out;
  if (!shape.rank_known()) {
    out.set_unknown_rank(true);
    return out;
  }
  for (int64_t d : shape.dims()) out.add_dim()->set_size(d);
  return out;
}

StatusOr<TensorShape> TensorShapeFromProto(const proto::TensorShapeProto& shape) {
  if (shape.unknown_rank()) return InvalidArgument("expected a fully known shape, got <unknown>");
  std::vector<int64_t> dims;
  dims.reserve(shape.dim_size());
  for (const auto& dim : shape.dim()) dims.push_back(dim.size());
  return TensorShape::Create(dims);
}

StatusOr<PartialShape> PartialShapeFromProto(const proto::TensorShapeProto& shape) {
  if (shape.unknown_rank()) return PartialShape::UnknownRank();
  std::vector<int64_t> dims;
  for (const auto& dim : shape.dim()) {
    if (dim.size() < -1) return InvalidArgument("shape dimension ", dim.size(), " is below -1");
    dims.push_back(dim.size());
  }
  return PartialShape(std::move(dims));
}

proto::TensorProto ToProto(const Tensor& tensor) {
  proto::TensorProto out;
  out.set_dtype(ToProto(tensor.dtype()));
  *out.mutable_tensor_shape() = ToProto(tensor.shape());
  out.set_tensor_content(static_cast<const char*>(tensor.raw_data()), tensor.TotalBytes());
  return out;
}

StatusOr<Tensor> TensorFromProto(const proto::TensorProto& tensor) {
  WEFT_ASSIGN_OR_RETURN(DataType dtype, FromProto(tensor.dtype()));
  if (dtype == DataType::kResource) {
    return InvalidArgument("resource tensors cannot be built from a TensorProto");
  }
  WEFT_ASSIGN_OR_RETURN(TensorShape shape, TensorShapeFromProto(tensor.tensor_shape()));
  // The length is checked before anything is allocated: the shape alone may ask for any amount of
  // memory (a peer's [2^20, 2^20] tensor with no content). Divided, not multiplied, since
  // elements * element size may overflow.
  const size_t content_bytes = tensor.tensor_content().size();
  const size_t element_bytes = DataTypeSize(dtype);
  if (content_bytes % element_bytes != 0 ||
      content_bytes / element_bytes != static_cast<uint64_t>(shape.num_elements())) {
    return InvalidArgument("tensor content has ", content_bytes, " bytes, but a ",
                           DataTypeName(dtype), " tensor of shape ", shape, " needs ",
                           shape.num_elements(), " elements of ", element_bytes, " bytes");
  }
  WEFT_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(dtype, shape));
  if (out.TotalBytes() > 0) {
    std::memcpy(out.raw_data(), tensor.tensor_content().data(), out.TotalBytes());
  }
  if (dtype == DataType::kBool) {
    // Any byte other than 0/1 would be an invalid bool: normalise.
    auto* bytes = static_cast<uint8_t*>(out.raw_data());
    for (size_t i = 0; i < out.TotalBytes(); ++i) bytes[i] = bytes[i] != 0 ? 1 : 0;
  }
  return out;
}

}  // namespace weft
