// The structural description of loop IR (ir/loop/fields.h) and what comes
// from it: canonical_bytes() (the kernel-cache key), equal() and
// structural_hash(). Every field of every node kind is perturbed once and
// must change all three; the table is checked against the field lists, so a
// field added to fields.h without a case here fails.
#include <gtest/gtest.h>

#include <bit>
#include <functional>
#include <map>
#include <set>

#include "ir/loop/canonical.h"
#include "ir/loop/fields.h"
#include "ir/loop/visitor.h"
#include "tests/unit/random_test_util.h"

namespace kiln::loop {
namespace {

Expr var(const char* name, VType t = i64_t()) {
  return Var::make(t, name);
}
Expr f32(double v) {
  return FloatImm::make({DType::F32, 1}, v);
}
Expr f64(double v) {
  return FloatImm::make({DType::F64, 1}, v);
}
Expr i64(int64_t v) {
  return make_int(v);
}
VType f32x(int lanes) {
  return {DType::F32, lanes};
}

// An expression as a statement, so it can sit in a kernel.
Stmt sink(const Expr& e) {
  return ExternCall::make("sink", {e}, {});
}
Kernel kernel_of(const Stmt& body) {
  return Kernel{"k", {}, {}, body};
}

// One perturbed field: `a` and `b` differ only there (and in what follows
// from it, such as a Binary's type when its operands' types change).
struct Case {
  NodeKind kind;
  std::string field;  // a name from Fields<kind>, or "type"
  Expr ea, eb;        // an expression case, or
  Stmt sa, sb;        // a statement case
};

std::vector<Case> cases() {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Buf xd = make_buf("x", DType::F64);
  Expr i = var("i"), j = var("j");
  Expr ld = Load::make(x, i);
  Expr t = Compare::make(CmpOp::LT, i, j);
  Expr t2 = Compare::make(CmpOp::LE, i, j);
  Stmt st = Store::make(x, i, f32(1)), st2 = Store::make(x, j, f32(1));
  using K = NodeKind;
  std::vector<Case> c;
  auto e = [&](K k, const char* f, Expr a, Expr b) { c.push_back({k, f, a, b, {}, {}}); };
  auto s = [&](K k, const char* f, Stmt a, Stmt b) { c.push_back({k, f, {}, {}, a, b}); };

  e(K::IntImm, "value", i64(1), i64(2));
  e(K::IntImm, "type", i64(1), IntImm::make({DType::I32, 1}, 1));
  e(K::FloatImm, "value", f32(0.5), f32(0.25));
  e(K::FloatImm, "type", f32(0.5), f64(0.5));
  e(K::Var, "name", i, j);
  e(K::Var, "type", i, var("i", {DType::I32, 1}));
  e(K::Cast, "value", Cast::make(f32x(1), i), Cast::make(f32x(1), j));
  e(K::Cast, "type", Cast::make(f32x(1), i), Cast::make({DType::F64, 1}, i));
  e(K::Binary, "op", i + j, i - j);
  e(K::Binary, "a", i + j, j + j);
  e(K::Binary, "b", i + j, i + i);
  e(K::Compare, "op", t, t2);
  e(K::Compare, "a", i < j, j < j);
  e(K::Compare, "b", i < j, i < i);
  e(K::Not, "a", Not::make(t), Not::make(t2));
  e(K::Select, "cond", Select::make(t, i, j), Select::make(t2, i, j));
  e(K::Select, "true_value", Select::make(t, i, j), Select::make(t, j, j));
  e(K::Select, "false_value", Select::make(t, i, j), Select::make(t, i, i));
  e(K::Load, "buf", ld, Load::make(y, i));
  e(K::Load, "buf", ld, Load::make(xd, i));  // same name, other dtype
  e(K::Load, "index", ld, Load::make(x, j));
  e(K::Load, "predicate", ld, Load::make(x, i, t));
  e(K::Load, "predicate", Load::make(x, i, t), Load::make(x, i, t2));
  e(K::Ramp, "base", Ramp::make(i, i64(1), 8), Ramp::make(j, i64(1), 8));
  e(K::Ramp, "stride", Ramp::make(i, i64(1), 8), Ramp::make(i, i64(2), 8));
  e(K::Ramp, "type", Ramp::make(i, i64(1), 8), Ramp::make(i, i64(1), 4));
  e(K::Broadcast, "value", Broadcast::make(i, 8), Broadcast::make(j, 8));
  e(K::Broadcast, "type", Broadcast::make(i, 8), Broadcast::make(i, 16));
  e(K::Call, "name", Call::make(f32x(1), "exp", {f32(1)}), Call::make(f32x(1), "log", {f32(1)}));
  e(K::Call, "args", Call::make(f32x(1), "exp", {f32(1)}), Call::make(f32x(1), "exp", {f32(2)}));
  e(K::Call, "args", Call::make(f32x(1), "pow", {f32(1)}),
    Call::make(f32x(1), "pow", {f32(1), f32(1)}));
  e(K::Call, "type", Call::make(f32x(1), "exp", {f32(1)}), Call::make(f32x(8), "exp", {f32(1)}));
  e(K::Let, "var", Let::make(i, j, i + i), Let::make(var("k"), j, i + i));
  e(K::Let, "value", Let::make(i, j, i + i), Let::make(i, i64(3), i + i));
  e(K::Let, "body", Let::make(i, j, i + i), Let::make(i, j, i * i));

  auto loop = [&](ForKind k, Expr v, Expr lo, Expr n, Stmt b) { return For::make(v, lo, n, k, b); };
  Stmt base = loop(ForKind::Serial, i, i64(0), j, st);
  s(K::For, "for_kind", base, loop(ForKind::Parallel, i, i64(0), j, st));
  s(K::For, "var", base, loop(ForKind::Serial, var("k"), i64(0), j, st));
  s(K::For, "min", base, loop(ForKind::Serial, i, i64(1), j, st));
  s(K::For, "extent", base, loop(ForKind::Serial, i, i64(0), i64(4), st));
  s(K::For, "body", base, loop(ForKind::Serial, i, i64(0), j, st2));
  s(K::Store, "buf", st, Store::make(y, i, f32(1)));
  s(K::Store, "index", st, st2);
  s(K::Store, "value", st, Store::make(x, i, f32(2)));
  s(K::Store, "predicate", st, Store::make(x, i, f32(1), t));
  s(K::Block, "stmts", Block::make({st, st2}), Block::make({st2, st}));
  s(K::Block, "stmts", Block::make({st, st2}), Block::make({st, st2, st}));
  Buf tmp = make_buf("t", DType::F32), tmp2 = make_buf("u", DType::F32);
  Stmt al = Allocate::make(tmp, i64(16), MemoryScope::Stack, st);
  s(K::Allocate, "buf", al, Allocate::make(tmp2, i64(16), MemoryScope::Stack, st));
  s(K::Allocate, "scope", al, Allocate::make(tmp, i64(16), MemoryScope::Heap, st));
  s(K::Allocate, "size", al, Allocate::make(tmp, i64(32), MemoryScope::Stack, st));
  s(K::Allocate, "body", al, Allocate::make(tmp, i64(16), MemoryScope::Stack, st2));
  Stmt ite = IfThenElse::make(t, st);
  s(K::IfThenElse, "cond", ite, IfThenElse::make(t2, st));
  s(K::IfThenElse, "then_case", ite, IfThenElse::make(t, st2));
  s(K::IfThenElse, "else_case", ite, IfThenElse::make(t, st, st2));
  Stmt ls = LetStmt::make(i, j, st);
  s(K::LetStmt, "var", ls, LetStmt::make(var("k"), j, st));
  s(K::LetStmt, "value", ls, LetStmt::make(i, i64(2), st));
  s(K::LetStmt, "body", ls, LetStmt::make(i, j, st2));
  s(K::Barrier, "(kind)", Barrier::make(), st);  // no fields: only the kind tells it apart
  Stmt ec = ExternCall::make("gemm", {i}, {x});
  s(K::ExternCall, "name", ec, ExternCall::make("gemv", {i}, {x}));
  s(K::ExternCall, "args", ec, ExternCall::make("gemm", {j}, {x}));
  s(K::ExternCall, "args", ec, ExternCall::make("gemm", {i, i}, {x}));
  s(K::ExternCall, "bufs", ec, ExternCall::make("gemm", {i}, {y}));
  s(K::ExternCall, "bufs", ec, ExternCall::make("gemm", {i}, {x, x}));
  return c;
}

struct KindInfo {
  const char* name;
  size_t fields;
};

std::map<NodeKind, KindInfo> all_kinds() {
  std::map<NodeKind, KindInfo> m;
#define KILN_EXPR_NODE(Name) m[NodeKind::Name] = {#Name, Fields<Name>::List::size};
#define KILN_STMT_NODE(Name) m[NodeKind::Name] = {#Name, Fields<Name>::List::size};
#include "ir/loop/nodes.def"
  return m;
}

TEST(LoopCanonical, EveryFieldOfEveryKindIsPerturbed) {
  std::map<NodeKind, std::set<std::string>> seen;
  for (const Case& c : cases()) {
    if (c.field != "type" && c.field != "(kind)") seen[c.kind].insert(c.field);
    if (c.field == "(kind)") seen[c.kind];
  }
  for (const auto& [kind, info] : all_kinds()) {
    ASSERT_TRUE(seen.count(kind)) << info.name << " has no case";
    EXPECT_EQ(seen[kind].size(), info.fields)
        << info.name << ": a field of Fields<" << info.name << "> has no case";
  }
}

TEST(LoopCanonical, EachPerturbedFieldChangesBytesEqualityAndHash) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(std::string(node_kind_name(c.kind)) + "." + c.field);
    Stmt a = c.ea.defined() ? sink(c.ea) : c.sa;
    Stmt b = c.ea.defined() ? sink(c.eb) : c.sb;
    EXPECT_NE(canonical_bytes(kernel_of(a)), canonical_bytes(kernel_of(b)));
    EXPECT_FALSE(equal(a, b));
    EXPECT_NE(structural_hash(a), structural_hash(b));
    if (c.ea.defined()) {
      EXPECT_FALSE(equal(c.ea, c.eb));
      EXPECT_NE(structural_hash(c.ea), structural_hash(c.eb));
    }
    // A node is equal to itself, and hashes and writes the same twice.
    EXPECT_TRUE(equal(a, a));
    EXPECT_EQ(canonical_bytes(kernel_of(a)), canonical_bytes(kernel_of(a)));
  }
}

TEST(LoopCanonical, EachKernelFieldChangesBytes) {
  static_assert(Fields<Kernel>::List::size == 4, "a kernel field without a case below");
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Stmt body = Store::make(y, var("i"), Load::make(x, var("i")));
  Kernel k{"k", {x, y}, {var("n")}, body};
  std::string base = canonical_bytes(k);
  auto with = [&](auto edit) {
    Kernel v = k;
    edit(v);
    return canonical_bytes(v);
  };
  EXPECT_NE(base, with([](Kernel& v) { v.name = "k2"; }));
  EXPECT_NE(base, with([&](Kernel& v) { v.buffers = {y, x}; }));
  EXPECT_NE(base, with([&](Kernel& v) { v.buffers = {x}; }));
  EXPECT_NE(base, with([](Kernel& v) { v.scalars = {var("m")}; }));
  EXPECT_NE(base, with([](Kernel& v) { v.scalars = {var("n", {DType::I32, 1})}; }));
  EXPECT_NE(base, with([](Kernel& v) { v.scalars = {}; }));
  EXPECT_NE(base, with([](Kernel& v) { v.body = Stmt(); }));
  EXPECT_NE(base, with([&](Kernel& v) { v.body = Block::make({body, body}); }));
  // Kernels of a vector are not merged: [k, k'] differs from [k', k].
  Kernel k2 = k;
  k2.name = "k2";
  EXPECT_NE(canonical_bytes(std::vector<Kernel>{k, k2}),
            canonical_bytes(std::vector<Kernel>{k2, k}));
  EXPECT_EQ(canonical_bytes(std::vector<Kernel>{k}), canonical_bytes(k));
}

// A kernel built from scratch over the given buffers.
Kernel build_scale(const Buf& x, const Buf& y, const Buf& acc) {
  Expr i = var("i"), n = var("n");
  Stmt inner = Store::make(acc, i64(0), Load::make(acc, i64(0)) + Load::make(x, i) * f32(2));
  Stmt body = Allocate::make(acc, i64(1), MemoryScope::Stack,
                             Block::make({Store::make(acc, i64(0), f32(0)),
                                          For::make(i, i64(0), n, ForKind::Parallel, inner),
                                          Store::make(y, i64(0), Load::make(acc, i64(0)))}));
  return Kernel{"scale", {x, y}, {n}, body};
}

TEST(LoopCanonical, EqualKernelsGiveEqualBytesAndHashes) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Buf acc = make_buf("acc", DType::F32);
  Kernel a = build_scale(x, y, acc), b = build_scale(x, y, acc);
  EXPECT_FALSE(a.body.same_as(b.body));
  EXPECT_TRUE(equal(a.body, b.body));
  EXPECT_EQ(structural_hash(a.body), structural_hash(b.body));
  EXPECT_EQ(canonical_bytes(a), canonical_bytes(b));
  // Other buffers of the same names and dtypes, made in the other order (so
  // their addresses compare the other way): the same kernel, and the same
  // bytes, which never hold an address. equal() compares buffers by identity.
  Buf acc2 = make_buf("acc", DType::F32), y2 = make_buf("y", DType::F32);
  Buf x2 = make_buf("x", DType::F32);
  Kernel c = build_scale(x2, y2, acc2);
  EXPECT_EQ(canonical_bytes(a), canonical_bytes(c));
  EXPECT_EQ(structural_hash(a.body), structural_hash(c.body));
  EXPECT_FALSE(equal(a.body, c.body));
}

TEST(LoopCanonical, DistinctBuffersWithOneNameStayDistinct) {
  Buf x1 = make_buf("x", DType::F32), x2 = make_buf("x", DType::F32);
  Buf y = make_buf("y", DType::F32);
  auto body = [&](const Buf& second) {
    return Block::make({Store::make(y, i64(0), Load::make(x1, i64(0))),
                        Store::make(y, i64(1), Load::make(second, i64(0)))});
  };
  EXPECT_NE(canonical_bytes(kernel_of(body(x2))), canonical_bytes(kernel_of(body(x1))));
  EXPECT_FALSE(equal(body(x2), body(x1)));
  EXPECT_NE(canonical_bytes(Kernel{"k", {x1, x2}, {}, Stmt()}),
            canonical_bytes(Kernel{"k", {x1, x1}, {}, Stmt()}));
  // The same structure over other buffers of the same names is the same kernel.
  Buf z1 = make_buf("x", DType::F32), z2 = make_buf("x", DType::F32);
  EXPECT_EQ(canonical_bytes(Kernel{"k", {x1, x2}, {}, Stmt()}),
            canonical_bytes(Kernel{"k", {z1, z2}, {}, Stmt()}));
}

TEST(LoopCanonical, FloatsCompareByBitPattern) {
  auto differ = [](Expr a, Expr b) {
    EXPECT_FALSE(equal(a, b));
    EXPECT_NE(structural_hash(a), structural_hash(b));
    EXPECT_NE(canonical_bytes(kernel_of(sink(a))), canonical_bytes(kernel_of(sink(b))));
  };
  differ(f32(0.0), f32(-0.0));
  differ(f64(std::bit_cast<double>(0x7ff8000000000001ull)),
         f64(std::bit_cast<double>(0x7ff8000000000002ull)));
  differ(f64(std::bit_cast<double>(0x7ff8000000000000ull)),
         f64(std::bit_cast<double>(0xfff8000000000000ull)));  // -NaN
  Expr nan = f64(std::bit_cast<double>(0x7ff8000000000001ull));
  EXPECT_TRUE(equal(nan, f64(std::bit_cast<double>(0x7ff8000000000001ull))));  // NaN == NaN here
}

// The byte format is what disk-cache entries are keyed by: a change to it
// must bump the "kiln-module-vN" tag in api/compile_backend.cpp. These bytes
// were written by the hand-written writer the field lists replaced, so the
// key of every kernel stayed the same (v2).
// kernel k(x: f32*, n: i64) { for (i, 0, n) parallel { x[i] = -0.5f } }, on a
// little-endian host.
const char* const kFrozenHex =
    "01000000000000006b01000000000000000100000000000000000100000000000000780801000000"
    "000000000205010000000000000001000000000000006e0d01020501000000000000000100000000"
    "00000069000501000000000000000000000000000000020501000000000000000100000000000000"
    "6e0e0200000000000000000205010000000000000001000000000000006901080100000000000000"
    "000000000000e0bfff";

TEST(LoopCanonical, ByteFormatIsFrozen) {
  Buf x = make_buf("x", DType::F32);
  Kernel k{"k",
           {x},
           {var("n")},
           For::make(var("i"), i64(0), var("n"), ForKind::Parallel,
                     Store::make(x, var("i"), f32(-0.5)))};
  std::string bytes = canonical_bytes(k);
  static const char* hex = "0123456789abcdef";
  std::string h;
  for (unsigned char ch : bytes) {
    h += hex[ch >> 4];
    h += hex[ch & 15];
  }
  EXPECT_EQ(h, kFrozenHex);
}

// ------------------------------------------------------------------------- random trees

// Random expressions and statements over a few names and buffers (distinct
// names), small enough that equal pairs come up often.
class TreeGen {
 public:
  explicit TreeGen(uint64_t seed) : g_(seed) {}
  std::vector<Buf> bufs = {make_buf("a", DType::I64), make_buf("b", DType::I64)};

  Expr expr(int depth) {
    int pick = depth <= 0 ? g_.pick(3) : g_.pick(9);
    switch (pick) {
      case 0:
        return i64(g_.pick(3));
      case 1:
        return var(g_.coin() ? "i" : "j");
      case 2:
        return Load::make(g_.one_of(bufs), var("i"));
      case 3:
        return Binary::make(g_.coin() ? BinOp::Add : BinOp::Mul, expr(depth - 1), expr(depth - 1));
      case 4:
        return Select::make(Compare::make(CmpOp::LT, expr(depth - 1), expr(depth - 1)),
                            expr(depth - 1), expr(depth - 1));
      case 5:
        return Let::make(var("k"), expr(depth - 1), expr(depth - 1));
      case 6:
        return Cast::make(i64_t(), Cast::make({DType::I32, 1}, expr(depth - 1)));
      case 7:
        return Call::make(i64_t(), g_.coin() ? "abs" : "floor", {expr(depth - 1)});
      default:
        return min(expr(depth - 1), expr(depth - 1));
    }
  }
  Stmt stmt(int depth) {
    int pick = depth <= 0 ? 0 : g_.pick(5);
    switch (pick) {
      case 0:
        return Store::make(g_.one_of(bufs), expr(1), expr(1));
      case 1:
        return For::make(var(g_.coin() ? "i" : "j"), i64(0), expr(0),
                         g_.coin() ? ForKind::Serial : ForKind::Parallel, stmt(depth - 1));
      case 2:
        return Block::make({stmt(depth - 1), stmt(depth - 1)});
      case 3:
        return IfThenElse::make(Compare::make(CmpOp::EQ, expr(0), expr(0)), stmt(depth - 1),
                                g_.coin() ? stmt(depth - 1) : Stmt());
      default:
        return LetStmt::make(var("k"), expr(1), stmt(depth - 1));
    }
  }

 private:
  test::Gen g_;
};

TEST(LoopCanonical, EqualityHashAndBytesAgreeOnRandomTrees) {
  TreeGen gen(7);
  std::vector<Stmt> stmts;
  std::vector<Expr> exprs;
  for (int n = 0; n < 300; ++n) {
    stmts.push_back(gen.stmt(n % 4));
    exprs.push_back(gen.expr(n % 4));
  }
  int equal_pairs = 0, total = 0;
  for (size_t a = 0; a < stmts.size(); ++a) {
    for (size_t b = a; b < stmts.size(); b += 7) {
      bool eq = equal(stmts[a], stmts[b]);
      // The buffers have distinct names, so bytes tell exactly what equal() tells.
      EXPECT_EQ(eq, canonical_bytes(kernel_of(stmts[a])) == canonical_bytes(kernel_of(stmts[b])))
          << to_string(stmts[a]) << "vs\n"
          << to_string(stmts[b]);
      if (eq) {
        EXPECT_EQ(structural_hash(stmts[a]), structural_hash(stmts[b]));
      }
      EXPECT_EQ(eq, equal(stmts[b], stmts[a]));  // symmetric
      bool eq_e = equal(exprs[a], exprs[b]);
      EXPECT_EQ(eq_e, canonical_bytes(kernel_of(sink(exprs[a]))) ==
                          canonical_bytes(kernel_of(sink(exprs[b]))));
      if (eq_e) {
        EXPECT_EQ(structural_hash(exprs[a]), structural_hash(exprs[b]));
      }
      if (a != b) {  // a tree and itself are equal by identity
        equal_pairs += eq + eq_e;
        total += 2;
      }
    }
  }
  // Both outcomes are exercised on distinct trees.
  EXPECT_GT(equal_pairs, 50);
  EXPECT_LT(equal_pairs, total - 50);
}

}  // namespace
}  // namespace kiln::loop
