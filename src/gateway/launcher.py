"""Run kernel_gateway with no-delay on every socket it accepts, so the small
websocket frames of a round trip are not held back by Nagle's algorithm."""
import runpy

import tornado.httpserver

_handle_stream = tornado.httpserver.HTTPServer.handle_stream


def _handle_stream_nodelay(self, stream, address):
    try:
        stream.set_nodelay(True)
    except Exception:
        pass
    return _handle_stream(self, stream, address)


tornado.httpserver.HTTPServer.handle_stream = _handle_stream_nodelay
runpy.run_module("kernel_gateway", run_name="__main__", alter_sys=True)
