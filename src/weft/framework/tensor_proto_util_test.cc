#include "weft/framework/tensor_proto_util.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(TensorProtoTest, RoundTripsEveryDtype) {
  Tensor f = Tensor::FromVector<float>({1.5f, -2, 3, 4}, TensorShape({2, 2}));
  Tensor i = Tensor::FromVector<int64_t>({1, 2, 3});
  Tensor b = Tensor::FromVector<bool>({true, false});
  Tensor u = Tensor::FromVector<uint8_t>({0, 255});
  Tensor h =
      Tensor::FromVector<bfloat16>({bfloat16(0.1f), bfloat16(-3.0f), bfloat16::FromBits(0x7fc1)});
  for (const Tensor& t : {f, i, b, u, h}) {
    StatusOr<Tensor> back = TensorFromProto(ToProto(t));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->dtype(), t.dtype());
    EXPECT_EQ(back->shape(), t.shape());
    EXPECT_EQ(back->DebugString(), t.DebugString());
  }
}

TEST(TensorProtoTest, BFloat16TravelsBitForBit) {
  EXPECT_EQ(ToProto(DataType::kBFloat16), proto::DT_BFLOAT16);
  const std::vector<uint16_t> bits = {0x3dcd, 0xc040, 0x7fc1, 0x0001, 0x8000};
  Tensor t(DataType::kBFloat16, TensorShape({5}));
  for (size_t i = 0; i < bits.size(); ++i) t.data<bfloat16>()[i] = bfloat16::FromBits(bits[i]);
  proto::TensorProto p = ToProto(t);
  EXPECT_EQ(p.tensor_content().size(), 10u);
  StatusOr<Tensor> back = TensorFromProto(p);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->dtype(), DataType::kBFloat16);
  for (size_t i = 0; i < bits.size(); ++i) EXPECT_EQ(back->data<bfloat16>()[i].bits, bits[i]);
}

TEST(TensorProtoTest, RejectsContentOfTheWrongLength) {
  proto::TensorProto p = ToProto(Tensor::FromVector<float>({1, 2, 3}));
  p.mutable_tensor_content()->pop_back();
  Status s = TensorFromProto(p).status();
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("11 bytes"), std::string::npos) << s;
}

// Found by fuzz/tensor_proto_fuzzer: the shape of a proto without content made the decoder
// allocate 76 GB before it compared the content's length.
TEST(TensorProtoTest, RejectsAHugeShapeWithoutContentBeforeAllocating) {
  proto::TensorProto p;
  p.set_dtype(ToProto(DataType::kDouble));
  *p.mutable_tensor_shape() = ToProto(TensorShape({int64_t{1} << 20, int64_t{1} << 20}));
  Status s = TensorFromProto(p).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("has 0 bytes"), std::string::npos) << s;
  // Elements times element size beyond 2^64 must not wrap around to the content's length.
  *p.mutable_tensor_shape() = ToProto(TensorShape({int64_t{1} << 61}));
  p.set_tensor_content(std::string());
  EXPECT_TRUE(IsInvalidArgument(TensorFromProto(p).status()));
}

TEST(TensorProtoTest, RejectsUnknownDtypeAndNegativeDims) {
  proto::TensorProto p = ToProto(Tensor::FromVector<float>({1}));
  p.set_dtype(static_cast<proto::DataType>(77));
  EXPECT_TRUE(IsInvalidArgument(TensorFromProto(p).status()));
  proto::TensorProto q = ToProto(Tensor::FromVector<float>({1}));
  q.mutable_tensor_shape()->mutable_dim(0)->set_size(-4);
  EXPECT_TRUE(IsInvalidArgument(TensorFromProto(q).status()));
}

TEST(TensorProtoTest, PartialShapesKeepUnknowns) {
  auto shape = PartialShapeFromProto(ToProto(PartialShape({-1, 3})));
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(*shape, PartialShape({-1, 3}));
  EXPECT_FALSE(PartialShapeFromProto(ToProto(PartialShape()))->rank_known());
  EXPECT_FALSE(TensorShapeFromProto(ToProto(PartialShape({-1}))).ok());
}

}  // namespace
}  // namespace weft
