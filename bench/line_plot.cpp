// attn_line_plot SPEC.json OUT.(png|svg): a viz::LinePlot from a JSON spec, for the plots of
// docs/ made from results that are not `attn` output already (docs/results.md's CER by joined
// utterances). SPEC: {"title", "x_label", "y_label", "y_min"?, "y_max"?, "series": [{"name",
// "x": [...], "y": [...]}]}. Exit 1 with one line on a bad spec or an unwritable picture.
#include <cstdio>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attn/viz/plot.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: attn_line_plot SPEC.json OUT.png\n");
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    if (!in) throw std::runtime_error(std::string(argv[1]) + ": cannot open");
    const nlohmann::json spec = nlohmann::json::parse(in);
    attn::viz::LinePlot plot;
    plot.title = spec.value("title", "");
    plot.x_label = spec.value("x_label", "");
    plot.y_label = spec.value("y_label", "");
    if (spec.contains("y_min")) plot.y_min = spec["y_min"].get<double>();
    if (spec.contains("y_max")) plot.y_max = spec["y_max"].get<double>();
    for (const auto& s : spec.at("series"))
      plot.series.push_back({s.at("name").get<std::string>(), s.at("x").get<std::vector<double>>(),
                             s.at("y").get<std::vector<double>>()});
    attn::viz::write_line_plot(plot, argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attn_line_plot: %s\n", e.what());
    return 1;
  }
  return 0;
}
