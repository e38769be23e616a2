"""rust-nostr's LocalRelay on loopback, for tests: a second relay implementation nobody here wrote,
able to demand NIP-42 AUTH.

    python rust_nostr_relay.py PORT [--auth read|write|both] [--max-reqs N]

Prints the relay URL once it listens, then runs until killed.
"""
import asyncio
import sys

import nostr_sdk as ns


async def main() -> int:
    port = int(sys.argv[1])
    builder = ns.LocalRelayBuilder().addr("127.0.0.1").port(port)
    if "--auth" in sys.argv:
        mode = sys.argv[sys.argv.index("--auth") + 1].upper()
        builder = builder.nip42(ns.LocalRelayBuilderNip42(mode=getattr(ns.LocalRelayBuilderNip42Mode, mode)))
    if "--max-reqs" in sys.argv:
        max_reqs = int(sys.argv[sys.argv.index("--max-reqs") + 1])
        builder = builder.rate_limit(ns.RateLimit(max_reqs=max_reqs, notes_per_minute=100_000))
    relay = builder.build()
    await relay.run()
    print(await relay.url(), flush=True)
    await asyncio.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
