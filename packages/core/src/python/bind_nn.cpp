#include "common.h"

namespace flambeau::python {

void init_nn(py::module_& m) { (void)m; }

}  // namespace flambeau::python
