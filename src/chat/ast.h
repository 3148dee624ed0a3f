// Syntax tree of a parsed Jinja template: expressions and statements, each with its line:col.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace qwen3::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    literal,      // value
    name,         // name
    attr,         // operands[0].name
    index,        // operands[0][operands[1]]
    slice,        // operands[0][operands[1]:operands[2]:operands[3]], absent parts null
    call,         // operands[0](operands[1..], kwargs)
    filter,       // operands[0] | name(operands[1..], kwargs)
    test,         // operands[0] is [not] name(operands[1..])
    unary,        // name operands[0], name is "-", "+" or "not"
    binary,       // operands[0] name operands[1], arithmetic, comparison, "in", "not in", "~"
    logical_and,  // operands[0] and operands[1], short-circuit
    logical_or,   // operands[0] or operands[1], short-circuit
    conditional,  // operands[0] if operands[1] else operands[2] (null: undefined)
    list,         // [operands...] and tuples
    dict,         // {operands[0]: operands[1], ...}
  };
  Kind kind;
  int line = 0;
  int col = 0;
  std::string name;
  Value value;
  bool negated = false;  // test: "is not"
  std::vector<ExprPtr> operands;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt {
  enum class Kind {
    text,       // text
    output,     // {{ expr }}
    if_chain,   // branches, else_body
    for_loop,   // for targets in expr [if filter]: body, else_body
    set,        // set targets[0] (or targets[0].attr) = expr
    set_block,  // set targets[0] %} body {% endset
    break_loop,
    continue_loop,
    block,  // body only: HF's {% generation %} marker renders its contents
    macro,  // macro targets[0](params): body
  };
  Kind kind;
  int line = 0;
  int col = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::string> targets;
  std::string attr;
  std::vector<std::pair<ExprPtr, std::vector<Stmt>>> branches;
  std::vector<Stmt> body;
  std::vector<Stmt> else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro: name and default (null: required)
};

using Template = std::vector<Stmt>;

}  // namespace qwen3::chat
