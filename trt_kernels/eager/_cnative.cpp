// trt_kernels' native eager kernel: the function torch's dispatcher calls for an op's CUDA key
// without entering Python, for the calls whose launch it can prove equal to the Python one.
//
// Built on an op's first declaration (trt_kernels/eager/native.py) with the system C++ compiler against
// Python's headers and the pybind11 headers torch ships (for pybind11::error_already_set, the
// exception with which a Python kernel's error travels through torch's dispatcher unchanged).
// Everything else goes through torch's stable C ABI (the aoti_torch_* functions), resolved at
// load from the torch libraries the process already has: nothing is linked, no CUDA or ATen
// header is used. One thing that ABI lacks is a tensor's requires_grad: it is read through
// c10::TensorImpl::requires_grad() (exported by libc10), on the TensorImpl an AtenTensorHandle's
// at::Tensor points to (its only member).
//
// An op's kernel is one of a fixed pool of trampolines (the C ABI passes a kernel no context),
// each bound to a slot. A slot holds the op's Python kernel (trt_kernels' dispatcher function)
// and a program: per (input dtypes, ranks) seen so far, what the Python launcher for that key
// computes, as a small bytecode (size expressions and checks), the output allocations and the
// kernel parameters. A call is launched here only when every check passes (same device,
// contiguous inputs, no input requiring grad where the op has no backward, sizes in range, a
// non-empty grid, scalars that fit, a CUfunction loaded for the device); in every other case,
// including a failed launch, the call goes to the Python kernel, which does everything again and
// raises this package's errors, and its exception is rethrown to torch unchanged. So this code
// never decides an error; it only skips Python where the answer is known to be a launch.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pybind11/pybind11.h>

#include <dlfcn.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#define TRTK_NATIVE_ABI 2

namespace {

using StableIValue = uint64_t;
using AtenTensorHandle = void*;
using TorchLibraryHandle = void*;
using Err = int32_t;

// the stable C ABI functions used (signatures as torch/csrc/inductor/aoti_torch/c/shim.h declares them)
struct Api {
  Err (*get_numel)(AtenTensorHandle, int64_t*);
  Err (*get_dim)(AtenTensorHandle, int64_t*);
  Err (*get_sizes)(AtenTensorHandle, int64_t**);
  Err (*get_strides)(AtenTensorHandle, int64_t**);
  Err (*get_dtype)(AtenTensorHandle, int32_t*);
  Err (*get_device_type)(AtenTensorHandle, int32_t*);
  Err (*get_device_index)(AtenTensorHandle, int32_t*);
  Err (*get_data_ptr)(AtenTensorHandle, void**);
  Err (*is_contiguous)(AtenTensorHandle, bool*);
  Err (*empty_strided)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t, AtenTensorHandle*);
  Err (*delete_tensor)(AtenTensorHandle);
  bool (*grad_mode_is_enabled)();
  Err (*library_init_impl)(const char*, const char*, const char*, uint32_t, TorchLibraryHandle*);
  Err (*library_impl)(TorchLibraryHandle, const char*, void (*)(StableIValue*, uint64_t, uint64_t));
  Err (*delete_library)(TorchLibraryHandle);
  Err (*cuda_stream)(int32_t, void**);  // NULL in a torch without CUDA
  bool (*requires_grad)(const void* tensor_impl);  // c10::TensorImpl::requires_grad() const
};
Api api;
const char* api_missing = "not resolved yet";

using LaunchFn = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                         void**);

constexpr int kMaxTensors = 16, kMaxRank = 16, kMaxParams = 64, kMaxOutputs = 8, kMaxRegs = 256, kMaxDevices = 64;
constexpr int kSlots = 1024;

// argument kinds and bytecode
enum Kind : int { kTensor = 0, kFloat = 1, kInt = 2, kBool = 3 };
enum Op : int64_t {
  OP_CONST = 1, OP_NUMEL, OP_DIM, OP_SCALAR, OP_ADD, OP_SUB, OP_MUL, OP_FLOORDIV, OP_CDIV, OP_MAX, OP_MIN,
  OP_STORE, OP_CHECK_EQ, OP_CHECK_SHAPE
};
// where a kernel parameter comes from; SRC_NULL: a pointer the compiler appended (Triton's scratch) that is NULL
enum Src : int { SRC_TENSOR = 0, SRC_SCALAR = 1, SRC_REG = 2, SRC_OUTPUT = 3, SRC_NULL = 4 };

struct Param {
  char code;
  int src, index;
};
// a value the kernel's code is specialized on (trt_kernels/recipe.py's spec_key: the same bits, in order)
enum Fact : int { FACT_ALIGNED = 1, FACT_ONE = 2 };
struct SpecEntry {
  int src, index, flags;
};
struct Output {
  int like;  // tensor input index whose sizes and strides it takes, or -1: contiguous, dims from registers
  int32_t dtype;
  int ndim;
  int dims[kMaxRank];
};
struct Variant {
  int32_t dtypes[kMaxTensors];
  int64_t ranks[kMaxTensors];
  std::vector<int64_t> code;
  int extras[kMaxParams], n_extras;
  int grid[3], smem;
  unsigned block[3];
  Output outs[kMaxOutputs];
  Param params[kMaxParams];  // the values the code takes (those its key folds into the code left out)
  int n_params;
  SpecEntry spec[kMaxParams];  // what the key is computed from (none: one code for every call)
  int n_spec;
  uint64_t key;  // the specialization key this variant's code was compiled for
  int64_t min_smem;  // the dynamic shared memory the code itself needs (a launch passes at least this)
  LaunchFn entry;
  std::atomic<void*> funcs[kMaxDevices];
  PyObject* handles;  // the LoadedKernel's {device: CUfunction} dict (GIL), or NULL once let go of
};
struct Program {  // immutable once published
  int nargs = 0, ntensors = 0, nout = 0;
  int kinds[kMaxParams];
  int tpos[kMaxTensors];
  int spos[kMaxParams];
  bool no_backward = false;
  std::vector<Variant*> variants;
};
struct Slot {
  std::atomic<Program*> prog{nullptr};
  PyObject* slow = nullptr;  // the Python kernel
  TorchLibraryHandle lib = nullptr;
  int32_t device_type = 1;
  bool used = false;
  std::atomic<uint64_t> launches{0};  // calls launched here (not handed to Python)
};

Slot slots[kSlots];
std::vector<Program*> retired;  // programs replaced while calls may still read them: kept (small)
std::vector<Variant*> all_variants;
int next_slot = 0;
PyObject* steal_fn = nullptr;  // torch._C._aoti.alloc_tensor_by_stealing_from_void_ptr
PyObject* alloc_fn = nullptr;  // torch._C._aoti.unsafe_alloc_void_ptr_from_tensor

// test hooks: a launch function that records what it was given
thread_local int record_n = 0;
std::mutex record_mu;
std::vector<uint64_t> recorded;
int record_result = 0;

int record_launch(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sm,
                  void* stream, void** params, void**) {
  std::lock_guard<std::mutex> g(record_mu);
  recorded.assign({(uint64_t)(uintptr_t)f, gx, gy, gz, bx, by, bz, sm, (uint64_t)(uintptr_t)stream});
  for (int i = 0; i < record_n; i++) {
    uint64_t v = 0;
    std::memcpy(&v, params[i], 8);
    recorded.push_back(v);
  }
  return record_result;
}

// ---------------- the fast path ----------------

inline bool add_ok(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }
inline bool sub_ok(int64_t a, int64_t b, int64_t* r) { return !__builtin_sub_overflow(a, b, r); }
inline bool mul_ok(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }

bool floordiv(int64_t a, int64_t b, int64_t* r) {  // Python's a // b
  if (b == 0 || (a == INT64_MIN && b == -1)) return false;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  *r = q;
  return true;
}

struct Call {
  AtenTensorHandle t[kMaxTensors];
  int64_t dim[kMaxTensors];
  int64_t* sizes[kMaxTensors];
  int64_t regs[kMaxRegs];
};

bool run_code(const Variant& v, const Program& p, const StableIValue* stack, Call& c) {
  int64_t st[64];
  int sp = 0;
  const int64_t* code = v.code.data();
  const size_t n = v.code.size();
  for (size_t i = 0; i < n;) {
    int64_t op = code[i++], a, b, r = 0;
    switch (op) {
      case OP_CONST:
        if (sp >= 64) return false;
        st[sp++] = code[i++];
        break;
      case OP_NUMEL: {
        if (sp >= 64) return false;
        int64_t numel;
        if (api.get_numel(c.t[code[i++]], &numel)) return false;
        st[sp++] = numel;
        break;
      }
      case OP_DIM: {
        int64_t t = code[i++], axis = code[i++];
        if (axis < 0) axis += c.dim[t];
        if (axis < 0 || axis >= c.dim[t] || sp >= 64) return false;
        st[sp++] = c.sizes[t][axis];
        break;
      }
      case OP_SCALAR: {  // an int scalar read by a size: its C int range first, as the Python launcher checks
        int64_t s = code[i++];
        int64_t val = (int64_t)stack[p.spos[s]];
        if (val < INT32_MIN || val > INT32_MAX || sp >= 64) return false;
        st[sp++] = val;
        break;
      }
      case OP_STORE:
        if (sp < 1) return false;
        c.regs[code[i++]] = st[--sp];
        break;
      case OP_CHECK_SHAPE: {
        int64_t t1 = code[i++], t2 = code[i++];
        if (c.dim[t1] != c.dim[t2]) return false;
        for (int64_t d = 0; d < c.dim[t1]; d++)
          if (c.sizes[t1][d] != c.sizes[t2][d]) return false;
        break;
      }
      default: {
        if (sp < 2) return false;
        b = st[--sp];
        a = st[--sp];
        switch (op) {
          case OP_ADD: if (!add_ok(a, b, &r)) return false; break;
          case OP_SUB: if (!sub_ok(a, b, &r)) return false; break;
          case OP_MUL: if (!mul_ok(a, b, &r)) return false; break;
          case OP_FLOORDIV: if (!floordiv(a, b, &r)) return false; break;
          case OP_CDIV: {  // -(-a // b)
            if (a == INT64_MIN || !floordiv(-a, b, &r) || r == INT64_MIN) return false;
            r = -r;
            break;
          }
          case OP_MAX: r = a > b ? a : b; break;
          case OP_MIN: r = a < b ? a : b; break;
          case OP_CHECK_EQ: if (a != b) return false; continue;
          default: return false;
        }
        st[sp++] = r;
      }
    }
  }
  return true;
}

bool pack_scalar(char code, StableIValue raw, int kind, uint64_t* slot) {
  *slot = 0;
  if (kind == kFloat) {
    double d;
    std::memcpy(&d, &raw, 8);
    if (code != 'f') return false;
    float f = (float)d;
    if (std::isinf(f) && std::isfinite(d)) return false;  // struct.pack('f') refuses it
    std::memcpy(slot, &f, 4);
    return true;
  }
  int64_t v = kind == kBool ? (int64_t)(raw & 0xFF ? 1 : 0) : (int64_t)raw;
  switch (code) {
    case 'q': case 'Q': if (code == 'Q' && v < 0) return false; std::memcpy(slot, &v, 8); return true;
    case 'i': if (v < INT32_MIN || v > INT32_MAX) return false; { int32_t x = (int32_t)v; std::memcpy(slot, &x, 4); } return true;
    case 'I': if (v < 0 || v > (int64_t)UINT32_MAX) return false; { uint32_t x = (uint32_t)v; std::memcpy(slot, &x, 4); } return true;
    case 'h': if (v < INT16_MIN || v > INT16_MAX) return false; { int16_t x = (int16_t)v; std::memcpy(slot, &x, 2); } return true;
    case 'H': if (v < 0 || v > UINT16_MAX) return false; { uint16_t x = (uint16_t)v; std::memcpy(slot, &x, 2); } return true;
    case 'b': if (v < INT8_MIN || v > INT8_MAX) return false; { int8_t x = (int8_t)v; std::memcpy(slot, &x, 1); } return true;
    case 'B': if (v < 0 || v > UINT8_MAX) return false; { uint8_t x = (uint8_t)v; std::memcpy(slot, &x, 1); } return true;
    case '?': { uint8_t x = v ? 1 : 0; std::memcpy(slot, &x, 1); } return true;
    default: return false;
  }
}

const int64_t kGridLimits[3] = {2147483647, 65535, 65535};

// Launch the call here if every check passes; false (nothing changed on the stack) otherwise.
bool fast(const Slot& s, const Program& p, StableIValue* stack, uint64_t nret) {
  if ((int)nret != p.nout) return false;
  Call c;
  int32_t dev = -1, dtypes[kMaxTensors];
  for (int i = 0; i < p.ntensors; i++) {
    AtenTensorHandle h = (AtenTensorHandle)(uintptr_t)stack[p.tpos[i]];
    int32_t dt, di;
    bool contig;
    if (!h || api.get_device_type(h, &dt) || dt != s.device_type || api.get_device_index(h, &di)) return false;
    if (i == 0) dev = di; else if (di != dev) return false;
    if (api.is_contiguous(h, &contig) || !contig || api.get_dtype(h, &dtypes[i]) || api.get_dim(h, &c.dim[i]))
      return false;
    if (c.dim[i] > kMaxRank || api.get_sizes(h, &c.sizes[i])) return false;
    c.t[i] = h;
  }
  const int32_t alloc_dev = dev;  // what allocations name (-1 for the CPU device the tests use)
  if (s.device_type == 0 && dev < 0) dev = 0;
  if (dev < 0 || dev >= kMaxDevices) return false;
  const Variant* v = nullptr;
  for (const Variant* cand : p.variants) {
    bool same = true;
    for (int i = 0; i < p.ntensors && same; i++) same = cand->dtypes[i] == dtypes[i] && cand->ranks[i] == c.dim[i];
    if (same) { v = cand; break; }
  }
  if (!v) return false;
  if (!v->entry) return false;
  if (p.no_backward && api.grad_mode_is_enabled()) {  // the Python kernel refuses it, naming the op
    for (int i = 0; i < p.ntensors; i++)
      if (api.requires_grad(*static_cast<void* const*>(c.t[i]))) return false;
  }
  if (!run_code(*v, p, stack, c)) return false;
  for (int i = 0; i < v->n_extras; i++) {
    int64_t x = c.regs[v->extras[i]];
    if (x < INT32_MIN || x > INT32_MAX) return false;
  }
  int64_t g[3];
  for (int k = 0; k < 3; k++) {
    g[k] = c.regs[v->grid[k]];
    if (g[k] < 1 || g[k] > kGridLimits[k]) return false;  // empty or too large: the Python kernel decides
  }
  int64_t sm = c.regs[v->smem];
  if (sm < 0 || sm > (int64_t)UINT32_MAX) return false;
  uint64_t slots_[kMaxParams];
  void* argv[kMaxParams];
  for (int i = 0; i < v->n_params; i++) {  // scalars first: nothing is allocated for a call that goes to Python
    const Param& q = v->params[i];
    if (q.src == SRC_SCALAR && !pack_scalar(q.code, stack[p.spos[q.index]], p.kinds[p.spos[q.index]], &slots_[i]))
      return false;
  }
  int64_t sizes[kMaxOutputs][kMaxRank], strides[kMaxRank];
  for (int o = 0; o < p.nout; o++) {
    const Output& out = v->outs[o];
    if (out.like >= 0) continue;
    int64_t n = 1;
    for (int d = 0; d < out.ndim; d++) {
      sizes[o][d] = c.regs[out.dims[d]];
      if (sizes[o][d] < 0 || !mul_ok(n, sizes[o][d], &n)) return false;
    }
  }
  AtenTensorHandle outs[kMaxOutputs] = {};
  void* ptrs[kMaxOutputs];
  auto drop = [&]() {
    for (int o = 0; o < p.nout; o++)
      if (outs[o]) api.delete_tensor(outs[o]);
  };
  for (int o = 0; o < p.nout; o++) {
    const Output& out = v->outs[o];
    Err e;
    if (out.like >= 0) {  // torch.empty_like of a contiguous input: its sizes and strides
      int64_t* like_strides;
      if (api.get_strides(c.t[out.like], &like_strides)) { drop(); return false; }
      e = api.empty_strided(c.dim[out.like], c.sizes[out.like], like_strides, out.dtype, s.device_type, alloc_dev,
                            &outs[o]);
    } else {
      int64_t stride = 1;
      for (int d = out.ndim - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= sizes[o][d] > 1 ? sizes[o][d] : 1;
      }
      e = api.empty_strided(out.ndim, sizes[o], strides, out.dtype, s.device_type, alloc_dev, &outs[o]);
    }
    if (e || api.get_data_ptr(outs[o], &ptrs[o])) { drop(); return false; }
  }
  if (v->n_spec) {  // the code compiled for this call's key: one of the variants of the same dtypes and ranks
    uint64_t key = 0;
    int bit = 0;
    for (int j = 0; j < v->n_spec; j++) {
      const SpecEntry& q = v->spec[j];
      int64_t val;
      void* ptr;
      switch (q.src) {
        case SRC_TENSOR:
          if (api.get_data_ptr(c.t[q.index], &ptr)) { drop(); return false; }
          val = (int64_t)(uintptr_t)ptr;
          break;
        case SRC_OUTPUT: val = (int64_t)(uintptr_t)ptrs[q.index]; break;
        case SRC_REG: val = c.regs[q.index]; break;
        case SRC_SCALAR: val = (int64_t)stack[p.spos[q.index]]; break;
        default: drop(); return false;
      }
      if (q.flags & FACT_ALIGNED) key |= (uint64_t)((val & 15) == 0) << bit++;
      if (q.flags & FACT_ONE) key |= (uint64_t)(val == 1) << bit++;
    }
    if (key != v->key) {
      const Variant* same = nullptr;
      for (const Variant* cand : p.variants) {
        if (cand->key != key || !cand->n_spec) continue;
        bool eq = true;
        for (int i = 0; i < p.ntensors && eq; i++) eq = cand->dtypes[i] == v->dtypes[i] && cand->ranks[i] == v->ranks[i];
        if (eq) { same = cand; break; }
      }
      if (!same) { drop(); return false; }  // a key not seen yet: the Python kernel compiles its code
      v = same;
    }
  }
  void* func = v->funcs[dev].load(std::memory_order_acquire);
  if (!func || !v->entry) { drop(); return false; }
  if (sm < v->min_smem) sm = v->min_smem;
  for (int i = 0; i < v->n_params; i++) {
    const Param& q = v->params[i];
    void* ptr;
    argv[i] = &slots_[i];
    switch (q.src) {
      case SRC_TENSOR:
        if (api.get_data_ptr(c.t[q.index], &ptr)) { drop(); return false; }
        slots_[i] = (uint64_t)(uintptr_t)ptr;
        break;
      case SRC_OUTPUT: slots_[i] = (uint64_t)(uintptr_t)ptrs[q.index]; break;
      case SRC_NULL: slots_[i] = 0; break;
      case SRC_REG: {
        StableIValue raw = (StableIValue)c.regs[q.index];
        if (!pack_scalar(q.code, raw, kInt, &slots_[i])) { drop(); return false; }
        break;
      }
      case SRC_SCALAR:
        if (!pack_scalar(q.code, stack[p.spos[q.index]], p.kinds[p.spos[q.index]], &slots_[i])) { drop(); return false; }
        break;
      default: drop(); return false;
    }
  }
  void* stream = nullptr;
  if (s.device_type == 1 && (!api.cuda_stream || api.cuda_stream(dev, &stream))) { drop(); return false; }
  record_n = v->n_params;
  int err = v->entry(func, (unsigned)g[0], (unsigned)g[1], (unsigned)g[2], v->block[0], v->block[1], v->block[2],
                     (unsigned)sm, stream, argv, nullptr);
  if (err) { drop(); return false; }  // the Python kernel launches again: retries, or raises LaunchError
  for (int i = 0; i < p.ntensors; i++) api.delete_tensor(c.t[i]);
  for (int i = 0; i < p.nargs; i++) stack[i] = 0;
  for (int o = 0; o < p.nout; o++) stack[o] = (StableIValue)(uintptr_t)outs[o];
  const_cast<Slot&>(s).launches.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// ---------------- the Python kernel ----------------

struct Gil {
  PyGILState_STATE st;
  Gil() : st(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(st); }
};

[[noreturn]] void raise_python() {  // with the GIL: the pending Python exception, to torch
  pybind11::error_already_set e;
  throw e;
}

void* capsule_ptr(PyObject* cap) {
  if (!PyCapsule_CheckExact(cap)) {
    PyErr_SetString(PyExc_TypeError, "trt_kernels native kernel: torch gave no tensor handle");
    return nullptr;
  }
  return PyCapsule_GetPointer(cap, PyCapsule_GetName(cap));
}

// (GIL) the CUfunctions of the devices the variant's kernel has been loaded on, from its {device: handle} dict
void fill_funcs(Variant* v) {
  if (!v->handles) return;
  PyObject *key, *val;
  Py_ssize_t pos = 0;
  while (PyDict_Next(v->handles, &pos, &key, &val)) {
    long long d = PyLong_AsLongLong(key);
    unsigned long long f = PyLong_AsUnsignedLongLong(val);
    if (PyErr_Occurred()) { PyErr_Clear(); continue; }
    if (d >= 0 && d < kMaxDevices && f && !v->funcs[d].load()) v->funcs[d].store((void*)(uintptr_t)f);
  }
}

void slow(Slot& s, StableIValue* stack, uint64_t nargs, uint64_t nret) {
  PyObject *args = nullptr, *res = nullptr;
  {
    Gil gil;
    Program* p = s.prog.load(std::memory_order_acquire);
    int n = (int)nargs;
    args = PyTuple_New(n);
    bool failed = args == nullptr;
    for (int i = 0; i < n; i++) {
      PyObject* o = nullptr;
      int kind = (p && i < p->nargs) ? p->kinds[i] : kTensor;
      if (failed) {  // a conversion failed: the handles not handed over are freed here
        if (kind == kTensor && stack[i]) api.delete_tensor((AtenTensorHandle)(uintptr_t)stack[i]);
        continue;
      }
      if (kind == kTensor) {
        PyObject* cap = PyCapsule_New((void*)(uintptr_t)stack[i], nullptr, nullptr);
        o = cap ? PyObject_CallOneArg(steal_fn, cap) : nullptr;  // the tensor takes the handle
        Py_XDECREF(cap);
        if (!o && cap == nullptr) api.delete_tensor((AtenTensorHandle)(uintptr_t)stack[i]);
      } else if (kind == kFloat) {
        double d;
        std::memcpy(&d, &stack[i], 8);
        o = PyFloat_FromDouble(d);
      } else if (kind == kInt) {
        o = PyLong_FromLongLong((long long)stack[i]);
      } else {
        o = PyBool_FromLong((long)(stack[i] & 0xFF));
      }
      stack[i] = 0;
      if (!o) { failed = true; continue; }
      PyTuple_SET_ITEM(args, i, o);
    }
    if (!failed && !s.slow) {  // released while this call waited for the GIL
      PyErr_SetString(PyExc_RuntimeError, "trt_kernels: this op's kernels were removed while it was called");
      failed = true;
    }
    if (failed) { Py_XDECREF(args); raise_python(); }
    res = PyObject_Call(s.slow, args, nullptr);
    Py_DECREF(args);
    if (!res) raise_python();
    // a device the call loaded the kernel for: its CUfunction, for the next calls
    if (p)
      for (Variant* v : p->variants) fill_funcs(v);
    std::vector<void*> handles;
    auto take = [&](PyObject* t) -> bool {
      PyObject* cap = PyObject_CallOneArg(alloc_fn, t);
      if (!cap) return false;
      void* h = capsule_ptr(cap);
      Py_DECREF(cap);
      if (!h) return false;
      handles.push_back(h);
      return true;
    };
    bool ok = true;
    if (nret == 1) {
      ok = take(res);
    } else if (PyTuple_Check(res) && (uint64_t)PyTuple_GET_SIZE(res) == nret) {
      for (uint64_t i = 0; i < nret && ok; i++) ok = take(PyTuple_GET_ITEM(res, i));
    } else {
      PyErr_Format(PyExc_RuntimeError, "trt_kernels native kernel: the Python kernel returned %R, not %d tensors",
                   (PyObject*)Py_TYPE(res), (int)nret);
      ok = false;
    }
    Py_DECREF(res);
    if (!ok) {
      for (void* h : handles) api.delete_tensor(h);
      raise_python();
    }
    for (uint64_t i = 0; i < nret; i++) stack[i] = (StableIValue)(uintptr_t)handles[i];
  }
}

[[gnu::noinline]] void run(Slot& s, StableIValue* stack, uint64_t nargs, uint64_t nret) {
  Program* p = s.prog.load(std::memory_order_acquire);
  if (p && !p->variants.empty() && (int)nargs == p->nargs && fast(s, *p, stack, nret)) return;
  slow(s, stack, nargs, nret);
}

template <int I>
void trampoline(StableIValue* stack, uint64_t nargs, uint64_t nret) {
  run(slots[I], stack, nargs, nret);
}

using Kernel = void (*)(StableIValue*, uint64_t, uint64_t);
template <std::size_t... I>
constexpr std::array<Kernel, sizeof...(I)> make_pool(std::index_sequence<I...>) {
  return {&trampoline<(int)I>...};
}
constexpr auto pool = make_pool(std::make_index_sequence<kSlots>{});

// ---------------- Python interface (all with the GIL) ----------------

void* sym(void* lib, const char* name) { return lib ? dlsym(lib, name) : nullptr; }

template <typename F>
bool bind(F& f, void* lib, const char* name) {
  f = reinterpret_cast<F>(sym(lib, name));
  if (!f) api_missing = name;
  return f != nullptr;
}

bool resolve(const char* c10_path, const char* cpu_path, const char* cuda_path) {
  void* c10 = dlopen(c10_path, RTLD_NOW | RTLD_NOLOAD);
  void* cpu = dlopen(cpu_path, RTLD_NOW | RTLD_NOLOAD);
  void* cuda = cuda_path && *cuda_path ? dlopen(cuda_path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  bool ok = bind(api.get_numel, cpu, "aoti_torch_get_numel") && bind(api.get_dim, cpu, "aoti_torch_get_dim") &&
            bind(api.get_sizes, cpu, "aoti_torch_get_sizes") && bind(api.get_strides, cpu, "aoti_torch_get_strides") &&
            bind(api.get_dtype, cpu, "aoti_torch_get_dtype") &&
            bind(api.get_device_type, cpu, "aoti_torch_get_device_type") &&
            bind(api.get_device_index, cpu, "aoti_torch_get_device_index") &&
            bind(api.get_data_ptr, cpu, "aoti_torch_get_data_ptr") &&
            bind(api.is_contiguous, cpu, "aoti_torch_is_contiguous") &&
            bind(api.empty_strided, cpu, "aoti_torch_empty_strided") &&
            bind(api.delete_tensor, cpu, "aoti_torch_delete_tensor_object") &&
            bind(api.grad_mode_is_enabled, cpu, "aoti_torch_grad_mode_is_enabled") &&
            bind(api.library_init_impl, cpu, "aoti_torch_library_init_impl") &&
            bind(api.library_impl, cpu, "aoti_torch_library_impl") &&
            bind(api.delete_library, cpu, "aoti_torch_delete_library_object") &&
            bind(api.requires_grad, c10, "_ZNK3c1010TensorImpl13requires_gradEv");
  if (!cpu || !c10) api_missing = "the torch libraries (libc10, libtorch_cpu) are not loaded";
  api.cuda_stream = reinterpret_cast<Err (*)(int32_t, void**)>(sym(cuda, "aoti_torch_get_current_cuda_stream"));
  // dlopen(RTLD_NOLOAD) took a reference to libraries torch keeps loaded: given back
  if (c10) dlclose(c10);
  if (cpu) dlclose(cpu);
  if (cuda) dlclose(cuda);
  if (ok) api_missing = nullptr;
  return ok;
}

PyObject* py_init(PyObject*, PyObject* args) {
  const char *c10, *cpu, *cuda;
  PyObject *steal, *alloc;
  if (!PyArg_ParseTuple(args, "sszOO", &c10, &cpu, &cuda, &steal, &alloc)) return nullptr;
  if (!resolve(c10, cpu, cuda)) return PyUnicode_FromString(api_missing);
  Py_XINCREF(steal);
  Py_XSETREF(steal_fn, steal);
  Py_XINCREF(alloc);
  Py_XSETREF(alloc_fn, alloc);
  Py_RETURN_NONE;
}

PyObject* py_has_cuda(PyObject*, PyObject*) { return PyBool_FromLong(api.cuda_stream != nullptr); }

// dtype_code(libtorch_cpu, name) -> torch's ScalarType number of dtype `name` (aoti_torch_dtype_<name>), or None
PyObject* py_dtype_code(PyObject*, PyObject* args) {
  const char *cpu_path, *name;
  if (!PyArg_ParseTuple(args, "ss", &cpu_path, &name)) return nullptr;
  void* cpu = dlopen(cpu_path, RTLD_NOW | RTLD_NOLOAD);
  std::string fn = std::string("aoti_torch_dtype_") + name;
  auto f = reinterpret_cast<int32_t (*)()>(sym(cpu, fn.c_str()));
  PyObject* r = f ? PyLong_FromLong(f()) : (Py_INCREF(Py_None), Py_None);
  if (cpu) dlclose(cpu);
  return r;
}

// register(ns, name, dispatch_key, device_type, slow, kinds: bytes) -> slot
PyObject* py_register(PyObject*, PyObject* args) {
  const char *ns, *name, *key;
  int device_type;
  PyObject* fn;
  Py_buffer kinds;
  if (!PyArg_ParseTuple(args, "sssiOy*", &ns, &name, &key, &device_type, &fn, &kinds)) return nullptr;
  std::vector<int> ks((const unsigned char*)kinds.buf, (const unsigned char*)kinds.buf + kinds.len);
  PyBuffer_Release(&kinds);
  if (api_missing) return PyErr_Format(PyExc_RuntimeError, "native kernels are not initialised (%s)", api_missing);
  if (next_slot >= kSlots) return PyErr_Format(PyExc_RuntimeError, "all %d native kernel slots are taken", kSlots);
  if ((int)ks.size() > kMaxParams) return PyErr_Format(PyExc_ValueError, "too many arguments (%d)", (int)ks.size());
  int i = next_slot;
  Slot& s = slots[i];
  if (api.library_init_impl(ns, key, "trt_kernels/eager/_cnative.cpp", 0, &s.lib))
    return PyErr_Format(PyExc_RuntimeError, "torch refused a library fragment for %s (%s)", ns, key);
  if (api.library_impl(s.lib, name, pool[i])) {
    api.delete_library(s.lib);
    s.lib = nullptr;
    return PyErr_Format(PyExc_RuntimeError, "torch refused the native kernel of %s::%s", ns, name);
  }
  next_slot++;
  Py_INCREF(fn);
  s.slow = fn;
  s.device_type = device_type;
  s.used = true;
  Program* p = new Program();
  p->nargs = (int)ks.size();
  for (int a = 0; a < p->nargs; a++) {
    p->kinds[a] = ks[a];
    if (ks[a] == kTensor && p->ntensors < kMaxTensors) p->tpos[p->ntensors++] = a;
  }
  int ns_ = 0;
  for (int a = 0; a < p->nargs; a++)
    if (ks[a] != kTensor) p->spos[ns_++] = a;
  s.prog.store(p, std::memory_order_release);
  return PyLong_FromLong(i);
}

Slot* slot_of(int i) {
  if (i < 0 || i >= next_slot || !slots[i].used) {
    PyErr_Format(PyExc_ValueError, "no native kernel slot %d", i);
    return nullptr;
  }
  return &slots[i];
}

Slot* slot_arg(PyObject* args) {  // (slot,)
  int i;
  return PyArg_ParseTuple(args, "i", &i) ? slot_of(i) : nullptr;
}

void publish(Slot& s, Program* p) {
  Program* old = s.prog.exchange(p, std::memory_order_acq_rel);
  if (old) retired.push_back(old);
}

// a program with the slot's argument kinds and no variant; the old variants' kernels are let go of
void clear_variants(Slot& s, int nout, bool no_backward) {
  Program* old = s.prog.load();
  Program* p = new Program(*old);
  p->variants.clear();
  p->nout = nout;
  p->no_backward = no_backward;
  for (Variant* v : old->variants) Py_CLEAR(v->handles);
  publish(s, p);
}

// reset(slot, nout, no_backward): a new declaration (or none): no variant until its first calls
PyObject* py_reset(PyObject*, PyObject* args) {
  int i, nout, no_backward;
  if (!PyArg_ParseTuple(args, "iip", &i, &nout, &no_backward)) return nullptr;
  Slot* s = slot_of(i);
  if (!s) return nullptr;
  clear_variants(*s, nout, no_backward != 0);
  Py_RETURN_NONE;
}

// add_variant(slot, dtypes, ranks, code, extras, grid, smem, block, outs, params, entry, handles, spec, key, min_smem)
PyObject* py_add_variant(PyObject*, PyObject* args) {
  int i;
  PyObject *dtypes, *ranks, *code, *extras, *grid, *block, *outs, *params, *handles, *spec;
  int smem;
  unsigned long long entry, key;
  long long min_smem;
  if (!PyArg_ParseTuple(args, "iOOOOOiOOOKOOKL", &i, &dtypes, &ranks, &code, &extras, &grid, &smem, &block, &outs,
                        &params, &entry, &handles, &spec, &key, &min_smem))
    return nullptr;
  Slot* s = slot_of(i);
  if (!s) return nullptr;
  Program* old = s->prog.load();
  auto v = new Variant();
  auto ints = [](PyObject* seq, auto* out, int cap, const char* what) -> int {
    PyObject* f = PySequence_Fast(seq, what);
    if (!f) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (n > cap) {
      Py_DECREF(f);
      PyErr_Format(PyExc_ValueError, "%s: %zd entries, at most %d", what, n, cap);
      return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
      long long x = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, k));
      if (x == -1 && PyErr_Occurred()) { Py_DECREF(f); return -1; }
      out[k] = (std::remove_reference_t<decltype(out[0])>)x;
    }
    Py_DECREF(f);
    return (int)n;
  };
  std::vector<int64_t> buf(4096);
  int n;
  bool ok = ints(dtypes, v->dtypes, kMaxTensors, "dtypes") == old->ntensors &&
            ints(ranks, v->ranks, kMaxTensors, "ranks") == old->ntensors;
  if (!ok && !PyErr_Occurred())
    PyErr_Format(PyExc_ValueError, "dtypes and ranks: one per tensor input (%d)", old->ntensors);
  if (ok && handles != Py_None && !PyDict_Check(handles)) {
    PyErr_SetString(PyExc_TypeError, "handles: a {device: CUfunction} dict");
    ok = false;
  }
  if (ok && (n = ints(code, buf.data(), 4096, "code")) >= 0) v->code.assign(buf.begin(), buf.begin() + n); else ok = false;
  if (ok && (v->n_extras = ints(extras, v->extras, kMaxParams, "extras")) < 0) ok = false;
  if (ok && ints(grid, v->grid, 3, "grid") != 3) ok = false;
  if (ok && ints(block, v->block, 3, "block") != 3) ok = false;
  v->smem = smem;
  PyObject* of = ok ? PySequence_Fast(outs, "outs") : nullptr;
  if (of && PySequence_Fast_GET_SIZE(of) == old->nout && old->nout <= kMaxOutputs) {
    for (int o = 0; o < old->nout && ok; o++) {  // (like, dtype, (dim registers...))
      int like, dtype;
      PyObject* dims;
      if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(of, o), "iiO", &like, &dtype, &dims)) { ok = false; break; }
      v->outs[o].like = like;
      v->outs[o].dtype = dtype;
      v->outs[o].ndim = ints(dims, v->outs[o].dims, kMaxRank, "dims");
      ok = v->outs[o].ndim >= 0;
    }
  } else if (ok) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "outs: one entry per output");
    ok = false;
  }
  Py_XDECREF(of);
  PyObject* pf = ok ? PySequence_Fast(params, "params") : nullptr;
  if (pf && PySequence_Fast_GET_SIZE(pf) <= kMaxParams) {
    v->n_params = (int)PySequence_Fast_GET_SIZE(pf);
    for (int k = 0; k < v->n_params && ok; k++) {  // (code, source, index)
      int code_c, src, idx;
      if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(pf, k), "Cii", &code_c, &src, &idx)) { ok = false; break; }
      v->params[k] = Param{(char)code_c, src, idx};
    }
  } else if (ok) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "params: too many");
    ok = false;
  }
  Py_XDECREF(pf);
  PyObject* sf = ok ? PySequence_Fast(spec, "spec") : nullptr;
  if (sf && PySequence_Fast_GET_SIZE(sf) <= kMaxParams) {
    v->n_spec = (int)PySequence_Fast_GET_SIZE(sf);
    int bits = 0;
    for (int k = 0; k < v->n_spec && ok; k++) {  // (source, index, flags)
      int src, idx, flags;
      if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(sf, k), "iii", &src, &idx, &flags)) { ok = false; break; }
      v->spec[k] = SpecEntry{src, idx, flags};
      bits += ((flags & FACT_ALIGNED) != 0) + ((flags & FACT_ONE) != 0);
    }
    if (ok && bits > 64) {
      PyErr_Format(PyExc_ValueError, "spec: %d key bits, at most 64", bits);
      ok = false;
    }
  } else if (ok) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "spec: too many");
    ok = false;
  }
  Py_XDECREF(sf);
  v->key = key;
  v->min_smem = min_smem;
  if (!ok) {
    delete v;
    return nullptr;
  }
  v->entry = (LaunchFn)(uintptr_t)entry;
  for (auto& f : v->funcs) f.store(nullptr);
  if (handles != Py_None) {
    Py_INCREF(handles);
    v->handles = handles;
    fill_funcs(v);
  }
  all_variants.push_back(v);
  Program* p = new Program(*old);
  p->variants.push_back(v);
  publish(*s, p);
  Py_RETURN_NONE;
}

// release(slot): torch no longer calls it (the library fragment is deleted); its Python refs are let go of
PyObject* py_release(PyObject*, PyObject* args) {
  Slot* s = slot_arg(args);
  if (!s) return nullptr;
  if (s->lib) {
    api.delete_library(s->lib);
    s->lib = nullptr;
  }
  clear_variants(*s, 0, true);
  s->used = false;
  Py_CLEAR(s->slow);
  Py_RETURN_NONE;
}

PyObject* py_variants(PyObject*, PyObject* args) {
  Slot* s = slot_arg(args);
  if (!s) return nullptr;
  return PyLong_FromSize_t(s->prog.load()->variants.size());
}

PyObject* py_launches(PyObject*, PyObject* args) {
  Slot* s = slot_arg(args);
  if (!s) return nullptr;
  return PyLong_FromUnsignedLongLong(s->launches.load());
}

PyObject* py_record_entry(PyObject*, PyObject*) { return PyLong_FromVoidPtr((void*)&record_launch); }

PyObject* py_recorded(PyObject*, PyObject* args) {
  int result = 0;
  if (!PyArg_ParseTuple(args, "|i", &result)) return nullptr;
  std::lock_guard<std::mutex> g(record_mu);
  PyObject* t = PyTuple_New((Py_ssize_t)recorded.size());
  if (!t) return nullptr;
  for (size_t k = 0; k < recorded.size(); k++) PyTuple_SET_ITEM(t, k, PyLong_FromUnsignedLongLong(recorded[k]));
  recorded.clear();
  record_result = result;
  return t;
}

PyObject* py_slots(PyObject*, PyObject*) { return Py_BuildValue("ii", next_slot, kSlots); }

PyMethodDef methods[] = {
    {"init", py_init, METH_VARARGS, "init(libc10, libtorch_cpu, libtorch_cuda, steal, alloc) -> None or what is missing"},
    {"has_cuda", py_has_cuda, METH_NOARGS, "whether torch's current CUDA stream can be read"},
    {"dtype_code", py_dtype_code, METH_VARARGS, "dtype_code(libtorch_cpu, name) -> ScalarType number or None"},
    {"register", py_register, METH_VARARGS, "register(ns, name, key, device_type, kernel, kinds) -> slot"},
    {"reset", py_reset, METH_VARARGS, "reset(slot, nout, no_backward)"},
    {"add_variant", py_add_variant, METH_VARARGS, "add_variant(slot, ...)"},
    {"release", py_release, METH_VARARGS, "release(slot)"},
    {"variants", py_variants, METH_VARARGS, "variants(slot) -> how many (dtype, ranks) keys launch natively"},
    {"launches", py_launches, METH_VARARGS, "launches(slot) -> calls launched natively so far"},
    {"record_entry", py_record_entry, METH_NOARGS, "(tests) address of a launch function that records its call"},
    {"recorded", py_recorded, METH_VARARGS, "(tests) recorded([result]) -> the last recorded launch; sets its result"},
    {"slots", py_slots, METH_NOARGS, "(used, capacity)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_cnative", "trt_kernels' native eager kernel", -1, methods,
                          nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__cnative(void) {
  PyObject* m = PyModule_Create(&module_def);
  if (m && (PyModule_AddIntConstant(m, "ABI", TRTK_NATIVE_ABI) || PyModule_AddIntConstant(m, "SLOTS", kSlots))) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
