// Between the library's types and the engine's: the caller's arrays and scalars become
// Bindings (host arrays without a copy where their layout allows), the engine's Results become
// Arrays the caller owns (on the inputs' device, in the caller's memory where it gives an
// Allocator).
#pragma once
#include <string>
#include <vector>

#include "bind/bind.h"
#include "gamut/gamut.h"

namespace gamut::api {

struct StagedInputs {
  Bindings bindings;
  std::vector<std::string> copies;                      // "NAME: why it was copied"
  Device output_device;                                 // where the outputs go: the inputs' GPU, else the host
  std::map<std::string, Instance::DeviceInput> device;  // inputs the GPU engine reads in place
};

// Validates every array (data errors name the binding) and scalar, and binds host arrays in
// place when they are C order. With `gpu_engine` (the GPU backend runs), device arrays whose
// rows are contiguous are read in place too, except `index_operands` (g in C[g[i]]: bind checks
// their values on the host). Everything else is copied to host C order, and said so.
StagedInputs stage_inputs(const Inputs& inputs, void* stream, bool gpu_engine = false,
                          const std::vector<std::string>& index_operands = {});

// The strides (elements) of a C-order array of `shape`.
std::vector<int64_t> c_strides(const std::vector<int64_t>& shape);

// The text a scalar binds as (what `NAME=VALUE` would give): integers as integers, floats so
// that they parse back to the same double and stay floats.
std::string number_text(const Number& n);

// The engine's results as the library's outputs, in query order (dense, then lists). `written`:
// when given, the memory the GPU engine already wrote each dense output into; `written_lists`:
// per list, the memory it wrote that list's columns into (none: the list came to the host).
std::vector<Output> make_outputs(const Plan& plan, Results&& results, Device device, const Options& options,
                                 const std::vector<Allocation>* written = nullptr,
                                 const std::vector<std::vector<Allocation>>* written_lists = nullptr);

// The finishing steps' arrays (cpu/finish.h) as the library's outputs, on `device` as
// make_outputs places dense outputs (the caller's allocator, else gamut's memory).
std::vector<Output> finished_outputs(const Plan& plan, std::vector<NDArray>&& finished, Device device,
                                     const Options& options);

}  // namespace gamut::api
