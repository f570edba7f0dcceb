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
  // Workers started beside those while some wait on clients that do not read their answers
  // (one for each such worker, while requests wait for a worker), so that clients that stall
  // cannot take every worker; each ends when no request waits. At most this many at once.
  size_t max_stall_spares = 1024;
  // A response waits at most this long in all for its client to read (each write waits at
  // most httplib's write timeout); then the client is taken as gone and the connection closes.
  std::chrono::milliseconds write_stall_budget{60000};
  // A request's head (request line and headers) must arrive within this, from its first byte.
  std::chrono::milliseconds head_timeout{10000};
  // A request's body must arrive within this, from the end of its head. It is waited for
  // whole (up to max_body_bytes) without a worker.
  std::chrono::milliseconds body_timeout{30000};
  // A connection with no request under way is closed after this.
  std::chrono::milliseconds idle_timeout{5000};
  // A client whose input ended (it half-closed, or closed) while its request runs, and to
  // which nothing has been written yet, is sent a 100 Continue after this to learn whether it
  // still reads (current_client_gone()).
  std::chrono::milliseconds half_close_probe{1000};
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

// For a route handler, on the thread that runs its request: true once the request's client
// is gone (its connection reset, closed both ways, or a write to it failed); false while it
// may still read, and outside a request served by an HttpListener. cpp-httplib 0.11.4 gives
// a handler no socket, and a handler that answers only when its work is done (a whole
// completion, whose status follows the outcome) writes nothing meanwhile, so it asks this
// while it waits. The end of the client's input is not its going: a client may half-close
// after its request (shutdown(SHUT_WR)) and read the answer. Until something is written a
// half-close and a close look alike, so after ConnectionLimits::half_close_probe a call
// writes a 100 Continue (HTTP/1.1 clients read past it), which a closed socket answers with
// a reset that a later call sees (HTTP/1.0: nothing is written; a close is seen when the
// answer is).
bool current_client_gone();

// The reason phrase of an HTTP status ("Not Found"; "Client Closed Request" for nginx's
// 499), or "" for a status this table lacks (RFC 9112 4 allows an empty one). httplib names
// every status it does not know "Internal Server Error".
std::string_view reason_phrase(int status);

// A response head (status line to the empty line) as the listener writes it: the status
// line's reason phrase from reason_phrase(), a header line that repeats an earlier one (name
// and value) dropped, and one Connection header, "close" if any said close (a route that
// closes sets it and httplib adds its own for a request that said close: both were sent),
// and then no Keep-Alive header.
std::string normalized_response_head(std::string_view head);

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
