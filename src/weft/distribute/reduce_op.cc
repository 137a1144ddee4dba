// Names of the distribution enums.
#include "weft/distribute/reduce_op.h"

namespace weft::distribute {

std::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "SUM";
    case ReduceOp::kMean:
      return "MEAN";
  }
  return "UNKNOWN";
}

std::string_view VariableAggregationName(VariableAggregation aggregation) {
  switch (aggregation) {
    case VariableAggregation::kNone:
      return "NONE";
    case VariableAggregation::kSum:
      return "SUM";
    case VariableAggregation::kMean:
      return "MEAN";
    case VariableAggregation::kOnlyFirstReplica:
      return "ONLY_FIRST_REPLICA";
  }
  return "UNKNOWN";
}

std::string_view VariableSynchronizationName(VariableSynchronization synchronization) {
  switch (synchronization) {
    case VariableSynchronization::kAuto:
      return "AUTO";
    case VariableSynchronization::kOnWrite:
      return "ON_WRITE";
    case VariableSynchronization::kOnRead:
      return "ON_READ";
  }
  return "UNKNOWN";
}

}  // namespace weft::distribute
