// oracle/trace/event.cpp: Event's field accessors, show_value() and
// InputError::to_string() (oracle/trace/event.hpp).
#include <cstdint>
#include <string>
#include <string_view>

#include "oracle/trace/event.hpp"

namespace turnstile::oracle {

namespace {

const Value kNull;

}  // namespace

const Event::Field* Event::find_other(std::string_view name) const {
  for (std::size_t i = 0; i < count_; ++i)
    if (fields_[i].known == 0 && same_text(fields_[i].name, name)) return &fields_[i];
  return nullptr;
}

void Event::grow() { fields_.emplace_back(); }

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
