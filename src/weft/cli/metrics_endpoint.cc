// The HTTP side is cpp-httplib (Debian's libcpp-httplib): one listening thread and a small pool,
// as a scrape every few seconds needs no more.
#include "weft/cli/metrics_endpoint.h"

#include <chrono>
#include <thread>

#include <httplib.h>
#include <sys/socket.h>

#include "weft/core/logging.h"
#include "weft/core/metrics.h"
#include "weft/core/str_util.h"
#include "weft/distributed/rpc/transport_security.h"

namespace weft::cli {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";
// A scrape's request is a few hundred bytes; anything beyond this is not one.
constexpr size_t kMaxRequestBytes = 64 << 10;
// Bounds how long the start waits for the listening thread to take over the bound socket.
constexpr auto kStartLimit = std::chrono::seconds(10);

class HttpMetricsEndpoint final : public MetricsEndpoint {
 public:
  HttpMetricsEndpoint(std::string host, std::string token)
      : host_(std::move(host)), token_(std::move(token)) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(/*n=*/2); };
    // Not httplib's default, which adds SO_REUSEPORT: a second process could then bind the same
    // port and take a share of the scrapes.
    server_.set_socket_options([](int socket) {
      const int yes = 1;
      setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    server_.set_payload_max_length(kMaxRequestBytes);
    server_.set_read_timeout(std::chrono::seconds(5));
    server_.set_write_timeout(std::chrono::seconds(5));
    server_.Get("/metrics", [this](const httplib::Request& request, httplib::Response& response) {
      if (!Authorized(request)) {
        response.status = 401;
        response.set_header("WWW-Authenticate", "Bearer");
        response.set_content("missing or wrong token (send Authorization: Bearer <token>)\n",
                             "text/plain");
        return;
      }
      response.set_content(metrics::Registry::Global().ExportText(), kContentType);
    });
  }
  ~HttpMetricsEndpoint() override { Stop(); }

  Status Listen(int port) {
    if (port == 0) {
      port_ = server_.bind_to_any_port(host_);
      if (port_ < 0) return Unavailable("cannot bind the metrics endpoint to ", host_, ":0");
    } else {
      if (!server_.bind_to_port(host_, port)) {
        return Unavailable("cannot bind the metrics endpoint to ", host_, ":", port,
                           " (is the port in use?)");
      }
      port_ = port;
    }
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the thread marks the server running would be lost, and the join would hang.
    const auto limit = std::chrono::steady_clock::now() + kStartLimit;
    while (!server_.is_running()) {
      if (std::chrono::steady_clock::now() > limit) {
        return Internal("the metrics endpoint on ", address(), " did not start");
      }
      std::this_thread::yield();
    }
    return Status::OK();
  }

  std::string address() const override { return StrCat(host_, ":", port_); }

  void Stop() override {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }

 private:
  bool Authorized(const httplib::Request& request) const {
    if (token_.empty()) return true;
    const std::string header = request.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (header.compare(0, kBearer.size(), kBearer) != 0) return false;
    return TokenMatches(token_, std::string_view(header).substr(kBearer.size()));
  }

  const std::string host_;
  const std::string token_;
  int port_ = 0;
  httplib::Server server_;
  std::thread thread_;
};

}  // namespace

StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const MetricsEndpointOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgument("--metrics-port ", options.port, " is not a port (0 to 65535)");
  }
  if (!IsLoopbackHost(options.bind_host) && options.token.empty() && !options.insecure) {
    return InvalidArgument("refusing to serve metrics on ", options.bind_host,
                           " without a token: pass --token-file (scrapers then send "
                           "Authorization: Bearer <token>), bind to 127.0.0.1, or pass --insecure");
  }
  auto endpoint = std::make_unique<HttpMetricsEndpoint>(options.bind_host, options.token);
  WEFT_RETURN_IF_ERROR(endpoint->Listen(options.port));
  return std::unique_ptr<MetricsEndpoint>(std::move(endpoint));
}

}  // namespace weft::cli
