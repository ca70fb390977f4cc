#include "common.h"

namespace flambeau::python {

void init_math(py::module_& m) { (void)m; }

}  // namespace flambeau::python
