// `explain`'s roofline: the bound query's work and bytes against the ceilings `gamut peak`
// measured and saved in the kernel cache directory.
#pragma once
#include <string>

#include "bind/bind.h"
#include "plan/plan.h"

namespace gamut::api {

std::string peak_report_path();
void save_peak_report(const std::string& json);
// The roofline lines of Query::explain (one line saying how to measure when nothing is saved).
std::string roofline(const Plan& plan, const Instance& inst);

}  // namespace gamut::api
