// The global random seed, after the reference's tf.random.set_seed / keras.utils.set_random_seed:
// the seed from which every random initializer and Dropout layer of a model that has no seed of
// its own derives one, so that a program run twice trains the same way.
//
// Which seed a model uses: CompileOptions::seed when given, else the global seed as it is when
// the model builds its graph; with neither, random initializers and dropout masks differ from
// run to run (the reference's default: random unless a seed is set). An initializer or a Dropout
// given a nonzero seed of its own keeps it.
//
// The seed of each variable and op is derived from the model's seed and the name of the variable
// ("dense_1/kernel") or of the layer, not from a counter of ops made so far, so adding a layer
// elsewhere in a model leaves every other layer's initial values as they were. Layer names are
// counted per model (layer.h), so the same architecture built twice, in one process or two, gets
// the same names and the same values.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace weft::train {

// Sets the global seed (any value; 0 is a seed like another), or clears it.
void SetRandomSeed(int64_t seed);
void ClearRandomSeed();
// The global seed; nullopt when none is set.
std::optional<int64_t> GlobalRandomSeed();

// The seed of the variable or op named `name` under the model seed `seed`: a nonzero value that
// depends only on both (a stable 64-bit hash), the same in every process and build.
int64_t DeriveSeed(int64_t seed, std::string_view name);

}  // namespace weft::train
