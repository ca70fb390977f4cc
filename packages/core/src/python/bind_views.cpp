#include "common.h"

namespace flambeau::python {

void init_views(py::module_& m) { (void)m; }

}  // namespace flambeau::python
