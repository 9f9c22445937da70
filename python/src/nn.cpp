// kiln.nn for Python: parameters, kiln's C++ layers (NativeModule and its subclasses), losses,
// optimisers, learning-rate schedules and model files. Modules written in Python (kiln/nn.py)
// hold these and Parameters; the optimisers take Parameters from either.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "kiln/nn.hpp"
#include "kiln/safetensors.hpp"
#include "kiln/schedulers.hpp"

namespace kiln::python {

namespace {

nn::Reduction reduction_of(const std::string& r) {
  if (r == "mean") return nn::Reduction::mean;
  if (r == "sum") return nn::Reduction::sum;
  if (r == "none") return nn::Reduction::none;
  if (r == "batchmean") return nn::Reduction::batchmean;
  throw Error(ErrorCode::invalid_select,
              "reduction must be 'mean', 'sum' or 'none', got '" + r + "'");
}

std::vector<nn::Parameter> parameters_of(nb::handle params) {
  std::vector<nn::Parameter> out;
  for (nb::handle p : params) out.push_back(nb::cast<nn::Parameter>(p));
  return out;
}

using NamedParameters = std::vector<std::pair<std::string, nn::Parameter>>;

NamedParameters named_of(nb::handle named) {
  NamedParameters out;
  for (nb::handle item : named) {
    auto pair = nb::cast<nb::tuple>(item);
    out.emplace_back(nb::cast<std::string>(pair[0]), nb::cast<nn::Parameter>(pair[1]));
  }
  return out;
}


// Adam and AdamW: the same arguments, PyTorch's (betas as a pair).
template <class Opt, class Options>
void bind_adam(nb::module_& m, const char* name, double default_weight_decay) {
  nb::class_<Opt, nn::Optimizer>(m, name)
      .def("__init__", [](Opt* o, nb::handle params, double lr, std::pair<double, double> betas,
                          double eps, double weight_decay) {
             new (o) Opt(parameters_of(params), Options{.lr = lr, .beta1 = betas.first,
                                                        .beta2 = betas.second, .eps = eps,
                                                        .weight_decay = weight_decay});
           }, nb::arg("params"), nb::arg("lr") = 1e-3,
           nb::arg("betas") = std::pair<double, double>(0.9, 0.999), nb::arg("eps") = 1e-8,
           nb::arg("weight_decay") = default_weight_decay);
}

}  // namespace

void bind_nn(nb::module_& m) {
  nb::class_<nn::Parameter>(m, "Parameter",
                            "A trained value: a shared slot the module reads and the optimiser "
                            "replaces; .value is the current tensor.")
      .def(nb::init<std::string, const Tensor&>(), nb::arg("name"), nb::arg("value"))
      .def("__init__", [](nn::Parameter* p, const Tensor& value) {
             new (p) nn::Parameter("", value);
           }, nb::arg("value"))
      .def_prop_ro("name", &nn::Parameter::name)
      .def_prop_ro("value", [](const nn::Parameter& p) { return p.value(); })
      .def("__kiln_tensor__", [](const nn::Parameter& p) { return p.value(); })
      .def_prop_ro("shape", [](const nn::Parameter& p) { return nb::tuple(nb::cast(p.shape())); })
      .def_prop_ro("dtype", [](const nn::Parameter& p) { return p.value().dtype(); })
      .def("numel", &nn::Parameter::numel)
      .def_prop_ro("grad", [](const nn::Parameter& p) -> nb::object {
             Tensor g = p.grad();
             if (!g.defined()) return nb::none();
             return nb::cast(g);
           })
      .def("zero_grad", &nn::Parameter::zero_grad)
      .def("set", [](const nn::Parameter& p, nb::handle v) {
             const Tensor t = to_tensor(v);
             nb::gil_scoped_release unlocked;
             p.set(t);
           }, nb::arg("value"),
           "Replaces the value for every holder (evaluated, same shape and dtype).")
      .def("copy_", [](const nn::Parameter& p, nb::handle v) {
             const Tensor t = to_tensor(v);
             nb::gil_scoped_release unlocked;
             p.copy_(t);
           }, nb::arg("value"), "set, converting the value to the parameter's dtype first.")
      .def("to", [](const nn::Parameter& p, DType dtype) { p.to(dtype); }, nb::arg("dtype"),
           "Converts the value to a floating dtype.")
      .def("to", [](const nn::Parameter& p, const std::string& device) {
             const Device d(device);
             nb::gil_scoped_release unlocked;
             p.to(d);
           }, nb::arg("device"),
           "Moves the value to the named executor (cpu, opencl, cuda, reference); computations "
           "with it run there.")
      .def_prop_rw("requires_grad", &nn::Parameter::requires_grad,
                   [](const nn::Parameter& p, bool on) { p.set_requires_grad(on); })
      .def("same_slot", &nn::Parameter::same_slot)
      .def("__repr__", [](const nn::Parameter& p) {
             return "Parameter(" + p.name() + ", " + shape_to_string(p.shape()) + ")";
           });

  nb::class_<nn::Module>(m, "NativeModule",
                         "A layer implemented in kiln's C++ API; Python modules hold these.")
      .def("forward", [](nn::Module& mod, nb::handle x) { return mod.forward(to_tensor(x)); })
      .def("__call__", [](nn::Module& mod, nb::handle x) { return mod.forward(to_tensor(x)); })
      .def("named_parameters", &nn::Module::named_parameters)
      .def("parameters", &nn::Module::parameters)
      .def("named_buffers", &nn::Module::named_buffers)
      .def("to", [](nb::handle self, DType dtype) {
             nb::cast<nn::Module&>(self).to(dtype);
             return nb::borrow(self);
           }, nb::arg("dtype"))
      .def("to", [](nb::handle self, const std::string& device) {
             const Device d(device);
             {
               nb::gil_scoped_release unlocked;
               nb::cast<nn::Module&>(self).to(d);
             }
             return nb::borrow(self);
           }, nb::arg("device"), "Moves every parameter and buffer to the named executor.")
      .def("num_parameters", &nn::Module::num_parameters)
      .def("train", [](nn::Module& mod, bool on) { mod.train(on); }, nb::arg("mode") = true)
      .def("eval", [](nn::Module& mod) { mod.eval(); })
      .def_prop_ro("training", &nn::Module::is_training)
      .def("zero_grad", &nn::Module::zero_grad)
      .def("reset_parameters", &nn::Module::reset_all_parameters)
      .def("summary", &nn::Module::summary)
      .def("__repr__", &nn::Module::describe);

  nb::class_<nn::Linear, nn::Module>(m, "Linear")
      .def(nb::init<std::int64_t, std::int64_t, bool>(), nb::arg("in_features"),
           nb::arg("out_features"), nb::arg("bias") = true)
      .def_prop_ro("weight", &nn::Linear::weight)
      .def_prop_ro("bias", [](const nn::Linear& l) -> nb::object {
             if (!l.bias().defined()) return nb::none();
             return nb::cast(l.bias());
           });
  nb::class_<nn::Conv2d, nn::Module>(m, "Conv2d")
      .def(nb::init<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool,
                    std::int64_t, std::int64_t>(),
           nb::arg("in_channels"), nb::arg("out_channels"), nb::arg("kernel_size"),
           nb::arg("stride") = 1, nb::arg("padding") = 0, nb::arg("bias") = true,
           nb::arg("dilation") = 1, nb::arg("groups") = 1)
      .def_prop_ro("weight", &nn::Conv2d::weight)
      .def_prop_ro("bias", [](const nn::Conv2d& c) -> nb::object {
             if (!c.bias().defined()) return nb::none();
             return nb::cast(c.bias());
           });
  nb::class_<nn::MaxPool2d, nn::Module>(m, "MaxPool2d")
      .def(nb::init<std::int64_t, std::int64_t>(), nb::arg("kernel_size"), nb::arg("stride") = 0);
  nb::class_<nn::AvgPool2d, nn::Module>(m, "AvgPool2d")
      .def(nb::init<std::int64_t, std::int64_t, std::int64_t>(), nb::arg("kernel_size"),
           nb::arg("stride") = 0, nb::arg("padding") = 0);
  nb::class_<nn::ReLU, nn::Module>(m, "ReLU").def(nb::init<>());
  nb::class_<nn::GELU, nn::Module>(m, "GELU").def(nb::init<>());
  nb::class_<nn::Tanh, nn::Module>(m, "Tanh").def(nb::init<>());
  nb::class_<nn::Sigmoid, nn::Module>(m, "Sigmoid").def(nb::init<>());
  nb::class_<nn::Flatten, nn::Module>(m, "Flatten").def(nb::init<>());
  nb::class_<nn::Dropout, nn::Module>(m, "Dropout")
      .def(nb::init<double>(), nb::arg("p") = 0.5);
  nb::class_<nn::LayerNorm, nn::Module>(m, "LayerNorm")
      .def("__init__", [](nn::LayerNorm* l, nb::handle shape, double eps, bool affine) {
             const Shape s = PyLong_Check(shape.ptr()) ? Shape{nb::cast<std::int64_t>(shape)}
                                                        : nb::cast<Shape>(shape);
             new (l) nn::LayerNorm(s, eps, affine);
           }, nb::arg("normalized_shape"), nb::arg("eps") = 1e-5,
           nb::arg("elementwise_affine") = true);
  nb::class_<nn::BatchNorm2d, nn::Module>(m, "BatchNorm2d")
      .def(nb::init<std::int64_t>(), nb::arg("num_features"));
  nb::class_<nn::Embedding, nn::Module>(m, "Embedding")
      .def(nb::init<std::int64_t, std::int64_t>(), nb::arg("num_embeddings"),
           nb::arg("embedding_dim"));

  // ---- losses ----
  m.def("cross_entropy", [](nb::handle logits, nb::handle labels, double label_smoothing,
                            const std::string& reduction) {
          nn::ClassLossOptions o;
          o.label_smoothing = label_smoothing;
          o.reduction = reduction_of(reduction);
          return nn::cross_entropy(to_tensor(logits), to_tensor(labels), o);
        }, nb::arg("input"), nb::arg("target"), nb::arg("label_smoothing") = 0.0,
        nb::arg("reduction") = "mean");
  m.def("nll_loss", [](nb::handle logp, nb::handle labels, const std::string& reduction) {
          nn::ClassLossOptions o;
          o.reduction = reduction_of(reduction);
          return nn::nll_loss(to_tensor(logp), to_tensor(labels), o);
        }, nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean");
  m.def("mse_loss", [](nb::handle a, nb::handle b, const std::string& r) {
          return nn::mse_loss(to_tensor(a), to_tensor(b), reduction_of(r));
        }, nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean");
  m.def("l1_loss", [](nb::handle a, nb::handle b, const std::string& r) {
          return nn::l1_loss(to_tensor(a), to_tensor(b), reduction_of(r));
        }, nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean");
  m.def("binary_cross_entropy_with_logits", [](nb::handle a, nb::handle b, const std::string& r) {
          return nn::binary_cross_entropy_with_logits(to_tensor(a), to_tensor(b), reduction_of(r));
        }, nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean");
  m.def("correct_count", [](nb::handle logits, nb::handle labels) {
          return nn::correct_count(to_tensor(logits), to_tensor(labels));
        }, "How many rows of logits have their largest value at the label (int64).");

  // ---- optimisers ----
  nb::class_<nn::Optimizer>(m, "Optimizer")
      .def("step", [](nn::Optimizer& o, std::optional<Tensor> loss) {
             nb::gil_scoped_release unlocked;
             if (loss) o.step(*loss);
             else o.step();
           }, nb::arg("loss") = nb::none(),
           "With a loss: its gradients, and the update, in one evaluation. Without: the "
           "gradients backward() accumulated.")
      .def("zero_grad", &nn::Optimizer::zero_grad)
      .def_prop_rw("lr", &nn::Optimizer::lr, &nn::Optimizer::set_lr)
      .def_prop_ro("steps", &nn::Optimizer::steps)
      .def("parameters", &nn::Optimizer::parameters)
      .def("state_dict", [](const nn::Optimizer& o) {
             nb::dict d;
             for (auto& [name, t] : o.state_dict()) d[name.c_str()] = t;
             return d;
           })
      .def("load_state_dict", [](nn::Optimizer& o, nb::dict d) {
             std::vector<std::pair<std::string, Tensor>> state;
             for (auto [k, v] : d) state.emplace_back(nb::cast<std::string>(k), nb::cast<Tensor>(v));
             o.load_state_dict(state);
           });
  nb::class_<nn::SGD, nn::Optimizer>(m, "SGD")
      .def("__init__", [](nn::SGD* o, nb::handle params, double lr, double momentum,
                          double weight_decay, bool nesterov, double dampening) {
             new (o) nn::SGD(parameters_of(params), {.lr = lr, .momentum = momentum,
                                                     .weight_decay = weight_decay,
                                                     .nesterov = nesterov,
                                                     .dampening = dampening});
           }, nb::arg("params"), nb::arg("lr") = 0.01, nb::arg("momentum") = 0.0,
           nb::arg("weight_decay") = 0.0, nb::arg("nesterov") = false,
           nb::arg("dampening") = 0.0);
  bind_adam<nn::Adam, nn::AdamOptions>(m, "Adam", 0.0);
  bind_adam<nn::AdamW, nn::AdamWOptions>(m, "AdamW", 1e-2);

  // ---- schedules (each keeps its optimiser alive) ----
  nb::class_<nn::LRScheduler>(m, "LRScheduler")
      .def("step", &nn::LRScheduler::step)
      .def("get_last_lr", &nn::LRScheduler::last_lr)
      .def_prop_ro("last_epoch", &nn::LRScheduler::last_epoch);
  nb::class_<nn::StepLR, nn::LRScheduler>(m, "StepLR")
      .def(nb::init<nn::Optimizer&, std::int64_t, double>(), nb::arg("optimizer"),
           nb::arg("step_size"), nb::arg("gamma") = 0.1, nb::keep_alive<1, 2>());
  nb::class_<nn::ExponentialLR, nn::LRScheduler>(m, "ExponentialLR")
      .def(nb::init<nn::Optimizer&, double>(), nb::arg("optimizer"), nb::arg("gamma"),
           nb::keep_alive<1, 2>());
  nb::class_<nn::MultiStepLR, nn::LRScheduler>(m, "MultiStepLR")
      .def(nb::init<nn::Optimizer&, std::vector<std::int64_t>, double>(), nb::arg("optimizer"),
           nb::arg("milestones"), nb::arg("gamma") = 0.1, nb::keep_alive<1, 2>());
  nb::class_<nn::CosineAnnealingLR, nn::LRScheduler>(m, "CosineAnnealingLR")
      .def(nb::init<nn::Optimizer&, std::int64_t, double, std::int64_t>(), nb::arg("optimizer"),
           nb::arg("T_max"), nb::arg("eta_min") = 0.0, nb::arg("warmup") = 0,
           nb::keep_alive<1, 2>());
  nb::class_<nn::OneCycleLR, nn::LRScheduler>(m, "OneCycleLR")
      .def(nb::init<nn::Optimizer&, double, std::int64_t, double, double, double>(),
           nb::arg("optimizer"), nb::arg("max_lr"), nb::arg("total_steps"),
           nb::arg("pct_start") = 0.3, nb::arg("div_factor") = 25.0,
           nb::arg("final_div_factor") = 1e4, nb::keep_alive<1, 2>());

  // ---- files ----
  m.def("save", [](nb::handle named, const std::string& path) {
          const NamedParameters p = named_of(named);
          nb::gil_scoped_release unlocked;
          nn::save(p, path);
        }, nb::arg("named_parameters"), nb::arg("path"),
        "Writes (name, Parameter) pairs to a kiln model file, atomically.");
  m.def("load", [](nb::handle named, const std::string& path) {
          const NamedParameters p = named_of(named);
          nb::gil_scoped_release unlocked;
          nn::load(p, path);
        }, nb::arg("named_parameters"), nb::arg("path"));
  m.def("manual_seed", &nn::manual_seed, nb::arg("seed"));
}

void bind_files(nb::module_& m) {
  m.def("save_safetensors", [](const std::string& path, nb::dict tensors, nb::handle metadata) {
          std::vector<std::pair<std::string, Tensor>> named;
          for (auto [k, v] : tensors) named.emplace_back(nb::cast<std::string>(k), to_tensor(v));
          std::vector<std::pair<std::string, std::string>> meta;
          if (!metadata.is_none())
            for (auto [k, v] : nb::cast<nb::dict>(metadata))
              meta.emplace_back(nb::cast<std::string>(k), nb::cast<std::string>(v));
          nb::gil_scoped_release unlocked;
          save_safetensors(path, named, meta);
        }, nb::arg("path"), nb::arg("tensors"), nb::arg("metadata") = nb::none(),
        "Writes named tensors (a dict) as a safetensors file, atomically; PyTorch's "
        "safetensors.torch.load_file reads it.");
  m.def("load_safetensors", [](const std::string& path) {
          Safetensors file;
          {
            nb::gil_scoped_release unlocked;
            file = load_safetensors(path);
          }
          nb::dict out;
          for (auto& [name, t] : file.tensors) out[name.c_str()] = t;
          return out;
        }, nb::arg("path"), "The tensors of a safetensors file, by name, in the file's order.");
}

}  // namespace kiln::python
