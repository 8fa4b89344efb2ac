// attn.io: safetensors checkpoints (include/attn/io/safetensors.h). save_safetensors takes
// a list of (name, Tensor) pairs or a dict (insertion order is kept) and a dict of string
// metadata; load_safetensors returns a SafetensorsFile.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "attn/io/safetensors.h"
#include "bindings.h"

namespace py = pybind11;

namespace {

std::vector<std::pair<std::string, attn::Tensor>> named_tensors(const py::object& tensors) {
  std::vector<std::pair<std::string, attn::Tensor>> out;
  if (py::isinstance<py::dict>(tensors)) {
    for (auto item : tensors.cast<py::dict>())
      out.emplace_back(item.first.cast<std::string>(), item.second.cast<attn::Tensor>());
    return out;
  }
  return tensors.cast<std::vector<std::pair<std::string, attn::Tensor>>>();
}

}  // namespace

namespace {

void register_io(py::module_& m) {
  using namespace attn;
  using namespace attn::io;
  py::module_ io = m.def_submodule("io", "safetensors checkpoints");

  py::class_<SafetensorsFile>(io, "SafetensorsFile")
      .def_readonly("path", &SafetensorsFile::path)
      .def_readonly("tensors", &SafetensorsFile::tensors)
      .def_readonly("metadata", &SafetensorsFile::metadata)
      .def_readonly("verified", &SafetensorsFile::verified, "Whether every tensor matched a stored CRC-32")
      .def("at", &SafetensorsFile::at, py::arg("name"))
      .def(
          "find",
          [](const SafetensorsFile& f, const std::string& name) -> py::object {
            const Tensor* t = f.find(name);
            if (!t) return py::none();
            return py::cast(*t);
          },
          py::arg("name"))
      .def("subset", &SafetensorsFile::subset, py::arg("prefix"))
      .def("__getitem__", &SafetensorsFile::at)
      .def("__contains__", [](const SafetensorsFile& f, const std::string& name) { return f.find(name) != nullptr; })
      .def("__len__", [](const SafetensorsFile& f) { return f.tensors.size(); });

  io.def(
      "save_safetensors",
      [](const std::string& path, const py::object& tensors, const std::map<std::string, std::string>& metadata) {
        save_safetensors(path, named_tensors(tensors), metadata);
      },
      py::arg("path"), py::arg("tensors"), py::arg("metadata") = std::map<std::string, std::string>{},
      "Writes F32/I32 tensors + string metadata atomically");
  io.def("load_safetensors", &load_safetensors, py::arg("path"), "Reads and validates a safetensors file");
  io.def(
      "load_into",
      [](const SafetensorsFile& file, const py::object& destination, const std::string& path_for_messages) {
        load_into(file, named_tensors(destination), path_for_messages);
      },
      py::arg("file"), py::arg("destination"), py::arg("path_for_messages") = "",
      "Copies the file's tensors by name into existing tensors (checks everything first)");
  io.attr("ATTN_METADATA_KEY") = kAttnMetadataKey;

  m.attr("save_safetensors") = io.attr("save_safetensors");
  m.attr("load_safetensors") = io.attr("load_safetensors");
  m.attr("load_into") = io.attr("load_into");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_io);
