// accumulation/'s names for the shared string helpers of base/str_cat.h.
#ifndef FPCONFORM_ACCUMULATION_STRINGS_INTERNAL_H_
#define FPCONFORM_ACCUMULATION_STRINGS_INTERNAL_H_

#include "base/str_cat.h"

namespace fpconform::accumulation_internal {

using ::fpconform::Cat;
using ::fpconform::Join;

}  // namespace fpconform::accumulation_internal

#endif  // FPCONFORM_ACCUMULATION_STRINGS_INTERNAL_H_
