#include "common.h"

namespace flambeau::python {

void init_factories(py::module_& m) { (void)m; }

}  // namespace flambeau::python
