#pragma once
// The pooling shape rules are public (flambeau/pool_shape.h): the CUDA
// kernels (flambeau-cuda's src/pool.cpp) check with the same code.
#include "flambeau/pool_shape.h"
