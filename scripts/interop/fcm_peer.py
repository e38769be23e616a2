#!/usr/bin/env python3
"""firebase-admin, Google's own FCM client, on the other side of the sandbox's FCM face.

Usage (from the repo root): .venv/bin/python scripts/interop/fcm_peer.py '<request JSON>'

The argument is one JSON object; stdout is one JSON object. Every op takes:

  service_account   path of the sandbox's service account key file (its token_uri names the
                    sandbox's token endpoint, which google-auth posts its RS256 assertion to)
  api_url           the sandbox's FCM base URL, in place of https://fcm.googleapis.com
  ca_file           the sandbox's CA, trusted for both

and then:

  send    {message: {token, data, notification?, android?: {priority, ttl_seconds, collapse_key}}}
                          -> {"name"}          messaging.send, as an app server sends
  errors  {tokens: [...]} -> {"results": {token: "<exception class>" | "ok"}}
                          messaging.send per token: which firebase-admin error each answer becomes

Exit status 1 with the exception on stderr when an op fails unexpectedly.
"""
import datetime
import json
import os
import sys


def main() -> None:
    request = json.loads(sys.argv[1])
    # requests (google-auth's token exchange, firebase-admin's send) trusts this CA bundle.
    os.environ["REQUESTS_CA_BUNDLE"] = request["ca_file"]
    os.environ.pop("CURL_CA_BUNDLE", None)

    import firebase_admin
    from firebase_admin import credentials, messaging

    # firebase-admin has no setting for FCM's URL; the class attribute is read when the
    # messaging service is first made, so it is pointed at the sandbox before that.
    messaging._MessagingService.FCM_URL = request["api_url"].rstrip("/") + "/v1/projects/{0}/messages:send"
    app = firebase_admin.initialize_app(credentials.Certificate(request["service_account"]), name="sandbox")

    def build(fields: dict) -> messaging.Message:
        android = None
        if "android" in fields:
            config = fields["android"]
            android = messaging.AndroidConfig(
                priority=config.get("priority"),
                ttl=datetime.timedelta(seconds=config["ttl_seconds"]) if "ttl_seconds" in config else None,
                collapse_key=config.get("collapse_key"),
                notification=messaging.AndroidNotification(tag=config["tag"]) if "tag" in config else None,
            )
        notification = None
        if "notification" in fields:
            notification = messaging.Notification(
                title=fields["notification"].get("title"), body=fields["notification"].get("body")
            )
        return messaging.Message(
            token=fields["token"], data=fields.get("data"), notification=notification, android=android
        )

    op = request["op"]
    if op == "send":
        name = messaging.send(build(request["message"]), app=app)
        print(json.dumps({"name": name}))
    elif op == "errors":
        # What each answer becomes, not how firebase-admin retries it: its session retries 500
        # and 503 four times with backoff, seconds per token that show nothing here.
        import requests

        messaging._get_messaging_service(app)._client.session.mount("https://", requests.adapters.HTTPAdapter(max_retries=0))
        results = {}
        for token in request["tokens"]:
            try:
                messaging.send(build({"token": token, "data": {"type": "new_message"}}), app=app)
                results[token] = "ok"
            except Exception as error:  # the class firebase-admin chose is the result
                results[token] = type(error).__name__
        print(json.dumps({"results": results}))
    else:
        raise SystemExit(f"unknown op {op!r}")


if __name__ == "__main__":
    main()
