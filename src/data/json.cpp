#include "data/json.hpp"

#include <charconv>
#include <cstdlib>
#include <unordered_set>

namespace kiln::detail {

const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, int max_depth) : text_(text), max_depth_(max_depth) {}

  Json document() {
    skip_space();
    Json v = value(0);
    skip_space();
    if (pos_ != text_.size()) fail("text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw JsonError(what + " at byte " + std::to_string(pos_));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool take(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }

  void word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) fail("unknown value");
    pos_ += w.size();
  }

  Json value(int depth) {
    if (depth > max_depth_) fail("nested deeper than " + std::to_string(max_depth_));
    if (++values_ > text_.size() / 4 + 64) fail("too many values for the text's size");
    if (pos_ >= text_.size()) fail("unexpected end of text");
    Json v;
    switch (text_[pos_]) {
      case '{': object(v, depth); break;
      case '[': array(v, depth); break;
      case '"':
        v.kind = Json::Kind::string;
        v.string = string();
        break;
      case 't':
        word("true");
        v.kind = Json::Kind::boolean;
        v.boolean = true;
        break;
      case 'f':
        word("false");
        v.kind = Json::Kind::boolean;
        break;
      case 'n': word("null"); break;
      default: number(v);
    }
    return v;
  }

  void object(Json& v, int depth) {
    v.kind = Json::Kind::object;
    expect('{');
    skip_space();
    if (take('}')) return;
    std::unordered_set<std::string> keys;
    do {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a key");
      std::string key = string();
      if (!keys.insert(key).second) fail("duplicate key \"" + key + "\"");
      skip_space();
      expect(':');
      skip_space();
      Json member = value(depth + 1);
      v.object.push_back({std::move(key), std::move(member)});
      skip_space();
    } while (take(','));
    expect('}');
  }

  void array(Json& v, int depth) {
    v.kind = Json::Kind::array;
    expect('[');
    skip_space();
    if (take(']')) return;
    do {
      skip_space();
      v.array.push_back(value(depth + 1));
      skip_space();
    } while (take(','));
    expect(']');
  }

  unsigned hex4() {
    if (text_.size() - pos_ < 4) fail("truncated \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9')
        code |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        code |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        code |= static_cast<unsigned>(c - 'A' + 10);
      else
        fail("bad \\u escape");
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated string");
      switch (text_[pos_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xD800 && code < 0xDC00) {  // a surrogate pair
            if (!(take('\\') && take('u'))) fail("unpaired surrogate");
            const unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("unpaired surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            fail("unpaired surrogate");
          }
          append_utf8(out, code);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  void number(Json& v) {
    const std::size_t start = pos_;
    take('-');
    if (take('0')) {
    } else if (pos_ < text_.size() && text_[pos_] >= '1' && text_[pos_] <= '9') {
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    } else {
      fail("unexpected character");
    }
    bool integer = true;
    if (take('.')) {
      integer = false;
      digits();
    }
    if (take('e') || take('E')) {
      integer = false;
      if (!take('+')) take('-');
      digits();
    }
    v.kind = Json::Kind::number;
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integer) {
      const auto [end, error] = std::from_chars(first, last, v.integer);
      v.is_integer = error == std::errc() && end == last;
    }
    if (v.is_integer) {
      v.number = static_cast<double>(v.integer);
    } else {
      // strtod rounds what is out of a double's range to infinity or zero, as JSON readers do.
      v.number = std::strtod(std::string(first, last).c_str(), nullptr);
    }
  }

  void digits() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    if (pos_ == start) fail("expected a digit");
  }

  std::string_view text_;
  int max_depth_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;
};

}  // namespace

Json parse_json(std::string_view text, int max_depth) { return Parser(text, max_depth).document(); }

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[(c >> 4) & 0xF];
          out += hex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace kiln::detail
