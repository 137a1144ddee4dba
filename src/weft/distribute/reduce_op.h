// The enums of the distribution API: how values from several replicas are combined (ReduceOp),
// how a distributed variable combines updates made in replica context (VariableAggregation) and
// when its components are kept in sync (VariableSynchronization), with their names for messages.
#pragma once

#include <string_view>

namespace weft::distribute {

// How per-replica values are combined into one.
enum class ReduceOp { kSum, kMean };

// How updates to a distributed variable made in replica context are combined (section 1.4.3 of the
// reference notes): kNone refuses them when there are several replicas, kSum / kMean all-reduce
// the update, kOnlyFirstReplica applies replica 0's update everywhere.
enum class VariableAggregation { kNone, kSum, kMean, kOnlyFirstReplica };

// When the components of a distributed variable agree: kAuto and kOnWrite make a
// MirroredVariable (every write is synchronised), kOnRead a SyncOnReadVariable (each replica
// writes its own component; a cross-replica read aggregates them).
enum class VariableSynchronization { kAuto, kOnWrite, kOnRead };

// "SUM", "MEAN"; "NONE", "SUM", "MEAN", "ONLY_FIRST_REPLICA"; "AUTO", "ON_WRITE", "ON_READ".
std::string_view ReduceOpName(ReduceOp op);
std::string_view VariableAggregationName(VariableAggregation aggregation);
std::string_view VariableSynchronizationName(VariableSynchronization synchronization);

}  // namespace weft::distribute
