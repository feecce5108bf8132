"""moto's DynamoDB server with one request at a time.

moto's own `moto_server` serves each request on its own thread, and its DynamoDB backend
takes no lock: a conditional PutItem checks its condition and then writes, and another
thread's PutItem can run between the two. Two concurrent claims of the same idempotency
key then both succeed, which DynamoDB never allows (conditional writes are atomic). Seen
in this project's tests under load: two records of one Lambda batch, sent with the same
key, both ran their side effect.

This launcher serves the same moto application with every request handled under one
lock, so each conditional write is atomic again. The server stays threaded, so idle
keep-alive connections do not block anyone.

It also forgets, after each request, the instances moto tracks for its dashboard
(/moto-api/data.json, which nothing here reads): moto keeps every model object it ever
made in a class-level list, and TransactWriteItems deep-copies each table it writes (to
roll back), so every transaction added a copy of every item of its table to that list
and the server grew by about 600 MB per 1,000 transactions on a 1,000-item table (19 GB
after a few runs of package batches' tests). The tables themselves are untouched.

Usage: python moto_serialized.py HOST PORT
"""

import os
import sys
import threading

from werkzeug.serving import run_simple

from moto.core.model_instances import reset_model_data
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


class Serialized:
    """A WSGI middleware that runs the application, response included, under one lock."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            try:
                return list(self.app(environ, start_response))
            finally:
                reset_model_data()


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, Serialized(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
