// Optimizer::ComputeGradients: the gradient of a loss with respect to variables, through every
// read of each variable that reaches the loss. A variable read only through ResourceGather (an
// embedding lookup) gets a sparse gradient: the looked-up rows' gradients and their row numbers.
#include <unordered_set>

#include "weft/core/str_util.h"
#include "weft/graph/gradients/gradients.h"
#include "weft/train/optimizer.h"

namespace weft::train {
namespace {

// A read of a variable: its whole value (ReadVariableOp), or rows of it (ResourceGather; `indices`
// is the gather's indices input).
struct VariableRead {
  Output value;
  Output indices;
};

std::vector<VariableRead> ReadsOf(const Variable& variable) {
  std::vector<VariableRead> reads;
  for (const Edge* edge : variable.handle().node()->out_edges()) {
    if (edge->IsControlEdge() || edge->dst_input != 0) continue;
    const std::string& op = edge->dst->type_string();
    if (op == "ReadVariableOp") reads.push_back({Output(edge->dst, 0), Output()});
    if (op == "ResourceGather") {
      const Edge* indices = edge->dst->input_edge(1);
      if (indices != nullptr) {
        reads.push_back({Output(edge->dst, 0), Output(indices->src, indices->src_output)});
      }
    }
  }
  return reads;
}

// Every node from which `loss` can be reached along data edges (its ancestors and itself). A
// control edge carries no gradient: a read that only precedes the loss (an earlier step's, in
// steps unrolled one after another) is not differentiated.
std::unordered_set<const Node*> AncestorsOf(const Output& loss) {
  std::unordered_set<const Node*> seen = {loss.node()};
  std::vector<const Node*> stack = {loss.node()};
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const Edge* edge : node->in_edges()) {
      if (!edge->IsControlEdge() && seen.insert(edge->src).second) stack.push_back(edge->src);
    }
  }
  return seen;
}

// One variable's gradient from the gradients of its reads: dense reads add up; lookups alone give
// a sparse gradient (rows flattened to [n, row...] and their indices to [n], several lookups
// concatenated); lookups beside a dense read are densified and added to it.
GradientAndVariable Combine(const Scope& scope, const Variable& variable,
                            const std::vector<VariableRead>& reads,
                            const std::vector<Output>& grads) {
  std::vector<int64_t> row_shape = {-1};
  for (int d = 1; d < variable.shape().dims(); ++d) {
    row_shape.push_back(variable.shape().dim_size(d));
  }
  const Tensor flat = Tensor::FromVector(std::vector<int64_t>{-1});
  const Tensor rows_of = Tensor::FromVector(row_shape);
  std::vector<Output> dense, rows, indices;
  for (size_t i = 0; i < reads.size(); ++i) {
    if (!reads[i].indices) {
      dense.push_back(grads[i]);
      continue;
    }
    // Beside a lookup placed explicitly (ShardedVariable::LookupMany: on the table's task), so
    // that its rows' gradient and ids stay where the update runs.
    const std::string& device = reads[i].value.node()->requested_device();
    const Scope there = device.empty() ? scope : scope.WithDevice(device);
    rows.push_back(ops::Reshape(there, grads[i], rows_of));
    indices.push_back(ops::Reshape(there, reads[i].indices, flat));
  }
  GradientAndVariable sparse{Output(), variable, Output()};
  if (!rows.empty()) {
    const std::string& device = rows[0].node()->requested_device();
    const Scope there = device.empty() ? scope : scope.WithDevice(device);
    sparse.gradient = rows.size() == 1 ? rows[0] : ops::Concat(there, rows, 0);
    sparse.indices = indices.size() == 1 ? indices[0] : ops::Concat(there, indices, 0);
    if (dense.empty()) return sparse;
    dense.push_back(DensifyGradient(scope, sparse));
  }
  return {dense.size() == 1 ? dense[0] : ops::AddN(scope, dense), variable, Output()};
}

}  // namespace

StatusOr<std::vector<GradientAndVariable>> Optimizer::ComputeGradients(
    const Scope& scope, const Output& loss, const std::vector<Variable>& variables) const {
  // Only the reads that reach this loss: a variable shared by several replicas (one stored
  // centrally) is read once per replica, and each replica differentiates its own loss.
  const std::unordered_set<const Node*> ancestors = AncestorsOf(loss);
  std::vector<Output> xs;
  std::vector<std::vector<VariableRead>> reads(variables.size());
  for (size_t i = 0; i < variables.size(); ++i) {
    if (!variables[i]) return InvalidArgument("ComputeGradients: variable ", i, " is empty");
    for (const VariableRead& read : ReadsOf(variables[i])) {
      if (!ancestors.contains(read.value.node())) continue;
      xs.push_back(read.value);
      reads[i].push_back(read);
    }
  }
  std::vector<Output> grads;
  if (!xs.empty()) WEFT_RETURN_IF_ERROR(AddSymbolicGradients(scope, {loss}, xs, &grads));
  std::vector<GradientAndVariable> result;
  Scope sum_scope = scope.NewSubScope("gradients_sum");
  size_t next = 0;
  for (size_t i = 0; i < variables.size(); ++i) {
    std::vector<Output> mine(grads.begin() + next, grads.begin() + next + reads[i].size());
    next += reads[i].size();
    result.push_back(reads[i].empty() ? GradientAndVariable{Output(), variables[i], Output()}
                                      : Combine(sum_scope, variables[i], reads[i], mine));
  }
  WEFT_RETURN_IF_ERROR(scope.status());
  return result;
}

}  // namespace weft::train
