// The independent path of the elementwise functions' tests (oracles/elementary_test.cc,
// composite/model_test.cc): the textbook formula of each ElementaryFn in plain MPFR with 400-bit
// steps, none of elementary.cc's code.
//
// Example:
//   MpfrValue x(64), v(400);
//   mpfr_set_d(x, 1.5, MPFR_RNDN);
//   TextbookElementary(ElementaryFn::kGelu, x, v);  // v = 1.5 * (1 + erf(1.5 / sqrt 2)) / 2.
#ifndef FPCONFORM_ORACLES_ELEMENTARY_TEST_SUPPORT_H_
#define FPCONFORM_ORACLES_ELEMENTARY_TEST_SUPPORT_H_

#include <mpfr.h>

#include "oracles/elementary.h"
#include "oracles/mpfr_plumbing.h"

namespace fpconform {

// v = fn(x), each step rounded to nearest at 400 bits (the last at v's precision).
inline void TextbookElementary(ElementaryFn fn, mpfr_srcptr x, mpfr_ptr v) {
  MpfrValue a(400), b(400);
  const mpfr_rnd_t n = MPFR_RNDN;
  switch (fn) {
    case ElementaryFn::kExp: mpfr_exp(v, x, n); break;
    case ElementaryFn::kExp2: mpfr_exp2(v, x, n); break;
    case ElementaryFn::kLog: mpfr_log(v, x, n); break;
    case ElementaryFn::kTanh: mpfr_tanh(v, x, n); break;
    case ElementaryFn::kSigmoid:
    case ElementaryFn::kSilu:
      mpfr_neg(a, x, n);
      mpfr_exp(a, a, n);
      mpfr_add_ui(a, a, 1, n);
      if (fn == ElementaryFn::kSigmoid) {
        mpfr_ui_div(v, 1, a, n);
      } else {
        mpfr_div(v, x, a, n);
      }
      break;
    case ElementaryFn::kGelu:
    case ElementaryFn::kGeluTanh:
      if (fn == ElementaryFn::kGelu) {  // a = erf(x / sqrt 2).
        mpfr_sqrt_ui(a, 2, n);
        mpfr_div(a, x, a, n);
        mpfr_erf(a, a, n);
      } else {  // a = tanh(sqrt(2 / pi) (x + 0.044715 x^3)).
        mpfr_mul(a, x, x, n);
        mpfr_mul(a, a, x, n);
        mpfr_set_str(b, "0.044715", 10, n);
        mpfr_mul(a, a, b, n);
        mpfr_add(a, a, x, n);
        mpfr_const_pi(b, n);
        mpfr_ui_div(b, 2, b, n);
        mpfr_sqrt(b, b, n);
        mpfr_mul(a, a, b, n);
        mpfr_tanh(a, a, n);
      }
      // v = x (1 + a) / 2.
      mpfr_add_ui(a, a, 1, n);
      mpfr_mul(v, a, x, n);
      mpfr_div_2ui(v, v, 1, n);
      break;
    case ElementaryFn::kRsqrt:
      mpfr_sqrt(a, x, n);
      mpfr_ui_div(v, 1, a, n);
      break;
    case ElementaryFn::kReciprocal: mpfr_ui_div(v, 1, x, n); break;
  }
}

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_ELEMENTARY_TEST_SUPPORT_H_
