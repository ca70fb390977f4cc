#pragma once
// The DLPack exchange structures (DLPack 1.x ABI), declared here from the
// published specification (https://dmlc.github.io/dlpack/latest/c_api.html).
// Only the layout is shared with other frameworks; the field order, types and
// enumerator values below are that ABI and must never change.
//
// Note [DLPack capsules]
// A producer's `__dlpack__` returns a PyCapsule holding a managed tensor:
//  * named "dltensor" holding a DLManagedTensor (legacy, before DLPack 1.0), or
//  * named "dltensor_versioned" holding a DLManagedTensorVersioned (1.0+),
//    returned only when the consumer passed max_version >= (1, 0).
// A consumer that takes the tensor renames the capsule to "used_dltensor" /
// "used_dltensor_versioned" and becomes responsible for calling the managed
// tensor's deleter exactly once, when it no longer needs the memory. The
// capsule's own destructor calls the deleter only if the capsule was never
// consumed (its name is still the unused one).
#include <cstddef>
#include <cstdint>

extern "C" {

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

// Device types (values fixed by the ABI).
enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
};

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

// Type codes of DLDataType::code (values fixed by the ABI).
enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

struct DLDataType {
  uint8_t code;    // a DLDataTypeCode
  uint8_t bits;    // bits per lane: 8, 16, 32, 64
  uint16_t lanes;  // 1 for a scalar element type
};

struct DLTensor {
  void* data;  // the element at index 0 lives at data + byte_offset
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;    // ndim entries
  int64_t* strides;  // ndim entries, in elements; NULL means compact row-major (legacy)
  uint64_t byte_offset;
};

// Legacy managed tensor, carried by a "dltensor" capsule.
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);  // frees self too; may be NULL
};

// Flags of DLManagedTensorVersioned::flags.
inline constexpr uint64_t kDLPackFlagReadOnly = 1ull << 0;
inline constexpr uint64_t kDLPackFlagIsCopied = 1ull << 1;

// Versioned managed tensor, carried by a "dltensor_versioned" capsule. Every
// field up to and including `flags` keeps its place in all future versions, so
// that a consumer can always read the version and call the deleter.
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);  // frees self too; may be NULL
  uint64_t flags;
  DLTensor dl_tensor;
};

}  // extern "C"

namespace flambeau::interop {
// The DLPack version flambeau produces and the newest major it consumes.
inline constexpr uint32_t kDLPackMajor = 1;
inline constexpr uint32_t kDLPackMinor = 0;

inline constexpr const char* kCapsuleLegacy = "dltensor";
inline constexpr const char* kCapsuleLegacyUsed = "used_dltensor";
inline constexpr const char* kCapsuleVersioned = "dltensor_versioned";
inline constexpr const char* kCapsuleVersionedUsed = "used_dltensor_versioned";
}  // namespace flambeau::interop

// The ABI, checked (LP64).
static_assert(sizeof(DLDataType) == 4);
static_assert(sizeof(DLDevice) == 8);
static_assert(sizeof(void*) != 8 || sizeof(DLTensor) == 48);
static_assert(sizeof(void*) != 8 || offsetof(DLManagedTensor, deleter) == 56);
static_assert(sizeof(void*) != 8 || offsetof(DLManagedTensorVersioned, flags) == 24);
static_assert(sizeof(void*) != 8 || offsetof(DLManagedTensorVersioned, dl_tensor) == 32);
