-- Devices of every push platform. `device_token` stays the device's identity: an APNs or FCM
-- token, or a Web Push / UnifiedPush endpoint URL (which a push service issues once per
-- subscription). Constant defaults add the columns without rewriting the table; every existing
-- row is an APNs alert token.
ALTER TABLE devices ADD COLUMN platform text NOT NULL DEFAULT 'apns'
    CHECK (platform IN ('apns', 'fcm', 'webpush', 'unifiedpush'));
-- APNs only: an app's alert token, or a PushKit VoIP token (topic `<bundle id>.voip`).
ALTER TABLE devices ADD COLUMN push_type text NOT NULL DEFAULT 'alert' CHECK (push_type IN ('alert', 'voip'));
-- The subscription's keys (RFC 8291), base64url as the client gave them: a Web Push
-- subscription always has them, a UnifiedPush endpoint may.
ALTER TABLE devices ADD COLUMN p256dh text;
ALTER TABLE devices ADD COLUMN auth_secret text;
ALTER TABLE devices ALTER COLUMN apns_environment DROP NOT NULL;
ALTER TABLE devices ADD CONSTRAINT devices_platform_fields CHECK (
    (platform = 'apns') = (apns_environment IS NOT NULL)
    AND (platform = 'apns' OR push_type = 'alert')
    AND (p256dh IS NULL) = (auth_secret IS NULL)
    AND (platform <> 'webpush' OR p256dh IS NOT NULL)
    AND (platform IN ('webpush', 'unifiedpush') OR p256dh IS NULL)
);
