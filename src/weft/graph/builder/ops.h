// Everything a model author includes to build graphs: Scope, Input/Output and every ops:: builder.
#pragma once

#include "weft/graph/builder/node_builder.h"
#include "weft/graph/builder/ops/array_ops.h"
#include "weft/graph/builder/ops/collective_ops.h"
#include "weft/graph/builder/ops/io_ops.h"
#include "weft/graph/builder/ops/math_ops.h"
#include "weft/graph/builder/ops/nn_ops.h"
#include "weft/graph/builder/ops/random_ops.h"
#include "weft/graph/builder/ops/state_ops.h"
#include "weft/graph/builder/ops/training_ops.h"
#include "weft/graph/builder/scope.h"
