// One call of a Query from Python: its bindings and options as the library reads them, and what
// must live until it is over. bindings.cpp fills it from keywords or a mapping (values.cpp
// classifies each value); module.cpp runs it.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <gamut/gamut.h>

#include <string>
#include <vector>

#include "arrays.h"

namespace gamut::py {

namespace nb = nanobind;

struct Call {
  gamut::Inputs inputs;
  gamut::Options options;
  std::vector<nb::ndarray<nb::ro>> keep;
  std::vector<nb::object> relaid;               // copies and views made for the call (below)
  std::vector<std::string> notes;               // and why
  bool have_array = false, have_gpu_array = false, stream_given = false;
  int gpu_id = 0;
  Framework framework = Framework::NumPy;       // of the first array
  Framework gpu_framework = Framework::Other;   // of the first array in device memory
};

// The keywords that are options of q(...), q.explain(...), q.kernel_source(...) and q.run(...).
bool is_option_name(const std::string& key);

// Keywords of q(...) / q.explain(...): options and bindings; a binding named like an option is
// an error that points to q.run(mapping). `how` names the call in messages ("q(...)").
void bind_keywords(Call& c, const Query& q, nb::handle kwargs, const char* how);
// q.run(inputs, **options): every key of `inputs` a binding, every option a keyword.
void bind_inputs(Call& c, const Query& q, nb::handle inputs);
void set_options(Call& c, nb::handle options);

}  // namespace gamut::py
