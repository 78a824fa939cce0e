# The Hugging Face Hub's resolve endpoint for tests/bigmodel/tst_hubmodels.cpp, over a folder of
# repos (<root>/<org>/<name>/<files>): GET and HEAD of /ORG/NAME/resolve/REVISION/FILE with range
# requests, X-Repo-Commit and the Hub's X-Error-Code answers (401 RepoNotFound for a repo it does not
# have, as the Hub answers without a token; 401 GatedRepo for the gated repo without its bearer
# token; 404 RevisionNotFound / EntryNotFound). The gated repo's .safetensors files redirect to a
# storage host, /_storage/ under the name localhost, as the Hub sends large files to its CDN.
# Every request is logged as a JSON line: {"method", "path", "range", "auth"}.
# Usage: hub_server.py ROOT COMMIT LOG PORT_FILE GATED_REPO TOKEN (the port is written when listening)
import hashlib, http.server, json, os, re, sys
root, commit, log, port_file, gated, token = sys.argv[1:7]
class Hub(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def fail(self, status, code):
        self.send_response(status); self.send_header("X-Error-Code", code)
        self.send_header("Content-Length", "0"); self.end_headers()
    def answer(self, body_wanted):
        with open(log, "a") as out:
            out.write(json.dumps({"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                                  "auth": self.headers.get("Authorization")}) + "\n")
        storage = re.fullmatch(r"/_storage/([^/]+/[^/]+)/(.+)", self.path)
        if storage: # the storage host a gated shard redirects to: no token wanted (nor to be sent)
            return self.send_file(os.path.join(root, *storage.groups()), body_wanted)
        match = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", self.path)
        if not match:
            return self.fail(404, "RepoNotFound")
        repo, revision, name = match.groups()
        folder = os.path.join(root, repo)
        if not os.path.isdir(folder): # the Hub answers 401 without a token, as for a private repo
            return self.fail(401, "RepoNotFound")
        if repo == gated and self.headers.get("Authorization") != "Bearer " + token:
            return self.fail(401, "GatedRepo")
        if revision not in ("main", commit):
            return self.fail(404, "RevisionNotFound")
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            return self.fail(404, "EntryNotFound")
        if repo == gated and name.endswith(".safetensors"): # as the Hub sends large files to its storage host
            self.send_response(302)
            self.send_header("X-Repo-Commit", commit)
            self.send_header("Location", "http://localhost:%d/_storage/%s/%s" % (server.server_address[1], repo, name))
            self.send_header("Content-Length", "0")
            return self.end_headers()
        self.send_file(path, body_wanted)
    def send_file(self, path, body_wanted):
        data = open(path, "rb").read()
        status, body, extra = 200, data, {}
        wanted = self.headers.get("Range")
        if wanted:
            first, last = re.fullmatch(r"bytes=(\d+)-(\d*)", wanted).groups()
            first, last = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
            status, body = 206, data[first:last + 1]
            extra["Content-Range"] = "bytes %d-%d/%d" % (first, last, len(data))
        self.send_response(status)
        self.send_header("X-Repo-Commit", commit)
        self.send_header("ETag", '"%s"' % hashlib.sha256(data).hexdigest())
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(body)))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        if body_wanted:
            self.wfile.write(body)
    def do_GET(self): self.answer(True)
    def do_HEAD(self): self.answer(False)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
open(port_file + ".tmp", "w").write(str(server.server_address[1])); os.rename(port_file + ".tmp", port_file)
server.serve_forever()
