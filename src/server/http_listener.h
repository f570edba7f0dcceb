// cpp-httplib's server with connections that wait for their next request without a thread.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace gs::server {

class Connection;
class ConnectionQueue;

// Limits of one connection's life (the rest, such as keep-alive counts, are httplib's).
struct ConnectionLimits {
  // The most workers serving requests at once (each request holds one while it runs).
  size_t n_workers = 96;
  // A request's head (request line and headers) must arrive within this, from its first byte.
  std::chrono::milliseconds head_timeout{10000};
  // A request's body must arrive within this, from the end of its head. It is waited for
  // whole (up to max_body_bytes) without a worker.
  std::chrono::milliseconds body_timeout{30000};
  // A connection with no request under way is closed after this.
  std::chrono::milliseconds idle_timeout{5000};
  // Longer request heads are refused (431).
  size_t max_head_bytes = 64u << 10;
  // Larger request bodies are refused (413) before they are read.
  size_t max_body_bytes = 8u << 20;
  // Told the status of every request refused here (431, 413, 408), for the metrics.
  std::function<void(int)> on_refusal;
  // Asked once a request head is complete, before its body is waited for: a whole response
  // (status line to body) to send at once and close the connection, or "" to go on. The API
  // key check: a client without the key is answered 401 before its body is buffered.
  std::function<std::string(std::string_view head, int* status)> early_answer;
};

// The value of the first header `name` (lower case) of a raw request head, without the
// surrounding whitespace, or "" when the head has none. For checks made on the head before
// httplib parses it (ConnectionLimits::early_answer).
std::string_view request_header(std::string_view head, std::string_view name);

// For a route handler, on the thread that runs its request: true once the request's client
// has closed or reset its connection; false while it is open, and outside a request served
// by an HttpListener. cpp-httplib 0.11.4 gives a handler no socket, and a handler that
// answers only when its work is done (a whole completion, whose status follows the outcome)
// writes nothing meanwhile, so it asks this while it waits. A client that half-closes after
// its request (shutdown(SHUT_WR)) reads as gone, as it does to httplib's writes.
bool current_client_gone();

// httplib serves each connection on a pool thread from accept to close, so a handful of
// clients that open connections and send nothing, or a byte now and then (slowloris), hold
// every thread and the server answers nobody, /health included. Here a connection holds a
// worker only while a complete request head is buffered and its request runs; between
// requests it waits in a poll() loop (the waiting room) with deadlines for idle and
// half-sent heads. It also keeps bytes read past one request for the next (pipelining).
class HttpListener : public httplib::Server {
 public:
  explicit HttpListener(ConnectionLimits limits);
  ~HttpListener() override;

  // Runs requests on `c` while complete heads are buffered; parks it otherwise.
  void serve(std::shared_ptr<Connection> c);

 private:
  bool process_and_close_socket(socket_t sock) override;

  ConnectionLimits limits_;
  std::atomic<ConnectionQueue*> queue_{nullptr};  // set while listening

  friend class ConnectionQueue;
};

}  // namespace gs::server
