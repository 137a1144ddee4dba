// Conversions between core types (Tensor, TensorShape, DataType) and their protos. Parsing checks
// everything a peer or a file could get wrong and says what: an unknown dtype, a negative
// dimension, content of the wrong length.
#pragma once

#include "weft/core/tensor.h"
#include "weft/framework/partial_shape.h"
#include "weft/tensor.pb.h"
#include "weft/types.pb.h"

namespace weft {

proto::DataType ToProto(DataType type);
StatusOr<DataType> FromProto(proto::DataType type);

proto::TensorShapeProto ToProto(const TensorShape& shape);
proto::TensorShapeProto ToProto(const PartialShape& shape);
StatusOr<TensorShape> TensorShapeFromProto(const proto::TensorShapeProto& shape);
StatusOr<PartialShape> PartialShapeFromProto(const proto::TensorShapeProto& shape);

proto::TensorProto ToProto(const Tensor& tensor);
StatusOr<Tensor> TensorFromProto(const proto::TensorProto& tensor);

}  // namespace weft
