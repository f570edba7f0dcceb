"""What the Python checks inline in the e2e scripts share (standard library only): the live
server's base URL and headers, read from the command line the scripts give them (the URL, then
curl's -H "Name: value" arguments, as the scripts hold them in AUTH), and a JSON POST.

Usage in a script: PYTHONPATH="$E2E" python3 - "$URL" "${AUTH[@]}" <<'EOF' ... then
    from e2e_http import Server
    server = Server.from_argv()
    r = server.post("/v1/completions", {...})
"""
import json
import sys
import urllib.request


class Server:
    def __init__(self, url, headers):
        self.url = url
        self.headers = headers

    @classmethod
    def from_argv(cls, argv=None):
        """argv[1] is the base URL; each "-H" after it is followed by a "Name: value" header."""
        argv = sys.argv if argv is None else argv
        headers = {"Content-Type": "application/json"}
        for i in range(2, len(argv) - 1):
            if argv[i] == "-H":
                name, value = argv[i + 1].split(": ", 1)
                headers[name] = value
        return cls(argv[1], headers)

    def post(self, path, body, timeout=60):
        """POSTs `body` as JSON to `path`; the decoded JSON answer (an HTTP error raises)."""
        req = urllib.request.Request(self.url + path, json.dumps(body).encode(), self.headers)
        return json.loads(urllib.request.urlopen(req, timeout=timeout).read().decode())
