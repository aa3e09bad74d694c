// Structural equality, hashing and the canonical byte form of loop IR, each a
// walk over the field lists of fields.h (see canonical.h for what they mean).
//
// equal() is a parallel walk of two trees that stops at the first difference
// and shares nothing with the writer: the simplifier calls it on every rule
// that compares operands, so it must not allocate. The hash is FNV-1a over
// the canonical bytes of the tree, written straight into the hash (no
// string), which makes it consistent with equal() by construction: equal
// trees (same Buf identities in the same places) give equal bytes.
#include "ir/loop/canonical.h"

#include <concepts>
#include <cstring>
#include <type_traits>
#include <unordered_map>

#include "ir/loop/fields.h"

namespace kiln::loop {

namespace {

uint64_t float_bits(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// ------------------------------------------------------------------------------ equality

bool eq(const Expr& a, const Expr& b);
bool eq(const Stmt& a, const Stmt& b);

// Compares one field of two nodes of the same kind.
struct FieldEqual {
  bool operator()(const Expr& a, const Expr& b) const { return eq(a, b); }
  bool operator()(const Stmt& a, const Stmt& b) const { return eq(a, b); }
  bool operator()(const Buf& a, const Buf& b) const { return a == b; }  // identity
  bool operator()(double a, double b) const { return float_bits(a) == float_bits(b); }
  template <typename T>
  requires std::is_enum_v<T> || std::integral<T> || std::same_as<T, std::string>
  bool operator()(const T& a, const T& b) const { return a == b; }
  template <typename T>
  bool operator()(const std::vector<T>& a, const std::vector<T>& b) const {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!(*this)(a[i], b[i])) return false;
    }
    return true;
  }
};

bool eq(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind != b->kind || !(a.type() == b.type())) return false;
  return visit_expr_kind(a.get(), [&](const auto& x) {
    using Node = std::remove_cvref_t<decltype(x)>;
    return all_field_pairs(x, static_cast<const Node&>(*b.get()), FieldEqual{});
  });
}

bool eq(const Stmt& a, const Stmt& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind != b->kind) return false;
  return visit_stmt_kind(a.get(), [&](const auto& x) {
    using Node = std::remove_cvref_t<decltype(x)>;
    return all_field_pairs(x, static_cast<const Node&>(*b.get()), FieldEqual{});
  });
}

// -------------------------------------------------------------------------------- writer

// Collects bytes into a string (the canonical form).
struct StringSink {
  std::string& out;
  void bytes(const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }
};

// FNV-1a over the bytes, without keeping them.
struct HashSink {
  uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= c[i];
      h *= 1099511628211ull;
    }
  }
};

constexpr uint8_t kAbsent = 0xff;  // no node kind has this value

// Writes nodes field by field into a sink; buffers are numbered by first
// appearance since the last kernel() began.
template <typename Sink>
class Writer {
 public:
  // `anonymous`: names are left out (the kernel's, each buffer's) or numbered
  // by first appearance (Vars), so only what the code does is written.
  explicit Writer(Sink& sink, bool anonymous = false) : sink_(sink), anonymous_(anonymous) {}

  void kernel(const Kernel& k) {
    bufs_.clear();  // each kernel numbers its own buffers, parameters first
    vars_.clear();
    if (!anonymous_) return for_each_field(k, [&](const auto& f) { field(f); });
    field(k.buffers);
    field(k.scalars);
    field(k.body);
  }

  void expr(const Expr& e) {
    if (!e.defined()) return byte(kAbsent);
    byte(static_cast<uint8_t>(e->kind));
    byte(static_cast<uint8_t>(e.type().dtype));
    u64(uint64_t(e.type().lanes));
    if (const Var* v = anonymous_ ? e.as<Var>() : nullptr) {
      // A consistent renaming: the same name always gets the same number.
      return u64(vars_.emplace(v->name, vars_.size()).first->second);
    }
    visit_expr_kind(
        e.get(), [&](const auto& x) { for_each_field(x, [&](const auto& f) { field(f); }); });
  }

  void stmt(const Stmt& s) {
    if (!s.defined()) return byte(kAbsent);
    byte(static_cast<uint8_t>(s->kind));
    visit_stmt_kind(
        s.get(), [&](const auto& x) { for_each_field(x, [&](const auto& f) { field(f); }); });
  }

 private:
  void byte(uint8_t v) { sink_.bytes(&v, 1); }
  void u64(uint64_t v) { sink_.bytes(&v, sizeof v); }

  void field(const Expr& e) { expr(e); }
  void field(const Stmt& s) { stmt(s); }
  void field(int64_t v) { u64(uint64_t(v)); }
  void field(double v) { u64(float_bits(v)); }
  void field(const std::string& s) {
    u64(s.size());
    sink_.bytes(s.data(), s.size());
  }
  template <typename E>
  requires std::is_enum_v<E>
  void field(E v) {
    static_assert(sizeof(E) == 1, "enums of loop IR are written as one byte");
    byte(static_cast<uint8_t>(v));
  }
  void field(const Buf& b) {
    if (!b) return byte(0);
    auto [it, fresh] = bufs_.emplace(b.get(), bufs_.size());
    byte(fresh ? 1 : 2);
    u64(it->second);
    if (fresh) {  // name and dtype once; later uses are the number
      if (!anonymous_) field(b->name);
      byte(static_cast<uint8_t>(b->dtype));
    }
  }
  template <typename T>
  void field(const std::vector<T>& v) {
    u64(v.size());
    for (const T& x : v) field(x);
  }

  Sink& sink_;
  bool anonymous_;
  std::unordered_map<const BufferNode*, uint64_t> bufs_;
  std::unordered_map<std::string, uint64_t> vars_;
};

}  // namespace

bool equal(const Expr& a, const Expr& b) {
  return eq(a, b);
}
bool equal(const Stmt& a, const Stmt& b) {
  return eq(a, b);
}

uint64_t structural_hash(const Expr& e) {
  HashSink sink;
  Writer<HashSink>(sink).expr(e);
  return sink.h;
}

uint64_t structural_hash(const Stmt& s) {
  HashSink sink;
  Writer<HashSink>(sink).stmt(s);
  return sink.h;
}

std::string canonical_bytes(const Kernel& k) {
  std::string out;
  StringSink sink{out};
  Writer<StringSink>(sink).kernel(k);
  return out;
}

std::string canonical_code_bytes(const Kernel& k) {
  std::string out;
  StringSink sink{out};
  Writer<StringSink>(sink, /*anonymous=*/true).kernel(k);
  return out;
}

std::string canonical_bytes(const std::vector<Kernel>& kernels) {
  std::string out;
  out.reserve(4096);
  StringSink sink{out};
  Writer<StringSink> w(sink);
  for (const Kernel& k : kernels) w.kernel(k);
  return out;
}

}  // namespace kiln::loop
