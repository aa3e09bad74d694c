// Private files: directories and files that Kiln reads code from (the kernel
// and tuning caches) are only trusted when they belong to the current user
// and no one else can write them. Everything is opened without following a
// symbolic link at the last step, files relative to an already verified
// directory (openat), and checked with fstat on the open descriptor, so the
// object checked is the object used.
//
// A refusal carries a reason for the user ("a symlink", "not owned by you",
// "writable by group or others", "not a directory", "not a regular file");
// any other failure (ENOENT, EACCES, ...) is an ordinary system error.
#pragma once

#include <string>

namespace kiln::runtime {

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

 private:
  int fd_ = -1;
};

// The result of opening a private directory or file.
struct PrivateOpen {
  UniqueFd fd;          // valid on success
  std::string refused;  // non-empty: it exists but is not trusted (why, for "PATH is <why>")
  int error = 0;        // otherwise, on failure: the errno (ENOENT when absent)
  bool ok() const { return fd.valid(); }
};

// Opens directory `path` (O_DIRECTORY | O_NOFOLLOW on its last component).
// With `create`, missing directories on the way are made with mode 0700
// whatever the umask. Refused unless it is a directory, owned by the
// effective user and not writable by group or others.
PrivateOpen open_private_directory(const std::string& path, bool create);

// The same for directory `name` (one component) inside the verified
// directory `dirfd`.
PrivateOpen open_private_subdirectory(int dirfd, const std::string& name, bool create);

// Opens file `name` inside the verified directory `dirfd` for reading
// (O_NOFOLLOW | O_NONBLOCK, so a FIFO cannot block). Refused unless it is a
// regular file owned by the effective user and not writable by group or
// others. `st_size`, when given, receives the file's size.
PrivateOpen open_private_file(int dirfd, const std::string& name, long long* st_size = nullptr);

}  // namespace kiln::runtime
