#!/usr/bin/env bash
# Clients that send a request and never read the answer: each held an HTTP worker for the write
# timeout (10 s), waiting on its full socket. As many of them as workers (--parallel +
# --queue-size + 16, 18 here) left none for anyone else: GET /health and a completion from
# another client took 10 s. The pool now starts a spare worker for each one that waits on a
# client (decision 0047): the other client is answered at once, and the server stops cleanly.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

PORT="$(free_port)"
"$BIN" serve -m "$TARGET" --device cpu --host 127.0.0.1 --port "$PORT" --parallel 1 --queue-size 1 \
  --ctx-size 256 --threads 1 --shutdown-timeout 1 > "$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT
wait_healthy "$PORT" "$PID" || fail "serve never became healthy: $(tail -c 400 "$WORK/serve.log")"

python3 - "$PORT" <<'EOF' || fail "a client was not served beside clients that do not read: $(tail -c 600 "$WORK/serve.log")"
import json, select, socket, sys, time

port = int(sys.argv[1])
N = 24  # more than the 18 HTTP workers
# A /tokenize answer with pieces of some 6 MB: more than the kernel buffers of both ends hold
# (the server's send buffer grows to 4 MB), so the server's write waits on the client.
text = "ROMEO: But soft, what light through yonder window breaks? " * 15000
body = json.dumps({"content": text, "with_pieces": True}).encode()
request = (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
           + str(len(body)).encode() + b"\r\n\r\n" + body)
stalled = []
for _ in range(N):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and read nothing
    s.connect(("127.0.0.1", port))
    s.sendall(request)
    stalled.append(s)
# As many answers as workers have begun (each of those workers is writing), then their
# buffers fill. (Waiting for all N would wait out the first ones' 10 s without the fix.)
WORKERS = 18
deadline = time.time() + 60
waiting = list(stalled)
while len(waiting) > N - WORKERS and time.time() < deadline:
    ready, _, _ = select.select(waiting, [], [], 1.0)
    waiting = [s for s in waiting if s not in ready]
if len(waiting) > N - WORKERS:
    sys.exit(f"{len(waiting)} of {N} stalled clients got no answer in 60 s")
time.sleep(1.0)

def timed(head, payload=b""):
    start = time.time()
    c = socket.create_connection(("127.0.0.1", port), timeout=30)
    c.sendall(head + payload)
    out = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            break
        out += chunk
    c.close()
    return time.time() - start, out.split(b"\r\n", 1)[0].decode()

limit = 3.0  # the stall lasts 10 s
for _ in range(3):
    took, status = timed(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    if status != "HTTP/1.1 200 OK" or took > limit:
        sys.exit(f"GET /health beside {N} stalled clients: {status!r} after {took:.1f} s")
completion = json.dumps({"prompt": "ROMEO:", "max_tokens": 4, "temperature": 0}).encode()
took, status = timed(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Connection: close\r\nContent-Length: " + str(len(completion)).encode() + b"\r\n\r\n", completion)
if status != "HTTP/1.1 200 OK" or took > limit:
    sys.exit(f"a completion beside {N} stalled clients: {status!r} after {took:.1f} s")
for s in stalled:
    s.close()
print(f"served beside {N} stalled clients")
EOF

code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$PORT/health")"
[[ "$code" == 200 ]] || fail "/health after the stalled clients left: $code"
kill -TERM "$PID"
wait "$PID"
rc=$?
[[ $rc -eq 0 ]] || fail "serve exited with $rc after SIGTERM: $(tail -c 400 "$WORK/serve.log")"
echo "stalled readers: ok"
