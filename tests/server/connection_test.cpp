// Connections as hostile or unusual clients drive them: idle and half-sent requests
// (slowloris), trickled bodies, pipelined requests, bad Content-Length, oversized heads.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/http_listener.h"
#include "server_fixture.h"

namespace gs {
namespace {

using test::LiveServer;
using test::ServerFixtureOptions;
using namespace std::chrono_literals;

// A raw client socket on the loopback server.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  void send(const std::string& s) { ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL); }
  // Ends what this client sends (a FIN); it still reads.
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  // Reads until `n` copies of `marker` arrived, the peer closed, or `limit` passed.
  std::string read_until(const std::string& marker, int n, std::chrono::milliseconds limit) {
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (count(got, marker) < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[4096];
      const ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
      if (r <= 0) break;
      got.append(buf, static_cast<size_t>(r));
    }
    return got;
  }

  static int count(const std::string& s, const std::string& marker) {
    int n = 0;
    for (size_t at = s.find(marker); at != std::string::npos; at = s.find(marker, at + 1)) ++n;
    return n;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// One chunk of a chunked body: its size line, the data, its line end.
std::string chunk_of(const std::string& data) {
  char size_line[32];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
  return size_line + data + "\r\n";
}

// /health answers and a completion runs, within 3 s, while hostile clients hold connections.
void expect_serving_quickly(LiveServer& s) {
  const auto t0 = std::chrono::steady_clock::now();
  test::expect_healthy(s);
  auto r = s.post("/v1/completions", R"({"prompt":"x","max_tokens":3})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

std::string post_request(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Slowloris: clients that connect and send nothing, half a head, or a head and a trickle of
// body held every HTTP thread, and the server answered nobody, /health included.
TEST(Connections, IdleAndHalfSentRequestsDoNotStarveOtherClients) {
  ServerFixtureOptions o;
  o.http_threads = 4;
  o.head_timeout = 600ms;
  LiveServer s(o);
  s.answer("fine");
  std::vector<std::unique_ptr<RawClient>> hostile;
  for (int i = 0; i < 30; ++i) {
    hostile.push_back(std::make_unique<RawClient>(s.http->port()));
    ASSERT_TRUE(hostile.back()->connected());
    switch (i % 3) {
      case 0: break;  // connects, says nothing
      case 1: hostile.back()->send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n"); break;
      case 2: hostile.back()->send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"); break;
    }
  }
  std::this_thread::sleep_for(100ms);
  expect_serving_quickly(s);
  // A half-sent head gets a 408 once its time is up, and the connection closes.
  const std::string late = hostile[1]->read_until("\r\n\r\n", 1, 3s);
  EXPECT_NE(late.find("408"), std::string::npos) << late;
}

// Bodies that stall (a Content-Length body sent in part, a chunked body without its last
// chunk) wait without a worker: with 2 workers, 12 such clients left /health unanswered for
// the 30 s body deadline. Complete ones still run.
TEST(Connections, StalledBodiesDoNotHoldWorkers) {
  ServerFixtureOptions o;
  o.http_threads = 2;
  LiveServer s(o);
  s.answer("fine");
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < 12; ++i) {
    stalled.push_back(std::make_unique<RawClient>(s.http->port()));
    ASSERT_TRUE(stalled.back()->connected());
    if (i % 2 == 0) {
      stalled.back()->send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 600000\r\n\r\n" +
                           std::string(300000, ' '));
    } else {
      stalled.back()->send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "4\r\n{\"pr\r\n");
    }
  }
  std::this_thread::sleep_for(200ms);
  expect_serving_quickly(s);
  // A chunked body that completes later is answered.
  stalled[1]->send(chunk_of(R"(ompt":"x","max_tokens":2})") + "0\r\n\r\n");
  const std::string got = stalled[1]->read_until("text_completion", 1, 5s);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << "[" << got.substr(0, 300) << "]";
  // Stopping does not wait for the stalled bodies (it waited for their 30 s deadline).
  const auto t1 = std::chrono::steady_clock::now();
  s.http->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 3s);
}

// A request line that is not HTTP/1.x gets one 400 and the connection closes (the rest of the
// head was read as more requests: 100 answers to 3 bytes); bare LF line ends are read.
TEST(Connections, MalformedRequestLinesGetOneAnswer) {
  LiveServer s;
  s.answer("fine");
  for (const std::string& bad : {std::string("X\n\n"), std::string("FOO / HTTP/1.1 extra\r\nHost: x\r\n\r\n"),
                                std::string("GET /health\r\nHost: x\r\n\r\n"),
                                std::string("G\0T /health HTTP/1.1\r\nHost: x\r\n\r\n", 33),
                                std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)}) {  // a TLS hello
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send(bad);
    const std::string got = c.read_until("HTTP/1.1", 2, 2s);
    EXPECT_EQ(RawClient::count(got, "HTTP/1.1 400"), 1) << got.substr(0, 300);
    EXPECT_EQ(RawClient::count(got, "HTTP/1.1"), 1) << got.substr(0, 300);
  }
  RawClient lf(s.http->port());
  ASSERT_TRUE(lf.connected());
  lf.send("GET /health HTTP/1.1\nHost: x\nConnection: close\n\n");
  const std::string got = lf.read_until("\r\n\r\n", 1, 2s);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got.substr(0, 300);
  test::expect_healthy(s);
}

// A well-formed request with a method no route has (TRACE, CONNECT, an extension method)
// is 501 Not Implemented naming the method (RFC 9110 15.6.2), as JSON, once; it was 400
// "malformed HTTP request". The methods the routes use still reach them.
TEST(Connections, UnknownMethodsAre501) {
  LiveServer s;
  for (const std::string method : {"TRACE", "CONNECT", "BREW", "PROPFIND"}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send(method + " /v1/models HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string got = c.read_until("}}", 2, 2s);
    EXPECT_EQ(got.rfind("HTTP/1.1 501", 0), 0u) << method << ": " << got.substr(0, 300);
    const size_t body = got.find("\r\n\r\n");
    ASSERT_NE(body, std::string::npos) << got;
    const auto j = nlohmann::json::parse(got.substr(body + 4, got.find("}}", body) + 2 - body - 4), nullptr, false);
    ASSERT_TRUE(j.is_object()) << got;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(method), std::string::npos) << got;
    EXPECT_EQ(RawClient::count(got, "HTTP/1.1"), 1) << got.substr(0, 300);
  }
  for (const std::string method : {"GET", "HEAD", "OPTIONS", "DELETE", "PUT", "PATCH", "POST"}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send(method + " /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    const std::string got = c.read_until("\r\n\r\n", 1, 2s);
    const std::string want = method == "GET" || method == "HEAD" ? "HTTP/1.1 200"
                             : method == "OPTIONS"                 ? "HTTP/1.1 204"
                                                                   : "HTTP/1.1 405";
    EXPECT_EQ(got.rfind(want, 0), 0u) << method << ": " << got.substr(0, 300);
  }
  test::expect_healthy(s);
}

// A multipart/form-data body (a form upload sent to the JSON API) is 415 that says what to send; a
// valid one came to the route as an empty body ("the request body is empty"), another as
// 400 "malformed HTTP request". Other content types are read as JSON as before.
TEST(Connections, MultipartBodiesAre415) {
  LiveServer s;
  s.answer("fine");
  const std::string form = "--xx\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nhi\r\n--xx--\r\n";
  for (const std::string& body : {form, std::string(R"({"prompt":"hi","max_tokens":2})")}) {
    for (const char* type : {"multipart/form-data; boundary=xx", "Multipart/Form-Data;boundary=xx"}) {
      RawClient c(s.http->port());
      ASSERT_TRUE(c.connected());
      c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: " + std::string(type) +
             "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
      const std::string got = c.read_until("}}", 1, 2s);
      EXPECT_EQ(got.rfind("HTTP/1.1 415", 0), 0u) << type << ": " << got.substr(0, 300);
      EXPECT_NE(got.find("application/json"), std::string::npos) << got;
    }
  }
  auto r = s.client().Post("/v1/completions", R"({"prompt":"hi","max_tokens":2})", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  test::expect_healthy(s);
}

// A JSON body sent as application/x-www-form-urlencoded (curl -d without -H) is read as JSON,
// whatever its size: httplib parsed it as a form and answered 413 above 8 KB ("larger than
// this server accepts"), so any real prompt sent that way failed. httplib takes any
// Content-Type value that begins with the form type for a form, not only the exact type, so
// those values are read as JSON too.
TEST(Connections, FormEncodedBodiesAreReadAsJson) {
  LiveServer s;
  s.answer("fine");
  const auto post = [&](const std::string& type, const std::string& body) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: " + type +
           "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    const std::string got = c.read_until("}", 1, 5s);
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << type << ": " << got.substr(0, 300);
  };
  const std::string large = R"({"prompt":"hi","max_tokens":2})" + std::string(200000, ' ');
  for (const char* type : {"application/x-www-form-urlencoded", "Application/X-WWW-Form-Urlencoded; charset=utf-8"})
    post(type, large);
  const std::string over_8k = R"({"prompt":"hi","max_tokens":2})" + std::string(20000, ' ');
  for (const char* type : {"application/x-www-form-urlencodedX", "application/x-www-form-urlencoded, text/plain",
                           "application/x-www-form-urlencoded foo"})
    post(type, over_8k);
  auto r = s.client().Post("/v1/completions", over_8k, "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find("fine"), std::string::npos) << r->body;
  test::expect_healthy(s);
}

// RFC 9112 3.2.2: a server MUST accept a request target in absolute-form, as proxies send it.
// httplib routed "http://host:port/v1/completions" as the path, so every such request was a 404.
TEST(Connections, AbsoluteFormTargetsAreRouted) {
  LiveServer s;
  s.answer("fine");
  const auto exchange = [&](const std::string& head, const std::string& body) {
    RawClient c(s.http->port());
    EXPECT_TRUE(c.connected());
    c.send(head + "\r\nHost: other\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body);
    return c.read_until("\r\n\r\n", 1, 5s) + c.read_until("}", 1, 5s);
  };
  const std::string port = std::to_string(s.http->port());
  const std::string completion = R"({"prompt":"hi","max_tokens":2})";
  for (const std::string& target : {"http://127.0.0.1:" + port + "/v1/completions", std::string("HTTPS://example.com/v1/completions"),
                                   "http://[::1]:" + port + "/v1/completions?x=1"}) {
    const std::string got = exchange("POST " + target + " HTTP/1.1", completion);
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << target << ": " << got.substr(0, 300);
    EXPECT_NE(got.find("fine"), std::string::npos) << target << ": " << got.substr(0, 300);
  }
  std::string got = exchange("GET http://localhost:" + port + "/v1/models HTTP/1.1", "");
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got.substr(0, 300);
  EXPECT_NE(got.find("\"object\":\"list\""), std::string::npos) << got.substr(0, 300);
  // An empty path is "/" (no route: a 404, as for "GET / HTTP/1.1"); a target that only looks
  // like a URL is a path, routed as it is.
  got = exchange("GET http://localhost:" + port + " HTTP/1.1", "");
  EXPECT_EQ(got.rfind("HTTP/1.1 404", 0), 0u) << got.substr(0, 300);
  got = exchange("POST http:/v1/completions HTTP/1.1", completion);
  EXPECT_EQ(got.rfind("HTTP/1.1 404", 0), 0u) << got.substr(0, 300);
  test::expect_healthy(s);
}

// A request without the API key is answered 401 from its head, before its body is waited
// for (a client without the key could make the server buffer 8 MB a connection), and the
// connection closes. A request answered without its body being read (an unknown route)
// leaves no bytes behind: such a body was read as the next request ("data after
// Connection: close" in the OpenAI npm client).
TEST(Connections, UnauthorisedHeadsAndUnreadBodies) {
  ServerFixtureOptions o;
  o.keys = {"sk-test-1"};
  LiveServer s(o);
  s.answer("fine");
  {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-wrong\r\n"
           "Content-Length: 5000000\r\n\r\n{\"prompt\"");  // most of the body never comes
    const std::string got = c.read_until("}}", 1, 2s);
    EXPECT_EQ(got.rfind("HTTP/1.1 401", 0), 0u) << got.substr(0, 300);
    EXPECT_NE(got.find("invalid_api_key"), std::string::npos) << got;
    EXPECT_NE(got.find("WWW-Authenticate: Bearer"), std::string::npos) << got;
  }
  RawClient c(s.http->port());
  ASSERT_TRUE(c.connected());
  const std::string auth = "Authorization: Bearer sk-test-1\r\n";
  c.send(post_request("/v1/nowhere", R"({"prompt":"x","max_tokens":2})", auth) +
         "POST /v1/nowhere HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" +
         "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string got = c.read_until("HTTP/1.1", 4, 3s);
  EXPECT_EQ(RawClient::count(got, "HTTP/1.1 404"), 2) << got;
  EXPECT_EQ(RawClient::count(got, "HTTP/1.1 200"), 1) << got;
  EXPECT_EQ(RawClient::count(got, "HTTP/1.1"), 3) << got;
}

// Framing a proxy may read differently (request smuggling) is refused with one 400 and a
// close: a malformed chunk size, a chunk without its line end, both Content-Length and
// Transfer-Encoding, space before a colon, a line without a colon, a folded line; an
// unknown transfer coding is 501 at once even with body bytes after the head. Trailer
// fields are read (and dropped), and Expect: 100-continue is answered before the body.
TEST(Connections, AmbiguousFramingIsRefused) {
  LiveServer s;
  s.answer("fine");
  const std::string post = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  const std::string next = "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  for (const std::string& bad :
       {post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + next, post + "Transfer-Encoding: chunked\r\n\r\n1 2\r\nx\r\n" + next,
        post + "Transfer-Encoding: chunked\r\n\r\n-1\r\n" + next, post + "Transfer-Encoding: chunked\r\n\r\n2\r\nxyz0\r\n\r\n" + next,
        post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + next,
        post + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n" + next, post + "Host x\r\nContent-Length: 2\r\n\r\n{}" + next,
        post + "Content-Length: 2\r\n folded\r\n\r\n{}" + next,
        // A bare CR (a proxy may end the line there and read a Content-Length), a NUL, and a
        // field name that is not a token.
        post + "X-A: 1\rContent-Length: 2\r\n\r\n{}" + next, post + "X-A: 1\r\nContent-Length: 2\r\r\n\r\n{}" + next,
        post + std::string("X-A: a\0b\r\nContent-Length: 2\r\n\r\n{}", 33) + next,
        post + "Content Length: 2\r\nContent-Length: 2\r\n\r\n{}" + next,
        post + "Content-Length\x01: 2\r\n\r\n{}" + next, post + "X(a): 1\r\nContent-Length: 2\r\n\r\n{}" + next,
        // Any other control byte in a field value (RFC 9110 5.5: field-vchar, SP, HTAB): they
        // were passed on.
        post + "X-A: a\x01" "b\r\nContent-Length: 2\r\n\r\n{}" + next, post + "X-A: a\x1b[0m\r\nContent-Length: 2\r\n\r\n{}" + next,
        post + "X-A: \x0b\r\nContent-Length: 2\r\n\r\n{}" + next, post + "X-A: a\x0c\r\nContent-Length: 2\r\n\r\n{}" + next,
        post + "X-A: a\x1f\r\nContent-Length: 2\r\n\r\n{}" + next, post + "X-A: a\x7f\r\nContent-Length: 2\r\n\r\n{}" + next,
        post + "Content-Length: 2\x7f\r\n\r\n{}" + next}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send(bad);
    const std::string got = c.read_until("HTTP/1.1", 2, 2s);
    EXPECT_EQ(RawClient::count(got, "HTTP/1.1 400"), 1) << bad << "\n--\n" << got.substr(0, 300);
    EXPECT_EQ(RawClient::count(got, "HTTP/1.1"), 1) << bad << "\n--\n" << got.substr(0, 300);
  }
  // A tab and bytes above 0x7f (obs-text) in a value are no control bytes: served.
  for (const std::string& value : {std::string("a\tb\t"), std::string("caf\xc3\xa9 \x80\xff")}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send("GET /health HTTP/1.1\r\nHost: x\r\nX-A: " + value + "\r\nConnection: close\r\n\r\n");
    const std::string got = c.read_until("no such marker", 1, 3s);
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got.substr(0, 300);
  }
  {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    const auto t0 = std::chrono::steady_clock::now();
    c.send(post + "Transfer-Encoding: gzip\r\n\r\nX\r\n");
    const std::string got = c.read_until("}}", 1, 3s);
    EXPECT_EQ(got.rfind("HTTP/1.1 501", 0), 0u) << got.substr(0, 300);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);  // it took 35 s
  }
  {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send(post + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
           chunk_of(R"({"prompt":"x","max_tokens":2})") + "0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n");
    const std::string got = c.read_until("text_completion", 1, 3s);
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got.substr(0, 300);
  }
  {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    const std::string body = R"({"prompt":"x","max_tokens":2})";
    c.send(post + "Expect: 100-continue\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n");
    const std::string cont = c.read_until("\r\n\r\n", 1, 3s);
    EXPECT_EQ(cont, "HTTP/1.1 100 Continue\r\n\r\n");
    c.send(body);
    const std::string got = c.read_until("text_completion", 1, 3s);
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got.substr(0, 300);
    EXPECT_EQ(RawClient::count(got, "100 Continue"), 0) << got.substr(0, 300);
  }
}

// The Host header as RFC 9112 3.2 has a server check it: a request with two (a proxy in front
// may read the first and httplib the last), or one whose value is not a host and port, is
// answered 400 and the connection closes; a request without one is served (HTTP/1.1 too,
// decision 0051's addendum). Two Transfer-Encoding lines are the list of both (RFC 9110 5.3):
// "chunked, chunked" (chunked twice), refused with 501 as that list on one line already was.
// All were served (decision 0051).
TEST(Connections, HostHeadersAndRepeatedTransferCodingsAreRefused) {
  LiveServer s;
  s.answer("fine");
  const std::string body = R"({"prompt":"x","max_tokens":2})";
  const auto request = [&](const std::string& version, const std::string& hosts) {
    return "POST /v1/completions " + version + "\r\n" + hosts + "Content-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  const std::string next = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string& hosts :
       {std::string("Host: x\r\nHost: x\r\n"), std::string("Host: a\r\nhost: b\r\n"),
        std::string("Host: a b\r\n"), std::string("Host: a/b\r\n"), std::string("Host: user@a\r\n"),
        std::string("Host: a:80x\r\n"), std::string("Host: [::1\r\n"), std::string("Host: a%zz\r\n"),
        std::string("Host: a, b\r\n")}) {
    for (const std::string version : {"HTTP/1.1", "HTTP/1.0"}) {
      RawClient c(s.http->port());
      ASSERT_TRUE(c.connected());
      c.send(request(version, hosts) + next);
      const std::string got = c.read_until("no such marker", 1, 3s);  // to the close
      EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << version << " [" << hosts << "]: " << got.substr(0, 300);
      // One answer, and the connection closed: the request after it (/health) is not run.
      EXPECT_EQ(got.find("\"status\""), std::string::npos) << version << " [" << hosts << "]: " << got;
      EXPECT_NE(got.find("Host"), std::string::npos) << got.substr(0, 300);
    }
  }
  for (const std::string& hosts :
       {std::string("Host: x\r\n"), std::string("Host: 127.0.0.1:8080\r\n"), std::string("host:[::1]:80\r\n"),
        std::string("Host:   example.com  \r\n"), std::string("Host: \r\n"), std::string("Host: a%20b.c\r\n"),
        std::string("Host: [fe80::1%25eth0]:8080\r\n")}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send(request("HTTP/1.1", hosts + "Connection: close\r\n"));
    const std::string got = c.read_until("no such marker", 1, 3s);
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << hosts << ": " << got.substr(0, 300);
  }
  // No Host line at all is served, HTTP/1.1 too (decision 0051's addendum): llama-server and
  // vLLM serve it, and no route reads the Host.
  for (const std::string version : {"HTTP/1.1", "HTTP/1.0"}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send(request(version, version == "HTTP/1.1" ? "Connection: close\r\n" : ""));
    const std::string got = c.read_until("no such marker", 1, 3s);
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << version << ": " << got.substr(0, 300);
  }
  for (const std::string& codings : {std::string("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
                                     std::string("Transfer-Encoding: chunked, chunked\r\n")}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + codings + "\r\n" +
           chunk_of(body) + "0\r\n\r\n" + next);
    const std::string got = c.read_until("no such marker", 1, 3s);
    EXPECT_EQ(got.rfind("HTTP/1.1 501", 0), 0u) << codings << ": " << got.substr(0, 300);
    EXPECT_EQ(RawClient::count(got, "HTTP/1.1"), 1) << codings << ": " << got.substr(0, 300);
  }
  test::expect_healthy(s);
}

// An HTTP/1.0 client gets no chunked coding (it cannot read it): the body as it is, ended by
// the connection's close, streamed or not.
TEST(Connections, Http10ResponsesAreNotChunked) {
  LiveServer s;
  s.answer("fine");
  for (const char* stream : {"false", "true"}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    const std::string body = std::string(R"({"prompt":"x","max_tokens":3,"stream":)") + stream + "}";
    c.send("POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body);
    const std::string got = c.read_until("never", 1, 3s);  // to the close
    const size_t head_end = got.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << got;
    const std::string head = got.substr(0, head_end);
    EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos) << head;
    EXPECT_NE(head.find(" 200 "), std::string::npos) << head;
    const std::string rest = got.substr(head_end + 4);
    if (std::string(stream) == "false") {
      EXPECT_TRUE(nlohmann::json::parse(rest, nullptr, false).is_object()) << rest.substr(0, 200);
    } else {
      EXPECT_EQ(rest.rfind("data: ", 0), 0u) << rest.substr(0, 200);
      EXPECT_NE(rest.find("data: [DONE]"), std::string::npos) << rest.substr(0, 300);
    }
  }
}

// The values of every header `name` (any case) in a response head.
std::vector<std::string> header_values(const std::string& head, const std::string& name) {
  std::vector<std::string> out;
  for (size_t pos = head.find("\r\n"); pos != std::string::npos && pos + 2 < head.size();) {
    const size_t next = head.find("\r\n", pos + 2);
    const std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
    pos = next;
    const size_t colon = line.find(':');
    if (colon != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < colon; ++i) same = same && std::tolower(line[i]) == std::tolower(name[i]);
    if (same) out.push_back(line.substr(line.find_first_not_of(' ', colon + 1)));
  }
  return out;
}

// A client that half-closes (shutdown(SHUT_WR)) once its request is sent still reads: it gets
// its answer. It got "HTTP/1.1 499 Internal Server Error" with Connection: close twice, and
// its request was cancelled: the end of its input read as its going. A whole response that
// is still waiting after ConnectionLimits::half_close_probe (1 s) writes a 100 Continue to
// tell a half-close from a close; a stream needs none (it writes as it goes).
TEST(Connections, AHalfClosedClientGetsItsAnswer) {
  ServerFixtureOptions o;
  o.step_delay = 5ms;
  LiveServer s(o);
  const uint64_t cancelled_before = s.engine->metrics().requests_cancelled_total;
  struct Case {
    const char* body;
    const char* extra;    // headers
    bool slow;            // runs past the probe delay: the 100 Continue comes first
  };
  for (const Case& c : {Case{R"({"prompt":"x","max_tokens":3})", "Connection: close\r\n", false},
                        Case{R"({"prompt":"x","max_tokens":3})", "", false},
                        Case{R"({"prompt":"x","max_tokens":400,"ignore_eos":true})", "Connection: close\r\n", true},
                        Case{R"({"prompt":"x","max_tokens":400,"ignore_eos":true,"stream":true})", "", true}}) {
    SCOPED_TRACE(std::string(c.body) + " " + c.extra);
    s.answer("fine words", /*endless=*/true);
    RawClient client(s.http->port());
    ASSERT_TRUE(client.connected());
    client.send(post_request("/v1/completions", c.body, c.extra));
    client.shutdown_write();
    const std::string got = client.read_until("never", 1, 10s);  // to the server's close
    std::string response = got;
    const bool whole = std::string(c.body).find("stream") == std::string::npos;
    if (c.slow && whole) {
      ASSERT_EQ(got.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << got.substr(0, 300);
      response = got.substr(std::string("HTTP/1.1 100 Continue\r\n\r\n").size());
    }
    ASSERT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got.substr(0, 300);
    const size_t head_end = response.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos);
    const std::string head = response.substr(0, head_end + 2);
    EXPECT_LE(header_values(head, "Connection").size(), 1u) << head;
    EXPECT_EQ(RawClient::count(got, "HTTP/1.1 "), c.slow && whole ? 2 : 1) << got.substr(0, 300);
    if (whole) {
      const nlohmann::json j = nlohmann::json::parse(response.substr(head_end + 4), nullptr, false);
      ASSERT_TRUE(j.is_object()) << response.substr(head_end + 4, 300);
      EXPECT_EQ(j["choices"][0]["finish_reason"], "length") << j.dump();
      EXPECT_EQ(j["usage"]["completion_tokens"], c.slow ? 400 : 3) << j.dump();
    } else {
      EXPECT_NE(response.find("data: [DONE]"), std::string::npos) << response.substr(response.size() - 300);
      EXPECT_NE(response.find(R"("finish_reason":"length")"), std::string::npos);
    }
  }
  EXPECT_EQ(s.engine->metrics().requests_cancelled_total, cancelled_before);
  EXPECT_EQ(s.http->counters().client_disconnects, 0u);
  test::expect_healthy(s);
}

// The listener writes each response head once whole, with the status's own reason phrase
// (httplib named every status it did not know "Internal Server Error", a 499 too) and one
// Connection header (a route that closes set one and httplib added its own: both went out).
TEST(Connections, ResponseHeadsHaveTheirReasonAndOneConnectionHeader) {
  EXPECT_EQ(server::normalized_response_head(
                "HTTP/1.1 499 Internal Server Error\r\nConnection: close\r\nContent-Type: application/json\r\n"
                "Connection: close\r\nContent-Length: 2\r\n\r\n"),
            "HTTP/1.1 499 Client Closed Request\r\nConnection: close\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\n\r\n");
  EXPECT_EQ(server::normalized_response_head("HTTP/1.1 200 OK\r\nconnection: keep-alive\r\nX-A: 1\r\nX-A: 2\r\n"
                                             "Connection: close\r\nx-a: 1\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nConnection: close\r\nX-A: 1\r\nX-A: 2\r\n\r\n");
  EXPECT_EQ(server::normalized_response_head("HTTP/1.1 299 Internal Server Error\r\n\r\n"), "HTTP/1.1 299 \r\n\r\n");
  EXPECT_EQ(server::normalized_response_head("HTTP/1.1 200 OK\r\nConnection: close\r\nKeep-Alive: timeout=5, max=100\r\n"
                                             "X-B: 1\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nConnection: close\r\nX-B: 1\r\n\r\n");
  EXPECT_EQ(server::normalized_response_head("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\n\r\n");
  for (int status : {200, 204, 400, 401, 404, 405, 408, 413, 415, 429, 431, 499, 500, 501, 503}) {
    EXPECT_FALSE(server::reason_phrase(status).empty()) << status;
  }
  EXPECT_EQ(server::reason_phrase(499), "Client Closed Request");
  EXPECT_EQ(server::reason_phrase(413), "Payload Too Large");

  // On the wire: an HTTP/1.0 stream (the route closes it, and httplib said close too) and a
  // request that asks to close.
  LiveServer s;
  s.answer("fine");
  const std::string stream_body = R"({"prompt":"x","max_tokens":3,"stream":true})";
  for (const std::string& request :
       {"POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " +
            std::to_string(stream_body.size()) + "\r\n\r\n" + stream_body,
        post_request("/v1/completions", R"({"prompt":"x","max_tokens":3})", "Connection: close\r\n"),
        post_request("/v1/completions", R"({"prompt":"x","max_tokens":3,"stream":true})", "Connection: close\r\n"),
        std::string("GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send(request);
    const std::string got = c.read_until("never", 1, 3s);
    const size_t head_end = got.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << got;
    const std::string head = got.substr(0, head_end + 2);
    EXPECT_EQ(header_values(head, "Connection"), std::vector<std::string>{"close"}) << head;
    EXPECT_TRUE(header_values(head, "Keep-Alive").empty()) << head;
    const int status = std::stoi(head.substr(9, 3));
    EXPECT_EQ(head.substr(0, head.find("\r\n")), "HTTP/1.1 " + std::to_string(status) + " " +
                                                    std::string(server::reason_phrase(status)))
        << head;
  }
}

// Sends `request` on a new connection and reads to the close; expects an answer whose head says
// "Connection: close" and no Keep-Alive, and the close within 2 s (not after the idle timeout).
// Returns the head with its status line ("" when none came).
std::string expect_answered_then_closed(int port, const std::string& request) {
  RawClient c(port);
  EXPECT_TRUE(c.connected());
  if (!c.connected()) return "";
  c.send(request);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = c.read_until("no such marker", 1, 4s);  // to the close
  const auto waited = std::chrono::steady_clock::now() - t0;
  const size_t head_end = got.find("\r\n\r\n");
  EXPECT_NE(head_end, std::string::npos) << request << ": " << got;
  if (head_end == std::string::npos) return "";
  const std::string head = got.substr(0, head_end + 2);
  EXPECT_EQ(header_values(head, "Connection"), std::vector<std::string>{"close"}) << request << ": " << head;
  EXPECT_TRUE(header_values(head, "Keep-Alive").empty()) << request << ": " << head;
  EXPECT_LT(waited, 2s) << request << ": the connection stayed open";
  return head;
}

// An HTTP/1.0 request that does not ask for keep-alive has its connection closed after the
// answer, and the answer says so: "Connection: close" and no Keep-Alive header. httplib closed
// it but wrote "Keep-Alive: timeout=5, max=5" and no Connection header, the head of a
// connection it keeps (only a stream, whose route closes it, said close). One that asks for
// keep-alive, in any case, keeps its connection, says "Connection: keep-alive", and is
// answered again on it.
TEST(Connections, Http10AnswersThatCloseDoNotAdvertiseKeepAlive) {
  LiveServer s;
  s.answer("fine");
  const std::string body = R"({"prompt":"x","max_tokens":3})";
  const std::vector<std::string> closing = {
      "GET /health HTTP/1.0\r\n\r\n",
      "GET /v1/models HTTP/1.0\r\nHost: x\r\n\r\n",
      "POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body,
      "POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{bad}",
      "GET /nope HTTP/1.0\r\n\r\n",
      "GET /health HTTP/1.0\r\nConnection: close\r\n\r\n",
      "GET /health HTTP/1.0\r\nConnection: Keep-Alive-ish\r\n\r\n",
  };
  for (const std::string& request : closing) expect_answered_then_closed(s.http->port(), request);
  for (const char* spelling : {"Keep-Alive", "keep-alive", "KEEP-ALIVE"}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send(std::string("GET /health HTTP/1.0\r\nConnection: ") + spelling + "\r\n\r\n");
    const std::string first = c.read_until("no such marker", 1, 700ms);  // the connection stays open
    const size_t head_end = first.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << spelling << ": " << first;
    const std::string head = first.substr(0, head_end + 2);
    EXPECT_EQ(first.rfind("HTTP/1.1 200", 0), 0u) << first;
    EXPECT_EQ(header_values(head, "Connection"), std::vector<std::string>{"keep-alive"}) << spelling << ": " << head;
    EXPECT_EQ(header_values(head, "Keep-Alive").size(), 1u) << spelling << ": " << head;
    // The same connection answers the next request (which asks to close it).
    c.send("GET /health HTTP/1.0\r\n\r\n");
    const std::string second = c.read_until("no such marker", 1, 3s);
    EXPECT_EQ(second.rfind("HTTP/1.1 200", 0), 0u) << spelling << ": " << second;
    EXPECT_NE(second.find("Connection: close\r\n"), std::string::npos) << second;
  }
}

// A request whose Connection header names "close" in another case or in a list of options
// ("Close", "keep-alive, close", two Connection headers: RFC 9110 7.6.1) has its connection
// closed after the answer, which says so. httplib heeded only the exact value "close": the
// answer said keep-alive and a client that reads to the close waited 5 s (the idle timeout).
TEST(Connections, ConnectionCloseIsHeardInAnyCaseAndList) {
  LiveServer s;
  s.answer("fine");
  const std::string body = R"({"prompt":"x","max_tokens":2})";
  for (const std::string& options : {std::string("Connection: Close\r\n"), std::string("Connection: CLOSE\r\n"),
                                     std::string("Connection: keep-alive, close\r\n"),
                                     std::string("Connection: Upgrade,Close\r\nUpgrade: websocket\r\n"),
                                     std::string("Connection: keep-alive\r\nConnection: close\r\n")}) {
    for (const std::string& request : {"GET /health HTTP/1.1\r\nHost: x\r\n" + options + "\r\n",
                                       post_request("/v1/completions", body, options)}) {
      const std::string head = expect_answered_then_closed(s.http->port(), request);
      EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << request << ": " << head;
    }
  }
  // An option that only contains the word is not "close": the connection is kept.
  RawClient c(s.http->port());
  ASSERT_TRUE(c.connected());
  c.send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: closed, x-close-later\r\n\r\n");
  const std::string first = c.read_until("no such marker", 1, 700ms);
  EXPECT_EQ(first.rfind("HTTP/1.1 200", 0), 0u) << first;
  c.send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(c.read_until("no such marker", 1, 3s).rfind("HTTP/1.1 200", 0), 0u);
}

// An HTTP/1.0 request's "Expect: 100-continue" is ignored (RFC 9110 10.1.1): its client knows
// no interim responses and read the "HTTP/1.1 100 Continue" it was sent as the answer, with
// the real answer after it as garbage. Its body, sent with the head or after it, is answered
// with the one response.
TEST(Connections, Http10ExpectContinueGetsNoInterimResponse) {
  LiveServer s;
  s.answer("fine");
  const std::string body = R"({"prompt":"x","max_tokens":2})";
  const std::string head = "POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  for (bool body_later : {false, true}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    if (body_later) {
      c.send(head);
      EXPECT_EQ(c.read_until("\r\n\r\n", 1, 500ms), "") << "an interim response was sent";
      c.send(body);
    } else {
      c.send(head + body);
    }
    const std::string got = c.read_until("no such marker", 1, 3s);  // to the close
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got.substr(0, 300);
    EXPECT_EQ(RawClient::count(got, "HTTP/1."), 1) << got.substr(0, 300);
  }
}

// An HTTP/1.1 request that expects anything but 100-continue (RFC 9110 10.1.1: a list, compared
// without case) is answered 417 from its head, before its body is waited for, and the connection
// closes. httplib went on as if the expectation had been met. 100-continue in any case is met,
// an empty Expect expects nothing, and an HTTP/1.0 request's expectations are ignored.
TEST(Connections, AnExpectationOtherThan100ContinueIs417) {
  LiveServer s;
  s.answer("fine");
  const std::string body = R"({"prompt":"x","max_tokens":2})";
  for (const std::string& expect :
       {std::string("Expect: x-fancy\r\n"), std::string("Expect: 100-continue, x-fancy\r\n"),
        std::string("Expect: 100-continue\r\nExpect: bar\r\n"), std::string("Expect: 100-continue=1\r\n"),
        std::string("Expect: 200-ok\r\n"), std::string("EXPECT: 100-continued\r\n")}) {
    for (const bool with_body : {false, true}) {
      RawClient c(s.http->port());
      ASSERT_TRUE(c.connected());
      // Without its body the answer comes all the same: it is decided on the head.
      const std::string request = post_request("/v1/completions", body, expect);
      c.send(with_body ? request : request.substr(0, request.size() - body.size()));
      const auto t0 = std::chrono::steady_clock::now();
      const std::string got = c.read_until("no such marker", 1, 4s);  // to the close
      EXPECT_EQ(got.rfind("HTTP/1.1 417 Expectation Failed\r\n", 0), 0u) << expect << ": " << got.substr(0, 300);
      EXPECT_EQ(RawClient::count(got, "HTTP/1.1"), 1) << expect << ": " << got.substr(0, 300);
      EXPECT_NE(got.find("Connection: close\r\n"), std::string::npos) << got.substr(0, 300);
      EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << expect << ": the connection stayed open";
      const size_t at = got.find("\r\n\r\n");
      ASSERT_NE(at, std::string::npos) << got;
      const auto j = nlohmann::json::parse(got.substr(at + 4), nullptr, false);
      ASSERT_TRUE(j.is_object()) << got;
      EXPECT_EQ(j["error"]["type"], "invalid_request_error") << got;
      EXPECT_NE(j["error"]["message"].get<std::string>().find("Expect"), std::string::npos) << got;
    }
  }
  // Met: 100-continue in any case (the interim response, then the answer), an empty member or
  // value, and any expectation of an HTTP/1.0 request.
  for (const std::string& expect : {std::string("Expect: 100-Continue\r\n"), std::string("Expect: 100-CONTINUE, \r\n")}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + expect +
           "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n");
    EXPECT_EQ(c.read_until("\r\n\r\n", 1, 3s), "HTTP/1.1 100 Continue\r\n\r\n") << expect;
    c.send(body);
    const std::string got = c.read_until("text_completion", 1, 3s);
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << expect << ": " << got.substr(0, 300);
  }
  for (const std::string& request :
       {post_request("/v1/completions", body, "Expect:\r\nConnection: close\r\n"),
        post_request("/v1/completions", body, "Expect: ,\r\nConnection: close\r\n"),
        "POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nExpect: x-fancy\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send(request);
    const std::string got = c.read_until("no such marker", 1, 3s);  // to the close
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << request << ": " << got.substr(0, 300);
    EXPECT_EQ(RawClient::count(got, "HTTP/1.1"), 1) << request << ": " << got.substr(0, 300);
  }
  test::expect_healthy(s);
}

// Requests sent back to back in one write: every one is answered, in order (the bytes read
// past the first request used to be dropped, and the client waited for nothing).
TEST(Connections, PipelinedRequestsAreAllAnswered) {
  LiveServer s;
  s.answer("fine");
  RawClient c(s.http->port());
  ASSERT_TRUE(c.connected());
  c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n" +
         post_request("/v1/completions", R"({"prompt":"x","max_tokens":2})") +
         "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string got = c.read_until("HTTP/1.1 200", 3, 5s);
  EXPECT_EQ(RawClient::count(got, "HTTP/1.1 200"), 3) << got;
  EXPECT_NE(got.find("text_completion"), std::string::npos);
  EXPECT_NE(got.find("shakes-test"), std::string::npos);
}

// A header line longer than httplib reads (8192 bytes with its line end) in a head under
// the head limit: 431 that says so (it was 400 "malformed HTTP request" for a well-formed
// request, e.g. an 8.5 kB bearer token). A line of exactly 8192 bytes is served.
TEST(Connections, AHeaderLineTooLongForHttplibIs431) {
  LiveServer s;
  for (const size_t line_bytes : {size_t{8192}, size_t{8193}, size_t{20000}}) {
    RawClient client(s.http->port());
    ASSERT_TRUE(client.connected());
    const std::string name = "X-Long: ";
    const std::string line = name + std::string(line_bytes - name.size() - 2, 'a') + "\r\n";
    client.send("GET /v1/models HTTP/1.1\r\nHost: x\r\n" + line + "Connection: close\r\n\r\n");
    const std::string got = client.read_until("}}", 1, 5s);
    const std::string want = line_bytes <= 8192 ? "HTTP/1.1 200" : "HTTP/1.1 431";
    EXPECT_EQ(got.rfind(want, 0), 0u) << line_bytes << ": " << got.substr(0, 300);
    if (line_bytes <= 8192) continue;
    const size_t body = got.find("\r\n\r\n");
    ASSERT_NE(body, std::string::npos);
    const auto j = nlohmann::json::parse(got.substr(body + 4), nullptr, false);
    ASSERT_TRUE(j.is_object()) << got;
    EXPECT_NE(j["error"]["message"].get<std::string>().find("header line"), std::string::npos) << got;
  }
  test::expect_healthy(s);
}

// A request line longer than httplib reads (8192 bytes with its CRLF: a long query string):
// 414, and the connection closes at once. httplib answered it after reading the header lines
// into nothing, so the request's "Connection: close" (or HTTP/1.0) went unheeded: the 414
// said "Keep-Alive: timeout=5" and the socket stayed open 5 s, a client reading to the close
// waited that long. A line of exactly 8192 bytes is served.
TEST(Connections, ARequestLineTooLongIs414AndCloses) {
  LiveServer s;
  for (const char* version : {"HTTP/1.1", "HTTP/1.0"}) {
    for (const size_t line_bytes : {size_t{8192}, size_t{8193}, size_t{70000}}) {
      RawClient client(s.http->port());
      ASSERT_TRUE(client.connected());
      const std::string start = "GET /health?q=";
      const std::string end = std::string(" ") + version;
      const std::string line = start + std::string(line_bytes - start.size() - end.size() - 2, 'a') + end + "\r\n";
      const bool http11 = std::string(version) == "HTTP/1.1";
      client.send(line + "Host: x\r\n" + (http11 ? "Connection: close\r\n" : "") + "\r\n");
      const auto t0 = std::chrono::steady_clock::now();
      const std::string got = client.read_until("no such marker", 1, 4s);  // to the close
      const auto waited = std::chrono::steady_clock::now() - t0;
      const std::string want = line_bytes <= 8192 ? "HTTP/1.1 200" : "HTTP/1.1 414";
      EXPECT_EQ(got.rfind(want, 0), 0u) << version << " " << line_bytes << ": " << got.substr(0, 300);
      EXPECT_LT(waited, 2s) << version << " " << line_bytes << ": the connection stayed open: " << got.substr(0, 300);
      if (line_bytes <= 8192) continue;
      EXPECT_NE(got.find("Connection: close\r\n"), std::string::npos) << got.substr(0, 300);
      EXPECT_EQ(got.find("Keep-Alive"), std::string::npos) << got.substr(0, 300);
      const size_t body = got.find("\r\n\r\n");
      ASSERT_NE(body, std::string::npos);
      const auto j = nlohmann::json::parse(got.substr(body + 4), nullptr, false);
      ASSERT_TRUE(j.is_object()) << got;
      EXPECT_NE(j["error"]["message"].get<std::string>().find("URI is too long"), std::string::npos) << got;
    }
  }
  // The answer does not wait for the rest of a head whose request line is already too long.
  RawClient client(s.http->port());
  ASSERT_TRUE(client.connected());
  client.send("GET /health?q=" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: x\r\n");
  const std::string got = client.read_until("no such marker", 1, 3s);
  EXPECT_EQ(got.rfind("HTTP/1.1 414", 0), 0u) << got.substr(0, 300);
  test::expect_healthy(s);
}

// The request line's limit is on the line as routed: an absolute-form target's scheme and
// authority are cut before httplib reads it (decision 0048), so they do not count. They counted
// while the head was still arriving: the same line was 414 when its head came in two parts and
// served when it came in one. A routed line over the limit is 414 either way; so is a line that
// fills the head limit inside its authority (as a long line, not 431).
TEST(Connections, AnAbsoluteFormTargetIsMeasuredAsRouted) {
  LiveServer s;
  const std::string authority = "http://127.0.0.1:" + std::to_string(s.http->port());
  for (const size_t routed_bytes : {size_t{8192}, size_t{8193}}) {
    const std::string start = "GET " + authority + "/health?q=";
    const std::string end = " HTTP/1.1\r\n";
    // Routed: "GET /health?q=... HTTP/1.1\r\n", routed_bytes long.
    const std::string line = start + std::string(routed_bytes - (start.size() - authority.size()) - end.size(), 'a') + end;
    for (const bool in_two_parts : {false, true}) {
      RawClient c(s.http->port());
      ASSERT_TRUE(c.connected());
      if (in_two_parts) {
        c.send(line + "Host: x\r\n");
        std::this_thread::sleep_for(200ms);
      }
      c.send(std::string(in_two_parts ? "" : line + "Host: x\r\n") + "Connection: close\r\n\r\n");
      const std::string got = c.read_until("no such marker", 1, 4s);  // to the close
      const std::string want = routed_bytes <= 8192 ? "HTTP/1.1 200" : "HTTP/1.1 414";
      EXPECT_EQ(got.rfind(want, 0), 0u) << routed_bytes << (in_two_parts ? " in two parts: " : ": ")
                                        << got.substr(0, 300);
    }
  }
  // An authority that has not ended by the head limit (64 KiB): 414, at once.
  RawClient c(s.http->port());
  ASSERT_TRUE(c.connected());
  c.send("GET http://" + std::string(70000, 'a'));
  const std::string got = c.read_until("no such marker", 1, 3s);
  EXPECT_EQ(got.rfind("HTTP/1.1 414", 0), 0u) << got.substr(0, 300);
  test::expect_healthy(s);
}

// Bodies that are refused before they are read: the answer comes at once, as JSON.
TEST(Connections, BadContentLengthsAreRefusedAtOnce) {
  ServerFixtureOptions o;
  o.max_body_bytes = 1u << 20;
  LiveServer s(o);
  struct Case {
    std::string head;
    std::string status;
  };
  const std::vector<Case> cases = {
      {"Content-Length: abc\r\n", "400"},
      {"Content-Length: -5\r\n", "400"},
      {"Content-Length: 99999999999999999999999\r\n", "413"},
      {"Content-Length: 9000000\r\n", "413"},
      {"X-Big: " + std::string(100000, 'a') + "\r\n", "431"},
      // Two that disagree (a proxy may have used the other), a coding httplib cannot read
      // (it waited for the connection to close).
      {"Content-Length: 1\r\nContent-Length: 2\r\n", "400"},
      {"Transfer-Encoding: gzip\r\n", "501"},
      {"Transfer-Encoding: gzip, chunked\r\n", "501"},
      // Compressed bodies: httplib would inflate them past the body limit (a gzip bomb).
      {"Content-Encoding: gzip\r\nContent-Length: 1\r\n", "415"},
      {"Content-Length: 1\r\ncontent-encoding: BR\r\n", "415"},
      {"Content-Encoding: deflate\r\nTransfer-Encoding: chunked\r\n", "415"},
  };
  for (const auto& c : cases) {
    RawClient client(s.http->port());
    ASSERT_TRUE(client.connected());
    client.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + c.head + "\r\n{");
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = client.read_until("}}", 1, 5s);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << c.head.substr(0, 40);
    EXPECT_EQ(got.rfind("HTTP/1.1 " + c.status, 0), 0u) << c.head.substr(0, 40) << ": " << got;
    const size_t body = got.find("\r\n\r\n");
    ASSERT_NE(body, std::string::npos);
    const auto j = nlohmann::json::parse(got.substr(body + 4), nullptr, false);
    ASSERT_TRUE(j.is_object()) << got;
    EXPECT_TRUE(j["error"]["message"].is_string());
  }
  test::expect_healthy(s);
}

// A request without Content-Length or Transfer-Encoding has an empty body (curl -X POST
// sends one): it was held until the 30 s body deadline and then refused as malformed.
TEST(Connections, RequestWithoutLengthHeadersHasAnEmptyBody) {
  LiveServer s;
  s.answer("fine");
  for (const std::string path : {"/v1/completions", "/metrics", "/v1/chat/completions"}) {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send("POST " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = c.read_until("}}", 1, 5s);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << path;
    // /metrics is a GET route: a POST to it is 405 (HttpServer.WrongMethodIs405WithAllow).
    const std::string want = path == "/metrics" ? "HTTP/1.1 405" : "HTTP/1.1 400";
    EXPECT_EQ(got.rfind(want, 0), 0u) << path << ": " << got;
  }
  // The connection stays usable: the next request on it is answered too.
  RawClient c(s.http->port());
  ASSERT_TRUE(c.connected());
  c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n" +
         post_request("/v1/completions", R"({"prompt":"x","max_tokens":2})"));
  const std::string got = c.read_until("text_completion", 1, 5s);
  EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
  EXPECT_NE(got.find("text_completion"), std::string::npos) << got;
}

// httplib applies the body limit to a Content-Length only: a chunked body of any size was
// read whole into memory. It is refused with 413 once past the limit; a small chunked body
// is still served.
TEST(Connections, ChunkedBodiesObeyTheBodyLimit) {
  ServerFixtureOptions o;
  o.max_body_bytes = 1u << 20;
  LiveServer s(o);
  s.answer("fine");
  {
    RawClient c(s.http->port());
    ASSERT_TRUE(c.connected());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Transfer-Encoding: chunked\r\n\r\n");
    const std::string chunk = chunk_of(std::string(64u << 10, ' '));
    for (int i = 0; i < 48; ++i) c.send(chunk);  // 3 MiB of body
    c.send("0\r\n\r\n");
    const std::string got = c.read_until("}}", 1, 5s);
    EXPECT_EQ(got.rfind("HTTP/1.1 413", 0), 0u) << got.substr(0, 300);
  }
  RawClient c(s.http->port());
  ASSERT_TRUE(c.connected());
  c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunk_of(R"({"prompt":"x","max_tokens":2})") +
         "0\r\n\r\n");
  const std::string got = c.read_until("text_completion", 1, 5s);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got.substr(0, 300);
  // Leading zeros of a chunk size are no part of its magnitude (RFC 9112 7.1: 1*HEXDIG): a
  // 29-byte chunk sized "000...01d" (more than 15 digits) was refused 413 as too large.
  {
    const std::string body = R"({"prompt":"x","max_tokens":2})";
    RawClient z(s.http->port());
    ASSERT_TRUE(z.connected());
    z.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + std::string(40, '0') + "1d\r\n" + body +
           "\r\n" + std::string(30, '0') + "\r\n\r\n");
    const std::string zeros = z.read_until("text_completion", 1, 5s);
    EXPECT_EQ(zeros.rfind("HTTP/1.1 200", 0), 0u) << zeros.substr(0, 300);
  }
  test::expect_healthy(s);
}

// A Range header (sent by some proxies and download tools) turned a generated response into
// "206 Partial Content" without a Content-Range.
TEST(Connections, RangeHeadersDoNotMakeGeneratedResponsesPartial) {
  LiveServer s;
  s.answer("fine words");
  for (const char* body : {R"({"prompt":"x","max_tokens":3})", R"({"prompt":"x","max_tokens":3,"stream":true})"}) {
    auto r = s.post("/v1/completions", body, {{"Range", "bytes=0-5"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << body;
    EXPECT_NE(r->body.find("fine"), std::string::npos) << r->body;
  }
}

// The same for every other answer: httplib cut any body set whole to the asked range, so an
// error said 400 with the body '{"error":{' (and a Content-Range), /v1/models said 200 with
// part of its JSON, a range past the end of /health turned it into an empty 416, and two
// ranges made /metrics a multipart/byteranges document. The server serves no partial
// content: Range is ignored (RFC 9110 14.2 lets a server ignore it).
TEST(Connections, RangeHeadersAreIgnoredOnEveryAnswer) {
  LiveServer s;
  s.answer("fine words");
  const httplib::Headers range = {{"Range", "bytes=0-9"}};
  auto bad = s.post("/v1/completions", R"({"prompt":)", range);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_FALSE(bad->has_header("Content-Range"));
  EXPECT_TRUE(nlohmann::json::accept(bad->body)) << bad->body;
  auto models = s.get("/v1/models", range);
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  EXPECT_FALSE(models->has_header("Content-Range"));
  EXPECT_TRUE(nlohmann::json::accept(models->body)) << models->body;
  auto health = s.get("/health", {{"Range", "bytes=100-200"}});
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, R"({"status":"ok"})");
  auto metrics = s.get("/metrics", {{"Range", "bytes=0-9,20-30"}});
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type").rfind("text/plain", 0), 0u) << metrics->get_header_value("Content-Type");
  EXPECT_NE(metrics->body.find("gemmaserve_ready 1"), std::string::npos);
  // A generated answer keeps its whole body too.
  auto gen = s.post("/v1/completions", R"({"prompt":"x","max_tokens":3})", range);
  ASSERT_TRUE(gen);
  EXPECT_EQ(gen->status, 200);
  EXPECT_FALSE(gen->has_header("Content-Range"));
  EXPECT_TRUE(nlohmann::json::accept(gen->body)) << gen->body;
}

// A client that reads its answer, but slowly, kept its worker waiting as long as it liked: each
// write waited up to the write timeout (10 s) and any read reset it. A response now waits at
// most the stall budget in all (60 s; 2 s here), then the connection closes, answer cut. The
// client reads 1 MB every 250 ms, so no one wait comes near the budget: only their sum does.
TEST(Connections, AResponseWaitsForItsReaderAtMostTheStallBudgetInAll) {
  ServerFixtureOptions o;
  o.max_body_bytes = 4u << 20;
  o.write_stall_budget = 2s;
  LiveServer s(o);
  std::string text;
  while (text.size() < (3500u << 10)) text += "ROMEO: But soft, what light through yonder window breaks? ";
  const std::string request =
      post_request("/tokenize", nlohmann::json{{"content", text}, {"with_pieces", true}}.dump());
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(s.http->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    sent += static_cast<size_t>(n);
  }
  std::string got;
  bool eof = false;
  // Reads what is there, up to `most` bytes (waiting up to `wait` for the first).
  auto read_some = [&](size_t most, std::chrono::milliseconds wait) {
    size_t n = 0;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return;
    char buf[65536];
    while (n < most) {
      const ssize_t r = ::recv(fd, buf, std::min(sizeof buf, most - n), MSG_DONTWAIT);
      if (r == 0) eof = true;
      if (r <= 0) return;
      got.append(buf, static_cast<size_t>(r));
      n += static_cast<size_t>(r);
    }
  };
  const auto start = std::chrono::steady_clock::now();
  while (!eof && std::chrono::steady_clock::now() - start < 8s) {
    read_some(1u << 20, 0ms);
    std::this_thread::sleep_for(250ms);
  }
  while (!eof && std::chrono::steady_clock::now() - start < 30s) read_some(SIZE_MAX, 1000ms);
  ::close(fd);
  ASSERT_TRUE(eof) << got.size() << " bytes and no end";
  ASSERT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got.substr(0, 200);
  EXPECT_GT(got.size(), 4u << 20);  // it was writing, not refused
  // Cut: the chunked answer never got its last chunk ("]}", then "0" and an empty line).
  EXPECT_FALSE(got.ends_with("]}\r\n0\r\n\r\n")) << got.size() << " bytes, whole";
  test::expect_healthy(s);
}

}  // namespace
}  // namespace gs
