// attn.train: the optimizers (SGD, Adam, AdamW over a list of Tensors), clip_grad_norm and
// the learning-rate schedule (include/attn/train/optimizer.h, schedule.h).
#include <string>
#include <utility>
#include <vector>

#include "attn/train/optimizer.h"
#include "attn/train/schedule.h"
#include "bindings.h"

namespace py = pybind11;

namespace {

void register_train(py::module_& m) {
  using namespace attn;
  using namespace attn::train;
  py::module_ t = m.def_submodule("train", "Optimizers, gradient clipping and learning-rate schedules");

  py::class_<Optimizer>(t, "Optimizer")
      .def("step", &Optimizer::step, "One update of every parameter that has a gradient")
      .def("zero_grad", &Optimizer::zero_grad, py::arg("set_to_none") = true)
      .def_property("lr", &Optimizer::lr, &Optimizer::set_lr)
      .def("set_lr", &Optimizer::set_lr, py::arg("lr"))
      .def_property_readonly("step_count", &Optimizer::step_count)
      .def_property_readonly("name", [](const Optimizer& o) { return std::string(o.name()); })
      .def("parameters", &Optimizer::parameters)
      .def(
          "state",
          [](const Optimizer& o) {
            OptimizerState s = o.state();
            return py::make_tuple(s.step, py::cast(s.tensors));
          },
          "(step, [(name, Tensor), ...]): the live state buffers")
      .def(
          "load_state",
          [](Optimizer& o, int64_t step, std::vector<std::pair<std::string, Tensor>> tensors) {
            o.load_state(OptimizerState{step, std::move(tensors)});
          },
          py::arg("step"), py::arg("tensors"));

  py::class_<SGD, Optimizer>(t, "SGD").def(py::init([](std::vector<Tensor> params, float lr, float momentum,
                                                       float dampening, float weight_decay, bool nesterov) {
                                             return new SGD(std::move(params), SGDOptions{.lr = lr,
                                                                                          .momentum = momentum,
                                                                                          .dampening = dampening,
                                                                                          .weight_decay = weight_decay,
                                                                                          .nesterov = nesterov});
                                           }),
                                           py::arg("params"), py::kw_only(), py::arg("lr") = 1e-3f,
                                           py::arg("momentum") = 0.0f, py::arg("dampening") = 0.0f,
                                           py::arg("weight_decay") = 0.0f, py::arg("nesterov") = false);

  py::class_<Adam, Optimizer>(t, "Adam").def(
      py::init([](std::vector<Tensor> params, float lr, float beta1, float beta2, float eps, float weight_decay) {
        return new Adam(
            std::move(params),
            AdamOptions{.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay});
      }),
      py::arg("params"), py::kw_only(), py::arg("lr") = 1e-3f, py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f,
      py::arg("eps") = 1e-8f, py::arg("weight_decay") = 0.0f);

  py::class_<AdamW, Adam>(t, "AdamW")
      .def(py::init([](std::vector<Tensor> params, float lr, float beta1, float beta2, float eps, float weight_decay) {
             return new AdamW(
                 std::move(params),
                 AdamWOptions{.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay});
           }),
           py::arg("params"), py::kw_only(), py::arg("lr") = 1e-3f, py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f,
           py::arg("eps") = 1e-8f, py::arg("weight_decay") = 1e-2f);

  t.def("clip_grad_norm", &clip_grad_norm, py::arg("params"), py::arg("max_norm"),
        "Scales the gradients so their total L2 norm is at most max_norm; returns the norm before clipping");

  py::class_<LrSchedule>(t, "LrSchedule")
      .def(
          py::init([](const std::string& kind, float base_lr, int64_t warmup_steps, int64_t total_steps, float min_lr) {
            return LrSchedule(LrScheduleOptions{.kind = parse_lr_schedule_kind(kind),
                                                .base_lr = base_lr,
                                                .warmup_steps = warmup_steps,
                                                .total_steps = total_steps,
                                                .min_lr = min_lr});
          }),
          py::arg("kind") = "constant", py::kw_only(), py::arg("base_lr") = 1e-3f, py::arg("warmup_steps") = 0,
          py::arg("total_steps") = 0, py::arg("min_lr") = 0.0f,
          "kind: constant | linear_warmup_decay | cosine | inverse_sqrt (noam)")
      .def("lr_at", &LrSchedule::lr_at, py::arg("step"), "The learning rate of the update with 0-based index step")
      .def_property_readonly("kind",
                             [](const LrSchedule& s) { return std::string(lr_schedule_kind_name(s.options().kind)); });

  // Top-level aliases for the common pieces.
  m.attr("SGD") = t.attr("SGD");
  m.attr("Adam") = t.attr("Adam");
  m.attr("AdamW") = t.attr("AdamW");
  m.attr("clip_grad_norm") = t.attr("clip_grad_norm");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_train);
