// Jinja parser: recursive descent with Jinja's operator precedence, statements by tag name.
#include "chat/parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "chat/lexer.h"
#include "qwen3/error.h"

namespace qwen3::chat {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Template run() { return parse_body({}); }

 private:
  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool at_op(const char* op) const { return peek().kind == TokenKind::op && peek().value == op; }
  bool at_name(const char* name) const {
    return peek().kind == TokenKind::name && peek().value == name;
  }
  bool accept_op(const char* op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* name) {
    if (!at_name(name)) return false;
    next();
    return true;
  }

  [[noreturn]] void fail(const Token& at, const std::string& message) const {
    throw Error(ErrorKind::format, "chat template " + std::to_string(at.line) + ":" +
                                       std::to_string(at.col) + ": " + message);
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::eof: return "end of template";
      case TokenKind::var_end: return "'}}'";
      case TokenKind::block_end: return "'%}'";
      case TokenKind::text: return "text";
      default: return "'" + t.value + "'";
    }
  }

  void expect_op(const char* op) {
    if (!accept_op(op)) fail(peek(), std::string("expected '") + op + "', got " + describe(peek()));
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::name) fail(peek(), "expected a name, got " + describe(peek()));
    return next().value;
  }
  void expect(TokenKind kind, const char* what) {
    if (peek().kind != kind)
      fail(peek(), std::string("expected ") + what + ", got " + describe(peek()));
    next();
  }
  void end_tag() { expect(TokenKind::block_end, "'%}'"); }

  // Guards every recursive descent: blocks and expressions alike.
  struct Depth {
    Parser& p;
    Depth(Parser& parser, const Token& at) : p(parser) {
      if (++p.depth_ > kMaxNesting)
        p.fail(at, "nesting deeper than " + std::to_string(kMaxNesting));
    }
    ~Depth() { --p.depth_; }
  };

  // Statements until a {% tag %} whose name is in `ends` (left unconsumed) or the end of input.
  std::vector<Stmt> parse_body(const std::set<std::string>& ends) {
    std::vector<Stmt> body;
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::eof) return body;
      if (t.kind == TokenKind::text) {
        body.push_back(stmt(Stmt::Kind::text, t));
        body.back().text = next().value;
      } else if (t.kind == TokenKind::var_begin) {
        next();
        Stmt s = stmt(Stmt::Kind::output, t);
        s.expr = parse_expression();
        expect(TokenKind::var_end, "'}}'");
        body.push_back(std::move(s));
      } else {
        const Token& tag = peek(1);
        if (tag.kind == TokenKind::name && ends.count(tag.value)) return body;
        next();
        body.push_back(parse_statement());
      }
    }
  }

  // Consumes the tag that ended a body (its name is returned); at the end of input the block
  // opened by `opener` was never closed.
  std::string close_block(const Token& opener, const char* end_name) {
    if (peek().kind == TokenKind::eof)
      fail(opener, "unclosed '" + opener.value + "' block: expected " + end_name);
    next();  // block_begin
    return next().value;
  }

  Stmt parse_statement() {
    const Token& tag = peek();
    Depth depth(*this, tag);
    if (tag.kind != TokenKind::name) fail(tag, "expected a tag name, got " + describe(tag));
    next();
    Stmt s = stmt(Stmt::Kind::text, tag);
    if (tag.value == "if") return parse_if(tag, std::move(s));
    if (tag.value == "for") return parse_for(tag, std::move(s));
    if (tag.value == "set") return parse_set(tag, std::move(s));
    if (tag.value == "break" || tag.value == "continue") {
      if (loop_depth_ == 0) fail(tag, "'" + tag.value + "' outside a for loop");
      s.kind = tag.value == "break" ? Stmt::Kind::break_loop : Stmt::Kind::continue_loop;
      end_tag();
      return s;
    }
    if (tag.value == "macro") return parse_macro(tag, std::move(s));
    if (tag.value == "generation") {
      s.kind = Stmt::Kind::block;
      end_tag();
      s.body = parse_body({"endgeneration"});
      close_block(tag, "endgeneration");
      end_tag();
      return s;
    }
    if (tag.value.starts_with("end") || tag.value == "else" || tag.value == "elif") {
      fail(tag, "unexpected '" + tag.value + "' outside its block");
    }
    fail(tag, "unknown or unsupported tag '" + tag.value + "'");
  }

  Stmt parse_if(const Token& tag, Stmt s) {
    s.kind = Stmt::Kind::if_chain;
    ExprPtr cond = parse_expression();
    end_tag();
    const std::set<std::string> ends = {"elif", "else", "endif"};
    while (true) {
      auto body = parse_body(ends);
      s.branches.emplace_back(std::move(cond), std::move(body));
      const std::string closer = close_block(tag, "endif");
      if (closer == "elif") {
        cond = parse_expression();
        end_tag();
        continue;
      }
      end_tag();
      if (closer == "else") {
        s.else_body = parse_body({"endif"});
        close_block(tag, "endif");
        end_tag();
      }
      return s;
    }
  }

  Stmt parse_for(const Token& tag, Stmt s) {
    s.kind = Stmt::Kind::for_loop;
    do {
      s.targets.push_back(expect_name());
    } while (accept_op(","));
    if (!accept_name("in")) fail(peek(), "expected 'in' in for loop, got " + describe(peek()));
    s.expr = parse_or();  // no conditional expression: `if` here filters the loop
    if (accept_name("if")) s.filter = parse_or();
    if (at_name("recursive")) fail(peek(), "recursive loops are not supported");
    end_tag();
    ++loop_depth_;
    s.body = parse_body({"else", "endfor"});
    --loop_depth_;
    if (close_block(tag, "endfor") == "else") {
      end_tag();
      s.else_body = parse_body({"endfor"});
      close_block(tag, "endfor");
    }
    end_tag();
    return s;
  }

  Stmt parse_macro(const Token& tag, Stmt s) {
    s.kind = Stmt::Kind::macro;
    s.targets.push_back(expect_name());
    expect_op("(");
    while (!at_op(")")) {
      std::string name = expect_name();
      s.params.emplace_back(std::move(name), accept_op("=") ? parse_expression() : nullptr);
      if (!accept_op(",")) break;
    }
    expect_op(")");
    end_tag();
    const int outer_loops = loop_depth_;
    loop_depth_ = 0;  // a loop around the definition does not surround the body when it runs
    s.body = parse_body({"endmacro"});
    loop_depth_ = outer_loops;
    close_block(tag, "endmacro");
    end_tag();
    return s;
  }

  Stmt parse_set(const Token& tag, Stmt s) {
    s.kind = Stmt::Kind::set;
    s.targets.push_back(expect_name());
    if (accept_op(".")) s.attr = expect_name();
    if (peek().kind == TokenKind::block_end && s.attr.empty()) {
      s.kind = Stmt::Kind::set_block;
      end_tag();
      s.body = parse_body({"endset"});
      close_block(tag, "endset");
      end_tag();
      return s;
    }
    if (at_op(",")) fail(peek(), "tuple assignment in set is not supported");
    expect_op("=");
    s.expr = parse_expression();
    end_tag();
    return s;
  }

  static Stmt stmt(Stmt::Kind kind, const Token& at) {
    Stmt s;
    s.kind = kind;
    s.line = at.line;
    s.col = at.col;
    return s;
  }

  ExprPtr make(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  ExprPtr binary(Expr::Kind kind, const Token& at, std::string op, ExprPtr a, ExprPtr b) {
    auto e = make(kind, at);
    e->name = std::move(op);
    e->operands.push_back(std::move(a));
    e->operands.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_expression() {
    const Token& at = peek();
    Depth depth(*this, at);
    ExprPtr value = parse_or();
    if (!accept_name("if")) return value;
    auto e = make(Expr::Kind::conditional, at);
    e->operands.push_back(std::move(value));
    e->operands.push_back(parse_or());
    e->operands.push_back(accept_name("else") ? parse_expression() : nullptr);
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      const Token& at = next();
      left = binary(Expr::Kind::logical_or, at, "or", std::move(left), parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      const Token& at = next();
      left = binary(Expr::Kind::logical_and, at, "and", std::move(left), parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    if (!at_name("not")) return parse_compare();
    const Token& at = next();
    Depth depth(*this, at);
    auto e = make(Expr::Kind::unary, at);
    e->name = "not";
    e->operands.push_back(parse_not());
    return e;
  }

  ExprPtr parse_compare() {
    ExprPtr left = parse_math1();
    const Token& at = peek();
    std::string op;
    if (at.kind == TokenKind::op && (at.value == "==" || at.value == "!=" || at.value == "<" ||
                                     at.value == "<=" || at.value == ">" || at.value == ">=")) {
      op = next().value;
    } else if (at_name("in")) {
      op = next().value;
    } else if (at_name("not") && peek(1).kind == TokenKind::name && peek(1).value == "in") {
      next();
      next();
      op = "not in";
    } else {
      return left;
    }
    ExprPtr cmp = binary(Expr::Kind::binary, at, op, std::move(left), parse_math1());
    const Token& after = peek();
    if ((after.kind == TokenKind::op &&
         (after.value == "==" || after.value == "!=" || after.value == "<" || after.value == "<=" ||
          after.value == ">" || after.value == ">=")) ||
        at_name("in")) {
      fail(after, "chained comparisons are not supported; join them with 'and'");
    }
    return cmp;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& at = next();
      left = binary(Expr::Kind::binary, at, at.value, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (at_op("~")) {
      const Token& at = next();
      left = binary(Expr::Kind::binary, at, "~", std::move(left), parse_math2());
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& at = next();
      left = binary(Expr::Kind::binary, at, at.value, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (at_op("**")) {
      const Token& at = next();
      left = binary(Expr::Kind::binary, at, "**", std::move(left), parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    const Token& at = peek();
    Depth depth(*this, at);
    ExprPtr node;
    if (at_op("-") || at_op("+")) {
      next();
      node = make(Expr::Kind::unary, at);
      node->name = at.value;
      node->operands.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    return with_filter ? parse_filters(std::move(node)) : std::move(node);
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case TokenKind::name: {
        next();
        auto e = make(Expr::Kind::literal, t);
        if (t.value == "true" || t.value == "True") {
          e->value = Value::of(true);
        } else if (t.value == "false" || t.value == "False") {
          e->value = Value::of(false);
        } else if (t.value == "none" || t.value == "None") {
          e->value = Value::of(nullptr);
        } else {
          e->kind = Expr::Kind::name;
          e->name = t.value;
        }
        return e;
      }
      case TokenKind::string: {
        auto e = make(Expr::Kind::literal, t);
        std::string s;
        while (peek().kind == TokenKind::string) s += next().value;  // adjacent literals join
        e->value = Value::of(std::move(s));
        return e;
      }
      case TokenKind::integer: {
        next();
        auto e = make(Expr::Kind::literal, t);
        int64_t v = 0;
        auto [ptr, ec] = std::from_chars(t.value.data(), t.value.data() + t.value.size(), v);
        if (ec != std::errc()) fail(t, "integer literal out of range: " + t.value);
        e->value = Value::of(v);
        return e;
      }
      case TokenKind::floating: {
        next();
        auto e = make(Expr::Kind::literal, t);
        e->value = Value::of(std::strtod(t.value.c_str(), nullptr));
        return e;
      }
      case TokenKind::op:
        if (t.value == "(") return parse_paren();
        if (t.value == "[") return parse_list();
        if (t.value == "{") return parse_dict();
        break;
      default: break;
    }
    fail(t, "unexpected " + describe(t));
  }

  ExprPtr parse_paren() {
    const Token& at = next();
    if (accept_op(")")) return make(Expr::Kind::list, at);  // ()
    ExprPtr first = parse_expression();
    if (accept_op(")")) return first;
    auto tuple = make(Expr::Kind::list, at);
    tuple->operands.push_back(std::move(first));
    while (accept_op(",")) {
      if (at_op(")")) break;
      tuple->operands.push_back(parse_expression());
    }
    expect_op(")");
    return tuple;
  }

  ExprPtr parse_list() {
    auto list = make(Expr::Kind::list, next());
    while (!at_op("]")) {
      list->operands.push_back(parse_expression());
      if (!accept_op(",")) break;
    }
    expect_op("]");
    return list;
  }

  ExprPtr parse_dict() {
    auto dict = make(Expr::Kind::dict, next());
    while (!at_op("}")) {
      dict->operands.push_back(parse_expression());
      expect_op(":");
      dict->operands.push_back(parse_expression());
      if (!accept_op(",")) break;
    }
    expect_op("}");
    return dict;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      const Token& at = peek();
      if (accept_op(".")) {
        auto e = make(Expr::Kind::attr, at);
        if (peek().kind == TokenKind::integer) {
          e->kind = Expr::Kind::index;
          e->operands.push_back(std::move(node));
          e->operands.push_back(parse_primary());
        } else {
          e->name = expect_name();
          e->operands.push_back(std::move(node));
        }
        node = std::move(e);
      } else if (accept_op("[")) {
        node = parse_subscript(at, std::move(node));
      } else if (at_op("(")) {
        node = parse_call(make(Expr::Kind::call, at), std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(const Token& at, ExprPtr object) {
    auto e = make(Expr::Kind::index, at);
    e->operands.push_back(std::move(object));
    ExprPtr first = at_op(":") ? nullptr : parse_expression();
    if (accept_op("]")) {
      e->operands.push_back(std::move(first));
      return e;
    }
    e->kind = Expr::Kind::slice;
    e->operands.push_back(std::move(first));
    expect_op(":");
    e->operands.push_back(at_op(":") || at_op("]") ? nullptr : parse_expression());
    if (accept_op(":")) {
      e->operands.push_back(at_op("]") ? nullptr : parse_expression());
    } else {
      e->operands.push_back(nullptr);
    }
    expect_op("]");
    return e;
  }

  // Arguments in parentheses: positional first, then name=value.
  ExprPtr parse_call(ExprPtr call, ExprPtr callee) {
    if (callee) call->operands.push_back(std::move(callee));
    expect_op("(");
    while (!at_op(")")) {
      if (peek().kind == TokenKind::name && peek(1).kind == TokenKind::op && peek(1).value == "=") {
        std::string name = next().value;
        next();
        call->kwargs.emplace_back(std::move(name), parse_expression());
      } else {
        if (!call->kwargs.empty()) fail(peek(), "positional argument follows keyword argument");
        call->operands.push_back(parse_expression());
      }
      if (!accept_op(",")) break;
    }
    expect_op(")");
    return call;
  }

  ExprPtr parse_filters(ExprPtr node) {
    while (true) {
      const Token& at = peek();
      if (accept_op("|")) {
        auto e = make(Expr::Kind::filter, at);
        e->name = expect_name();
        e->operands.push_back(std::move(node));
        node = at_op("(") ? parse_call(std::move(e), nullptr) : std::move(e);
      } else if (accept_name("is")) {
        auto e = make(Expr::Kind::test, at);
        e->negated = accept_name("not");
        e->name = expect_name();
        e->operands.push_back(std::move(node));
        node = at_op("(") ? parse_call(std::move(e), nullptr) : std::move(e);
      } else if (at_op("(")) {
        node = parse_call(make(Expr::Kind::call, at), std::move(node));
      } else {
        return node;
      }
    }
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;       // blocks and expressions open around the current token
  int loop_depth_ = 0;  // for loops open around the current token, for break/continue
};

}  // namespace

Template parse(const std::string& source) { return Parser(tokenize(source)).run(); }

}  // namespace qwen3::chat
