#!/usr/bin/env python3
"""Web Push's reference stack on the other side of the gateway's Web Push code.

Usage (from the repo root): .venv/bin/python scripts/interop/webpush_peer.py '<request JSON>'

The argument is one JSON object with an ``op``; stdout is one JSON object. Binary values are base64url
without padding, as Web Push writes them.

  decrypt       {body, receiver_private, auth}   -> {"plaintext"}   http_ece.decrypt (aes128gcm),
                                                                     the browser's side
  encrypt       {plaintext, p256dh, auth}        -> {"body"}        pywebpush's WebPusher.encode,
                                                                     a sender nobody here wrote
  verify_vapid  {authorization}                  -> {"valid", "claims"}  py_vapid's Vapid02.verify,
                                                                     and the JWT's claims as sent
  send          {subscription, data, vapid_private_key, subject, ca_file}
                                                 -> {"status", "body"}  pywebpush.webpush: a real
                                                                     sender POSTs to a push service
                                                                     (the sandbox), trusting ca_file

Exit status 1 with the exception on stderr when an op fails.
"""
import base64
import json
import sys

import http_ece
import requests
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid02
from pywebpush import WebPusher


def b64u_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64u_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def decrypt(request):
    scalar = int.from_bytes(b64u_decode(request["receiver_private"]), "big")
    key = ec.derive_private_key(scalar, ec.SECP256R1())
    plaintext = http_ece.decrypt(
        b64u_decode(request["body"]), private_key=key, auth_secret=b64u_decode(request["auth"]), version="aes128gcm"
    )
    return {"plaintext": b64u_encode(plaintext)}


def encrypt(request):
    subscription = {"endpoint": "https://push.example/x", "keys": {"p256dh": request["p256dh"], "auth": request["auth"]}}
    encoded = WebPusher(subscription).encode(b64u_decode(request["plaintext"]), content_encoding="aes128gcm")
    return {"body": b64u_encode(encoded["body"])}


def verify_vapid(request):
    authorization = request["authorization"]
    valid = Vapid02.verify(authorization)
    token = authorization.split("t=", 1)[1].split(",", 1)[0]
    claims = json.loads(b64u_decode(token.split(".")[1]))
    return {"valid": bool(valid), "claims": claims}


def send(request):
    from pywebpush import webpush

    session = requests.Session()
    session.verify = request["ca_file"]
    # REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE in the environment would override session.verify.
    session.trust_env = False
    response = webpush(
        subscription_info=request["subscription"],
        data=request["data"],
        vapid_private_key=request["vapid_private_key"],
        vapid_claims={"sub": request["subject"]},
        ttl=60,
        requests_session=session,
    )
    return {"status": response.status_code, "body": response.text}


def main() -> int:
    request = json.loads(sys.argv[1])
    operations = {"decrypt": decrypt, "encrypt": encrypt, "verify_vapid": verify_vapid, "send": send}
    json.dump(operations[request["op"]](request), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
