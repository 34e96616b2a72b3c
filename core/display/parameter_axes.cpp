#include "display/parameter_axes.h"

#include "engine/errors.h"

namespace attnscope {

ParameterKind kindOf(const NamedTensor& t) {
  ParameterKind k;
  std::string rest = t.name;
  if (rest.rfind("heads.", 0) == 0) {
    const std::size_t dot = rest.find('.', 6);
    k.head = rest.substr(0, dot + 1);
    rest = rest.substr(dot + 1);
  }
  const std::size_t dot = rest.find('.');
  k.base = rest.substr(0, dot);
  k.bare = dot == std::string::npos;
  k.bias = !k.bare && rest.substr(dot + 1) == "bias";
  k.out = k.base == "W_key" ? "k" : k.base == "W_value" ? "v" : k.base == "out_proj" ? "o" : "q";
  return k;
}

std::string shapeWords(const NamedTensor& t, const ParameterKind& k) {
  if (t.is_vector) return str(t.value.cols()) + " (d_out)";
  const std::string dims = k.bare ? "d_in × d_out" : k.base == "out_proj" ? "d_out × d_out" : "d_out × d_in";
  return str(t.value.rows()) + " × " + str(t.value.cols()) + " (" + dims + ")";
}

ParameterAxes parameterAxes(const NamedTensor& t, const ParameterKind& k) {
  ParameterAxes a;
  for (Eigen::Index i = 0; i < t.value.rows(); ++i)
    a.rows.push_back(t.is_vector ? "b" : k.bare ? "d" + str(i) : k.out + str(i));
  for (Eigen::Index j = 0; j < t.value.cols(); ++j)
    a.cols.push_back(t.is_vector || k.bare ? k.out + str(j) : k.base == "out_proj" ? "c" + str(j) : "d" + str(j));
  return a;
}

}  // namespace attnscope
