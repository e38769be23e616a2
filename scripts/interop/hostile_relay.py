"""A hostile Nostr relay on loopback, for the watcher's fault tests.

    python hostile_relay.py PORT WRAP_FILE

Every connection that sends a REQ is answered with abuse, one kind per connection, in order:
  1. a 2 MiB text frame (over the client's 1 MiB limit);
  2. a binary frame, text that is not JSON, JSON that is not an array, an unknown verb, an EVENT
     without an event, an EVENT whose event is garbage, a number too large for any type, nesting
     10,000 deep, a forged event (bad signature), an OK and a NOTICE nobody asked for, a CLOSED
     for a subscription that does not exist;
  then, on that connection and every later one, it behaves: EOSE for every REQ, then (live) the
  gift wrap in WRAP_FILE (a real one, to a watched pubkey), and OK for every EVENT.
It prints one line per connection to stdout.
"""

import asyncio
import json
import sys

import websockets

PORT = int(sys.argv[1])
WRAP = json.load(open(sys.argv[2]))
connections = 0


async def handle(socket):
    global connections
    connections += 1
    number = connections
    print(f"connection {number}", flush=True)
    try:
        async for message in socket:
            if isinstance(message, bytes):
                continue
            try:
                request = json.loads(message)
            except ValueError:
                continue
            if not isinstance(request, list) or not request:
                continue
            if request[0] == "EVENT" and len(request) > 1 and isinstance(request[1], dict):
                await socket.send(json.dumps(["OK", request[1].get("id", ""), True, ""]))
                continue
            if request[0] != "REQ" or len(request) < 2:
                continue
            subscription = request[1]
            if number == 1:
                await socket.send("[" + " " * (2 * 1024 * 1024) + "]")
                continue
            if number == 2:
                forged = dict(WRAP)
                forged["content"] = forged["content"][::-1]
                for abuse in [
                    b"\x00\x01binary",
                    "this is not json",
                    json.dumps({"an": "object"}),
                    json.dumps(["WHATEVER", subscription]),
                    json.dumps(["EVENT", subscription]),
                    json.dumps(["EVENT", subscription, {"id": 5, "kind": "x"}]),
                    '["EVENT","' + subscription + '",{"created_at":' + "9" * 400 + "}]",
                    "[" * 10000 + "]" * 10000,
                    json.dumps(["EVENT", subscription, forged]),
                    json.dumps(["OK", "00" * 32, True, ""]),
                    json.dumps(["NOTICE", "x" * 100000]),
                    json.dumps(["CLOSED", "no-such-subscription", "error: nothing"]),
                ]:
                    await socket.send(abuse)
            await socket.send(json.dumps(["EOSE", subscription]))
            await asyncio.sleep(0.2)
            await socket.send(json.dumps(["EVENT", subscription, WRAP]))
    except websockets.ConnectionClosed:
        pass


async def main():
    async with websockets.serve(handle, "127.0.0.1", PORT, max_size=None):
        print("ready", flush=True)
        await asyncio.Future()


asyncio.run(main())
