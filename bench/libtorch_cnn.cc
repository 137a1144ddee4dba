// libtorch_cnn: workload W2 (the Fashion-MNIST CNN of examples/fmnist_cnn) in libtorch's C++
// frontend, the peer of `bench/run.sh libtorch`. Flags: --data DIR (the uncompressed IDX files
// train-images-idx3-ubyte and train-labels-idx1-ubyte, which torch's MNIST reader wants; default
// .), --max-steps N (default 100), --threads N (default: libtorch's own). Prints one JSON line;
// only the training loop is timed.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <torch/torch.h>

int main(int argc, char** argv) {
  std::string data = ".";
  int64_t max_steps = 100;
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--data") == 0 && i + 1 < argc) data = argv[++i];
    if (std::strcmp(argv[i], "--max-steps") == 0 && i + 1 < argc) max_steps = std::atoll(argv[++i]);
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::atoi(argv[++i]);
  }
  if (threads > 0) torch::set_num_threads(threads);
  torch::manual_seed(1);
  // Images as [1, 28, 28] floats in [0, 1] (bytes / 255), labels as int64.
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      torch::data::datasets::MNIST(data).map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions(128).drop_last(true));

  namespace nn = torch::nn;
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 32, 5).padding(2)), nn::ReLU(),
                       nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(32, 64, 5).padding(2)),
                       nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(7 * 7 * 64, 1024),
                       nn::ReLU(), nn::Linear(1024, 10));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));

  // One epoch, at most max_steps batches. The loss reported is the mean of the batches' losses,
  // as Model::Fit reports it.
  int64_t steps = 0;
  double loss_sum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto& batch : *loader) {
    optimizer.zero_grad();
    torch::Tensor loss = nn::functional::cross_entropy(model->forward(batch.data), batch.target);
    loss.backward();
    optimizer.step();
    loss_sum += loss.item<double>();
    if (++steps == max_steps) break;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "{\"images_per_sec\": %.1f, \"steps\": %lld, \"final_loss\": %.4f, \"threads\": %d}\n",
      steps * 128 / seconds, static_cast<long long>(steps), loss_sum / steps,
      torch::get_num_threads());
  return 0;
}
