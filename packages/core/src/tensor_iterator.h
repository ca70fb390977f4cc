#pragma once
// The iterator is public (Note [TensorIterator]): device backends build their
// launchers on the same description. Core's sources keep this include.
#include "flambeau/tensor_iterator.h"
