// read_npy / write_npy: NumPy's .npy format (versions 1.0, 2.0 and 3.0).
//
// A file is the magic "\x93NUMPY", a version, a header length (2 bytes in
// 1.0, 4 bytes in 2.0/3.0), a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw data. Reading accepts the
// dtypes Kiln has (b1 i1 u1 i2 i4 i8 f2 f4 f8) in either byte order and
// swaps big-endian data; anything past the data is ignored. Writing always
// produces version 1.0 (2.0 only if the header would not fit) in C order
// with the header padded to 64 bytes, as numpy does.
//
// bf16 has no numpy dtype. Kiln writes it with the Kiln-specific descr 'bf16'
// (raw little-endian bit patterns) and reads that back; numpy refuses such a
// file, so numpy users should convert bf16 tensors to f32 before saving.
//
// Every error is a kiln::Error whose message starts with the file path.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/tensor.h"
#include "runtime/device.h"

namespace kiln {
namespace {

static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

#define NPY_CHECK(cond, msg) KILN_USER_CHECK(cond, path << ": " << msg)

// --- header dict parsing -------------------------------------------------------------

// One value of the header dict; only the forms .npy headers use.
struct HeaderValue {
  enum Kind { String, Bool, Tuple, Other } kind = Other;
  std::string text;            // String: contents; Other: raw source
  bool flag = false;           // Bool
  std::vector<int64_t> items;  // Tuple
};

// Parses the Python dict literal numpy writes. Throws (with `error` set) on
// anything it cannot read.
class HeaderParser {
 public:
  using Dict = std::vector<std::pair<std::string, HeaderValue>>;
  explicit HeaderParser(std::string_view s) : s_(s) {}

  // The parsed dict, or std::nullopt with `error` saying what went wrong.
  std::optional<Dict> try_parse() {
    try {
      return parse_dict();
    } catch (const ParseError&) {
      return std::nullopt;
    }
  }

  std::string error;

 private:
  struct ParseError {};

  Dict parse_dict() {
    Dict out;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      std::string key = parse_string();
      expect(':');
      HeaderValue value = parse_value();
      out.emplace_back(std::move(key), std::move(value));
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() == '}') {
        ++pos_;
        break;
      } else {
        fail("expected ',' or '}'");
      }
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& what) {
    std::ostringstream os;
    os << what << " at offset " << pos_;
    error = os.str();
    throw ParseError{};
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  std::string parse_string() {
    skip_space();
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }

  int64_t parse_int() {
    skip_space();
    size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      if (v > (uint64_t(std::numeric_limits<int64_t>::max()) - 9) / 10) fail("dimension too large");
      v = v * 10 + uint64_t(s_[pos_] - '0');
      ++pos_;
    }
    if (pos_ == start) fail("expected a non-negative integer");
    if (peek() == 'L') ++pos_;  // Python 2 long suffix in old files
    return static_cast<int64_t>(v);
  }

  HeaderValue parse_value() {
    skip_space();
    HeaderValue v;
    char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = HeaderValue::String;
      v.text = parse_string();
    } else if (s_.substr(pos_, 4) == "True") {
      v.kind = HeaderValue::Bool;
      v.flag = true;
      pos_ += 4;
    } else if (s_.substr(pos_, 5) == "False") {
      v.kind = HeaderValue::Bool;
      pos_ += 5;
    } else if (c == '(') {
      v.kind = HeaderValue::Tuple;
      ++pos_;
      skip_space();
      while (peek() != ')') {
        v.items.push_back(parse_int());
        skip_space();
        if (peek() == ',') {
          ++pos_;
          skip_space();
        } else if (peek() != ')') {
          fail("expected ',' or ')' in shape");
        }
      }
      ++pos_;
    } else if (c == '[') {
      // Structured dtypes are lists; keep the raw text to name it in the error.
      size_t start = pos_;
      int depth = 0;
      do {
        if (pos_ >= s_.size()) fail("unterminated list");
        if (s_[pos_] == '[') ++depth;
        if (s_[pos_] == ']') --depth;
        ++pos_;
      } while (depth > 0);
      v.text = std::string(s_.substr(start, pos_ - start));
    } else {
      fail("unexpected value");
    }
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// --- dtypes ----------------------------------------------------------------------------

struct NpyType {
  DType dtype;
  bool big_endian;
};

std::optional<NpyType> parse_descr(const std::string& descr) {
  if (descr == "bf16" || descr == "<bf16") return NpyType{DType::BF16, false};
  if (descr.size() != 3) return std::nullopt;
  char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return std::nullopt;
  std::string code = descr.substr(1);
  std::optional<DType> t;
  if (code == "b1") t = DType::Bool;
  if (code == "i1") t = DType::I8;
  if (code == "u1") t = DType::U8;
  if (code == "i2") t = DType::I16;
  if (code == "i4") t = DType::I32;
  if (code == "i8") t = DType::I64;
  if (code == "f2") t = DType::F16;
  if (code == "f4") t = DType::F32;
  if (code == "f8") t = DType::F64;
  if (!t) return std::nullopt;
  // '|' means "not applicable" and is only valid for one-byte types.
  if (order == '|' && dtype_size(*t) != 1) return std::nullopt;
  return NpyType{*t, order == '>' && dtype_size(*t) > 1};
}

const char* descr_for(DType t) {
  switch (t) {
    case DType::Bool:
      return "|b1";
    case DType::I8:
      return "|i1";
    case DType::U8:
      return "|u1";
    case DType::I16:
      return "<i2";
    case DType::I32:
      return "<i4";
    case DType::I64:
      return "<i8";
    case DType::F16:
      return "<f2";
    case DType::BF16:
      return "bf16";
    case DType::F32:
      return "<f4";
    case DType::F64:
      return "<f8";
  }
  return "?";
}

void byte_swap(char* data, int64_t count, size_t elem) {
  for (int64_t i = 0; i < count; ++i)
    std::reverse(data + i * int64_t(elem), data + (i + 1) * int64_t(elem));
}

// Header text for an error message: at most about kMaxQuoted characters,
// non-printable bytes as \xNN, so that a hostile file can neither flood nor
// drive the terminal.
std::string quote_header(std::string_view text) {
  constexpr size_t kMaxQuoted = 80;
  std::string out = "'";
  size_t i = 0;
  for (; i < text.size() && out.size() < kMaxQuoted; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  out += "'";
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

uint32_t read_le(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::error_code ec;
  NPY_CHECK(!std::filesystem::is_directory(path, ec), "cannot read: is a directory");
  std::ifstream in(path, std::ios::binary);
  NPY_CHECK(in.is_open(), "cannot open for reading: " << std::strerror(errno));
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<int64_t>(in.tellg());
  in.seekg(0, std::ios::beg);
  NPY_CHECK(file_size >= 0, "cannot determine the file size");

  unsigned char pre[12] = {};
  in.read(reinterpret_cast<char*>(pre), std::min<int64_t>(file_size, 10));
  NPY_CHECK(file_size >= int64_t(kMagicLen) && std::memcmp(pre, kMagic, kMagicLen) == 0,
            "bad magic: not a .npy file (expected \\x93NUMPY)");
  NPY_CHECK(file_size >= 10, "truncated header: file is only " << file_size << " bytes");
  const int major = pre[6], minor = pre[7];
  NPY_CHECK(major >= 1 && major <= 3,
            "unsupported .npy version " << major << "." << minor << " (Kiln reads 1.0-3.0)");
  int len_bytes = major == 1 ? 2 : 4;
  if (len_bytes == 4) {
    NPY_CHECK(file_size >= 12, "truncated header: file is only " << file_size << " bytes");
    in.read(reinterpret_cast<char*>(pre + 10), 2);
  }
  const int64_t header_len = read_le(pre + 8, len_bytes);
  const int64_t data_start = 8 + len_bytes + header_len;
  NPY_CHECK(data_start <= file_size, "truncated header: header claims "
                                         << header_len << " bytes but the file has only "
                                         << file_size - (8 + len_bytes) << " after the preamble");
  std::string header(size_t(header_len), '\0');
  in.read(header.data(), header_len);
  NPY_CHECK(in.good(), "read error in header");

  HeaderParser parser(header);
  auto dict = parser.try_parse();
  NPY_CHECK(dict.has_value(),
            "malformed header dict (" << parser.error << "): " << quote_header(header));
  const HeaderValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto& [key, value] : *dict) {
    if (key == "descr") descr = &value;
    if (key == "fortran_order") fortran = &value;
    if (key == "shape") shape = &value;
  }
  NPY_CHECK(descr && fortran && shape,
            "malformed header dict: needs keys 'descr', 'fortran_order' and 'shape': "
                << quote_header(header));
  NPY_CHECK(fortran->kind == HeaderValue::Bool,
            "malformed header dict: 'fortran_order' must be True or False");
  NPY_CHECK(shape->kind == HeaderValue::Tuple, "malformed header dict: 'shape' must be a tuple");
  NPY_CHECK(descr->kind == HeaderValue::String || descr->kind == HeaderValue::Other,
            "malformed header dict: bad 'descr'");
  std::optional<NpyType> type =
      descr->kind == HeaderValue::String ? parse_descr(descr->text) : std::nullopt;
  NPY_CHECK(type.has_value(), "unsupported dtype " << quote_header(descr->text)
                                                   << " (Kiln reads |b1 i1 u1 i2 i4 i8 f2 f4 "
                                                      "f8 and bf16)");
  // Before anything sized by the rank is built.
  NPY_CHECK(int64_t(shape->items.size()) <= kMaxRank,
            "shape of rank " << shape->items.size() << ": Kiln supports at most " << kMaxRank
                             << " dimensions");
  Shape sizes(shape->items.begin(), shape->items.end());
  // Refused even for 0-d/1-d arrays (identical in both orders): numpy writes
  // False for those, so True means a column-major writer we do not support.
  NPY_CHECK(!fortran->flag, "fortran_order=True is not supported; save with np.ascontiguousarray");

  int64_t nbytes = 0;
  try {
    nbytes = static_cast<int64_t>(shape_nbytes(sizes, type->dtype));
  } catch (const Error& e) {
    NPY_CHECK(false, e.what());
  }
  const size_t elem = dtype_size(type->dtype);
  const int64_t numel = nbytes / int64_t(elem);
  const int64_t available = file_size - data_start;
  NPY_CHECK(available >= nbytes, "truncated data: expected "
                                     << nbytes << " bytes for shape " << shape_str(sizes) << " of "
                                     << dtype_name(type->dtype) << ", file has " << available);

  Tensor t = Tensor::empty(sizes, type->dtype);
  auto* data = static_cast<char*>(t.data_ptr());
  in.read(data, nbytes);
  NPY_CHECK(in.gcount() == nbytes,
            "read error: got " << in.gcount() << " of " << nbytes << " data bytes");
  if (type->big_endian) byte_swap(data, numel, elem);
  if (type->dtype == DType::Bool) {
    // Kiln's bool is exactly 0 or 1.
    for (int64_t i = 0; i < numel; ++i) data[i] = data[i] != 0;
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  NPY_CHECK(t.defined(), "cannot write an undefined tensor");
  runtime::check_host_readable(t, path.c_str());  // the message starts with the path
  std::ostringstream dict;
  dict << "{'descr': '" << descr_for(t.dtype()) << "', 'fortran_order': False, 'shape': (";
  for (int64_t i = 0; i < t.dim(); ++i) dict << (i ? ", " : "") << t.sizes()[size_t(i)];
  dict << (t.dim() == 1 ? ",), }" : "), }");
  std::string header = dict.str();

  // Pad so that magic + version + length + header (ending in '\n') is a
  // multiple of 64; version 2.0 only when the length does not fit 16 bits.
  int major = 1;
  size_t preamble = kMagicLen + 2 + 2;
  size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;
  if (total - preamble > 0xffff) {
    major = 2;
    preamble += 2;
    total = (preamble + header.size() + 1 + 63) / 64 * 64;
  }
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  NPY_CHECK(out.is_open(), "cannot open for writing: " << std::strerror(errno));
  out.write(kMagic, kMagicLen);
  const char version[2] = {static_cast<char>(major), 0};
  out.write(version, 2);
  const size_t hl = header.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out.put(static_cast<char>((hl >> (8 * i)) & 0xff));
  out.write(header.data(), std::streamsize(hl));
  // contiguous() packs a strided view, so the file holds its logical contents.
  const Tensor packed = t.contiguous();
  out.write(static_cast<const char*>(packed.data_ptr()),
            std::streamsize(packed.numel() * int64_t(packed.element_size())));
  out.flush();
  NPY_CHECK(out.good(), "write failed: " << std::strerror(errno));
}

}  // namespace kiln
