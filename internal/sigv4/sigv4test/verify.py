# An AWS Signature Version 4 verifier built on botocore (Debian's python3-botocore), for tests:
# the signature of each request is recomputed by botocore.auth.SigV4Auth, an implementation the
# connector's authors did not write. It reads one JSON request per line on stdin and writes one
# JSON verdict per line on stdout: {"ok": true} or {"ok": false, "reason": "..."}.
#
# Usage: verify.py ACCESS_KEY_ID REGION SERVICE MAX_SKEW_SECONDS, with the secret access key and
# the session token ("" for none) as the first two lines of stdin (never on the command line).
import base64
import datetime
import hmac
import json
import sys
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

def verdict(req, access_key, secret, token, region, service, max_skew):
    headers = {k.lower(): v for k, v in req["headers"].items()}
    auth = headers.get("authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return "no AWS4-HMAC-SHA256 Authorization header"
    parts = {}
    for item in auth[len("AWS4-HMAC-SHA256 "):].split(","):
        k, _, v = item.strip().partition("=")
        parts[k] = v
    try:
        akid, date, reg, svc, term = parts["Credential"].split("/")
    except (KeyError, ValueError):
        return "malformed Credential"
    if akid != access_key:
        return "unknown access key id"
    if reg != region:
        return "credential scope names region %s, not %s" % (reg, region)
    if svc != service:
        return "credential scope names service %s, not %s" % (svc, service)
    amz_date = headers.get("x-amz-date", "")
    try:
        when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    except ValueError:
        return "no valid X-Amz-Date"
    if date != amz_date[:8]:
        return "credential scope date differs from X-Amz-Date"
    now = datetime.datetime.utcnow()
    if abs((now - when).total_seconds()) > max_skew:
        return "signature expired: X-Amz-Date %s is more than %ds from now" % (amz_date, max_skew)
    signed = parts.get("SignedHeaders", "").split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return "host and x-amz-date must be signed"
    if token and headers.get("x-amz-security-token") != token:
        return "missing or wrong X-Amz-Security-Token"
    if token and "x-amz-security-token" not in signed:
        return "x-amz-security-token must be signed"
    missing = [h for h in signed if h != "host" and h not in headers]
    if missing:
        return "signed headers not received: " + ",".join(missing)
    send = {h: headers[h] for h in signed if h != "host"}
    send["host"] = headers.get("host", "")
    body = base64.b64decode(req.get("body", ""))
    r = AWSRequest(method=req["method"], url=req["url"], headers=send, data=body)
    signer = SigV4Auth(Credentials(access_key, secret, token or None), service, region)
    r.context["timestamp"] = amz_date
    # botocore's headers_to_sign takes every header of the request but its blacklist; the
    # request holds only the signed ones.
    cr = signer.canonical_request(r)
    sts = signer.string_to_sign(r, cr)
    want = signer.signature(sts, r)
    if not hmac.compare_digest(want, parts.get("Signature", "")):
        return "the signature does not match"
    return None

def main():
    access_key, region, service, max_skew = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    secret = sys.stdin.readline().rstrip("\n")
    token = sys.stdin.readline().rstrip("\n")
    for line in sys.stdin:
        try:
            reason = verdict(json.loads(line), access_key, secret, token, region, service, max_skew)
        except Exception as e:  # a request the verifier cannot read is refused, not a crash
            reason = "verifier: %s" % e
        out = {"ok": reason is None}
        if reason:
            out["reason"] = reason
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()

main()
