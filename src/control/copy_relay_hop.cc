#include "control/copy_relay_hop.h"

namespace tpufleet {

const char* const kRelayHopProgram = R"PY(
import errno, hashlib, hmac, os, selectors, socket, sys, tempfile, threading, time
dest, name, size, mode, port, me, chain, wait, accept, shake, io, limit = sys.argv[1:13]
size, mode, port, me = int(size), int(mode, 8), int(port), int(me)
wait, accept, shake, io = float(wait), float(accept), float(shake), float(io)
end = time.monotonic() + float(limit)
chain = chain.split(',')
head = b''
while len(head) < 130:
    b = os.read(0, 130 - len(head))
    if not b:
        break
    head += b
try:
    key, want = bytes.fromhex(head[:64].decode()), head[65:129].decode()
except ValueError:
    sys.exit('no key on stdin')
MAGIC = b'TPUFLEET-RELAY-1\n'
alerts = [0]
def alert(what):
    alerts[0] += 1
    if alerts[0] <= 8:
        print('TPUFLEET-RELAY-ALERT', what, flush=True)
def mac(tag, a, b):
    return hmac.new(key, tag + a + b, hashlib.sha256).digest()
def recv_exact(s, n):
    b = b''
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            break
        b += c
    return b
# Connector: proves nothing and sends nothing until the listener has proved the key.
def prove_to(s):
    nc = os.urandom(32)
    s.sendall(MAGIC + nc)
    got = recv_exact(s, 64)
    if len(got) != 64 or not hmac.compare_digest(got[32:], mac(b'L', nc, got[:32])):
        return False
    s.sendall(mac(b'C', got[:32], nc))
    return True
# From this worker's own address, which the next hop expects (unless it has no such
# address: NAT).
def connect(to):
    try:
        return socket.create_connection((to, port), timeout=2, source_address=(chain[me], 0))
    except OSError as e:
        if e.errno != errno.EADDRNOTAVAIL:
            raise
    return socket.create_connection((to, port), timeout=2)
dest = os.path.expanduser(dest or '.')
if dest.endswith('/'):
    os.makedirs(dest, exist_ok=True)
if os.path.isdir(dest):
    dest = os.path.join(dest, name)
up = {}
def serve(listener):
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    pending = {}
    allowed = set(chain[:me])
    stop = min(end, time.monotonic() + accept)
    def drop(s, why):
        alert('unauthenticated-connector %s: %s' % (pending[s]['peer'], why))
        sel.unregister(s)
        s.close()
        del pending[s]
    while 'sock' not in up:
        now = time.monotonic()
        for s in [s for s, p in pending.items() if now >= p['until']]:
            drop(s, 'did not prove the key in %gs' % shake)
        if now >= stop:
            break
        until = min([stop] + [p['until'] for p in pending.values()])
        for k, _ in sel.select(max(0.0, until - now)):
            s = k.fileobj
            if s is listener:
                try:
                    c, peer = listener.accept()
                except OSError:
                    continue
                if peer[0] not in allowed:
                    alert('unauthenticated-connector %s: not an earlier worker of the chain' % peer[0])
                    c.close()
                elif len(pending) >= 16:
                    alert('unauthenticated-connector %s: too many connections' % peer[0])
                    c.close()
                else:
                    c.setblocking(False)
                    expires = time.monotonic() + shake  # not now + shake: select may have waited long
                    pending[c] = {'peer': peer[0], 'until': expires, 'buf': b'', 'expect': None}
                    sel.register(c, selectors.EVENT_READ)
                continue
            p = pending[s]
            try:
                data = s.recv(4096)
            except OSError:
                data = b''
            if not data:
                drop(s, 'closed without proving the key')
                continue
            p['buf'] += data
            if p['expect'] is None and len(p['buf']) >= len(MAGIC) + 32:
                if not p['buf'].startswith(MAGIC):
                    drop(s, 'sent bytes that are no relay greeting')
                    continue
                nc, nl = p['buf'][len(MAGIC):len(MAGIC) + 32], os.urandom(32)
                p['buf'], p['expect'] = p['buf'][len(MAGIC) + 32:], mac(b'C', nl, nc)
                try:
                    s.send(nl + mac(b'L', nc, nl))
                except OSError:
                    drop(s, 'went away')
                    continue
            if p['expect'] is not None and len(p['buf']) >= 32:
                if not hmac.compare_digest(p['buf'][:32], p['expect']):
                    drop(s, 'sent a wrong proof of the key')
                    continue
                sel.unregister(s)
                del pending[s]
                s.setblocking(True)
                up['sock'], up['first'] = s, p['buf'][32:]
                break
    for s in list(pending):
        drop(s, 'connected but did not prove the key')
    listener.close()
thread = None
if me > 0:
    listener = socket.socket(socket.AF_INET6 if ':' in chain[me] else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        try:
            listener.bind((chain[me], port))
        except OSError as e:
            if e.errno != errno.EADDRNOTAVAIL:
                raise
            listener.bind(('', port))  # an address this worker does not have (NAT)
    except OSError as e:
        sys.exit('cannot listen on port %d: %s' % (port, e.strerror))
    listener.listen(16)
    thread = threading.Thread(target=serve, args=(listener,), daemon=True)
    thread.start()
down = None
for j in range(me + 1, len(chain)):
    stop = min(end, time.monotonic() + wait)
    while down is None and time.monotonic() < stop:
        try:
            s = connect(chain[j])
        except OSError:
            time.sleep(0.05)
            continue
        s.settimeout(shake)
        try:
            ok = prove_to(s)
        except OSError:
            ok = False
        if ok:
            down = s
        else:
            s.close()
            alert('impostor-listener %s:%d: did not prove the key' % (chain[j], port))
            break
    if down is not None:
        break
if thread is not None:
    thread.join()
    if 'sock' not in up:
        sys.exit('no earlier worker of the chain connected and proved the key')
if down is not None:
    down.settimeout(io)
fd, tmp = tempfile.mkstemp(prefix=os.path.basename(dest) + '.tpufleet-tmp.', dir=os.path.dirname(dest) or '.')
def fail(why):
    os.unlink(tmp)
    sys.exit(why)
digest = hashlib.sha256()
buf = bytearray(1 << 20)
view = memoryview(buf)
got = 0
with os.fdopen(fd, 'wb') as out:
    first = up.get('first', b'')[:size]
    chunks = [first] if first else []
    sock = up.get('sock')
    if sock is not None:
        sock.settimeout(io)
    while True:
        if not chunks:
            if got >= size:
                break
            if time.monotonic() > end:
                fail('the relay ran past its deadline')
            want_n = min(len(buf), size - got)
            try:
                n = sock.recv_into(view[:want_n]) if sock is not None else os.readv(0, [view[:want_n]])
            except OSError as e:
                fail('upstream: %s' % (e or 'no data in %gs' % io))
            if not n:
                break
            chunks = [view[:n]]
        chunk = chunks.pop()
        out.write(chunk)
        digest.update(chunk)
        if down is not None:
            try:
                down.sendall(chunk)
            except OSError:
                down = None
        got += len(chunk)
if down is not None:
    down.close()
if got != size:
    fail('received %d of %d bytes' % (got, size))
if digest.hexdigest() != want:
    alert('digest-mismatch: received %d bytes with SHA-256 %s, not the source\'s' % (got, digest.hexdigest()))
    fail('what arrived is not the source file; it was deleted')
os.chmod(tmp, mode)
os.replace(tmp, dest)
print('TPUFLEET-RELAY', want, got)
)PY";

}  // namespace tpufleet
