#!/usr/bin/env python3
"""Batch interop peer backed by rust-nostr (nostr-sdk Python bindings, module ``nostr_sdk``).

Usage (from the repo root):

    .venv/bin/python scripts/interop/rust_nostr_peer.py < requests.json > responses.json

stdin is a JSON array of request objects; stdout is a JSON array of responses of
the same length and order. Each response is ``{"ok": true, "result": <value>}`` or
``{"ok": false, "error": "<str(exception)>"}``; one failing request does not stop
the others. Exit status is 0 unless stdin is not a JSON array (then 2, message on
stderr). Nothing but the response array is written to stdout.

All keys, ids and pubkeys are lowercase hex unless noted. Ops (field ``op``):

  public_key     {secret_key}                         -> x-only pubkey hex
  sign_event     {secret_key, created_at, kind, tags, content}
                                                      -> signed event JSON string (Event.as_json())
  verify_event   {event_json}                         -> bool (id AND signature; unparseable -> false)
  nip44_encrypt  {secret_key, public_key, plaintext}  -> NIP-44 v2 payload (base64)
  nip44_decrypt  {secret_key, public_key, payload}    -> plaintext (error response on failure)
  gift_wrap      {sender_secret_key, receiver_pubkey, rumor: {created_at, kind, tags, content}}
                                                      -> kind-1059 gift wrap event JSON string
  unwrap_gift    {receiver_secret_key, wrap_json}     -> {"sender": hex, "rumor_json": str}
  nip98_header   {secret_key, url, method, body_utf8 (str|null), created_at (optional int)}
                                                      -> "Nostr <base64(event JSON)>"
  nip19_encode   {kind: "npub"|"nsec"|"note", hex}    -> bech32 string
  nip19_decode   {bech32}                             -> {"kind": "npub"|"nsec"|"note", "hex": ...}

Only nostr_sdk and the standard library are used. Every nostr_sdk call here is the
synchronous variant (``Keys`` is itself a ``NostrSigner``), so no asyncio is needed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from typing import Any, Callable

import nostr_sdk as ns


def _keys(secret_hex: str) -> ns.Keys:
    return ns.Keys(ns.SecretKey.parse(secret_hex))


def _builder(kind: int, tags: list[list[str]], content: str, created_at: int | None) -> ns.EventBuilder:
    b = ns.EventBuilder(ns.Kind(kind), content).tags([ns.Tag.parse(t) for t in tags])
    if created_at is not None:
        b = b.custom_created_at(ns.Timestamp.from_secs(created_at))
    return b


def op_public_key(r: dict) -> str:
    return _keys(r["secret_key"]).public_key().to_hex()


def op_sign_event(r: dict) -> str:
    # EventBuilder(...).tags(...).custom_created_at(...).finalize(Keys) -> Event.as_json()
    keys = _keys(r["secret_key"])
    return _builder(r["kind"], r["tags"], r["content"], r["created_at"]).finalize(keys).as_json()


def op_verify_event(r: dict) -> bool:
    try:
        event = ns.Event.from_json(r["event_json"])
    except Exception:
        return False
    # Event.verify() checks the id (recomputed from the serialization) and the signature.
    return bool(event.verify())


def op_nip44_encrypt(r: dict) -> str:
    return ns.nip44_encrypt(
        ns.SecretKey.parse(r["secret_key"]), ns.PublicKey.parse(r["public_key"]),
        r["plaintext"], ns.Nip44Version.V2,
    )


def op_nip44_decrypt(r: dict) -> str:
    return ns.nip44_decrypt(
        ns.SecretKey.parse(r["secret_key"]), ns.PublicKey.parse(r["public_key"]), r["payload"],
    )


def op_gift_wrap(r: dict) -> str:
    sender = _keys(r["sender_secret_key"])
    rm = r["rumor"]
    rumor = _builder(rm["kind"], rm["tags"], rm["content"], rm["created_at"]).finalize_unsigned(sender.public_key())
    wrap = ns.nip59_make_gift_wrap(sender, ns.PublicKey.parse(r["receiver_pubkey"]), rumor)
    return wrap.as_json()


def op_unwrap_gift(r: dict) -> dict:
    keys = _keys(r["receiver_secret_key"])
    unwrapped = ns.UnwrappedGift.from_gift_wrap(keys, ns.Event.from_json(r["wrap_json"]))
    return {"sender": unwrapped.sender().to_hex(), "rumor_json": unwrapped.rumor().as_json()}


def op_nip98_header(r: dict) -> str:
    # Fallback path: nostr-sdk 0.45.1's Python bindings expose no HttpData /
    # EventBuilder.http_auth / NIP-98 helper, so this mirrors rust-nostr's
    # HttpData -> EventBuilder::http_auth: kind 27235, empty content, tags
    # ["u", url], ["method", method] and, only when a body is given,
    # ["payload", sha256(body) hex] in that order; signed with nostr_sdk; header
    # value "Nostr " + standard padded base64 of Event.as_json() (as rust-nostr's
    # HttpData auth header builder does).
    tags = [["u", r["url"]], ["method", r["method"]]]
    body = r.get("body_utf8")
    if body is not None:
        tags.append(["payload", hashlib.sha256(body.encode("utf-8")).hexdigest()])
    event = _builder(27235, tags, "", r.get("created_at")).finalize(_keys(r["secret_key"]))
    return "Nostr " + base64.b64encode(event.as_json().encode("utf-8")).decode("ascii")


def op_nip19_encode(r: dict) -> str:
    kind, hx = r["kind"], r["hex"]
    if kind == "npub":
        return ns.PublicKey.parse(hx).to_bech32()
    if kind == "nsec":
        return ns.SecretKey.parse(hx).to_bech32()
    if kind == "note":
        return ns.EventId.parse(hx).to_bech32()
    raise ValueError(f"unsupported nip19 kind: {kind!r}")


def op_nip19_decode(r: dict) -> dict:
    value = ns.Nip19.from_bech32(r["bech32"]).as_enum()
    if value.is_pubkey():
        return {"kind": "npub", "hex": value.npub.to_hex()}
    if value.is_secret():
        return {"kind": "nsec", "hex": value.nsec.to_hex()}
    if value.is_note():
        return {"kind": "note", "hex": value.event_id.to_hex()}
    raise ValueError(f"unsupported nip19 entity: {value!r}")


OPS: dict[str, Callable[[dict], Any]] = {
    name[3:]: fn for name, fn in globals().items() if name.startswith("op_") and callable(fn)
}


def handle(request: Any) -> dict:
    try:
        if not isinstance(request, dict):
            raise ValueError("request must be a JSON object")
        op = request.get("op")
        if op not in OPS:
            raise ValueError(f"unknown op: {op!r}")
        return {"ok": True, "result": OPS[op](request)}
    except Exception as exc:  # one bad request must not stop the batch
        return {"ok": False, "error": str(exc) or type(exc).__name__}


def main() -> int:
    try:
        requests = json.loads(sys.stdin.buffer.read())  # bytes: UTF-8 regardless of locale
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        print(f"stdin is not valid JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(requests, list):
        print("stdin must be a JSON array of requests", file=sys.stderr)
        return 2
    out = json.dumps([handle(r) for r in requests]) + "\n"  # ASCII-only (\uXXXX escapes)
    sys.stdout.buffer.write(out.encode("utf-8"))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
