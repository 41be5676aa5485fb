"""A process that speaks just enough of the peer protocol to break it on purpose, for the
unit tests of acemq_interop.peers.process (the pipes, the bounds, the faults).

It answers `hello` and then every command with `{"ok": true}`, except as its arguments say:
`hang:OP` never answers OP; `lose:OP` answers OP with nothing but a `connection_lost` event
for the command's requester; `exit:OP` writes a line to stderr and exits with status 3 at
OP; `deaf` stops reading stdin after hello; `write:TEXT` writes TEXT (Python escapes
allowed) as raw bytes after hello; `huge` writes a 5 MiB line after hello.
Issue 20's hostile ones: `fork` starts a child that keeps stdout and stderr open and sleeps
(its pid on stderr as `child PID`); `nested` writes a line of JSON nested 100000 deep;
`log-url` writes the URL hello gave it to stderr; `env` writes its environment to stderr
(`ENV KEY=VALUE`); `flood:MIB` writes that many MiB to stderr.
"""
import json
import os
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
            elif rule == "fork":
                child = os.fork()
                if child == 0:
                    time.sleep(3600)
                    os._exit(0)
                print(f"child {child}", file=sys.stderr, flush=True)
            elif rule == "nested":
                write(b"[" * 100000 + b"]" * 100000 + b"\n")
            elif rule == "log-url":
                print(f"connecting to {command.get('amqp_url')}", file=sys.stderr, flush=True)
            elif rule == "env":
                for key, value in os.environ.items():
                    print(f"ENV {key}={value}", file=sys.stderr, flush=True)
            elif rule.startswith("flood:"):
                chunk = ("x" * 1023 + "\n") * 1024
                for _ in range(int(rule[len("flood:"):])):
                    sys.stderr.write(chunk)
                sys.stderr.flush()
                print("flood done", file=sys.stderr, flush=True)
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
