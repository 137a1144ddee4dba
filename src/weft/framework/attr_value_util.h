// Typed reading and writing of node attributes. MakeAttrValue builds an AttrValue from a C++
// value; GetNodeAttr reads one back, returning InvalidArgument naming the node and the attr when it
// is missing or of another kind. Stateless; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "weft/attr_value.pb.h"
#include "weft/core/tensor.h"
#include "weft/framework/partial_shape.h"
#include "weft/graph.pb.h"

namespace weft {

proto::AttrValue MakeAttrValue(int64_t value);
proto::AttrValue MakeAttrValue(int value);
proto::AttrValue MakeAttrValue(float value);
proto::AttrValue MakeAttrValue(bool value);
proto::AttrValue MakeAttrValue(std::string_view value);
proto::AttrValue MakeAttrValue(const char* value);
proto::AttrValue MakeAttrValue(DataType value);
proto::AttrValue MakeAttrValue(const TensorShape& value);
proto::AttrValue MakeAttrValue(const PartialShape& value);
proto::AttrValue MakeAttrValue(const Tensor& value);
proto::AttrValue MakeAttrValue(const std::vector<int64_t>& value);
proto::AttrValue MakeAttrValue(const std::vector<int>& value);
proto::AttrValue MakeAttrValue(const std::vector<float>& value);
proto::AttrValue MakeAttrValue(const std::vector<DataType>& value);
proto::AttrValue MakeAttrValue(const std::vector<std::string>& value);
proto::AttrValue MakeAttrValue(const std::vector<TensorShape>& value);

// The kind stored in `value` as an AttrDef kind string ("int", "list(type)", ...); an empty list
// matches every list kind, reported as "list(?)".
std::string AttrValueKind(const proto::AttrValue& value);
// True when `value` can serve an attr of `kind`.
bool AttrValueHasKind(const proto::AttrValue& value, std::string_view kind);
// A short human-readable form: "true", "float32", "[1,2]", "Tensor<float32, [2]>".
std::string SummarizeAttrValue(const proto::AttrValue& value);

// Finds attr `name` on `node`; NotFound-like InvalidArgument naming node and attr when absent.
StatusOr<const proto::AttrValue*> FindNodeAttr(const proto::NodeDef& node, std::string_view name);

Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, int64_t* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, int* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, float* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, bool* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, std::string* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, DataType* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, TensorShape* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, PartialShape* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, Tensor* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, std::vector<int64_t>* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, std::vector<int>* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, std::vector<float>* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, std::vector<DataType>* value);
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name,
                   std::vector<std::string>* value);
// Every shape fully known (a "list(shape)" attr of static shapes).
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name,
                   std::vector<TensorShape>* value);

}  // namespace weft
