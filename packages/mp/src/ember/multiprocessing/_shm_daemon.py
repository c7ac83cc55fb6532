"""The cleanup daemon of the `file_system` sharing strategy (stdlib only).

ember.multiprocessing starts one per process tree, as `python -I _shm_daemon.py
ADDRESS SHM_DIR PREFIX`, in its own session and re-parented to init (a Ctrl-C, a
kill of the parent's process group, or of its children, does not reach it). Every
process that creates or maps a named segment keeps one connection to it and writes
lines on it:

    H name    this process maps `name` (sent before a creator creates the file)
    R name    this process dropped its mapping of `name`
    I name    a handle to `name` is in flight (pickled, not yet received)
    D name    an in-flight handle to `name` was received

The daemon unlinks SHM_DIR/name as soon as no connected process holds it and no
handle to it is in flight. A process that dies, even by SIGKILL, closes its
connection, which drops everything it held. When the last client is gone it
unlinks every name it still knows (handles lost in flight included; it waits a
couple of seconds first when some are in flight, for a receiver to connect) and
exits. So nothing is left in SHM_DIR, whatever happens to the processes.
"""
import os
import re
import selectors
import signal
import socket
import struct
import sys
import time

NO_CLIENT_TIMEOUT = 30.0     # exit if nobody connects this long after the start
IN_FLIGHT_GRACE = 2.0        # after the last client left with handles in flight


def main(argv):
    address = bytes.fromhex(argv[1])
    shm_dir, prefix = argv[2], argv[3]
    valid = re.compile(re.escape(prefix) + r"[A-Za-z0-9_.-]+\Z")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(64)
    server.setblocking(False)
    # Detach: the process that started us exits now, so this one belongs to init
    # (or a subreaper), not to the ember process: killing that process's children or
    # its process group leaves the daemon alive to clean up.
    if os.fork() != 0:
        os._exit(0)
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ)
    sys.stdout.write(f"ready {os.getpid()}\n")
    sys.stdout.flush()
    sys.stdout.close()
    os.close(1)

    uid = os.getuid()
    clients = {}       # socket -> [pending bytes, set of names held]
    holders = {}       # name -> set of sockets holding it
    in_flight = {}     # name -> handles sent minus handles received (may dip below 0)
    started = time.monotonic()
    had_client = False
    empty_since = None

    def unlink(name):
        try:
            os.unlink(os.path.join(shm_dir, name))
        except OSError:
            pass

    def settle(name):
        if not holders.get(name) and in_flight.get(name, 0) <= 0:
            holders.pop(name, None)
            in_flight.pop(name, None)
            unlink(name)

    def handle(conn, line):
        op, _, name = line.partition(" ")
        if not valid.match(name):
            return
        held = clients[conn][1]
        if op == "H":
            holders.setdefault(name, set()).add(conn)
            held.add(name)
        elif op == "R":
            holders.get(name, set()).discard(conn)
            held.discard(name)
            settle(name)
        elif op == "I":
            in_flight[name] = in_flight.get(name, 0) + 1
            holders.setdefault(name, set())
        elif op == "D":
            in_flight[name] = in_flight.get(name, 0) - 1
            settle(name)

    def drop(conn):
        sel.unregister(conn)
        _, held = clients.pop(conn)
        conn.close()
        for name in held:
            holders.get(name, set()).discard(conn)
            settle(name)

    while True:
        if clients:
            timeout = None
        elif not had_client:
            timeout = max(0.0, NO_CLIENT_TIMEOUT - (time.monotonic() - started))
            if timeout == 0.0:
                break
        else:
            grace = IN_FLIGHT_GRACE if any(v > 0 for v in in_flight.values()) else 0.0
            timeout = max(0.0, grace - (time.monotonic() - empty_since))
            if timeout == 0.0:
                break
        for key, _ in sel.select(timeout):
            sock = key.fileobj
            if sock is server:
                try:
                    conn, _ = server.accept()
                except OSError:
                    continue
                cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                       struct.calcsize("3i"))
                if struct.unpack("3i", cred)[1] != uid:
                    conn.close()
                    continue
                conn.setblocking(False)
                clients[conn] = [b"", set()]
                sel.register(conn, selectors.EVENT_READ)
                had_client = True
                continue
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                drop(sock)
                if not clients:
                    empty_since = time.monotonic()
                continue
            buf = clients[sock][0] + data
            *lines, rest = buf.split(b"\n")
            clients[sock][0] = rest
            for line in lines:
                handle(sock, line.decode("ascii", "replace"))
    # the last client is gone: nothing can map these names any more
    for name in set(holders) | set(in_flight):
        unlink(name)


if __name__ == "__main__":
    main(sys.argv)
