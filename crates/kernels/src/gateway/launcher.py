"""Run kernel_gateway with no-delay on every socket it accepts, so the small
websocket frames of a round trip are not held back by Nagle's algorithm.

tornado sets no-delay itself only while it finishes an HTTP response, and
turns it off again after: a kernel's channels websocket, upgraded by such a
response, would send with Nagle on, and every message that follows another
would wait for the client's delayed ACK (~40 ms a round trip with a client
that does not ACK at once). So no-delay stays on."""
import runpy

import tornado.httpserver
import tornado.iostream

_handle_stream = tornado.httpserver.HTTPServer.handle_stream


def _handle_stream_nodelay(self, stream, address):
    try:
        stream.set_nodelay(True)
    except Exception:
        pass
    return _handle_stream(self, stream, address)


_set_nodelay = tornado.iostream.IOStream.set_nodelay


def _keep_nodelay(self, value):
    _set_nodelay(self, True)


tornado.httpserver.HTTPServer.handle_stream = _handle_stream_nodelay
tornado.iostream.IOStream.set_nodelay = _keep_nodelay
runpy.run_module("kernel_gateway", run_name="__main__", alter_sys=True)
