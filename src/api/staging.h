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
  std::vector<std::string> copies;   // "NAME: why it was copied"
  Device output_device;              // where the outputs go: the inputs' GPU, else the host
};

// Validates every array (data errors name the binding) and scalar, and binds host arrays in
// place when they are C order. Arrays elsewhere or in other layouts are copied to host C order.
StagedInputs stage_inputs(const Inputs& inputs, void* stream);

// The text a scalar binds as (what `NAME=VALUE` would give): integers as integers, floats so
// that they parse back to the same double and stay floats.
std::string number_text(const Number& n);

// The engine's results as the library's outputs, in query order (dense, then lists).
std::vector<Output> make_outputs(const Plan& plan, Results&& results, Device device, const Options& options);

}  // namespace gamut::api
