#!/usr/bin/env python3
"""Baseline micro-benchmark of rust-nostr through its Python bindings (nostr-sdk, module ``nostr_sdk``).

Single thread, for comparison with the Swift library's benchmarks. Each op is warmed up,
then called in a loop bounded by both a time budget (``--seconds``, default 2.0 per op) and
an iteration cap (``--max-iterations``). Reported numbers include the Python -> uniffi call
overhead (the Python loop itself is a few hundred ns per iteration).

Ops (inputs are built once, outside the timed loop, with fixed keys):
  sign              Keys.sign_event(UnsignedEvent): kind 1, 100-byte content, fixed created_at
                    (the prebuilt UnsignedEvent has no id, so each call hashes + signs)
  verify            Event.verify() of a pre-signed event (id recomputation + Schnorr verify)
  verify_signature  Event.verify_signature() of the same event (Schnorr verify only)
  nip44_encrypt_1k  nip44_encrypt(SecretKey, PublicKey, 1024-byte ASCII, Nip44Version.V2)
                    (the free function derives the conversation key, i.e. ECDH, every call)
  nip44_decrypt_1k  nip44_decrypt(SecretKey, PublicKey, payload of that plaintext)
  gift_wrap         nip59_make_gift_wrap(Keys, receiver PublicKey, small kind-44001 rumor)
  unwrap            UnwrappedGift.from_gift_wrap(Keys, Event) cycling over prebuilt wraps

Usage:
  .venv/bin/python scripts/bench/rust_nostr_baseline.py [--seconds 2.0] [--ops sign,verify]
        [--json [PATH]]
Without --json: version line + markdown table on stdout. With --json (or --json -): stdout is
only the JSON object {op: {"ops_per_s", "us_per_op", "iterations"}} and the human-readable
output goes to stderr. With --json PATH: the JSON is written to PATH, the table to stdout.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import platform
import sys
import time
from typing import Callable

import nostr_sdk as ns

SENDER_SK = "5c0c523f52a5b6fad39ed2403092df8cebc36318b39383bca6c00808626fab3a"
RECEIVER_SK = "4b22aa260e4acb7021e32f38a6cdf4b673c6a277755bfce287e370c924dc936d"
CREATED_AT = 1700000000
CONTENT_100 = ("The quick brown fox jumps over the lazy dog. " * 3)[:100]
PLAINTEXT_1K = "".join(chr(32 + (i % 95)) for i in range(1024))  # printable ASCII, 1024 bytes
UNWRAP_POOL = 64


def build_ops() -> dict[str, Callable[[], object]]:
    sender = ns.Keys(ns.SecretKey.parse(SENDER_SK))
    receiver = ns.Keys(ns.SecretKey.parse(RECEIVER_SK))
    s_sk, r_pk, r_sk, s_pk = sender.secret_key(), receiver.public_key(), receiver.secret_key(), sender.public_key()
    assert len(CONTENT_100) == 100 and len(PLAINTEXT_1K.encode()) == 1024

    unsigned = (
        ns.EventBuilder(ns.Kind(1), CONTENT_100)
        .custom_created_at(ns.Timestamp.from_secs(CREATED_AT))
        .finalize_unsigned(s_pk)
    )
    signed = sender.sign_event(unsigned)
    assert signed.verify() and signed.verify_signature()

    payload = ns.nip44_encrypt(s_sk, r_pk, PLAINTEXT_1K, ns.Nip44Version.V2)
    assert ns.nip44_decrypt(r_sk, s_pk, payload) == PLAINTEXT_1K

    rumor = (
        ns.EventBuilder(ns.Kind(44001), "ping")
        .tags([ns.Tag.parse(["p", r_pk.to_hex()])])
        .custom_created_at(ns.Timestamp.from_secs(CREATED_AT))
        .finalize_unsigned(s_pk)
    )
    wraps = [ns.nip59_make_gift_wrap(sender, r_pk, rumor) for _ in range(UNWRAP_POOL)]
    first = ns.UnwrappedGift.from_gift_wrap(receiver, wraps[0])
    assert first.sender().to_hex() == s_pk.to_hex() and first.rumor().content() == "ping"

    counter = [0]

    def unwrap() -> object:
        counter[0] += 1
        return ns.UnwrappedGift.from_gift_wrap(receiver, wraps[counter[0] % UNWRAP_POOL])

    v2 = ns.Nip44Version.V2
    return {
        "sign": lambda: sender.sign_event(unsigned),
        "verify": signed.verify,
        "verify_signature": signed.verify_signature,
        "nip44_encrypt_1k": lambda: ns.nip44_encrypt(s_sk, r_pk, PLAINTEXT_1K, v2),
        "nip44_decrypt_1k": lambda: ns.nip44_decrypt(r_sk, s_pk, payload),
        "gift_wrap": lambda: ns.nip59_make_gift_wrap(sender, r_pk, rumor),
        "unwrap": unwrap,
    }


def measure(fn: Callable[[], object], seconds: float, max_iterations: int, warmup: float) -> dict:
    """Warm up for ``warmup`` s (>= 10 calls), then time batches until budget or cap is reached."""
    clock = time.perf_counter
    end = clock() + warmup
    n = 0
    while n < 10 or clock() < end:
        fn()
        n += 1
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        iterations, batch, elapsed = 0, 1, 0.0
        start = clock()
        while iterations < max_iterations and elapsed < seconds:
            for _ in range(min(batch, max_iterations - iterations)):
                fn()
            iterations += min(batch, max_iterations - iterations)
            elapsed = clock() - start
            if elapsed < seconds / 100:  # grow batches so clock reads stay negligible
                batch *= 2
    finally:
        if gc_was_enabled:
            gc.enable()
    return {
        "ops_per_s": iterations / elapsed,
        "us_per_op": elapsed / iterations * 1e6,
        "iterations": iterations,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="time budget per op (default 2.0)")
    ap.add_argument("--max-iterations", type=int, default=10_000_000, help="iteration cap per op")
    ap.add_argument("--warmup", type=float, default=None, help="warm-up seconds per op (default: 10%% of --seconds, max 0.5)")
    ap.add_argument("--ops", default=None, help="comma-separated subset of ops")
    ap.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                    help="emit JSON {op: {ops_per_s, us_per_op, iterations}} to stdout ('-') or PATH")
    args = ap.parse_args()

    ops = build_ops()
    selected = list(ops) if not args.ops else [o.strip() for o in args.ops.split(",") if o.strip()]
    unknown = [o for o in selected if o not in ops]
    if unknown:
        ap.error(f"unknown op(s): {', '.join(unknown)}; available: {', '.join(ops)}")
    warmup = args.warmup if args.warmup is not None else min(0.5, args.seconds * 0.1)

    human = sys.stderr if args.json == "-" else sys.stdout
    version = importlib.metadata.version("nostr-sdk")
    git = ns.git_hash_version()
    print(f"nostr-sdk (rust-nostr Python bindings) {version}" + (f" (git {git})" if git else "")
          + f"; Python {platform.python_version()}; {platform.machine()} {platform.system()}", file=human)
    print(f"single thread, {args.seconds:g} s per op, warm-up {warmup:g} s\n", file=human)

    results: dict[str, dict] = {}
    print("| op | iterations | ops/s | µs/op |", file=human)
    print("|---|---:|---:|---:|", file=human)
    for name in selected:
        r = measure(ops[name], args.seconds, args.max_iterations, warmup)
        results[name] = r
        print(f"| {name} | {r['iterations']} | {r['ops_per_s']:,.0f} | {r['us_per_op']:.2f} |", file=human, flush=True)

    if args.json is not None:
        text = json.dumps(results, indent=2) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            with open(args.json, "w", encoding="utf-8") as f:
                f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
