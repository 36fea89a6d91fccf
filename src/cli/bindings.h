// The command line's bindings as the library's Inputs: `NAME=VALUE` texts and `--dim NAME=D1[,D2]`,
// read as the query says (gamut::QueryInfo): a scalar parameter's value must be a number, an input
// array's a .npy file (read here, then bound as a host view without a copy), an output index
// vector must hold integers, and a name the query does not have is a usage error before any
// file is read.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/array.h"

namespace gamut::cli {

struct CliInputs {
  Inputs inputs;                       // views of `arrays`
  std::vector<std::string> files;      // the query file and every .npy read (no output may replace one)
  std::map<std::string, NDArray> arrays;
};

CliInputs read_inputs(const QueryArgs& q, const Query& query);

// A host array as the library reads it (a view: `a` must outlive the run).
ArrayRef host_view(const NDArray& a);

}  // namespace gamut::cli
