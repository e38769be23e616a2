#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpus, Fuzz/corpus/<target>/, from ../shared/vectors, and their
libFuzzer dictionaries, Fuzz/dictionaries/<target>.dict.

Deterministic: the same vectors give the same files (names are a counter and a slug, no hashes
or dates), so a re-run shows up in `git diff` only when the vectors or this script change. Each
target's folder is emptied first, so a seed dropped here is dropped there too. The linkstr
payloads and gateway request bodies are not in the vectors; they are the examples of
Tests/LinkstrCoreTests/WireFormatTests.swift and Tests/PushGatewayTests, copied here.

Seeds are starting points, not a test suite: each is under 4 KiB (libFuzzer's default -max_len
is taken from the largest seed, and a small one keeps the run fast), and a few dozen per target
at most. scripts/fuzz.sh fuzzes a copy, so the committed corpus never grows by itself.

    python3 Fuzz/make_corpus.py [--vectors PATH]
"""

import argparse
import base64
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAX_SEED_BYTES = 4096
MAX_SEEDS = 48

# The conversation key the nip44 target decrypts with (its NIP44Fuzz.swift): the one of
# nip44-rust-nostr-payloads.json, so that those payloads decrypt and seed the deep paths.
NIP44_TARGET_KEY = "3e2b52a63be47d34fe0a80e34e73d436d6963bc8f39827f327057a9986c20a45"

# The nip98 target's first byte (see NIP98Fuzz.swift): bit 0 raw header, bit 1 base URL,
# bits 2-3 the request, bits 4-5 the accepted dialects.
NIP98_RAW, NIP98_BASE_URL = 1, 2
NIP98_GET_LIST, NIP98_POST_UPLOAD, NIP98_POST_PUSH, NIP98_DELETE_DEVICES = 0 << 2, 1 << 2, 2 << 2, 3 << 2
NIP98_STANDARD_ONLY, NIP98_LINKSTR_ONLY = 1 << 4, 2 << 4

# The gateway-requests target's first byte, modulo 5, picks the parser.
REGISTER, UNREGISTER, ARCHIVE, PUSH, SUPPRESS = range(5)

# A valid x-only public key (the vectors' sender) and an event id, for bodies that need them.
KEY = "17162c921dc4d2518f9a101db33695df1afb56ab82f5ff3e5da6eec3ca5cd917"
EVENT_ID = "89010b2923118aab04e83d330b5b876ff875d98cd0fa34e5b32794b34d66d2eb"
TOKEN = "ab" * 32


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "seed"


class Corpus:
    """Collects one target's seeds, then writes them numbered in the order they were added."""

    def __init__(self, name: str):
        self.name = name
        self.seeds: list[tuple[str, bytes]] = []

    def add(self, label: str, data) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8")
        if len(data) >= MAX_SEED_BYTES or any(existing == data for _, existing in self.seeds):
            return
        self.seeds.append((slug(label), data))

    def write(self, root: Path) -> int:
        folder = root / self.name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for index, (label, data) in enumerate(self.seeds[:MAX_SEEDS]):
            (folder / f"{index:02d}-{label}").write_bytes(data)
        return min(len(self.seeds), MAX_SEEDS)


def calc_padded_len(length: int) -> int:
    """NIP-44's padding rule (the same function as NIP44.calcPaddedLength)."""
    if length <= 32:
        return 32
    next_power = 1 << (length - 1).bit_length()
    chunk = 32 if next_power <= 256 else next_power // 8
    return chunk * ((length - 1) // chunk + 1)


def load(vectors: Path, name: str):
    return json.loads((vectors / name).read_text(encoding="utf-8"))


def json_seeds(v) -> Corpus:
    c = Corpus("json")
    for e in v["events"]["events"]:
        c.add(e["description"], e["event_json"])
    for m in v["messages"]["relay_to_client"]:
        c.add(m["type"], m["json"])
    for p in PAYLOADS[:3]:
        c.add("payload", p)
    # Edges of the grammar: number forms and ranges, escapes, surrogates, nesting, whitespace.
    for text in [
        "0", "-0", "-0.0", "1e308", "1E-400", "2.5e+10", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "123456789012345678901234567890",
        '"\\u0000\\u001f\\"\\\\\\/\\b\\f\\n\\r\\t"', '"\\ud83d\\ude00 \\u00e9 \\u2028"', '"é😀"',
        "[]", "{}", "[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]", '{"a":[1,2.5,true,false,null,"x",{}]}',
        ' \t\r\n{ "k" : [ 1 , { "n" : null } ] } ', "[1,]", '{"a":1,"a":2}', "01", "1.", "tru",
    ]:
        c.add("edge", text)
    return c


def event_seeds(v) -> Corpus:
    c = Corpus("event")
    for e in v["events"]["events"]:
        c.add(e["description"], e["event_json"])
    for e in v["events"]["invalid_events"]:
        c.add(e["reason"], e["event_json"])
    for g in v["nip98"]["generated"]:
        c.add(g["description"], g["event_json"])
    c.add("nip98 spec example", compact(v["nip98"]["spec_example"]["event"]))
    for case in v["giftwraps"]["cases"]:
        c.add("gift wrap " + case["description"], compact(case["gift_wrap"]))
        c.add("seal " + case["description"], compact(case["expected_seal"]))
    for case in v["giftwraps"]["invalid_cases"]:
        c.add("invalid wrap " + case["reason"], compact(case["gift_wrap"]))
    c.add("nip59 spec wrap", compact(v["nip17"]["nip59"]["gift_wrap"]))
    for wrap in v["nip17"]["nip17"]["wraps"]:
        c.add("nip17 rumor (unsigned)", compact(wrap["expected_rumor"]))
    return c


def relay_message_seeds(v) -> Corpus:
    c = Corpus("relay-message")
    for m in v["messages"]["relay_to_client"] + v["messages"]["client_to_relay"]:
        c.add(m["type"], m["json"])
    for f in v["messages"]["filter_matching"]:
        c.add("REQ filter", f'["REQ","f",{f["filter"]}]')
    c.add("CLOSED without message", '["CLOSED","sub1"]')
    c.add("OK uppercase id", f'["OK","{EVENT_ID.upper()}",true,""]')
    return c


# The nip19 target's constructed mode (NIP19Fuzz.swift): first byte odd, then a prefix index.
NIP19_PREFIXES = ["npub", "nsec", "note", "nprofile", "nevent", "naddr", "nrelay"]
BECH32_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def bech32_data(text: str) -> tuple[str, bytes]:
    """The prefix and the data bytes of a bech32 string (checksum not checked: vectors are valid)."""
    hrp, _, rest = text.lower().rpartition("1")
    accumulator, bits, out = 0, 0, bytearray()
    for char in rest[:-6]:
        accumulator = (accumulator << 5 | BECH32_CHARSET.index(char)) & 0xFFF
        bits += 5
        if bits >= 8:
            bits -= 8
            out.append(accumulator >> bits & 0xFF)
    return hrp, bytes(out)


def nip19_seeds(v) -> Corpus:
    c = Corpus("nip19")
    entities = v["nip19"]["spec_examples"] + v["nip19"]["generated_nostr_sdk"]
    for e in entities:
        c.add(e["kind"], b"\x00" + e["bech32"].encode())
    for e in v["nip19"]["invalid"]:
        c.add("invalid " + e["reason"], b"\x00" + e["input"].encode())
    c.add("npub uppercase", b"\x00" + entities[0]["bech32"].upper().encode())
    for e in entities:
        hrp, data = bech32_data(e["bech32"])
        c.add(e["kind"] + " constructed", bytes([1, NIP19_PREFIXES.index(hrp)]) + data)
    # TLV shapes the vectors lack: an unknown type, a repeated relay, a relay that is not UTF-8.
    key = bytes.fromhex(KEY)
    c.add("nprofile unknown tlv", bytes([1, 3]) + b"\x00\x20" + key + b"\x07\x02ab" + b"\x01\x03wss")
    c.add("nevent bad relay", bytes([1, 4]) + b"\x00\x20" + bytes.fromhex(EVENT_ID) + b"\x01\x02\xff\xfe" + b"\x03\x04\x00\x00\x00\x01")
    c.add("naddr", bytes([3, 5]) + b"\x00\x01d" + b"\x02\x20" + key + b"\x03\x04\x00\x00\x75\x30")
    return c


def nip44_seeds(v) -> Corpus:
    c = Corpus("nip44")
    payloads = v["nip44_rust"]
    assert payloads["conversation_key"] == NIP44_TARGET_KEY, "the nip44 target's key no longer matches the vectors"
    for case in payloads["cases"]:
        # Mode 0: the payload as received (decrypts with the target's key).
        c.add("payload " + case["plaintext"][:20], b"\x00" + case["payload"].encode())
        # Mode 1: nonce and padded plaintext, which the target seals with a valid MAC itself.
        plain = case["plaintext"].encode("utf-8")
        padded = len(plain).to_bytes(2, "big") + plain + bytes(calc_padded_len(len(plain)) - len(plain))
        c.add("sealed " + case["plaintext"][:20], b"\x01" + bytes.fromhex(case["nonce"]) + padded)
    # The extended prefix (00 00 + u32) with a length it must refuse (below 65536).
    nonce = bytes.fromhex(payloads["cases"][0]["nonce"])
    c.add("sealed extended prefix too short", b"\x01" + nonce + b"\x00\x00\x00\x00\x00\x05hello" + bytes(27))
    c.add("sealed nonzero padding", b"\x01" + nonce + b"\x00\x01a" + b"\x01" * 31)
    for case in v["nip44"]["v2"]["valid"]["encrypt_decrypt"]:
        c.add("other key " + case["plaintext"][:16], b"\x00" + case["payload"].encode())
    for case in v["nip44"]["v2"]["invalid"]["decrypt"]:
        c.add("invalid " + case["note"], b"\x00" + case["payload"].encode())
    return c


def base64_seeds(v) -> Corpus:
    c = Corpus("base64")
    for case in v["nip44_rust"]["cases"][:4]:
        c.add("nip44 payload", case["payload"])
    c.add("nip98 spec header unpadded", v["nip98"]["spec_example"]["authorization_header_value"].split(" ", 1)[1])
    for g in v["nip98"]["generated"]:
        c.add("nip98 header padded", g["authorization_header_value"].split(" ", 1)[1])
    for text in ["", "AA==", "AAA=", "AAAA", "Zg", "Zm8", "Zm9v", "Zm9vYg==", "Zh==", "A===", "====", "Zm9v\n", "+/+/"]:
        c.add("edge", text)
    return c


def nip98_seeds(v) -> Corpus:
    c = Corpus("nip98")
    get, post = v["nip98"]["generated"]
    for flags_base, vector in [(NIP98_GET_LIST, get), (NIP98_POST_UPLOAD, post)]:
        header = vector["authorization_header_value"]
        event = vector["event_json"].encode()
        method = vector["request_method"]
        c.add(method + " raw", bytes([flags_base | NIP98_RAW]) + header.encode())
        c.add(method + " base url", bytes([flags_base | NIP98_RAW | NIP98_BASE_URL]) + header.encode())
        c.add(method + " linkstr only", bytes([flags_base | NIP98_RAW | NIP98_LINKSTR_ONLY]) + header.encode())
        c.add(method + " json", bytes([flags_base]) + event)
        c.add(method + " json base url", bytes([flags_base | NIP98_BASE_URL]) + event)
        # Unpadded, as the spec example and some clients send it.
        c.add(method + " unpadded", bytes([flags_base | NIP98_RAW]) + header.rstrip("=").encode())
    spec = v["nip98"]["spec_example"]["authorization_header_value"]
    c.add("spec example", bytes([NIP98_GET_LIST | NIP98_RAW]) + spec.encode())
    # The linkstr dialect (method, path, payload_sha256, nonce). No signing library here, so
    # these reach every check but the id and signature.
    body = b'{"hello":"world"}'
    tags = [["method", "POST"], ["path", "/v1/push"], ["payload_sha256", hashlib.sha256(body).hexdigest()],
            ["nonce", "0123456789abcdef0123456789abcdef"]]
    event = {"id": EVENT_ID, "pubkey": KEY, "created_at": 1700000000, "kind": 27235, "tags": tags, "content": "",
             "sig": post["event"]["sig"]}
    c.add("linkstr dialect json", bytes([NIP98_POST_PUSH]) + compact(event).encode())
    c.add("linkstr dialect standard only", bytes([NIP98_POST_PUSH | NIP98_STANDARD_ONLY]) + compact(event).encode())
    header = "Nostr " + base64.b64encode(compact(event).encode()).decode()
    c.add("linkstr dialect raw", bytes([NIP98_POST_PUSH | NIP98_RAW]) + header.encode())
    event["tags"] = [["method", "DELETE"], ["path", "/v1/devices"], ["payload_sha256", hashlib.sha256(b"").hexdigest()],
                     ["nonce", " \t "]]
    c.add("linkstr blank nonce", bytes([NIP98_DELETE_DEVICES]) + compact(event).encode())
    for header in ["", "Nostr", "Nostr ", "Bearer abc", "Nostr !!!!", "Nostr  eyJ9  ", "nostr eyJ9"]:
        c.add("header edge", bytes([NIP98_RAW]) + header.encode())
    return c


# WireFormatTests.swift's payloads: valid ones of every kind, then each refusal it checks.
MEMBER = KEY
PAYLOADS = [
    '{"conversation_id":"C","root_id":"","kind":"root","url":"https://example.com/a?b=c#d","note":" hi ","timestamp":1700000000}',
    f'{{"member_pubkeys":["{MEMBER.upper()}","{MEMBER}"],"kind":"session_create","conversation_id":"S1","root_id":"OP1","session_name":"Friends","future":1}}',
    f'{{"conversation_id":"S1","root_id":"OP2","kind":"session_members","member_pubkeys":["{MEMBER}"],"timestamp":1700000001.0}}',
    '{"conversation_id":"S1","root_id":"OP3","kind":"session_delete"}',
    '{"conversation_id":"C","root_id":"R","kind":"reaction","emoji":"👍","reaction_active":true}',
    '{"conversation_id":"C","root_id":"R","kind":"root_delete","timestamp":null,"note":null}',
    '{"conversation_id":"C","root_id":"","kind":"root","url":"http://user@host:8080/p","timestamp":1e3}',
    '[1]',
    '{"conversation_id":"C","root_id":"","kind":"poll"}',
    '{"conversation_id":"C","root_id":""}',
    '{"conversation_id":"  ","root_id":"","kind":"root","url":"https://a.b"}',
    '{"conversation_id":"C","root_id":"","kind":"root","url":"ftp://a.b"}',
    '{"conversation_id":"C","root_id":"","kind":"root","url":"https://"}',
    '{"conversation_id":"C","root_id":" ","kind":"root_delete"}',
    '{"conversation_id":"C","root_id":"O","kind":"session_create","member_pubkeys":["ab"]}',
    '{"conversation_id":"C","root_id":"O","kind":"session_create","session_name":" ","member_pubkeys":[]}',
    '{"conversation_id":"C","root_id":"O","kind":"session_members"}',
    '{"conversation_id":"C","root_id":"R","kind":"reaction","emoji":"👍"}',
    '{"conversation_id":"C","root_id":"R","kind":"reaction","emoji":"👍","reaction_active":"yes"}',
    '{"conversation_id":"C","root_id":"","kind":"root","url":"https://a.b","timestamp":"soon"}',
    '{"conversation_id":"C","root_id":"","kind":"root","url":"https://a.b","timestamp":-5}',
]


def linkstr_payload_seeds(v) -> Corpus:
    c = Corpus("linkstr-payload")
    for payload in PAYLOADS:
        kind = re.search(r'"kind":"([a-z_]+)"', payload)
        c.add(kind.group(1) if kind else "payload", payload)
    return c


# Bodies from Tests/PushGatewayTests (ArchiveAndPushTests, DeviceRouteTests, RegistrationGroupTests).
def push(kind: str, extra: str = "", recipients: str = f'"{KEY}"', event: str = "e", conversation: str = "c") -> str:
    return (f'{{"notification_type":"{kind}","event_id":"{event}","conversation_id":"{conversation}",'
            f'"recipient_pubkeys":[{recipients}]{extra}}}')


# RFC 8291 Appendix A's receiver key: a point on P-256.
P256DH = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"

BODIES = [
    (REGISTER, f'{{"device_token":"{TOKEN}","apns_environment":"sandbox"}}'),
    (REGISTER, f'{{"device_token":" {TOKEN.upper()} ","apns_environment":"SANDBOX","topic":"app.test","relay_watch":true}}'),
    (REGISTER, f'{{"device_token":"{TOKEN}","apns_environment":"production","topic":null,"relay_watch":"yes"}}'),
    (REGISTER, f'{{"device_token":"{TOKEN}","apns_environment":"sandbox","relay_watch":true,'
               '"relays":["WSS://Inbox.Example:443/","wss://inbox.example","ws://[::1]:7777","wss://u@x.example"]}}'),
    (REGISTER, '{"device_token":"abc","apns_environment":"sandbox"}'),
    (REGISTER, f'{{"device_token":"{TOKEN}","apns_environment":"staging"}}'),
    (REGISTER, f'{{"platform":"apns","device_token":"{TOKEN}","apns_environment":"sandbox","push_type":"voip"}}'),
    (REGISTER, '{"platform":"fcm","device_token":"cZ1q2-Xy_3:APA91bH' + 'k9' * 60 + '"}'),
    (REGISTER, '{"platform":"webpush","subscription":{"endpoint":"https://Push.Example:443/wpush/v2/gAAA?x=1",'
               '"expirationTime":null,"keys":{"p256dh":"' + P256DH + '","auth":"BwcHBwcHBwcHBwcHBwcHBw"}}}'),
    (REGISTER, '{"platform":"unifiedpush","endpoint":"https://up.example/UP?token=abc"}'),
    (REGISTER, '{"platform":"unifiedpush","endpoint":"https://up.example/UP","keys":{"p256dh":"' + P256DH + '","auth":"AAAA"}}'),
    (UNREGISTER, '{"endpoint":"https://push.example/wpush/v2/gAAA"}'),
    (UNREGISTER, f'{{"device_token":"{TOKEN}"}}'),
    (UNREGISTER, f'{{"device_token":"{"a" * 200}"}}'),
    (UNREGISTER, '{}'),
    (ARCHIVE, '{"archived_conversation_ids":["A"]}'),
    (ARCHIVE, '{"archived_conversation_ids":[" A ","B","B",""]}'),
    (ARCHIVE, '{"archived_conversation_ids":["C"],"known_conversation_ids":["A","C"]}'),
    (ARCHIVE, '{"archived_conversation_ids":[],"known_conversation_ids":[]}'),
    (ARCHIVE, '{"archived_conversation_ids":"A"}'),
    (ARCHIVE, '{"archived_conversation_ids":["A"],"known_conversation_ids":["A",""]}'),
    (ARCHIVE, '{"archived_conversation_ids":["A"],"known_conversation_ids":["B"]}'),
    (ARCHIVE, '{"archived_conversation_ids":["A\\u0000"]}'),
    (ARCHIVE, '{"archived_conversation_ids":["b","a","b"," "],"known_conversation_ids":["a","b","c","a"]}'),
    (PUSH, push("new_post")),
    (PUSH, push("new_emoji_reaction", ',"emoji":"🔥","post_id":"p"', recipients=f'"{KEY.upper()}","","{KEY}"', event=" e ")),
    (PUSH, push("new_post", ',"emoji":"x","post_id":"p"')),
    (PUSH, push("new_thing")),
    (PUSH, push("incoming_call")),
    (PUSH, push("new_message", ',"push_type":"background"')),
    (PUSH, push("incoming_call", ',"push_type":"background"')),
    (PUSH, push("group_invite", ',"emoji":"x"')),
    (PUSH, push("gift_wrap")),
    (PUSH, push("new_post", recipients="")),
    (PUSH, push("new_post", recipients='"", " "')),
    (PUSH, push("new_emoji_reaction")),
    (PUSH, push("new_post", recipients='"not-a-key"')),
    (PUSH, push("new_post", event="e\\u0000")),
    (PUSH, push("new_post", conversation="c\\n1")),
    (PUSH, push("new_emoji_reaction", ',"emoji":"\\u0007"')),
    (PUSH, push("new_post", event="x" * 129)),
    (PUSH, push("new_emoji_reaction", ',"emoji":"⚠ Verify your account at evil.example"')),
    (PUSH, push("new_emoji_reaction", ',"emoji":"👍👍"')),
    (PUSH, push("new_emoji_reaction", ',"emoji":"1"')),
    (PUSH, push("new_emoji_reaction", ',"emoji":"👨\u200d👩\u200d👧","post_id":"p"')),
    (PUSH, push("new_emoji_reaction", ',"emoji":"#\ufe0f\u20e3"')),
    (SUPPRESS, f'{{"event_ids":["{EVENT_ID}"]}}'),
    (SUPPRESS, f'{{"event_ids":["{EVENT_ID.upper()}","{EVENT_ID}"," "]}}'),
    (SUPPRESS, '{"event_ids":[]}'),
    (SUPPRESS, '{"event_ids":["zz"]}'),
]


def gateway_request_seeds(v) -> Corpus:
    c = Corpus("gateway-requests")
    names = {REGISTER: "register", UNREGISTER: "unregister", ARCHIVE: "archive", PUSH: "push", SUPPRESS: "suppress"}
    for selector, body in BODIES:
        c.add(names[selector], bytes([selector]) + body.encode("utf-8"))
    for selector in names:
        c.add(names[selector] + " not json", bytes([selector]) + b"[")
    return c


RELAY_URLS = [
    "wss://relay.damus.io", "WSS://Relay.Example:443/", "ws://relay.example:80/inbox/", "wss://relay.example/?x=1",
    "ws://127.0.0.1:7777", "ws://[::1]:7777/", "ws://169.254.169.254/latest",
    "wss://user:pw@relay.example", "wss://relay.example/#frag", "wss://127.1", "wss://0x7f.0.0.1",
    "wss://xn--bcher-kva.example.", "wss://relay.example:65536", "https://relay.example", "  wss://nos.lol/  ",
    "1.2.3.4", "fe80::1", "::", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4", "1::2::3",
    # At the length limit as written, a byte over it in normal form (`?` becomes `/?`).
    "wss://relay.example?" + "a" * 492,
]


def relay_url_seeds(v) -> Corpus:
    c = Corpus("relay-url")
    for url in RELAY_URLS:
        c.add(url, url.encode("utf-8"))
    return c


# libFuzzer dictionaries (-dict), one per target since a run takes one: the JSON grammar's tokens,
# plus the keys and values each parser looks for, which random mutation would take long to spell.
JSON_TOKENS = ["{", "}", "[", "]", ":", ",", '""', '"', "\\\\", "\\\"", "\\u", "\\ud83d\\ude00", "\\u0000",
               "true", "false", "null", "-", "0", ".5", "e+", "E-", "9223372036854775807", "1e308"]
EVENT_KEYS = ['"id"', '"pubkey"', '"created_at"', '"kind"', '"tags"', '"content"', '"sig"', '"' + KEY + '"', '"' + EVENT_ID + '"']
DICTIONARIES = {
    "json": JSON_TOKENS,
    "event": JSON_TOKENS + EVENT_KEYS + ['["p",', '["e",', "1059", "13", "14", "27235"],
    "relay-message": JSON_TOKENS + EVENT_KEYS + [
        '"EVENT"', '"OK"', '"EOSE"', '"CLOSED"', '"NOTICE"', '"AUTH"', '"REQ"', '"CLOSE"', '"ids"', '"authors"',
        '"kinds"', '"since"', '"until"', '"limit"', '"#p"', '"#e"', "auth-required:", "rate-limited:", "duplicate:"],
    "nip19": ["npub1", "nsec1", "note1", "nprofile1", "nevent1", "naddr1", "qqqqqq", "qpzry9x8gf2tvdw0s3jn54khce6mua7l"],
    "nip98": JSON_TOKENS + EVENT_KEYS + [
        "Nostr ", "27235", '["u",', '["method",', '["payload",', '["path",', '["payload_sha256",', '["nonce",', '"GET"',
        '"POST"', '"DELETE"', '"https://api.example.com/api/v1/list?page=2&sort=desc"', '"/v1/push"'],
    "linkstr-payload": JSON_TOKENS + [
        '"conversation_id"', '"root_id"', '"kind"', '"url"', '"note"', '"timestamp"', '"session_name"', '"member_pubkeys"',
        '"emoji"', '"reaction_active"', '"root"', '"root_delete"', '"session_create"', '"session_members"',
        '"session_delete"', '"reaction"', '"https://"', '"http://"', "@", '"' + KEY + '"'],
    "relay-url": ["ws://", "wss://", "://", "[", "]", ":", "::", "::ffff:", ".", "/", "?", "#", "@", "%2F", ":443", ":80",
                  "xn--", "localhost", "127.0.0.1", "255", "0x", "fe80", "ffff"],
    "gateway-requests": JSON_TOKENS + [
        '"device_token"', '"apns_environment"', '"topic"', '"relay_watch"', '"sandbox"', '"production"', '"relays"',
        '"wss://', '"ws://', '"platform"', '"apns"', '"fcm"', '"webpush"', '"unifiedpush"', '"push_type"', '"voip"',
        '"alert"', '"subscription"', '"endpoint"', '"keys"', '"p256dh"', '"auth"', '"https://', '"' + P256DH + '"',
        '"archived_conversation_ids"', '"known_conversation_ids"', '"notification_type"', '"new_post"',
        '"new_emoji_reaction"', '"gift_wrap"', '"event_id"', '"conversation_id"', '"recipient_pubkeys"', '"emoji"',
        '"post_id"', '"event_ids"', '"' + KEY + '"', '"' + TOKEN + '"',
        # The parts a single emoji is made of (SingleEmoji): ZWJ, VS16, keycap, modifier, tag.
        "👍", "\u200d", "\ufe0f", "\u20e3", "🏽", "\U000e0067", "🇺🇸", "#\ufe0f\u20e3", "👨\u200d👩\u200d👧"],
}


def dictionary_entry(token: str) -> str:
    """One `"..."` line in libFuzzer's format: backslash, quote and non-printables as \\xNN."""
    out = "".join(ch if 0x20 <= ord(ch) < 0x7F and ch not in '"\\' else "".join(f"\\x{b:02x}" for b in ch.encode())
                  for ch in token)
    return f'"{out}"'


def write_dictionaries(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, tokens in DICTIONARIES.items():
        lines = ["# Written by Fuzz/make_corpus.py; edit it there."] + [dictionary_entry(t) for t in dict.fromkeys(tokens)]
        (folder / f"{name}.dict").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=Path, default=HERE.parent.parent / "shared" / "vectors")
    parser.add_argument("--out", type=Path, default=HERE / "corpus")
    args = parser.parse_args()
    if not args.vectors.is_dir():
        print(f"vectors not found: {args.vectors}", file=sys.stderr)
        return 1
    v = {
        "events": load(args.vectors, "nip01-events.json"),
        "messages": load(args.vectors, "nip01-messages.json"),
        "nip19": load(args.vectors, "nip19.json"),
        "nip44": load(args.vectors, "nip44.vectors.json"),
        "nip44_rust": load(args.vectors, "nip44-rust-nostr-payloads.json"),
        "nip98": load(args.vectors, "nip98-http-auth.json"),
        "giftwraps": load(args.vectors, "nip59-giftwraps-rust-nostr.json"),
        "nip17": load(args.vectors, "nip59-nip17-spec-examples.json"),
    }
    makers = [json_seeds, event_seeds, relay_message_seeds, nip19_seeds, nip44_seeds, base64_seeds, nip98_seeds,
              linkstr_payload_seeds, gateway_request_seeds, relay_url_seeds]
    for make in makers:
        corpus = make(v)
        print(f"{corpus.name}: {corpus.write(args.out)} seeds")
    write_dictionaries(HERE / "dictionaries")
    print(f"dictionaries: {', '.join(sorted(DICTIONARIES))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
