// libFuzzer target: TensorProto decoding (framework/tensor_proto_util.h), the form every tensor
// takes on the wire and in a Const node's attr.
#include <cstdint>
#include <cstring>

#include "weft/core/logging.h"
#include "weft/framework/tensor_proto_util.h"

// Input: a serialized TensorProto. A tensor it decodes to must encode and decode back to itself.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::proto::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  // The shape decoders on their own, as shape attrs and shape fields use them.
  weft::PartialShapeFromProto(proto.tensor_shape()).status().IgnoreError();
  weft::StatusOr<weft::Tensor> tensor = weft::TensorFromProto(proto);
  if (!tensor.ok()) return 0;
  const weft::proto::TensorProto encoded = weft::ToProto(*tensor);
  weft::StatusOr<weft::Tensor> decoded = weft::TensorFromProto(encoded);
  WEFT_CHECK(decoded.ok()) << "a tensor's own encoding does not decode: " << decoded.status();
  WEFT_CHECK(decoded->dtype() == tensor->dtype() && decoded->shape() == tensor->shape())
      << "the round trip changed " << tensor->shape() << " into " << decoded->shape();
  // memcmp only on a non-empty buffer: an empty tensor may have no buffer at all.
  WEFT_CHECK(decoded->TotalBytes() == tensor->TotalBytes() &&
             (tensor->TotalBytes() == 0 ||
              std::memcmp(decoded->raw_data(), tensor->raw_data(), tensor->TotalBytes()) == 0))
      << "the round trip changed the content of a tensor of shape " << tensor->shape();
  return 0;
}
