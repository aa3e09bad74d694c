// Private files: open without following the last symlink, then fstat the
// descriptor and check type, owner and write permissions (see private_files.h).
#include "runtime/private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace kiln::runtime {

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

// Why an open object with status `st` is not trusted ("" when it is).
std::string distrust(const struct stat& st, bool want_directory) {
  if (want_directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return want_directory ? "not a directory" : "not a regular file";
  }
  if (st.st_uid != ::geteuid()) return "not owned by you";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
  return "";
}

// After a failed open of `name` in `dirfd`: a refusal when the name is a
// symlink or the wrong kind of object, else the open's errno.
PrivateOpen classify_failure(int dirfd, const char* name, int err, bool want_directory) {
  PrivateOpen r;
  struct stat st;
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) {
      r.refused = "a symlink";
      return r;
    }
    if (want_directory && !S_ISDIR(st.st_mode)) {
      r.refused = "not a directory";
      return r;
    }
  }
  r.error = err ? err : EIO;
  return r;
}

// Opens directory `name` in `dirfd` and checks it; `created`: this process
// just made it, so its mode is set to exactly 0700 (the umask may have taken
// bits away; it can never add any).
PrivateOpen open_verified_directory(int dirfd, const char* name, bool created) {
  int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return classify_failure(dirfd, name, errno, true);
  PrivateOpen r;
  r.fd = UniqueFd(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    r.error = errno;
    r.fd.reset();
    return r;
  }
  if (created && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 07777) != 0700) {
    if (::fchmod(fd, 0700) == 0) st.st_mode = (st.st_mode & ~07777u) | 0700;
  }
  r.refused = distrust(st, true);
  if (!r.refused.empty()) r.fd.reset();
  return r;
}

// mkdir with mode 0700; true when this call created it.
bool make_private_directory(int dirfd, const char* name) {
  return ::mkdirat(dirfd, name, 0700) == 0;
}

}  // namespace

PrivateOpen open_private_directory(const std::string& path_in, bool create) {
  std::string path = path_in;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) {
    PrivateOpen r;
    r.error = ENOENT;
    return r;
  }
  bool created = false;
  if (create) {
    // Every missing ancestor, then the directory itself, made 0700. An
    // ancestor may be a symlink (/home -> /var/home); only the cache
    // directory itself must not be.
    for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
      std::string prefix = path.substr(0, pos);
      if (prefix.empty() || prefix.back() == '/') continue;
      if (make_private_directory(AT_FDCWD, prefix.c_str())) {
        // Made by us: exactly 0700 (only when it is still our directory).
        open_verified_directory(AT_FDCWD, prefix.c_str(), true);
      }
    }
    created = make_private_directory(AT_FDCWD, path.c_str());
  }
  return open_verified_directory(AT_FDCWD, path.c_str(), created);
}

PrivateOpen open_private_subdirectory(int dirfd, const std::string& name, bool create) {
  bool created = create && make_private_directory(dirfd, name.c_str());
  return open_verified_directory(dirfd, name.c_str(), created);
}

PrivateOpen open_private_file(int dirfd, const std::string& name, long long* st_size) {
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return classify_failure(dirfd, name.c_str(), errno, false);
  PrivateOpen r;
  r.fd = UniqueFd(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    r.error = errno;
    r.fd.reset();
    return r;
  }
  r.refused = distrust(st, false);
  if (!r.refused.empty()) {
    r.fd.reset();
    return r;
  }
  if (st_size) *st_size = static_cast<long long>(st.st_size);
  return r;
}

}  // namespace kiln::runtime
