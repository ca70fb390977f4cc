#pragma once
// Note [Autograd slot]
// Core defines the interface of a tensor's autograd metadata; flambeau-autograd
// implements it and registers a factory when imported. Without it, tensors
// never require grad and `requires_grad=True` raises a RuntimeError naming the
// missing package. The dispatcher asks `needs_autograd()` to decide whether a
// call goes through the Autograd layer (Note [Dispatch] in dispatch.h): a
// tensor that requires grad, or one that carries a forward-mode tangent
// (Note [Forward-mode AD] in flambeau-autograd's engine.h).
#include <memory>

#include "flambeau/macros.h"

namespace flambeau {

class Tensor;
class TensorImpl;

class FB_API AutogradMetaInterface {
 public:
  virtual ~AutogradMetaInterface() = default;
  /// True for a leaf with requires_grad set, or for any tensor with a grad_fn.
  virtual bool requires_grad() const = 0;
  virtual void set_requires_grad(bool value, TensorImpl* self) = 0;
  virtual const Tensor& grad() const = 0;
  virtual void set_grad(const Tensor& grad) = 0;
  virtual bool is_leaf() const = 0;
  /// True if calls on this tensor go through the Autograd layer: requires_grad(), or a tangent of
  /// the active forward-mode level.
  virtual bool needs_autograd() const { return requires_grad(); }
};

class FB_API AutogradMetaFactory {
 public:
  virtual ~AutogradMetaFactory() = default;
  virtual std::unique_ptr<AutogradMetaInterface> make() const = 0;
};

/// Called by flambeau-autograd when imported. The factory must outlive core's use
/// of it (autograd registers a static object and never unregisters).
FB_API void set_autograd_meta_factory(const AutogradMetaFactory* factory);
FB_API const AutogradMetaFactory* autograd_meta_factory();

}  // namespace flambeau
