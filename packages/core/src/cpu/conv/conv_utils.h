#pragma once
// The convolution checks and shapes are public (flambeau/conv_utils.h): the
// CUDA kernels (flambeau-cuda's src/conv.cpp) check with the same code.
#include "flambeau/conv_utils.h"
