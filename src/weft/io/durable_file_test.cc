#include "weft/io/durable_file.h"

#include <cerrno>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/io/durable_file_internal.h"
#include "weft/io/testing/io_test_util.h"

namespace weft::io {
namespace {

using testing::ReadBytes;
using testing::TempDir;

using ::testing::HasSubstr;

std::string RandomString(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  return bytes;
}

std::vector<std::string> Entries(const std::string& directory) {
  StatusOr<std::vector<std::string>> names = ListDirectory(directory);
  EXPECT_TRUE(names.ok()) << names.status();
  return names.ok() ? *names : std::vector<std::string>{};
}

TEST(DurableFileTest, CommitMakesTheFileAppearWithExactBytes) {
  TempDir dir;
  const std::string path = dir.File("out.bin");
  StatusOr<std::unique_ptr<DurableFileWriter>> writer = DurableFileWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  // Small appends (gathered in the buffer) between large ones (written directly).
  const std::vector<std::string> pieces = {
      "header", RandomString(100, 1),   RandomString(1 << 20, 2), "",
      "x",      RandomString(70000, 3), RandomString(65536, 4),   "tail"};
  std::string expected;
  for (const std::string& piece : pieces) {
    ASSERT_TRUE((*writer)->Append(piece).ok());
    expected += piece;
  }
  EXPECT_EQ((*writer)->size(), expected.size());
  EXPECT_FALSE(PathExists(path));  // only the temporary file exists before Commit
  std::vector<std::string> before = Entries(dir.path());
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].rfind("out.bin.tmp-" + std::to_string(getpid()) + "-", 0), 0u) << before[0];

  ASSERT_TRUE((*writer)->Commit().ok());
  EXPECT_EQ(ReadBytes(path), expected);
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"out.bin"});
  EXPECT_TRUE(IsFailedPrecondition((*writer)->Commit()));
  EXPECT_TRUE(IsFailedPrecondition((*writer)->Append("more")));
  writer->reset();
  EXPECT_EQ(ReadBytes(path), expected);  // the destructor leaves a committed file alone
}

TEST(DurableFileTest, CommitReplacesAnExistingFile) {
  TempDir dir;
  const std::string path = dir.File("f");
  ASSERT_TRUE(WriteFileDurably(path, "old contents").ok());
  ASSERT_TRUE(WriteFileDurably(path, "new").ok());
  EXPECT_EQ(ReadBytes(path), "new");
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"f"});
}

TEST(DurableFileTest, WriterDestroyedWithoutCommitLeavesNoFile) {
  TempDir dir;
  const std::string path = dir.File("never");
  {
    StatusOr<std::unique_ptr<DurableFileWriter>> writer = DurableFileWriter::Create(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->Append(RandomString(200000, 5)).ok());
  }
  EXPECT_FALSE(PathExists(path));
  EXPECT_TRUE(Entries(dir.path()).empty());
}

TEST(DurableFileTest, FailedCommitRemovesTheTemporaryFileAndKeepsTheTarget) {
  TempDir dir;
  // rename(2) cannot put a file over a non-empty directory.
  const std::string path = dir.File("target");
  ASSERT_TRUE(CreateDirectories(JoinPath(path, "inside")).ok());
  StatusOr<std::unique_ptr<DurableFileWriter>> writer = DurableFileWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Append("bytes").ok());
  Status status = (*writer)->Commit();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"target"});
  EXPECT_EQ(Entries(path), std::vector<std::string>{"inside"});
}

TEST(DurableFileTest, MissingDirectoryIsNotFoundNamingIt) {
  TempDir dir;
  const std::string missing = dir.File("no/such");
  StatusOr<std::unique_ptr<DurableFileWriter>> writer =
      DurableFileWriter::Create(JoinPath(missing, "file"));
  ASSERT_FALSE(writer.ok());
  EXPECT_TRUE(IsNotFound(writer.status())) << writer.status();
  EXPECT_THAT(writer.status().message(), HasSubstr("directory " + missing + " does not exist"));
  EXPECT_THAT(writer.status().message(), HasSubstr(JoinPath(missing, "file")));
}

// Creates a file in `directory` (mode 0555) and reports through the exit code how that went: 0
// PermissionDenied naming the path, 1 another outcome, 2 a message without the path.
[[noreturn]] void TryCreateAndExit(const std::string& directory) {
  const std::string path = JoinPath(directory, "file");
  StatusOr<std::unique_ptr<DurableFileWriter>> writer = DurableFileWriter::Create(path);
  if (writer.ok() || !IsPermissionDenied(writer.status())) _exit(1);
  if (writer.status().message().find(path) == std::string::npos) _exit(2);
  if (writer.status().message().find(directory) == std::string::npos) _exit(2);
  _exit(0);
}

TEST(DurableFileTest, ReadOnlyDirectoryIsPermissionDeniedNamingThePath) {
  TempDir dir;
  const std::string read_only = dir.File("ro");
  ASSERT_TRUE(CreateDirectories(read_only).ok());
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(chmod(read_only.c_str(), 0555), 0);
  if (geteuid() != 0) {
    StatusOr<std::unique_ptr<DurableFileWriter>> writer =
        DurableFileWriter::Create(JoinPath(read_only, "file"));
    ASSERT_FALSE(writer.ok());
    EXPECT_TRUE(IsPermissionDenied(writer.status())) << writer.status();
    EXPECT_THAT(writer.status().message(), HasSubstr(JoinPath(read_only, "file")));
  } else {
    // Root ignores permissions, so the check runs in a child that gives them up.
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(77);
      TryCreateAndExit(read_only);
    }
    int wait_status = 0;
    ASSERT_EQ(waitpid(child, &wait_status, 0), child);
    ASSERT_TRUE(WIFEXITED(wait_status));
    if (WEXITSTATUS(wait_status) == 77) {
      std::cout << "running as root without setuid: read-only directory check skipped\n";
    } else {
      EXPECT_EQ(WEXITSTATUS(wait_status), 0) << "1: not PermissionDenied, 2: path not named";
    }
  }
  ASSERT_EQ(chmod(read_only.c_str(), 0755), 0);
  EXPECT_TRUE(Entries(read_only).empty());
}

TEST(DurableFileTest, FullDiskIsResourceExhaustedNamingThePath) {
  // /dev/full fails every write with ENOSPC: the real error, without filling a disk. Append
  // reaches the disk through WriteFully, so this is the mapping Append reports.
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "no /dev/full on this machine";
  const std::string bytes(4096, 'x');
  Status status = internal::WriteFully(fd, bytes.data(), bytes.size(), "/ckpt/shard-0");
  ::close(fd);
  EXPECT_TRUE(IsResourceExhausted(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("no space left on device writing /ckpt/shard-0"));
}

TEST(DurableFileTest, ErrnoMappingNamesCallAndPath) {
  EXPECT_TRUE(IsNotFound(internal::ErrnoToStatus(ENOENT, "open", "/a")));
  EXPECT_TRUE(IsPermissionDenied(internal::ErrnoToStatus(EACCES, "open", "/a")));
  EXPECT_TRUE(IsPermissionDenied(internal::ErrnoToStatus(EROFS, "open", "/a")));
  EXPECT_TRUE(IsResourceExhausted(internal::ErrnoToStatus(ENOSPC, "write", "/a")));
  EXPECT_TRUE(IsResourceExhausted(internal::ErrnoToStatus(EDQUOT, "write", "/a")));
  EXPECT_TRUE(IsDataLoss(internal::ErrnoToStatus(EIO, "fsync", "/a")));
  Status status = internal::ErrnoToStatus(EACCES, "open", "/some/file");
  EXPECT_THAT(status.message(), HasSubstr("open /some/file"));
  EXPECT_THAT(status.message(), HasSubstr("ermission denied"));
}

TEST(DurableFileTest, RenameDurablyMovesADirectory) {
  TempDir dir;
  const std::string from = dir.File("staging");
  const std::string to = dir.File("final");
  ASSERT_TRUE(CreateDirectories(from).ok());
  ASSERT_TRUE(WriteFileDurably(JoinPath(from, "a"), "1").ok());
  ASSERT_TRUE(RenameDurably(from, to).ok());
  EXPECT_FALSE(PathExists(from));
  EXPECT_EQ(ReadBytes(JoinPath(to, "a")), "1");
  Status missing = RenameDurably(from, dir.File("other"));
  EXPECT_TRUE(IsNotFound(missing)) << missing;
  EXPECT_THAT(missing.message(), HasSubstr(from));
}

TEST(DurableFileTest, ListDirectoryIsSorted) {
  TempDir dir;
  for (const char* name : {"c", "a", "B", "b10", "b2"}) {
    ASSERT_TRUE(WriteFileDurably(dir.File(name), name).ok());
  }
  ASSERT_TRUE(CreateDirectories(dir.File("d")).ok());
  EXPECT_EQ(Entries(dir.path()), (std::vector<std::string>{"B", "a", "b10", "b2", "c", "d"}));
  StatusOr<std::vector<std::string>> missing = ListDirectory(dir.File("none"));
  EXPECT_TRUE(IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr(dir.File("none")));
}

TEST(DurableFileTest, RemoveAllRemovesATreeButNotWhatLinksPointTo) {
  TempDir dir;
  const std::string outside = dir.File("outside");
  ASSERT_TRUE(CreateDirectories(outside).ok());
  ASSERT_TRUE(WriteFileDurably(JoinPath(outside, "keep"), "k").ok());
  const std::string tree = dir.File("tree");
  ASSERT_TRUE(CreateDirectories(JoinPath(tree, "a/b/c")).ok());
  ASSERT_TRUE(CreateDirectories(JoinPath(tree, "empty")).ok());
  ASSERT_TRUE(WriteFileDurably(JoinPath(tree, "top"), "t").ok());
  ASSERT_TRUE(WriteFileDurably(JoinPath(tree, "a/b/c/deep"), "d").ok());
  ASSERT_EQ(symlink(outside.c_str(), JoinPath(tree, "a/link").c_str()), 0);
  ASSERT_TRUE(RemoveAll(tree).ok());
  EXPECT_FALSE(PathExists(tree));
  EXPECT_EQ(ReadBytes(JoinPath(outside, "keep")), "k");
  EXPECT_TRUE(RemoveAll(tree).ok());                       // already gone
  ASSERT_TRUE(RemoveAll(JoinPath(outside, "keep")).ok());  // a plain file
  EXPECT_TRUE(Entries(outside).empty());
}

TEST(DurableFileTest, ReadFileToString) {
  TempDir dir;
  StatusOr<std::string> missing = ReadFileToString(dir.File("absent"));
  EXPECT_TRUE(IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr(dir.File("absent")));
  const std::string big = RandomString(300000, 6);
  ASSERT_TRUE(WriteFileDurably(dir.File("big"), big).ok());
  ASSERT_TRUE(WriteFileDurably(dir.File("empty"), "").ok());
  StatusOr<std::string> read = ReadFileToString(dir.File("big"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, big);
  read = ReadFileToString(dir.File("empty"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "");
  StatusOr<std::string> directory = ReadFileToString(dir.path());
  EXPECT_FALSE(directory.ok());
  EXPECT_THAT(directory.status().message(), HasSubstr(dir.path()));
}

TEST(DurableFileTest, CreateDirectories) {
  TempDir dir;
  const std::string nested = dir.File("x/y//z/");
  ASSERT_TRUE(CreateDirectories(nested).ok());
  ASSERT_TRUE(CreateDirectories(nested).ok());  // already there
  EXPECT_EQ(Entries(dir.File("x/y")), std::vector<std::string>{"z"});
  ASSERT_TRUE(WriteFileDurably(dir.File("file"), "").ok());
  Status blocked = CreateDirectories(dir.File("file/sub"));
  EXPECT_TRUE(IsFailedPrecondition(blocked)) << blocked;
  EXPECT_THAT(blocked.message(), HasSubstr(dir.File("file")));
  EXPECT_TRUE(SyncDirectory(dir.File("x/y/z")).ok());
  Status missing = SyncDirectory(dir.File("nope"));
  EXPECT_TRUE(IsNotFound(missing)) << missing;
  EXPECT_THAT(missing.message(), HasSubstr(dir.File("nope")));
}

TEST(DurableFileTest, PathHelpers) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("a", "/b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "/b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(JoinPath("a", ""), "a");
  EXPECT_EQ(DirectoryOf("a/b/c"), "a/b");
  EXPECT_EQ(DirectoryOf("/a"), "/");
  EXPECT_EQ(DirectoryOf("/"), "/");
  EXPECT_EQ(DirectoryOf("file"), ".");
  EXPECT_EQ(DirectoryOf("a//b"), "a");
  EXPECT_EQ(DirectoryOf("a/b/"), "a");
  EXPECT_TRUE(PathExists("/"));
  EXPECT_FALSE(PathExists("/definitely/not/here"));
}

}  // namespace
}  // namespace weft::io
