// Mutual TLS and tokens on a real GrpcServer (both ports) on 127.0.0.1, and the loading of
// TransportSecurity from files and the environment.
#include "weft/distributed/rpc/transport_security.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/distributed/rpc/bulk_transfer.h"
#include "weft/distributed/rpc/grpc_remote_worker.h"
#include "weft/distributed/rpc/grpc_server.h"
#include "weft/distributed/rpc/grpc_util.h"

namespace weft {
namespace {

constexpr char kTask[] = "/job:worker/replica:0/task:0";

std::string TestData(const std::string& name) {
  return std::string(WEFT_RPC_TESTDATA) + "/" + name;
}

TransportSecurityFiles Files(const std::string& prefix, const std::string& ca) {
  TransportSecurityFiles files;
  files.certificate = TestData(prefix + "task.pem");
  files.private_key = TestData(prefix + "task.key");
  files.ca = TestData(ca);
  return files;
}

TransportSecurity Load(const TransportSecurityFiles& files) {
  StatusOr<TransportSecurity> security = LoadTransportSecurity(files);
  EXPECT_TRUE(security.ok()) << security.status();
  return security.ok() ? *security : TransportSecurity();
}

std::unique_ptr<GrpcServer> StartServer(const TransportSecurity& security) {
  GrpcServerOptions options;
  StatusOr<ClusterSpec> cluster = ClusterSpec::FromFlag("worker=127.0.0.1:0");
  EXPECT_TRUE(cluster.ok());
  options.server.cluster = *cluster;
  options.server.task.job = "worker";
  options.security = security;
  StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

// GetStatus on `address` as a client with `security`, waiting at most a few seconds.
Status Ping(const std::string& address, const TransportSecurity& security) {
  GrpcRemoteWorker remote(kTask, address, NewWeftChannel(address, security), nullptr,
                          security.token);
  CallOptions options;
  options.set_timeout_ms(5000);
  proto::GetStatusResponse response;
  return remote.GetStatus(&options, proto::GetStatusRequest(), &response);
}

class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    had_ = old != nullptr;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnvironment() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(TransportSecurityTest, TlsServerServesTlsClientsOfItsCaOnly) {
  const TransportSecurity security = Load(Files("", "ca.pem"));
  std::unique_ptr<GrpcServer> server = StartServer(security);
  ASSERT_NE(server, nullptr);
  const std::string address = server->address();
  EXPECT_TRUE(Ping(address, security).ok()) << Ping(address, security);
  // Plaintext is refused.
  Status plaintext = Ping(address, TransportSecurity());
  EXPECT_FALSE(plaintext.ok());
  EXPECT_NE(plaintext.message().find(address), std::string::npos) << plaintext;
  // A certificate another CA signed is refused (the server checks clients: mutual TLS), and a
  // client that trusts only the other CA refuses the server.
  TransportSecurity stranger = Load(Files("other_", "ca.pem"));
  EXPECT_FALSE(Ping(address, stranger).ok());
  TransportSecurity wrong_trust = Load(Files("", "other_ca.pem"));
  EXPECT_FALSE(Ping(address, wrong_trust).ok());
  // The server goes on serving the right clients.
  EXPECT_TRUE(Ping(address, security).ok());
}

TEST(TransportSecurityTest, WrongTokenIsUnauthenticatedOnTheGrpcPort) {
  TransportSecurity security;
  security.token = "correct horse battery staple";
  std::unique_ptr<GrpcServer> server = StartServer(security);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(Ping(server->address(), security).ok());
  TransportSecurity wrong;
  wrong.token = "correct horse battery stapler";
  Status status = Ping(server->address(), wrong);
  EXPECT_TRUE(IsUnauthenticated(status)) << status;
  EXPECT_NE(status.message().find("GetStatus"), std::string::npos) << status;
  status = Ping(server->address(), TransportSecurity());
  EXPECT_TRUE(IsUnauthenticated(status)) << status;
  EXPECT_TRUE(Ping(server->address(), security).ok());
}

TEST(TransportSecurityTest, WrongTokenIsUnauthenticatedOnTheBulkPort) {
  BulkTransferServer::Options server_options;
  server_options.token = "s3cret";
  auto server = BulkTransferServer::Create(server_options);
  ASSERT_TRUE(server.ok()) << server.status();
  const Tensor value = Tensor::FromVector<float>(std::vector<float>(1000, 2.5f));
  auto fetch = [&](const std::string& token, uint64_t ticket) {
    BulkTransferClient::Options options;
    options.token = token;
    options.io_timeout_ms = 5000;
    BulkTransferClient client(options);
    std::vector<float> destination(1000);
    Notification done;
    Status result;
    client.FetchAsync("127.0.0.1", (*server)->port(), ticket, destination.data(),
                      destination.size() * sizeof(float), [&](const Status& status) {
                        result = status;
                        done.Notify();
                      });
    done.WaitForNotification();
    if (result.ok()) {
      EXPECT_EQ(destination[999], 2.5f);
    }
    return result;
  };
  const uint64_t ticket = (*server)->Offer(1, value);
  Status status = fetch("wrong", ticket);
  EXPECT_TRUE(IsUnauthenticated(status)) << status;
  status = fetch("", ticket);
  EXPECT_TRUE(IsUnauthenticated(status)) << status;
  // Refused peers claimed nothing; the right token gets the value.
  EXPECT_EQ((*server)->NumOffered(), 1u);
  EXPECT_TRUE(fetch("s3cret", ticket).ok());
  EXPECT_EQ((*server)->NumOffered(), 0u);
}

TEST(TransportSecurityTest, UnauthenticatedServersBindOnlyToLoopback) {
  GrpcServerOptions options;
  StatusOr<ClusterSpec> cluster = ClusterSpec::FromFlag("worker=127.0.0.1:0");
  ASSERT_TRUE(cluster.ok());
  options.server.cluster = *cluster;
  options.server.task.job = "worker";
  options.bind_host = "0.0.0.0";
  StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::Create(options);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(IsInvalidArgument(server.status())) << server.status();
  EXPECT_NE(server.status().message().find("refusing to listen on 0.0.0.0"), std::string::npos)
      << server.status();
  EXPECT_NE(server.status().message().find("--insecure"), std::string::npos) << server.status();
}

TEST(TransportSecurityTest, LoadingNamesTheFlagAndFileAtFault) {
  TransportSecurityFiles files = Files("", "ca.pem");
  files.ca.clear();
  StatusOr<TransportSecurity> security = LoadTransportSecurity(files);
  ASSERT_FALSE(security.ok());
  EXPECT_NE(security.status().message().find("missing: --tls-ca"), std::string::npos)
      << security.status();

  files = Files("", "ca.pem");
  files.private_key = "/nonexistent/weft.key";
  security = LoadTransportSecurity(files);
  ASSERT_FALSE(security.ok());
  EXPECT_NE(security.status().message().find("--tls-key /nonexistent/weft.key"), std::string::npos)
      << security.status();

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("weft_security_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string not_pem = (dir / "not.pem").string();
  std::ofstream(not_pem) << "hello";
  files = Files("", "ca.pem");
  files.certificate = not_pem;
  security = LoadTransportSecurity(files);
  ASSERT_FALSE(security.ok());
  EXPECT_NE(security.status().message().find("--tls-cert " + not_pem + ": not a PEM file"),
            std::string::npos)
      << security.status();

  const std::string empty_token = (dir / "empty").string();
  std::ofstream(empty_token) << "\n";
  files = TransportSecurityFiles();
  files.token_file = empty_token;
  security = LoadTransportSecurity(files);
  ASSERT_FALSE(security.ok());
  EXPECT_NE(security.status().message().find("the token is empty"), std::string::npos);

  const std::string token = (dir / "token").string();
  std::ofstream(token) << "abc\n";
  files.token_file = token;
  security = LoadTransportSecurity(files);
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_EQ(security->token, "abc");
  EXPECT_FALSE(security->tls());
  std::filesystem::remove_all(dir);
}

TEST(TransportSecurityTest, EnvironmentSuppliesTheTokenAndFiles) {
  ScopedEnvironment token("WEFT_TOKEN", "from-env");
  ScopedEnvironment token_file("WEFT_TOKEN_FILE", nullptr);
  ScopedEnvironment cert("WEFT_TLS_CERT", TestData("task.pem").c_str());
  ScopedEnvironment key("WEFT_TLS_KEY", TestData("task.key").c_str());
  ScopedEnvironment ca("WEFT_TLS_CA", TestData("ca.pem").c_str());
  StatusOr<TransportSecurity> security = TransportSecurityFromEnvironment();
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_EQ(security->token, "from-env");
  EXPECT_TRUE(security->tls());
  ScopedEnvironment no_ca("WEFT_TLS_CA", nullptr);
  security = TransportSecurityFromEnvironment();
  ASSERT_FALSE(security.ok());
  EXPECT_NE(security.status().message().find("WEFT_TLS_CA"), std::string::npos)
      << security.status();
}

TEST(TransportSecurityTest, TokenComparison) {
  EXPECT_TRUE(TokenMatches("abc", "abc"));
  EXPECT_FALSE(TokenMatches("abc", "abd"));
  EXPECT_FALSE(TokenMatches("abc", "ab"));
  EXPECT_FALSE(TokenMatches("abc", ""));
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
}

}  // namespace
}  // namespace weft
