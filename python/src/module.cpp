// The pybind11 module: tensors and autodiff here, op families in ops_*.cpp.
#include "bindings.h"
#include "nn_module.h"

#include "attn/autodiff/tape.h"
#include "attn/parallel.h"

namespace py = pybind11;

namespace attn::python {

Tensor from_numpy(const py::array& array) {
  if (py::isinstance<py::array_t<int32_t>>(array) || array.dtype().kind() == 'i' || array.dtype().kind() == 'u' ||
      array.dtype().kind() == 'b') {
    auto a = py::array_t<int32_t, py::array::c_style | py::array::forcecast>::ensure(array);
    std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
    Tensor t = Tensor::empty(Shape(dims), DType::i32);
    std::memcpy(t.i32(), a.data(), static_cast<size_t>(t.numel()) * sizeof(int32_t));
    return t;
  }
  auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!a) throw ValueError("tensor: cannot convert the array to float32");
  std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
  Tensor t = Tensor::empty(Shape(dims), DType::f32);
  std::memcpy(t.f32(), a.data(), static_cast<size_t>(t.numel()) * sizeof(float));
  return t;
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
      .def("requires_grad_", [](Tensor& t, bool v) { return t.set_requires_grad(v); }, py::arg("value") = true)
      .def_property_readonly("grad", [](const Tensor& t) -> py::object {
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
      .def("backward", [](const Tensor& t, py::object seed) {
        if (seed.is_none()) return backward(t);
        backward(t, py::isinstance<Tensor>(seed) ? seed.cast<Tensor>() : from_numpy(seed.cast<py::array>()));
      }, py::arg("seed") = py::none())
      .def_property("name", &Tensor::name, [](Tensor& t, std::string n) { t.set_name(std::move(n)); })
      .def("__repr__", [](const Tensor& t) {
        return "attn.Tensor(shape=" + t.shape().str() + ", dtype=" + dtype_name(t.dtype()) +
               (t.requires_grad() ? ", requires_grad=True" : "") + ")";
      });

  m.def("tensor", [](const py::array& a, bool requires_grad) {
    Tensor t = from_numpy(a);
    if (requires_grad) t.set_requires_grad(true);
    return t;
  }, py::arg("array"), py::arg("requires_grad") = false, "A tensor holding a copy of a numpy array (float32 or int32)");
  m.def("zeros", [](std::vector<int64_t> dims) { return Tensor::zeros(Shape(dims)); });
  m.def("backward", [](const Tensor& t, py::object seed) {
    if (seed.is_none()) return backward(t);
    backward(t, py::isinstance<Tensor>(seed) ? seed.cast<Tensor>() : from_numpy(seed.cast<py::array>()));
  }, py::arg("root"), py::arg("seed") = py::none());
  m.def("set_num_threads", &set_num_threads);
  m.def("num_threads", &num_threads);

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
