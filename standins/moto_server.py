"""A moto S3 server on loopback for the object-storage tests and benchmarks, in a process of its own.

``python -m standins.moto_server`` serves moto's S3 API on 127.0.0.1 (a free
port, printed as ``port <n>`` once it listens) until it is terminated. Its own process keeps
the pytest process free of server threads (a test process that forks must have none, see
``bulk.can_fork``) and gives the server a core of its own.

One change to moto's server, for speed only: moto resolves the service of every request
by listing its own package folder (``moto.backends.list_of_moto_modules``); here that
list is made once.
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    import moto.backends

    modules = tuple(moto.backends.list_of_moto_modules())
    moto.backends.list_of_moto_modules = lambda: modules
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    print(f"port {server.get_host_and_port()[1]}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
