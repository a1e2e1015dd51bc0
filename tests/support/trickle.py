"""An engine that never finishes some answers, for integration tests of
kvgate's deadlines: python3 trickle.py PORT SECONDS TARGET... serves HTTP/1.1
on 127.0.0.1:PORT. A request whose path is a TARGET (or any POST, when a
TARGET is the word POST) gets a 200 head with a chunked body and then one
byte every SECONDS, until the client closes the connection. GET /v1/models
lists sim-model; anything else is an empty 404. Stopped by its PID."""
import socketserver
import sys
import time

PORT, EVERY, TARGETS = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
MODELS = b'{"object":"list","data":[{"id":"sim-model","object":"model"}]}'


class Handler(socketserver.StreamRequestHandler):
    def answer(self, status, body):
        self.wfile.write(b"HTTP/1.1 %s\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\n\r\n%s" % (status, len(body), body))
        self.wfile.flush()

    def trickle(self):
        self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"
                         b"transfer-encoding: chunked\r\n\r\n")
        try:
            while True:
                self.wfile.write(b"1\r\n#\r\n")
                self.wfile.flush()
                time.sleep(EVERY)
        except OSError:
            return

    def handle(self):
        while True:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                c = self.rfile.read(1)
                if not c:
                    return
                head += c
            n = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":")[1])
            self.rfile.read(n)
            method, path = head.decode("latin-1").split(" ")[:2]
            if path in TARGETS or (method == "POST" and "POST" in TARGETS):
                return self.trickle()
            if path == "/v1/models":
                self.answer(b"200 OK", MODELS)
            else:
                self.answer(b"404 Not Found", b"")


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


Server(("127.0.0.1", PORT), Handler).serve_forever()
