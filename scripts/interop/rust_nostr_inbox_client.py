"""rust-nostr's Client against a relay, as a NIP-17 sender and recipient would use it: publishes a
gift wrap, then reads the recipient's gift wraps with the recipient's key, answering the relay's
NIP-42 AUTH as rust-nostr does on its own.

    python rust_nostr_inbox_client.py RELAY_URL WRAP_JSON RECIPIENT_SECRET_HEX

Prints one JSON object: {"sent": bool, "send_error": str|null, "anonymous": [ids], "recipient": [ids]}
where "anonymous" is what a client with no key reads and "recipient" what the recipient reads.
"""
import asyncio
import json
import os
import sys
from datetime import timedelta

import nostr_sdk as ns


class KeysAuthenticator(ns.Authenticator):
    """Answers NIP-42 challenges with a key: a kind 22242 event naming the relay and the challenge,
    built and signed by rust-nostr."""

    def __init__(self, keys: ns.Keys):
        self.keys = keys

    async def make_auth_event(self, relay_url: ns.RelayUrl, challenge: str):
        tags = [ns.Tag.parse(["relay", str(relay_url)]), ns.Tag.parse(["challenge", challenge])]
        unsigned = ns.EventBuilder(ns.Kind(22242), "").tags(tags).finalize_unsigned(self.keys.public_key())
        return await unsigned.sign_async(self.keys)


async def read(url: str, recipient: ns.PublicKey, keys: "ns.Keys | None") -> list:
    builder = ns.ClientBuilder()
    if keys is not None:
        builder = builder.authenticator(KeysAuthenticator(keys))
    client = builder.build()
    await client.add_relay(ns.RelayUrl.parse(url))
    await client.connect()
    flt = ns.Filter().kind(ns.Kind(1059)).pubkey(recipient)
    # A refused REQ ends the fetch with what it read: nothing.
    events = await client.fetch_events(ns.ReqTarget.auto([flt]), timedelta(seconds=5))
    ids = [event.id().to_hex() for event in events]
    await client.shutdown()
    return ids


async def main() -> int:
    # rust-nostr calls the authenticator back from its own threads: it needs this loop to run on.
    ns.uniffi_set_event_loop(asyncio.get_running_loop())
    url, wrap_json, secret = sys.argv[1], sys.argv[2], sys.argv[3]
    wrap = ns.Event.from_json(wrap_json)
    recipient_keys = ns.Keys.parse(secret)
    sender = ns.ClientBuilder().build()
    await sender.add_relay(ns.RelayUrl.parse(url))
    await sender.connect()
    output = await sender.send_event(wrap)
    sent = len(output.success) > 0
    error = None if sent else json.dumps({str(k): v for k, v in output.failed.items()})
    await sender.shutdown()
    anonymous = await read(url, recipient_keys.public_key(), None)
    own = await read(url, recipient_keys.public_key(), recipient_keys)
    print(json.dumps({"sent": sent, "send_error": error, "anonymous": anonymous, "recipient": own}), flush=True)
    return 0


if __name__ == "__main__":
    code = asyncio.run(main())
    # Straight out: tearing the interpreter down while rust-nostr's threads may still hold an
    # authenticator callback crashes it (SIGSEGV) after the answer was printed.
    sys.stdout.flush()
    os._exit(code)
