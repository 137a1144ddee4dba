// The enums of the distribution API: how values from several replicas are combined (ReduceOp),
// how a distributed variable combines updates made in replica context (VariableAggregation) and
// when its components are kept in sync (VariableSynchronization), with their names for messages.
#pragma once

#include <string_view>

#include "weft/graph/builder/variable.h"

namespace weft::distribute {

// How per-replica values are combined into one.
enum class ReduceOp { kSum, kMean };

// VariableAggregation and VariableSynchronization are the builder's (graph/builder/variable.h),
// where Variable::Create takes them; the distribution API uses them under these names.
using VariableAggregation = weft::VariableAggregation;
using VariableSynchronization = weft::VariableSynchronization;

// "SUM", "MEAN"; "NONE", "SUM", "MEAN", "ONLY_FIRST_REPLICA"; "AUTO", "ON_WRITE", "ON_READ".
std::string_view ReduceOpName(ReduceOp op);
std::string_view VariableAggregationName(VariableAggregation aggregation);
std::string_view VariableSynchronizationName(VariableSynchronization synchronization);

}  // namespace weft::distribute
