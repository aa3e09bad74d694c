// .npy reading and writing: round trips for every dtype and odd shapes, files
// built byte by byte (versions 2.0/3.0, big-endian, old-style headers), every
// error case with its message, and every array in the conformance corpus.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "tests/unit/conformance_corpus.h"
#include "kiln/tensor.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using Idx = std::vector<int64_t>;

class Npy : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_npy_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write_bytes(const std::string& name, const std::string& bytes) const {
    std::string p = path(name);
    std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return p;
  }

  std::string read_bytes(const std::string& p) const {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  // A .npy file with the given version, header dict and data, padded like numpy.
  static std::string npy(const std::string& dict, const std::string& data, int major = 1) {
    std::string out = "\x93NUMPY";
    out += char(major);
    out += '\0';
    size_t len_bytes = major == 1 ? 2 : 4;
    std::string header = dict;
    size_t total = (8 + len_bytes + header.size() + 1 + 63) / 64 * 64;
    header.append(total - 8 - len_bytes - header.size() - 1, ' ');
    header += '\n';
    for (size_t i = 0; i < len_bytes; ++i) out += char((header.size() >> (8 * i)) & 0xff);
    return out + header + data;
  }

  // Expects read_npy(p) to throw a kiln::Error starting with p and containing `needle`.
  static void expect_read_error(const std::string& p, const std::string& needle) {
    try {
      read_npy(p);
      ADD_FAILURE() << "expected an error containing '" << needle << "' for " << p;
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << "message does not start with the path: " << msg;
      EXPECT_NE(msg.find(needle), std::string::npos)
          << "message: " << msg << "\nexpected to contain: " << needle;
    }
  }

  fs::path dir_;
};

Tensor make(const Shape& sizes, const std::vector<double>& vals, DType dtype) {
  Tensor t = Tensor::empty(sizes, dtype);
  Tensor flat = t.view_as_strided({t.numel()}, {1}, 0);
  for (size_t i = 0; i < vals.size(); ++i) flat.set(Idx{int64_t(i)}, vals[i]);
  return t;
}

std::string le32(uint32_t v) {
  std::string s;
  for (int i = 0; i < 4; ++i) s += char((v >> (8 * i)) & 0xff);
  return s;
}

// --- round trips -------------------------------------------------------------------

TEST_F(Npy, RoundTripEveryDtype) {
  for (DType t : {DType::Bool, DType::I8, DType::U8, DType::I16, DType::I32, DType::I64, DType::F16,
                  DType::BF16, DType::F32, DType::F64}) {
    std::vector<double> vals = t == DType::Bool ? std::vector<double>{1, 0, 0, 1, 1, 0, 1}
                               : t == DType::U8 ? std::vector<double>{0, 1, 2, 100, 200, 255, 7}
                                                : std::vector<double>{-3, -1, 0, 1, 2, 100, -128};
    if (is_floating(t)) vals[1] = -1.5;
    Tensor a = make({7}, vals, t);
    std::string p = path(std::string("rt_") + dtype_name(t) + ".npy");
    write_npy(p, a);
    Tensor b = read_npy(p);
    EXPECT_EQ(b.dtype(), t) << dtype_name(t);
    EXPECT_TRUE(a.equal(b)) << a.to_string() << " vs " << b.to_string();
  }
}

TEST_F(Npy, WritesNumpyCompatibleHeader) {
  std::string p = path("hdr.npy");
  write_npy(p, make({2, 3}, {1, 2, 3, 4, 5, 6}, DType::I32));
  std::string bytes = read_bytes(p);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t header_len = uint8_t(bytes[8]) | size_t(uint8_t(bytes[9])) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  EXPECT_EQ(
      bytes.substr(10, 60).rfind("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 0),
      0u);
  EXPECT_EQ(bytes.size(), 10 + header_len + 24);
  // bf16 uses Kiln's own descr.
  write_npy(p, Tensor::ones({2}, DType::BF16));
  EXPECT_NE(read_bytes(p).find("'descr': 'bf16'"), std::string::npos);
  write_npy(p, Tensor::ones({5}, DType::Bool));
  EXPECT_NE(read_bytes(p).find("'descr': '|b1', 'fortran_order': False, 'shape': (5,), }"),
            std::string::npos);
}

TEST_F(Npy, ZeroDimAndZeroSize) {
  std::string p = path("scalar.npy");
  write_npy(p, Tensor::scalar(2.5, DType::F64));
  EXPECT_NE(read_bytes(p).find("'shape': ()"), std::string::npos);
  Tensor s = read_npy(p);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item(), 2.5);

  write_npy(p, Tensor::zeros({0, 5}, DType::I16));
  Tensor e = read_npy(p);
  EXPECT_EQ(e.sizes(), (Shape{0, 5}));
  EXPECT_EQ(e.dtype(), DType::I16);
  EXPECT_NE(read_bytes(p).find("'shape': (0, 5)"), std::string::npos);
}

TEST_F(Npy, OddSizeAndNonContiguousSource) {
  std::string p = path("big.npy");
  Tensor r = Tensor::rand({1023}, 5);
  write_npy(p, r);
  EXPECT_TRUE(read_npy(p).equal(r));

  Tensor m = Tensor::arange(0, 6, 1, DType::F32);
  Tensor t = m.view_as_strided({3, 2}, {1, 3}, 0);  // transpose of [[0,1,2],[3,4,5]]
  write_npy(p, t);
  Tensor back = read_npy(p);
  EXPECT_EQ(back.sizes(), (Shape{3, 2}));
  EXPECT_TRUE(back.equal(make({3, 2}, {0, 3, 1, 4, 2, 5}, DType::F32))) << back.to_string();
  // A view with an offset writes only its own elements.
  write_npy(p, m.view_as_strided({2}, {2}, 1));
  EXPECT_TRUE(read_npy(p).equal(make({2}, {1, 3}, DType::F32)));
}

// --- hand-built files ----------------------------------------------------------------

TEST_F(Npy, ReadsVersions2And3) {
  std::string data = le32(7) + le32(uint32_t(-2));
  for (int major : {2, 3}) {
    std::string p =
        write_bytes("v" + std::to_string(major) + ".npy",
                    npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", data, major));
    Tensor t = read_npy(p);
    EXPECT_TRUE(t.equal(make({2}, {7, -2}, DType::I32))) << major;
  }
}

TEST_F(Npy, ReadsBigEndianWithSwap) {
  std::string i4 = std::string("\x00\x00\x01\x02", 4) + std::string("\xff\xff\xff\xfe", 4);
  Tensor a = read_npy(write_bytes(
      "be_i4.npy", npy("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", i4)));
  EXPECT_TRUE(a.equal(make({2}, {258, -2}, DType::I32))) << a.to_string();
  // 1.5 as big-endian f8 is 3F F8 00 .. 00; as f2 it is 3E 00.
  std::string f8 = std::string("\x3f\xf8\0\0\0\0\0\0", 8);
  Tensor b = read_npy(
      write_bytes("be_f8.npy", npy("{'descr': '>f8', 'fortran_order': False, 'shape': (), }", f8)));
  EXPECT_EQ(b.item(), 1.5);
  Tensor c = read_npy(
      write_bytes("be_f2.npy", npy("{'descr': '>f2', 'fortran_order': False, 'shape': (1,), }",
                                   std::string("\x3e\x00", 2))));
  EXPECT_EQ(c.dtype(), DType::F16);
  EXPECT_EQ(c.item(), 1.5);
}

TEST_F(Npy, LenientHeaderForms) {
  // Key order, double quotes, Python 2 'L' suffixes and trailing bytes after
  // the data are all accepted.
  std::string data = std::string("\x01\x00\x02\x00\x03\x00", 6) + "GARBAGE";
  Tensor t = read_npy(
      write_bytes("lenient.npy",
                  npy("{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"<i2\"}", data)));
  EXPECT_TRUE(t.equal(make({3}, {1, 2, 3}, DType::I16)));
  // Any nonzero byte is true.
  Tensor b = read_npy(
      write_bytes("bool.npy", npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 1), }",
                                  std::string("\x02\x00", 2))));
  EXPECT_EQ(b.get_int(Idx{0, 0}), 1);
  EXPECT_EQ(*static_cast<uint8_t*>(b.data_ptr()), 1);
  EXPECT_EQ(b.get_int(Idx{1, 0}), 0);
}

// --- errors ------------------------------------------------------------------------

TEST_F(Npy, Errors) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  expect_read_error(path("missing.npy"), "cannot open for reading");
  expect_read_error(dir_.string(), "is a directory");
  expect_read_error(write_bytes("magic.npy", "PK\x03\x04 this is a zip file"), "bad magic");
  expect_read_error(write_bytes("empty.npy", ""), "bad magic");
  expect_read_error(write_bytes("short.npy", std::string("\x93NUMPY\x01", 7)), "truncated header");
  std::string full = npy(ok_dict, std::string(24, '\0'));
  expect_read_error(write_bytes("cut_header.npy", full.substr(0, 30)), "truncated header");
  expect_read_error(write_bytes("version.npy", npy(ok_dict, std::string(24, '\0'), 4)),
                    "unsupported .npy version 4.0");
  expect_read_error(write_bytes("garbage.npy", npy("{'descr': '<f4', 'shape': (2, 3", "")),
                    "malformed header dict");
  expect_read_error(write_bytes("nokey.npy", npy("{'descr': '<f4', 'shape': (2,), }", "")),
                    "needs keys 'descr', 'fortran_order' and 'shape'");
  expect_read_error(
      write_bytes("negdim.npy",
                  npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "")),
      "malformed header dict");
  expect_read_error(
      write_bytes("fortran.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                                     std::string(24, '\0'))),
      "fortran_order=True is not supported; save with np.ascontiguousarray");
  expect_read_error(
      write_bytes("u2.npy", npy("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }",
                                std::string(4, '\0'))),
      "unsupported dtype '<u2'");
  expect_read_error(
      write_bytes("c8.npy", npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                                std::string(8, '\0'))),
      "unsupported dtype '<c8'");
  expect_read_error(
      write_bytes("struct.npy",
                  npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }",
                      std::string(4, '\0'))),
      "unsupported dtype");
  expect_read_error(write_bytes("data.npy", npy(ok_dict, std::string(8, '\0'))),
                    "truncated data: expected 24 bytes for shape [2, 3] of f32, file has 8");
  expect_read_error(
      write_bytes("huge.npy",
                  npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, "
                      "4611686018427387904), }",
                      "")),
      "too large");

  const std::string bad_dir = path("no/such/dir/out.npy");
  try {
    write_npy(bad_dir, Tensor::zeros({2}));
    ADD_FAILURE() << "write into a missing directory succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad_dir + ": cannot open for writing", 0), 0u)
        << e.what();
  }
  EXPECT_THROW(write_npy(path("undef.npy"), Tensor()), Error);
}

// --- the conformance corpus ------------------------------------------------------------

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(NpyCorpus, ReadsEveryConformanceArray) {
  KILN_SKIP_WITHOUT_CORPUS();
  fs::path cases = test::conformance_dir() / "cases";
  ASSERT_TRUE(fs::is_directory(cases)) << "no cases in the corpus: " << cases;
  int files = 0;
  for (const auto& case_dir : fs::directory_iterator(cases)) {
    if (!case_dir.is_directory()) continue;
    for (const auto& entry : fs::directory_iterator(case_dir.path())) {
      std::string name = entry.path().filename().string();
      bool wanted = (name.rfind("input_", 0) == 0 || name.rfind("output_", 0) == 0) &&
                    entry.path().extension() == ".npy";
      if (!wanted) continue;
      SCOPED_TRACE(entry.path().string());
      Tensor t;
      ASSERT_NO_THROW(t = read_npy(entry.path().string()));
      EXPECT_TRUE(parse_dtype(dtype_name(t.dtype())).has_value());
      // The data is the file's tail: numel * element size bytes after a header
      // whose total length numpy pads to a multiple of 64.
      auto size = int64_t(fs::file_size(entry.path()));
      int64_t data_bytes = t.numel() * int64_t(t.element_size());
      EXPECT_GE(size - data_bytes, 64);
      EXPECT_EQ((size - data_bytes) % 64, 0) << "numel " << t.numel() << ", file " << size;
      // numpy wrote these files; writing the array back must give the same
      // bytes (header text, padding, data), which pins numpy compatibility.
      fs::path copy = fs::temp_directory_path() / ("kiln_npy_copy_" + std::to_string(getpid()));
      write_npy(copy.string(), t);
      EXPECT_TRUE(slurp(copy) == slurp(entry.path())) << "re-written bytes differ";
      fs::remove(copy);
      ++files;
    }
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace kiln
