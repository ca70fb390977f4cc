#pragma once
// The forward (JVP) formulas of the linear-algebra entries of derivatives.yaml
// that need more than one expression (Note [Forward formulas] in
// codegen/gen_autograd.py). Written with core ops, like formula_helpers.h.
#include "formula_helpers.h"

namespace flambeau::autograd::formulas {}  // namespace flambeau::autograd::formulas
