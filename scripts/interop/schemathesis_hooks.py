"""schemathesis hooks: sign every generated request in the linkstr NIP-98 dialect, so fuzzing
reaches past authentication into each route's body handling.

Used by the fuzz test as SCHEMATHESIS_HOOKS=scripts.interop.schemathesis_hooks (module path) with
LINKSTR_FUZZ_SECRET set to a hex secret key. The body is serialised here, exactly as it will be
sent, and hashed into the `payload_sha256` tag; signing uses rust-nostr (nostr_sdk).
"""

import base64
import hashlib
import json
import os
import secrets
import urllib.parse

import nostr_sdk as ns
import schemathesis

KEYS = ns.Keys(ns.SecretKey.parse(os.environ["LINKSTR_FUZZ_SECRET"]))


@schemathesis.hook
def before_call(context, case, kwargs):
    path = urllib.parse.urlsplit(case.formatted_path).path
    if not path.startswith("/v1/"):
        return
    body = b""
    if isinstance(case.body, (bytes, bytearray)):
        body = bytes(case.body)
    elif isinstance(case.body, str):
        body = case.body.encode("utf-8")
    elif case.body is not None and not isinstance(case.body, schemathesis.core.NotSet):
        body = json.dumps(case.body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if body:
        # Send these exact bytes: the signature covers them.
        case.body = schemathesis.core.NOT_SET
        kwargs["data"] = body
        kwargs.pop("json", None)
        headers = dict(case.headers or {})
        headers["Content-Type"] = "application/json"
        case.headers = headers
    tags = [["method", case.method.upper()], ["path", path], ["payload_sha256", hashlib.sha256(body).hexdigest()], ["nonce", secrets.token_hex(16)]]
    event = ns.EventBuilder(ns.Kind(27235), "").tags([ns.Tag.parse(t) for t in tags]).finalize(KEYS)
    headers = dict(case.headers or {})
    headers["Authorization"] = "Nostr " + base64.b64encode(event.as_json().encode("utf-8")).decode("ascii")
    case.headers = headers
