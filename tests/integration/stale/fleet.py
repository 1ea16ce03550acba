"""The processes of the stale-read harness (stale_test.py): real memcached
servers that can be frozen, killed or warm-restarted, a TCP relay that can
black-hole a server, and memshard instances on one shared config. Every
wait is bounded, so a process that never comes up fails the run instead of
hanging it."""

import os
import signal
import socket
import subprocess
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def wait_until(pred, limit, step=0.02):
    end = time.monotonic() + limit
    while not pred():
        if time.monotonic() > end:
            return False
        time.sleep(step)
    return True


class Memcached:
    """One memcached on a fixed port, so that a restart comes back where
    memshard's config says it is. `warm` gives it a memory file in
    /dev/shm: SIGUSR1 then saves the cache and the next start reloads it."""

    def __init__(self, warm=False):
        self.port = free_port()
        self.warm_file = None
        if warm:
            self.warm_file = "/dev/shm/memshard-stale-%d-%d" % (os.getpid(), self.port)
        self.proc = None
        self.start()

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self):
        argv = ["memcached", "-p", str(self.port), "-l", "127.0.0.1", "-U", "0", "-t", "1",
                "-m", "64"]
        if self.warm_file:
            argv += ["-e", self.warm_file]
        if os.geteuid() == 0:
            argv += ["-u", "nobody"]  # memcached refuses to run as root
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        if not wait_until(lambda: self.proc.poll() is not None or listening(self.port), 10):
            raise RuntimeError("memcached on %d did not start" % self.port)
        if self.proc.poll() is not None:
            raise RuntimeError("memcached on %d exited at start" % self.port)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)

    def warm_stop(self):
        """SIGUSR1: memcached saves its memory file and exits. Returns when
        it has, so the next start finds the file complete."""
        self.signal(signal.SIGUSR1)
        self.proc.wait(10)
        return time.time()

    def close(self):
        self.kill()  # SIGKILL ends a frozen (SIGSTOPped) process too
        if self.warm_file:
            for path in (self.warm_file, self.warm_file + ".meta"):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass


class Relay:
    """A TCP relay memshard's config names instead of the server. cut()
    black-holes it as a network partition would: bytes in both directions
    are read and thrown away, no FIN or RST is passed on, so memshard sees
    only silence (its timeouts), not a refusal. heal() forwards again."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.cut_now = False
        self.closing = False
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.pairs = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def cut(self):
        self.cut_now = True

    def heal(self):
        self.cut_now = False

    def _accept(self):
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=1)
            except OSError:
                client.close()  # the server is down: memshard sees its connection closed
                continue
            with self.lock:
                self.pairs.append((client, server))
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src, dst):
        src.settimeout(0.2)  # so that close() is noticed
        try:
            while not self.closing:
                try:
                    data = src.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    break
                if not self.cut_now:
                    dst.sendall(data)
        except OSError:
            pass
        # One side closed: close both, unless the link is cut, where the
        # close would not cross it either. The other pump then ends too.
        while self.cut_now and not self.closing:
            time.sleep(0.05)
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.closing = True
        self.listener.close()
        with self.lock:
            for pair in self.pairs:
                for s in pair:
                    s.close()


class Memshard:
    """One memshard instance: the shared config text with its own listen
    port put in for LISTEN, and its own stats port."""

    def __init__(self, binary, config_text, threads=2):
        self.dir = tempfile.mkdtemp(prefix="memshard-stale-")
        self.port = free_port()
        self.stats_port = free_port()
        self.config = os.path.join(self.dir, "memshard.yml")
        with open(self.config, "w") as f:
            f.write(config_text.replace("LISTEN", "127.0.0.1:%d" % self.port))
        self.log = os.path.join(self.dir, "memshard.log")
        self.proc = subprocess.Popen(
            [binary, "-c", self.config, "-s", str(self.stats_port), "--threads", str(threads),
             "--drain-timeout", "500", "-v", "5"],
            stdin=subprocess.DEVNULL, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)
        if not wait_until(lambda: self.proc.poll() is not None or listening(self.port), 10) \
                or self.proc.poll() is not None:
            raise RuntimeError("memshard did not start:\n" + self.log_text()[-3000:])

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def metric_sum(self, name):
        """The sum of one /metrics family over its labels (0 if absent)."""
        try:
            with socket.create_connection(("127.0.0.1", self.stats_port), timeout=2) as s:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
        except OSError:
            return 0
        total = 0
        for line in data.decode(errors="replace").splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                total += float(line.rsplit(" ", 1)[1])
        return int(total)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        subprocess.run(["rm", "-rf", self.dir], check=False)
