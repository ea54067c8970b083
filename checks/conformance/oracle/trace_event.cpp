// oracle/trace_event.cpp: Event's field accessors, show_value() and
// InputError::to_string() (oracle/trace.hpp).
#include <string>
#include <string_view>

#include "oracle/trace.hpp"

namespace turnstile::oracle {

namespace {
const std::string kNoText;
const Value kNull;
}  // namespace

namespace {
// Field names are short: compare them in place (no call per candidate).
bool same_name(const std::string& a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < b.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}
// The same for a C string, without measuring it first.
bool same_name(const std::string& a, const char* b) {
  const std::size_t n = a.size();
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;  // stops at b's terminator too
  return b[n] == '\0';
}
}  // namespace

const Event::Field* Event::find(std::string_view name) const {
  for (std::size_t i = 0; i < count_; ++i)
    if (same_name(fields_[i].name, name)) return &fields_[i];
  return nullptr;
}

const Event::Field* Event::find(const char* name) const {
  for (std::size_t i = 0; i < count_; ++i)
    if (same_name(fields_[i].name, name)) return &fields_[i];
  return nullptr;
}

Event::Field& Event::add_field(std::string_view name) {
  if (count_ == fields_.size()) fields_.emplace_back();
  Field& f = fields_[count_++];
  if (!same_name(f.name, name)) f.name.assign(name);  // lines of one shape reuse their names
  f.type = Type::kNull;
  f.has_json = false;
  return f;
}

void Event::assign(const nlohmann::json& doc) {
  clear_fields();
  for (const auto& [key, v] : doc.items()) {
    Field& f = add_field(key);
    if (v.is_string()) {
      f.type = Type::kString;
      f.text = v.get_ref<const std::string&>();
    } else if (v.is_boolean()) {
      f.type = Type::kBool;
      f.boolean = v.get<bool>();
    } else if (v.is_number_unsigned()) {
      f.type = Type::kUnsigned;
      f.uinteger = v.get<std::uint64_t>();
    } else if (v.is_number_integer()) {
      f.type = Type::kSigned;
      f.integer = v.get<std::int64_t>();
    } else if (v.is_null()) {
      f.type = Type::kNull;
    } else {
      f.type = v.is_number() ? Type::kFloat : Type::kStructured;
      f.json = v;
      f.has_json = true;
    }
  }
}

const std::string& Event::str(const char* field) const {
  const Field* f = find(field);
  return f != nullptr && f->type == Type::kString ? f->text : kNoText;
}

bool Event::flag(const char* field) const {
  const Field* f = find(field);
  return f != nullptr && f->type == Type::kBool && f->boolean;
}

bool Event::has(const char* field) const { return find(field) != nullptr; }

std::string Event::text(const char* field) const { return str(field); }

const Value& Event::value(const char* field) const {
  const Field* f = find(field);
  if (f == nullptr) return kNull;
  if (!f->has_json) {
    switch (f->type) {
      case Type::kString: f->json = f->text; break;
      case Type::kBool: f->json = f->boolean; break;
      case Type::kSigned: f->json = f->integer; break;
      case Type::kUnsigned: f->json = f->uinteger; break;
      default: f->json = nullptr; break;
    }
    f->has_json = true;
  }
  return f->json;
}

std::string show_value(const Value& v) { return v.dump(); }

std::string InputError::to_string() const {
  std::string out = source + ":" + std::to_string(line) + ": ";
  if (!field.empty()) out += "field '" + field + "': ";
  return out + message;
}

}  // namespace turnstile::oracle
