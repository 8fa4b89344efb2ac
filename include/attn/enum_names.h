#pragma once
// The names of an enum's values, listed once in a table that both directions read:
//   constexpr EnumName<TaskKind> kTaskNames[] = {{TaskKind::copy, "copy"}, ...};
//   enum_name(kTaskNames, kind, "?")  ->  "copy"
//   enum_from_name(kTaskNames, "copy") -> TaskKind::copy (std::nullopt for an unknown name)
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The (first) name of `value` in `names`, or `unknown` when the table does not list it.
template <class E, size_t N>
constexpr const char* enum_name(const EnumName<E> (&names)[N], E value, const char* unknown) {
  for (const EnumName<E>& n : names)
    if (n.value == value) return n.name;
  return unknown;
}

// The value named `name` (a value may be listed under several names), or nothing.
template <class E, size_t N>
constexpr std::optional<E> enum_from_name(const EnumName<E> (&names)[N], std::string_view name) {
  for (const EnumName<E>& n : names)
    if (name == n.name) return n.value;
  return std::nullopt;
}

// "copy, reverse, sort": the names in table order, joined by `separator`.
template <class E, size_t N>
std::string enum_name_list(const EnumName<E> (&names)[N], std::string_view separator = ", ") {
  std::string list;
  for (const EnumName<E>& n : names) list += (list.empty() ? "" : std::string(separator)) + n.name;
  return list;
}

// One column of a table, in table order: table_column(kKinds, &KindInfo::kind) lists the kinds
// of a table that also holds their formats and names.
template <class Row, class T, size_t N>
std::vector<T> table_column(const Row (&rows)[N], T Row::*column) {
  std::vector<T> values;
  values.reserve(N);
  for (const Row& row : rows) values.push_back(row.*column);
  return values;
}

}  // namespace attn
