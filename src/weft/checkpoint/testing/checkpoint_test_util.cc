#include "weft/checkpoint/testing/checkpoint_test_util.h"

#include "weft/core/str_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/runtime/session.h"

namespace weft::checkpoint::testing {

std::vector<TestVariableSpec> SmallSpecs() {
  return {{"dense1/kernel", TensorShape({3, 4}), DataType::kFloat},
          {"dense1/bias", TensorShape({4}), DataType::kFloat},
          {"scale", TensorShape({2}), DataType::kDouble},
          {"counts", TensorShape({5}), DataType::kInt32},
          {"big", TensorShape({}), DataType::kInt64}};
}

std::vector<TestVariableSpec> CrashLoopSpecs() {
  std::vector<TestVariableSpec> specs;
  for (int i = 0; i < 4; ++i) {
    specs.push_back({StrCat("layer", i, "/kernel"), TensorShape({512, 1024}), DataType::kFloat});
  }
  specs.push_back({"counter", TensorShape({}), DataType::kInt64});
  return specs;
}

StatusOr<TestModel> BuildTestModel(int devices, const std::vector<TestVariableSpec>& specs,
                                   bool with_sum) {
  TestModel model;
  Scope root = Scope::NewRootScope();
  Output value = ops::Placeholder(root.WithOpName("value"), DataType::kInt64, PartialShape({}));
  model.value = value.name();
  std::vector<Output> assigns, initializers;
  if (devices > 1) {
    std::vector<std::string> names;
    for (int i = 0; i < devices; ++i) names.push_back(StrCat("/cpu:", i));
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<distribute::MirroredStrategy> strategy,
                          distribute::MirroredStrategy::Create(names));
    model.strategy = std::move(strategy);
  }
  for (const TestVariableSpec& spec : specs) {
    const std::vector<int64_t>& dims = spec.shape.dim_sizes();
    Tensor shape =
        Tensor::FromVector<int64_t>(dims, TensorShape({static_cast<int64_t>(dims.size())}));
    Output filled = ops::Fill(root, shape, ops::Cast(root, value, spec.dtype));
    if (model.strategy == nullptr) {
      Variable v = Variable::Create(root, spec.name, spec.shape, spec.dtype, Initializer::Zeros());
      model.variables.push_back(v);
      initializers.push_back(v.initializer());
      assigns.push_back(v.Assign(root, filled));
      model.reads.push_back(v.Read(root).name());
      continue;
    }
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<distribute::DistributedVariable> v,
                          model.strategy->CreateVariable(root, spec.name, spec.shape, spec.dtype,
                                                         Initializer::Zeros()));
    model.distributed.push_back(v);
    initializers.push_back(v->initializer());
    WEFT_ASSIGN_OR_RETURN(Output assign, v->Assign(root, filled, nullptr));
    assigns.push_back(assign);
    for (const Variable& component : v->components()) {
      model.reads.push_back(component.Read(root).name());
    }
  }
  if (with_sum) {
    if (model.strategy == nullptr) return InvalidArgument("a SUM variable needs devices > 1");
    WEFT_ASSIGN_OR_RETURN(
        std::shared_ptr<distribute::DistributedVariable> total,
        model.strategy->CreateVariable(
            root, "metrics/total", TensorShape({}), DataType::kFloat, Initializer::Ones(),
            distribute::VariableSynchronization::kOnRead, distribute::VariableAggregation::kSum));
    model.distributed.push_back(total);
    initializers.push_back(total->initializer());
    for (const Variable& component : total->components()) {
      model.reads.push_back(component.Read(root).name());
    }
  }
  model.assign = ops::NoOp(root.WithOpName("assign_all").WithControlDependencies(assigns)).name();
  Output init = ops::NoOp(root.WithOpName("init_all").WithControlDependencies(initializers));
  CheckpointObjects objects;
  objects.variables = model.variables;
  objects.distributed_variables = model.distributed;
  objects.values = {"global_step"};
  objects.replicas = devices;
  WEFT_ASSIGN_OR_RETURN(model.checkpoint, Checkpoint::Create(root, objects));
  WEFT_ASSIGN_OR_RETURN(proto::GraphDef graph, root.ToGraphDef());
  SessionOptions options;
  (*options.config.mutable_device_count())["CPU"] = devices;
  WEFT_ASSIGN_OR_RETURN(model.session, NewSession(options));
  WEFT_RETURN_IF_ERROR(model.session->Create(graph));
  std::vector<Tensor> outputs;
  WEFT_RETURN_IF_ERROR(model.session->Run({}, {}, {init.name()}, &outputs));
  return model;
}

Status SetAll(TestModel& model, int64_t value) {
  std::vector<Tensor> outputs;
  return model.session->Run({{model.value, Tensor::Scalar<int64_t>(value)}}, {}, {model.assign},
                            &outputs);
}

StatusOr<std::vector<Tensor>> ReadAll(TestModel& model) {
  std::vector<Tensor> outputs;
  WEFT_RETURN_IF_ERROR(model.session->Run({}, model.reads, {}, &outputs));
  return outputs;
}

Status CheckAll(TestModel& model, int64_t value) {
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> reads, ReadAll(model));
  const size_t checked =
      model.reads.size() -
      (model.distributed.empty() || model.distributed.back()->name() != "metrics/total"
           ? 0
           : model.distributed.back()->num_components());
  for (size_t i = 0; i < checked; ++i) {
    const Tensor& read = reads[i];
    for (int64_t e = 0; e < read.NumElements(); ++e) {
      double element = 0;
      switch (read.dtype()) {
        case DataType::kFloat:
          element = read.data<float>()[e];
          break;
        case DataType::kDouble:
          element = read.data<double>()[e];
          break;
        case DataType::kInt32:
          element = read.data<int32_t>()[e];
          break;
        case DataType::kInt64:
          element = static_cast<double>(read.data<int64_t>()[e]);
          break;
        case DataType::kBFloat16:
          element = static_cast<double>(read.data<bfloat16>()[e]);
          break;
        default:
          return Internal("unexpected dtype ", DataTypeName(read.dtype()));
      }
      if (element != static_cast<double>(value)) {
        return FailedPrecondition(model.reads[i], " element ", e, " is ", element, ", not ", value);
      }
    }
  }
  return Status::OK();
}

}  // namespace weft::checkpoint::testing
