// Reading a request head's text (server/http_head.h) and its Host check (server/http_host.h),
// apart from the listener that uses them.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/http_head.h"
#include "server/http_host.h"

namespace gs::server {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

Headers headers_of(std::string_view head) {
  Headers out;
  for_each_header(head, [&](std::string_view name, std::string_view value) {
    out.emplace_back(std::string(name), std::string(value));
  });
  return out;
}

TEST(HttpHead, HeaderLinesEndAtTheEmptyLineWithBlanksAndLineEndsRemoved) {
  const std::string head =
      "POST /x HTTP/1.1\r\nHost:  a \r\nX-Empty:\r\nno colon here\nConnection:\tkeep-alive, Close\t\r\n\r\n"
      "Body-Line: not a header\r\n";
  EXPECT_EQ(headers_of(head),
            (Headers{{"Host", "a"}, {"X-Empty", ""}, {"Connection", "keep-alive, Close"}}));
  EXPECT_TRUE(headers_of("GET / HTTP/1.1").empty());
  EXPECT_TRUE(headers_of("").empty());
  EXPECT_EQ(headers_of("GET / HTTP/1.1\nA: 1"), (Headers{{"A", "1"}}));  // bare LF, no final line end
}

TEST(HttpHead, ListMembersAreTrimmedAndEmptyOnesSkipped) {
  std::vector<std::string> members;
  for_each_member(" a ,,\tB\t, , c", [&](std::string_view m) { members.emplace_back(m); });
  EXPECT_EQ(members, (std::vector<std::string>{"a", "B", "c"}));
  members.clear();
  for_each_member(" , ", [&](std::string_view m) { members.emplace_back(m); });
  EXPECT_TRUE(members.empty());
}

TEST(HttpHead, RequestHeaderIsTheFirstOfItsNameInAnyCase) {
  const std::string head = "GET / HTTP/1.1\r\nx-api-key: first \r\nX-API-KEY: second\r\n\r\n";
  EXPECT_EQ(request_header(head, "x-api-key"), "first");
  EXPECT_EQ(request_header(head, "authorization"), "");
  EXPECT_TRUE(same_name("Content-Type", "content-type"));
  EXPECT_FALSE(same_name("content-type", "content-typ"));
}

TEST(HttpHost, AtMostOneHostWithAHostAndPortValue) {
  EXPECT_EQ(host_problem("GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"), "");
  EXPECT_EQ(host_problem("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"), "");
  EXPECT_EQ(host_problem("GET / HTTP/1.1\r\n\r\n"), "");  // none: served (decision 0051's addendum)
  EXPECT_NE(host_problem("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n").find("2 Host headers"), std::string::npos);
  EXPECT_NE(host_problem("GET / HTTP/1.1\r\nHost: a b\r\n\r\n").find("not a host"), std::string::npos);
  EXPECT_NE(host_problem("GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n").find("not a host"), std::string::npos);
}

}  // namespace
}  // namespace gs::server
