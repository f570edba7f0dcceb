// Connections between requests wait in one poll() loop; only running requests hold a worker.
#include "server/http_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "core/log.h"
#include "server/http_head.h"
#include "server/http_host.h"

namespace gs::server {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

int poll_one(int fd, short events, milliseconds timeout) {
  pollfd p{fd, events, 0};
  const int ms = static_cast<int>(std::clamp<int64_t>(timeout.count(), 0, 1 << 30));
  for (;;) {
    const int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

// The worker pool of the calling thread (LifoWorkers), told while one of its workers waits
// for a client to read: that worker does no work meanwhile, so the pool keeps another one for
// the jobs that wait.
class StallObserver {
 public:
  virtual void stall_begins() = 0;
  virtual void stall_ends() = 0;

 protected:
  ~StallObserver() = default;
};

thread_local StallObserver* t_stall_observer = nullptr;

// poll_one(fd, POLLOUT, timeout), the wait on a full socket counted as a stalled worker.
int wait_writable(int fd, milliseconds timeout) {
  const int now = poll_one(fd, POLLOUT, milliseconds(0));
  if (now != 0 || timeout.count() <= 0) return now;
  StallObserver* observer = t_stall_observer;
  if (observer) observer->stall_begins();
  const int r = poll_one(fd, POLLOUT, timeout);
  if (observer) observer->stall_ends();
  return r;
}

void ip_and_port(const sockaddr_storage& addr, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    port = ntohs(a->sin6_port);
  } else {
    port = 0;
  }
  ip = buf;
}

// A whole response for a request refused before httplib read it; written best-effort.
std::string refusal(int status, std::string_view reason, std::string_view message) {
  const std::string body = std::string(R"({"error":{"message":")") + std::string(message) +
                           R"(","type":"invalid_request_error","param":null,"code":null}})";
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
         "\r\nContent-Type: application/json\r\nAccess-Control-Allow-Origin: *\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The response head's most bytes gathered before it is written as it is (httplib's heads are
// a few hundred bytes).
constexpr size_t kMaxResponseHead = 64u << 10;

// An interim response written to find out whether a client whose input ended still reads
// (Connection::peer_gone).
constexpr std::string_view kProbe = "HTTP/1.1 100 Continue\r\n\r\n";

// The text of a header line after its colon, without the surrounding blanks.
std::string_view header_value(std::string_view line, size_t colon) { return without_blanks(line.substr(colon + 1)); }

// The text after the first space of a line, up to the next one.
std::string_view second_token(std::string_view line) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return {};
  const std::string_view rest = line.substr(sp + 1);
  return rest.substr(0, rest.find(' '));
}

}  // namespace

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 205: return "Reset Content";
    case 206: return "Partial Content";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 407: return "Proxy Authentication Required";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 426: return "Upgrade Required";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";  // nginx's, not IANA's: the client went away
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return {};
  }
}

std::string normalized_response_head(std::string_view head) {
  std::string out;
  out.reserve(head.size());
  size_t i = head.find('\n');
  if (i == std::string_view::npos) return std::string(head);
  // The status line: "HTTP/1.1 NNN reason". httplib names every status it does not know
  // "Internal Server Error" (a 499 went out so).
  const std::string_view status_line = without_line_end(head.substr(0, i + 1));
  const std::string_view code_text = second_token(status_line);
  int code = 0;
  const bool numeric = code_text.size() == 3 &&
                       std::all_of(code_text.begin(), code_text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (numeric) code = std::stoi(std::string(code_text));
  if (numeric && status_line.rfind("HTTP/", 0) == 0) {
    out.append(status_line.substr(0, status_line.find(' ')));
    out.append(" ").append(code_text).append(" ").append(reason_phrase(code)).append("\r\n");
  } else {
    out.append(head.substr(0, i + 1));
  }
  // Header lines: one of each, and one Connection header ("close" if any said close). The
  // route sets "Connection: close" where it must close, and httplib adds its own for a
  // request that said close: both went out.
  std::vector<std::string_view> seen;
  size_t connection_at = std::string::npos;
  bool close = false;
  for (++i; i < head.size();) {
    size_t e = head.find('\n', i);
    e = e == std::string_view::npos ? head.size() : e + 1;
    const std::string_view raw = head.substr(i, e - i);
    i = e;
    const std::string_view line = without_line_end(raw);
    const size_t colon = line.find(':');
    if (line.empty() || colon == std::string_view::npos) {
      out.append(raw);
      continue;
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = header_value(line, colon);
    if (same_name(name, "connection")) {
      close = close || same_name(value, "close");
      if (connection_at != std::string::npos) continue;
      connection_at = out.size();
      out.append("Connection: ").append(value).append("\r\n");
      continue;
    }
    const bool repeated = std::any_of(seen.begin(), seen.end(), [&](std::string_view other) {
      const size_t c = other.find(':');
      return same_name(other.substr(0, c), name) && header_value(other, c) == value;
    });
    if (repeated) continue;
    seen.push_back(line);
    out.append(raw);
  }
  if (close && connection_at != std::string::npos) {
    const size_t end = out.find("\r\n", connection_at);
    out.replace(connection_at, end - connection_at, "Connection: close");
    // Keep-Alive's parameters are those of a connection that stays open (httplib sent them
    // beside the route's close of an HTTP/1.0 stream).
    for (size_t at = out.find("\r\n"); at != std::string::npos && at + 2 < out.size();) {
      const size_t next = out.find("\r\n", at + 2);
      const std::string_view line(out.data() + at + 2, (next == std::string::npos ? out.size() : next) - at - 2);
      const size_t colon = line.find(':');
      if (colon != std::string_view::npos && same_name(line.substr(0, colon), "keep-alive")) {
        out.erase(at, next - at);
        continue;
      }
      at = next;
    }
  }
  return out;
}

namespace {

// The longest header line httplib reads, its line end included; it answered a longer one
// 400 "malformed HTTP request".
constexpr size_t kMaxHeaderLineBytes = CPPHTTPLIB_HEADER_MAX_LENGTH;
// The longest request line httplib reads, its CRLF included. A longer one it answered 414 after
// reading the head's header lines into nothing, so a "Connection: close" there went unheeded:
// the answer said keep-alive and the connection stayed open until the idle timeout (an
// HTTP/1.0 client, or one that reads to the close, waited 5 s). Refused here instead.
constexpr size_t kMaxRequestLineBytes = CPPHTTPLIB_REQUEST_URI_MAX_LENGTH;

constexpr uint64_t kInvalidLength = ~uint64_t{0};
constexpr uint64_t kBadCoding = kInvalidLength - 1;
constexpr uint64_t kCompressed = kInvalidLength - 2;
constexpr uint64_t kMalformedHead = kInvalidLength - 3;

// The Content-Length of a request head: 0 when it has none or is chunked, kInvalidLength
// when it is not a number or two disagree, kBadCoding for a transfer coding other than
// chunked (httplib read such a body until the connection closed), kCompressed for a content
// coding other than identity (httplib inflates gzip and brotli bodies after the body limit
// counted their compressed bytes: a 1 MB gzip body inflated to 1 GB, 4.4 GB of memory at the
// peak), and at least 10^18 when it is absurdly long. `framed` says whether the head has a
// Content-Length or Transfer-Encoding header at all, `chunked` whether it has
// Transfer-Encoding. kMalformedHead for a head a proxy in front may frame differently than
// httplib (request smuggling, RFC 9112 5.1, 5.2 and 6.1): a header line without a colon,
// whitespace before the colon, a field name that is not a token, a control byte in a field
// value (a NUL or bare CR among them), a folded line, or both Content-Length and
// Transfer-Encoding.
uint64_t content_length(std::string_view head, bool* framed, bool* chunked) {
  *framed = false;
  *chunked = false;
  bool bad_coding = false, compressed = false, has_length = false;
  int codings = 0;  // Transfer-Encoding lines
  std::optional<uint64_t> length;
  size_t pos = head.find('\n');
  while (pos != std::string_view::npos && pos + 1 < head.size()) {
    const size_t next = head.find('\n', pos + 1);
    std::string_view line = head.substr(pos + 1, next == std::string_view::npos ? std::string_view::npos : next - pos - 1);
    pos = next;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the end of the head
    if (line.front() == ' ' || line.front() == '\t') return kMalformedHead;  // obs-fold
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return kMalformedHead;
    if (line[colon - 1] == ' ' || line[colon - 1] == '\t') return kMalformedHead;
    // A field name is a token, and no NUL or bare CR may stand in a line (RFC 9110 5.1 and
    // 5.5, RFC 9112 2.2): a proxy that ends a line at a bare CR, or cuts a name at a space or
    // NUL, reads other headers than httplib does. Nor any other control byte in a value
    // (field-vchar, SP and HTAB only; obs-text passes): RFC 9110 5.5 lets a recipient refuse
    // them, and a value with one (an ESC, a DEL) is no header a client means to send.
    for (size_t k = 0; k < colon; ++k) {
      const unsigned char ch = static_cast<unsigned char>(line[k]);
      if (!std::isalnum(ch) && std::strchr("!#$%&'*+-.^_`|~", ch) == nullptr) return kMalformedHead;
    }
    for (size_t k = colon + 1; k < line.size(); ++k) {
      const unsigned char ch = static_cast<unsigned char>(line[k]);
      if ((ch < 0x20 && ch != '\t') || ch == 0x7f) return kMalformedHead;
    }
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (name == "transfer-encoding" || name == "content-encoding") {
      std::string coding(value);
      std::transform(coding.begin(), coding.end(), coding.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      if (name == "content-encoding") {
        compressed = compressed || (!coding.empty() && coding != "identity");
        continue;
      }
      *framed = true;
      *chunked = true;
      // Two lines are one list (RFC 9110 5.3): "chunked, chunked", refused as it is on one line.
      bad_coding = bad_coding || coding != "chunked" || ++codings > 1;
      continue;
    }
    if (name != "content-length") continue;
    *framed = true;
    has_length = true;
    uint64_t v = kInvalidLength;
    if (!value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos) {
      v = value.size() > 18 ? uint64_t{1000000000000000000} : std::stoull(std::string(value));
    }
    // Two that disagree: which one a proxy in front used is unknown (request smuggling).
    length = length && *length != v ? kInvalidLength : v;
  }
  if (has_length && *chunked) return kMalformedHead;
  if (bad_coding) return kBadCoding;
  if (compressed) return kCompressed;
  if (*chunked) return 0;  // the chunks frame the body, whatever a Content-Length says
  return length.value_or(0);
}

// Whether a request head's Connection headers name the option "close" (a comma-separated
// list of options, compared without regard to case: RFC 9110 7.6.1).
bool head_asks_close(std::string_view head) {
  bool close = false;
  for_each_header(head, [&](std::string_view name, std::string_view value) {
    if (!same_name(name, "connection")) return;
    for_each_member(value, [&](std::string_view option) { close = close || same_name(option, "close"); });
  });
  return close;
}

}  // namespace

// One client connection: an httplib Stream over the socket with a read buffer that lives as
// long as the connection (bytes of the next request stay) and per-request deadlines.
class Connection final : public httplib::Stream {
 public:
  enum class State {
    kReady, kWaiting, kClosed, kHeadTooLarge, kBodyTooLarge, kBadLength, kBadCoding, kCompressed, kBadRequestLine,
    kMalformedHead, kBadChunk, kEarlyAnswer, kHeaderLineTooLong, kUnknownMethod,
    kMultipart, kUriTooLong, kExpectationFailed, kBadHost
  };

  Connection(socket_t sock, const ConnectionLimits& limits, milliseconds write_timeout)
      : sock_(sock), limits_(limits), write_timeout_(write_timeout) {
    const int flags = ::fcntl(sock_, F_GETFL, 0);
    if (flags >= 0) ::fcntl(sock_, F_SETFL, flags | O_NONBLOCK);
  }
  ~Connection() override {
    ::shutdown(sock_, SHUT_RDWR);
    ::close(sock_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Reads what the socket holds without waiting; kReady once the next request's head and
  // its whole body are buffered (a request holds a worker only once it can run at once).
  State fill() {
    char chunk[16384];
    for (;;) {
      if (ready()) return State::kReady;
      if (uri_too_long_) return State::kUriTooLong;
      if (head_len_ == 0 && buffered() > limits_.max_head_bytes) return State::kHeadTooLarge;
      if (bad_request_line_) return State::kBadRequestLine;
      if (header_line_too_long_) return State::kHeaderLineTooLong;
      if (!unknown_method_.empty()) return State::kUnknownMethod;
      if (multipart_) return State::kMultipart;
      if (!early_answer_.empty()) return State::kEarlyAnswer;
      if (bad_chunk_) return State::kBadChunk;
      if (chunked_too_large_) return State::kBodyTooLarge;
      if (body_len_ == kMalformedHead) return State::kMalformedHead;
      if (!host_problem_.empty()) return State::kBadHost;
      if (body_len_ == kInvalidLength) return State::kBadLength;
      if (body_len_ == kBadCoding) return State::kBadCoding;
      if (body_len_ == kCompressed) return State::kCompressed;
      if (body_len_ > limits_.max_body_bytes) return State::kBodyTooLarge;
      if (expectation_failed_) return State::kExpectationFailed;
      if (head_len_ > 0 && expect_continue_ && !continue_sent_) {
        // The client waits for this before it sends the body (curl does for 1 s, for every
        // upload over 1 MB); httplib sent it only once the body had arrived.
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        ::send(sock_, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        continue_sent_ = true;
      }
      const ssize_t n = ::recv(sock_, chunk, sizeof(chunk), MSG_DONTWAIT);
      if (n > 0) {
        if (buffered() == 0) first_byte_ = Clock::now();
        buf_.append(chunk, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) return State::kClosed;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return State::kWaiting;
      return State::kClosed;
    }
  }

  size_t buffered() const { return buf_.size() - off_; }
  const std::string& unknown_method() const { return unknown_method_; }
  const std::string& host_problem() const { return host_problem_; }

  // Whether the buffered HTTP/1.0 head asks to keep the connection: its first Connection
  // header says keep-alive, in any case. httplib keeps it only for the exact spelling
  // "Keep-Alive" (a case-sensitive compare), so another spelling is rewritten in place (the same
  // length) to that one.
  bool http10_keep_alive() {
    // A view into buf_; "" (never keep-alive) when the head has no Connection header.
    const std::string_view value = request_header(std::string_view(buf_.data() + off_, head_len_), "connection");
    if (!same_name(value, "keep-alive")) return false;
    static constexpr std::string_view kHttplibSpelling = "Keep-Alive";  // the same length
    buf_.replace(static_cast<size_t>(value.data() - buf_.data()), value.size(), kHttplibSpelling);
    return true;
  }

  // When a waiting connection gives up: idle, head or body too slow.
  Clock::time_point deadline_while_waiting() const {
    if (head_len_ > 0) return head_at_ + limits_.body_timeout;
    if (buffered() > 0) return first_byte_ + limits_.head_timeout;
    return parked_at + limits_.idle_timeout;
  }

  // The buffered request goes to httplib: its body must be in by the deadline.
  void begin_request() {
    stall_left_ = limits_.write_stall_budget;
    if (head_len_ > 0) {
      // Bare LF line ends (RFC 9112 2.2 lets a server read them): httplib wants CRLF on the
      // request line, answered 400 and went on to read each header line as a request. And
      // an Expect line goes once its 100 Continue is sent (httplib would send another), and
      // an HTTP/1.0 request's always (httplib would send one).
      // Range lines go too: this server serves no partial content (RFC 9110 14.2 lets it
      // ignore them), and httplib cut every body set whole to the range asked, error bodies
      // included ('{"error":{' under a 400), or made it a multipart/byteranges document.
      // And Accept-Encoding lines: answers go uncompressed (identity is always acceptable,
      // RFC 9110 12.5.3). httplib gzipped a whole response as it was written, so the spaces
      // that keep a waiting connection checked stayed in the compressor, a client gone was
      // never noticed and its request generated on to max_tokens; it also ignored q=0.
      std::string head;
      head.reserve(head_len_ + 16);
      const std::string_view old_head(buf_.data() + off_, head_len_);
      const bool http10_head = is_http10_request(old_head);  // httplib answers its Expect too
      auto named = [](std::string_view line, std::string_view name_colon) {
        if (line.size() < name_colon.size()) return false;
        for (size_t k = 0; k < name_colon.size(); ++k) {
          if (std::tolower(static_cast<unsigned char>(line[k])) != name_colon[k]) return false;
        }
        return true;
      };
      for (size_t i = 0; i < old_head.size();) {
        size_t e = old_head.find('\n', i);
        e = e == std::string_view::npos ? old_head.size() : e + 1;
        std::string_view line = old_head.substr(i, e - i);
        i = e;
        if ((continue_sent_ || http10_head) && named(line, "expect:")) continue;
        if (named(line, "range:") || named(line, "accept-encoding:")) continue;
        if (!line.empty() && line.back() == '\n') {
          line.remove_suffix(1);
          if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
          head.append(line);
          head.append("\r\n");
        } else {
          head.append(line);
        }
      }
      if (head != old_head) {
        buf_.replace(off_, head_len_, head);
        head_len_ = head.size();
      }
    }
    if (head_len_ > 0 && !framed_) {
      // A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112
      // 6.3); httplib would read a POST's body until the connection closes, so the client
      // waited for the body deadline. Say so in the head before httplib reads it.
      const size_t line_end = buf_.find('\n', off_);
      if (line_end != std::string::npos && line_end < off_ + head_len_) {
        static constexpr std::string_view kNoBody = "Content-Length: 0\r\n";
        buf_.insert(line_end + 1, kNoBody);
        head_len_ += kNoBody.size();
      }
    }
    if (head_len_ > 0) {
      const size_t line_end = buf_.find('\n', off_);
      std::string_view line(buf_.data() + off_, (line_end == std::string::npos ? buf_.size() : line_end) - off_);
      line = without_line_end(line);
      http10_ = line.size() >= 8 && line.substr(line.size() - 8) == "HTTP/1.0";
      http10_close_ = http10_ && !http10_keep_alive();
      asks_close_ = head_asks_close(std::string_view(buf_.data() + off_, head_len_));
    }
    response_started_ = false;
    head_out_.clear();
    head_out_done_ = false;
    probe_sent_ = false;
    // The request's bytes in the buffer, head and body: what httplib leaves unread of them
    // (a handler that answers before reading the body, as the API key check does) is dropped
    // at the end, not read as the next request.
    request_total_ = head_len_ + (chunked_ ? chunk_scan_ : body_len_);
    deadline_ = (head_len_ > 0 ? head_at_ : Clock::now()) + limits_.body_timeout;
    // httplib enforces the body limit only on a Content-Length: a chunked body was read
    // whole, however large (300 MB took 300 MB). Its bytes are counted as httplib reads
    // them, with room for the chunk framing of ordinary chunk sizes.
    request_read_ = 0;
    request_limit_ = chunked_ ? head_len_ + limits_.max_body_bytes + limits_.max_body_bytes / 8 + 4096
                              : std::numeric_limits<uint64_t>::max();
    head_len_ = 0;
    body_len_ = 0;
  }

  // The request under way is HTTP/1.0 without "Connection: keep-alive": its connection closes
  // after the answer (RFC 9112 9.3), so the answer must say close. httplib closes it but wrote
  // "Keep-Alive: timeout=5, max=5" and no Connection header, as for a connection it keeps; the
  // caller passes it as the last request instead, which httplib answers with Connection: close.
  // So is one whose Connection header names the option "close" in any case or among others
  // ("Close", "keep-alive, close": RFC 9110 7.6.1): httplib heeds only the exact value "close",
  // so the answer said keep-alive and a client that reads to the close waited for the idle
  // timeout.
  bool closes_after_request() const { return http10_close_ || asks_close_; }

  // httplib is done with a request; what is left in the buffer starts the next one.
  void end_request() {
    if (request_read_ < request_total_) {
      const size_t skip = static_cast<size_t>(std::min<uint64_t>(request_total_ - request_read_, buffered()));
      off_ += skip;
      if (off_ == buf_.size()) {
        buf_.clear();
        off_ = 0;
      }
    }
    request_total_ = 0;
    if (buffered() > 0) first_byte_ = Clock::now();
  }

  // The early answer (limits.early_answer) for this request; the connection then closes.
  void send_early_answer() {
    ::send(sock_, early_answer_.data(), early_answer_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (limits_.on_refusal) limits_.on_refusal(early_status_);
  }

  void send_refusal(int status, std::string_view reason, std::string_view message) {
    const std::string r = refusal(status, reason, message);
    ::send(sock_, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (limits_.on_refusal) limits_.on_refusal(status);
  }

  bool is_readable() const override {
    return buffered() > 0 || poll_one(sock_, POLLIN, remaining()) > 0;
  }

  bool is_writable() const override {
    if (!writable()) return false;
    return !peer_gone();
  }

  // The client is gone: its connection was reset or is closed both ways (POLLERR / POLLHUP:
  // an RST came, as a closed socket answers what is written to it), or a write failed. The
  // end of its input alone (a FIN: shutdown(SHUT_WR) after the request, or close()) is not:
  // a client may half-close once its request is sent and still read the answer. Before
  // anything of the response is written the two cannot be told apart, so a response that
  // writes nothing while it waits (a whole completion) sends, once the input has ended for
  // limits.half_close_probe, a 100 Continue: an interim response that HTTP/1.1 clients read
  // past (RFC 9110 15.2), to which a closed socket answers with an RST that the next call
  // sees. Not to an HTTP/1.0 client, which may get no 1xx (there a close is seen when the
  // answer is written). Bytes of a next request waiting in the socket keep it alive.
  bool peer_gone() const {
    if (write_failed_) return true;
    pollfd p{sock_, POLLIN, 0};
    int r;
    do {
      r = ::poll(&p, 1, 0);
    } while (r < 0 && errno == EINTR);
    if (r <= 0) return false;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return true;
    char c;
    const ssize_t n = ::recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return false;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    // The client's input ended.
    const auto now = Clock::now();
    if (!input_ended_) {
      input_ended_ = true;
      input_ended_at_ = now;
    }
    if (!probe_sent_ && !response_started_ && !http10_ && now - input_ended_at_ >= limits_.half_close_probe) {
      probe_sent_ = true;
      const ssize_t sent = ::send(sock_, kProbe.data(), kProbe.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) write_failed_ = true;
    }
    return write_failed_;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (buffered() == 0) {
      buf_.clear();
      off_ = 0;
      for (;;) {
        if (poll_one(sock_, POLLIN, remaining()) <= 0) return -1;  // deadline passed
        char chunk[16384];
        const ssize_t n = ::recv(sock_, chunk, sizeof(chunk), MSG_DONTWAIT);
        if (n > 0) {
          buf_.append(chunk, static_cast<size_t>(n));
          break;
        }
        if (n == 0) return 0;
        if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      }
    }
    const size_t n = std::min(size, buffered());
    request_read_ += n;
    if (request_read_ > request_limit_) {
      send_refusal(413, "Payload Too Large", "the request body is larger than this server accepts (see --max-body-bytes)");
      refused_ = true;  // nothing more is written on this connection; it closes
      return -1;
    }
    std::memcpy(ptr, buf_.data() + off_, n);
    off_ += n;
    if (off_ == buf_.size()) {
      buf_.clear();
      off_ = 0;
    }
    return static_cast<ssize_t>(n);
  }

  // The response's head (httplib writes its status line and each header in a call of its
  // own) is gathered and written once whole, as normalized_response_head() makes it; the body
  // goes out as it comes.
  ssize_t write(const char* ptr, size_t size) override {
    if (refused_) return -1;
    response_started_ = true;
    if (head_out_done_) return send_some(ptr, size);
    const size_t from = head_out_.size() >= 3 ? head_out_.size() - 3 : 0;
    head_out_.append(ptr, size);
    const size_t end = head_out_.find("\r\n\r\n", from);
    if (end == std::string::npos && head_out_.size() <= kMaxResponseHead) return static_cast<ssize_t>(size);
    head_out_done_ = true;
    std::string out;
    if (end == std::string::npos) {
      out.swap(head_out_);
    } else {
      out = normalized_response_head(std::string_view(head_out_).substr(0, end + 4));
      // An HTTP/1.0 connection stays open only when the answer says so (RFC 9112 C.2.2);
      // httplib names the Keep-Alive parameters but writes no Connection header then.
      if (http10_ && !http10_close_ && out.find("\nConnection:") == std::string::npos) {
        out.insert(out.size() - 2, "Connection: keep-alive\r\n");
      }
      out.append(head_out_, end + 4);
    }
    head_out_.clear();
    for (size_t done = 0; done < out.size();) {
      const ssize_t n = send_some(out.data() + done, out.size() - done);
      if (n < 0) return -1;
      done += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      ip_and_port(addr, ip, port);
    }
  }

  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      ip_and_port(addr, ip, port);
    }
  }

  socket_t socket() const override { return sock_; }

  size_t n_requests = 0;
  Clock::time_point parked_at;

 private:
  // The head ends at its first empty line (CRLF CRLF, or bare LF as httplib also reads it).
  bool ready() {
    if (head_len_ == 0) {
      // Empty lines before a request line are ignored (RFC 9112 2.2), as are the line ends
      // left after a request httplib could not parse.
      while (off_ < buf_.size() && (buf_[off_] == '\r' || buf_[off_] == '\n')) ++off_;
      std::string_view s(buf_.data() + off_, buffered());
      size_t end = std::string_view::npos;
      for (std::string_view mark : {std::string_view("\n\r\n"), std::string_view("\n\n")}) {
        const size_t at = s.find(mark);
        if (at != std::string_view::npos) end = std::min(end, at + mark.size());
      }
      if (end == std::string_view::npos) {
        // A method that already holds a byte no method has (a TLS hello, binary): no need to
        // wait for a head that will never end.
        for (size_t i = 0; i < s.size() && s[i] != ' '; ++i) {
          if (!is_tchar(static_cast<unsigned char>(s[i]))) {
            bad_request_line_ = true;
            break;
          }
        }
        // A request line already longer than httplib reads (as routed: an absolute-form target's
        // scheme and authority, once they have ended, are cut before httplib reads it): refused
        // without waiting for the head. So is a line that fills the head limit still inside an
        // authority (414, as a long line, not 431).
        if (!bad_request_line_ && (request_line_too_long(s) || (s.find('\n') == std::string_view::npos &&
                                                                s.size() > limits_.max_head_bytes))) {
          uri_too_long_ = true;
        }
        return false;
      }
      if (!valid_request_line(s.substr(0, end))) {
        bad_request_line_ = true;
        return false;
      }
      end -= to_origin_form();
      s = std::string_view(buf_.data() + off_, buffered());
      if (request_line_too_long(s)) {
        uri_too_long_ = true;
        return false;
      }
      if (const std::string_view method = s.substr(0, s.find(' ')); !is_routed_method(method)) {
        unknown_method_ = std::string(method.substr(0, 32));
        return false;
      }
      if (is_multipart(s.substr(0, end))) {
        multipart_ = true;
        return false;
      }
      read_form_as_body(s.substr(0, end));
      if (has_header_line_longer_than(s.substr(0, end), kMaxHeaderLineBytes)) {
        header_line_too_long_ = true;
        return false;
      }
      head_len_ = end;
      head_at_ = Clock::now();
      body_len_ = content_length(s.substr(0, end), &framed_, &chunked_);
      host_problem_ = server::host_problem(s.substr(0, end));
      // RFC 9110 10.1.1: an HTTP/1.0 request's 100-continue expectation is ignored (its client
      // does not know interim responses: it read the 100 Continue as the answer), as are its
      // other expectations (HTTP/1.0 has no Expect). An HTTP/1.1 request that expects anything
      // else is answered 417: this server meets no other expectation, and httplib went on as
      // if it had been met.
      const Expectations expects = expectations(s.substr(0, end));
      const bool http10 = is_http10_request(s.substr(0, end));
      expect_continue_ = expects.continue_100 && !http10;
      continue_sent_ = false;
      expectation_failed_ = expects.other && !http10;
      if (expectation_failed_) return false;  // refused by fill(), after the framing checks
      if (limits_.early_answer) {
        early_answer_ = limits_.early_answer(s.substr(0, end), &early_status_);
        if (!early_answer_.empty()) return false;
      }
      if (!host_problem_.empty()) return false;  // refused by fill()
      chunk_scan_ = 0;
      chunk_data_ = 0;
      chunk_trailer_ = false;
      chunks_done_ = false;
      trailer_at_ = 0;
    }
    if (body_len_ > limits_.max_body_bytes) return false;  // refused by fill(), whatever follows
    if (chunked_) return chunks_complete();
    return buffered() >= head_len_ + body_len_;
  }

  // A request line's absolute-form target ("POST http://host:8080/v1/chat/completions?x
  // HTTP/1.1", as proxies send it) cut to its origin form ("/v1/chat/completions?x"; "/" for an
  // empty path): RFC 9112 3.2.2 has a server accept it, and httplib routed the whole URL (a 404).
  // The authority is not read (the routes do not look at Host). Returns the bytes removed.
  size_t to_origin_form() {
    const OriginCut cut = origin_cut(std::string_view(buf_.data() + off_, buffered()));
    if (cut.removed == 0) return 0;  // valid_request_line: the target has ended, so the cut is known
    buf_.replace(off_ + cut.at, cut.removed, cut.slash ? "/" : "");
    return cut.slash ? cut.removed - 1 : cut.removed;
  }

  // What to_origin_form cuts from the request line at the start of `s` (whole, or the part of it
  // that has arrived): the absolute-form target's scheme and authority, from byte `at`, and a
  // "/" in their place where the path is empty. Nothing (removed 0) for another form, or while
  // the authority has not ended (`open`).
  struct OriginCut {
    size_t at = 0;
    size_t removed = 0;
    bool slash = false;
    bool open = false;
  };
  static OriginCut origin_cut(std::string_view s) {
    OriginCut cut;
    const size_t sp = s.find(' ');  // METHOD SP target SP version
    if (sp == std::string_view::npos) return cut;
    const std::string_view target = s.substr(sp + 1);
    size_t authority = 0;
    for (const std::string_view scheme : {std::string_view("http://"), std::string_view("https://")}) {
      if (starts_with_lowercase(target, scheme)) authority = scheme.size();
    }
    if (authority == 0) return cut;
    const size_t path = target.find_first_of("/?# \r\n", authority);
    if (path == std::string_view::npos) {
      cut.open = true;
      return cut;
    }
    cut.at = sp + 1;
    cut.removed = path;
    cut.slash = target[path] != '/';
    return cut;
  }

  // Whether the request line at the start of `s` (whole, or the part of it that has arrived)
  // is longer than httplib reads, counted as httplib counts it: with a CRLF (begin_request
  // turns a bare LF into one), and as routed: without an absolute-form target's scheme and
  // authority (origin_cut), which to_origin_form cuts before httplib reads the line. Counting
  // them refused a line whose head was still arriving that the same line in one piece passed.
  static bool request_line_too_long(std::string_view s) {
    const size_t eol = s.find('\n');
    size_t bytes = s.size();
    if (eol != std::string_view::npos) bytes = eol > 0 && s[eol - 1] == '\r' ? eol + 1 : eol + 2;
    const OriginCut cut = origin_cut(s.substr(0, eol));
    if (cut.open) return false;  // not known yet; the head limit bounds it
    bytes -= cut.slash ? cut.removed - 1 : cut.removed;
    return bytes > kMaxRequestLineBytes;
  }

  // Whether the routes answer `method` (with 405 where a route does not allow it). httplib
  // answered any other (TRACE, CONNECT, an extension method) 400 "malformed HTTP request".
  static bool is_routed_method(std::string_view method) {
    for (std::string_view m : {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}) {
      if (method == m) return true;
    }
    return false;
  }

  // Whether the head's Content-Type is multipart/form-data: no route reads it, and httplib
  // parsed it as form data, so a valid one reached the routes as an empty body ("the
  // request body is empty") and any other was 400 "malformed HTTP request".
  static bool is_multipart(std::string_view head) {
    return starts_with_lowercase(request_header(head, "content-type"), "multipart/form-data");
  }

  // Whether `value` begins with `prefix` (lowercase), ignoring the case of value's letters.
  static bool starts_with_lowercase(std::string_view value, std::string_view prefix) {
    if (value.size() < prefix.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(value[i])) != prefix[i]) return false;
    }
    return true;
  }

  // A body sent as application/x-www-form-urlencoded (curl -d without -H, many HTTP clients'
  // default) is read as the JSON it holds, as llama-server reads it: no route reads form
  // fields, and httplib parsed such bodies as forms and refused those over 8 KB with 413 (the
  // limit compiled into the library). The type's value in the buffered head becomes
  // "application/json", padded with spaces to the same length so that no offset moves.
  // httplib takes any value that begins with the form type for a form (so did
  // "application/x-www-form-urlencodedX" and "application/x-www-form-urlencoded, text/plain"),
  // so every such value is rewritten, not only the exact type.
  void read_form_as_body(std::string_view head) {
    const std::string_view type = request_header(head, "content-type");
    if (!starts_with_lowercase(type, "application/x-www-form-urlencoded")) return;
    std::string json = "application/json";
    json.resize(type.size(), ' ');
    buf_.replace(static_cast<size_t>(type.data() - buf_.data()), type.size(), json);
  }

  // Whether a header line of `head` (the request line aside) is longer than `max_bytes` with
  // a CRLF line end, as httplib counts it once begin_request() made every line end CRLF.
  static bool has_header_line_longer_than(std::string_view head, size_t max_bytes) {
    size_t pos = head.find('\n');
    while (pos != std::string_view::npos && pos + 1 < head.size()) {
      const size_t next = head.find('\n', pos + 1);
      std::string_view line = head.substr(pos + 1, next == std::string_view::npos ? std::string_view::npos : next - pos - 1);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.size() + 2 > max_bytes) return true;
      pos = next;
    }
    return false;
  }

  // Whether the request line of a head says HTTP/1.0.
  static bool is_http10_request(std::string_view head) {
    const std::string_view line = without_line_end(head.substr(0, head.find('\n')));
    return line.size() >= 8 && line.substr(line.size() - 8) == "HTTP/1.0";
  }

  // The expectations of a head's Expect headers: each a comma-separated list (RFC 9110 10.1.1,
  // 5.6.1: empty members are none), 100-continue compared without case.
  struct Expectations {
    bool continue_100 = false;  // 100-continue is among them
    bool other = false;         // another is
  };
  static Expectations expectations(std::string_view head) {
    Expectations out;
    for_each_header(head, [&](std::string_view name, std::string_view value) {
      if (!same_name(name, "expect")) return;
      for_each_member(value, [&](std::string_view member) {
        (same_name(member, "100-continue") ? out.continue_100 : out.other) = true;
      });
    });
    return out;
  }

  // A byte of a method token (RFC 9110 5.6.2 tchar).
  static bool is_tchar(unsigned char ch) {
    return std::isalnum(ch) || (ch != 0 && std::strchr("!#$%&'*+-.^_`|~", ch) != nullptr);
  }

  // METHOD SP request-target SP HTTP/1.x (RFC 9112 3): anything else (a TLS hello, a line of
  // garbage, no version) is answered 400 once and the connection closes.
  static bool valid_request_line(std::string_view head) {
    const size_t eol = head.find('\n');
    std::string_view line = head.substr(0, eol);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == 0 || sp1 == std::string_view::npos || sp2 == std::string_view::npos || sp2 == sp1 + 1) return false;
    for (size_t i = 0; i < sp1; ++i) {
      if (!is_tchar(static_cast<unsigned char>(line[i]))) return false;
    }
    for (size_t i = sp1 + 1; i < sp2; ++i) {
      if (static_cast<unsigned char>(line[i]) <= ' ' || line[i] == 0x7f) return false;
    }
    const std::string_view version = line.substr(sp2 + 1);
    return version == "HTTP/1.1" || version == "HTTP/1.0";
  }

  // Whether the whole chunked body is buffered, scanning on from where the last call stopped
  // (chunk_scan_, from the body's start). A malformed size line or chunk end sets bad_chunk_
  // (httplib answered it 400 and kept the connection, whose next bytes were then read as a
  // request), the body limit chunked_too_large_. The trailer fields, which httplib refuses,
  // are cut from the buffer once the body is complete (RFC 9112 7.1.2 lets a recipient drop
  // them).
  bool chunks_complete() {
    if (chunks_done_) return true;  // ready() asks again when the worker takes the connection
    chunks_done_ = scan_chunks();
    return chunks_done_;
  }
  bool scan_chunks() {
    const size_t body_at = off_ + head_len_;
    for (;;) {
      const std::string_view body(buf_.data() + body_at, buf_.size() - body_at);
      const size_t eol = body.find('\n', chunk_scan_);
      if (eol == std::string_view::npos) {
        if (body.size() - chunk_scan_ > 4096) bad_chunk_ = true;  // no size line is that long
        return false;
      }
      std::string_view line = body.substr(chunk_scan_, eol - chunk_scan_);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (chunk_trailer_) {  // trailer fields, then an empty line
        if (!line.empty()) {
          chunk_scan_ = eol + 1;
          continue;
        }
        // Cut the trailer fields: the body then ends "0\r\n\r\n" right after the last chunk.
        buf_.replace(body_at + trailer_at_, eol + 1 - trailer_at_, "\r\n");
        chunk_scan_ = trailer_at_ + 2;
        return true;
      }
      uint64_t size = 0;
      size_t digits = 0;
      size_t zeros = 0;  // leading zeros, which do not count toward the 15 digits a size may have
      for (; digits < line.size() && std::isxdigit(static_cast<unsigned char>(line[digits])); ++digits) {
        if (size == 0 && line[digits] == '0') ++zeros;
        if (digits + 1 - zeros > 15) {
          chunked_too_large_ = true;
          return false;
        }
        const char ch = static_cast<char>(std::tolower(static_cast<unsigned char>(line[digits])));
        size = size * 16 + static_cast<uint64_t>(ch <= '9' ? ch - '0' : ch - 'a' + 10);
      }
      // After the size only whitespace before a chunk extension (";name=value") may follow.
      size_t k = digits;
      while (k < line.size() && (line[k] == ' ' || line[k] == '\t')) ++k;
      if (digits == 0 || (k < line.size() && line[k] != ';')) {
        bad_chunk_ = true;
        return false;
      }
      if (size == 0) {
        chunk_trailer_ = true;
        chunk_scan_ = eol + 1;
        trailer_at_ = chunk_scan_;
        continue;
      }
      if (chunk_data_ + size > limits_.max_body_bytes) {
        chunked_too_large_ = true;
        return false;
      }
      const size_t data_end = eol + 1 + static_cast<size_t>(size);
      if (body.size() < data_end + 1) return false;
      size_t next = data_end;
      if (body[next] == '\r') {
        if (body.size() < next + 2) return false;
        ++next;
      }
      if (body[next] != '\n') {  // the data must end with its line end
        bad_chunk_ = true;
        return false;
      }
      chunk_data_ += size;
      chunk_scan_ = next + 1;
    }
  }

  milliseconds remaining() const {
    return std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now());
  }

  // Sends what the socket takes of [ptr, ptr + size) within the write timeout; -1 when the
  // timeout passes or the send fails (then the client is gone: peer_gone()).
  ssize_t send_some(const char* ptr, size_t size) {
    for (;;) {
      if (!writable()) return -1;
      const ssize_t n = ::send(sock_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        write_failed_ = true;
        return -1;
      }
    }
  }

  // Whether the socket takes more output within the write timeout and what is left of the
  // request's stall budget (ConnectionLimits::write_stall_budget); the time waited is taken
  // from that budget. A client that reads a byte now and then cannot hold a worker for long.
  bool writable() const {
    const auto start = Clock::now();
    const int r = wait_writable(sock_, std::min(write_timeout_, stall_left_));
    stall_left_ -= std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    return r > 0;
  }

  socket_t sock_;
  const ConnectionLimits& limits_;
  milliseconds write_timeout_;
  mutable milliseconds stall_left_{limits_.write_stall_budget};  // of the request under way
  std::string buf_;
  size_t off_ = 0;
  size_t head_len_ = 0;    // of the buffered request; 0 until its head is complete
  uint64_t body_len_ = 0;  // its Content-Length
  bool framed_ = false;    // its head has a Content-Length or Transfer-Encoding header
  bool chunked_ = false;   // its head has a Transfer-Encoding header
  size_t chunk_scan_ = 0;       // chunked body: where the next unscanned line starts (from the body)
  uint64_t chunk_data_ = 0;     // chunked body: data bytes of the chunks scanned so far
  bool chunk_trailer_ = false;  // chunked body: the last chunk was seen, the trailer is next
  bool chunks_done_ = false;    // chunked body: all of it is buffered
  size_t trailer_at_ = 0;       // chunked body: where the trailer section starts (from the body)
  bool bad_chunk_ = false;      // chunked body: a malformed size line or chunk end
  bool expect_continue_ = false;  // the head has "Expect: 100-continue"
  bool expectation_failed_ = false;  // an HTTP/1.1 head expects something else
  bool continue_sent_ = false;    // and its 100 Continue was sent
  std::string early_answer_;      // limits.early_answer's response for this head, if any
  int early_status_ = 0;
  bool chunked_too_large_ = false;
  bool bad_request_line_ = false;
  bool uri_too_long_ = false;
  bool header_line_too_long_ = false;
  std::string unknown_method_;  // the request line's method when no route answers it
  std::string host_problem_;    // what is wrong with the head's Host header (http_host.h)
  bool multipart_ = false;      // the head's Content-Type is multipart/form-data
  uint64_t request_read_ = 0;   // bytes httplib read of the request under way
  uint64_t request_limit_ = 0;  // most it may read (chunked bodies; else unbounded)
  uint64_t request_total_ = 0;  // bytes of the request under way (head and body)
  bool refused_ = false;        // a refusal was sent mid-request
  bool http10_ = false;         // the request under way is HTTP/1.0
  bool http10_close_ = false;   // and does not ask to keep the connection
  bool asks_close_ = false;     // the request under way has the connection option "close"
  bool response_started_ = false;  // its response has begun (write() was called)
  std::string head_out_;           // its response head as written so far, until whole
  bool head_out_done_ = false;     // and then written
  // The client's side (peer_gone(), which the handler's thread calls while it waits).
  mutable bool input_ended_ = false;  // a read gave the end of its input
  mutable Clock::time_point input_ended_at_{};
  mutable bool probe_sent_ = false;   // the request under way sent kProbe
  mutable bool write_failed_ = false;
  Clock::time_point first_byte_{};
  Clock::time_point head_at_{};
  Clock::time_point deadline_{};
};

// The answer to a request refused before httplib saw it; the connection then closes. Every
// state but kReady, kWaiting and kClosed is a refusal: the switch names each (so that a new
// state must be given its answer here), and the callers send every other state here.
void refuse(Connection& c, Connection::State state) {
  using S = Connection::State;
  switch (state) {
    case S::kReady:
    case S::kWaiting:
    case S::kClosed:
      return;  // not a refusal
    case S::kEarlyAnswer:
      c.send_early_answer();
      return;
    case S::kHeadTooLarge:
      c.send_refusal(431, "Request Header Fields Too Large", "the request head is too large");
      return;
    case S::kBadLength:
      c.send_refusal(400, "Bad Request", "the Content-Length header is not a number (or two disagree)");
      return;
    case S::kBadCoding:
      c.send_refusal(501, "Not Implemented", "the only transfer coding this server reads is chunked");
      return;
    case S::kMultipart:
      c.send_refusal(415, "Unsupported Media Type",
                     "multipart request bodies are not accepted: send the body as application/json");
      return;
    case S::kUnknownMethod:
      c.send_refusal(501, "Not Implemented", "the method " + c.unknown_method() + " is not implemented by this server");
      return;
    case S::kHeaderLineTooLong:
      c.send_refusal(431, "Request Header Fields Too Large",
                     "a request header line is longer than " + std::to_string(kMaxHeaderLineBytes) + " bytes");
      return;
    case S::kUriTooLong:
      c.send_refusal(414, "URI Too Long", "the request URI is too long");
      return;
    case S::kBadRequestLine:
      c.send_refusal(400, "Bad Request", "malformed HTTP request line");
      return;
    case S::kMalformedHead:
      c.send_refusal(400, "Bad Request",
                     "malformed request head (a header line without a colon or with space before it, a field name "
                     "that is not a token, a control byte in a field value, a folded line, or both Content-Length "
                     "and Transfer-Encoding)");
      return;
    case S::kBadHost:
      c.send_refusal(400, "Bad Request", c.host_problem());
      return;
    case S::kBadChunk:
      c.send_refusal(400, "Bad Request", "malformed chunked request body");
      return;
    case S::kExpectationFailed:
      c.send_refusal(417, "Expectation Failed",
                     "the Expect header asks for an expectation this server does not meet (only 100-continue)");
      return;
    case S::kCompressed:
      c.send_refusal(415, "Unsupported Media Type",
                     "compressed request bodies (Content-Encoding) are not accepted: send the body uncompressed");
      return;
    case S::kBodyTooLarge:
      c.send_refusal(413, "Payload Too Large",
                     "the request body is larger than this server accepts (see --max-body-bytes)");
      return;
  }
}

// The workers of one listen(): a fixed set of threads that hands each job to the worker that
// went idle last (a stack, not httplib's FIFO queue). Every thread keeps memory from the
// requests it ran: its stack pages and glibc's per-thread cache of freed chunks (up to
// ~240 KB a thread, which malloc_trim cannot reach). Under httplib's pool, sequential
// requests rotated through all of the dozens of workers, and the process grew ~2 kB a
// request towards that many caches (bug-case 64); now they land on the same few threads, and
// the memory kept is that of the requests run at once.
//
// A worker whose client does not read its answer waits in a write (wait_writable) for up to
// the write timeout, doing nothing; as many such clients as workers left none for anyone else
// (/health took 10 s). While jobs wait, the pool starts a spare thread for each stalled worker
// (up to max_spares at once), so that `n_threads` workers are always left that do not wait on a
// client; a spare ends when it finds no job waiting.
class LifoWorkers final : public StallObserver {
 public:
  // Starts up to `n_threads` workers. A thread the system refuses (its thread or process
  // limit) ends the start-up with the workers already running, said in the log: jobs beyond
  // them wait for one. Before, std::thread's exception aborted the server.
  LifoWorkers(size_t n_threads, size_t max_spares) : max_spares_(max_spares) {
    workers_.reserve(n_threads);
    for (size_t i = 0; i < n_threads; ++i) workers_.push_back(std::make_unique<Worker>());
    threads_.reserve(n_threads);
    for (size_t i = 0; i < n_threads; ++i) {
      try {
        threads_.emplace_back([this, w = workers_[i].get()] { run(w); });
      } catch (const std::system_error& e) {
        if (threads_.empty()) {
          GS_LOG_ERROR("no HTTP worker thread could start ({}): no request can be answered", e.what());
        } else {
          GS_LOG_WARN("started {} of {} HTTP worker threads (the system refused more: {}); requests beyond them "
                      "wait for one",
                      threads_.size(), n_threads, e.what());
        }
        break;
      }
    }
  }
  LifoWorkers(const LifoWorkers&) = delete;
  LifoWorkers& operator=(const LifoWorkers&) = delete;

  // Runs `fn` on the most recently idle worker, or on the first to finish its job when all
  // are busy (on a spare when some of them wait on their clients). After shutdown() nothing
  // more runs.
  void enqueue(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) return;
    if (idle_.empty()) {
      jobs_.push_back(std::move(fn));
      start_spares();
      return;
    }
    Worker* w = idle_.back();
    idle_.pop_back();
    w->job = std::move(fn);
    w->cv.notify_one();
  }

  // Runs the jobs already handed over, then joins the threads.
  void shutdown() {
    std::list<std::thread> spares;
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
      for (Worker* w : idle_) w->cv.notify_one();
    }
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      spares.swap(spares_);  // no spare starts after shutdown_
      ended_.clear();
    }
    for (auto& t : spares) {
      if (t.joinable()) t.join();
    }
  }

  // StallObserver: the calling worker waits for its client to read.
  void stall_begins() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++stalled_;
    start_spares();
  }
  void stall_ends() override {
    std::lock_guard<std::mutex> lock(mu_);
    --stalled_;
  }

 private:
  struct Worker {
    std::condition_variable cv;
    std::function<void()> job;  // under mu_; set by enqueue() while the worker is idle
  };

  // Under mu_: one spare for each stalled worker while jobs wait that no starting spare will
  // take. Spares that ended are joined here first.
  void start_spares() {
    for (const auto it : ended_) {
      it->join();
      spares_.erase(it);
    }
    ended_.clear();
    while (!shutdown_ && jobs_.size() > starting_ && spares_.size() < stalled_ && spares_.size() < max_spares_) {
      spares_.emplace_back();
      const auto it = std::prev(spares_.end());
      try {
        *it = std::thread([this, it] { run_spare(it); });
      } catch (const std::system_error& e) {
        spares_.erase(it);
        if (!spare_refused_) {
          GS_LOG_WARN("no spare HTTP worker could start beside {} that wait on clients ({}): requests wait for one",
                      stalled_, e.what());
        }
        spare_refused_ = true;
        return;
      }
      ++starting_;
    }
  }

  void run(Worker* w) {
    t_stall_observer = this;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!w->job && !jobs_.empty()) {
        w->job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      if (!w->job) {
        if (shutdown_) return;
        idle_.push_back(w);
        w->cv.wait(lock, [&] { return static_cast<bool>(w->job) || shutdown_; });
        if (!w->job) {
          idle_.erase(std::find(idle_.begin(), idle_.end(), w));
          continue;
        }
      }
      std::function<void()> job = std::move(w->job);
      w->job = nullptr;
      lock.unlock();
      job();
      job = nullptr;  // the job's captures (a connection) go before the worker waits again
      lock.lock();
    }
  }

  // A spare runs the jobs waiting, then ends (joined by the next start_spares or shutdown).
  void run_spare(std::list<std::thread>::iterator self) {
    t_stall_observer = this;
    std::unique_lock<std::mutex> lock(mu_);
    --starting_;
    while (!jobs_.empty()) {
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      job = nullptr;
      lock.lock();
    }
    if (!shutdown_) ended_.push_back(self);
  }

  std::mutex mu_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> idle_;               // under mu_; the most recently idle last
  std::deque<std::function<void()>> jobs_;  // under mu_; waiting while no worker is idle
  bool shutdown_ = false;                   // under mu_
  std::vector<std::thread> threads_;
  const size_t max_spares_;
  size_t stalled_ = 0;                                  // under mu_; workers and spares in wait_writable
  size_t starting_ = 0;                                 // under mu_; spares not yet running
  std::list<std::thread> spares_;                       // under mu_
  std::vector<std::list<std::thread>::iterator> ended_;  // under mu_; spares whose run ended
  bool spare_refused_ = false;                          // under mu_; said once in the log
};

// httplib's task queue for one listen(): the workers, and the waiting room where
// connections between requests are polled.
class ConnectionQueue final : public httplib::TaskQueue {
 public:
  ConnectionQueue(HttpListener* listener, const ConnectionLimits& limits)
      : listener_(listener), limits_(limits), workers_(limits.n_workers, limits.max_stall_spares) {
    if (::pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
    room_ = std::thread([this] { waiting_room(); });
  }
  ~ConnectionQueue() override {
    if (wake_[0] >= 0) ::close(wake_[0]);
    if (wake_[1] >= 0) ::close(wake_[1]);
  }

  // A newly accepted connection (httplib's job runs HttpListener::process_and_close_socket).
  void enqueue(std::function<void()> fn) override { workers_.enqueue(std::move(fn)); }

  // After the listening socket closed: parked connections close, running requests finish.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake();
    room_.join();
    workers_.shutdown();
    listener_->queue_ = nullptr;
  }

  bool stopping() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }

  // Hands `c` to the waiting room; false when shutting down (the caller drops it).
  bool park(std::shared_ptr<Connection> c) {
    c->parked_at = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return false;
      incoming_.push_back(std::move(c));
    }
    wake();
    return true;
  }

 private:
  void wake() {
    if (wake_[1] < 0) return;
    const char b = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_[1], &b, 1);
  }

  void waiting_room() {
    std::vector<std::shared_ptr<Connection>> parked;
    std::vector<pollfd> fds;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) break;
        for (auto& c : incoming_) parked.push_back(std::move(c));
        incoming_.clear();
      }
      const auto now = Clock::now();
      milliseconds wait(1000);
      for (const auto& c : parked) {
        const auto end = c->deadline_while_waiting();
        wait = std::min(wait, std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(end - now) + milliseconds(1)));
      }
      fds.assign(1, pollfd{wake_[0], POLLIN, 0});
      for (const auto& c : parked) fds.push_back(pollfd{c->socket(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), static_cast<int>(wait.count())) < 0 && errno != EINTR) {
        std::this_thread::sleep_for(milliseconds(10));
      }
      if (fds[0].revents != 0) {
        char drain[256];
        while (::read(wake_[0], drain, sizeof(drain)) > 0) {
        }
      }
      const auto later = Clock::now();
      std::vector<std::shared_ptr<Connection>> kept;
      kept.reserve(parked.size());
      for (size_t i = 0; i < parked.size(); ++i) {
        std::shared_ptr<Connection>& c = parked[i];
        if (fds[i + 1].revents != 0) {
          const Connection::State state = c->fill();
          switch (state) {
            case Connection::State::kReady:
              dispatch(std::move(c));
              continue;
            case Connection::State::kClosed:
              continue;
            case Connection::State::kWaiting:
              break;
            default:  // a refusal (refuse() names each)
              refuse(*c, state);
              continue;
          }
        }
        if (later >= c->deadline_while_waiting()) {
          if (c->buffered() > 0) c->send_refusal(408, "Request Timeout", "the request did not arrive in time");
          continue;
        }
        kept.push_back(std::move(c));
      }
      parked.swap(kept);
    }
    // Shutting down: whoever waits here has no request under way.
    parked.clear();
    std::lock_guard<std::mutex> lock(mu_);
    incoming_.clear();
  }

  void dispatch(std::shared_ptr<Connection> c) {
    HttpListener* listener = listener_;
    workers_.enqueue([listener, c] { listener->serve(c); });
  }

  HttpListener* listener_;
  const ConnectionLimits& limits_;
  LifoWorkers workers_;
  std::thread room_;
  int wake_[2] = {-1, -1};
  mutable std::mutex mu_;
  bool stopping_ = false;                               // under mu_
  std::vector<std::shared_ptr<Connection>> incoming_;  // under mu_
};

namespace {

// The connection whose request this thread runs (handlers run on the thread that called
// process_request), for current_client_gone().
thread_local const Connection* t_serving = nullptr;

}  // namespace

bool current_client_gone() { return t_serving != nullptr && t_serving->peer_gone(); }

HttpListener::HttpListener(ConnectionLimits limits) : limits_(limits) {
  new_task_queue = [this] {
    auto* q = new ConnectionQueue(this, limits_);
    queue_ = q;
    return q;
  };
}

HttpListener::~HttpListener() = default;

bool HttpListener::process_and_close_socket(socket_t sock) {
  const milliseconds write_timeout =
      std::chrono::duration_cast<milliseconds>(std::chrono::seconds(write_timeout_sec_) +
                                               std::chrono::microseconds(write_timeout_usec_));
  serve(std::make_shared<Connection>(sock, limits_, write_timeout));
  return true;
}

void HttpListener::serve(std::shared_ptr<Connection> c) {
  ConnectionQueue* queue = queue_.load();
  for (;;) {
    const Connection::State state = c->fill();
    switch (state) {
      case Connection::State::kReady:
        break;
      case Connection::State::kClosed:
        return;
      case Connection::State::kWaiting:
        if (queue) queue->park(std::move(c));
        return;
      default:  // a refusal (refuse() names each)
        refuse(*c, state);
        return;
    }
    c->begin_request();
    const bool last =
        ++c->n_requests >= keep_alive_max_count_ || (queue && queue->stopping()) || c->closes_after_request();
    bool closed = false;
    bool processed = false;
    {
      struct Serving {
        explicit Serving(const Connection* c) { t_serving = c; }
        ~Serving() { t_serving = nullptr; }
      } serving(c.get());
      processed = process_request(*c, last, closed, nullptr);
    }
    if (!processed || closed || last) return;
    c->end_request();
  }
}

}  // namespace gs::server
