// util/py_format: Python's float spellings (expected strings from CPython 3.11's repr()
// and json.dumps), the one definition the chat module and the Jinja engine share.
#include "util/py_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace qinfer {
namespace {

TEST(PyFormat, FloatReprFixedAndScientificLikeCPython) {
  EXPECT_EQ(py_float_repr(2.5), "2.5");
  EXPECT_EQ(py_float_repr(1.0), "1.0");
  EXPECT_EQ(py_float_repr(0.1), "0.1");
  EXPECT_EQ(py_float_repr(-0.0), "-0.0");
  EXPECT_EQ(py_float_repr(0.0001), "0.0001");
  EXPECT_EQ(py_float_repr(1e-5), "1e-05");
  EXPECT_EQ(py_float_repr(-2.5e-10), "-2.5e-10");
  EXPECT_EQ(py_float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(py_float_repr(1e16), "1e+16");
  EXPECT_EQ(py_float_repr(1e22), "1e+22");
  EXPECT_EQ(py_float_repr(123456789.125), "123456789.125");
  EXPECT_EQ(py_float_repr(123456789012345.6), "123456789012345.6");
  EXPECT_EQ(py_float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(py_float_repr(1.5e300), "1.5e+300");
  EXPECT_EQ(py_float_repr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(py_float_repr(5e-324), "5e-324");
}

TEST(PyFormat, NonFiniteInReprAndInJsonDumps) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(py_float_repr(inf), "inf");
  EXPECT_EQ(py_float_repr(-inf), "-inf");
  EXPECT_EQ(py_float_repr(std::nan("")), "nan");
  EXPECT_EQ(py_json_float(inf), "Infinity");
  EXPECT_EQ(py_json_float(-inf), "-Infinity");
  EXPECT_EQ(py_json_float(std::nan("")), "NaN");
  EXPECT_EQ(py_json_float(1e16), "1e+16");
  EXPECT_EQ(py_json_float(3.0), "3.0");
}

}  // namespace
}  // namespace qinfer
