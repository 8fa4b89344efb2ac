// The pybind11 module: tensors and autodiff here, op families in ops_*.cpp.
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "attn/autodiff/tape.h"
#include "attn/cpu.h"
#include "attn/parallel.h"
#include "attn/precision.h"
#include "bindings.h"
#include "nn_module.h"

namespace py = pybind11;

namespace attn::python {

namespace {

// Values of an integer array as int32, each checked: an id of 2^40 must not become 0.
template <typename T>
void copy_checked_ints(const py::array& array, Tensor& t) {
  auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(array);
  const T* p = a.data();
  int32_t* out = t.i32();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    if (p[i] > static_cast<T>(std::numeric_limits<int32_t>::max()) ||
        (std::is_signed_v<T> && p[i] < static_cast<T>(std::numeric_limits<int32_t>::min())))
      throw ValueError("tensor: integer " + std::to_string(p[i]) + " at flat index " + std::to_string(i) +
                       " does not fit in int32 (attn's integer dtype)");
    out[i] = static_cast<int32_t>(p[i]);
  }
}

}  // namespace

// Conversion rules (documented in python/attn/__init__.py):
//   bool, int8/16/32, uint8/16  -> int32, exact;
//   int64, uint32/64            -> int32, every value checked to fit (ValueError naming it);
//   float16/32                  -> float32, exact;
//   float64, longdouble         -> float32 rounded to nearest; a finite value beyond
//                                  float32's range (it would become inf) is a ValueError;
//   complex, object, str, ...   -> ValueError.
Tensor from_numpy(const py::array& array) {
  const char kind = array.dtype().kind();
  const auto itemsize = array.dtype().itemsize();
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  if (kind == 'b' || kind == 'i' || kind == 'u') {
    Tensor t = Tensor::empty(Shape(dims), DType::i32);
    if (kind == 'b' || (kind == 'i' && itemsize <= 4) || (kind == 'u' && itemsize <= 2)) {
      auto a = py::array_t<int32_t, py::array::c_style | py::array::forcecast>::ensure(array);
      std::memcpy(t.i32(), a.data(), static_cast<size_t>(t.numel()) * sizeof(int32_t));
    } else if (kind == 'i') {
      copy_checked_ints<int64_t>(array, t);
    } else {
      copy_checked_ints<uint64_t>(array, t);
    }
    return t;
  }
  if (kind != 'f')
    throw ValueError("tensor: cannot convert a numpy array of dtype " + py::str(array.dtype()).cast<std::string>() +
                     " (attn takes float32 and int32; give float or integer data)");
  Tensor t = Tensor::empty(Shape(dims), DType::f32);
  float* out = t.f32();
  if (itemsize <= 4) {  // float16, float32: exact
    auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
    if (!a) throw ValueError("tensor: cannot convert the array to float32");
    std::memcpy(out, a.data(), static_cast<size_t>(t.numel()) * sizeof(float));
    return t;
  }
  // float64 and wider, rounded here rather than by numpy's cast, which only warns on overflow.
  auto wide = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!wide) throw ValueError("tensor: cannot convert the array to float32");
  const double* p = wide.data();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    out[i] = static_cast<float>(p[i]);
    if (std::isinf(out[i]) && std::isfinite(p[i]))
      throw ValueError("tensor: value " + py::repr(py::float_(p[i])).cast<std::string>() + " at flat index " +
                       std::to_string(i) + " is outside float32's range (about 3.4e38)");
  }
  return t;
}

// Zero-copy the other way: a tensor over a writable, C-contiguous float32 or int32 array's own
// memory, holding a reference to the array (so to whatever owns its memory: a torch tensor
// for t.numpy()). Anything else is a ValueError saying why; attn.tensor copies instead.
Tensor borrow_numpy(const py::array& array) {
  const char kind = array.dtype().kind();
  const auto itemsize = array.dtype().itemsize();
  DType dtype;
  if (kind == 'f' && itemsize == 4)
    dtype = DType::f32;
  else if (kind == 'i' && itemsize == 4)
    dtype = DType::i32;
  else
    throw ValueError("borrow: cannot share an array of dtype " + py::str(array.dtype()).cast<std::string>() +
                     " (only float32 and int32 share memory; attn.tensor converts with a copy)");
  if (!(array.flags() & py::array::c_style))
    throw ValueError("borrow: the array is not C-contiguous (make it contiguous, or copy with attn.tensor)");
  if (!array.writeable())
    throw ValueError("borrow: the array is read-only (attn may write through a shared tensor; copy with attn.tensor)");
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  // Released on whatever thread drops the last tensor: take the GIL for the decref.
  std::shared_ptr<void> owner(new py::object(array), [](py::object* held) {
    if (!Py_IsInitialized()) return;  // interpreter gone: nothing left to release into
    py::gil_scoped_acquire gil;
    delete held;
  });
  return Tensor::borrow(const_cast<void*>(array.data()), Shape(dims), dtype, std::move(owner));
}

// Zero-copy: the array keeps the tensor's storage alive.
py::array to_numpy(const Tensor& t) {
  auto* keep = new std::shared_ptr<TensorImpl>(t.impl_ptr());
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<TensorImpl>*>(p); });
  std::vector<py::ssize_t> shape(t.shape().dims().begin(), t.shape().dims().end());
  if (t.dtype() == DType::i32) return py::array_t<int32_t>(shape, t.i32(), owner);
  return py::array_t<float>(shape, t.f32(), owner);
}

}  // namespace attn::python

PYBIND11_MODULE(_attn, m) {
  using namespace attn;
  using attn::python::from_numpy;
  using attn::python::to_numpy;
  m.doc() = "attn: attention mechanisms with hand-written forward and backward kernels";
  m.attr("__version__") = ATTN_VERSION;  // CMakeLists.txt's project(VERSION)
  // The kernels' ISA level: a bad ATTN_ISA fails the import with its one-line message.
  kernel_isa_level();

  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<ShapeError> shape_error(m, "ShapeError", PyExc_ValueError);
  static py::exception<ValueError> value_error(m, "ValueError_", PyExc_ValueError);
  static py::exception<IoError> io_error(m, "IoError", PyExc_OSError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ShapeError& e) {
      shape_error(e.what());
    } catch (const ValueError& e) {
      value_error(e.what());
    } catch (const IoError& e) {
      io_error(e.what());
    } catch (const Error& e) {
      error(e.what());
    }
  });

  py::class_<Tensor>(m, "Tensor")
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape().dims())); })
      .def_property_readonly("dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); })
      .def_property_readonly("requires_grad", &Tensor::requires_grad)
      .def(
          "requires_grad_", [](Tensor& t, bool v) { return t.set_requires_grad(v); }, py::arg("value") = true)
      .def_property_readonly("grad",
                             [](const Tensor& t) -> py::object {
                               if (!t.has_grad()) return py::none();
                               return py::cast(t.grad());
                             })
      .def("numpy", &to_numpy, "A numpy view of the data (no copy)")
      .def("__array__", [](const Tensor& t, py::args) { return to_numpy(t); })
      .def("item", &Tensor::item)
      .def("zero_grad", &Tensor::zero_grad)
      .def("detach", &Tensor::detach)
      .def("clone", &Tensor::clone)
      .def("reshape", [](const Tensor& t, std::vector<int64_t> dims) { return t.reshape(Shape(dims)); })
      .def("slice", &Tensor::slice)
      .def("select", &Tensor::select)
      .def(
          "backward",
          [](const Tensor& t, py::object seed) {
            if (seed.is_none()) return backward(t);
            backward(t, py::isinstance<Tensor>(seed) ? seed.cast<Tensor>() : from_numpy(seed.cast<py::array>()));
          },
          py::arg("seed") = py::none())
      .def_property("name", &Tensor::name, [](Tensor& t, std::string n) { t.set_name(std::move(n)); })
      .def("__repr__", [](const Tensor& t) {
        return "attn.Tensor(shape=" + t.shape().str() + ", dtype=" + dtype_name(t.dtype()) +
               (t.requires_grad() ? ", requires_grad=True" : "") + ")";
      });

  m.def(
      "tensor",
      [](const py::array& a, bool requires_grad) {
        Tensor t = from_numpy(a);
        if (requires_grad) t.set_requires_grad(true);
        return t;
      },
      py::arg("array"), py::arg("requires_grad") = false,
      "A tensor holding a copy of a numpy array (float32 or int32)");
  m.def(
      "borrow",
      [](const py::array& a, bool requires_grad) {
        Tensor t = attn::python::borrow_numpy(a);
        if (requires_grad) t.set_requires_grad(true);
        return t;
      },
      py::arg("array"), py::arg("requires_grad") = false,
      "A tensor sharing a writable C-contiguous float32 / int32 array's memory (no copy; it keeps the array alive)");
  m.def(
      "data_ptr",
      [](const Tensor& t) {
        return reinterpret_cast<uintptr_t>(static_cast<const char*>(t.impl().buffer->data()) +
                                           t.impl().offset * dtype_size(t.dtype()));
      },
      py::arg("tensor"), "The address of the tensor's first element (to check what shares memory)");
  m.def("zeros", [](std::vector<int64_t> dims) { return Tensor::zeros(Shape(dims)); });
  m.def(
      "backward",
      [](const Tensor& t, py::object seed) {
        if (seed.is_none()) return backward(t);
        backward(t, py::isinstance<Tensor>(seed) ? seed.cast<Tensor>() : from_numpy(seed.cast<py::array>()));
      },
      py::arg("root"), py::arg("seed") = py::none());
  m.def(
      "set_num_threads",
      [](int n) {
        if (n < 1) throw ValueError("set_num_threads: n must be >= 1, got " + std::to_string(n));
        set_num_threads(n);
      },
      py::arg("n"), "Threads for attn's kernels and OpenBLAS (>= 1)");
  m.def("num_threads", &num_threads);
  // The GEMM precision (attn/precision.h, docs/precision.md): process-wide, like the threads.
  m.def(
      "set_precision", [](const std::string& name) { set_compute_precision(parse_precision(name)); }, py::arg("name"),
      "'fp32' (default), 'bf16' (bf16 GEMMs with fp32 accumulation, oneDNN; everything else fp32) or 'int8' "
      "(inference: int8 weight GEMMs, docs/precision.md). ValueError naming what is missing on a CPU without "
      "AVX512_BF16 or AMX-BF16 (bf16), VNNI or AMX-INT8 (int8)");
  m.def("get_precision", [] { return std::string(precision_name(compute_precision())); });
  struct PrecisionBlock {
    Precision precision;
    std::unique_ptr<PrecisionScope> scope;
  };
  py::class_<PrecisionBlock>(m, "precision", "with attn.precision('bf16'): ... runs the block at that precision")
      .def(py::init([](const std::string& name) {
             return PrecisionBlock{parse_precision(name), nullptr};
           }),
           py::arg("name"))
      .def("__enter__", [](PrecisionBlock& b) { b.scope = std::make_unique<PrecisionScope>(b.precision); })
      .def("__exit__", [](PrecisionBlock& b, py::args) { b.scope.reset(); });

  struct NoGrad {
    std::unique_ptr<autodiff::NoGradGuard> guard;
  };
  py::class_<NoGrad>(m, "no_grad", "with attn.no_grad(): ... records nothing")
      .def(py::init<>())
      .def("__enter__", [](NoGrad& g) { g.guard = std::make_unique<autodiff::NoGradGuard>(); })
      .def("__exit__", [](NoGrad& g, py::args) { g.guard.reset(); });

  // The base class attn.nn.Module first, so every bound module can derive from it
  // whatever order the families' registrars ran in.
  attn::python::nn_submodule(m);
  for (const auto& register_family : attn::python::registry()) register_family(m);
}
