#include "weft/framework/resource_handle.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(ResourceHandleTest, TensorRoundTripsTheHandle) {
  ResourceHandle handle;
  handle.device = "/job:localhost/replica:0/task:0/device:CPU:0";
  handle.container = "c";
  handle.name = "dense/w";
  handle.dtype = DataType::kFloat;
  handle.shape = PartialShape({2, 3});
  Tensor t = MakeResourceHandleTensor(handle);
  EXPECT_EQ(t.dtype(), DataType::kResource);
  EXPECT_EQ(t.dims(), 0);

  Tensor copy = t;  // shares the handle
  StatusOr<const ResourceHandle*> read = HandleFromTensor(copy);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)->device, handle.device);
  EXPECT_EQ((*read)->container, "c");
  EXPECT_EQ((*read)->name, "dense/w");
  EXPECT_EQ((*read)->dtype, DataType::kFloat);
  EXPECT_EQ((*read)->shape, PartialShape({2, 3}));
  EXPECT_NE((*read)->DebugString().find("'dense/w'"), std::string::npos);
}

TEST(ResourceHandleTest, RejectsOtherTensors) {
  StatusOr<const ResourceHandle*> wrong_type = HandleFromTensor(Tensor::Scalar(1.0f));
  EXPECT_TRUE(IsInvalidArgument(wrong_type.status())) << wrong_type.status();
  EXPECT_NE(wrong_type.status().message().find("float32"), std::string::npos);

  // A resource tensor whose buffer is plain bytes (not made by MakeResourceHandleTensor).
  Tensor raw(DataType::kResource, TensorShape());
  StatusOr<const ResourceHandle*> no_handle = HandleFromTensor(raw);
  EXPECT_TRUE(IsInvalidArgument(no_handle.status())) << no_handle.status();

  Tensor vector(DataType::kResource, TensorShape({2}));
  EXPECT_TRUE(IsInvalidArgument(HandleFromTensor(vector).status()));
}

}  // namespace
}  // namespace weft
