#!/usr/bin/env python3
"""Regenerates the bad-input corpus: cases/*.json (raw bodies, byte for byte), manifest.json (the oracle of
Integration.BadInputCorpusTests) and the table at the end of docs/job-contract.md.

    python3 Tests/Fixtures/bad-input/generate.py

Add a case here, run it, then run `scripts/test --filter BadInputCorpusTests`. Static cases are bodies written below;
dynamic ones name a recipe the test runs (minted tokens, sizes relative to PAYPIPE_MAX_MESSAGE_BYTES, replays,
webhook URLs). The test checks that the files, the manifest and the document agree.
"""
import json, os, sys
out = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(os.path.dirname(out)))
for old in os.listdir(out + "/cases") if os.path.isdir(out + "/cases") else []:
    os.remove(out + "/cases/" + old)
os.makedirs(out + "/cases", exist_ok=True)
M = "sandbox-merchant"
TOKEN = {"paymentData": {"version": "EC_v1", "data": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "signature": "AAAA",
         "header": {"publicKeyHash": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "ephemeralPublicKey": "AAAA", "transactionId": "abcd"}}}
cases = []

def job(cid, **over):
    j = {"jobId": "bad-" + cid, "merchantId": M, "orderReference": "order-" + cid,
         "amount": {"value": 1099, "currency": "GBP"}, "applePayToken": TOKEN}
    for k, v in over.items():
        if v is DEL: j.pop(k, None)
        else: j[k] = v
    return j
class _D: pass
DEL = _D()

def enc(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

def add(cid, category, data, landing, code, note, ext="json"):
    if isinstance(data, (dict, list)): data = enc(data)
    if isinstance(data, str): data = data.encode("utf-8")
    name = cid + "." + ext
    open(out + "/cases/" + name, "wb").write(data)
    cases.append({"id": cid, "category": category, "file": name, "expect": {"landing": landing, "code": code}, "note": note})

def dlq(cid, cat, data, code, note, ext="json"): add(cid, cat, data, "dlq", code, note, ext)
def failed(cid, cat, data, code, note): add(cid, cat, data, "failed", code, note)

def head(cid): return '{"jobId":"bad-%s","merchantId":"%s",' % (cid, M)

# --- malformed JSON
C = "malformed JSON"
dlq("json-empty-body", C, b"", "malformed_job", "zero-byte body")
dlq("json-whitespace-only", C, b" \n\t ", "malformed_job", "only whitespace")
dlq("json-truncated", C, enc(job("json-truncated"))[:60], "malformed_job", "body cut off mid-object")
dlq("json-trailing-garbage", C, enc(job("json-trailing-garbage")) + b"}x", "malformed_job", "data after the object")
dlq("json-two-objects", C, enc(job("json-two-objects")) + enc(job("json-two-objects")), "malformed_job", "two concatenated documents")
dlq("json-trailing-comma", C, enc(job("json-trailing-comma"))[:-1] + b",}", "malformed_job", "trailing comma (not RFC 8259)")
dlq("json-duplicate-key", C, enc(job("json-duplicate-key"))[:-1] + b',"amount":{"value":1,"currency":"GBP"}}', "malformed_job", "amount given twice: parsers disagree which wins")
dlq("json-single-quotes", C, head("json-single-quotes").encode() + b"'orderReference':'o'}", "malformed_job", "single-quoted strings")
dlq("json-comment", C, head("json-comment").encode() + b'/* c */"orderReference":"o"}', "malformed_job", "a comment")
dlq("json-nan", C, enc(job("json-nan"))[:-1] + b',"x":NaN}', "malformed_job", "NaN literal")
dlq("json-leading-zero", C, enc(job("json-leading-zero")).replace(b'"value":1099', b'"value":01099'), "malformed_job", "number with a leading zero")
dlq("json-unquoted-key", C, head("json-unquoted-key").encode() + b'orderReference:"o"}', "malformed_job", "unquoted key")
dlq("json-raw-newline-in-string", C, enc(job("json-raw-newline-in-string")).replace(b'"order-json-raw-newline-in-string"', b'"a\nb"'), "malformed_job", "raw newline byte inside a string")
dlq("json-lone-surrogate-escape", C, enc(job("json-lone-surrogate-escape")).replace(b'"order-json-lone-surrogate-escape"', b'"a\\ud800b"'), "malformed_job", "escaped lone UTF-16 surrogate")
dlq("json-bad-escape", C, enc(job("json-bad-escape")).replace(b'"order-json-bad-escape"', b'"a\\qb"'), "malformed_job", "invalid escape sequence")
dlq("json-deep-nesting", C, enc(job("json-deep-nesting"))[:-1] + b',"x":' + b"[" * 5000 + b"]" * 5000 + b"}", "malformed_job", "5000 nested arrays in an ignored field")
dlq("json-top-level-array", C, b"[" + enc(job("json-top-level-array")) + b"]", "malformed_job", "a job inside an array")
dlq("json-top-level-string", C, json.dumps(enc(job("json-top-level-string")).decode()).encode(), "malformed_job", "the job double-encoded as a JSON string")
dlq("json-null", C, b"null", "malformed_job", "JSON null")
dlq("json-utf8-bom", C, b"\xef\xbb\xbf" + enc(job("json-utf8-bom")), "malformed_job", "UTF-8 byte order mark before the object")

# --- invalid UTF-8
C = "invalid UTF-8"
def raw_in_order(cid, raw):
    return enc(job(cid)).replace(("order-" + cid).encode(), b"order" + raw)
dlq("utf8-invalid-byte-ff", C, raw_in_order("utf8-invalid-byte-ff", b"\xff"), "malformed_job", "0xFF inside orderReference")
dlq("utf8-latin1", C, raw_in_order("utf8-latin1", b"caf\xe9"), "malformed_job", "Latin-1 e-acute (0xE9) inside orderReference")
dlq("utf8-overlong-slash", C, raw_in_order("utf8-overlong-slash", b"\xc0\xaf"), "malformed_job", "overlong encoding of '/'")
dlq("utf8-encoded-surrogate", C, raw_in_order("utf8-encoded-surrogate", b"\xed\xa0\x80"), "malformed_job", "UTF-16 surrogate encoded as UTF-8 (CESU)")
dlq("utf8-bad-continuation", C, raw_in_order("utf8-bad-continuation", b"\xc3\x28"), "malformed_job", "lead byte without a continuation byte")
dlq("utf8-truncated-sequence", C, raw_in_order("utf8-truncated-sequence", b"\xe2\x82"), "malformed_job", "three-byte sequence cut after two bytes")
dlq("utf8-above-max-code-point", C, raw_in_order("utf8-above-max-code-point", b"\xf4\x90\x80\x80"), "malformed_job", "code point above U+10FFFF")
dlq("utf8-in-job-id", C, enc(job("utf8-in-job-id")).replace(b'"bad-utf8-in-job-id"', b'"bad-\xfe"'), "malformed_job", "invalid byte inside jobId")
dlq("utf16-body", C, b"\xff\xfe" + enc(job("utf16-body")).decode().encode("utf-16-le"), "malformed_job", "UTF-16LE body with BOM")

# --- unaddressable: identifiers missing or wrong
C = "missing or wrong identifiers"
dlq("missing-jobId", C, job("missing-jobId", jobId=DEL), "malformed_job", "no jobId")
dlq("missing-merchantId", C, job("missing-merchantId", merchantId=DEL), "malformed_job", "no merchantId")
dlq("jobId-number", C, job("jobId-number", jobId=42), "malformed_job", "jobId is a number")
dlq("jobId-null", C, job("jobId-null", jobId=None), "malformed_job", "jobId is null")
dlq("jobId-empty", C, job("jobId-empty", jobId=""), "malformed_job", "jobId is empty")
dlq("jobId-too-long", C, job("jobId-too-long", jobId="j" * 129), "malformed_job", "jobId of 129 characters")
dlq("jobId-bad-characters", C, job("jobId-bad-characters", jobId="bad job/1"), "malformed_job", "jobId with a space and a slash")
dlq("merchantId-array", C, job("merchantId-array", merchantId=[M]), "malformed_job", "merchantId is an array")
dlq("merchantId-object", C, job("merchantId-object", merchantId={"id": M}), "malformed_job", "merchantId is an object")

# --- unknown merchant
C = "unknown merchant"
dlq("unknown-merchant", C, job("unknown-merchant", merchantId="no-such-merchant"), "unknown_merchant", "a well-formed job for a merchant never applied")
dlq("unknown-merchant-invalid-job", C, job("unknown-merchant-invalid-job", merchantId="no-such-merchant", amount="lots"), "unknown_merchant", "invalid fields, but nobody to attribute them to")
dlq("unknown-merchant-case", C, job("unknown-merchant-case", merchantId="Sandbox-Merchant"), "unknown_merchant", "merchant ids are case-sensitive")

# --- known merchant, missing or wrong fields
C = "missing fields (known merchant)"
for f in ["orderReference", "amount", "applePayToken"]:
    failed("missing-" + f, C, job("missing-" + f, **{f: DEL}), "invalid_job", "no " + f)
failed("missing-amount-value", C, job("missing-amount-value", amount={"currency": "GBP"}), "invalid_job", "amount without value")
failed("missing-amount-currency", C, job("missing-amount-currency", amount={"value": 1099}), "invalid_job", "amount without currency")
C = "wrong types and values (known merchant)"
def amountv(cid, value, note, raw=None):
    body = enc(job(cid))
    body = body.replace(b'"value":1099', b'"value":' + (raw if raw is not None else json.dumps(value).encode()))
    failed(cid, C, body, "invalid_job", note)
amountv("amount-value-string", "10.99", 'amount.value is the string "10.99"')
amountv("amount-value-decimal", None, "amount.value 10.99 (major units with a fraction)", raw=b"10.99")
amountv("amount-value-negative", -1099, "amount.value negative")
amountv("amount-value-zero", 0, "amount.value zero")
amountv("amount-value-above-max", None, "amount.value 100000000000 (above 99999999999)", raw=b"100000000000")
amountv("amount-value-int64-max", None, "amount.value 2^63-1", raw=b"9223372036854775807")
amountv("amount-value-2pow63", None, "amount.value 2^63 (overflows Int64)", raw=b"9223372036854775808")
amountv("amount-value-huge-exponent", None, "amount.value 1e300", raw=b"1e300")
amountv("amount-value-bool", True, "amount.value true")
amountv("amount-value-null", None, "amount.value null", raw=b"null")
amountv("amount-value-object", None, "amount.value is an object", raw=b'{"minor":1099}')
failed("amount-string", C, job("amount-string", amount="10.99 GBP"), "invalid_job", "amount is a string")
failed("amount-array", C, job("amount-array", amount=[1099, "GBP"]), "invalid_job", "amount is an array")
for cid, cur, note in [("amount-currency-number", 826, "currency is the number 826"), ("amount-currency-numeric-string", "826", "currency is the numeric code as a string"),
                       ("amount-currency-lowercase", "gbp", "currency in lower case"), ("amount-currency-unknown", "XXX", "XXX is not a currency here"),
                       ("amount-currency-null", None, "currency null")]:
    failed(cid, C, job(cid, amount={"value": 1099, "currency": cur}), "invalid_job", note)
failed("orderReference-number", C, job("orderReference-number", orderReference=1234), "invalid_job", "orderReference is a number")
failed("orderReference-empty", C, job("orderReference-empty", orderReference=""), "invalid_job", "orderReference empty")
failed("orderReference-too-long", C, job("orderReference-too-long", orderReference="r" * 65), "invalid_job", "orderReference of 65 characters")
failed("orderReference-combining-marks", C, job("orderReference-combining-marks", orderReference="e" + "\u0301" * 200), "invalid_job", "one grapheme of 201 code points")
failed("orderReference-nul", C, job("orderReference-nul", orderReference="order\u0000x"), "invalid_job", "NUL (\\u0000) inside orderReference")
failed("orderReference-escaped-newline", C, job("orderReference-escaped-newline", orderReference="order\n2"), "invalid_job", "escaped newline inside orderReference")
failed("orderReference-control", C, job("orderReference-control", orderReference="order\u001b[31m"), "invalid_job", "escape control character inside orderReference")
for cid, tok, note in [("applePayToken-number", 42, "token is a number"), ("applePayToken-array", [TOKEN], "token is an array"),
                       ("applePayToken-bool", True, "token is true"), ("applePayToken-null", None, "token is null")]:
    failed(cid, C, job(cid, applePayToken=tok), "invalid_job", note)
for cid, url, note in [("notifyUrl-number", 8080, "notifyUrl is a number"), ("notifyUrl-ftp", "ftp://shop.example/hook", "notifyUrl not http(s)"),
                       ("notifyUrl-no-host", "http://", "notifyUrl without a host"), ("notifyUrl-opaque", "https:shop.example", "notifyUrl without //host"),
                       ("notifyUrl-relative", "/paypipe-events", "a relative URL"), ("notifyUrl-spaces", "https://shop example/hook", "space in the host")]:
    failed(cid, C, job(cid, notifyUrl=url), "invalid_job", note)
for cid, over, note in [("captureWithin-without-captureMode", {"captureWithin": "P7D"}, "captureWithin without captureMode (the merchant's manual mode does not count)"),
                        ("captureWithin-automatic", {"captureMode": "automatic", "captureWithin": "P7D"}, "captureWithin with captureMode automatic"),
                        ("captureWithin-empty-duration", {"captureMode": "manual", "captureWithin": "P"}, "captureWithin \"P\": no duration at all"),
                        ("captureWithin-time-without-unit", {"captureMode": "manual", "captureWithin": "P1DT"}, "captureWithin with a \"T\" and no time unit")]:
    failed(cid, C, job(cid, **over), "invalid_job", note)
failed("metadata-array", C, job("metadata-array", metadata=["a"]), "invalid_job", "metadata is an array")
failed("metadata-number-value", C, job("metadata-number-value", metadata={"cartId": 42}), "invalid_job", "a metadata value is a number")
failed("metadata-nested", C, job("metadata-nested", metadata={"cart": {"id": "42"}}), "invalid_job", "a metadata value is an object")
failed("metadata-too-many", C, job("metadata-too-many", metadata={"k%d" % i: "v" for i in range(51)}), "invalid_job", "51 metadata entries")
failed("metadata-nul", C, job("metadata-nul", metadata={"cartId": "4\u00002"}), "invalid_job", "NUL inside a metadata value")
failed("metadata-nul-key", C, job("metadata-nul-key", metadata={"cart\u0000Id": "42"}), "invalid_job", "NUL inside a metadata key")

# --- token stage, static tokens
C = "token stage (static)"
def tok(cid, t, code, note): failed(cid, C, job(cid, applePayToken=t), code, note)
tok("token-empty-object", {}, "malformed_token", "{}")
tok("token-string-not-json", "not a token", "malformed_token", "a string that is not JSON")
tok("token-string-truncated-json", json.dumps(TOKEN)[:40], "malformed_token", "a JSON string holding truncated JSON")
tok("token-string-deep-nesting", "[" * 3000, "malformed_token", "a JSON string holding 3000 nested arrays")
tok("token-wallet-nesting-loop", {"token": {"token": {"token": {"token": {"token": TOKEN}}}}}, "malformed_token", "wallet wrapper nested five times")
tok("token-paymentData-array", {"paymentData": [1]}, "malformed_token", "paymentData is an array")
tok("token-version-number", {"paymentData": dict(TOKEN["paymentData"], version=1)}, "malformed_token", "version is a number")
tok("token-bad-base64", {"paymentData": dict(TOKEN["paymentData"], data="!!!not base64!!!")}, "malformed_token", "data is not base64")
tok("token-data-too-short", {"paymentData": dict(TOKEN["paymentData"], data="AAAA")}, "malformed_token", "data shorter than the GCM tag")
tok("token-transactionId-not-hex", {"paymentData": dict(TOKEN["paymentData"], header=dict(TOKEN["paymentData"]["header"], transactionId="zz"))}, "malformed_token", "transactionId not hex")
tok("token-duplicate-key-in-string", '{"paymentData":{"version":"EC_v1","version":"RSA_v1"}}', "malformed_token", "duplicate key inside the signed token")
tok("token-unsupported-version", {"paymentData": dict(TOKEN["paymentData"], version="EC_v9")}, "unsupported_version", "version EC_v9")
tok("token-unsupported-version-long", {"paymentData": dict(TOKEN["paymentData"], version="x" * 300)}, "unsupported_version", "a 300-character version (reason is bounded)")

manifest = {"_comment": "", "cases": cases}

# --- dynamic cases: built by BadInputCorpusTests from these recipes
def dyn(cid, category, build, landing, code, note, status=None, notifyUrl=None, rnd=None, headers=None):
    c = {"id": cid, "category": category, "build": build, "expect": {"landing": landing, "code": code}, "note": note}
    if status: c["expect"]["status"] = status
    if notifyUrl is not None: c["notifyUrl"] = notifyUrl
    if headers is not None: c["headers"] = headers
    cases.append(c)
C = "token stage (minted)"
dyn("token-signature-invalid", C, "token:corruptSignature", "failed", "signature_invalid", "CMS signature bytes flipped")
dyn("token-certificate-foreign-root", C, "token:foreignRoot", "failed", "certificate_invalid", "signed under another root, certificates included")
dyn("token-signing-time-stale", C, "token:staleSigningTime", "failed", "signing_time_out_of_range", "signed an hour before receipt")
dyn("token-signing-time-future", C, "token:futureSigningTime", "failed", "signing_time_out_of_range", "signed an hour after receipt")
dyn("token-unknown-merchant-key", C, "token:otherMerchantKey", "failed", "unknown_merchant_key", "encrypted for a merchant key PayPipe does not hold")
dyn("token-decryption-failed", C, "token:corruptCiphertext", "failed", "decryption_failed", "ciphertext flipped after signing")
dyn("token-payload-invalid", C, "token:invalidPayload", "failed", "payload_invalid", "decrypts to JSON that is not payment data")
C = "job and token disagree"
dyn("amount-mismatch", C, "amountMismatch", "failed", "amount_mismatch", "token for 1000, job for 1099")
dyn("currency-mismatch", C, "currencyMismatch", "failed", "amount_mismatch", "token in EUR (978), job in GBP")
dyn("unknown-merchant-valid-token", "unknown merchant", "unknownMerchant", "dlq", "unknown_merchant", "a valid token, for a merchant never applied")
dyn("token-replayed", "replayed token", "replay", "failed", "token_replayed", "the token of an authorized good job, in a new job (published after it settled)")
C = "message size"
dyn("message-too-large", C, "oversized", "dlq", "message_too_large", "PAYPIPE_MAX_MESSAGE_BYTES + 1 bytes (valid job, padded)")
dyn("message-at-limit", C, "atLimit", "processed", "", "exactly PAYPIPE_MAX_MESSAGE_BYTES bytes: processed", status="authorized")
C = "hostile AMQP headers on a good job (publishers cannot steer the runtime, docs/security.md)"
for cid, headers, note in [
    ("headers-delivery-count-not-redelivered", {"x-delivery-count": 1000}, "x-delivery-count 1000 on a first delivery (not redelivered): counts 0"),
    ("headers-retries-negative", {"x-paypipe-retries": -1}, "x-paypipe-retries -1 (once indexed the retry tiers at -1)"),
    ("headers-retries-huge", {"x-paypipe-retries": 9223372036854775807}, "x-paypipe-retries 2^63-1"),
    ("headers-retries-string", {"x-paypipe-retries": "lots"}, "x-paypipe-retries as a string"),
    ("headers-forged-runtime", {"x-paypipe-error-code": "forged", "x-paypipe-error": "forged", "x-paypipe-stage": "notify",
                                "x-paypipe-dead-lettered-at": "2000-01-01T00:00:00Z", "x-paypipe-original-exchange": "amq.direct",
                                "x-paypipe-original-routing-key": "elsewhere"},
     "forged x-paypipe-* dead-letter and origin headers: dropped"),
]:
    dyn(cid, C, "good", "processed", "", note, status="authorized", headers=headers)
C = "webhook URL aimed at a private address (notify with PAYPIPE_WEBHOOK_ALLOW_PRIVATE=0, the production default)"
for cid, url, note in [
    ("webhook-private-loopback", "http://127.0.0.1:{receiverPort}/webhooks", "the sandbox receiver itself: proves no request is made"),
    ("webhook-private-localhost", "http://localhost:{receiverPort}/webhooks", "a name resolving to loopback"),
    ("webhook-private-ipv6-loopback", "http://[::1]:{receiverPort}/webhooks", "IPv6 loopback"),
    ("webhook-private-ipv4-mapped", "http://[::ffff:127.0.0.1]:{receiverPort}/webhooks", "IPv4-mapped IPv6 form of loopback"),
    ("webhook-private-metadata", "http://169.254.169.254/latest/meta-data/", "cloud metadata (link-local)"),
    ("webhook-private-rfc1918", "http://10.0.0.1/hook", "RFC 1918 network"),
    ("webhook-private-merchant-url", "", "no notifyUrl: the merchant's configured URL (loopback receiver) is refused the same way"),
]:
    dyn(cid, C, "privateWebhook", "webhook_refused", "ssrf_refused", note, status="authorized", notifyUrl=url)

manifest = {
  "_comment": [
    "The bad-input corpus: the oracle of Integration.BadInputCorpusTests and the source of the table in docs/job-contract.md.",
    "Each case is published to paypipe.jobs / payment.requested with message_id = its id.",
    "file: the raw body in cases/ (static). build: a recipe the test runs (dynamic: minted tokens, sizes relative to PAYPIPE_MAX_MESSAGE_BYTES, replays).",
    "Jobs that can be attributed carry jobId 'bad-<id>'.",
    "expect.landing: dlq = a copy in paypipe.decrypt.dlq with x-paypipe-error-code = code, no payment;",
    "failed = payment failed with error_code = code, notified (signed payment.failed webhook and paypipe.results event);",
    "processed = not bad at all (boundary), payment ends expect.status;",
    "webhook_refused = payment ends expect.status, its delivery is recorded failed with error 'ssrf_refused: ...', no request is made, the results event is still published.",
    "{receiverPort} in notifyUrl is the sandbox webhook receiver's port.",
    "headers: AMQP headers published with the case (integers as signed 64-bit, strings as long strings)."
  ],
  "cases": cases}
with open(out + "/manifest.json", "w") as f:
    json.dump(manifest, f, indent=1, ensure_ascii=False)

# The table of docs/job-contract.md (same format as BadInputCorpus.markdownTable).
lines = ["| case | input | lands in | code |", "|---|---|---|---|"]
for c in cases:
    e = c["expect"]
    landing = {"dlq": "`paypipe.decrypt.dlq`", "failed": "payment `failed`, notified",
               "processed": "payment `%s` (accepted)" % e.get("status", "?"),
               "webhook_refused": "payment `%s`; webhook refused, results event sent" % e.get("status", "?")}[e["landing"]]
    lines.append("| `%s` | %s | %s | %s |" % (c["id"], c["note"].replace("|", "\\|"), landing, "`%s`" % e["code"] if e["code"] else "—"))
doc = root + "/docs/job-contract.md"
text = open(doc).read()
start = text.index("| case | input | lands in | code |")
with open(doc, "w") as f:
    f.write(text[:start] + "\n".join(lines) + "\n")
print("%d cases" % len(cases))
