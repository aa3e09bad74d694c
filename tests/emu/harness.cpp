// The CUDA emulation harness (harness.h). CMake gives it the compiler, the
// flags matching the test binary's sanitizers, the emulator runtime library
// and a work directory (tests/emu/CMakeLists.txt).
#include "tests/emu/harness.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace kiln::emutest {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs a shell command, its output into `log`; true when it exited 0.
bool run_command(const std::string& command, const fs::path& log) {
  const int rc = std::system((command + " >" + quote(log.string()) + " 2>&1").c_str());
  return rc == 0;
}

struct FoundKernel {
  std::string name;
  unsigned launch_bound = 0;
};

// The __global__ functions of a program, with their __launch_bounds__.
std::vector<FoundKernel> find_kernels(const std::string& cuda) {
  static const std::regex re(
      R"(__global__\s+void\s+(?:__launch_bounds__\s*\(\s*(\d+)[^)]*\)\s*)?([A-Za-z_]\w*)\s*\()");
  std::vector<FoundKernel> out;
  for (auto it = std::sregex_iterator(cuda.begin(), cuda.end(), re); it != std::sregex_iterator();
       ++it) {
    FoundKernel k;
    k.name = (*it)[2].str();
    if ((*it)[1].matched) k.launch_bound = static_cast<unsigned>(std::stoul((*it)[1].str()));
    out.push_back(k);
  }
  return out;
}

std::string program_file(const Program& p, size_t i) {
  return p.name.empty() ? "program" + std::to_string(i) + ".cu" : p.name;
}

// `cuda` with its `#include "kiln_prelude.cuh"` lines blanked (line numbers
// stay): the batch has the prelude once, at global scope, through
// emulation.h; a second copy inside a program's namespace would not be seen.
std::string without_prelude_include(const std::string& cuda) {
  std::string out;
  size_t begin = 0;
  while (begin < cuda.size()) {
    size_t end = cuda.find('\n', begin);
    if (end == std::string::npos) end = cuda.size();
    const std::string_view line(cuda.data() + begin, end - begin);
    const size_t hash = line.find_first_not_of(" \t");
    const bool drop = hash != std::string_view::npos && line[hash] == '#' &&
                      line.find("include") != std::string_view::npos &&
                      line.find("kiln_prelude.cuh") != std::string_view::npos;
    if (!drop) out += line;
    if (end < cuda.size()) out += '\n';
    begin = end + 1;
  }
  return out;
}

std::string renamed(size_t program, const std::string& kernel) {
  return "kiln_emu_p" + std::to_string(program) + "_" + kernel;
}

// The one C++ source of a batch.
std::string batch_source(const std::vector<Program>& programs, std::string_view prelude,
                         const std::vector<std::vector<FoundKernel>>& kernels) {
  std::ostringstream os;
  os << "#include \"codegen/cuda/emulation.h\"\n";
  if (!prelude.empty()) os << "#line 1 \"prelude.cuh\"\n" << prelude << "\n";
  for (size_t i = 0; i < programs.size(); ++i) {
    os << "namespace kiln_emu_p" << i << " {\n";
    for (const FoundKernel& k : kernels[i])
      os << "#define " << k.name << " " << renamed(i, k.name) << "\n";
    os << "#line 1 \"" << program_file(programs[i], i) << "\"\n"
       << without_prelude_include(programs[i].cuda) << "\n";
    for (const FoundKernel& k : kernels[i]) os << "#undef " << k.name << "\n";
    os << "}  // namespace kiln_emu_p" << i << "\n";
  }
  size_t count = 0;
  os << "static constexpr ::kiln::emu::KernelEntry kiln_emu_entries[] = {\n";
  for (size_t i = 0; i < programs.size(); ++i) {
    for (const FoundKernel& k : kernels[i]) {
      os << "  ::kiln::emu::make_entry<&kiln_emu_p" << i << "::" << renamed(i, k.name) << ">(" << i
         << ", \"" << k.name << "\", " << k.launch_bound << "u),\n";
      ++count;
    }
  }
  if (count == 0) os << "  ::kiln::emu::KernelEntry{},\n";
  os << "};\n";
  os << "KILN_EMU_EXPORTS(kiln_emu_entries, " << count << ")\n";
  return os.str();
}

fs::path work_dir() {
  fs::path dir = KILN_EMU_WORK_DIR;
  fs::create_directories(dir);
  return dir;
}

// Everything besides the source that decides what the build makes.
const std::string& toolchain_identity() {
  static const std::string id = [] {
    std::string s = std::string(KILN_EMU_CXX) + "\n" + KILN_EMU_CXXFLAGS + "\n" + KILN_EMU_LDFLAGS;
    const fs::path src = KILN_EMU_SOURCE_DIR;
    s += read_file(src / "codegen/cuda/emulation.h");
    s += read_file(src / "codegen/cuda/emulation/abi.h");
    s += read_file(KILN_EMU_RUNTIME_LIB);
    return s;
  }();
  return id;
}

// Loaded objects by path: a batch built twice in one process is loaded once.
std::mutex g_loaded_mutex;
std::map<std::string, void*> g_loaded;

void* load(const fs::path& so) {
  std::lock_guard<std::mutex> lock(g_loaded_mutex);
  auto it = g_loaded.find(so.string());
  if (it != g_loaded.end()) return it->second;
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    throw std::runtime_error("cuda emulation harness: cannot load " + so.string() + ": " +
                             dlerror());
  }
  g_loaded[so.string()] = h;
  return h;
}

}  // namespace

std::string unavailable_reason() {
  if (!fs::exists(KILN_EMU_CXX)) {
    return std::string("the C++ compiler ") + KILN_EMU_CXX + " is not there any more";
  }
  if (!fs::exists(KILN_EMU_RUNTIME_LIB)) {
    return std::string("the emulator runtime ") + KILN_EMU_RUNTIME_LIB + " is not built";
  }
  return "";
}

std::shared_ptr<const Library> Library::build(const std::vector<Program>& programs,
                                              std::string_view prelude) {
  std::vector<std::vector<FoundKernel>> kernels;
  for (const Program& p : programs) kernels.push_back(find_kernels(p.cuda));
  const std::string source = batch_source(programs, prelude, kernels);
  const std::string stem = "emu-" + hex64(fnv1a(source, fnv1a(toolchain_identity())));
  const fs::path dir = work_dir();
  const fs::path so = dir / (stem + ".so");
  // ctest runs each test of a suite as its own process, several at once: the
  // first builds the batch, the others wait for it and load the result.
  const int lock_fd = ::open((dir / (stem + ".lock")).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock_fd >= 0) ::flock(lock_fd, LOCK_EX);
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) ::close(fd);  // releases the lock
    }
  } unlock{lock_fd};
  if (!fs::exists(so)) {
    // Private names until the rename, so concurrent test processes do not collide.
    const std::string tag = "." + std::to_string(getpid());
    const fs::path cpp = dir / (stem + ".cpp");
    const fs::path obj = dir / (stem + tag + ".o");
    const fs::path tmp_so = dir / (stem + tag + ".so");
    const fs::path log = dir / (stem + tag + ".log");
    {
      const fs::path tmp_cpp = dir / (stem + tag + ".cpp");
      std::ofstream(tmp_cpp) << source;
      fs::rename(tmp_cpp, cpp);
    }
    const std::string launcher = KILN_EMU_LAUNCHER;
    const std::string compile = (launcher.empty() ? "" : quote(launcher) + " ") +
                                quote(KILN_EMU_CXX) + " " + KILN_EMU_CXXFLAGS + " -I" +
                                quote(KILN_EMU_SOURCE_DIR) + " -c " + quote(cpp.string()) + " -o " +
                                quote(obj.string());
    const std::string link = quote(KILN_EMU_CXX) + " -shared " + KILN_EMU_LDFLAGS + " " +
                             quote(obj.string()) + " " + quote(KILN_EMU_RUNTIME_LIB) +
                             " -Wl,--exclude-libs,ALL -ldl -o " + quote(tmp_so.string());
    if (!run_command(compile, log) || !run_command(link, log)) {
      std::string text = read_file(log);
      if (text.size() > 16000) text = text.substr(0, 16000) + "\n... (cut)";
      fs::remove(obj);
      fs::remove(log);
      throw std::runtime_error("cuda emulation harness: the emulated kernels do not compile (" +
                               cpp.string() + "):\n" + text);
    }
    fs::remove(obj);
    fs::remove(log);
    fs::rename(tmp_so, so);
  }
  void* h = load(so);
  auto kernels_fn = reinterpret_cast<emu::KilnEmuKernelsFn>(dlsym(h, "kiln_emu_kernels"));
  auto run_fn = reinterpret_cast<emu::KilnEmuRunFn>(dlsym(h, "kiln_emu_run"));
  if (kernels_fn == nullptr || run_fn == nullptr) {
    throw std::runtime_error("cuda emulation harness: " + so.string() + " lacks its exports");
  }
  std::shared_ptr<Library> lib(new Library());
  lib->num_programs_ = programs.size();
  lib->run_ = run_fn;
  size_t count = 0;
  const emu::KernelEntry* entries = kernels_fn(&count);
  for (size_t i = 0; i < count; ++i) {
    const emu::KernelEntry& e = entries[i];
    KernelInfo info;
    info.program = static_cast<size_t>(e.program);
    info.name = e.name;
    info.launch_bound = e.launch_bound;
    info.params.assign(e.params, e.params + e.num_params);
    lib->infos_.push_back(std::move(info));
    lib->entries_.push_back(&e);
  }
  return lib;
}

std::vector<const KernelInfo*> Library::kernels(size_t program) const {
  std::vector<const KernelInfo*> out;
  for (const KernelInfo& k : infos_) {
    if (k.program == program) out.push_back(&k);
  }
  return out;
}

const KernelInfo& Library::kernel(size_t program, std::string_view name) const {
  std::string known;
  for (const KernelInfo& k : infos_) {
    if (k.program != program) continue;
    if (k.name == name) return k;
    known += (known.empty() ? "" : ", ") + k.name;
  }
  throw std::out_of_range("cuda emulation harness: program " + std::to_string(program) +
                          " has no kernel '" + std::string(name) + "' (it has: " + known + ")");
}

void Library::launch(const KernelInfo& kernel, Dim grid, Dim block, std::span<void* const> buffers,
                     std::span<const int64_t> scalars, size_t shared_bytes) const {
  const size_t index = static_cast<size_t>(&kernel - infos_.data());
  if (index >= infos_.size()) {
    throw std::invalid_argument("cuda emulation harness: a kernel of another library");
  }
  const unsigned g[3] = {grid.x, grid.y, grid.z};
  const unsigned b[3] = {block.x, block.y, block.z};
  char report[emu::kReportCapacity];
  const int rc = run_(entries_[index], g, b, shared_bytes, buffers.data(), buffers.size(),
                      scalars.data(), scalars.size(), report);
  if (rc != 0) throw emu::Error(static_cast<emu::ErrorKind>(rc), report);
}

Buffer::Buffer(size_t elem_size, size_t count, bool integral)
    : data_(new unsigned char[elem_size * count == 0 ? 1 : elem_size * count]),
      bytes_(elem_size * count) {
  std::memset(data_.get(), integral ? 0xBE : 0xFF, bytes_);
}

}  // namespace kiln::emutest
