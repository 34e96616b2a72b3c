#include "formats/json_reading.h"

#include <cmath>
#include <optional>

#include "engine/errors.h"
#include "formats/json_format.h"

namespace attnscope {

using nlohmann::json;

namespace {


const char* typeName(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  return v.type_name();
}


// What a tree costs beyond its text, per value (nlohmann's 16-byte value, a vector slot that may be
// doubled) and per object member (a std::map node and its key).
constexpr std::int64_t kValueBytes = 32;
constexpr std::int64_t kMemberBytes = 96;

std::string parseMessage(const json::exception& e) {
  std::string what = e.what();
  const auto cut = what.find("] ");
  return "not valid JSON: " + (cut == std::string::npos ? what : what.substr(cut + 2));
}

// [SECTION] One array of numbers, checked as its elements come (from the parser or from a tree)

class NumberArrayReader {
 public:
  NumberArrayReader(std::string field, bool embeddings, const Limits& limits)
      : field_(std::move(field)), embeddings_(embeddings), limits_(limits) {}

  // An element directly in the array: a row starting (an array) …
  void rowStart() {
    const std::size_t i = count_++;
    if (embeddings_) {
      if (count_ > static_cast<std::size_t>(limits_.max_tokens))
        fail(field_, str(count_) + " rows or more exceeds the limit of " +
                         str(static_cast<std::size_t>(limits_.max_tokens)) + " tokens");
    } else if (count_ > static_cast<std::size_t>(limits_.max_dim)) {
      fail(field_, str(count_) + " rows or more exceeds the limit of " +
                       str(static_cast<std::size_t>(limits_.max_dim)) + " in either dimension");
    }
    if (i == 0) out_.rows = true;
    if (!out_.rows) fail(at(i), "expected a number, got array");
    row_ = 0;
  }
  // … or a number or something else.
  void element(const json& v) {
    const std::size_t i = count_++;
    if (embeddings_) fail(at(i), std::string("expected an array of numbers, got ") + typeName(v));
    if (i == 0 && !v.is_number() && !v.is_array())  // a bias whose first entry is no number
      fail(at(i), std::string("expected a number, got ") + typeName(v));
    if (out_.rows) fail(at(i), std::string("expected a row (a list of numbers), got ") + typeName(v));
    if (count_ > static_cast<std::size_t>(limits_.max_dim))
      fail(field_, "1 × " + str(count_) + " or more exceeds the limit of " +
                       str(static_cast<std::size_t>(limits_.max_dim)) + " in either dimension");
    if (!v.is_number()) fail(at(i), std::string("expected a number, got ") + typeName(v));
    push(v, at(i));
  }
  // Inside a row: a number, or something else (nothing nests deeper).
  void inRow(const json& v) {
    const std::size_t j = row_++;
    if (row_ > static_cast<std::size_t>(limits_.max_dim))
      fail(field_, embeddings_ ? "d_in = " + str(row_) + " or more exceeds the limit of " +
                                     str(static_cast<std::size_t>(limits_.max_dim))
                               : str(count_) + " × " + str(row_) + " or more exceeds the limit of " +
                                     str(static_cast<std::size_t>(limits_.max_dim)) + " in either dimension");
    if (!v.is_number()) fail(at(count_ - 1, j), std::string("expected a number, got ") + typeName(v));
    push(v, at(count_ - 1, j));
  }
  void containerInRow(const char* type) { fail(at(count_ - 1, row_), std::string("expected a number, got ") + type); }
  void rowEnd() {
    const std::size_t i = count_ - 1;
    if (row_ == 0) fail(at(i), "need at least one value");
    if (i == 0)
      out_.col_count = row_;
    else if (row_ != out_.col_count)
      fail(at(i), "has " + str(row_) + " values but row 0 has " + str(out_.col_count) +
                      (embeddings_ ? " (rows must all have d_in values)" : ""));
  }
  NumberArray finish() {
    if (count_ == 0)
      fail(field_, embeddings_ ? "need at least one row"
                               : "expected a matrix (a list of rows) or a bias (a list of numbers), got an empty list");
    if (out_.rows) {
      out_.row_count = count_;
    } else {
      out_.row_count = 1;
      out_.col_count = count_;
    }
    return std::move(out_);
  }
  std::size_t bytes() const { return out_.values.capacity() * sizeof(float); }

 private:
  std::string at(std::size_t i) const { return field_ + "[" + str(i) + "]"; }
  std::string at(std::size_t i, std::size_t j) const { return at(i) + "[" + str(j) + "]"; }
  // Finite once rounded to float32: FLT_MAX prints as 3.4028235e+38, a hair above it as a double,
  // and rounds down to it; from FLT_MAX + half an ulp on, a double rounds to ±∞ (and casting it is
  // undefined in C++), so that is checked before the cast.
  void push(const json& v, const std::string& where) {
    const double d = v.get<double>();
    if (!(std::fabs(d) < 3.4028235677973366e38)) fail(where, "not a finite float32 number: " + v.dump());
    out_.values.push_back(static_cast<float>(d));
  }

  std::string field_;
  bool embeddings_;
  const Limits& limits_;
  NumberArray out_;
  std::size_t count_ = 0;  // elements (rows) so far
  std::size_t row_ = 0;    // values in the current row
};

// [SECTION] The parse: a tree with a depth limit and a memory bound, numeric arrays aside

class Reader {
 public:
  Reader(const std::string& where, std::int64_t budget, std::int64_t text_bytes, const Limits* limits,
         std::optional<NumberArrays> which)
      : where_(where), budget_(budget), held_(text_bytes), limits_(limits), which_(which) {}

  json parse(const std::string& text) {
    json tree;
    try {
      tree = json::parse(text, [this](int, json::parse_event_t event, json& parsed) { return on(event, parsed); });
    } catch (const json::parse_error& e) {
      throw JsonSyntaxError(where_ + ": " + parseMessage(e), e.byte, parseMessage(e));
    } catch (const json::exception& e) {
      throw JsonSyntaxError(where_ + ": " + parseMessage(e), 0, parseMessage(e));
    }
    return tree;
  }
  std::map<std::string, NumberArray> arrays;

 private:
  struct Frame {
    bool array = false;
    std::string key;                          // an object's member being read
    std::optional<NumberArrayReader> target;  // this array is read into floats …
    std::string field;                        // … as this field
    bool row = false;                         // this array is a row of the parent's target
  };

  bool on(json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    switch (event) {
      case E::key:
        frames_.back().key = parsed.get<std::string>();
        count(kMemberBytes + static_cast<std::int64_t>(frames_.back().key.size()));
        return true;
      case E::object_start:
      case E::array_start: {
        const bool array = event == E::array_start;
        if (!frames_.empty() && frames_.back().target) {  // inside a numeric array
          if (!array) {
            frames_.back().target->element(json::object());
          } else {
            frames_.back().target->rowStart();
            Frame row;
            row.array = row.row = true;
            frames_.push_back(std::move(row));
            return true;
          }
        }
        if (!frames_.empty() && frames_.back().row)
          frames_[frames_.size() - 2].target->containerInRow(array ? "array" : "object");
        Frame f;
        f.array = array;
        if (array) {
          if (auto field = targetField()) {
            f.target.emplace(*field, *field == "embeddings", *limits_);
            f.field = *field;
          }
        }
        frames_.push_back(std::move(f));
        if (static_cast<int>(frames_.size()) > kMaxJsonDepth) {
          const std::string top = frames_.size() > 1 && !frames_[0].key.empty() ? frames_[0].key : where_;
          fail(top, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        }
        count(kValueBytes);
        return true;
      }
      case E::object_end:
      case E::array_end: {
        Frame f = std::move(frames_.back());
        frames_.pop_back();
        if (f.row) {
          frames_.back().target->rowEnd();
          return false;  // the numbers are in the reader: no empty row in the tree
        }
        if (f.target) arrays[f.field] = f.target->finish();
        return true;
      }
      case E::value:
        if (!frames_.empty() && frames_.back().target) {
          const std::size_t before = frames_.back().target->bytes();
          frames_.back().target->element(parsed);
          grew(before, frames_.back().target->bytes());
          return false;
        }
        if (!frames_.empty() && frames_.back().row) {
          NumberArrayReader& t = *frames_[frames_.size() - 2].target;
          const std::size_t before = t.bytes();
          t.inRow(parsed);
          grew(before, t.bytes());
          return false;
        }
        count(kValueBytes +
              (parsed.is_string() ? static_cast<std::int64_t>(parsed.get_ref<const std::string&>().size()) : 0));
        return true;
    }
    return true;
  }

  // The field an array starting now is read as, if it is one of `which_`'s.
  std::optional<std::string> targetField() const {
    if (!which_ || frames_.empty() || frames_.back().array) return std::nullopt;
    const std::size_t depth = frames_.size();  // the array is the member `key` of frames_.back()
    const std::string& key = frames_.back().key;
    if (depth == 1 && which_ == NumberArrays::Workspace && key == "embeddings") return std::string("embeddings");
    if (depth == 2 && frames_[0].key == "parameters" && !frames_[0].array) return "parameters." + key;
    // A parameters object's members; in a workspace given instead, only its "parameters" (its
    // other members are no tensors, whatever order they come in).
    if (depth == 1 && which_ == NumberArrays::ParameterObject) {
      for (const char* member : {"format", "version", "tokens", "embeddings", "model", "parameters", "view"})
        if (key == member) return std::nullopt;
      return "parameters." + key;
    }
    return std::nullopt;
  }
  void count(std::int64_t bytes) {
    held_ += bytes;
    if (budget_ > 0 && held_ > budget_) over();
  }
  void grew(std::size_t before, std::size_t after) {
    count(static_cast<std::int64_t>(after) - static_cast<std::int64_t>(before));
  }
  [[noreturn]] void over() const {
    fail(where_, "reading it needs more than the memory budget of " + formatBytes(static_cast<double>(budget_)) +
                     " (its text and what is read from it)");
  }

  std::string where_;
  std::int64_t budget_;
  std::int64_t held_;
  const Limits* limits_;
  std::optional<NumberArrays> which_;
  std::vector<Frame> frames_;
};

}  // namespace

std::int64_t jsonTreeBytes(const json& value) {
  std::int64_t bytes = kValueBytes;
  if (value.is_string()) bytes += static_cast<std::int64_t>(value.get_ref<const std::string&>().size());
  if (value.is_object())
    for (auto it = value.begin(); it != value.end(); ++it)
      bytes += kMemberBytes + static_cast<std::int64_t>(it.key().size()) + jsonTreeBytes(it.value());
  if (value.is_array())
    for (const json& e : value) bytes += jsonTreeBytes(e);
  return bytes;
}

json readJson(const std::string& text, const std::string& where, std::int64_t memory_budget) {
  Reader reader(where, memory_budget, static_cast<std::int64_t>(text.size()), nullptr, std::nullopt);
  return reader.parse(text);
}

JsonWithNumbers readJsonWithNumbers(const std::string& text, const std::string& where, const Limits& limits,
                                    NumberArrays which) {
  Reader reader(where, limits.max_memory_bytes, static_cast<std::int64_t>(text.size()), &limits, which);
  JsonWithNumbers out;
  out.tree = reader.parse(text);
  out.arrays = std::move(reader.arrays);
  return out;
}

NumberArray numberArrayOf(const json& array, const std::string& field, bool embeddings, const Limits& limits) {
  if (!array.is_array())
    fail(field,
         embeddings
             ? std::string("expected an array of rows or a {\"random\": …} object, got ") + typeName(array)
             : std::string("expected a matrix (a list of rows) or a bias (a list of numbers), got ") + typeName(array));
  NumberArrayReader reader(field, embeddings, limits);
  for (const json& e : array) {
    if (!e.is_array()) {
      reader.element(e);
      continue;
    }
    reader.rowStart();
    for (const json& v : e) {
      if (v.is_structured()) reader.containerInRow(v.type_name());
      reader.inRow(v);
    }
    reader.rowEnd();
  }
  return reader.finish();
}

}  // namespace attnscope
