// Jinja lexer: splits text from {{ }} / {% %} / {# #} tags and tokenizes the expressions inside
// tags.
#include "chat/lexer.h"

#include <algorithm>
#include <cstring>

#include "qwen3/error.h"

namespace qwen3::chat {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool strip_next =
        false;  // the previous tag ended with '-': drop leading whitespace of the text
    while (pos < src_.size()) {
      size_t open = find_tag(pos);
      std::string text = src_.substr(pos, open - pos);
      if (strip_next)
        text.erase(0, std::find_if_not(text.begin(), text.end(), is_space) - text.begin());
      strip_next = false;
      if (open == src_.size()) {
        emit_text(text, pos);
        break;
      }
      const char type = src_[open + 1];
      const char sign = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (sign == '-') {
        text.erase(std::find_if_not(text.rbegin(), text.rend(), is_space).base(), text.end());
      } else if (sign != '+' && type != '{') {
        // lstrip_blocks: indentation alone on its line before {% or {# is dropped.
        const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        const bool at_line_start = line_start > 0 || pos == 0 || src_[pos - 1] == '\n';
        if (at_line_start &&
            std::all_of(text.begin() + static_cast<long>(line_start), text.end(), is_space)) {
          text.erase(line_start);
        }
      }
      emit_text(text, pos);
      size_t body = open + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (type == '#') {
        pos = end_comment(open, body, strip_next);
      } else {
        pos = lex_tag(open, body, type == '{', strip_next);
      }
    }
    tokens_.push_back({TokenKind::eof, "", 0, 0});
    set_position(tokens_.back(), src_.size());
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t pos) const {
    while (true) {
      pos = src_.find('{', pos);
      if (pos == std::string::npos || pos + 1 >= src_.size()) return src_.size();
      const char next = src_[pos + 1];
      if (next == '{' || next == '%' || next == '#') return pos;
      ++pos;
    }
  }

  void set_position(Token& t, size_t offset) const {
    const auto line = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
    t.line = 1 + static_cast<int>(line - line_starts_.begin());
    t.col = 1 + static_cast<int>(offset - *line);
  }

  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    Token t{};
    set_position(t, offset);
    throw Error(ErrorKind::format, "chat template " + std::to_string(t.line) + ":" +
                                       std::to_string(t.col) + ": " + message);
  }

  void emit(TokenKind kind, std::string value, size_t offset) {
    tokens_.push_back({kind, std::move(value), 0, 0});
    set_position(tokens_.back(), offset);
  }

  void emit_text(std::string& text, size_t offset) {
    if (!text.empty()) emit(TokenKind::text, std::move(text), offset);
  }

  // After a closing %} or #}: '-' strips all following whitespace, otherwise trim_blocks eats one
  // newline.
  size_t after_close(size_t pos, char sign, bool block, bool& strip_next) {
    if (sign == '-') {
      strip_next = true;
    } else if (block && sign != '+' && pos < src_.size() && src_[pos] == '\n') {
      ++pos;
    }
    return pos;
  }

  size_t end_comment(size_t open, size_t body, bool& strip_next) {
    const size_t close = src_.find("#}", body);
    if (close == std::string::npos) fail(open, "unclosed comment '{#'");
    const char sign =
        close > body && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : '\0';
    return after_close(close + 2, sign, true, strip_next);
  }

  size_t lex_tag(size_t open, size_t pos, bool variable, bool& strip_next) {
    emit(variable ? TokenKind::var_begin : TokenKind::block_begin, "", open);
    const char* close = variable ? "}}" : "%}";
    while (true) {
      while (pos < src_.size() && is_space(src_[pos])) ++pos;
      if (pos >= src_.size())
        fail(open, std::string("unclosed tag '") + (variable ? "{{" : "{%") + "'");
      const char c = src_[pos];
      if ((c == '-' || c == '+') && src_.compare(pos + 1, 2, close) == 0) {
        emit(variable ? TokenKind::var_end : TokenKind::block_end, "", pos);
        return after_close(pos + 3, c, !variable, strip_next);
      }
      if (src_.compare(pos, 2, close) == 0) {
        emit(variable ? TokenKind::var_end : TokenKind::block_end, "", pos);
        return after_close(pos + 2, '\0', !variable, strip_next);
      }
      if (is_name_start(c)) {
        size_t end = pos;
        while (end < src_.size() && (is_name_start(src_[end]) || is_digit(src_[end]))) ++end;
        emit(TokenKind::name, src_.substr(pos, end - pos), pos);
        pos = end;
      } else if (is_digit(c)) {
        pos = lex_number(pos);
      } else if (c == '\'' || c == '"') {
        pos = lex_string(pos);
      } else {
        pos = lex_operator(pos);
      }
    }
  }

  size_t lex_number(size_t start) {
    size_t pos = start;
    std::string spelling;
    auto digits = [&] {
      while (pos < src_.size() &&
             (is_digit(src_[pos]) ||
              (src_[pos] == '_' && pos + 1 < src_.size() && is_digit(src_[pos + 1])))) {
        if (src_[pos] != '_') spelling += src_[pos];
        ++pos;
      }
    };
    digits();
    bool floating = false;
    if (pos + 1 < src_.size() && src_[pos] == '.' && is_digit(src_[pos + 1])) {
      floating = true;
      spelling += src_[pos++];
      digits();
    }
    if (pos < src_.size() && (src_[pos] == 'e' || src_[pos] == 'E')) {
      size_t exp = pos + 1;
      if (exp < src_.size() && (src_[exp] == '+' || src_[exp] == '-')) ++exp;
      if (exp < src_.size() && is_digit(src_[exp])) {
        floating = true;
        spelling += src_.substr(pos, exp - pos);
        pos = exp;
        digits();
      }
    }
    emit(floating ? TokenKind::floating : TokenKind::integer, spelling, start);
    return pos;
  }

  // Python string escapes, as Jinja decodes literals with unicode-escape.
  size_t lex_string(size_t start) {
    const char quote = src_[start];
    std::string value;
    size_t pos = start + 1;
    while (true) {
      if (pos >= src_.size()) fail(start, "unterminated string literal");
      const char c = src_[pos++];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (pos >= src_.size()) fail(start, "unterminated string literal");
      const char e = src_[pos++];
      if (e == '\n') continue;  // a backslash-newline joins lines
      const char simple = e == 'n'    ? '\n'
                          : e == 't'  ? '\t'
                          : e == 'r'  ? '\r'
                          : e == '\\' ? '\\'
                          : e == '\'' ? '\''
                          : e == '"'  ? '"'
                          : e == 'a'  ? '\a'
                          : e == 'b'  ? '\b'
                          : e == 'f'  ? '\f'
                          : e == 'v'  ? '\v'
                                      : '\0';
      if (simple != '\0') {
        value += simple;
      } else if (e == 'x' || e == 'u' || e == 'U') {
        const size_t len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (pos + len > src_.size()) fail(pos - 2, "truncated \\" + std::string(1, e) + " escape");
        uint32_t cp = 0;
        for (size_t i = 0; i < len; ++i) {
          const char h = src_[pos + i];
          const int d = is_digit(h)              ? h - '0'
                        : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                        : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                 : -1;
          if (d < 0) fail(pos - 2, "truncated \\" + std::string(1, e) + " escape");
          cp = cp * 16 + static_cast<uint32_t>(d);
        }
        if (cp > 0x10ffff) fail(pos - 2, "illegal Unicode character in escape");
        pos += len;
        append_utf8(value, cp);
      } else {
        value += '\\';  // Python keeps unknown escapes verbatim
        value += e;
      }
    }
    emit(TokenKind::string, std::move(value), start);
    return pos;
  }

  size_t lex_operator(size_t pos) {
    static const char* const two[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : two) {
      if (src_.compare(pos, 2, op) == 0) {
        emit(TokenKind::op, op, pos);
        return pos + 2;
      }
    }
    if (std::strchr("+-*/%~<>()[]{}.,:|=", src_[pos]) && src_[pos] != '\0') {
      emit(TokenKind::op, std::string(1, src_[pos]), pos);
      return pos + 1;
    }
    fail(pos, std::string("unexpected character '") + src_[pos] + "'");
  }

  std::string src_;
  std::vector<size_t> line_starts_{0};  // offsets where each line begins, for line:col
  std::vector<Token> tokens_;
};

// Jinja normalises every line ending to \n and, without keep_trailing_newline, drops one final
// newline.
std::string normalize_newlines(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> tokenize(const std::string& source) {
  return Lexer(normalize_newlines(source)).run();
}

}  // namespace qwen3::chat
