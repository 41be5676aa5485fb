"""A process that speaks just enough of the peer protocol to break it on purpose, for the
unit tests of acemq_interop.peers.process (the pipes, the bounds, the faults).

It answers `hello` and then every command with `{"ok": true}`, except as its arguments say:
`hang:OP` never answers OP; `lose:OP` answers OP with nothing but a `connection_lost` event
for the command's requester; `exit:OP` writes a line to stderr and exits with status 3 at
OP; `deaf` stops reading stdin after hello; `write:TEXT` writes TEXT (Python escapes
allowed) as raw bytes after hello; `huge` writes a 5 MiB line after hello.
"""
import json
import sys
import time

rules = sys.argv[1:]
out = sys.stdout.buffer


def write(data: bytes) -> None:
    out.write(data)
    out.flush()


for line in sys.stdin:
    command = json.loads(line)
    op = command["op"]
    if op == "hello":
        write(json.dumps({"id": command["id"], "ok": True, "protocol": 2, "peer": "scripted", "language": "Python",
                          "binding": "none", "client": "none", "profiles": ["current"], "mutants": [],
                          "capabilities": ["request", "respond", "gather"]}).encode() + b"\n")
        for rule in rules:
            if rule.startswith("write:"):
                write(rule[len("write:"):].encode("latin-1").decode("unicode_escape").encode("latin-1"))
            elif rule == "huge":
                write(b'{"event": "handled", "responder": "' + b"x" * (5 * 1024 * 1024) + b'"}\n')
        if "deaf" in rules:
            time.sleep(3600)
        continue
    if f"hang:{op}" in rules:
        continue
    if f"lose:{op}" in rules:
        write(json.dumps({"event": "connection_lost", "requester": command.get("requester"),
                          "reason": "320 CONNECTION_FORCED - Closed via management plugin"}).encode() + b"\n")
        continue
    if f"exit:{op}" in rules:
        print("scripted peer: going away on purpose", file=sys.stderr, flush=True)
        sys.exit(3)
    write(json.dumps({"id": command["id"], "ok": True}).encode() + b"\n")
    if op == "shutdown":
        break
