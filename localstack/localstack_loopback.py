"""LocalStack's host runtime, listening on the address GATEWAY_LISTEN names.

LocalStack 4.14's default gateway (Twisted) ignores the host part of GATEWAY_LISTEN for IPv4
and listens on every interface (`runtime/server/twisted.py`: "TODO: interface = host?"), so
`GATEWAY_LISTEN=127.0.0.1:4566` still served 0.0.0.0:4566. This launcher passes the host to
Twisted's TCP4ServerEndpoint, then runs `localstack.runtime.main` unchanged, so the emulator
is reachable from this machine only. Usage: python localstack_loopback.py
"""

import runpy

from twisted.internet import endpoints

_tcp4 = endpoints.TCP4ServerEndpoint


def _loopback_tcp4(reactor, port, backlog=50, interface=""):
    """A TCP4ServerEndpoint that defaults to 127.0.0.1 instead of every interface."""
    return _tcp4(reactor, port, backlog=backlog, interface=interface or "127.0.0.1")


endpoints.TCP4ServerEndpoint = _loopback_tcp4

if __name__ == "__main__":
    runpy.run_module("localstack.runtime.main", run_name="__main__", alter_sys=True)
