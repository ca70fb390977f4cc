#pragma once
// Symbol visibility for libflambeau_core.so. Every type that crosses a module
// boundary (core -> alloc/autograd/interop extensions) is exported, so that its
// typeinfo and vtable are unique in the process.
#define FB_API __attribute__((visibility("default")))
