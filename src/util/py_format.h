// How Python spells a float, shared by the chat module's Python values
// (chat/py_value.cc: tool-call arguments), the Jinja engine (jinja/value.cc printing) and
// json.dumps's writer (util/py_json_writer.h): one definition of each rule.
#pragma once
#include <string>

namespace qinfer {

// repr(float) / str(float): the shortest digits that round-trip, fixed notation for
// 1e-4 <= |v| < 1e16 with at least one decimal ("1.0", "0.0001", "123.5"), otherwise
// scientific with a signed two-digit-minimum exponent ("1e-05", "1e+16", "2.5e-10");
// "inf", "-inf", "nan".
std::string py_float_repr(double v);

// A float as json.dumps writes it (allow_nan=True, its default): repr, except NaN,
// Infinity and -Infinity for the non-finite values.
std::string py_json_float(double v);

}  // namespace qinfer
