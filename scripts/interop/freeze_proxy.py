"""A TCP proxy on loopback that can go silent, for the gateway's database-partition test.

    python freeze_proxy.py LISTEN_PORT UPSTREAM_PORT

It forwards every connection to 127.0.0.1:UPSTREAM_PORT. SIGUSR1 freezes it: nothing is forwarded
either way and new connections are accepted but left unanswered, as when the database host drops
off the network without resetting anything. SIGUSR2 thaws it: what was held back is forwarded.
It prints "ready" once listening.
"""

import asyncio
import signal
import sys

LISTEN_PORT = int(sys.argv[1])
UPSTREAM_PORT = int(sys.argv[2])
thawed = asyncio.Event()


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            await thawed.wait()
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(client_reader, client_writer):
    await thawed.wait()
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", UPSTREAM_PORT)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))


async def main():
    loop = asyncio.get_running_loop()
    thawed.set()
    loop.add_signal_handler(signal.SIGUSR1, thawed.clear)
    loop.add_signal_handler(signal.SIGUSR2, thawed.set)
    server = await asyncio.start_server(handle, "127.0.0.1", LISTEN_PORT)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
