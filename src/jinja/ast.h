// Syntax tree of a parsed template: expressions (Expr) and statements (Stmt).
// One tagged struct per family keeps the parser and interpreter short; the
// comment on each kind says which fields it uses.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace qinfer::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Const,     // value
  Name,      // name
  List,      // items
  Tuple,     // items
  Dict,      // items: key0, value0, key1, value1, ...
  Getattr,   // a . name
  Getitem,   // a [ b ]
  Slice,     // a [ b : c : d ]   (b, c, d may be null)
  Call,      // a ( items, kwargs, dyn_args, dyn_kwargs )
  Filter,    // a | name ( items, kwargs... )   (a null inside filter blocks)
  Test,      // a is name ( items, kwargs... )
  Not,       // not a
  Neg,       // - a
  Pos,       // + a
  Binary,    // a <name> b    (+ - * / // % **)
  Concat,    // items joined with ~
  Compare,   // items[0] ops[0] items[1] ops[1] items[2] ...
  And,       // a and b
  Or,        // a or b
  CondExpr,  // b if a else c  (c may be null)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  std::string name;
  Value value;
  ExprPtr a, b, c, d;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args, dyn_kwargs;
  std::vector<std::string> ops;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  Data,         // text
  Output,       // expr
  If,           // expr, body, else_body (elif = nested If in else_body)
  For,          // target, expr (iterable), cond (loop filter, may be null), body, else_body, recursive
  Set,          // target (Name / Tuple), expr
  SetAttr,      // name (namespace variable), attr, expr
  SetBlock,     // target (Name), filter (may be null), body
  Macro,        // name, params, defaults (aligned to the last params), body
  CallBlock,    // params/defaults (caller signature), expr (the Call), body
  FilterBlock,  // filter (Filter chain with null innermost input), body
  With,         // targets/values, body
  Break,
  Continue,
  Scope,        // body (e.g. {% generation %}: rendered as is)
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;  // Data
  std::string name, attr;
  ExprPtr expr, target, cond, filter;
  Body body, else_body;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;
  std::vector<ExprPtr> targets, values;
  bool uses_varargs = false, uses_kwargs = false, uses_caller = false;  // Macro
  bool recursive = false;                                                // For: `loop(items)` recurses
};

}  // namespace qinfer::jinja
