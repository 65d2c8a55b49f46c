"""A read-only npm registry on 127.0.0.1 serving packed tarballs, so that
`npx -y cellbox mcp` can be tried exactly as a user types it, in an empty
folder, with npm's own resolution of the platform package (optionalDependencies
chosen by os/cpu/libc) and npx's own cache, without the public registry.

Usage: npm_registry.py PORT_FILE TARBALL...
Serves a packument for every package whose tarball is given, and for every
optional dependency those packages name (metadata only: npm never asks for the
tarball of a platform it skips). Writes the port it listens on to PORT_FILE,
then serves until killed.
"""
import base64
import hashlib
import http.server
import io
import json
import sys
import tarfile
import urllib.parse

PORT_FILE, TARBALLS = sys.argv[1], sys.argv[2:]


def manifest_of(path):
    with tarfile.open(path, "r:gz") as archive:
        member = archive.extractfile("package/package.json")
        return json.load(io.TextIOWrapper(member, encoding="utf-8"))


packages = {}  # name -> (manifest, tarball bytes or None)
for path in TARBALLS:
    with open(path, "rb") as handle:
        data = handle.read()
    manifest = manifest_of(path)
    packages[manifest["name"]] = (manifest, data)
for manifest, _ in list(packages.values()):
    for name, version in manifest.get("optionalDependencies", {}).items():
        packages.setdefault(name, ({"name": name, "version": version, "os": ["none"], "cpu": ["none"]}, None))


def packument(name, base):
    manifest, data = packages[name]
    version = dict(manifest)
    dist = {"tarball": "%s/-/%s" % (base, urllib.parse.quote(name, safe=""))}
    if data is not None:
        dist["integrity"] = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        dist["shasum"] = hashlib.sha1(data).hexdigest()
    version["dist"] = dist
    version["_id"] = "%s@%s" % (name, manifest["version"])
    return {"name": name, "dist-tags": {"latest": manifest["version"]}, "versions": {manifest["version"]: version}}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = urllib.parse.unquote(self.path.split("?", 1)[0]).lstrip("/")
        base = "http://%s" % self.headers.get("Host", "127.0.0.1")
        if path.startswith("-/") and path[2:] in packages and packages[path[2:]][1] is not None:
            body, kind = packages[path[2:]][1], "application/octet-stream"
        elif path in packages:
            body, kind = json.dumps(packument(path, base)).encode(), "application/json"
        else:
            self.send_error(404, "no package %s here" % path)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as handle:
    handle.write(str(server.server_address[1]))
__import__("os").replace(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
