// Definitions of the op objects declared in flambeau/ops.h (Note [Dispatch]).
// Kernels register themselves from src/cpu/*.cpp.
#include "flambeau/ops.h"

namespace flambeau::op {

Op<Tensor(IntArrayRef sizes, ScalarType dtype, Device device)> empty{"empty"};
Op<Tensor&(Tensor& self, const Scalar& value)> fill_{"fill_"};
Op<Tensor(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype, Device device)>
    arange{"arange"};
Op<Tensor&(Tensor& self, double low, double high, Generator* gen)> uniform_{"uniform_"};
Op<Tensor&(Tensor& self, double mean, double std, Generator* gen)> normal_{"normal_"};
Op<Tensor(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset)> as_strided{
    "as_strided"};
Op<Tensor(const Tensor& self, IntArrayRef sizes)> view{"view"};
Op<Tensor(const Tensor& self, IntArrayRef dims)> permute{"permute"};
Op<Tensor(const Tensor& self, int64_t dim0, int64_t dim1)> transpose{"transpose"};
Op<Tensor(const Tensor& self, int64_t dim)> unsqueeze{"unsqueeze"};
Op<Tensor(const Tensor& self, IntArrayRef dims)> squeeze{"squeeze"};
Op<Tensor(const Tensor& self, IntArrayRef sizes)> expand{"expand"};
Op<Tensor(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
          int64_t step)>
    slice{"slice"};
Op<Tensor(const Tensor& self, int64_t dim, int64_t index)> select{"select"};
Op<Tensor&(Tensor& self, const Tensor& src)> copy_{"copy_"};
Op<Tensor(const Tensor& self)> clone{"clone"};
Op<Tensor(const Tensor& self, ScalarType dtype)> cast{"cast"};
Op<Tensor(const Tensor& a, const Tensor& b, const Scalar& alpha)> add{"add"};
Op<Tensor(const Tensor& a, const Tensor& b, const Scalar& alpha)> sub{"sub"};
Op<Tensor(const Tensor& a, const Tensor& b)> mul{"mul"};
Op<Tensor(const Tensor& a, const Tensor& b)> div{"div"};
Op<Tensor(const Tensor& a, const Tensor& b)> pow{"pow"};
Op<Tensor(const Tensor& a, const Tensor& b)> maximum{"maximum"};
Op<Tensor(const Tensor& a, const Tensor& b)> minimum{"minimum"};
Op<Tensor(const Tensor& a, const Tensor& b)> eq{"eq"};
Op<Tensor(const Tensor& a, const Tensor& b)> ne{"ne"};
Op<Tensor(const Tensor& a, const Tensor& b)> lt{"lt"};
Op<Tensor(const Tensor& a, const Tensor& b)> le{"le"};
Op<Tensor(const Tensor& a, const Tensor& b)> gt{"gt"};
Op<Tensor(const Tensor& a, const Tensor& b)> ge{"ge"};
Op<Tensor(const Tensor& cond, const Tensor& a, const Tensor& b)> where{"where"};
Op<Tensor(const Tensor& self)> neg{"neg"};
Op<Tensor(const Tensor& self)> exp{"exp"};
Op<Tensor(const Tensor& self)> log{"log"};
Op<Tensor(const Tensor& self)> tanh{"tanh"};
Op<Tensor(const Tensor& self)> sigmoid{"sigmoid"};
Op<Tensor(const Tensor& self)> relu{"relu"};
Op<Tensor(const Tensor& self)> sqrt{"sqrt"};
Op<Tensor(const Tensor& self)> abs{"abs"};
Op<Tensor&(Tensor& self, const Tensor& other, const Scalar& alpha)> add_{"add_"};
Op<Tensor&(Tensor& self, const Tensor& other, const Scalar& alpha)> sub_{"sub_"};
Op<Tensor&(Tensor& self, const Tensor& other)> mul_{"mul_"};
Op<Tensor&(Tensor& self, const Tensor& other)> div_{"div_"};
Op<Tensor(const Tensor& self, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype)> sum{"sum"};
Op<Tensor(const Tensor& self)> max{"max"};
Op<std::tuple<Tensor, Tensor>(const Tensor& self, int64_t dim, bool keepdim)> max_dim{"max_dim"};
Op<Tensor(const Tensor& self, std::optional<int64_t> dim, bool keepdim)> argmax{"argmax"};
Op<Tensor(const Tensor& a, const Tensor& b)> mm{"mm"};
Op<Tensor(const Tensor& a, const Tensor& b)> bmm{"bmm"};
Op<Tensor(const Tensor& self, int64_t dim)> log_softmax{"log_softmax"};
Op<Tensor(const TensorList& tensors, int64_t dim)> cat{"cat"};
Op<Tensor(const Tensor& self, int64_t dim, const Tensor& index)> gather{"gather"};
Op<Tensor(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src)> scatter_add{
    "scatter_add"};

}  // namespace flambeau::op
