#include "weft/data/synthetic_criteo.h"

#include <cmath>
#include <numeric>

#include "weft/data/dataset_node.h"
#include "weft/data/zipf_distribution.h"

namespace weft::data {
namespace {

// SplitMix64's finaliser: a bijective mix of 64 bits, so distinct keys give unrelated outputs.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t Key(uint64_t seed, uint64_t a, uint64_t b) { return Mix(Mix(Mix(seed) ^ a) ^ b); }

// A counter-based stream of uniforms for one example: cheap to start at any index, which lets any
// process generate any example without generating the ones before it.
class ExampleRandom {
 public:
  explicit ExampleRandom(uint64_t key) : state_(key) {}
  uint64_t Next() { return Mix(state_++); }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // A standard normal (Box-Muller; the second value is dropped to keep the stream simple).
  double Normal() {
    const double u = 1 - Uniform();  // (0, 1]
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * Uniform());
  }

 private:
  uint64_t state_;
};

// Spreads Zipf rank k (1 = hottest) over a table: row = ((k - 1) * stride + offset) mod rows, with
// the stride coprime to rows so that it is a permutation.
struct RowScatter {
  int64_t rows, stride, offset;
  RowScatter(int64_t table_rows, uint64_t key) : rows(table_rows) {
    stride = static_cast<int64_t>(Mix(key) % static_cast<uint64_t>(rows)) | 1;
    while (std::gcd(stride, rows) != 1) stride += 2;
    stride %= rows;
    if (stride == 0) stride = 1;
    offset = static_cast<int64_t>(Mix(key + 1) % static_cast<uint64_t>(rows));
  }
  int64_t Row(int64_t rank) const {
    const unsigned __int128 product = static_cast<unsigned __int128>(rank - 1) * stride + offset;
    return static_cast<int64_t>(product % static_cast<unsigned __int128>(rows));
  }
};

constexpr uint64_t kDenseWeights = 1, kIdWeights = 2, kTables = 3, kExamples = 4;

}  // namespace

std::vector<int64_t> SyntheticCriteoOptions::W7TableRows() {
  std::vector<int64_t> rows(4, 2'000'000);
  rows.insert(rows.end(), 8, 100'000);
  rows.insert(rows.end(), 14, 10'000);
  return rows;
}

Status ValidateSyntheticCriteoOptions(const SyntheticCriteoOptions& options) {
  if (options.num_dense < 0) {
    return InvalidArgument("synthetic Criteo: num_dense must be >= 0, got ", options.num_dense);
  }
  for (size_t t = 0; t < options.table_rows.size(); ++t) {
    if (options.table_rows[t] < 1) {
      return InvalidArgument("synthetic Criteo: table ", t, " must have at least one row, got ",
                             options.table_rows[t]);
    }
  }
  if (!(options.zipf_exponent > 0) || !std::isfinite(options.zipf_exponent)) {
    return InvalidArgument("synthetic Criteo: zipf_exponent must be positive, got ",
                           options.zipf_exponent);
  }
  return Status::OK();
}

StatusOr<Element> GenerateSyntheticCriteo(const SyntheticCriteoOptions& options, int64_t first,
                                          int64_t count) {
  WEFT_RETURN_IF_ERROR(ValidateSyntheticCriteoOptions(options));
  if (first < 0 || count < 0) {
    return InvalidArgument("synthetic Criteo: examples [", first, ", ", first, " + ", count,
                           ") do not exist: the first index and the count must be >= 0");
  }
  const int dense_count = options.num_dense;
  const int tables = static_cast<int>(options.table_rows.size());
  std::vector<double> dense_weights(dense_count);
  for (int j = 0; j < dense_count; ++j) {
    dense_weights[j] =
        ExampleRandom(Key(options.seed, kDenseWeights, j)).Normal() * options.dense_weight_scale;
  }
  std::vector<ZipfDistribution> zipf;
  std::vector<RowScatter> scatter;
  for (int t = 0; t < tables; ++t) {
    WEFT_ASSIGN_OR_RETURN(ZipfDistribution distribution,
                          ZipfDistribution::Make(options.table_rows[t], options.zipf_exponent));
    zipf.push_back(distribution);
    scatter.emplace_back(options.table_rows[t], Key(options.seed, kTables, t));
  }
  Tensor dense(DataType::kFloat, TensorShape({count, dense_count}));
  Tensor ids(DataType::kInt64, TensorShape({count, tables}));
  Tensor label(DataType::kFloat, TensorShape({count, 1}));
  for (int64_t i = 0; i < count; ++i) {
    ExampleRandom random(Key(options.seed, kExamples, static_cast<uint64_t>(first + i)));
    double logit = options.bias;
    for (int j = 0; j < dense_count; ++j) {
      // A heavy-tailed count, as Criteo's integer features are, fed as log(1 + count).
      const double value = std::log1p(std::floor(std::exp(1.0 + 1.3 * random.Normal())));
      dense.data<float>()[i * dense_count + j] = static_cast<float>(value);
      logit += dense_weights[j] * (value - 1.5);
    }
    for (int t = 0; t < tables; ++t) {
      const int64_t row = scatter[t].Row(zipf[t]([&random] { return random.Uniform(); }));
      ids.data<int64_t>()[i * tables + t] = row;
      const double u = ExampleRandom(Key(Key(options.seed, kIdWeights, t), row, 0)).Uniform();
      logit += (2 * u - 1) * options.id_weight_scale;
    }
    const double probability = 1 / (1 + std::exp(-logit));
    label.data<float>()[i] = random.Uniform() < probability ? 1.0f : 0.0f;
  }
  return Element{std::move(dense), std::move(ids), std::move(label)};
}

Dataset SyntheticCriteoDataset(const SyntheticCriteoOptions& options, int64_t first, int64_t count,
                               int64_t batch_size, bool drop_remainder) {
  Status valid = ValidateSyntheticCriteoOptions(options);
  if (valid.ok() && (first < 0 || count < 1)) {
    valid = InvalidArgument("synthetic Criteo: a dataset needs first >= 0 and count >= 1, got ",
                            first, " and ", count);
  }
  Tensor indices(DataType::kInt64, TensorShape({valid.ok() ? count : 1}));
  for (int64_t i = 0; i < indices.NumElements(); ++i) indices.data<int64_t>()[i] = first + i;
  Dataset batches = Dataset::FromTensors({std::move(indices)}).Batch(batch_size, drop_remainder);
  Dataset generated = batches.Map([options, valid](Element batch) -> StatusOr<Element> {
    WEFT_RETURN_IF_ERROR(valid);
    const Tensor& indices = batch[0];
    return GenerateSyntheticCriteo(options, indices.data<int64_t>()[0], indices.dim_size(0));
  });
  proto::DatasetDef def;
  proto::SyntheticCriteoDatasetDef* criteo = def.mutable_synthetic_criteo();
  criteo->set_seed(options.seed);
  criteo->set_num_dense(options.num_dense);
  for (int64_t rows : options.table_rows) criteo->add_table_rows(rows);
  criteo->set_zipf_exponent(options.zipf_exponent);
  criteo->set_bias(options.bias);
  criteo->set_id_weight_scale(options.id_weight_scale);
  criteo->set_dense_weight_scale(options.dense_weight_scale);
  criteo->set_first(first);
  criteo->set_count(count);
  criteo->set_batch_size(batch_size);
  criteo->set_drop_remainder(drop_remainder);
  return DescribedAs(generated, std::move(def));
}

}  // namespace weft::data
