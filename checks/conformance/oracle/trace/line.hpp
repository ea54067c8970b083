// oracle/trace/line.hpp (internal): one line of a trace into an Event's fields
// (spec/trace-format.md section 1), for the reader of oracle/trace/reader.cpp.
//
// Contract: read_line_fields() fills `e`'s field list from one line (without
// its terminator) and never throws on bad input (only std::bad_alloc
// escapes). A flat JSON object of strings, integers, booleans and nulls (what
// trace lines are) is read in place; any other line (an escape \u, a
// non-ASCII byte, a float, a nested value, a repeated member, a syntax error)
// goes to nlohmann::json, so the fields of a valid line and the message for an
// invalid one are exactly nlohmann's. It reads no field's meaning: the reader
// (reader.cpp) checks them against the tables of fields.hpp.
// Thread safety: none shared; a LineReader is used by one thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "oracle/trace/event.hpp"

namespace turnstile::oracle {

class LineReader {
 public:
  // Fills `e`'s fields (its other members are untouched); the message of
  // what makes the line unusable (not UTF-8, too deep, not JSON, not an
  // object), or nullopt.
  std::optional<std::string> read_line_fields(std::string_view text, Event& e);

 private:
  bool read_flat_object(std::string_view text, Event& e);
  std::string key_;  // a key with escapes, decoded
};

}  // namespace turnstile::oracle
