# cudoctor's rendezvous probe: resolves MASTER_ADDR, tries a TCP connection to
# MASTER_ADDR:MASTER_PORT, and when MASTER_ADDR is an address of this machine forms a two-rank
# gloo group on it (two threads, an ephemeral store port, so a job's own MASTER_PORT is never
# taken) and runs one all-reduce. CPU only; prints one JSON object.
import json
import os
import socket
import sys
import threading
import time

budget = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
out = {"resolved": [], "local": False}
addr = os.environ.get("MASTER_ADDR", "")
port = os.environ.get("MASTER_PORT", "")
started = time.time()


def done():
    out["elapsed_s"] = round(time.time() - started, 3)
    print(json.dumps(out))
    sys.exit(0)


try:
    infos = socket.getaddrinfo(addr, int(port), type=socket.SOCK_STREAM)
    out["resolved"] = sorted({i[4][0] for i in infos})
except (OSError, ValueError) as e:
    out["error"] = "MASTER_ADDR=%s MASTER_PORT=%s does not resolve: %s" % (addr, port, e)
    done()

for a in out["resolved"]:
    family = socket.AF_INET6 if ":" in a else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        s.bind((a, 0))
        out["local"] = True
        break
    except OSError:
        pass
    finally:
        s.close()

try:
    c = socket.create_connection((addr, int(port)), timeout=min(5.0, budget / 4))
    c.close()
    out["tcp"] = "connected"
except ConnectionRefusedError:
    out["tcp"] = "refused"
except socket.timeout:
    out["tcp"] = "timed_out"
except OSError as e:
    out["tcp"] = "failed"
    out["tcp_error"] = str(e)

if not out["local"]:
    done()

try:
    from datetime import timedelta

    import torch
    import torch.distributed as dist
except Exception as e:  # noqa: BLE001 - any import failure is the finding
    out["gloo_ok"] = False
    out["error"] = "import torch.distributed: %s: %s" % (type(e).__name__, e)
    done()

timeout = timedelta(seconds=max(2.0, budget / 2))
errors = []
results = []

try:
    # The store's server; the two ranks join it as clients.
    master = dist.TCPStore(addr, 0, 2, True, timeout=timeout, wait_for_workers=False)
    store_port = master.port
except Exception as e:  # noqa: BLE001
    out["gloo_ok"] = False
    out["error"] = "TCPStore on %s: %s" % (addr, e)
    done()


def rank_on(r):
    try:
        store = dist.TCPStore(addr, store_port, 2, False, timeout=timeout)
        prefix = dist.PrefixStore("cudoctor", store)
        # This constructor takes its devices from GLOO_SOCKET_IFNAME, as init_process_group does.
        pg = dist.ProcessGroupGloo(prefix, r, 2, timeout)
        t = torch.ones(4) * (r + 1)
        pg.allreduce([t]).wait()
        results.append(float(t[0]))
    except Exception as e:  # noqa: BLE001
        text = str(e).strip()
        errors.append("%s: %s" % (type(e).__name__, text.splitlines()[0] if text else ""))


threads = [threading.Thread(target=rank_on, args=(r,), daemon=True) for r in (0, 1)]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout.total_seconds() + 5)
out["gloo_socket_ifname"] = os.environ.get("GLOO_SOCKET_IFNAME")
if errors:
    out["gloo_ok"] = False
    out["error"] = errors[0]
elif results == [3.0, 3.0]:
    out["gloo_ok"] = True
else:
    out["gloo_ok"] = False
    out["error"] = "the gloo all-reduce did not finish in %.0f s" % timeout.total_seconds()
done()
